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
    /// One manifest per wheelhouse (each Python's set), published as one
    /// version: all validated before any enters the store.
    pub manifests: Vec<PathBuf>,
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
    /// The largest the index may grow (files served from Pages).
    pub pages_limit: Option<u64>,
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

/// A publish validated and staged in a store transaction, not yet
/// committed: what `release publish --github-release` uploads from before
/// the store and the index change.
pub struct Staged {
    pub tx: crate::txn::Transaction,
    pub version: String,
    pub packages: Vec<String>,
    pub added: Vec<String>,
    pub scripts_checked: Vec<String>,
    pub smoke: Option<String>,
}

impl Staged {
    /// The staged directory of the version (every file it will hold).
    pub fn dir(&mut self) -> Result<PathBuf, Error> {
        self.tx.staged_dir(&self.version)
    }

    /// The version's record as it will be stored.
    pub fn record(&self) -> Result<Release, Error> {
        self.tx.view().get(&self.version).cloned().ok_or_else(|| {
            Error::failed(format!(
                "{} is not staged in the release store",
                self.version
            ))
        })
    }

    /// Swaps the staged store and index in.
    pub fn commit(self) -> Result<Published, Error> {
        let index = self.tx.commit()?;
        Ok(Published {
            version: self.version,
            packages: self.packages,
            added: self.added,
            scripts_checked: self.scripts_checked,
            smoke: self.smoke,
            index,
        })
    }
}

/// Validates, stages and commits (see the module doc).
pub fn publish(req: &PublishRequest, sink: &dyn Sink) -> Result<Published, Error> {
    stage(req, sink)?.commit()
}

/// Refuses a tag that another version of the store records: a tag names one
/// version, and `release prune` deletes a pruned version's Release by its
/// tag (two versions on one tag would lose the kept one's files).
pub fn check_tag_owner(
    releases: &BTreeMap<String, Release>,
    tag: &str,
    version: &str,
) -> Result<(), Error> {
    let same = |v: &str| {
        v.parse::<pep440_rs::Version>()
            .ok()
            .zip(version.parse::<pep440_rs::Version>().ok())
            .is_some_and(|(a, b)| a == b)
            || v == version
    };
    if let Some((other, _)) = releases
        .iter()
        .find(|(v, r)| r.tag.as_deref() == Some(tag) && !same(v))
    {
        return Err(Error::usage(format!(
            "tag {tag} already names {other} in the release store, not {version}"
        ))
        .cause("a tag belongs to one version: its GitHub Release, its pruning and its promotion follow the tag")
        .hint("cut a new tag for this version (`lockstep release cut` makes one per version); nothing was published"));
    }
    Ok(())
}

