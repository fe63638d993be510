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

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use lockstep_actions::{run_workflow, seed_cache, Conclusion, RunReport, RunnerConfig};
use lockstep_sandbox::github::FakeGithub;
use lockstep_sandbox::native::{self, Native, NativeSpec};

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
    pythons: PathBuf,
    next_run: u64,
    times: Vec<String>,
}

impl Pipeline {
    fn new() -> Pipeline {
        // The pinned IREE from PyPI, shared like a runner image's tools.
        iree_bin();
        let p = Project::new();
        let dir = p.root().join("native");
        let upstream = dir.join("minillvm");
        let native = native::create(
            &dir,
            &NativeSpec {
                extra_config: CONFIG.replace("UPSTREAM", &upstream.to_string_lossy()),
                ..NativeSpec::default()
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
        let pythons = image_pythons(p.root());
        let pipeline = Pipeline {
            p,
            native,
            origin,
            github: FakeGithub::start(REPOSITORY, TOKEN).expect("loopback GitHub"),
            runner_root,
            pythons,
            next_run: 1000,
            times: Vec::new(),
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
            event_name: "schedule".into(),
            inputs: BTreeMap::new(),
            root: self.runner_root.clone(),
            run_id: self.next_run,
            token: TOKEN.into(),
            api_url: self.github.url(),
            server_url: "https://github.com".into(),
            pages_url: "https://lockstep-dev.github.io/demo/".into(),
            pythons: vec![self.pythons.join("cp311-cp311/bin/python")],
            env,
            secrets: BTreeMap::new(),
            vars: BTreeMap::new(),
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

/// A manylinux-shaped tree of interpreters (`cp311-cp311/bin/python`) over
/// the machine's Python 3.11: what the build jobs' image provides.
fn image_pythons(root: &Path) -> PathBuf {
    let dir = root.join("opt-python");
    let bin = dir.join("cp311-cp311/bin");
    std::fs::create_dir_all(&bin).expect("create");
    let found = stdout(&output(
        Command::new("python3.11").args(["-c", "import sys; print(sys.executable)"]),
    ));
    let python = found.trim();
    assert!(!python.is_empty(), "python3.11 is needed");
    for name in ["python", "python3", "python3.11"] {
        std::os::unix::fs::symlink(python, bin.join(name)).expect("link");
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
    expect(
        Command::new("python3.11").arg("-m").arg("venv").arg(&venv),
        0,
    );
    let python = venv.join("bin/python");
    let reqs = [
        format!("demo-compiler=={version}"),
        format!("demo-runtime=={version}"),
    ];
    let mut cmd = if with_uv {
        let mut cmd = Command::new("python3");
        cmd.args(["-m", "uv", "pip", "install", "--python"])
            .arg(&python)
            .args(["--index", index, "--prerelease", "allow"]);
        cmd
    } else {
        let mut cmd = Command::new(&python);
        cmd.args(["-m", "pip", "install", "--pre", "--index-url", index])
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
    native::touch_upstream(&pl.native, 1).expect("upstream commit");
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
