//! The generated pipeline executed end to end: `lockstep ci generate` on
//! the IREE-shaped fixture (lockstep-sandbox's `native`), then its
//! `lockstep-release.yml` and `lockstep-integrate.yml` run by the test-only
//! runner (the dev-only `lockstep-actions` crate: every job in `needs` order,
//! each on its own "machine", the hosted actions emulated), against a bare
//! repository as GitHub's copy and the loopback GitHub for the REST API.
//!
//! What it shows (docs/ci.md): a scheduled run cuts, builds, tests,
//! publishes and deploys an index that pip and uv install the snapshot from
//! (with its PyPI dependency); a run with no new commit cuts nothing; a red
//! test shard publishes nothing; the next run the same day gets the next
//! version and recompiles only what changed (the compiler cache carried in
//! the Actions cache); the integrate workflow pushes its branch and opens
//! the draft pull request. Set `LOCKSTEP_PIPELINE_TIMES=FILE` to have the
//! per-job wall times written there (`scripts/bench-pipeline`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use lockstep_actions::{run_workflow, seed_cache, Conclusion, RunReport, RunnerConfig};
use lockstep_sandbox::native::{self, Native, NativeSpec};
use lockstep_testkit::github::FakeGithub;

const TOKEN: &str = "ghs_pipeline_token_never_printed";
const REPOSITORY: &str = "lockstep-dev/demo";

const CONFIG: &str = r#"
[release]
name = "demo"
version-base = "0.3.0"
tag = "snapshot-{version}"

[integrate]
submodule = "third_party/minillvm"
upstream-remote = "upstream"
upstream-url = "UPSTREAM"
base = "origin/main"
branch = "integrates/minillvm-{date}"
smoke = ["true"]

[integrate.github]
repository = "lockstep-dev/demo"

[ci]
lockstep = { git = "https://github.com/lockstep-dev/lockstep", rev = "0123456789abcdef0123456789abcdef01234567" }
shards = 2

[ci.release]
schedule = "0 5 * * *"

[ci.integrate]
schedule = "30 4 * * *"
"#;

/// The fixture, its "GitHub" (a bare repository and the loopback API), and
/// the runner's state shared by every run (its cache).
struct Pipeline {
    p: Project,
    native: Native,
    origin: PathBuf,
    github: FakeGithub,
    runner_root: PathBuf,
    /// The image's interpreters (`cp311-cp311/bin/python` ...).
    pythons: PathBuf,
    /// What setup-python may provide.
    setup_pythons: Vec<PathBuf>,
    next_run: u64,
    times: Vec<String>,
    /// The next run's event name and workflow_dispatch inputs.
    event: (String, BTreeMap<String, String>),
    vars: BTreeMap<String, String>,
    secrets: BTreeMap<String, String>,
}

impl Pipeline {
    fn new() -> Pipeline {
        Pipeline::create(CONFIG, NativeSpec::default(), &["3.11"])
    }

    /// The fixture with `config` (`UPSTREAM` replaced by minillvm's path),
    /// `spec`'s packages, and a runner image with `pythons`.
    fn create(config: &str, spec: NativeSpec, pythons: &[&str]) -> Pipeline {
        // The pinned IREE from PyPI, shared like a runner image's tools.
        iree_bin();
        let p = Project::new();
        let dir = p.root().join("native");
        let upstream = dir.join("minillvm");
        let native = native::create(
            &dir,
            &NativeSpec {
                extra_config: config.replace("UPSTREAM", &upstream.to_string_lossy()),
                ..spec
            },
        )
        .expect("IREE-shaped fixture");
        let project = &native.project;
        write(&project.join("suites/add.mlir"), ADD);
        write_suite(project, "11 22 33 44");
        let out = expect(&mut p.cmd_in(project, &["ci", "generate"]), 0);
        assert!(
            stdout(&out).contains("lockstep-release.yml"),
            "{}",
            stdout(&out)
        );
        // The three workflows lint clean (actionlint + shellcheck, zizmor).
        eprintln!("{}", lint(project));
        commit_as_tester(project, "Generate the pipeline", true);
        let origin = p.root().join("origin.git");
        git(
            p.root(),
            &[
                "clone",
                "-q",
                "--bare",
                &project.to_string_lossy(),
                &origin.to_string_lossy(),
            ],
        );
        git(
            project,
            &["remote", "add", "origin", &origin.to_string_lossy()],
        );
        git(project, &["fetch", "-q", "origin"]);
        let runner_root = p.root().join("runner");
        let image = image_pythons(p.root(), pythons);
        let pipeline = Pipeline {
            p,
            native,
            origin,
            github: FakeGithub::start(REPOSITORY, TOKEN).expect("loopback GitHub"),
            runner_root,
            setup_pythons: pythons
                .iter()
                .map(|v| image.join(format!("cp{0}-cp{0}/bin/python", v.replace('.', ""))))
                .collect(),
            pythons: image,
            next_run: 1000,
            times: Vec::new(),
            event: ("schedule".into(), BTreeMap::new()),
            vars: BTreeMap::new(),
            secrets: BTreeMap::new(),
        };
        pipeline.seed_lockstep();
        pipeline
    }

