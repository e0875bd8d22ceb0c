//! Ending a binary on an error it cannot go on from: the message on stderr after the program's
//! name, then the exit status the binary documents (2: invalid configuration, 1: run-time error).

use std::fmt::Display;

/// `result.or_exit("satlab-gateway", 2)`: the value, or the process ends.
pub trait OrExit<T> {
    /// The `Ok` value; on an error, prints `{program}: {error}` to stderr and exits with `status`.
    fn or_exit(self, program: &str, status: i32) -> T;
}

impl<T, E: Display> OrExit<T> for Result<T, E> {
    fn or_exit(self, program: &str, status: i32) -> T {
        self.unwrap_or_else(|e| {
            eprintln!("{program}: {e}");
            std::process::exit(status)
        })
    }
}
