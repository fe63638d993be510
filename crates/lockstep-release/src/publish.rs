//! `lockstep release publish`: a wheelhouse into the release store, only
//! after it proved complete and installable.
//!
//! The manifest (`pylock.toml`) is verified (every wheel present, hashes
//! match), the set must be one version, every wheel's file name must agree
//! with its METADATA. Then the wheels are installed into a fresh venv with
//! uv from a staged copy of the index (so the index itself is what is
//! tested), every console script runs with `--help`, and `[release] smoke`
//! runs in that venv. Only then do the files enter the store (immutable;
//! see [`crate::store`]) and the index is regenerated.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::events::Sink;
use lockstep_core::process::{self, Exit, Spec};
use lockstep_core::Error;
use lockstep_python::pylock::{self, Lock};
use lockstep_python::uv::{self, Uv};
use serde::Serialize;

use crate::index::{self, IndexReport};
use crate::store::{self, Release};

/// How long one console script's `--help` may take.
const HELP_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `[release] smoke` may take.
const SMOKE_TIMEOUT: Duration = Duration::from_secs(3600);

pub struct PublishRequest<'a> {
    pub manifest: PathBuf,
    /// The index directory (the store is under it).
    pub index: PathBuf,
    pub uv: &'a Uv,
    pub tag: Option<String>,
    pub channel: Option<String>,
    pub smoke: Option<String>,
    pub work: PathBuf,
}

#[derive(Debug, Clone, Serialize)]
pub struct Published {
    pub version: String,
    pub packages: Vec<String>,
    pub added: Vec<String>,
    pub scripts_checked: Vec<String>,
    pub index: IndexReport,
}