    fn workflow(&self, file: &str) -> PathBuf {
        self.native.project.join(".github/workflows").join(file)
    }

    /// Every "Restore lockstep" cache key of the workflows gets an entry
    /// holding this build of lockstep (a wrapper: the runners' cached
    /// `cargo install`), as a warm Actions cache would.
    fn seed_lockstep(&self) {
        let wrapper = self.p.root().join("lockstep-wrapper");
        write_executable(
            &wrapper,
            &format!(
                "#!/bin/sh\nexec '{}' \"$@\"\n",
                env!("CARGO_BIN_EXE_lockstep")
            ),
        );
        let mut keys = std::collections::BTreeSet::new();
        for file in ["lockstep-release.yml", "lockstep-integrate.yml"] {
            let text = std::fs::read_to_string(self.workflow(file)).expect("workflow");
            for line in text.lines() {
                if let Some(key) = line.trim().strip_prefix("key: lockstep-${{ runner.os }}") {
                    if key.contains("-git-") {
                        keys.insert(format!(
                            "lockstep-Linux{}",
                            key.replace("${{ runner.arch }}", "X64")
                        ));
                    }
                }
            }
        }
        assert!(!keys.is_empty());
        for key in keys {
            seed_cache(
                &self.runner_root,
                &key,
                &[("~/.cargo/bin/lockstep", wrapper.as_path())],
            )
            .expect("seed the cache");
        }
    }

    /// Pushes the project's HEAD to origin's main.
    fn push(&self) -> String {
        git(&self.native.project, &["push", "-q", "origin", "HEAD:main"]);
        git(&self.native.project, &["rev-parse", "HEAD"])
            .trim()
            .to_string()
    }

    /// Runs `file` for a scheduled event at origin's main.
    fn run(&mut self, file: &str) -> RunReport {
        self.next_run += 1;
        let sha = git(&self.origin, &["rev-parse", "main"]).trim().to_string();
        let mut env = BTreeMap::new();
        env.insert(
            "LOCKSTEP_TOOLCHAINS".into(),
            toolchains().to_string_lossy().into_owned(),
        );
        env.insert(
            "LOCKSTEP_IMAGE_PYTHONS".into(),
            self.pythons.to_string_lossy().into_owned(),
        );
        env.insert("UV_CACHE_DIR".into(), uv_cache_dir());
        env.insert("TMPDIR".into(), self.tmp().to_string_lossy().into_owned());
        env.insert("NO_PROXY".into(), "127.0.0.1,localhost".into());
        env.insert("no_proxy".into(), "127.0.0.1,localhost".into());
        let cfg = RunnerConfig {
            repo: self.origin.clone(),
            repository: REPOSITORY.into(),
            sha,
            git_ref: "refs/heads/main".into(),
            event_name: self.event.0.clone(),
            inputs: self.event.1.clone(),
            root: self.runner_root.clone(),
            run_id: self.next_run,
            token: TOKEN.into(),
            api_url: self.github.url(),
            server_url: "https://github.com".into(),
            pages_url: "https://lockstep-dev.github.io/demo/".into(),
            pythons: self.setup_pythons.clone(),
            env,
            secrets: self.secrets.clone(),
            vars: self.vars.clone(),
            max_parallel: 2,
        };
        let report = run_workflow(&self.workflow(file), &cfg).expect("the workflow runs");
        for job in &report.jobs {
            self.times.push(format!(
                "{file}\trun {}\t{}\t{}\t{:.1}",
                self.next_run,
                job.name,
                job.result,
                job.duration.as_secs_f64()
            ));
        }
        self.times.push(format!(
            "{file}\trun {}\ttotal\t{}\t{:.1}",
            self.next_run,
            report.conclusion,
            report.total.as_secs_f64()
        ));
        for step in report.jobs.iter().flat_map(|j| &j.steps) {
            let log = std::fs::read_to_string(&step.log).unwrap_or_default();
            assert!(
                !log.contains(TOKEN),
                "the token was printed in {}",
                step.log.display()
            );
        }
        report
    }

