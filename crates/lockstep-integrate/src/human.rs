//! The human form of what `lockstep integrate` returns (printed without
//! `--json`), beside the events' own: an area's results say how they read,
//! the binary only prints them.

use crate::advance::NextOutcome;
use crate::bisect::BisectResult;
use crate::halt::short;
use crate::mark::Marked;
use crate::outcome::Looped;
use crate::recover::Aborted;
use crate::repair::Repaired;
use crate::revert::Reverted;
use crate::search::{LoopEnd, LoopReport};
use crate::start::Started;
use crate::status::Status;
use lockstep_core::words::count;

/// Text built line by line.
#[derive(Default)]
struct Lines(String);

impl Lines {
    fn line(&mut self, line: impl std::fmt::Display) {
        self.0.push_str(&line.to_string());
        self.0.push('\n');
    }
}

/// `integrate repair`.
pub fn repaired(repaired: &Repaired, force: bool) -> String {
    let mut out = Lines::default();
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
    out.0
}

/// `integrate loop`.
pub fn looped(report: &LoopReport) -> String {
    let mut out = Lines::default();
    match &report.end {
        LoopEnd::AtHead => out.line("at upstream head"),
        LoopEnd::StepsExhausted { pending } => {
            out.line(format!(
                "--max-steps reached; {} still pending:",
                count(pending.len(), "affecting commit", "affecting commits")
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
                "would search {} with `{strategy}`:",
                count(candidates.len(), "candidate", "candidates")
            ));
            for c in candidates {
                out.line(format!("  {} {}", short(&c.sha), c.subject));
            }
        }
    }
    out.line(format!(
        "smoke runs: {} (cached: {}), {}",
        report.smoke_runs,
        report.cached,
        count(report.advances.len(), "advance", "advances")
    ));
    out.0
}

/// `integrate bisect`.
pub fn bisected(result: &BisectResult) -> String {
    let mut out = Lines::default();
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
        "{} of {} tested, {}",
        result.steps.len(),
        count(result.candidates, "candidate", "candidates"),
        count(result.runs, "run", "runs")
    ));
    out.0
}

