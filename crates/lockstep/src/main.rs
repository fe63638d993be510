//! The `lockstep` command: parses arguments, derives what the command line
//! writes and reads ([`lockstep_cmdline::outputs::derive`]), loads the configuration, calls an
//! engine and prints its result. Engines live in the `lockstep-*` crates;
//! this crate parses, dispatches and prints.

mod commands;
mod config;
mod context;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use lockstep_cmdline as cli;
use lockstep_core::output::Target;
use lockstep_core::Error;
use lockstep_reporters::spec::Spec;
use lockstep_reporters::Reporters;

use crate::context::Ctx;

fn main() -> ExitCode {
    let mut command = cli::Cli::command();
    let matches = command.get_matches_mut();
    let cli = match cli::Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    init_tracing(cli.verbose);
    lockstep_core::fs::file_size_limit_is_an_error();
    if let Err(e) = lockstep_core::process::kill_children_on_signals() {
        tracing::warn!("cannot watch for interrupts: {e}");
    }
    let spec = lockstep_cmdline::outputs::derive(&command, &matches);
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            return fail(&Error::failed("cannot read the current directory").cause(e.to_string()))
        }
    };
    let reporters = match reporters(&cli, &spec, &cwd) {
        Ok(reporters) => reporters,
        Err(err) => return fail(&err),
    };
    let ctx = Ctx::new(&reporters, &spec, cwd, cli.config.clone());
    let result = commands::dispatch(cli.command, &ctx);
    // An interrupted command ends as the signal, not as what it made of
    // its killed children.
    lockstep_core::process::defer_exit_to_signal();
    let code = match result {
        Ok(code) => code,
        Err(err) => reporters.fail(&err),
    };
    reporters.finish(code);
    ExitCode::from(code as u8)
}

/// An error before any reporter exists: on stderr only.
fn fail(err: &Error) -> ExitCode {
    eprint!("{}", err.render());
    ExitCode::from(err.exit_code() as u8)
}

/// The command's reporters, once the output rules hold (the lockstep.toml
/// that will be read, and lockstep's state database here, count as inputs
/// of every command).
fn reporters(cli: &cli::Cli, spec: &Spec, cwd: &std::path::Path) -> Result<Reporters, Error> {
    let found = match &cli.config {
        Some(_) => None,
        None => lockstep_core::config::discover(cwd),
    };
    // Found only when an output is a file (it costs a git call).
    let state = (spec.output_files().next().is_some())
        .then(|| lockstep_suite::last_results::state_dir(cwd).join(lockstep_store::FILE_NAME));
    let also_read: Vec<(&str, &std::path::Path)> = found
        .as_deref()
        .map(|p| ("lockstep.toml", p))
        .into_iter()
        .chain(state.as_deref().map(|p| ("lockstep's state database", p)))
        .collect();
    spec.check(&also_read)?;
    Reporters::new(
        &spec.command,
        &lockstep_reporters::Options {
            quiet: cli.quiet,
            events: cli.events.as_deref().map(Target::parse),
            stdout_taken: !spec.on_stdout().is_empty(),
        },
    )
}

/// Logs go to stderr; `-v` raises the level, `LOCKSTEP_LOG` overrides it.
fn init_tracing(verbose: u8) {
    use std::io::IsTerminal;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("LOCKSTEP_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default))
        // The HTTP client logs request URLs, and webhook URLs are secrets.
        .add_directive("ureq=warn".parse().expect("static directive"))
        .add_directive("rustls=warn".parse().expect("static directive"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .without_time()
        .try_init();
}