    fn tmp(&self) -> PathBuf {
        let tmp = self.p.root().join("tmp");
        std::fs::create_dir_all(&tmp).expect("tmp");
        tmp
    }
}

/// The suite's two tests (one per shard), the first expecting `first`.
fn write_suite(project: &Path, first: &str) {
    let suite = native_add_test("add_a", "add.mlir", first)
        + &native_add_test("add_b", "add.mlir", "11 22 33 44");
    write(&project.join("suites/adds.suite.toml"), &suite);
}

/// A manylinux-shaped tree of interpreters (`cp311-cp311/bin/python` ...)
/// over the machine's Pythons: what the build jobs' image provides.
fn image_pythons(root: &Path, versions: &[&str]) -> PathBuf {
    let dir = root.join("opt-python");
    for version in versions {
        let tag = version.replace('.', "");
        let bin = dir.join(format!("cp{tag}-cp{tag}/bin"));
        std::fs::create_dir_all(&bin).expect("create");
        let found = stdout(&output(
            Command::new(python_of(version)).args(["-c", "import sys; print(sys.executable)"]),
        ));
        let python = found.trim();
        assert!(!python.is_empty(), "python{version} is needed");
        for name in [
            "python".to_string(),
            "python3".to_string(),
            format!("python{version}"),
        ] {
            std::os::unix::fs::symlink(python, bin.join(name)).expect("link");
        }
    }
    dir
}

fn uv_cache_dir() -> String {
    std::env::var("UV_CACHE_DIR")
        .unwrap_or_else(|_| format!("{}/.cache/uv", std::env::var("HOME").unwrap_or_default()))
}

fn only(report: &RunReport, id: &str) -> Conclusion {
    let jobs = report.job(id);
    assert!(!jobs.is_empty(), "no job {id}:\n{}", report.describe());
    let first = jobs[0].result;
    assert!(
        jobs.iter().all(|j| j.result == first),
        "{}",
        report.describe()
    );
    first
}

fn outputs(report: &RunReport, id: &str) -> BTreeMap<String, String> {
    report.job(id)[0].outputs.clone()
}

/// "compiler cache (sccache): H hits, M misses[; not cacheable: ...]" from
/// the build log.
fn compiler_cache(report: &RunReport) -> (u64, u64) {
    for step in report.job("build").iter().flat_map(|j| &j.steps) {
        let log = std::fs::read_to_string(&step.log).unwrap_or_default();
        if let Some(line) = log.lines().find(|l| l.contains("compiler cache (")) {
            // "compiler cache (sccache): H hits, M misses[; not cacheable: ...]"
            let counts = line
                .split("): ")
                .nth(1)
                .unwrap_or_default()
                .split(';')
                .next()
                .unwrap_or_default();
            let numbers: Vec<u64> = counts
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|n| n.parse().ok())
                .collect();
            if let [hits, misses] = numbers[..] {
                return (hits, misses);
            }
        }
    }
    panic!("no compiler cache line:\n{}", report.describe());
}

/// Serves `site` with `lockstep release serve` (an index directory), from
/// a project of its own.
fn serve_site(site: &Path) -> (Project, Served) {
    let pages = Project::new();
    pages.write(
        "lockstep.toml",
        &format!(
            "[release]\nname = \"pages\"\nversion-base = \"1.0.0\"\nindex = '{}'\n",
            site.display()
        ),
    );
    let served = Served::start(&pages);
    (pages, served)
}

