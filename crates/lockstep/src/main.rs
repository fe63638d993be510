//! The `lockstep` command: parses arguments, dispatches to the engines, prints.
//! No logic lives here; see the `lockstep-*` crates.

mod bench;
mod cache;
mod cli;
mod integrate;
mod output;
mod preprocess;
mod suite;
mod toolchain;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    output::init_tracing(cli.verbose);
    if let Err(e) = lockstep_core::process::kill_children_on_signals() {
        tracing::warn!("cannot watch for interrupts: {e}");
    }
    let code = match dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            eprint!("{}", err.render());
            err.exit_code()
        }
    };
    ExitCode::from(code as u8)
}

fn dispatch(cli: cli::Cli) -> Result<i32, lockstep_core::Error> {
    let cwd = std::env::current_dir()?;
    match cli.command {
        cli::Command::Integrate(cmd) => {
            let loaded = lockstep_core::config::load(cli.config.as_deref(), &cwd)?;
            integrate::run(cmd, &loaded)
        }
        cli::Command::Demo(args) => integrate::demo(args),
        cli::Command::Toolchain(cmd) => {
            let loaded = lockstep_core::config::load(cli.config.as_deref(), &cwd)?;
            toolchain::run(cmd, &loaded)
        }
        cli::Command::Test(args) => {
            let loaded = lockstep_core::config::load(cli.config.as_deref(), &cwd)?;
            suite::run(args, &loaded, &cwd)
        }
        cli::Command::Cache(cmd) => {
            let loaded = lockstep_core::config::load(cli.config.as_deref(), &cwd)?;
            cache::run(cmd, &loaded)
        }
        cli::Command::Preprocess(args) => preprocess::run(args, cli.config.as_deref(), &cwd),
        cli::Command::Bench(args) => {
            let loaded = lockstep_core::config::load(cli.config.as_deref(), &cwd)?;
            bench::run(args, &loaded)
        }
    }
}
