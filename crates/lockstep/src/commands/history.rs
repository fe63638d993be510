//! `lockstep history import/list`, and the recording of runs that `test`,
//! `bench` and `integrate loop` share: which directory (`--record DIR`,
//! else `[history] dir`, none with `--no-record`), checked before the run,
//! and the run written after the command's other outputs. The record
//! itself, its identity and provenance come from lockstep-history.

use std::path::{Path, PathBuf};

use lockstep_core::Error;
use lockstep_history::collect::{Forbidden, Recording};
use lockstep_history::import::{self, Outcome};
use lockstep_history::{HistoryConfig, Kind};

use crate::cli;
use crate::context::Ctx;

/// The history directory of this run, when one is asked for: `--record
/// DIR` (relative to the working directory), else `[history] dir`
/// (relative to lockstep.toml's directory); none with `--no-record`.
fn record_dir(ctx: &Ctx, args: &cli::Record) -> Result<Option<(String, PathBuf)>, Error> {
    if args.no_record {
        return Ok(None);
    }
    if let Some(dir) = &args.record {
        // As given: messages name it so (the working directory never changes).
        return Ok(Some(("--record".into(), dir.clone())));
    }
    let cfg: HistoryConfig = ctx.section()?;
    match cfg.dir {
        Some(dir) => Ok(Some(("[history] dir".into(), ctx.root()?.join(dir)))),
        None => Ok(None),
    }
}

/// Pin files the configuration names (relative to the repository's top):
/// `[release] pin-files` and `[integrate] pin-file`.
fn pin_files(ctx: &Ctx) -> Result<Vec<String>, Error> {
    let release: lockstep_release::config::ReleaseConfig = ctx.section()?;
    let integrate: lockstep_integrate::config::IntegrateConfig = ctx.section()?;
    let mut files: Vec<String> = release
        .pin_files
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    files.extend(integrate.pin_file);
    files.sort();
    files.dedup();
    Ok(files)
}

/// Starts recording a `kind` run when asked: the directory is checked
/// (a usage error, before anything runs, when it is a file, lockstep.toml's
/// directory or one of `inputs`: directories the run reads, and whatever
/// lies below them) and created; the source commit and pins are noted now.
pub fn start(
    ctx: &Ctx,
    args: &cli::Record,
    kind: Kind,
    inputs: &[(&str, &Path)],
) -> Result<Option<Recording>, Error> {
    let Some((flag, dir)) = record_dir(ctx, args)? else {
        return Ok(None);
    };
    let root = ctx.root()?.to_path_buf();
    let mut forbidden = vec![Forbidden {
        what: "lockstep.toml's directory",
        dir: &root,
        below: false,
    }];
    forbidden.extend(inputs.iter().map(|(what, dir)| Forbidden {
        what,
        dir,
        below: true,
    }));
    Recording::start(&flag, &dir, kind, &forbidden, &root, &pin_files(ctx)?).map(Some)
}

/// Writes the run being recorded, if any: `document` is the command's
/// `--json` document (as text), `toolchain` the compiler identity it used.
/// A failure is a warning naming the directory; the exit status stays.
pub fn finish(
    ctx: &Ctx,
    recording: Option<Recording>,
    document: impl FnOnce() -> Result<String, Error>,
    toolchain: Option<String>,
) {
    let Some(recording) = recording else {
        return;
    };
    let dir = recording.dir.clone();
    let written = document()
        .and_then(|text| {
            serde_json::from_str(&text).map_err(|e| {
                Error::failed("cannot read back the results document").cause(e.to_string())
            })
        })
        .and_then(|results| recording.finish(results, toolchain));
    match written {
        Ok(path) => ctx.sink().note(format!("recorded {}", path.display())),
        Err(e) => {
            let mut why = e.message;
            for cause in e.causes {
                why.push_str(&format!(": {cause}"));
            }
            ctx.sink().warn(format!(
                "this run was not recorded in the history {}: {why}",
                dir.display()
            ));
        }
    }
}

pub fn run(cmd: cli::History, ctx: &Ctx) -> Result<i32, Error> {
    match cmd {
        cli::History::Import {
            files,
            to,
            commit,
            toolchain,
        } => import_files(ctx, &files, &to, commit, toolchain),
        cli::History::List { dir, .. } => list(ctx, dir),
    }
}