/// pip and uv install the snapshot's packages from the site's index with
/// their PyPI dependency; returns what `demo_runtime` reports.
fn install_from(p: &Project, index: &str, version: &str, with_uv: bool) -> String {
    let venv = p.root().join(if with_uv { "venv-uv" } else { "venv-pip" });
    let _ = std::fs::remove_dir_all(&venv);
    let python = bare_venv("python3.11", &venv);
    let reqs = [
        format!("demo-compiler=={version}"),
        format!("demo-runtime=={version}"),
    ];
    let mut cmd = if with_uv {
        // lockstep's own pinned uv: a fresh machine's python3 has no uv module.
        let mut cmd = Command::new(shared_uv());
        cmd.args(["pip", "install", "--python"]).arg(&python).args([
            "--index",
            index,
            "--prerelease",
            "allow",
        ]);
        cmd
    } else {
        let mut cmd = pip_into(&python);
        cmd.args(["install", "--pre", "--index-url", index])
            .args(["--extra-index-url", "https://pypi.org/simple/"]);
        cmd
    };
    cmd.args(&reqs)
        .env_remove("PIP_FIND_LINKS")
        .env_remove("UV_INDEX_URL")
        .env_remove("UV_EXTRA_INDEX_URL")
        .env("NO_PROXY", "127.0.0.1,localhost");
    expect(&mut cmd, 0);
    stdout(&expect(
        Command::new(&python).args([
            "-c",
            "import importlib.metadata as m; print(m.version('demo-compiler'), m.version('demo-runtime'), sorted(r.split()[0] for r in m.requires('demo-runtime') or []))",
        ]),
        0,
    ))
}

