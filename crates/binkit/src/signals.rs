//! SIGTERM and SIGINT set one process-wide stop flag; the binaries poll it.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Installs the handlers (idempotent) and returns the flag they set.
pub fn stop_on_term() -> &'static AtomicBool {
    // SAFETY: installing an async-signal-safe handler (an atomic store).
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    &STOP
}
