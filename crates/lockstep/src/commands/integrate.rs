//! `lockstep integrate ...`: flags into the integrate engine's calls; what
//! they return printed as JSON or in its human form (lockstep_integrate::human).

use std::time::Duration;

use lockstep_core::Error;
use lockstep_integrate::advance::NextOptions;
use lockstep_integrate::bisect::BisectOptions;
use lockstep_integrate::config::IntegrateConfig;
use lockstep_integrate::halt::require_halt;
use lockstep_integrate::human;
use lockstep_integrate::outcome;
use lockstep_integrate::search::LoopOptions;
use lockstep_integrate::Integrate;

use crate::context::Ctx;
use lockstep_cmdline as cli;

pub fn run(cmd: cli::Integrate, ctx: &Ctx) -> Result<i32, Error> {
    let cfg: IntegrateConfig = ctx.section()?;
    let root = ctx.root()?;
    if let cli::Integrate::Repair { force, json: _ } = cmd {
        // Before the store is opened: `open` needs a readable database.
        let repaired = lockstep_integrate::repair::repair(&cfg, root, force)?;
        return ctx.show(&repaired, |r| human::repaired(r, force));
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
        } => ctx.show(
            &lockstep_integrate::start::start(&ig, branch.as_deref(), !no_fetch)?,
            human::started,
        ),
        cli::Integrate::Status { fetch, .. } => ctx.show(
            &lockstep_integrate::status::status(&ig, fetch)?,
            human::status,
        ),
        cli::Integrate::Next {
            to,
            no_export,
            dry_run,
            ..
        } => {
            let next = lockstep_integrate::advance::next(
                &ig,
                &NextOptions {
                    to,
                    no_export,
                    dry_run,
                },
            )?;
            ctx.show(&next, human::next)?;
            Ok(outcome::next_exit(&next))
        }
        cli::Integrate::Loop {
            strategy,
            max_steps,
            wait,
            dry_run,
            no_export,
            no_fetch,
            publish,
            ready,
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
                strategy: strategy.unwrap_or(ig.config().strategy),
                max_steps,
                wait: wait.map(Duration::from_secs),
                dry_run,
                no_export,
                fetch: !no_fetch,
                on_break: on_break.unwrap_or_default(),
                bump_followers,
            };
            let looped = lockstep_integrate::outcome::loop_and_publish_ready(
                &ig,
                &opts,
                publish && !dry_run,
                ready,
                None,
            )?;
            let printed = ctx.show(&looped, human::loop_run);
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
            let resumed = lockstep_integrate::resume::resume(&ig, merge_main)?;
            if no_loop {
                return ctx.show(&resumed, |r| human::resumed(r) + "\n");
            }
            let opts = outcome::resume_loop(&ig, on_break.unwrap_or_default());
            let looped =
                lockstep_integrate::outcome::loop_and_publish(&ig, &opts, publish, Some(resumed))?;
            ctx.show(&looped, human::loop_run)?;
            Ok(looped.exit())
        }
        cli::Integrate::Revert {
            commit,
            reason,
            no_export,
            ..
        } => ctx.show(
            &lockstep_integrate::revert::revert(&ig, &commit, &reason, !no_export)?,
            human::reverted,
        ),
        cli::Integrate::Mark { unstable, .. } => ctx.show(
            &lockstep_integrate::mark::mark(&ig, unstable.as_deref())?,
            human::marked,
        ),
        cli::Integrate::Publish { ready, .. } => ctx.show(
            &lockstep_integrate::publish::publish_with(&ig, ready)?,
            |p| human::published(p) + "\n",
        ),
        cli::Integrate::Continue { dry_run, .. } => ctx.show(
            &lockstep_integrate::continues::continue_open(&ig, dry_run)?,
            human::continued,
        ),
        cli::Integrate::Export { .. } => ctx.show(&lockstep_integrate::export::export(&ig)?, |e| {
            e.describe() + "\n"
        }),
        cli::Integrate::Report { post, .. } => {
            let halt = require_halt(lockstep_integrate::halt::halt(&ig)?)?;
            let report = lockstep_integrate::halt::render(&ig, &halt);
            ctx.result(&halt, |out| out.print(&report.text))?;
            if post {
                lockstep_integrate::outcome::post_report(&ig, &report)?;
            }
            Ok(0)
        }
        cli::Integrate::Bisect {
            good,
            bad,
            test,
            check,
            superproject,
            timeout,
            ci,
            ci_timeout,
            ci_poll,
            command,
            ..
        } => {
            let timeout = timeout.map(Duration::from_secs);
            let target = match (&test, &check) {
                (Some(id), _) => Some(lockstep_integrate::check_bisect::Target::Test(id)),
                (None, Some(n)) => Some(lockstep_integrate::check_bisect::Target::Check(n)),
                (None, None) => None,
            };
            let opts = match target {
                Some(target) => {
                    lockstep_integrate::check_bisect::final_check_bisect(&ig, target, timeout)?
                }
                None => BisectOptions {
                    good: good.unwrap_or_default(),
                    bad: bad.unwrap_or_default(),
                    superproject,
                    command,
                    timeout,
                },
            };
            let result = if ci {
                lockstep_integrate::ci::bisect_ci(
                    &ig,
                    &opts,
                    &outcome::ci_options(ci_timeout, ci_poll)?,
                )?
            } else {
                lockstep_integrate::bisect::bisect(&ig, &opts)?
            };
            ctx.show(&result, human::bisected)
        }
        cli::Integrate::Abort { all, .. } => ctx.show(
            &lockstep_integrate::recover::abort(&ig, all)?,
            human::aborted,
        ),
        // Handled above, before the store is opened.
        cli::Integrate::Repair { .. } => Ok(0),
    }
}