#[test]
fn the_release_and_integrate_workflows_run_end_to_end() {
    let mut pl = Pipeline::new();
    pl.push();

    // Day 1: everything runs, the snapshot is on the deployed index.
    let first = pl.run("lockstep-release.yml");
    assert_eq!(
        first.conclusion,
        Conclusion::Success,
        "{}",
        first.describe()
    );
    let cut = outputs(&first, "cut");
    assert_eq!(cut["cut"], "true");
    let version = cut["version"].clone();
    assert!(version.starts_with("0.3.0rc"), "{version}");
    for job in ["build", "test-cpu", "publish", "deploy", "summary"] {
        assert_eq!(
            only(&first, job),
            Conclusion::Success,
            "{job}:\n{}",
            first.describe()
        );
    }
    assert_eq!(first.job("test-cpu").len(), 2, "two shards");
    let (hits_1, misses_1) = compiler_cache(&first);
    assert!(misses_1 > 0, "the first build compiles");
    let tag = format!("snapshot-{version}");
    assert!(git(&pl.origin, &["tag", "-l"]).contains(&tag));
    let releases = pl.github.releases();
    assert_eq!(releases.len(), 1);
    assert_eq!(releases[0].tag, tag);
    assert!(
        releases[0].assets.contains_key("SHA256SUMS"),
        "{:?}",
        releases[0].assets.keys()
    );
    let site = first.site.clone().expect("deployed");
    let (_pages, served) = serve_site(&site);
    let index = served.url();
    let pip = install_from(&pl.p, &index, &version, false);
    assert!(pip.contains(&format!("{version} {version}")), "{pip}");
    assert!(pip.contains("packaging") || pip.contains("numpy"), "{pip}");
    let uv = install_from(&pl.p, &index, &version, true);
    assert!(uv.contains(&format!("{version} {version}")), "{uv}");
    drop(served);

    // The same day, no new commit: nothing is cut, nothing after it runs.
    let idle = pl.run("lockstep-release.yml");
    assert_eq!(idle.conclusion, Conclusion::Success, "{}", idle.describe());
    assert_eq!(outputs(&idle, "cut")["cut"], "false");
    for job in ["build", "test-cpu", "publish", "deploy"] {
        assert_eq!(only(&idle, job), Conclusion::Skipped, "{job}");
    }
    assert!(idle.job("cut")[0].summary.contains("Nothing to cut"));
    assert!(idle.site.is_none());
    assert_eq!(pl.github.releases().len(), 1);

    // A new upstream commit and a test that now fails: cut and built (only
    // the changed source recompiled), a red shard, nothing published.
    lockstep_testkit::native::touch_upstream(&pl.native, 1).expect("upstream commit");
    write_suite(&pl.native.project, "0 0 0 0");
    commit_as_tester(&pl.native.project, "A wrong expectation", true);
    pl.push();
    let red = pl.run("lockstep-release.yml");
    assert_eq!(red.conclusion, Conclusion::Failure, "{}", red.describe());
    let red_version = outputs(&red, "cut")["version"].clone();
    assert!(red_version > version, "{red_version} after {version}");
    assert_eq!(
        only(&red, "build"),
        Conclusion::Success,
        "{}",
        red.describe()
    );
    let shards: Vec<Conclusion> = red.job("test-cpu").iter().map(|j| j.result).collect();
    assert!(shards.contains(&Conclusion::Failure), "{shards:?}");
    assert_eq!(only(&red, "publish"), Conclusion::Skipped);
    assert_eq!(only(&red, "deploy"), Conclusion::Skipped);
    assert!(red.site.is_none());
    assert_eq!(pl.github.releases().len(), 1, "nothing released");
    let (hits_2, misses_2) = compiler_cache(&red);
    assert!(
        hits_2 > 0 && misses_2 < misses_1,
        "second build: {hits_2} hits, {misses_2} misses (first: {hits_1}/{misses_1})"
    );

    // Fixed: the next version of the day is published beside the first.
    write_suite(&pl.native.project, "11 22 33 44");
    commit_as_tester(&pl.native.project, "Fix the expectation", true);
    pl.push();
    let green = pl.run("lockstep-release.yml");
    assert_eq!(
        green.conclusion,
        Conclusion::Success,
        "{}",
        green.describe()
    );
    let next = outputs(&green, "cut")["version"].clone();
    assert!(next > red_version, "{next} after {red_version}");
    let site = green.site.clone().expect("deployed");
    let simple =
        std::fs::read_to_string(site.join("simple/demo-runtime/index.html")).expect("project page");
    assert!(
        simple.contains(&version) && simple.contains(&next),
        "{simple}"
    );
    assert!(!simple.contains(&red_version), "{simple}");
    assert_eq!(pl.github.releases().len(), 2);

    // The integrate workflow: a new upstream commit, an integrate branch
    // pushed to origin and its draft pull request opened.
    let upstream = &pl.native.minillvm;
    write(&upstream.join("NOTES.md"), "upstream moved\n");
    commit_as_tester(upstream, "Upstream: notes", true);
    let integrate = pl.run("lockstep-integrate.yml");
    assert_eq!(
        integrate.conclusion,
        Conclusion::Success,
        "{}",
        integrate.describe()
    );
    let pulls = pl.github.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    assert!(pulls[0].draft);
    assert!(
        pulls[0].head.starts_with("integrates/minillvm-"),
        "{:?}",
        pulls[0]
    );
    let branches = git(&pl.origin, &["branch", "--list", "integrates/*"]);
    assert!(branches.contains(&pulls[0].head), "{branches}");

    let times = pl.times.join("\n");
    eprintln!("{times}");
    eprintln!("compiler cache: first build {hits_1} hits / {misses_1} misses, second {hits_2} / {misses_2}");
    if let Ok(file) = std::env::var("LOCKSTEP_PIPELINE_TIMES") {
        std::fs::write(
            file,
            format!("{times}\ncompiler\tfirst\t{hits_1}\t{misses_1}\ncompiler\tsecond\t{hits_2}\t{misses_2}\n"),
        )
        .expect("write the times");
    }
}

const CALENDAR: &str = r#"
[release]
name = "demo"
version-base = "0.3.0"
tag = "snapshot-{version}"
hosting = "github-releases"
keep = { snapshots = 3 }

[integrate]
submodule = "third_party/minillvm"
upstream-remote = "upstream"
upstream-url = "UPSTREAM"
base = "origin/main"
branch = "integrates/minillvm-{date}"
smoke = ["sh", "-c", "test ! -f third_party/minillvm/BREAK || test -f ALLOW_BREAK"]

[integrate.github]
repository = "lockstep-dev/demo"

