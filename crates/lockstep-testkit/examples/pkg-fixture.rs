//! Writes the fixture project of Python packages (see `packages.rs`) for
//! scripts such as `scripts/bench-pkg`:
//! `cargo run -q -p lockstep-sandbox --example pkg-fixture -- DIR VERSION [CONFIG_FILE]`
//! (CONFIG_FILE replaces the fixture's lockstep.toml).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(version)) = (args.first(), args.get(1)) else {
        eprintln!("usage: pkg-fixture DIR VERSION [CONFIG_FILE]");
        return ExitCode::from(2);
    };
    let config = match args.get(2).map(std::fs::read_to_string) {
        Some(Ok(text)) => text,
        Some(Err(e)) => {
            eprintln!("error: cannot read {}: {e}", args[2]);
            return ExitCode::from(2);
        }
        None => lockstep_sandbox::packages::PKG_CONFIG.to_string(),
    };
    match lockstep_sandbox::packages::create_with(&PathBuf::from(dir), version, &config) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprint!("{}", e.render());
            ExitCode::from(1)
        }
    }
}
