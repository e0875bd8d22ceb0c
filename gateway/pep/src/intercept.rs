//! Transparent interception, installed at start and removed at exit (intercept.install):
//!
//! - nftables table `ip satlab_pep`, prerouting at mangle priority:
//!   packets of the PEP's own transparent sockets are marked (they carry foreign addresses and
//!   would otherwise be forwarded), traffic for the box itself passes, and new TCP arriving on a
//!   terrestrial interface / the satellite interface is TPROXY'd to the matching listener;
//! - `ip rule fwmark MARK lookup TABLE` and `local 0.0.0.0/0 dev lo table TABLE`, which deliver
//!   marked packets locally (the PEPsal recipe, with nft instead of iptables);
//! - the initial window: `initcwnd`/`initrwnd` on every route out of the satellite interface;
//! - `net.bridge.bridge-nf-call-iptables = 0` in this namespace when it was 1: with br_netfilter
//!   on, IPv4 hooks of a frame arriving on a bridge port run from the bridge layer, and a socket
//!   TPROXY assigns there never reaches TCP (the SYN is answered with a reset). The edge routes
//!   between its LAN bridge and the satellite interface, so nothing needs the bridge-level hooks.

use crate::config::Config;
use std::io::{self, Write};
use std::process::{Command, Stdio};

const TABLE: &str = "satlab_pep";
const BRIDGE_NF: &str = "/proc/sys/net/bridge/bridge-nf-call-iptables";

