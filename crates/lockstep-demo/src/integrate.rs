//! The integrate part of `lockstep demo`: build a sandbox (an upstream of a few
//! hundred commits with API breaks, a conflicting commit and an upstreamed
//! patch; a superproject pinning it with carried patches), start an integrate
//! and loop to upstream head against a loopback GitHub: every halt pushes the
//! branch, marks the draft pull request as needing help and posts to the
//! webhook once; the first break is fixed by a colleague who pushes a fixup
//! (taken with `integrate resume`), the others the way a person would; at
//! head the pull request is updated. Then a revert is carried and dropped
//! when upstream reverts the same commit. It ends comparing the smoke runs
//! `gallop` needed with what `each` would have needed.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use lockstep_core::config::{self, SectionSpec};
use lockstep_core::events::Sink;
use lockstep_core::words::count;
use lockstep_core::Error;
use lockstep_git::Repo;
use lockstep_integrate::config::{IntegrateConfig, NotifyKind, Strategy};
use lockstep_integrate::context::Reach;
use lockstep_sandbox::github::{ExchangeLog, FakeGithub};

use lockstep_integrate::advance::NextOptions;
use lockstep_integrate::halt::{short, HaltKind};
use lockstep_integrate::search::{LoopEnd, LoopOptions};
use lockstep_integrate::Integrate;

use lockstep_sandbox::repos::{self as sandbox, SandboxSpec};

/// What the integrate part found.
#[derive(Debug, Clone)]
pub struct DemoSummary {
    pub ok: bool,
    pub smoke_runs: usize,
    pub each_would_need: usize,
    pub halts: Vec<(String, String)>,
}

/// The loopback GitHub's repository and token.
const REPOSITORY: &str = "demo/superproject";
const TOKEN: &str = "demo-token-never-printed";

/// Runs the integrate story in `root`, writing it to `out`.
/// The log of the demo's GitHub exchanges `LOCKSTEP_DEMO_GITHUB_LOG=FILE`
/// asks for, opened before the demo writes anything (a FILE that cannot be
/// written is a usage error naming it), for a test to hold each exchange to
/// GitHub's description (tests/testsuite/cli.rs; docs/reliability.md).
pub fn exchange_log() -> Result<Option<Arc<ExchangeLog>>, Error> {
    let Some(path) = std::env::var_os("LOCKSTEP_DEMO_GITHUB_LOG") else {
        return Ok(None);
    };
    let path = Path::new(&path);
    ExchangeLog::create(path).map(Some).map_err(|e| {
        Error::usage(format!(
            "LOCKSTEP_DEMO_GITHUB_LOG={}: cannot write there: {e}",
            path.display()
        ))
        .hint("name a file in a directory that exists, or unset it")
    })
}

