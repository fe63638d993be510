//! Writes the IREE-shaped fixture (see `native.rs`) for scripts such as
//! `scripts/bench-pkg`:
//! `cargo run -q -p lockstep-sandbox --example native-fixture -- DIR [PASSES [EXTRA_CONFIG_FILE]]`
//! (`DIR/minillvm` and `DIR/project`; EXTRA_CONFIG_FILE is appended to the
//! project's lockstep.toml).

use std::path::PathBuf;
use std::process::ExitCode;

use lockstep_sandbox::native::{self, NativeSpec};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        eprintln!("usage: native-fixture DIR [PASSES [EXTRA_CONFIG_FILE]]");
        return ExitCode::from(2);
    };
    let mut spec = NativeSpec::default();
    if let Some(passes) = args.get(1) {
        match passes.parse::<usize>() {
            Ok(n) if (1..=500).contains(&n) => spec.passes = n,
            _ => {
                eprintln!("error: PASSES must be a number from 1 to 500, not `{passes}`");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(file) = args.get(2) {
        match std::fs::read_to_string(file) {
            Ok(text) => spec.extra_config = text,
            Err(e) => {
                eprintln!("error: cannot read {file}: {e}");
                return ExitCode::from(2);
            }
        }
    }
    match native::create(&PathBuf::from(dir), &spec) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprint!("{}", e.render());
            ExitCode::from(1)
        }
    }
}