/// `integrate status`.
pub fn status(s: &Status) -> String {
    let mut out = Lines::default();
    out.line(format!(
        "superproject: {} ({})",
        s.superproject,
        s.branch.as_deref().unwrap_or("detached HEAD")
    ));
    let carrying = if s.clean {
        "clean".to_string()
    } else {
        format!("carrying {}", count(s.patches.len(), "patch", "patches"))
    };
    out.line(format!("pin:          {} ({carrying})", s.pin));
    if s.current != s.pin {
        out.line(format!(
            "checked out:  {} (not the pin; the next advance starts from it)",
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
    if !s.followers.is_empty() {
        out.line("\nfollowers (their own upstream pin):");
        for f in &s.followers {
            let at = match (&f.problem, f.behind, f.ahead) {
                (Some(why), _, _) => format!("! {why}"),
                (None, Some(0), Some(0)) => "same pin".to_string(),
                (None, Some(b), Some(0)) => format!("{} behind", count(b, "commit", "commits")),
                (None, Some(0), Some(a)) => format!("{} ahead", count(a, "commit", "commits")),
                (None, Some(b), Some(a)) => format!("{b} behind, {a} ahead"),
                _ => "unknown".to_string(),
            };
            out.line(format!(
                "  {} ({}) pins {}: {at}",
                f.name,
                f.submodule,
                f.upstream_pin.as_deref().map(short).unwrap_or("?")
            ));
        }
    }
    if !s.not_stable.is_empty() {
        out.line("\nnot ok for a stable release:");
        for r in &s.not_stable {
            out.line(format!("  - {r}"));
        }
    }
    let reverts: Vec<&crate::status::Patch> =
        s.patches.iter().filter(|p| p.reverts.is_some()).collect();
    if !reverts.is_empty() {
        out.line(format!("\ncarried reverts: {}", reverts.len()));
        for p in &reverts {
            out.line(format!(
                "  {} reverts {}: {}",
                short(&p.sha),
                short(p.reverts.as_deref().unwrap_or_default()),
                p.reason.as_deref().unwrap_or("no reason recorded")
            ));
        }
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
    out.0
}

/// One line per carried patch an advance drops (`verb`: "dropped", "would
/// drop"), with why.
fn dropped_lines(out: &mut Lines, verb: &str, dropped: &[crate::replay::Dropped]) {
    for d in dropped {
        out.line(format!(
            "{verb} carried patch {} {} ({})",
            short(&d.sha),
            d.subject,
            d.why.as_deref().unwrap_or("upstream has it")
        ));
    }
}

/// `integrate next`.
pub fn next(outcome: &NextOutcome) -> String {
    let mut out = Lines::default();
    match outcome {
        NextOutcome::UpToDate => out.line("up to date: nothing pending"),
        NextOutcome::WouldAdvance { plan } => {
            out.line(format!(
                "would commit: {}",
                plan.message.lines().next().unwrap_or("")
            ));
            out.line(format!("submodule would move to {}", plan.head));
            dropped_lines(&mut out, "would drop", &plan.dropped);
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
            dropped_lines(&mut out, "dropped", &plan.dropped);
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
    out.0
}

/// One line for `integrate publish`.
pub fn published(p: &crate::publish::Published) -> String {
    let pushed = if p.pushed {
        format!("pushed {} to {} {}", short(&p.head), p.remote, p.branch)
    } else {
        format!("{} {} is at {} already", p.remote, p.branch, short(&p.head))
    };
    format!(
        "{pushed}; {} {}pull request #{} of {}{}{}",
        if p.created { "opened" } else { "updated" },
        if p.pull.draft { "draft " } else { "" },
        p.pull.number,
        p.repository,
        p.pull
            .html_url
            .as_deref()
            .map(|u| format!(" ({u})"))
            .unwrap_or_default(),
        if p.needs_help {
            ", marked as needing help"
        } else {
            ""
        }
    ) + &match &p.ready {
        Some(crate::publish::Readiness::Ready) => "; ready for review".to_string(),
        Some(r) => format!("; still a draft: {}", readiness_reason(r)),
        None => String::new(),
    }
}

fn readiness_reason(r: &crate::publish::Readiness) -> String {
    use crate::publish::Readiness;
    match r {
        Readiness::Ready => "ready".into(),
        Readiness::Behind(n) => format!("{} upstream to take", count(*n, "commit", "commits")),
        Readiness::Halted => "halted".into(),
        Readiness::ChecksPending => "checks still running".into(),
        Readiness::ChecksFailing(names) => format!("checks fail: {names}"),
        Readiness::FinalChecksFailing(n) => {
            format!(
                "{} to fix before landing",
                count(*n, "final-check failure", "final-check failures")
            )
        }
    }
}

/// What `integrate continue` did.
pub fn continued(c: &crate::continues::Continued) -> String {
    let verb = match (c.action, c.dry_run) {
        (crate::continues::Action::Resume, false) => "continuing",
        (crate::continues::Action::Resume, true) => "would continue",
        (crate::continues::Action::Start, false) => "started",
        (crate::continues::Action::Start, true) => "would start",
    };
    match c.pull {
        Some(n) => format!("{verb} {} (open pull request #{n})\n", c.branch),
        None => format!("{verb} {} (no integrate pull request is open)\n", c.branch),
    }
}

/// One line for what `integrate resume` brought in.
pub fn resumed(r: &crate::resume::Resumed) -> String {
    let mut line = if r.pulled == 0 {
        format!("{} is up to date with its remote", r.branch)
    } else {
        format!(
            "fast-forwarded {} by {} ({} -> {})",
            r.branch,
            count(r.pulled, "commit", "commits"),
            short(&r.from),
            short(&r.to)
        )
    };
    if let Some(merge) = &r.merged {
        line += &format!("; merged the base branch ({})", short(merge));
    }
    line
}

/// `integrate start`.
pub fn started(s: &Started) -> String {
    format!(
        "started {} from {} ({})\n",
        s.branch,
        short(&s.base),
        short(&s.commit)
    )
}

/// `integrate loop` and `integrate resume`: what resume brought in, the
/// loop, and what `--publish` did.
pub fn loop_run(l: &Looped) -> String {
    let mut out = Lines::default();
    if let Some(r) = &l.resumed {
        out.line(resumed(r));
    }
    out.0.push_str(&looped(&l.report));
    if let Some(p) = &l.published {
        out.line(published(p));
    }
    out.0
}

/// `integrate revert`.
pub fn reverted(r: &Reverted) -> String {
    let mut out = Lines::default();
    out.line(format!(
        "{} carries a revert of {} {} ({})",
        short(&r.superproject_commit),
        short(&r.reverted),
        r.subject,
        r.reason
    ));
    if let Some(e) = &r.exported {
        out.line(format!("export: {e}"));
    }
    out.0
}

/// `integrate mark`.
pub fn marked(m: &Marked) -> String {
    match (&m.commit, m.reasons.is_empty()) {
        (None, true) => "ok for a stable release (no mark)\n".into(),
        (None, false) => "the mark holds that reason already\n".into(),
        (Some(c), true) => format!("{} ok for a stable release\n", short(c)),
        (Some(c), false) => format!(
            "{} not ok for a stable release: {}\n",
            short(c),
            m.reasons.join("; ")
        ),
    }
}

/// `integrate abort`.
pub fn aborted(a: &Aborted) -> String {
    let mut out = Lines::default();
    if a.undone.is_empty() {
        out.line("nothing unfinished to undo");
    }
    for u in &a.undone {
        out.line(format!("undone: {u}"));
    }
    out.0
}
