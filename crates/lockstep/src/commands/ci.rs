//! `lockstep ci generate`: printing (the generator is lockstep-ci).

use lockstep_core::Error;

use crate::cli;
use crate::context::Ctx;

/// The git URL and commit this binary was built from, when the build knew
/// them (a clean clone with a remote a runner can reach; see build.rs).
fn built_from() -> Option<(String, String)> {
    match (
        option_env!("LOCKSTEP_BUILT_FROM_GIT"),
        option_env!("LOCKSTEP_BUILT_FROM_REV"),
    ) {
        (Some(url), Some(rev)) if !url.is_empty() && !rev.is_empty() => {
            Some((url.to_string(), rev.to_string()))
        }
        _ => None,
    }
}

pub fn run(cmd: cli::Ci, ctx: &Ctx) -> Result<i32, Error> {
    match cmd {
        cli::Ci::Generate { out, check } => generate(ctx, out, check),
        cli::Ci::Explain { .. } => explain(ctx),
    }
}

/// The plan of lockstep.toml (and `--out`).
fn plan(
    ctx: &Ctx,
    out: Option<std::path::PathBuf>,
) -> Result<(lockstep_ci::Plan, lockstep_ci::config::CiConfig), Error> {
    let loaded = ctx.loaded()?;
    if loaded.path.is_none() {
        return Err(Error::usage("lockstep ci needs a lockstep.toml")
            .hint("create one with [pkg] packages (docs/pkg.md, docs/ci.md)"));
    }
    let ci: lockstep_ci::config::CiConfig = loaded.section()?;
    let release = match loaded.has_section("release") {
        true => {
            let release: lockstep_release::config::ReleaseConfig = loaded.section()?;
            Some(lockstep_ci::stages::ReleaseFacts {
                bumps_pins: !release.pin_files.is_empty(),
                index: release.index.clone(),
            })
        }
        false => None,
    };
    let plan = lockstep_ci::plan(&lockstep_ci::PlanInputs {
        ci: &ci,
        test: &loaded.section()?,
        pkg: &loaded.section()?,
        root: &loaded.root,
        config_path: loaded.path.as_deref(),
        out: out.map(|dir| ctx.cwd.join(dir)),
        built_from: built_from(),
        release,
        has_integrate: loaded.has_section("integrate"),
    })?;
    Ok((plan, ci))
}

fn explain(ctx: &Ctx) -> Result<i32, Error> {
    let (plan, _) = plan(ctx, None)?;
    let pipeline = lockstep_ci::explain::explain(&lockstep_ci::workflows(&plan));
    ctx.result(&pipeline, |out| {
        out.line(lockstep_ci::explain::render_text(&pipeline).trim_end());
    })?;
    Ok(0)
}

fn generate(ctx: &Ctx, out: Option<std::path::PathBuf>, check: bool) -> Result<i32, Error> {
    let (plan, ci) = plan(ctx, out)?;
    for (what, schedule) in [
        ("release", plan.release.as_ref().map(|r| &r.schedule)),
        ("integrate", plan.integrate.as_ref().map(|r| &r.schedule)),
    ] {
        if let Some(expr) = schedule {
            ctx.sink().note(format!(
                "the {what} workflow runs on `{expr}` (UTC); next: {}",
                lockstep_ci::stages::next_runs(expr, 3).join(", ")
            ));
        }
    }
    if ci.lockstep.is_none() {
        let from = match &plan.lockstep {
            lockstep_ci::LockstepInstall::Git { url, rev } => format!("{url} at {rev}"),
            lockstep_ci::LockstepInstall::Path { path } => format!("the checkout's {path}"),
        };
        ctx.sink().note(format!(
            "[ci] lockstep is unset: runners install lockstep from {from} (set it to pin the version)"
        ));
    }
    if plan.targets.is_empty() {
        ctx.sink().note(
            "no test jobs: lockstep.toml names no tests ([test] paths or suite-configs) and there is no suites/ beside it; the workflow builds the wheels only",
        );
    }
    if plan.lint_dir.is_none() {
        ctx.sink().note(format!(
            "--out {} has its parent outside the repository: actionlint.yaml and zizmor.yml are left out (they belong beside a workflows directory inside the repository)",
            plan.out.display()
        ));
    }
    let files = lockstep_ci::generate(&plan);
    let out = ctx.out();
    if check {
        let drifts = lockstep_ci::check(&files)?;
        if drifts.is_empty() {
            for file in &files {
                out.line(format!("up to date: {}", file.path.display()));
            }
            return Ok(0);
        }
        for drift in &drifts {
            out.line(drift.diff.trim_end());
        }
        let names: Vec<String> = drifts
            .iter()
            .map(|d| d.path.display().to_string())
            .collect();
        return Err(Error::failed(format!(
            "{} generated file(s) differ from lockstep.toml: {}",
            drifts.len(),
            names.join(", ")
        ))
        .hint("run `lockstep ci generate` and commit the result"));
    }
    let changed = lockstep_ci::write(&files)?;
    for file in &files {
        let state = if changed.contains(&file.path) {
            "wrote"
        } else {
            "unchanged"
        };
        out.line(format!("{state}: {}", file.path.display()));
    }
    Ok(0)
}