/// Validates the wheelhouses and stages them in a store transaction (the
/// store's lock held), returning it uncommitted.
pub fn stage(req: &PublishRequest, sink: &dyn Sink) -> Result<Staged, Error> {
    if req.manifests.is_empty() {
        return Err(Error::usage("release publish was given no wheelhouse")
            .hint("pass the wheelhouse `lockstep pkg build --out DIR` wrote (one per Python)"));
    }
    let sets: Vec<Set> = req
        .manifests
        .iter()
        .map(|m| Set::load(m))
        .collect::<Result<_, _>>()?;
    let version = one_version(&sets)?;
    for set in &sets {
        check_tag(
            req,
            &version,
            set.lock
                .set_info()
                .and_then(|i| i.source_revision.as_deref()),
        )?;
    }
    if let Some(tag) = &req.tag {
        // Checked again under the store's lock before anything is staged.
        check_tag_owner(&store::releases(&req.index)?, tag, &version)?;
    }
    let wheels = distinct_files(&sets)?;
    if let Some(limit) = req.pages_limit {
        check_pages_size(&req.index, &version, &wheels, limit)?;
    }
    let mut packages: Vec<String> = Vec::new();
    let mut scripts = Vec::new();
    for set in &sets {
        for package in &set.lock.packages {
            if !packages.contains(&package.name) {
                packages.push(package.name.clone());
            }
        }
        for c in set.checked.iter().filter(|c| !c.sdist) {
            scripts.extend(lockstep_python::wheel::wheel_facts(&c.file)?.console_scripts);
        }
    }
    scripts.sort();
    scripts.dedup();

    sink.note(format!(
        "validating {} {version}: install from a staged index, run {}{}",
        packages.join(" "),
        lockstep_core::words::count(scripts.len(), "console script", "console scripts"),
        req.smoke
            .as_deref()
            .map(|s| format!(" and the [release] smoke `{s}`"))
            .unwrap_or_default()
    ));
    // Every wheelhouse is validated in a venv of each Python its wheels
    // are for (a cp312 wheel does not install under 3.11, nor a cp311 one
    // under uv's default) before anything enters the store: a two-Python
    // version is published whole or not at all.
    for set in &sets {
        let files = set.files();
        let pythons = wheel_pythons(&files);
        if pythons.is_empty() {
            validate(req, None, &version, &files, &set.packages(), &scripts)?;
        }
        for python in &pythons {
            validate(
                req,
                Some(python),
                &version,
                &files,
                &set.packages(),
                &scripts,
            )?;
        }
    }

    let mut pins = req.pins.clone();
    let mut source = None;
    for set in &sets {
        let info = set.lock.set_info();
        if let Some(info) = info {
            for (path, commit) in &info.submodules {
                pins.entry(path.clone()).or_insert_with(|| commit.clone());
            }
            source = source.or(info.source_revision.clone());
        }
        for package in &set.lock.packages {
            if let Some(rev) = package
                .tool
                .as_ref()
                .and_then(|t| t.lockstep.as_ref())
                .and_then(|i| i.upstream_revision.clone())
            {
                pins.entry("upstream".to_string()).or_insert(rev);
            }
        }
    }
    let release = Release {
        version: version.clone(),
        tag: req.tag.clone(),
        channel: req.channel.clone(),
        source,
        pins,
        ..Release::default()
    };
    let mut tx = crate::txn::Transaction::begin(&req.index)?;
    if let Some(tag) = &req.tag {
        check_tag_owner(tx.view(), tag, &version)?;
    }
    let added = tx.add(&release, &wheels)?;
    Ok(Staged {
        tx,
        version,
        packages,
        added,
        scripts_checked: scripts,
        smoke: req.smoke.clone(),
    })
}

/// With the files on Pages, the index after this publish must stay under
/// `limit` bytes: Pages refuses a site over 1 GB, so the deploy would fail
/// after the version was already tagged and released.
fn check_pages_size(
    index: &Path,
    version: &str,
    files: &[PathBuf],
    limit: u64,
) -> Result<(), Error> {
    let have = lockstep_core::fs::dir_size(index);
    let dir = index.join(store::FILES).join(version);
    let mut adding = 0u64;
    for file in files {
        if !dir.join(lockstep_core::fs::file_name(file)).exists() {
            adding += fs_err::metadata(file)?.len();
        }
    }
    let after = have.saturating_add(adding);
    if after <= limit {
        return Ok(());
    }
    let mb = |b: u64| b.div_ceil(1_000_000);
    Err(Error::usage(format!(
        "publishing {version} would make the index {} MB, over [release] pages-limit-mb = {}",
        mb(after),
        mb(limit)
    ))
    .cause(format!(
        "{} MB there now, {} MB to add; GitHub Pages refuses a site over 1 GB",
        mb(have),
        mb(adding)
    ))
    .hint("set [release] hosting = \"github-releases\" (the files become assets of each version's GitHub Release), or prune old snapshots ([release] keep, `lockstep release prune`); nothing was published"))
}

