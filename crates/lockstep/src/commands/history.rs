//! `lockstep history import/list`, `lockstep report site`, and where the
//! runs of `test`, `bench` and `integrate loop` are recorded: `--record
//! DIR`, else `[history] dir`, none with `--no-record`. The record, its
//! checks and provenance, and the human forms come from lockstep-history.

use std::path::{Path, PathBuf};

use lockstep_core::Error;
use lockstep_history::collect::Recording;
use lockstep_history::list::Listed;
use lockstep_history::{human, import, HistoryConfig, Kind};

use crate::context::Ctx;
use lockstep_cmdline as cli;

/// `[history] dir`, relative to lockstep.toml's directory.
pub(crate) fn configured_dir(ctx: &Ctx) -> Result<Option<PathBuf>, Error> {
    let cfg: HistoryConfig = ctx.section()?;
    Ok(match cfg.dir {
        Some(dir) => Some(ctx.root()?.join(dir)),
        None => None,
    })
}

/// The pins the configuration names: `[release] pin-files` and
/// `[integrate]`'s pin (any kind), one per path.
fn pins(ctx: &Ctx) -> Result<Vec<lockstep_pin::Pin>, Error> {
    let release: lockstep_release::config::ReleaseConfig = ctx.section()?;
    let mut settings = lockstep_release::settings::settings(&release, ctx.root()?)?;
    if let Some(pin) = lockstep_integrate::config::configured_pin(ctx.loaded()?)? {
        settings = settings.with_pin(pin);
    }
    Ok(settings.pins)
}

/// Starts recording a `kind` run when asked (`--record DIR` as given,
/// else `[history] dir`); `inputs` are directories the run reads.
pub fn start(
    ctx: &Ctx,
    args: &cli::Record,
    kind: Kind,
    inputs: &[(&str, &Path)],
) -> Result<Option<Recording>, Error> {
    let (flag, dir) = match (&args.record, args.no_record) {
        (_, true) => return Ok(None),
        (Some(dir), false) => ("--record", dir.clone()),
        (None, false) => match configured_dir(ctx)? {
            Some(dir) => ("[history] dir", dir),
            None => return Ok(None),
        },
    };
    let (root, pins) = (ctx.root()?, pins(ctx)?);
    lockstep_history::recorder::start(flag, &dir, kind, root, inputs, &pins).map(Some)
}

pub fn run(cmd: cli::History, ctx: &Ctx) -> Result<i32, Error> {
    match cmd {
        cli::History::Import {
            files,
            to,
            commit,
            toolchain,
        } => {
            import::check_flags(&to, toolchain.as_deref())?;
            let opts = import::Options {
                commit,
                toolchain,
                repo_dir: ctx.root()?.to_path_buf(),
                pins: pins(ctx)?,
            };
            // Every file is read and recognised before anything is written.
            let prepared = import::prepare(&files, &opts)?;
            let outcomes = import::write(&to, &prepared)?;
            ctx.out().print(&human::imported(&prepared, &outcomes));
            Ok(0)
        }
        cli::History::List { dir, .. } => {
            let Some(dir) = dir.map_or_else(|| configured_dir(ctx), |d| Ok(Some(d)))? else {
                return Err(Error::usage("no history directory to list").hint(
                    "name it (lockstep history list DIR), or set [history] dir in lockstep.toml",
                ));
            };
            let loaded = lockstep_history::load(&dir)?;
            loaded.warn_skipped(ctx.sink());
            ctx.show(&Listed::of(loaded), |listed| human::listed(listed, &dir))
        }
    }
}

/// `lockstep report site`: the history loaded (skipped files become
/// warnings, exit 0), the site written by lockstep-site.
pub fn report(cmd: cli::Report, ctx: &Ctx) -> Result<i32, Error> {
    let cli::Report::Site {
        history,
        out,
        releases,
        base_url,
    } = cmd;
    let dir = match history {
        Some(dir) => ctx.cwd.join(dir),
        None => configured_dir(ctx)?.ok_or_else(|| {
            Error::usage("report site needs a history")
                .hint("pass --history DIR, or set [history] dir in lockstep.toml (docs/history.md)")
        })?,
    };
    let releases = match releases {
        Some(dir) => Some(ctx.cwd.join(dir)),
        None => {
            let release: lockstep_release::config::ReleaseConfig = ctx.section()?;
            let index = ctx.root()?.join(&release.index);
            (ctx.loaded()?.has_section("release") && index.is_dir()).then_some(index)
        }
    };
    let loaded = lockstep_history::load(&dir)?;
    loaded.warn_skipped(ctx.sink());
    let site = lockstep_site::site(
        &loaded,
        releases.as_deref(),
        &ctx.cwd.join(&out),
        base_url.as_deref(),
    )?;
    ctx.out().line(site.summary());
    // The command ends here: freeing a history of thousands of parsed
    // documents one allocation at a time would take seconds for nothing.
    std::mem::forget(loaded);
    Ok(0)
}