pub fn run(
    root: &Path,
    exchanges: Option<Arc<ExchangeLog>>,
    history: &crate::report::History,
    sink: &dyn Sink,
    out: &mut dyn Write,
) -> Result<DemoSummary, Error> {
    let w = |out: &mut dyn Write, s: String| -> Result<(), Error> {
        writeln!(out, "{s}").map_err(Error::from)
    };
    w(
        out,
        format!("== lockstep demo: building a sandbox in {}", root.display()),
    )?;
    let sb = sandbox::create(&root.join("sandbox"), &SandboxSpec::demo())?;
    w(
        out,
        format!(
            "   upstream: {} pending, {} affecting mlir/, {}, API breaks at {}",
            count(sb.pending.len(), "commit", "commits"),
            sb.affecting.len(),
            count(sb.patch_subjects.len(), "carried patch", "carried patches"),
            sb.breaks
                .iter()
                .map(|b| short(b).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )?;
    let loaded = config::load(
        None,
        &sb.superproject,
        &[SectionSpec::of::<IntegrateConfig>()],
    )?;
    let mut cfg: IntegrateConfig = loaded.section()?;
    // The superproject's origin is a local bare repository: name the
    // repository its pull requests go to, and post calls for help as JSON.
    cfg.github.repository = Some(REPOSITORY.into());
    cfg.notify.kind = NotifyKind::Json;
    // Its lit suite runs at the end (and at each halt), never halting: this
    // very lockstep runs it.
    if let Ok(exe) = std::env::current_exe() {
        let exe = exe.display().to_string().replace('\'', "'\\''");
        cfg.final_checks = vec![format!("'{exe}' test suites/lit")];
    }
    let gh = FakeGithub::start(REPOSITORY, TOKEN)?;
    if let Some(log) = exchanges {
        gh.add_observer(log);
    }
    let ig = Integrate::open(&cfg, &loaded.root, sink)?.with_reach(Reach {
        api_url: Some(gh.url()),
        token: Some(lockstep_github::Token::new(TOKEN, "the demo's token")),
        webhook_url: Some(gh.webhook_url()),
    });
    w(
        out,
        format!("   a loopback GitHub for {REPOSITORY} at {}", gh.url()),
    )?;

    let started = lockstep_integrate::start::start(&ig, None, true)?;
    w(
        out,
        format!(
            "\n== lockstep integrate start\n   branch {}",
            started.branch
        ),
    )?;
    let status = lockstep_integrate::status::status(&ig, false)?;
    w(
        out,
        format!(
            "\n== lockstep integrate status\n   pin {} carrying {}; {} pending",
            short(&status.pin),
            count(status.patches.len(), "patch", "patches"),
            count(
                status.pending.len(),
                "affecting commit",
                "affecting commits"
            )
        ),
    )?;
    for p in &status.patches {
        let mut line = format!("   patch {} {}", short(&p.sha), p.subject);
        if p.upstreamed {
            line += "  [already upstream: will be dropped]";
        }
        w(out, line)?;
    }

    let mut summary = DemoSummary {
        ok: true,
        smoke_runs: 0,
        each_would_need: 0,
        halts: vec![],
    };
    let opts = LoopOptions {
        strategy: Strategy::Gallop,
        max_steps: None,
        wait: None,
        dry_run: false,
        no_export: false,
        fetch: false,
        on_break: Default::default(),
        bump_followers: false,
    };
    let mut colleague_fixed = false;
    for round in 1..=10 {
        w(
            out,
            format!("\n== lockstep integrate loop --publish (round {round})"),
        )?;
        let recording =
            history.start(lockstep_history::Kind::Integrate, ig.superproject().dir())?;
        let report = lockstep_integrate::search::run_loop(&ig, &opts)?;
        // As `integrate loop --publish` does: publish (and call for help on
        // a halt) before the run is recorded, so the record has the pull
        // request the site's integrate page links.
        let published = match &report.end {
            LoopEnd::AtHead | LoopEnd::Halted { .. } => {
                Some(lockstep_integrate::publish::publish(&ig)?)
            }
            _ => None,
        };
        let posted = match &report.end {
            LoopEnd::Halted { halt } => lockstep_integrate::publish::call_for_help(&ig, halt)?,
            _ => false,
        };
        history.finish(
            recording,
            &lockstep_core::output::document(&lockstep_integrate::outcome::Looped {
                resumed: None,
                report: report.clone(),
                published: published.clone(),
                called_for_help: posted,
                final_checks: None,
            })?,
            None,
            out,
        )?;
        summary.smoke_runs += report.smoke_runs;
        summary.each_would_need += 1; // every loop smokes the pin first, whatever the strategy
        w(
            out,
            format!(
                "   {}, {}",
                count(report.smoke_runs, "smoke run", "smoke runs"),
                count(report.advances.len(), "advance", "advances")
            ),
        )?;
        match report.end {
            LoopEnd::AtHead => {
                w(out, "   at upstream head".into())?;
                if let Some(published) = &published {
                    w(
                        out,
                        format!("   {}", lockstep_integrate::human::published(published)),
                    )?;
                }
                break;
            }
            LoopEnd::Halted { halt } => {
                let text = lockstep_integrate::halt::render(&ig, &halt).text;
                w(
                    out,
                    format!("\n== lockstep integrate report\n{}", indent(&text)),
                )?;
                w(
                    out,
                    format!(
                        "\n== calling for help\n   {}\n   {}",
                        published
                            .as_ref()
                            .map(lockstep_integrate::human::published)
                            .unwrap_or_default(),
                        if posted {
                            "posted the halt report to the webhook"
                        } else {
                            "the webhook has this halt already"
                        }
                    ),
                )?;
                summary
                    .halts
                    .push((halt.kind.as_str().to_string(), halt.culprit.sha.clone()));
                match halt.kind {
                    HaltKind::Smoke if !colleague_fixed => {
                        colleague_fixed = true;
                        colleague_fixup(&ig, &sb, &halt, root, out)?;
                    }
                    HaltKind::Smoke => fix_api_break(&ig, &sb, &halt.culprit.sha, out)?,
                    HaltKind::Conflict => resolve_conflict(&ig, &halt.culprit.sha, out)?,
                }
            }
            other => {
                w(out, format!("   unexpected end: {other:?}"))?;
                summary.ok = false;
                break;
            }
        }
    }
    // `each` smokes every affecting commit plus upstream head.
    summary.each_would_need += sb.affecting.len() + 1;
    // Exactly the planted culprits, each once, in upstream order: an extra or
    // repeated halt is as wrong as a missing one.
    let mut expected: Vec<&String> = sb.breaks.iter().chain(sb.conflict_commit.iter()).collect();
    expected.sort_by_key(|sha| sb.pending.iter().position(|p| p == *sha));
    let found: Vec<&String> = summary.halts.iter().map(|(_, s)| s).collect();
    let exact = found == expected;
    summary.ok &= exact;
    let pulls = gh.pulls();
    let updates = gh.requests().iter().filter(|r| r.method == "PATCH").count();
    let posts = gh.webhook_posts().len();
    let review_ok = pulls.len() == 1
        && pulls[0].draft
        && !pulls[0].title.starts_with("[needs help]")
        && posts == summary.halts.len();
    summary.ok &= review_ok;
    w(
        out,
        format!(
            "\n== review\n   draft pull request #{} \"{}\": opened once, updated {}; {} for help posted for {}: {}",
            pulls.first().map(|p| p.number).unwrap_or(0),
            pulls.first().map(|p| p.title.as_str()).unwrap_or(""),
            count(updates, "time", "times"),
            count(posts, "call", "calls"),
            count(summary.halts.len(), "halt", "halts"),
            if review_ok { "ok" } else { "NOT as expected" }
        ),
    )?;
    let revert_ok = carried_revert_story(&ig, &sb, &opts, root, out)?;
    summary.ok &= revert_ok;
    let checks_ok = final_checks_story(&ig, &sb, out)?;
    summary.ok &= checks_ok;
    w(
        out,
        format!(
            "\n== integrate summary\n   halts: {} ({} named exactly: {})\n   smoke runs with gallop: {}\n   smoke runs `each` would have needed: {}",
            summary.halts.len(),
            count(expected.len(), "expected culprit", "expected culprits"),
            if exact { "yes" } else { "NO" },
            summary.smoke_runs,
            summary.each_would_need
        ),
    )?;
    Ok(summary)
}

/// A colleague answers the call for help: in their own clone of the
/// superproject they move the pin onto the culprit (with the carried
/// patches, as the halt left it) and declare its API level, and push; the
/// integrate takes their commit with `integrate resume`.
fn colleague_fixup(
    ig: &Integrate,
    sb: &sandbox::Sandbox,
    halt: &lockstep_integrate::halt::Halt,
    root: &Path,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let branch = ig.branch()?;
    let dir = root.join("colleague");
    let origin = sb.super_origin.display().to_string();
    Repo::new(root).git(&[
        "clone",
        "--quiet",
        "-b",
        &branch,
        &origin,
        &dir.display().to_string(),
    ])?;
    let clone = Repo::new(&dir);
    let level = sandbox::api_level_at(sb, &halt.culprit.sha).unwrap_or(1);
    fs_err::write(dir.join("API_LEVEL"), format!("{level}\n"))?;
    let patched = halt
        .probe_head
        .clone()
        .unwrap_or_else(|| halt.culprit.sha.clone());
    let entry = ig.pin_of().index_entry(
        &clone,
        "HEAD",
        &patched,
        &lockstep_pin::Downloads::default(),
    )?;
    clone.git(&["update-index", "--cacheinfo", &entry.cacheinfo()])?;
    clone.git(&["add", "API_LEVEL"])?;
    clone.git(&[
        "-c",
        "user.name=A Colleague",
        "-c",
        "user.email=colleague@example.com",
        "commit",
        "--quiet",
        "-m",
        &format!("Fix build for upstream API level {level}"),
    ])?;
    clone.git(&["push", "--quiet", "origin", &branch])?;
    let resumed = lockstep_integrate::resume::resume(ig, false)?;
    writeln!(
        out,
        "\n== a colleague pushes a fixup (pin onto {}, API level {level}); lockstep integrate resume\n   {}",
        short(&halt.culprit.sha),
        lockstep_integrate::human::resumed(&resumed)
    )?;
    Ok(())
}

/// Carries a revert of an upstream commit the pin includes, then lands the
/// same revert upstream: the next advance drops the carried one and says so.
fn carried_revert_story(
    ig: &Integrate,
    sb: &sandbox::Sandbox,
    opts: &LoopOptions,
    root: &Path,
    out: &mut dyn Write,
) -> Result<bool, Error> {
    // An affecting commit whose revert applies at head (not a planted one).
    let planted: Vec<&String> = sb
        .breaks
        .iter()
        .chain(sb.conflict_commit.iter())
        .chain(sb.upstreamed_commit.iter())
        .chain(sb.tool_format_commit.iter())
        .chain(sb.tool_names_commit.iter())
        .collect();
    let mut carried = None;
    for sha in sb
        .affecting
        .iter()
        .rev()
        .filter(|s| !planted.contains(s))
        .take(20)
    {
        if lockstep_integrate::revert::revert(ig, sha, "breaks our lowering (demo)", false).is_ok()
        {
            carried = Some(sha.clone());
            break;
        }
    }
    let Some(target) = carried else {
        writeln!(out, "\n== lockstep integrate revert: no revert applied")?;
        return Ok(false);
    };
    writeln!(
        out,
        "\n== lockstep integrate revert {} --reason \"breaks our lowering (demo)\"\n   carried; status: not ok for a stable release: {}",
        short(&target),
        lockstep_integrate::status::status(ig, false)?.not_stable.join("; ")
    )?;
    let work = root.join("upstream-work");
    let upstream = sb.upstream.display().to_string();
    Repo::new(root).git(&["clone", "--quiet", &upstream, &work.display().to_string()])?;
    let up = Repo::new(&work);
    up.git(&[
        "-c",
        "user.name=Upstream",
        "-c",
        "user.email=upstream@example.com",
        "revert",
        "--no-edit",
        &target,
    ])?;
    up.git(&["push", "--quiet", "origin", "HEAD:main"])?;
    ig.fetch_upstream()?;
    let report = lockstep_integrate::search::run_loop(ig, opts)?;
    let message = ig.superproject().git(&["log", "-1", "--format=%B"])?;
    let dropped = message
        .lines()
        .find(|l| l.starts_with("Lockstep-Dropped-Patch:") && l.contains("reverted upstream"))
        .map(str::to_string);
    writeln!(
        out,
        "\n== upstream reverts {} too; lockstep integrate loop\n   {}",
        short(&target),
        dropped
            .as_deref()
            .unwrap_or("the carried revert was NOT dropped")
    )?;
    Ok(dropped.is_some()
        && matches!(report.end, LoopEnd::AtHead)
        && lockstep_integrate::status::status(ig, false)?
            .patches
            .iter()
            .all(|p| p.reverts.is_none()))
}

/// The final checks at upstream's head: the superproject's lit suite of
/// `mini-opt` batched (one test broken by a format change, three by a
/// rename), then `integrate bisect --test` naming the advance that took
/// the rename.
fn final_checks_story(
    ig: &Integrate,
    sb: &sandbox::Sandbox,
    out: &mut dyn Write,
) -> Result<bool, Error> {
    let Some(checks) = lockstep_integrate::final_checks::run_final_checks(ig)? else {
        writeln!(out, "\n== final checks: none configured")?;
        return Ok(false);
    };
    writeln!(
        out,
        "\n== final checks at upstream head (`lockstep test suites/lit`; they never halt the loop)\n   to fix before landing: {}",
        count(checks.failures(), "test", "tests")
    )?;
    for failure in checks.checks.iter().flat_map(|c| &c.failures) {
        writeln!(
            out,
            "   - {}: {}",
            failure.test,
            failure.lines.first().map(String::as_str).unwrap_or("")
        )?;
    }
    let test = "lit/add.mlir [lit]";
    let opts = lockstep_integrate::check_bisect::final_check_bisect(
        ig,
        lockstep_integrate::check_bisect::Target::Test(test),
        None,
    )?;
    let found = lockstep_integrate::bisect::bisect(ig, &opts)?;
    let sp = ig.superproject();
    let pin_at = |rev: &str| -> Result<String, Error> {
        Ok(sp
            .git(&["rev-parse", &format!("{rev}:{}", sb.submodule_path)])?
            .trim()
            .to_string())
    };
    let advance = found.first_bad.sha.to_string();
    let sub = Repo::new(sb.superproject.join(&sb.submodule_path));
    let took = match &sb.tool_names_commit {
        Some(change) => {
            sub.is_ancestor(change, &pin_at(&advance)?)?
                && !sub.is_ancestor(change, &pin_at(&format!("{advance}^"))?)?
        }
        None => false,
    };
    let subject = sb
        .tool_names_commit
        .as_deref()
        .map(|c| sub.git(&["log", "-1", "--format=%s", c]))
        .transpose()?
        .unwrap_or_default();
    writeln!(
        out,
        "\n== lockstep integrate bisect --test \"{test}\"\n   first bad advance {} in {}: it took upstream {} \"{}\" ({})",
        short(&advance),
        count(found.runs, "run", "runs"),
        sb.tool_names_commit.as_deref().map(short).unwrap_or("?"),
        subject.trim(),
        if took { "the culprit" } else { "NOT the culprit" }
    )?;
    Ok(checks.failures() == 4 && took)
}

/// What a person does after an API break: advance to the culprit, fix, commit.
fn fix_api_break(
    ig: &Integrate,
    sb: &sandbox::Sandbox,
    culprit: &str,
    out: &mut dyn Write,
) -> Result<(), Error> {
    lockstep_integrate::advance::next(
        ig,
        &NextOptions {
            to: Some(culprit.to_string()),
            no_export: false,
            dry_run: false,
        },
    )?;
    let level = sandbox::api_level_at(sb, culprit).unwrap_or(1);
    fs_err::write(
        ig.superproject().dir().join("API_LEVEL"),
        format!("{level}\n"),
    )?;
    let sp = ig.superproject();
    sp.git(&["add", "API_LEVEL"])?;
    sp.commit_staged(
        &format!("Fix build for upstream API level {level}\n"),
        false,
    )?;
    writeln!(
        out,
        "\n== fix: `lockstep integrate next --to {}`, then commit a fix for API level {level}",
        short(culprit)
    )?;
    Ok(())
}

/// What a person does after a conflict: rebase by hand, dropping the local fix
/// that upstream's change makes obsolete, and commit the new pin.
fn resolve_conflict(ig: &Integrate, culprit: &str, out: &mut dyn Write) -> Result<(), Error> {
    let status = lockstep_integrate::status::status(ig, false)?;
    let sub: &Repo = ig.upstream();
    sub.checkout_detached(culprit)?;
    let mut dropped = Vec::new();
    for p in &status.patches {
        match sub.cherry_pick(&["--empty=drop", &p.sha]) {
            Ok(()) => {}
            // The patch upstream's change made obsolete: dropped.
            Err(lockstep_git::GitError::Conflict { .. }) => {
                sub.git(&["cherry-pick", "--abort"])?;
                dropped.push(p.subject.clone());
            }
            Err(e) => return Err(e.into()),
        }
    }
    let head = sub.head()?;
    let sp = ig.superproject();
    ig.pin_of()
        .stage(sp, &head, &lockstep_pin::Downloads::default())?;
    sp.commit_staged(
        &format!(
            "Advance {} to {culprit} by hand, dropping: {}\n",
            ig.config().upstream_name,
            dropped.join(", ")
        ),
        false,
    )?;
    writeln!(
        out,
        "\n== resolve: rebased the carried patches onto {} by hand, dropped {}, committed the pin",
        short(culprit),
        if dropped.is_empty() {
            "none".to_string()
        } else {
            dropped
                .iter()
                .map(|d| format!("\"{d}\""))
                .collect::<Vec<_>>()
                .join(", ")
        }
    )?;
    Ok(())
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("   {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
