//! `lockstep ci generate`: the package CI as GitHub Actions workflows,
//! computed from lockstep.toml.
//!
//! GitHub Actions is the engine that runs lockstep across machines; this
//! crate writes its workflows instead of lockstep growing a scheduler, and
//! instead of teams keeping artifact names, Python versions and summary
//! `needs:` lists in step by hand. [`plan`] resolves and validates the
//! configuration, [`workflow`] builds the files with the [`yaml`] writer,
//! and [`generate`] / [`check`] / [`write`] are what the command does. Output
//! is deterministic: the same plan gives the same bytes.

pub mod actions;
pub mod checks;
pub mod config;
pub mod cron;
pub mod explain;
pub mod human;
pub mod integrate_workflow;
pub mod plan;
pub mod release_workflow;
pub mod released;
pub mod stages;
pub mod workflow;
pub mod yaml;

use std::path::PathBuf;

use lockstep_core::output::{self, Target};
use lockstep_core::Error;

pub use plan::{plan, LockstepInstall, Plan, PlanInputs, TargetJob};

/// The largest file `--check` reads back.
const MAX_EXISTING_BYTES: u64 = 4 << 20;

/// One file to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    pub path: PathBuf,
    pub contents: String,
}

/// A file on disk that differs from what would be generated.
#[derive(Debug, Clone)]
pub struct Drift {
    pub path: PathBuf,
    /// A unified diff from the file on disk to the generated one.
    pub diff: String,
}

/// Every workflow the plan has, by file name: package CI always, release
/// and integrate when configured.
pub fn workflows(plan: &Plan) -> Vec<(&'static str, yaml::Node)> {
    let mut all = vec![(workflow::FILE, workflow::workflow(plan))];
    if let Some(stage) = &plan.release {
        all.push((
            release_workflow::FILE,
            release_workflow::workflow(plan, stage),
        ));
    }
    if let Some(stage) = &plan.integrate {
        all.push((
            integrate_workflow::FILE,
            integrate_workflow::workflow(plan, stage),
        ));
    }
    all
}

/// The workflows (package CI always; release and integrate when
/// configured), and the linters' configuration beside the workflows
/// directory (`.github/actionlint.yaml` and `.github/zizmor.yml` for
/// `.github/workflows`) when [`Plan::lint_dir`] is set.
pub fn generate(plan: &Plan) -> Vec<GeneratedFile> {
    let mut files: Vec<GeneratedFile> = workflows(plan)
        .into_iter()
        .map(|(name, document)| GeneratedFile {
            path: plan.out.join(name),
            contents: workflow::render_file(plan, &document),
        })
        .collect();
    if let Some(lint_dir) = &plan.lint_dir {
        files.push(GeneratedFile {
            path: lint_dir.join("actionlint.yaml"),
            contents: workflow::actionlint_config(plan),
        });
        files.push(GeneratedFile {
            path: lint_dir.join("zizmor.yml"),
            contents: workflow::zizmor_config(plan),
        });
    }
    files
}

/// The files whose contents on disk differ (or that are missing).
pub fn check(files: &[GeneratedFile]) -> Result<Vec<Drift>, Error> {
    let mut drifts = Vec::new();
    for file in files {
        let existing = match file.path.symlink_metadata() {
            Err(_) => String::new(),
            Ok(_) => lockstep_core::fs::read_input_text(
                "ci generate --check",
                &file.path,
                MAX_EXISTING_BYTES,
            )?,
        };
        if existing != file.contents {
            let shown = file.path.display().to_string();
            let diff = similar::TextDiff::from_lines(&existing, &file.contents)
                .unified_diff()
                .context_radius(3)
                .header(
                    &format!("{shown} (on disk)"),
                    &format!("{shown} (generated)"),
                )
                .to_string();
            drifts.push(Drift {
                path: file.path.clone(),
                diff,
            });
        }
    }
    Ok(drifts)
}

/// The error of a `--check` that found `drifts`: exit 1, naming the files.
pub fn drift_error(drifts: &[Drift]) -> Error {
    let names: Vec<String> = drifts
        .iter()
        .map(|d| d.path.display().to_string())
        .collect();
    Error::failed(format!(
        "{} generated file(s) differ from lockstep.toml: {}",
        drifts.len(),
        names.join(", ")
    ))
    .hint("run `lockstep ci generate` and commit the result")
}

/// Writes every file (creating its directory and parents; through a link,
/// never replacing it); returns the files whose contents changed.
pub fn write(files: &[GeneratedFile]) -> Result<Vec<PathBuf>, Error> {
    let changed: Vec<&GeneratedFile> = check(files)?
        .iter()
        .filter_map(|d| files.iter().find(|f| f.path == d.path))
        .collect();
    for file in &changed {
        if let Some(dir) = file.path.parent() {
            fs_err::create_dir_all(dir)?;
        }
        output::write_as(
            "ci generate",
            &Target::Path(file.path.clone()),
            file.contents.as_bytes(),
        )?;
    }
    Ok(changed.iter().map(|f| f.path.clone()).collect())
}