/// One wheelhouse's manifest, verified: every file present with its hash.
struct Set {
    manifest: PathBuf,
    lock: Lock,
    checked: Vec<pylock::Checked>,
}

impl Set {
    fn load(manifest: &Path) -> Result<Set, Error> {
        let lock = Lock::load(manifest)?;
        lock.require_whole(manifest, "a release")?;
        let checked = pylock::verify(&lock, manifest)?;
        if checked.is_empty() {
            return Err(Error::usage(format!(
                "{} lists no wheels",
                manifest.display()
            )));
        }
        for package in &lock.packages {
            if package.wheels.is_empty() {
                return Err(Error::usage(format!(
                    "{} has no wheel in {}: the set is incomplete",
                    package.name,
                    manifest.display()
                )));
            }
        }
        Ok(Set {
            manifest: manifest.to_path_buf(),
            lock,
            checked,
        })
    }

    /// Wheels and sdists: both go to the staged index and the store.
    fn files(&self) -> Vec<PathBuf> {
        self.checked.iter().map(|c| c.file.clone()).collect()
    }

    fn packages(&self) -> Vec<String> {
        self.lock.packages.iter().map(|p| p.name.clone()).collect()
    }
}

/// The one version every wheelhouse's files are at.
fn one_version(sets: &[Set]) -> Result<String, Error> {
    let mut versions: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for set in sets {
        for c in &set.checked {
            let at = versions.entry(c.version.as_str()).or_default();
            let shown = set.manifest.display().to_string();
            if !at.contains(&shown) {
                at.push(shown);
            }
        }
    }
    match versions.keys().collect::<Vec<_>>().as_slice() {
        [one] => Ok(one.to_string()),
        _ => {
            let what = match sets {
                [one] => format!("the set in {}", one.manifest.display()),
                _ => "the wheelhouses".to_string(),
            };
            Err(Error::usage(format!("{what} is not at one version"))
                .cause(format!(
                    "versions: {}",
                    versions
                        .iter()
                        .map(|(v, at)| format!("{v} ({})", at.join(", ")))
                        .collect::<Vec<_>>()
                        .join("; ")
                ))
                .hint("build every Python's set with the same `lockstep pkg build --version V`"))
        }
    }
}

/// Every file of every wheelhouse once. A pure wheel or sdist built in two
/// wheelhouses must be the same bytes: the index can hold one file per name.
fn distinct_files(sets: &[Set]) -> Result<Vec<PathBuf>, Error> {
    let mut seen: BTreeMap<String, (String, PathBuf)> = BTreeMap::new();
    let mut files = Vec::new();
    for set in sets {
        for c in &set.checked {
            let name = lockstep_core::fs::file_name(&c.file);
            match seen.get(&name) {
                Some((sha, _)) if *sha == c.sha256 => {}
                Some((_, first)) => {
                    return Err(Error::usage(format!(
                        "{name} is in two wheelhouses with different bytes"
                    ))
                    .cause(format!("{} and {}", first.display(), c.file.display()))
                    .hint("publish one copy: build pure packages and sdists in one cell (or reproducibly, SOURCE_DATE_EPOCH); nothing was published"))
                }
                None => {
                    seen.insert(name, (c.sha256.clone(), c.file.clone()));
                    files.push(c.file.clone());
                }
            }
        }
    }
    Ok(files)
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
    // The interpreter is found where `pkg build` finds one (PATH, pyenv,
    // asdf, mise, uv's installs, [tools] python), never downloaded.
    let interpreter = match python {
        Some(version) => Some(
            lockstep_python::pythons::find(req.uv, version, stage.path()).map_err(|e| {
                e.context(format!(
                    "the set's wheels are for Python {version}, which this machine lacks; nothing was published"
                ))
            })?,
        ),
        None => None,
    };
    let venv = req
        .uv
        .create_venv(
            &stage.path().join("venv"),
            &NewVenv {
                python: interpreter.as_deref(),
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
