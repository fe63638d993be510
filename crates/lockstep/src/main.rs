//! The `lockstep` command: parses arguments, loads the configuration, calls
//! an engine and hands its events to the reporters (lockstep-report). No
//! engine logic lives here; see the `lockstep-*` crates.

mod bench;
mod cache;
mod ci;
mod cli;
mod config;
mod demo;
mod integrate;
mod output;
mod pkg;
mod pkg_fetch;
mod preprocess;
mod release;
mod suite;
mod toolchain;

use std::process::ExitCode;

use clap::Parser;
use lockstep_core::output::Target;
use lockstep_core::Error;
use lockstep_report::Reporters;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    output::init_tracing(cli.verbose);
    if let Err(e) = lockstep_core::process::kill_children_on_signals() {
        tracing::warn!("cannot watch for interrupts: {e}");
    }
    let reporters = match reporters(&cli) {
        Ok(reporters) => reporters,
        Err(err) => {
            eprint!("{}", err.render());
            return ExitCode::from(err.exit_code() as u8);
        }
    };
    let code = match dispatch(cli, &reporters) {
        Ok(code) => code,
        Err(err) => {
            output::report_error(&reporters, &err);
            err.exit_code()
        }
    };
    reporters.finish(code);
    ExitCode::from(code as u8)
}

/// The command's reporters, once every output is known to be writable, not
/// one of the inputs, and not colliding with another on standard output.
fn reporters(cli: &cli::Cli) -> Result<Reporters, Error> {
    lockstep_core::output::check_all(&cli.output_files(), &cli.input_files())?;
    let events = cli.events.as_deref().map(Target::parse);
    let stdout = cli.command.stdout_outputs();
    if let (Some(Target::Stdout), Some(other)) = (&events, stdout.first()) {
        return Err(lockstep_report::stdout_conflict("--events -", other));
    }
    if let [first, second, ..] = stdout.as_slice() {
        return Err(lockstep_report::stdout_conflict(first, second));
    }
    Reporters::new(
        cli.command.name(),
        &lockstep_report::Options {
            quiet: cli.quiet,
            events,
            stdout_taken: cli.command.runner_output_on_stdout(),
        },
    )
}

fn dispatch(cli: cli::Cli, rep: &Reporters) -> Result<i32, Error> {
    let cwd = std::env::current_dir()?;
    let load = || config::load(cli.config.as_deref(), &cwd);
    match cli.command {
        cli::Command::Integrate(cmd) => integrate::run(cmd, &load()?, rep),
        cli::Command::Demo(args) => demo::run(args, rep),
        cli::Command::Toolchain(cmd) => toolchain::run(cmd, &load()?, rep),
        cli::Command::Test(args) => suite::run(args, &load()?, &cwd, rep),
        cli::Command::Cache(cmd) => cache::run(cmd, &load()?, rep),
        cli::Command::Preprocess(args) => preprocess::run(args, cli.config.as_deref(), &cwd, rep),
        cli::Command::Bench(args) => bench::run(args, &load()?, rep),
        cli::Command::Pkg(cli::Pkg::Fetch(args)) => pkg_fetch::run(args, &load()?, &cwd, rep),
        cli::Command::Pkg(cli::Pkg::Bisect(args)) => pkg_fetch::bisect(args, &load()?, &cwd, rep),
        cli::Command::Pkg(cmd) => pkg::run(cmd, &load()?, &cwd, rep),
        cli::Command::Ci(cmd) => ci::run(cmd, &load()?, &cwd, rep),
        cli::Command::Release(cmd) => release::run(cmd, &load()?, &cwd, rep),
    }
}
