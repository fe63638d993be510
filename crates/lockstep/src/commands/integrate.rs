//! `lockstep integrate ...`: flags into the integrate engine's calls; what
//! they return printed as JSON or in its human form (lockstep_integrate::human).

use std::time::Duration;

use lockstep_core::Error;
use lockstep_integrate::advance::{NextOptions, NextOutcome};
use lockstep_integrate::bisect::BisectOptions;
use lockstep_integrate::config::IntegrateConfig;
use lockstep_integrate::halt::{require_halt, short};
use lockstep_integrate::human;
use lockstep_integrate::search::{LoopEnd, LoopOptions};
use lockstep_integrate::Integrate;

use crate::cli;
use crate::context::Ctx;

/// `integrate loop --json` (and `resume --json`): the loop's report, what
/// `resume` brought in before it, and what `--publish` did after it.
#[derive(serde::Serialize)]
struct Looped {
    #[serde(skip_serializing_if = "Option::is_none")]
    resumed: Option<lockstep_integrate::resume::Resumed>,
    #[serde(flatten)]
    report: lockstep_integrate::search::LoopReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    published: Option<lockstep_integrate::publish::Published>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    called_for_help: bool,
}

impl Looped {
    fn exit(&self) -> i32 {
        match &self.report.end {
            LoopEnd::Halted { .. } => HALTED,
            _ => 0,
        }
    }
}

/// The loop, then (with `publish`) the push, the pull request and, at a
/// halt, the call for help.
fn run_loop(
    ig: &Integrate,
    opts: &LoopOptions,
    publish: bool,
    resumed: Option<lockstep_integrate::resume::Resumed>,
) -> Result<Looped, Error> {
    let report = ig.run_loop(opts)?;
    let mut looped = Looped {
        resumed,
        report,
        published: None,
        called_for_help: false,
    };
    if publish {
        looped.published = Some(ig.publish()?);
        if let LoopEnd::Halted { halt } = &looped.report.end {
            looped.called_for_help = ig.call_for_help(halt)?;
        }
    }
    Ok(looped)
}

fn print_looped(out: lockstep_report::Out, looped: &Looped) {
    if let Some(resumed) = &looped.resumed {
        out.line(human::resumed(resumed));
    }
    out.print(&human::looped(&looped.report));
    if let Some(published) = &looped.published {
        out.line(human::published(published));
    }
}

/// Exit status for a halt at a breaking or conflicting commit.
const HALTED: i32 = 3;