[ci]
lockstep = { git = "https://github.com/lockstep-dev/lockstep", rev = "0123456789abcdef0123456789abcdef01234567" }
shards = 2
test-pythons = "first"

[ci.release]
schedule = "0 5 * * *"

[ci.integrate]
schedule = "30 4 * * *"
"#;

/// The versions the deployed index lists for `project` (its PEP 691 page).
fn listed(site: &Path, project: &str) -> Vec<String> {
    let text = std::fs::read_to_string(site.join(format!("simple/{project}/index.json")))
        .unwrap_or_else(|e| panic!("{project}'s page: {e}"));
    let doc: serde_json::Value = serde_json::from_str(&text).expect("PEP 691 JSON");
    doc["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| v.as_str().unwrap_or_default().to_string())
        .collect()
}

/// A release night: an upstream commit (moved into the project), pushed,
/// and the scheduled release run.
fn release_night(pl: &mut Pipeline, n: u32) -> RunReport {
    lockstep_testkit::native::touch_upstream(&pl.native, n).expect("upstream commit");
    pl.push();
    pl.run("lockstep-release.yml")
}

/// Installs `requirements` from `index` into a new venv of `python` with pip
/// (PyPI for what the index lacks) or uv; what `code` prints there.
fn install_and_run(
    p: &Project,
    name: &str,
    python: &str,
    index: &str,
    requirements: &[String],
    with_uv: bool,
    code: &str,
) -> String {
    let python_in = bare_venv(python_of(python), &p.root().join(name));
    let mut cmd = if with_uv {
        // lockstep's own pinned uv: a fresh machine's python3 has no uv module.
        let mut cmd = Command::new(shared_uv());
        cmd.args(["pip", "install", "--python"])
            .arg(&python_in)
            .args(["--index", index]);
        cmd
    } else {
        let mut cmd = pip_into(&python_in);
        cmd.args(["install", "--quiet", "--index-url", index])
            .args(["--extra-index-url", "https://pypi.org/simple/"]);
        cmd
    };
    cmd.args(requirements)
        .env_remove("PIP_FIND_LINKS")
        .env_remove("UV_INDEX_URL")
        .env_remove("UV_EXTRA_INDEX_URL")
        .env("NO_PROXY", "127.0.0.1,localhost");
    expect(&mut cmd, 0);
    stdout(&expect(Command::new(&python_in).args(["-c", code]), 0))
}

#[test]
fn the_calendar_two_pythons_two_variants_five_nights_an_eviction_pruning_and_a_final() {
    let mut pl = Pipeline::create(
        CALENDAR,
        NativeSpec {
            pythons: vec!["3.11".into(), "3.12".into()],
            asserts_variant: true,
            ..NativeSpec::default()
        },
        &["3.11", "3.12"],
    );
    pl.push();
    let mut published: Vec<String> = Vec::new();
    let mut site = None;

    // Five nights: a red one (2), its fix (3), the Actions cache losing the
    // store before 4 (rebuilt from the Releases), and the fourth snapshot
    // pruning the first (keep 3) on 5.
    for night in 1..=5u32 {
        if night == 2 {
            // A wrong expectation: a red shard, nothing published.
            write_suite(&pl.native.project, "0 0 0 0");
            commit_as_tester(&pl.native.project, "A wrong expectation", true);
        }
        if night == 3 {
            write_suite(&pl.native.project, "11 22 33 44");
            commit_as_tester(&pl.native.project, "Fix the expectation", true);
        }
        if night == 4 {
            // Between nights 3 and 4 the Actions cache loses the store.
            let gone = lockstep_actions::evict_cache(&pl.runner_root, "lockstep-release-store-")
                .expect("evict");
            assert!(gone > 0, "no store entry to evict");
        }
        let run = release_night(&mut pl, night);
        let version = outputs(&run, "cut")["version"].clone();
        if night == 2 {
            assert_eq!(run.conclusion, Conclusion::Failure, "{}", run.describe());
            assert_eq!(only(&run, "publish"), Conclusion::Skipped);
            assert!(pl
                .github
                .releases()
                .iter()
                .all(|r| !r.tag.ends_with(&version)));
            continue;
        }
        assert_eq!(
            run.conclusion,
            Conclusion::Success,
            "night {night}:\n{}",
            run.describe()
        );
        published.push(version.clone());
        let deployed = run.site.clone().expect("deployed");
        // Both variants of every Python, one version, one Release.
        let tag = format!("snapshot-{version}");
        let release = pl
            .github
            .releases()
            .into_iter()
            .find(|r| r.tag == tag)
            .expect("the night's Release");
        for wheel in ["demo_compiler-", "demo_compiler_asserts-"] {
            for py in ["cp311", "cp312"] {
                assert!(
                    release
                        .assets
                        .keys()
                        .any(|n| n.starts_with(wheel) && n.contains(&format!("-{py}-"))),
                    "night {night}: no {wheel}*{py} in {:?}",
                    release.assets.keys()
                );
            }
        }
        let sync_ran = run.job("publish")[0].steps.iter().any(|s| {
            s.name == "Rebuild the release store from the GitHub Releases"
                && s.outcome == Conclusion::Success
        });
        assert_eq!(
            sync_ran,
            night == 1 || night == 4,
            "night {night}: the sync step"
        );
        let listed_now = listed(&deployed, "demo-runtime");
        let expected: Vec<String> = if night == 5 {
            published[1..].to_vec()
        } else {
            published.clone()
        };
        assert_eq!(listed_now, expected, "night {night}");
        assert_eq!(
            listed(&deployed, "demo-compiler-asserts"),
            expected,
            "night {night}"
        );
        site = Some(deployed);
    }
    assert_eq!(published.len(), 4);
    // Night 5 pruned the oldest snapshot: its Release is gone too.
    assert!(pl
        .github
        .releases()
        .iter()
        .all(|r| r.tag != format!("snapshot-{}", published[0])));

    // A night with nothing new cuts nothing.
    let idle = pl.run("lockstep-release.yml");
    assert_eq!(idle.conclusion, Conclusion::Success, "{}", idle.describe());
    assert_eq!(outputs(&idle, "cut")["cut"], "false");

    // The final: promoted by hand from the last snapshot.
    let pypi = PypiServer::start(&pl.p.root().join("pypi-packages"));
    pl.vars.insert("LOCKSTEP_UPLOAD_URL".into(), pypi.url());
    pl.secrets
        .insert("LOCKSTEP_PYPI_TOKEN".into(), "pypi-loopback-token".into());
    let candidate = published.last().expect("a snapshot").clone();
    pl.event = (
        "workflow_dispatch".into(),
        BTreeMap::from([("promote".to_string(), candidate.clone())]),
    );
    let promote = pl.run("lockstep-release.yml");
    assert_eq!(
        promote.conclusion,
        Conclusion::Success,
        "{}",
        promote.describe()
    );
    assert_eq!(only(&promote, "cut"), Conclusion::Skipped);
    assert_eq!(only(&promote, "pypi"), Conclusion::Success);
    let source = git(
        &pl.origin,
        &["rev-list", "-n1", &format!("snapshot-{candidate}")],
    )
    .trim()
    .to_string();
    assert_eq!(
        git(&pl.origin, &["rev-list", "-n1", "v0.3.0"]).trim(),
        source
    );
    assert_eq!(
        git(&pl.origin, &["rev-parse", "release/0.3"]).trim(),
        source
    );
    let final_release = pl
        .github
        .releases()
        .into_iter()
        .find(|r| r.tag == "v0.3.0")
        .expect("the final's Release");
    assert!(!final_release.prerelease);
    let on_pypi: Vec<String> = std::fs::read_dir(&pypi.packages)
        .expect("pypiserver's files")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    for wheel in [
        "demo_compiler-0.3.0-cp311",
        "demo_compiler-0.3.0-cp312",
        "demo_compiler_asserts-0.3.0-cp311",
        "demo_runtime-0.3.0-",
    ] {
        assert!(
            on_pypi.iter().any(|f| f.starts_with(wheel)),
            "{wheel} not on PyPI: {on_pypi:?}"
        );
    }
    let site = promote.site.clone().or(site).expect("deployed");
    assert!(listed(&site, "demo-compiler").contains(&"0.3.0".to_string()));

    // pip and uv install both variants of the final, each Python, from the
    // index (the files come from the Releases).
    let (_pages, served) = serve_site(&site);
    let index = served.url();
    for python in ["3.11", "3.12"] {
        let release = install_and_run(
            &pl.p,
            &format!("final-release-{python}"),
            python,
            &index,
            &["demo-compiler==0.3.0".into(), "demo-runtime==0.3.0".into()],
            false,
            "import demo_compiler, importlib.metadata as m; print(m.version('demo-compiler'), demo_compiler.asserts())",
        );
        assert_eq!(release.trim(), "0.3.0 False", "{python}");
        let asserts = install_and_run(
            &pl.p,
            &format!("final-asserts-{python}"),
            python,
            &index,
            &["demo-compiler-asserts==0.3.0".into()],
            true,
            "import demo_compiler, importlib.metadata as m; print(m.version('demo-compiler-asserts'), demo_compiler.asserts())",
        );
        assert_eq!(asserts.trim(), "0.3.0 True", "{python}");
    }
    drop(served);

    // The integrate over three nights: a halt, a person's fixup, resumed on
    // the same branch and pull request, ready for review at upstream's head.
    pl.event = ("schedule".into(), BTreeMap::new());
    let upstream = pl.native.minillvm.clone();
    write(&upstream.join("BREAK"), "breaks the smoke\n");
    commit_as_tester(&upstream, "Upstream: a breaking change", true);
    write(&upstream.join("NOTES.md"), "after the break\n");
    commit_as_tester(&upstream, "Upstream: notes", true);
    // The checks of a head answer "in progress" on their first poll.
    pl.github
        .set_ci(std::sync::Arc::new(|_: &str| "success".to_string()), 1);
    let night1 = pl.run("lockstep-integrate.yml");
    assert_eq!(
        night1.conclusion,
        Conclusion::Failure,
        "a halt is red:\n{}",
        night1.describe()
    );
    let pulls = pl.github.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    assert!(
        pulls[0].draft && pulls[0].title.starts_with("[needs help]"),
        "{:?}",
        pulls[0]
    );
    let branch = pulls[0].head.clone();

    // A person's fixup on the integrate branch.
    let fixer = pl.p.root().join("fixer");
    git(
        pl.p.root(),
        &[
            "clone",
            "-q",
            "--branch",
            &branch,
            &pl.origin.to_string_lossy(),
            &fixer.to_string_lossy(),
        ],
    );
    write(&fixer.join("ALLOW_BREAK"), "the project copes with BREAK\n");
    commit_as_tester(&fixer, "Cope with upstream's break", true);
    git(
        &fixer,
        &["push", "-q", "origin", &format!("HEAD:refs/heads/{branch}")],
    );

    let night2 = pl.run("lockstep-integrate.yml");
    assert_eq!(
        night2.conclusion,
        Conclusion::Success,
        "{}",
        night2.describe()
    );
    let pulls = pl.github.pulls();
    assert_eq!(pulls.len(), 1, "the same pull request: {pulls:?}");
    assert_eq!(pulls[0].head, branch);
    assert!(pulls[0].draft, "checks still running: a draft");
    assert!(
        pulls[0].body.contains("waiting for the checks"),
        "{}",
        pulls[0].body
    );
    let tip = git(&pl.origin, &["rev-parse", &branch]).trim().to_string();
    let fixup = git(&fixer, &["rev-parse", "HEAD"]).trim().to_string();
    assert!(
        is_ancestor(&pl.origin, &fixup, &tip),
        "the fixup was carried forward"
    );

    let night3 = pl.run("lockstep-integrate.yml");
    assert_eq!(
        night3.conclusion,
        Conclusion::Success,
        "{}",
        night3.describe()
    );
    let pulls = pl.github.pulls();
    assert_eq!(pulls.len(), 1);
    assert!(!pulls[0].draft, "ready for review: {:?}", pulls[0]);
    assert_eq!(pl.github.ready_marked(), vec![pulls[0].number]);

    let times = pl.times.join("\n");
    eprintln!("{times}");
    if let Ok(file) = std::env::var("LOCKSTEP_CALENDAR_TIMES") {
        std::fs::write(file, format!("{times}\n")).expect("write the times");
    }
}
