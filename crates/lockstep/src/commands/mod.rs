//! One module per area: each turns its subcommand's flags into an engine
//! request, calls the engine and prints what it returns (with `--json`,
//! through the one document writer of [`crate::context::Ctx::result`]).

mod bench;
mod cache;
mod ci;
mod demo;
mod doctor;
mod history;
mod integrate;
mod pkg;
mod preprocess;
mod release;
mod test;
mod toolchain;

use lockstep_core::Error;

use crate::cli::Command;
use crate::context::Ctx;

/// Runs the command; its exit status.
pub fn dispatch(command: Command, ctx: &Ctx) -> Result<i32, Error> {
    // `lockstep test` finds its inputs (suite files, sources, data) by
    // planning, and says so itself; every other command's are known now.
    if !matches!(command, Command::Test(_)) {
        ctx.inputs_read(&[])?;
    }
    match command {
        Command::Integrate(cmd) => integrate::run(cmd, ctx),
        Command::Demo(args) => demo::run(args, ctx),
        Command::Toolchain(cmd) => toolchain::run(cmd, ctx),
        Command::Test(args) => test::run(args, ctx),
        Command::Cache(cmd) => cache::run(cmd, ctx),
        Command::Preprocess(args) => preprocess::run(args, ctx),
        Command::Bench(args) => bench::run(args, ctx),
        Command::Pkg(cmd) => pkg::run(cmd, ctx),
        Command::Ci(cmd) => ci::run(cmd, ctx),
        Command::Release(cmd) => release::run(cmd, ctx),
        Command::History(cmd) => history::run(cmd, ctx),
        Command::Report(cmd) => history::report(cmd, ctx),
        Command::Doctor { json: _ } => doctor::run(ctx),
    }
}
