//! `lockstep release publish`: a wheelhouse into the release store, only
//! after it proved complete and installable.
//!
//! The manifest (`pylock.toml`) is verified (every wheel present, hashes
//! match), the set must be one version, every wheel's file name must agree
//! with its METADATA. Then the wheels are installed into a fresh venv with
//! uv from a staged copy of the index (so the index itself is what is
//! tested; dependencies the set does not hold, such as numpy, come from
//! `[release] dependency-index`, PyPI by default), every console script runs with `--help`, and `[release] smoke`
//! runs in that venv. Only then do the files enter the store (immutable;
//! see [`crate::store`]) and the index is regenerated.
//!
//! Every step runs through lockstep-python's layer: the install sees no
//! index but the staged one and no uv configuration, and the scripts and the
//! smoke (package code, whose output ends up in errors and `--events`) never
//! see lockstep's secrets (`GITHUB_TOKEN`, `TWINE_PASSWORD`, the webhook
//! variable ...).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_python::pylock::{self, Lock};
use lockstep_python::uv::{Install, NewVenv, Uv};
use lockstep_python::venv::{RunIn, Venv};
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
    /// Pins the tag recorded (`release cut`'s annotation), beside those the
    /// manifest records (submodules, the upstream revision).
    pub pins: BTreeMap<String, String>,
    /// The version and source commit the tag's annotation names: a tag
    /// cut for another version or commit is refused before anything runs.
    pub tag_version: Option<String>,
    pub tag_source: Option<String>,
    pub smoke: Option<String>,
    /// Where dependencies come from during validation (`None`: the set's
    /// own index only).
    pub dependency_index: Option<String>,
    pub work: PathBuf,
}

#[derive(Debug, Clone, Serialize)]
pub struct Published {
    pub version: String,
    pub packages: Vec<String>,
    pub added: Vec<String>,
    pub scripts_checked: Vec<String>,
    /// The `[release] smoke` command that passed in the validation venv.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smoke: Option<String>,
    pub index: IndexReport,
}

pub fn publish(req: &PublishRequest, sink: &dyn Sink) -> Result<Published, Error> {
    let lock = Lock::load(&req.manifest)?;
    lock.require_whole(&req.manifest, "a release")?;
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
    check_tag(
        req,
        &version,
        lock.set_info().and_then(|i| i.source_revision.as_deref()),
    )?;
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
    for c in checked.iter().filter(|c| !c.sdist) {
        scripts.extend(lockstep_python::wheel::wheel_facts(&c.file)?.console_scripts);
    }
    scripts.sort();
    scripts.dedup();
    // Wheels and sdists: both go to the staged index and the store.
    let wheels: Vec<PathBuf> = checked.iter().map(|c| c.file.clone()).collect();
    let packages: Vec<String> = lock.packages.iter().map(|p| p.name.clone()).collect();

    sink.note(format!(
        "validating {} {version}: install from a staged index, run {}{}",
        packages.join(" "),
        lockstep_core::words::count(scripts.len(), "console script", "console scripts"),
        req.smoke
            .as_deref()
            .map(|s| format!(" and the [release] smoke `{s}`"))
            .unwrap_or_default()
    ));
    // Each Python the wheels are for gets a venv of its own: a cp312 wheel
    // does not install under 3.11, nor a cp311 one under uv's default.
    let pythons = wheel_pythons(&wheels);
    if pythons.is_empty() {
        validate(req, None, &version, &wheels, &packages, &scripts)?;
    }
    for python in &pythons {
        validate(req, Some(python), &version, &wheels, &packages, &scripts)?;
    }

    let info = lock.set_info();
    let mut pins = req.pins.clone();
    if let Some(info) = info {
        for (path, commit) in &info.submodules {
            pins.entry(path.clone()).or_insert_with(|| commit.clone());
        }
    }
    for package in &lock.packages {
        if let Some(rev) = package
            .tool
            .as_ref()
            .and_then(|t| t.lockstep.as_ref())
            .and_then(|i| i.upstream_revision.clone())
        {
            pins.entry("upstream".to_string()).or_insert(rev);
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
        smoke: req.smoke.clone(),
        index: report,
    })
}

/// The tag was cut for this version and this commit (when it says).
fn check_tag(req: &PublishRequest, version: &str, source: Option<&str>) -> Result<(), Error> {
    let tag = req.tag.as_deref().unwrap_or("the tag");
    if let Some(cut) = &req.tag_version {
        let same = matches!(
            (lockstep_python::wheel::parse_version(cut), lockstep_python::wheel::parse_version(version)),
            (Ok(a), Ok(b)) if a == b
        );
        if !same {
            return Err(Error::usage(format!(
                "{tag} was cut for version {cut}, but the set is {version}"
            ))
            .hint("pass the tag `release cut` printed for this version, or build the set with that tag's version"));
        }
    }
    if let (Some(cut), Some(built)) = (&req.tag_source, source) {
        if cut != built {
            return Err(Error::usage(format!(
                "{tag} was cut at commit {}, but the set was built from {}",
                &cut[..12.min(cut.len())],
                &built[..12.min(built.len())]
            ))
            .hint("build the set from the tag's commit (`lockstep pkg build --rev TAG`), or pass the tag cut for this commit"));
        }
    }
    Ok(())
}

