//! The start of a binary driven by one configuration file: `--print-schema` prints the file's
//! JSON Schema and exits 0; otherwise `--config FILE` is loaded, and an invalid file exits 2.

use crate::exit::OrExit;
use crate::schema;
use schemars::JsonSchema;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The configuration `load` reads from `path`, after `--print-schema` (`print_schema`) has had
/// its turn: then the schema of `C` is printed and the process exits 0. A load error is printed
/// as `{program}: {error}` and exits 2.
pub fn config_or_schema<C: JsonSchema>(
    program: &str,
    print_schema: bool,
    path: Option<PathBuf>,
    load: fn(&Path) -> Result<C, String>,
) -> C {
    if print_schema {
        println!("{}", schema::pretty::<C>());
        let _ = std::io::stdout().flush();
        std::process::exit(0);
    }
    // clap requires --config unless --print-schema, which has exited above.
    let path = path.expect("clap requires --config");
    load(&path).or_exit(program, 2)
}