pub fn publish(req: &PublishRequest, sink: &dyn Sink) -> Result<Published, Error> {
    let lock = Lock::load(&req.manifest)?;
    let checked = pylock::verify(&lock, &req.manifest)?;
    let versions: std::collections::BTreeSet<&str> =
        checked.iter().map(|c| c.version.as_str()).collect();
    let version = match versions.iter().collect::<Vec<_>>().as_slice() {
        [one] => one.to_string(),
        [] => {
            return Err(Error::usage(format!(
                "{} lists no wheels",
                req.manifest.display()
            )))
        }
        many => {
            return Err(Error::usage(format!(
                "the set in {} is not at one version",
                req.manifest.display()
            ))
            .cause(format!(
                "versions: {}",
                many.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .hint("build the whole set with `lockstep pkg build --version V`"))
        }
    };
    for package in &lock.packages {
        if package.wheels.is_empty() {
            return Err(Error::usage(format!(
                "{} has no wheel in {}: the set is incomplete",
                package.name,
                req.manifest.display()
            )));
        }
    }
    let mut scripts = Vec::new();
    for c in &checked {
        scripts.extend(store::wheel_facts(&c.file)?.console_scripts);
    }
    scripts.sort();
    scripts.dedup();
    let wheels: Vec<PathBuf> = checked.iter().map(|c| c.file.clone()).collect();
    let packages: Vec<String> = lock.packages.iter().map(|p| p.name.clone()).collect();

    sink.note(format!(
        "validating {} {version}: install from a staged index, run {} console script(s)",
        packages.join(" "),
        scripts.len()
    ));
    validate(req, &version, &wheels, &packages, &scripts)?;

    let info = lock.set_info();
    let mut pins = BTreeMap::new();
    for package in &lock.packages {
        if let Some(rev) = package
            .tool
            .as_ref()
            .and_then(|t| t.lockstep.as_ref())
            .and_then(|i| i.upstream_revision.clone())
        {
            pins.insert("upstream".to_string(), rev);
        }
    }
    let release = Release {
        version: version.clone(),
        tag: req.tag.clone(),
        channel: req.channel.clone(),
        source: info.and_then(|i| i.source_revision.clone()),
        pins,
        ..Release::default()
    };
    let _lock = store::lock(&req.index)?;
    let added = store::add(&req.index, &release, &wheels)?;
    let report = index::write_index(&req.index, None)?;
    Ok(Published {
        version,
        packages,
        added,
        scripts_checked: scripts,
        index: report,
    })
}

/// Installs the set from a staged index into a fresh venv and runs its scripts.
fn validate(
    req: &PublishRequest,
    version: &str,
    wheels: &[PathBuf],
    packages: &[String],
    scripts: &[String],
) -> Result<(), Error> {
    fs_err::create_dir_all(&req.work)?;
    let stage = tempfile::Builder::new()
        .prefix("publish-")
        .tempdir_in(&req.work)
        .map_err(|e| Error::failed("cannot create a staging directory").cause(e.to_string()))?;
    let staged_index = stage.path().join("index");
    let files = staged_index.join(store::FILES).join(version);
    fs_err::create_dir_all(&files)?;
    for wheel in wheels {
        let name = wheel.file_name().unwrap_or_default();
        fs_err::copy(wheel, files.join(name))?;
    }
    index::write_index(&staged_index, None)?;
    let venv = stage.path().join("venv");
    let mut cmd = req.uv.command(stage.path());
    isolate_uv(&mut cmd);
    cmd.args(["venv", "--quiet", "--no-project", "--no-config"])
        .arg(&venv);
    uv::run_captured(&mut cmd, "uv venv (release validation)")?;
    let url = format!("file://{}/", staged_index.join(index::SIMPLE).display());
    let mut cmd = req.uv.command(stage.path());
    isolate_uv(&mut cmd);
    cmd.args(["pip", "install", "--quiet", "--no-config", "--python"])
        .arg(venv.join("bin/python"))
        .args(["--index-url", &url]);
    for package in packages {
        cmd.arg(format!("{package}=={version}"));
    }
    uv::run_captured(&mut cmd, "installing the set from the staged index")
        .map_err(|e| e.context(format!("{version} does not install from its own index")))?;
    let bin = venv.join("bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env = vec![
        ("PATH".to_string(), path),
        ("VIRTUAL_ENV".to_string(), venv.display().to_string()),
    ];
    for script in scripts {
        let argv = vec![bin.join(script).display().to_string(), "--help".into()];
        let log = stage.path().join("script.log");
        run_bounded(
            argv,
            &env,
            &format!("`{script} --help`"),
            &log,
            HELP_TIMEOUT,
        )?;
    }
    if let Some(smoke) = &req.smoke {
        let argv = vec!["sh".into(), "-c".into(), smoke.clone()];
        let log = req.work.join("smoke.log");
        run_bounded(
            argv,
            &env,
            &format!("[release] smoke `{smoke}`"),
            &log,
            SMOKE_TIMEOUT,
        )?;
    }
    Ok(())
}

/// Runs `argv` in the validation venv through lockstep's process runner
/// (its own process group, output in `log`, killed after `limit`).
fn run_bounded(
    argv: Vec<String>,
    env: &[(String, String)],
    what: &str,
    log: &Path,
    limit: Duration,
) -> Result<(), Error> {
    let cwd = log.parent().map(Path::to_path_buf).unwrap_or_default();
    let finished = process::run(
        &Spec {
            argv,
            cwd,
            env: env.to_vec(),
            timeout: Some(limit),
            log: log.to_path_buf(),
            header: None,
        },
        |_| {},
    )
    .map_err(|e| e.context(format!("cannot run {what}")))?;
    match finished.exit {
        Exit::Code(0) => Ok(()),
        Exit::TimedOut => Err(Error::failed(format!(
            "{what} did not finish in {}s",
            limit.as_secs()
        ))
        .cause(format!("log: {}", log.display()))
        .hint("nothing was published")),
        other => Err(Error::failed(format!(
            "{what} failed ({}) in the validation venv",
            other.describe()
        ))
        .cause(uv::tail(&std::fs::read(log).unwrap_or_default(), 10))
        .hint("nothing was published")),
    }
}

/// The install must test the staged index alone: no project or user uv
/// configuration, no index or find-links from the environment.
fn isolate_uv(cmd: &mut std::process::Command) {
    for var in [
        "UV_INDEX",
        "UV_INDEX_URL",
        "UV_DEFAULT_INDEX",
        "UV_EXTRA_INDEX_URL",
        "UV_FIND_LINKS",
        "PIP_FIND_LINKS",
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
    ] {
        cmd.env_remove(var);
    }
}

/// Where publish and promote stage and validate: under `$LOCKSTEP_HOME`,
/// never in the user's tree (the index or the repository around it).
pub fn work_dir() -> PathBuf {
    lockstep_core::paths::home().join("release-work")
}