pub fn run(cmd: cli::Integrate, ctx: &Ctx) -> Result<i32, Error> {
    let cfg: IntegrateConfig = ctx.section()?;
    let root = ctx.root()?;
    if let cli::Integrate::Repair { force, json: _ } = cmd {
        // Before the store is opened: `open` needs a readable database.
        let repaired = lockstep_integrate::repair::repair(&cfg, root, force)?;
        ctx.result(&repaired, |out| {
            out.print(&human::repaired(&repaired, force))
        })?;
        return Ok(0);
    }
    if let cli::Integrate::Start { branch, .. } = &cmd {
        // Before the store is opened: a refused name leaves nothing behind.
        lockstep_integrate::validate::config(&cfg)?;
        lockstep_integrate::start::check_start_names(&cfg, root, branch.as_deref())?;
    }
    // The command's own outputs (`--events FILE`) are never uncommitted work.
    let ig = Integrate::open(&cfg, root, ctx.sink())?.with_outputs(
        ctx.spec
            .output_files()
            .map(|(_, path)| ctx.cwd.join(path))
            .collect(),
    );
    match cmd {
        cli::Integrate::Start {
            branch, no_fetch, ..
        } => {
            let started = ig.start(branch.as_deref(), !no_fetch)?;
            ctx.result(&started, |out| {
                out.line(format!(
                    "started {} from {} ({})",
                    started.branch,
                    short(&started.base),
                    short(&started.commit)
                ))
            })?;
            Ok(0)
        }
        cli::Integrate::Status { fetch, .. } => {
            let status = ig.status(fetch)?;
            ctx.result(&status, |out| out.print(&human::status(&status)))?;
            Ok(0)
        }
        cli::Integrate::Next {
            to,
            no_export,
            dry_run,
            ..
        } => {
            let outcome = ig.next(&NextOptions {
                to,
                no_export,
                dry_run,
            })?;
            ctx.result(&outcome, |out| out.print(&human::next(&outcome)))?;
            Ok(match outcome {
                NextOutcome::WouldConflict { .. } | NextOutcome::Conflict { .. } => HALTED,
                _ => 0,
            })
        }
        cli::Integrate::Loop {
            strategy,
            max_steps,
            wait,
            dry_run,
            no_export,
            no_fetch,
            publish,
            on_break,
            bump_followers,
            record,
            ..
        } => {
            // A dry run changes nothing and runs no smoke: nothing to record.
            let recording = match dry_run {
                true => None,
                false => {
                    super::history::start(ctx, &record, lockstep_history::Kind::Integrate, &[])?
                }
            };
            let opts = LoopOptions {
                strategy: strategy.unwrap_or(ig.cfg.strategy),
                max_steps,
                wait: wait.map(Duration::from_secs),
                dry_run,
                no_export,
                fetch: !no_fetch,
                on_break: on_break.unwrap_or_default(),
                bump_followers,
            };
            let looped = run_loop(&ig, &opts, publish && !dry_run, None)?;
            let printed = ctx.result(&looped, |out| print_looped(out, &looped));
            // Recorded whatever the end (a halt too), after the output.
            lockstep_history::recorder::finish(
                recording,
                || lockstep_core::output::document(&looped),
                None,
                ctx.sink(),
            );
            printed?;
            Ok(looped.exit())
        }
        cli::Integrate::Resume {
            merge_main,
            no_loop,
            publish,
            on_break,
            ..
        } => {
            let resumed = ig.resume(merge_main)?;
            if no_loop {
                ctx.result(&resumed, |out| out.line(human::resumed(&resumed)))?;
                return Ok(0);
            }
            let opts = LoopOptions {
                strategy: ig.cfg.strategy,
                max_steps: None,
                wait: None,
                dry_run: false,
                no_export: false,
                fetch: true,
                on_break: on_break.unwrap_or_default(),
                bump_followers: false,
            };
            let looped = run_loop(&ig, &opts, publish, Some(resumed))?;
            ctx.result(&looped, |out| print_looped(out, &looped))?;
            Ok(looped.exit())
        }
        cli::Integrate::Revert {
            commit,
            reason,
            no_export,
            ..
        } => {
            let reverted = ig.revert(&commit, &reason, !no_export)?;
            ctx.result(&reverted, |out| {
                out.line(format!(
                    "{} carries a revert of {} {} ({})",
                    short(&reverted.superproject_commit),
                    short(&reverted.reverted),
                    reverted.subject,
                    reverted.reason
                ));
                if let Some(e) = &reverted.exported {
                    out.line(format!("export: {e}"));
                }
            })?;
            Ok(0)
        }
        cli::Integrate::Mark { unstable, .. } => {
            let marked = ig.mark(unstable.as_deref())?;
            ctx.result(&marked, |out| {
                match (&marked.commit, marked.reasons.is_empty()) {
                    (None, true) => out.line("ok for a stable release (no mark)"),
                    (None, false) => out.line("the mark holds that reason already"),
                    (Some(c), true) => out.line(format!("{} ok for a stable release", short(c))),
                    (Some(c), false) => out.line(format!(
                        "{} not ok for a stable release: {}",
                        short(c),
                        marked.reasons.join("; ")
                    )),
                }
            })?;
            Ok(0)
        }
        cli::Integrate::Publish { .. } => {
            let published = ig.publish()?;
            ctx.result(&published, |out| out.line(human::published(&published)))?;
            Ok(0)
        }
        cli::Integrate::Export { .. } => {
            let exported = ig.export()?;
            ctx.result(&exported, |out| out.line(exported.describe()))?;
            Ok(0)
        }
        cli::Integrate::Report { post, .. } => {
            let halt = require_halt(ig.halt()?)?;
            let report = ig.render(&halt);
            ctx.result(&halt, |out| out.print(&report.text))?;
            if post {
                let msg = lockstep_integrate::notify::Message {
                    content: &report.text,
                    errors_txt: &report.errors,
                };
                lockstep_integrate::notify::post(ig.cfg.notify.kind, &ig.cfg.notify.url_env, &msg)?;
                ctx.sink().note(format!(
                    "posted the report to the webhook in ${}",
                    ig.cfg.notify.url_env
                ));
            }
            Ok(0)
        }
        cli::Integrate::Bisect {
            good,
            bad,
            superproject,
            timeout,
            ci,
            ci_timeout,
            ci_poll,
            command,
            ..
        } => {
            let opts = BisectOptions {
                good,
                bad,
                superproject,
                command,
                timeout: timeout.map(Duration::from_secs),
            };
            let result = if ci {
                let poll = ci_poll.unwrap_or(30.0);
                if !(poll.is_finite() && (0.0..=3600.0).contains(&poll)) {
                    return Err(Error::usage("--ci-poll must be 0 to 3600 seconds"));
                }
                ig.bisect_ci(
                    &opts,
                    &lockstep_integrate::ci::CiOptions {
                        timeout: Duration::from_secs(ci_timeout.unwrap_or(3 * 3600)),
                        poll: Duration::from_secs_f64(poll),
                    },
                )?
            } else {
                ig.bisect(&opts)?
            };
            ctx.result(&result, |out| out.print(&human::bisected(&result)))?;
            Ok(0)
        }
        cli::Integrate::Abort { all, .. } => {
            let aborted = ig.abort(all)?;
            ctx.result(&aborted, |out| {
                if aborted.undone.is_empty() {
                    out.line("nothing unfinished to undo");
                }
                for u in &aborted.undone {
                    out.line(format!("undone: {u}"));
                }
            })?;
            Ok(0)
        }
        // Handled above, before the store is opened.
        cli::Integrate::Repair { .. } => Ok(0),
    }
}
