//! One module per area: each turns its subcommand's flags into an engine
//! request, calls the engine and prints what it returns (with `--json`,
//! through the one document writer of [`crate::context::Ctx::result`]).

mod bench;
mod cache;
mod ci;
mod demo;
mod doctor;
mod history;
mod init;
mod integrate;
mod pkg;
mod preprocess;
mod release;
mod test;
mod toolchain;

use lockstep_core::Error;

use crate::context::Ctx;
use lockstep_cmdline::Command;

/// Runs the command; its exit status.
pub fn dispatch(command: Command, ctx: &Ctx) -> Result<i32, Error> {
    ctx.trees_kept(&trees_whole(&command, ctx))?;
    // `lockstep test` finds its inputs (suite files, sources, data) by
    // planning, and says so itself; every other command's are known now.
    if !matches!(command, Command::Test(_)) {
        ctx.history_read(&history_dirs_read(&command, ctx))?;
        ctx.inputs_read(&[])?;
    }
    match command {
        Command::Init(args) => init::run(args, ctx),
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

/// The directories `command` reads or writes whole, by flag: a bundle
/// holds exactly the files its manifest lists, so no output goes inside
/// the one being read (`--from-bundle`) or written (`--bundle`).
fn trees_whole(command: &Command, ctx: &Ctx) -> Vec<(&'static str, std::path::PathBuf)> {
    let (bundle, from_bundle) = match command {
        Command::Bench(args) if args.action.is_none() => (&args.bundle, &args.from_bundle),
        Command::Test(args) => (&args.bundle, &args.from_bundle),
        _ => return Vec::new(),
    };
    [("--bundle", bundle), ("--from-bundle", from_bundle)]
        .into_iter()
        .filter_map(|(flag, dir)| dir.as_ref().map(|d| (flag, ctx.cwd.join(d))))
        .collect()
}

/// The history directories `command` reads every run of (as
/// (what names it, directory)), known before it runs: no output may be one
/// of their runs. A default that cannot be found now is left to the
/// command, which says what is wrong.
fn history_dirs_read(command: &Command, ctx: &Ctx) -> Vec<(String, std::path::PathBuf)> {
    use lockstep_cmdline::{BenchAction, History, Report};
    let configured = || history::configured_dir(ctx).ok().flatten();
    let found = |flag: &str, dir: Option<std::path::PathBuf>| {
        dir.map(|d| (flag.to_string(), ctx.cwd.join(d)))
            .into_iter()
            .collect::<Vec<_>>()
    };
    match command {
        Command::History(History::List { dir, .. }) => match dir {
            Some(d) => found("DIR", Some(d.clone())),
            None => found("[history] dir", configured()),
        },
        Command::History(History::Import { to, .. }) => found("--to", Some(to.clone())),
        Command::Report(Report::Site { history, .. }) => match history {
            Some(d) => found("--history", Some(d.clone())),
            None => found("[history] dir", configured()),
        },
        Command::Bench(args) => match &args.action {
            Some(BenchAction::Compare(compare)) => [("BASE", &compare.base), ("NEW", &compare.new)]
                .into_iter()
                .filter_map(|(flag, side)| {
                    lockstep_bench::regressions::history_selection(side, &ctx.cwd)
                        .map(|(dir, _)| (flag.to_string(), dir))
                })
                .collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}
