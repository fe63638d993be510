//! `lockstep ci generate` and `lockstep ci explain`: lockstep.toml's tables
//! into lockstep-ci's plan, and printing (the generator is lockstep-ci).

use lockstep_ci::human;
use lockstep_core::Error;

use crate::context::Ctx;
use lockstep_cmdline as cli;

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
        return Err(Error::usage("lockstep ci needs a lockstep.toml").hint(
            "`lockstep init` writes one from your repository (docs/getting-started.md, docs/ci.md)",
        ));
    }
    let ci: lockstep_ci::config::CiConfig = loaded.section()?;
    let release = match loaded.has_section("release") {
        true => {
            let release: lockstep_release::config::ReleaseConfig = loaded.section()?;
            Some(lockstep_ci::stages::ReleaseFacts {
                bumps_pins: !release.pin_files.is_empty(),
                index: release.index.clone(),
                hosted_on_github: release.hosting
                    == lockstep_release::config::Hosting::GithubReleases,
                prunes: release.keep.snapshots.is_some() || release.keep.days.is_some(),
                branches: release.branches.clone(),
            })
        }
        false => None,
    };
    // Unset [ci] lockstep: this version's release, when its index has it.
    let released = match &ci.lockstep {
        Some(_) => None,
        None => {
            let index = lockstep_ci::released::index_from_env();
            match lockstep_ci::released::lookup(&index, env!("CARGO_PKG_VERSION")) {
                Ok(found) => Some(found),
                Err(e) => {
                    ctx.sink().note(format!(
                        "{}; runners install lockstep another way",
                        e.message
                    ));
                    None
                }
            }
        }
    };
    let plan = lockstep_ci::plan(&lockstep_ci::PlanInputs {
        ci: &ci,
        test: &loaded.section()?,
        pkg: &loaded.section()?,
        root: &loaded.root,
        config_path: loaded.path.as_deref(),
        out: out.map(|dir| ctx.cwd.join(dir)),
        built_from: built_from(),
        released,
        release,
        integrate: match loaded.has_section("integrate") {
            true => {
                let integrate: lockstep_integrate::config::IntegrateConfig = loaded.section()?;
                lockstep_integrate::validate::config(&integrate)?;
                Some(lockstep_ci::stages::IntegrateFacts {
                    submodule: integrate.pin()?.checkout_path().map(String::from),
                    followers: integrate
                        .follow
                        .iter()
                        .map(|f| f.submodule.clone())
                        .collect(),
                    smoke_submodules: integrate.smoke_submodules.clone(),
                })
            }
            false => None,
        },
    })?;
    Ok((plan, ci))
}

fn explain(ctx: &Ctx) -> Result<i32, Error> {
    let (plan, _) = plan(ctx, None)?;
    let pipeline = lockstep_ci::explain::explain(&lockstep_ci::workflows(&plan));
    ctx.show(&pipeline, |p| {
        format!("{}\n", lockstep_ci::explain::render_text(p).trim_end())
    })
}

fn generate(ctx: &Ctx, out: Option<std::path::PathBuf>, check: bool) -> Result<i32, Error> {
    let (plan, ci) = plan(ctx, out)?;
    for note in human::notes(&plan, &ci) {
        ctx.sink().note(note);
    }
    let files = lockstep_ci::generate(&plan);
    if !check {
        let changed = lockstep_ci::write(&files)?;
        ctx.out().print(&human::written(&files, &changed));
        return Ok(0);
    }
    let drifts = lockstep_ci::check(&files)?;
    ctx.out().print(&human::checked(&files, &drifts));
    match drifts.is_empty() {
        true => Ok(0),
        false => Err(lockstep_ci::drift_error(&drifts)),
    }
}