fn import_files(
    ctx: &Ctx,
    files: &[PathBuf],
    to: &Path,
    commit: Option<String>,
    toolchain: Option<String>,
) -> Result<i32, Error> {
    lockstep_history::collect::check_dir("--to", to, &[])?;
    if let Some(toolchain) = &toolchain {
        if toolchain.trim().is_empty() {
            return Err(Error::usage("--toolchain is empty")
                .hint("give the toolchain's identity, or leave --toolchain out"));
        }
    }
    let opts = import::Options {
        commit,
        toolchain,
        repo_dir: ctx.root()?.to_path_buf(),
        pin_files: pin_files(ctx)?,
    };
    // Every file is read and recognised before anything is written.
    let prepared = import::prepare(files, &opts)?;
    for (p, outcome) in prepared.iter().zip(import::write(to, &prepared)?) {
        match outcome {
            Outcome::Imported(path) => ctx.out().line(format!(
                "imported {} as {} run {}",
                p.path.display(),
                p.run.kind.name(),
                path.display()
            )),
            Outcome::Already(path) => ctx.out().line(format!(
                "{}: already in the history ({})",
                p.path.display(),
                path.display()
            )),
        }
    }
    Ok(0)
}

/// `history list --json`.
#[derive(serde::Serialize)]
struct Listed {
    runs: Vec<lockstep_history::list::RunSummary>,
    skipped: Vec<SkippedFile>,
}

#[derive(serde::Serialize)]
struct SkippedFile {
    path: PathBuf,
    reason: String,
}

fn list(ctx: &Ctx, dir: Option<PathBuf>) -> Result<i32, Error> {
    let dir = match dir {
        Some(dir) => dir,
        None => {
            let cfg: HistoryConfig = ctx.section()?;
            match cfg.dir {
                Some(dir) => ctx.root()?.join(dir),
                None => return Err(Error::usage("no history directory to list").hint(
                    "name it (lockstep history list DIR), or set [history] dir in lockstep.toml",
                )),
            }
        }
    };
    let loaded = lockstep_history::load(&dir)?;
    for s in &loaded.skipped {
        ctx.sink()
            .warn(format!("skipped {}: {}", s.path.display(), s.reason));
    }
    let listed = Listed {
        runs: loaded
            .runs
            .iter()
            .map(lockstep_history::list::summarize)
            .collect(),
        skipped: loaded
            .skipped
            .into_iter()
            .map(|s| SkippedFile {
                path: s.path,
                reason: s.reason,
            })
            .collect(),
    };
    ctx.result(&listed, |out| {
        if listed.runs.is_empty() {
            out.line(format!("no runs in {}", dir.display()));
        }
        for run in &listed.runs {
            out.line(lockstep_history::list::line(run));
        }
    })?;
    Ok(0)
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
        None => {
            let cfg: HistoryConfig = ctx.section()?;
            match cfg.dir {
                Some(dir) => ctx.root()?.join(dir),
                None => return Err(Error::usage("report site needs a history").hint(
                    "pass --history DIR, or set [history] dir in lockstep.toml (docs/history.md)",
                )),
            }
        }
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
    for skipped in &loaded.skipped {
        ctx.sink().warn(format!(
            "skipped {}: {}",
            skipped.path.display(),
            skipped.reason
        ));
    }
    let report = lockstep_site::site(
        &loaded,
        releases.as_deref(),
        &ctx.cwd.join(&out),
        base_url.as_deref(),
    )?;
    let out_line = ctx.out();
    let largest = report
        .largest_page()
        .map(|(name, bytes)| format!(", largest page {name} {} kB", bytes / 1000))
        .unwrap_or_default();
    out_line.line(format!(
        "wrote {} ({} pages from {} runs{largest}; {} regression(s), {} flaky test(s))",
        report.out.join("index.html").display(),
        report.pages.len(),
        report.runs,
        report.regressions,
        report.flaky_tests
    ));
    // The command ends here: freeing a history of thousands of parsed
    // documents one allocation at a time would take seconds for nothing.
    std::mem::forget(loaded);
    Ok(0)
}
