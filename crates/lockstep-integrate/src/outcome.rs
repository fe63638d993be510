//! What an integrate command ends with when it is more than one engine call:
//! the loop together with what `resume` brought in before it and what
//! `--publish` did after it ([`Looped`]), a halt report posted to the
//! webhook, and the exit statuses (3 at a halt, docs/output.md). These are
//! decisions, so they live beside the engine; the binary only prints them.

use std::time::Duration;

use lockstep_core::Error;
use serde::Serialize;

use crate::advance::NextOutcome;
use crate::ci::CiOptions;
use crate::halt::Report;
use crate::publish::Published;
use crate::resume::Resumed;
use crate::search::{LoopEnd, LoopOptions, LoopReport};
use crate::Integrate;

/// Exit status for a halt at a breaking or conflicting commit.
pub const HALTED: i32 = 3;

/// `integrate loop --json` (and `resume --json`): the loop's report, what
/// `resume` brought in before it, and what `--publish` did after it.
#[derive(Serialize)]
pub struct Looped {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed: Option<Resumed>,
    #[serde(flatten)]
    pub report: LoopReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published: Option<Published>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub called_for_help: bool,
    /// `[integrate] final-checks`, run at upstream's head or the halt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_checks: Option<crate::final_checks::FinalChecks>,
}

impl Looped {
    /// 3 when the loop halted, else 0.
    pub fn exit(&self) -> i32 {
        match &self.report.end {
            LoopEnd::Halted { .. } => HALTED,
            _ => 0,
        }
    }
}

/// The exit status of `integrate next`: 3 at a conflict (or one a dry run
/// foresees), else 0.
pub fn next_exit(outcome: &NextOutcome) -> i32 {
    match outcome {
        NextOutcome::WouldConflict { .. } | NextOutcome::Conflict { .. } => HALTED,
        _ => 0,
    }
}

/// The loop `integrate resume` runs after bringing the branch up to date:
/// the configured strategy, from upstream head, exporting, nothing else.
pub fn resume_loop(ig: &Integrate, on_break: crate::search::OnBreak) -> LoopOptions {
    LoopOptions {
        strategy: ig.cfg.strategy,
        max_steps: None,
        wait: None,
        dry_run: false,
        no_export: false,
        fetch: true,
        on_break,
        bump_followers: false,
    }
}

/// The longest `--ci-timeout`: a week per step.
const MAX_CI_TIMEOUT_SECS: u64 = 7 * 24 * 3600;

/// `integrate bisect --ci`'s waits from its flags: `--ci-timeout` (default
/// 3 hours, 1 s to a week) and `--ci-poll` (default 30 s, 0 to 3600).
pub fn ci_options(ci_timeout: Option<u64>, ci_poll: Option<f64>) -> Result<CiOptions, Error> {
    let poll = ci_poll.unwrap_or(30.0);
    if !(poll.is_finite() && (0.0..=3600.0).contains(&poll)) {
        return Err(Error::usage("--ci-poll must be 0 to 3600 seconds"));
    }
    let timeout = ci_timeout.unwrap_or(3 * 3600);
    if !(1..=MAX_CI_TIMEOUT_SECS).contains(&timeout) {
        return Err(
            Error::usage(format!("--ci-timeout {timeout} is out of range")).hint(format!(
                "give the seconds to wait for CI per step, 1 to {MAX_CI_TIMEOUT_SECS} (a week)"
            )),
        );
    }
    Ok(CiOptions {
        timeout: Duration::from_secs(timeout),
        poll: Duration::from_secs_f64(poll),
    })
}

/// The loop, then (with `publish`) the push, the pull request and, at a
/// halt, the call for help.
pub fn loop_and_publish(
    ig: &Integrate,
    opts: &LoopOptions,
    publish: bool,
    resumed: Option<Resumed>,
) -> Result<Looped, Error> {
    crate::outcome::loop_and_publish_ready(ig, opts, publish, false, resumed)
}

/// [`crate::outcome::loop_and_publish`]; with `ready`, the publish marks a
/// draft at upstream's head with green checks ready for review.
pub fn loop_and_publish_ready(
    ig: &Integrate,
    opts: &LoopOptions,
    publish: bool,
    ready: bool,
    resumed: Option<Resumed>,
) -> Result<Looped, Error> {
    crate::outcome::check_before_loop(ig, opts, publish)?;
    let report = crate::search::run_loop(ig, opts)?;
    // The checks that do not halt: at the end, or where it halted.
    let final_checks = match (&report.end, opts.dry_run) {
        (LoopEnd::AtHead | LoopEnd::Halted { .. }, false) => {
            crate::final_checks::run_final_checks(ig)?
        }
        _ => None,
    };
    let mut looped = Looped {
        resumed,
        report,
        published: None,
        called_for_help: false,
        final_checks,
    };
    if publish {
        looped.published = Some(crate::publish::publish_with(ig, ready)?);
        if let LoopEnd::Halted { halt } = &looped.report.end {
            looped.called_for_help = crate::publish::call_for_help(ig, halt)?;
        }
    }
    Ok(looped)
}

/// What can be checked before the loop's first side effect (the fetch,
/// a smoke, a commit): a branch to commit on, and with `publish` the
/// push target, the token and the webhook URL (when one is set: an
/// unset one is a warning at the halt). Exit 2 then means nothing
/// happened.
fn check_before_loop(ig: &Integrate, opts: &LoopOptions, publish: bool) -> Result<(), Error> {
    if opts.dry_run {
        return Ok(());
    }
    ig.branch()?;
    if !publish {
        return Ok(());
    }
    crate::publish::publish_target(ig)?;
    let var = &ig.cfg.notify.url_env;
    let url = crate::publish::webhook_url(ig)?;
    match url {
        Some(url) => crate::notify::check_url(&url, var),
        None => Ok(()),
    }
}

/// `integrate report --post`: the halt report to the webhook of
/// `[integrate.notify]`, said once it is sent.
pub fn post_report(ig: &Integrate, report: &Report) -> Result<(), Error> {
    let msg = crate::notify::Message {
        content: &report.text,
        errors_txt: &report.errors,
    };
    crate::notify::post(ig.cfg.notify.kind, &ig.cfg.notify.url_env, &msg)?;
    ig.info(format!(
        "posted the report to the webhook in ${}",
        ig.cfg.notify.url_env
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_waits_are_bounded() {
        let ok = ci_options(None, None).unwrap();
        assert_eq!(ok.timeout, Duration::from_secs(3 * 3600));
        assert!(ci_options(Some(60), Some(0.0)).is_ok());
        for (timeout, poll) in [
            (Some(0), None),
            (Some(u64::MAX), None),
            (Some(MAX_CI_TIMEOUT_SECS + 1), None),
            (None, Some(f64::NAN)),
            (None, Some(-1.0)),
            (None, Some(3601.0)),
        ] {
            let err = ci_options(timeout, poll).unwrap_err();
            assert!(err.message.contains("--ci-"), "{}", err.message);
        }
    }
}