/// The Pythons the set's wheels name (`cp311` -> `3.11`), in order;
/// empty when every wheel is pure or abi3 (one venv of uv's default, or
/// of the first Python another wheel names, fits them).
pub fn wheel_pythons(files: &[PathBuf]) -> Vec<String> {
    let mut found: Vec<(u32, u32)> = Vec::new();
    for file in files {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
        let Some(wheel) = name
            .as_deref()
            .and_then(lockstep_python::wheel::WheelName::parse)
        else {
            continue;
        };
        if wheel.abi == "abi3" || wheel.abi == "none" {
            continue;
        }
        for tag in wheel.python.split('.') {
            let Some(digits) = tag.strip_prefix("cp3") else {
                continue;
            };
            if let Ok(minor) = digits.parse::<u32>() {
                if !found.contains(&(3, minor)) {
                    found.push((3, minor));
                }
            }
        }
    }
    found.sort();
    found
        .iter()
        .map(|(major, minor)| format!("{major}.{minor}"))
        .collect()
}

/// Installs the set from a staged index into a fresh venv (of `python`,
/// else uv's default) and runs its scripts.
fn validate(
    req: &PublishRequest,
    python: Option<&str>,
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
    let venv = req
        .uv
        .create_venv(
            &stage.path().join("venv"),
            &NewVenv {
                python,
                ..NewVenv::default()
            },
        )
        .map_err(|e| match python {
            Some(python) => e
                .context(format!(
                    "cannot create the release validation venv of Python {python}, which the set's wheels are for"
                ))
                .hint(format!("install Python {python} (or name it in [tools] python); nothing was published")),
            None => e.context("cannot create the release validation venv"),
        })?;
    let url = format!("file://{}/", staged_index.join(index::SIMPLE).display());
    let requirements: Vec<String> = packages
        .iter()
        .map(|package| format!("{package}=={version}"))
        .collect();
    req.uv
        .install(
            &venv,
            Install::Index {
                url: &url,
                dependencies: req.dependency_index.as_deref(),
                requirements: &requirements,
            },
        )
        .map_err(|e| {
            let from = match &req.dependency_index {
                Some(deps) => format!("its own index and the dependency index {deps}"),
                None => "its own index (`[release] dependency-index = \"none\"`)".to_string(),
            };
            let under = python.map(|p| format!(" (in Python {p})")).unwrap_or_default();
            e.context(format!("{version} does not install from {from}{under}"))
                .hint("a dependency missing from every index is named above; set [release] dependency-index to an index that has it. Nothing was published")
        })?;
    for script in scripts {
        let argv = vec![
            venv.bin().join(script).display().to_string(),
            "--help".into(),
        ];
        let log = stage.path().join("script.log");
        run_checked(
            &venv,
            &argv,
            &format!("`{script} --help`"),
            &log,
            HELP_TIMEOUT,
        )?;
    }
    if let Some(smoke) = &req.smoke {
        let argv = vec!["sh".into(), "-c".into(), smoke.clone()];
        let log = req.work.join("smoke.log");
        run_checked(
            &venv,
            &argv,
            &format!("[release] smoke `{smoke}`"),
            &log,
            SMOKE_TIMEOUT,
        )?;
    }
    Ok(())
}

/// Runs `argv` in the validation venv (its own process group, output in
/// `log`, killed after `limit`); anything but exit 0 is an error.
fn run_checked(
    venv: &Venv,
    argv: &[String],
    what: &str,
    log: &Path,
    limit: Duration,
) -> Result<(), Error> {
    let cwd = log.parent().map(Path::to_path_buf).unwrap_or_default();
    venv.run(
        argv,
        &RunIn {
            what,
            cwd: &cwd,
            timeout: limit,
            log: Some(log),
        },
    )?
    .require_success()
    .map(drop)
    .map_err(|e| {
        e.context(format!("the release does not pass validation: {what}"))
            .hint("nothing was published")
    })
}

/// Where publish and promote stage and validate: under `$LOCKSTEP_HOME`,
/// never in the user's tree (the index or the repository around it).
pub fn work_dir() -> PathBuf {
    lockstep_core::paths::home().join("release-work")
}

#[cfg(test)]
mod pythons_tests {
    use super::*;

    #[test]
    fn each_python_a_wheel_names_once_and_pure_wheels_none() {
        let files: Vec<PathBuf> = [
            "demo_native-1.0-cp312-cp312-manylinux_2_28_x86_64.whl",
            "demo_native-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
            "demo_native_asserts-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
            "demo_pure-1.0-py3-none-any.whl",
            "demo_abi3-1.0-cp38-abi3-linux_x86_64.whl",
            "demo-1.0.tar.gz",
            "not a wheel.whl",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(wheel_pythons(&files), ["3.11", "3.12"]);
        assert!(wheel_pythons(&files[3..]).is_empty());
    }
}
