//! `lockstep integrate ...`: flags into the integrate engine's calls, and
//! the human form of what they return.

use std::time::Duration;

use lockstep_core::Error;
use lockstep_integrate::advance::{NextOptions, NextOutcome};
use lockstep_integrate::bisect::{BisectOptions, BisectResult};
use lockstep_integrate::config::IntegrateConfig;
use lockstep_integrate::halt::{require_halt, short};
use lockstep_integrate::repair::Repaired;
use lockstep_integrate::search::{LoopEnd, LoopOptions, LoopReport};
use lockstep_integrate::status::Status;
use lockstep_integrate::Integrate;
use lockstep_report::Out;

use crate::cli;
use crate::context::Ctx;

/// Exit status for a halt at a breaking or conflicting commit.
const HALTED: i32 = 3;

pub fn run(cmd: cli::Integrate, ctx: &Ctx) -> Result<i32, Error> {
    let cfg: IntegrateConfig = ctx.section()?;
    let root = ctx.root()?;
    if let cli::Integrate::Repair { force, json: _ } = cmd {
        // Before the store is opened: `open` needs a readable database.
        let repaired = lockstep_integrate::repair::repair(&cfg, root, force)?;
        ctx.result(&repaired, |out| print_repaired(out, &repaired, force))?;
        return Ok(0);
    }
    if let cli::Integrate::Start { branch, .. } = &cmd {
        // Before the store is opened: a refused name leaves nothing behind.
        lockstep_integrate::validate::config(&cfg)?;
        lockstep_integrate::start::check_start_names(&cfg, root, branch.as_deref())?;
    }
    // The command's own outputs (`--events FILE`) are never uncommitted work.
    let ig = Integrate::open(&cfg, root, ctx.sink())?.with_outputs(ctx.spec.output_files(&ctx.cwd));
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
            ctx.result(&status, |out| print_status(out, &status))?;
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
            ctx.result(&outcome, |out| print_next(out, &outcome))?;
            Ok(next_code(&outcome))
        }
        cli::Integrate::Loop {
            strategy,
            max_steps,
            wait,
            dry_run,
            no_export,
            no_fetch,
            ..
        } => {
            let opts = LoopOptions {
                strategy: strategy.unwrap_or(ig.cfg.strategy),
                max_steps,
                wait: wait.map(Duration::from_secs),
                dry_run,
                no_export,
                fetch: !no_fetch,
            };
            let report = ig.run_loop(&opts)?;
            ctx.result(&report, |out| print_loop(out, &report))?;
            Ok(match &report.end {
                LoopEnd::Halted { .. } => HALTED,
                _ => 0,
            })
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
            command,
            ..
        } => {
            let result = ig.bisect(&BisectOptions {
                good,
                bad,
                superproject,
                command,
                timeout: timeout.map(Duration::from_secs),
            })?;
            ctx.result(&result, |out| print_bisect(out, &result))?;
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

fn print_repaired(out: Out, repaired: &Repaired, force: bool) {
    match &repaired.moved_aside {
        None if !force => out.line("the state database is readable: nothing to repair"),
        None => out.line("there was no state database; a new one was started"),
        Some(aside) => out.line(format!(
            "moved the state database aside to {}; a new one was started",
            aside.display()
        )),
    }
    if let Some(branch) = &repaired.integrate_branch {
        out.line(format!(
            "rebuilt the record of integrate branch {branch} from git"
        ));
    }
}

fn print_loop(out: Out, report: &LoopReport) {
    match &report.end {
        LoopEnd::AtHead => out.line("at upstream head"),
        LoopEnd::StepsExhausted { pending } => {
            out.line(format!(
                "--max-steps reached; {} affecting commits still pending:",
                pending.len()
            ));
            for c in pending.iter().take(20) {
                out.line(format!("  {} {}", short(&c.sha), c.subject));
            }
        }
        LoopEnd::Halted { halt } => {
            out.line(format!(
                "halted ({}) at {} {}\nreport: {}",
                halt.kind.as_str(),
                halt.culprit.sha,
                halt.culprit.subject,
                halt.report_path
            ));
        }
        LoopEnd::Plan {
            candidates,
            strategy,
        } => {
            out.line(format!(
                "would search {} candidates with `{strategy}`:",
                candidates.len()
            ));
            for c in candidates {
                out.line(format!("  {} {}", short(&c.sha), c.subject));
            }
        }
    }
    let advances = report.advances.len();
    out.line(format!(
        "smoke runs: {} (cached: {}), {advances} {}",
        report.smoke_runs,
        report.cached,
        if advances == 1 { "advance" } else { "advances" }
    ));
}

fn print_bisect(out: Out, result: &BisectResult) {
    out.line(format!(
        "first bad commit: {} {}\n  ({} by {} on {})",
        result.first_bad.sha,
        result.first_bad.subject,
        result.mode,
        result.first_bad.author,
        result.first_bad.date
    ));
    if !result.ambiguous.is_empty() {
        out.line(format!(
            "  untestable commits before it, any of which may be first: {}",
            result.ambiguous.join(", ")
        ));
    }
    out.line(format!(
        "{} of {} candidates tested, {} runs",
        result.steps.len(),
        result.candidates,
        result.runs
    ));
}

fn print_status(out: Out, s: &Status) {
    out.line(format!(
        "superproject: {} ({})",
        s.superproject,
        s.branch.as_deref().unwrap_or("detached HEAD")
    ));
    let carrying = if s.clean {
        "clean".to_string()
    } else {
        format!("carrying {} patches", s.patches.len())
    };
    out.line(format!("pin:          {} ({carrying})", s.pin));
    if s.current != s.pin {
        out.line(format!(
            "submodule:    HEAD is {} (not the pin; the next advance starts from it)",
            s.current
        ));
    }
    if let Some(plan) = s.fetch_plan.as_deref().filter(|_| !s.upstream_fetched) {
        out.line(format!(
            "upstream:     {} was never fetched; `lockstep integrate status --fetch` would {plan}",
            s.upstream_ref.trim_start_matches("refs/remotes/"),
        ));
    } else {
        out.line(format!("based on:     {}", s.merge_base));
        out.line(format!(
            "upstream:     {} at {}",
            s.upstream_ref.trim_start_matches("refs/remotes/"),
            s.upstream_head
        ));
    }
    if !s.patches.is_empty() {
        out.line("\ncarried patches (oldest first):");
        for p in &s.patches {
            out.line(format!("  {} {}", short(&p.sha), p.subject));
            match &p.reason {
                Some(r) => out.line(format!("      reason: {r}")),
                None => out.line(
                    "      ! no reason recorded: add a `Lockstep-Reason:` trailer or a body line",
                ),
            }
            if let Some(up) = &p.upstreamed_by {
                out.line(format!(
                    "      already upstream as {} (dropped when the pin passes it)",
                    short(up)
                ));
            }
            if let (Some(rev), Some(by)) = (&p.reverts, &p.reverted_upstream_by) {
                out.line(format!(
                    "      reverts {rev}, which upstream reverted in {} (dropped then)",
                    short(by)
                ));
            }
        }
    }
    out.line(format!(
        "\npending affecting commits: {} (oldest first)",
        s.pending.len()
    ));
    let show = 30;
    for (i, c) in s.pending.iter().enumerate().take(show) {
        out.line(format!(
            "  {:>4} {} {} {} {}",
            i + 1,
            short(&c.sha),
            c.date.get(..10).unwrap_or(&c.date),
            c.author,
            c.subject
        ));
    }
    if s.pending.len() > show {
        out.line(format!("  ... and {} more", s.pending.len() - show));
    }
    if let Some(h) = &s.halted {
        out.line(format!(
            "\nhalted ({}) at {}\n  report: {}\n  see `lockstep integrate report`",
            h.kind, h.commit, h.report
        ));
    }
}

/// `integrate next`'s exit status: 3 at a conflict.
fn next_code(outcome: &NextOutcome) -> i32 {
    match outcome {
        NextOutcome::WouldConflict { .. } | NextOutcome::Conflict { .. } => HALTED,
        _ => 0,
    }
}

fn print_next(out: Out, outcome: &NextOutcome) {
    match outcome {
        NextOutcome::UpToDate => out.line("up to date: nothing pending"),
        NextOutcome::WouldAdvance { plan } => {
            out.line(format!(
                "would commit: {}",
                plan.message.lines().next().unwrap_or("")
            ));
            out.line(format!("submodule would move to {}", plan.head));
            for d in &plan.dropped {
                out.line(format!(
                    "would drop carried patch {} {} (upstream has it)",
                    short(&d.sha),
                    d.subject
                ));
            }
        }
        NextOutcome::WouldConflict { target, conflict } => {
            out.line(format!(
                "would halt: carried patch {} \"{}\" conflicts at {} in {}",
                short(&conflict.patch),
                conflict.subject,
                short(&target.sha),
                conflict.files.join(", ")
            ));
        }
        NextOutcome::Advanced {
            plan,
            superproject_commit,
            export,
        } => {
            out.line(format!(
                "{} {}",
                short(superproject_commit),
                plan.message.lines().next().unwrap_or("")
            ));
            for d in &plan.dropped {
                out.line(format!(
                    "dropped carried patch {} {} (upstream has it)",
                    short(&d.sha),
                    d.subject
                ));
            }
            if let Some(e) = export {
                out.line(format!("export: {e}"));
            }
        }
        NextOutcome::Resumed { resumed } => {
            out.line(format!(
                "finished the interrupted advance: {} {}",
                short(&resumed.superproject_commit),
                resumed.message.lines().next().unwrap_or("")
            ));
            if let Some(e) = &resumed.export {
                out.line(format!("export: {e}"));
            }
        }
        NextOutcome::Conflict { halt } => {
            if let Some(c) = &halt.conflict {
                out.line(format!(
                    "halted: carried patch {} \"{}\" conflicts at {} in {}\nreport: {}",
                    short(&c.patch),
                    c.subject,
                    short(&halt.culprit.sha),
                    c.files.join(", "),
                    halt.report_path
                ));
            }
        }
    }
}
