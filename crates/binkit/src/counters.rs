//! Counters and gauges of a binary's threads (`AtomicU64`s), declared once with their help text:
//! the [`counters!`](crate::counters) macro writes the struct and its [`list`](Entry), which both
//! the JSON status and the Prometheus text read, so a name cannot be in one and not the other.

use crate::prom;

/// One counter or gauge as the status and the metrics show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The field name (the JSON key; the Prometheus name after the program's prefix).
    pub name: &'static str,
    /// The Prometheus type: `counter` or `gauge`.
    pub kind: &'static str,
    /// The HELP text.
    pub help: &'static str,
    /// The value now.
    pub value: u64,
}

/// Declares a struct of `AtomicU64`s and its `list()` (every [`Entry`], in the order written).
/// An entry is `name: "help"` for a counter or `name: gauge "help"` for a gauge.
///
/// ```
/// binkit::counters! {
///     /// What the example counts.
///     pub struct Counters {
///         accepted: "Connections accepted.",
///         active: gauge "Connections open now.",
///     }
/// }
/// let c = Counters::default();
/// c.accepted.fetch_add(2, std::sync::atomic::Ordering::Relaxed);
/// assert_eq!(c.list()[0].value, 2);
/// assert_eq!(c.list()[1].kind, "gauge");
/// ```
#[macro_export]
macro_rules! counters {
    (@kind) => { "counter" };
    (@kind gauge) => { "gauge" };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($field:ident : $($gauge:ident)? $help:literal),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Default)]
        $vis struct $name {
            $(#[doc = $help] pub $field: ::std::sync::atomic::AtomicU64,)*
        }
        impl $name {
            /// Every counter and gauge with its value now, in the order declared.
            pub fn list(&self) -> ::std::vec::Vec<$crate::counters::Entry> {
                vec![$($crate::counters::Entry {
                    name: stringify!($field),
                    kind: $crate::counters!(@kind $($gauge)?),
                    help: $help,
                    value: self.$field.load(::std::sync::atomic::Ordering::Relaxed),
                },)*]
            }
        }
    };
}

/// The entries as one JSON object, name to value.
pub fn json(list: &[Entry]) -> serde_json::Value {
    list.iter()
        .map(|e| (e.name.to_string(), serde_json::Value::from(e.value)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Appends every entry as a Prometheus family: `{prefix}_{name}_total` for a counter,
/// `{prefix}_{name}` for a gauge; `labels` as in [`prom::sample`].
pub fn prometheus(out: &mut String, prefix: &str, labels: &str, list: &[Entry]) {
    for e in list {
        let suffix = if e.kind == "counter" { "_total" } else { "" };
        let full = format!("{prefix}_{}{suffix}", e.name);
        prom::family(out, &full, e.kind, e.help, labels, e.value);
    }
}

#[cfg(test)]
mod tests {
    crate::counters! {
        struct Two {
            sent: "Things sent.",
            open: gauge "Things open now.",
        }
    }

    #[test]
    fn counters_get_total_and_gauges_do_not() {
        let t = Two::default();
        t.sent.store(3, std::sync::atomic::Ordering::Relaxed);
        let mut o = String::new();
        super::prometheus(&mut o, "x", "", &t.list());
        assert_eq!(
            o,
            "# HELP x_sent_total Things sent.\n# TYPE x_sent_total counter\nx_sent_total 3\n\
             # HELP x_open Things open now.\n# TYPE x_open gauge\nx_open 0\n"
        );
        assert_eq!(
            super::json(&t.list()),
            serde_json::json!({"sent": 3, "open": 0})
        );
    }
}
