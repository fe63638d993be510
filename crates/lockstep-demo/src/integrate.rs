//! The integrate part of `lockstep demo`: build a sandbox (an upstream of a few
//! hundred commits with API breaks, a conflicting commit and an upstreamed
//! patch; a superproject pinning it with carried patches), start an integrate
//! and loop to upstream head, resolving each halt the way a person would, then
//! compare the smoke runs `gallop` needed with what `each` would have needed.

use std::io::Write;
use std::path::Path;

use lockstep_core::config::{self, SectionSpec};
use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_git::Repo;
use lockstep_integrate::config::{IntegrateConfig, Strategy};

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

/// Runs the integrate story in `root`, writing it to `out`.
pub fn run(root: &Path, sink: &dyn Sink, out: &mut dyn Write) -> Result<DemoSummary, Error> {
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
            "   upstream: {} commits pending, {} affecting mlir/, {} carried patches, API breaks at {}",
            sb.pending.len(),
            sb.affecting.len(),
            sb.patch_subjects.len(),
            sb.breaks.iter().map(|b| short(b).to_string()).collect::<Vec<_>>().join(", ")
        ),
    )?;
    let loaded = config::load(
        None,
        &sb.superproject,
        &[SectionSpec::of::<IntegrateConfig>()],
    )?;
    let ig = Integrate::open(&loaded.section()?, &loaded.root, sink)?;

    let started = ig.start(None, true)?;
    w(
        out,
        format!(
            "\n== lockstep integrate start\n   branch {}",
            started.branch
        ),
    )?;
    let status = ig.status(false)?;
    w(
        out,
        format!(
            "\n== lockstep integrate status\n   pin {} carrying {} patches; {} affecting commits pending",
            short(&status.pin),
            status.patches.len(),
            status.pending.len()
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
    };
    for round in 1..=10 {
        w(out, format!("\n== lockstep integrate loop (round {round})"))?;
        let report = ig.run_loop(&opts)?;
        summary.smoke_runs += report.smoke_runs;
        summary.each_would_need += 1; // every loop smokes the pin first, whatever the strategy
        w(
            out,
            format!(
                "   {} smoke runs, {}",
                report.smoke_runs,
                crate::count(report.advances.len(), "advance", "advances")
            ),
        )?;
        match report.end {
            LoopEnd::AtHead => {
                w(out, "   at upstream head".into())?;
                break;
            }
            LoopEnd::Halted { halt } => {
                let text = ig.render(&halt).text;
                w(
                    out,
                    format!("\n== lockstep integrate report\n{}", indent(&text)),
                )?;
                summary
                    .halts
                    .push((halt.kind.as_str().to_string(), halt.culprit.sha.clone()));
                match halt.kind {
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
    w(
        out,
        format!(
            "\n== integrate summary\n   halts: {} ({} expected culprits named exactly: {})\n   smoke runs with gallop: {}\n   smoke runs `each` would have needed: {}",
            summary.halts.len(),
            expected.len(),
            if exact { "yes" } else { "NO" },
            summary.smoke_runs,
            summary.each_would_need
        ),
    )?;
    Ok(summary)
}

/// What a person does after an API break: advance to the culprit, fix, commit.
fn fix_api_break(
    ig: &Integrate,
    sb: &sandbox::Sandbox,
    culprit: &str,
    out: &mut dyn Write,
) -> Result<(), Error> {
    ig.next(&NextOptions {
        to: Some(culprit.to_string()),
        no_export: false,
        dry_run: false,
    })?;
    let level = sandbox::api_level_at(sb, culprit).unwrap_or(1);
    fs_err::write(
        ig.superproject.dir().join("API_LEVEL"),
        format!("{level}\n"),
    )?;
    let sp = &ig.superproject;
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
    let status = ig.status(false)?;
    let sub: &Repo = &ig.sub;
    sub.checkout_detached(culprit)?;
    let mut dropped = Vec::new();
    for p in &status.patches {
        let picked = sub.try_git(&["cherry-pick", "--empty=drop", &p.sha])?;
        if picked.code != 0 {
            sub.git(&["cherry-pick", "--abort"])?;
            dropped.push(p.subject.clone());
        }
    }
    let head = sub.head()?;
    let sp = &ig.superproject;
    sp.stage_gitlink(&ig.cfg.submodule, &head)?;
    sp.commit_staged(
        &format!(
            "Advance {} to {culprit} by hand, dropping: {}\n",
            ig.cfg.upstream_name,
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