fn run(argv: &[&str], stdin: Option<&str>) -> io::Result<String> {
    let mut cmd = Command::new(argv[0]);
    cmd.args(&argv[1..])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", argv[0])))?;
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(text.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "{}: {}",
            argv.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The nftables ruleset (also printed by `--print-rules` for operators who install it themselves).
pub fn nft_rules(cfg: &Config) -> String {
    let i = &cfg.intercept;
    let quote = |n: &String| format!("\"{n}\"");
    let ifs: Vec<String> = i.terrestrial_interfaces.iter().map(quote).collect();
    let sat: Vec<String> = [&i.satellite_interface]
        .into_iter()
        .chain(&i.satellite_extra_interfaces)
        .map(quote)
        .collect();
    format!(
        "table ip {TABLE} {{\n  chain prerouting {{\n    type filter hook prerouting priority mangle; policy accept;\n    \
         meta l4proto tcp socket transparent 1 meta mark set {m:#x} counter accept\n    \
         fib daddr type local counter accept\n    \
         iifname {{ {t} }} meta l4proto tcp meta mark set {m:#x} counter tproxy to :{tp} accept\n    \
         iifname {{ {s} }} meta l4proto tcp meta mark set {m:#x} counter tproxy to :{sp} accept\n  }}\n}}\n",
        m = i.mark,
        t = ifs.join(", "),
        tp = i.terrestrial_port,
        s = sat.join(", "),
        sp = i.satellite_port,
    )
}

/// What was installed; Drop removes it and restores the routes.
pub struct Installed {
    mark: u32,
    table: u32,
    /// (route as `ip route change` arguments before, after)
    routes: Vec<(Vec<String>, Vec<String>)>,
    /// bridge-nf-call-iptables was 1 and was switched off
    bridge_nf_was_on: bool,
}

pub fn install(cfg: &Config) -> io::Result<Installed> {
    let i = &cfg.intercept;
    let mut done = Installed {
        mark: i.mark,
        table: i.table,
        routes: Vec::new(),
        bridge_nf_was_on: std::fs::read_to_string(BRIDGE_NF).is_ok_and(|v| v.trim() == "1"),
    };
    if done.bridge_nf_was_on {
        std::fs::write(BRIDGE_NF, "0")
            .map_err(|e| io::Error::new(e.kind(), format!("{BRIDGE_NF}: {e}")))?;
    }
    // a table left by a killed PEP is replaced, not doubled
    let _ = run(&["nft", "delete", "table", "ip", TABLE], None);
    run(&["nft", "-f", "-"], Some(&nft_rules(cfg)))?;
    // a rule left by a killed PEP is replaced, not doubled
    let _ = policy_rule("del", i.mark, i.table);
    policy_rule("add", i.mark, i.table)?;
    local_route("replace", i.table)?;
    let iw = cfg.settings.initial_window_packets;
    if iw > 0 {
        let dev = &i.satellite_interface;
        let shown = run(&["ip", "-o", "-4", "route", "show", "dev", dev], None)?;
        for line in shown.lines().filter(|l| !l.trim().is_empty()) {
            let before = route_args(line, dev);
            let mut after: Vec<String> = Vec::new();
            let mut it = before.iter();
            while let Some(tok) = it.next() {
                if tok == "initcwnd" || tok == "initrwnd" {
                    it.next();
                } else {
                    after.push(tok.clone());
                }
            }
            after.extend([
                "initcwnd".into(),
                iw.to_string(),
                "initrwnd".into(),
                iw.to_string(),
            ]);
            change_route(&after)?;
            done.routes.push((before, after));
        }
    }
    Ok(done)
}

/// `ip rule OP fwmark MARK lookup TABLE`: marked packets use the table of the local route.
fn policy_rule(op: &str, mark: u32, table: u32) -> io::Result<String> {
    let (mark, table) = (mark.to_string(), table.to_string());
    run(&["ip", "rule", op, "fwmark", &mark, "lookup", &table], None)
}

/// `ip route OP local 0.0.0.0/0 dev lo table TABLE`: every address is local in that table.
fn local_route(op: &str, table: u32) -> io::Result<String> {
    let table = table.to_string();
    let argv = [
        "ip",
        "route",
        op,
        "local",
        "0.0.0.0/0",
        "dev",
        "lo",
        "table",
        &table,
    ];
    run(&argv, None)
}

/// `ip route show dev X` omits the device; `ip route change` needs it back.
fn route_args(line: &str, dev: &str) -> Vec<String> {
    let mut v: Vec<String> = line.split_whitespace().map(String::from).collect();
    if !v.iter().any(|t| t == "dev") {
        v.splice(1..1, ["dev".to_string(), dev.to_string()]);
    }
    v
}

fn change_route(args: &[String]) -> io::Result<()> {
    let mut argv = vec!["ip", "route", "change"];
    argv.extend(args.iter().map(String::as_str));
    run(&argv, None).map(|_| ())
}

impl Drop for Installed {
    fn drop(&mut self) {
        for (before, _) in &self.routes {
            let _ = change_route(before);
        }
        let _ = policy_rule("del", self.mark, self.table);
        let _ = local_route("del", self.table);
        let _ = run(&["nft", "delete", "table", "ip", TABLE], None);
        if self.bridge_nf_was_on {
            let _ = std::fs::write(BRIDGE_NF, "1");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_name_interfaces_ports_and_mark() {
        let cfg =
            Config::from_yaml_str("edge: gw\nintercept: {terrestrial_interfaces: [lan, eth2], satellite_extra_interfaces: [wan]}")
                .unwrap();
        let r = nft_rules(&cfg);
        assert!(r.contains("iifname { \"lan\", \"eth2\" } meta l4proto tcp meta mark set 0x5e9 counter tproxy to :8793"), "{r}");
        assert!(
            r.contains("iifname { \"sat0\", \"wan\" } meta l4proto tcp meta mark set 0x5e9 counter tproxy to :8794"),
            "{r}"
        );
    }

    #[test]
    fn route_gets_its_device_back() {
        let a = route_args("10.250.3.0/24 via 10.250.2.2 initcwnd 4", "sat0");
        assert_eq!(
            a,
            [
                "10.250.3.0/24",
                "dev",
                "sat0",
                "via",
                "10.250.2.2",
                "initcwnd",
                "4"
            ]
        );
    }
}
