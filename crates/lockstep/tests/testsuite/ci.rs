//! `lockstep ci generate`: the generated workflows are linted with the real
//! actionlint (with shellcheck on every `run:` script) and zizmor, installed
//! from PyPI, and parsed back (github-actions-models) to check what
//! hand-written workflows get wrong: every download matches an upload of a
//! job it needs, the summary needs every job, shards are exactly 1..N,
//! every job has a timeout, no `${{ }}` inside a script.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use yaml_serde::Value;

/// A git repository with lockstep.toml (at `sub`) holding `config`.
fn repo(sub: &str, config: &str) -> (Project, PathBuf) {
    let p = Project::new();
    git(&p.path(), &["init", "-q"]);
    let dir = p.path().join(sub);
    write(&dir.join("lockstep.toml"), config);
    (p, dir)
}

const PINNED: &str = "[ci]\nlockstep = { git = \"https://github.com/example/lockstep\", rev = \"0123456789abcdef0123456789abcdef01234567\" }\n";

const MINIMAL: &str = "[[pkg.package]]\nname = \"demo-pure\"\nsource = \"pure\"\n";

const FULL: &str = r#"
[pkg]
python = ["3.11", "3.12"]

[[pkg.package]]
name = "demo-compiler"
source = "compiler"
variants = ["release", "asserts"]

[[pkg.package]]
name = "demo-runtime"
source = "runtime"

[pkg.variants.asserts]
env = { DEMO_ENABLE_ASSERTS = "ON" }

[test]
default-targets = ["cpu"]
suite-configs = ["suites/cpu.json5"]

[test.targets.gpu]
runs-on = ["self-hosted", "mi300"]
shards = 4

[test.targets.cpu-sync]
shards = 3

[ci]
lockstep = { git = "https://github.com/example/lockstep", rev = "v0.1.0" }
branches = ["main", "dev/*"]
shards = 2
test-variant = "asserts"
"#;

fn parse(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    // The typed model of the workflow syntax accepts it ...
    let typed: Result<github_actions_models::workflow::Workflow, _> = yaml_serde::from_str(&text);
    assert!(typed.is_ok(), "{}: {:?}", path.display(), typed.err());
    // ... and the checks read it as plain YAML.
    yaml_serde::from_str(&text).unwrap()
}

fn str_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => panic!("not a scalar: {other:?}"),
    }
}

fn seq(v: &Value) -> Vec<String> {
    match v {
        Value::Sequence(items) => items.iter().map(str_of).collect(),
        Value::Null => Vec::new(),
        other => vec![str_of(other)],
    }
}

/// Expands `${{ matrix.KEY }}` in `text` for every combination of `matrix`.
fn expand(text: &str, matrix: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut out = vec![text.to_string()];
    for (key, values) in matrix {
        let token = format!("${{{{ matrix.{key} }}}}");
        out = out
            .iter()
            .flat_map(|t| {
                values
                    .iter()
                    .map(|v| t.replace(&token, v))
                    .collect::<Vec<_>>()
            })
            .collect();
    }
    out.sort();
    out.dedup();
    out
}

fn matrix_of(job: &Value) -> BTreeMap<String, Vec<String>> {
    let mut m = BTreeMap::new();
    if let Some(Value::Mapping(dims)) = job.get("strategy").and_then(|s| s.get("matrix")) {
        for (k, v) in dims {
            m.insert(str_of(k), seq(v));
        }
    }
    m
}

/// The structural checks of the issue; returns the jobs by id.
/// The names of a job's steps, in order.
fn step_names(job: &Value) -> Vec<String> {
    job["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|s| str_of(&s["name"]))
        .collect()
}

fn check_structure(workflow: &Value, shards: &BTreeMap<&str, u32>) -> BTreeMap<String, Value> {
    assert_eq!(
        workflow["permissions"]["contents"].as_str(),
        Some("read"),
        "least privilege"
    );
    let jobs: BTreeMap<String, Value> = workflow["jobs"]
        .as_mapping()
        .unwrap()
        .iter()
        .map(|(k, v)| (str_of(k), v.clone()))
        .collect();

    // Uploads by job (names expanded over the job's matrix).
    let mut uploads: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (id, job) in &jobs {
        assert!(
            job.get("timeout-minutes").and_then(Value::as_i64).is_some(),
            "{id} has no timeout-minutes"
        );
        let matrix = matrix_of(job);
        if !matrix.is_empty() {
            assert_eq!(
                job["strategy"]["fail-fast"].as_bool(),
                Some(false),
                "{id}: fail-fast"
            );
        }
        for step in job["steps"].as_sequence().unwrap() {
            let uses = step.get("uses").map(str_of).unwrap_or_default();
            if let Some(run) = step.get("run") {
                assert!(
                    !str_of(run).contains("${{"),
                    "{id}: an expression inside run: (template injection):\n{}",
                    str_of(run)
                );
            }
            if uses.starts_with("actions/checkout@") {
                assert_eq!(step["with"]["persist-credentials"].as_bool(), Some(false));
            }
            assert!(
                uses.is_empty() || uses.contains('@'),
                "{id}: {uses} is not pinned"
            );
            if uses.starts_with("actions/upload-artifact@") {
                let name = str_of(&step["with"]["name"]);
                uploads
                    .entry(id.clone())
                    .or_default()
                    .extend(expand(&name, &matrix));
                if name.starts_with("wheels-") {
                    assert_eq!(
                        step["with"]["if-no-files-found"].as_str(),
                        Some("error"),
                        "{id}: a cell that builds nothing must fail"
                    );
                }
            }
        }
    }
    // Every upload name is unique across the workflow.
    let mut all: Vec<&String> = uploads.values().flatten().collect();
    let count = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), count, "artifact names collide: {uploads:?}");

    // Every download is uploaded by a job it needs.
    for (id, job) in &jobs {
        let needs = seq(job.get("needs").unwrap_or(&Value::Null));
        for step in job["steps"].as_sequence().unwrap() {
            let uses = step.get("uses").map(str_of).unwrap_or_default();
            if uses.starts_with("actions/download-artifact@") {
                // Each name the job's matrix makes of it (a job per Python
                // downloads that Python's wheels).
                for name in expand(&str_of(&step["with"]["name"]), &matrix_of(job)) {
                    assert!(
                        needs
                            .iter()
                            .any(|n| uploads.get(n).is_some_and(|u| u.contains(&name))),
                        "{id} downloads {name}, which no job it needs ({needs:?}) uploads: {uploads:?}"
                    );
                }
            }
        }
    }

    // The summary runs always and needs every other job.
    let summary = &jobs["summary"];
    assert_eq!(summary["if"].as_str(), Some("always()"));
    let needed: BTreeSet<String> = seq(&summary["needs"]).into_iter().collect();
    let others: BTreeSet<String> = jobs.keys().filter(|k| *k != "summary").cloned().collect();
    assert_eq!(needed, others);

    // Test jobs: shards exactly 1..N, passed as --shard i/N.
    let tests: BTreeMap<&str, &Value> = jobs
        .iter()
        .filter_map(|(id, job)| id.strip_prefix("test-").map(|t| (t, job)))
        .collect();
    assert_eq!(
        tests.keys().copied().collect::<BTreeSet<_>>(),
        shards.keys().copied().collect::<BTreeSet<_>>()
    );
    for (target, job) in tests {
        let n = shards[target];
        let expected: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
        assert_eq!(matrix_of(job)["shard"], expected, "{target}");
        assert_eq!(str_of(&job["env"]["SHARDS"]), n.to_string());
        assert_eq!(str_of(&job["env"]["TARGET"]), target);
        let scripts: String = job["steps"]
            .as_sequence()
            .unwrap()
            .iter()
            .filter_map(|s| s.get("run").map(str_of))
            .collect();
        assert!(scripts.contains("--shard \"$SHARD/$SHARDS\""), "{scripts}");
        assert!(scripts.contains("--junit") && scripts.contains("--summary"));
        if jobs.contains_key("build") {
            // The IREE tools of the built wheels.
            assert!(scripts.contains("lockstep toolchain install --manifest"));
            assert_eq!(seq(&job["needs"]), vec!["build".to_string()]);
        } else {
            // Tests only: the release [toolchain] iree names, from PyPI.
            assert!(
                scripts.contains("lockstep toolchain install\n"),
                "{scripts}"
            );
            assert!(!scripts.contains("--manifest"), "{scripts}");
            assert!(
                job.get("needs").is_none(),
                "{target}: needs {:?}",
                job["needs"]
            );
            assert!(job["env"].get("LOCKSTEP_IREE_MANIFEST").is_none());
        }
    }
    jobs
}

#[test]
fn a_minimal_config_gives_a_clean_workflow_testing_cpu() {
    let (p, dir) = repo("", &format!("{MINIMAL}{PINNED}"));
    // The suites `lockstep test` runs without arguments.
    std::fs::create_dir_all(dir.join("suites")).unwrap();
    let out = p.run(&["ci", "generate"], 0);
    assert!(stdout(&out).contains("wrote: "), "{}", stdout(&out));
    let text = lint(&p.path());
    eprintln!("{text}");
    let workflow = parse(&dir.join(".github/workflows/lockstep-pkgci.yml"));
    let jobs = check_structure(&workflow, &BTreeMap::from([("cpu", 1)]));
    let build = &jobs["build"];
    assert_eq!(matrix_of(build)["python"], vec!["3.11"]);
    assert_eq!(matrix_of(build)["variant"], vec!["release"]);
    let header = std::fs::read_to_string(dir.join(".github/workflows/lockstep-pkgci.yml")).unwrap();
    assert!(header.starts_with("# Generated by `lockstep ci generate` from lockstep.toml"));
    assert!(header.contains("--check"));
    // Native builds: in the digest-pinned manylinux image, with the image's
    // Python, and sccache sharing its objects through the Actions cache.
    let image = str_of(&build["container"]["image"]);
    assert!(
        image.starts_with("quay.io/pypa/manylinux_2_28_x86_64@sha256:"),
        "{image}"
    );
    let steps = build["steps"].as_sequence().expect("steps");
    let names: Vec<&str> = steps.iter().filter_map(|s| s["name"].as_str()).collect();
    assert!(!names.contains(&"Set up Python"), "{names:?}");
    assert!(names.contains(&"Use the image's Python"), "{names:?}");
    assert!(names.contains(&"Install Rust"), "{names:?}");
    // The compiler cache's objects travel in the Actions cache: restored
    // from the newest entry of the cell, saved under the run's key.
    let restore = steps
        .iter()
        .find(|s| s["name"].as_str() == Some("Restore the compiler cache"))
        .expect("the compiler cache step");
    assert!(str_of(&restore["uses"]).starts_with("actions/cache@"));
    assert_eq!(str_of(&restore["with"]["path"]), ".lockstep-cache/compiler");
    assert!(str_of(&restore["with"]["key"]).ends_with("-${{ github.run_id }}"));
    let build_step = steps
        .iter()
        .find(|s| s["name"].as_str() == Some("Build the packages"))
        .expect("build step");
    assert!(str_of(&build_step["run"]).contains("export LOCKSTEP_CACHE=\"$PWD/.lockstep-cache\""));
    // Every action is pinned by commit, from lockstep's table.
    let text = std::fs::read_to_string(dir.join(".github/workflows/lockstep-pkgci.yml")).unwrap();
    for line in text.lines().filter(|l| l.trim_start().starts_with("uses:")) {
        let uses = line.split_whitespace().nth(1).unwrap();
        let known = lockstep_ci::actions::known(uses).unwrap_or_else(|| panic!("{line}"));
        assert!(
            line.ends_with(&format!("@{} # {}", known.sha, known.version)),
            "{line}"
        );
    }
    // Generating again changes nothing; --check agrees.
    let again = p.run(&["ci", "generate"], 0);
    assert!(!stdout(&again).contains("wrote: "), "{}", stdout(&again));
    p.run(&["ci", "generate", "--check"], 0);
}

#[test]
fn a_full_matrix_in_a_subdirectory_lints_clean_and_keeps_everything_in_step() {
    let (p, dir) = repo("proj", FULL);
    // The workflows go to the repository's top, where GitHub reads them.
    let out = expect(&mut p.cmd_in(&dir, &["ci", "generate"]), 0);
    assert!(stdout(&out).contains("lockstep-pkgci.yml"));
    let text = lint(&p.path());
    eprintln!("{text}");
    let workflow = parse(&p.path().join(".github/workflows/lockstep-pkgci.yml"));
    let jobs = check_structure(
        &workflow,
        &BTreeMap::from([("cpu", 2), ("cpu-sync", 3), ("gpu", 4)]),
    );
    // The matrix is python x variant; the test jobs install the asserts set.
    let build = &jobs["build"];
    assert_eq!(matrix_of(build)["python"], vec!["3.11", "3.12"]);
    assert_eq!(matrix_of(build)["variant"], vec!["release", "asserts"]);
    // Test jobs run under every Python ([ci] test-pythons = "all").
    for target in ["test-cpu", "test-cpu-sync", "test-gpu"] {
        assert_eq!(
            matrix_of(&jobs[target])["python"],
            vec!["3.11", "3.12"],
            "{target}"
        );
    }
    assert_eq!(
        str_of(&jobs["test-gpu"]["env"]["LOCKSTEP_IREE_MANIFEST"]),
        "wheelhouse/pylock.asserts.toml"
    );
    assert_eq!(
        seq(&jobs["test-gpu"]["runs-on"]),
        vec!["self-hosted", "mi300"]
    );
    assert_eq!(str_of(&jobs["test-cpu-sync"]["runs-on"]), "ubuntu-24.04");
    // Jobs run in lockstep.toml's directory; actions see workspace paths.
    assert_eq!(
        workflow["defaults"]["run"]["working-directory"].as_str(),
        Some("proj")
    );
    let gpu_steps = jobs["test-gpu"]["steps"].as_sequence().unwrap().clone();
    let download = gpu_steps
        .iter()
        .find(|s| {
            s.get("uses")
                .map(str_of)
                .unwrap_or_default()
                .starts_with("actions/download")
        })
        .unwrap();
    assert_eq!(str_of(&download["with"]["path"]), "proj/wheelhouse");
    // Failing tests upload the xfail lists --update-xfails rewrote.
    let xfails = gpu_steps
        .iter()
        .find(|s| {
            s.get("name")
                .map(str_of)
                .unwrap_or_default()
                .contains("xfail")
        })
        .expect("an xfail upload step");
    assert_eq!(xfails["if"].as_str(), Some("failure()"));
    assert!(str_of(&xfails["with"]["path"]).contains("proj/suites/cpu.json5"));
    let scripts: String = gpu_steps
        .iter()
        .filter_map(|s| s.get("run").map(str_of))
        .collect();
    assert!(scripts.contains("--update-xfails"));
    // Triggers and the self-hosted labels actionlint must know.
    assert_eq!(
        seq(&workflow["on"]["push"]["branches"]),
        vec!["main", "dev/*"]
    );
    let lint_config: Value = yaml_serde::from_str(
        &std::fs::read_to_string(p.path().join(".github/actionlint.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        seq(&lint_config["self-hosted-runner"]["labels"]),
        vec!["mi300"]
    );
}

const PIPELINE: &str = r#"
[release]
name = "demo"
version-base = "0.3.0"
pin-files = ["llvm.version"]

[integrate]
submodule = "third_party/llvm-project"

[ci.release]
schedule = "0 5 * * *"

[ci.integrate]
schedule = "30 4 * * 1-5"
token-secret = "INTEGRATE_TOKEN"
"#;

/// A job's `permissions` as `key: value` pairs.
fn permissions(job: &Value) -> Vec<String> {
    job.get("permissions")
        .and_then(Value::as_mapping)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{}: {}", str_of(k), str_of(v)))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_release_and_integrate_workflows_lint_clean_with_least_privilege() {
    let (p, dir) = repo("", &format!("{MINIMAL}{PINNED}{PIPELINE}"));
    std::fs::create_dir_all(dir.join("suites")).unwrap();
    let out = p.run(&["ci", "generate"], 0);
    for file in [
        "lockstep-pkgci.yml",
        "lockstep-release.yml",
        "lockstep-integrate.yml",
    ] {
        assert!(stdout(&out).contains(file), "{}", stdout(&out));
    }
    // The next runs are shown, so a wrong schedule is seen at once.
    assert!(
        stderr(&out).contains("the release workflow runs on `0 5 * * *` (UTC); next: "),
        "{}",
        stderr(&out)
    );
    eprintln!("{}", lint(&p.path()));

    let release = parse(&dir.join(".github/workflows/lockstep-release.yml"));
    assert_eq!(str_of(&release["on"]["schedule"][0]["cron"]), "0 5 * * *");
    let inputs = &release["on"]["workflow_dispatch"]["inputs"];
    assert_eq!(
        seq(&inputs["channel"]["options"]),
        vec!["snapshot", "candidate"]
    );
    assert!(inputs.get("base-version").is_some());
    assert!(release["permissions"].as_mapping().unwrap().is_empty());
    let jobs = release["jobs"].as_mapping().unwrap();
    let ids: Vec<String> = jobs.keys().map(str_of).collect();
    assert_eq!(
        ids,
        ["cut", "build", "test-cpu", "publish", "promote", "pypi", "deploy", "summary"]
    );
    let job = |id: &str| &release["jobs"][id];
    // Write access only where tags, pushes, releases and Pages happen.
    assert_eq!(permissions(job("cut")), vec!["contents: write"]);
    assert_eq!(permissions(job("publish")), vec!["contents: write"]);
    assert_eq!(permissions(job("promote")), vec!["contents: write"]);
    // The PyPI upload: OIDC only, in its own environment.
    assert_eq!(permissions(job("pypi")), vec!["id-token: write"]);
    assert_eq!(str_of(&job("pypi")["environment"]["name"]), "pypi");
    assert_eq!(str_of(&job("pypi")["needs"]), "promote");
    // A manual run with `promote` promotes and cuts nothing.
    assert!(inputs.get("promote").is_some() && inputs.get("final").is_some());
    assert_eq!(
        str_of(&job("cut")["if"]),
        "inputs.promote == '' || inputs.promote == null"
    );
    assert_eq!(
        str_of(&job("promote")["if"]),
        "inputs.promote != '' && inputs.promote != null"
    );
    let promote_script: String = job("promote")["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s.get("run").map(str_of))
        .collect();
    assert!(
        promote_script.contains("--tag --github-release --release-branch --copy-to final-dist"),
        "{promote_script}"
    );
    assert_eq!(
        permissions(job("deploy")),
        vec!["pages: write", "id-token: write"]
    );
    for id in ["build", "test-cpu", "summary"] {
        assert!(permissions(job(id)).is_empty(), "{id}");
    }
    assert_eq!(
        str_of(&job("deploy")["environment"]["name"]),
        "github-pages"
    );
    // Nothing after the cut runs without a cut; publish needs every test.
    for id in ["build", "test-cpu", "publish"] {
        assert_eq!(
            str_of(&job(id)["if"]),
            "needs.cut.outputs.cut == 'true'",
            "{id}"
        );
    }
    assert_eq!(
        seq(&job("publish")["needs"]),
        vec!["cut", "build", "test-cpu"]
    );
    assert_eq!(seq(&job("deploy")["needs"]), vec!["publish", "promote"]);
    let cut_script: String = job("cut")["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s.get("run").map(str_of))
        .collect();
    assert!(
        cut_script.contains("lockstep release bump --smoke"),
        "{cut_script}"
    );
    assert!(cut_script.contains("--if-new-commit"), "{cut_script}");
    assert!(!cut_script.contains("${{"), "{cut_script}");
    let build_script: String = job("build")["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s.get("run").map(str_of))
        .collect();
    assert!(
        build_script.contains("--version \"$VERSION\""),
        "{build_script}"
    );

    let integrate = parse(&dir.join(".github/workflows/lockstep-integrate.yml"));
    // No expression inside any script of either workflow (template
    // injection): values reach scripts through env.
    for workflow in [&release, &integrate] {
        for (id, job) in workflow["jobs"].as_mapping().unwrap() {
            for step in job["steps"].as_sequence().unwrap() {
                if let Some(run) = step.get("run") {
                    assert!(
                        !str_of(run).contains("${{"),
                        "{}: {}",
                        str_of(id),
                        str_of(run)
                    );
                }
            }
        }
    }
    // No credential in a step that runs lockstep (the smoke, builds: the
    // project's code): a step that exports git's header only pushes.
    for workflow in [&release, &integrate] {
        for (id, job) in workflow["jobs"].as_mapping().unwrap() {
            for step in job["steps"].as_sequence().unwrap() {
                let Some(run) = step.get("run").map(str_of) else {
                    continue;
                };
                if !run.contains("GIT_CONFIG_VALUE_0") {
                    continue;
                }
                for line in run.lines() {
                    let auth = line.starts_with("basic=") || line.starts_with("export GIT_CONFIG_");
                    let git = line.starts_with("git push ") || line.starts_with("git fetch ");
                    assert!(
                        auth || git || line.trim().is_empty(),
                        "{}: a step with the git credential runs `{line}`",
                        str_of(id)
                    );
                }
            }
        }
    }
    assert_eq!(
        str_of(&integrate["concurrency"]["group"]),
        "lockstep-integrate"
    );
    assert_eq!(
        integrate["concurrency"]["cancel-in-progress"].as_bool(),
        Some(false)
    );
    let job = &integrate["jobs"]["integrate"];
    assert_eq!(
        permissions(job),
        vec!["contents: write", "pull-requests: write"]
    );
    let step = job["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str() == Some("Integrate"))
        .unwrap();
    assert_eq!(
        str_of(&step["env"]["GITHUB_TOKEN"]),
        "${{ secrets.INTEGRATE_TOKEN }}"
    );
    assert!(str_of(&step["run"]).contains("lockstep integrate loop --publish"));
    // Only the integrated submodule is fetched, blobless: the checkout
    // fetches none (an LLVM submodule with full history is gigabytes).
    let steps = job["steps"].as_sequence().unwrap();
    assert!(steps[0].get("with").unwrap().get("submodules").is_none());
    let fetch = steps
        .iter()
        .find(|s| s["name"].as_str() == Some("Check out submodules"))
        .unwrap();
    assert_eq!(
        str_of(&fetch["run"]),
        "git submodule update --init --filter=blob:none -- third_party/llvm-project\n"
    );

    // `ci explain` shows the same graph, in text and JSON.
    let text = stdout(&p.run(&["ci", "explain"], 0));
    assert!(
        text.contains("lockstep-release.yml  (lockstep release)"),
        "{text}"
    );
    assert!(
        text.contains("needs cut, build, test-cpu, if needs.cut.outputs.cut == 'true'"),
        "{text}"
    );
    assert!(
        text.contains("permissions: id-token: write, pages: write"),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&p.run(&["ci", "explain", "--json"], 0))).unwrap();
    assert_schema("ci-explain.json", &json);
    let workflows = json["workflows"].as_array().unwrap();
    assert_eq!(workflows.len(), 3);
    let deploy = workflows[1]["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == "deploy")
        .unwrap();
    assert_eq!(deploy["downloads"][0], "github-pages");
    assert_eq!(
        workflows[1]["triggers"][0]["next_runs"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    // Unpinned on request: major tags, and zizmor is told the policy.
    let (p, _) = repo(
        "",
        &format!("{MINIMAL}{PINNED}pin-actions = false\n{PIPELINE}"),
    );
    p.run(&["ci", "generate"], 0);
    let text =
        std::fs::read_to_string(p.path().join(".github/workflows/lockstep-release.yml")).unwrap();
    assert!(text.contains("uses: actions/deploy-pages@v5\n"), "{text}");
    eprintln!("{}", lint(&p.path()));
}

#[test]
fn the_linters_catch_what_the_generator_avoids() {
    // The checks above can fail: a script with an inline expression is a
    // zizmor finding, an unknown runner label an actionlint error.
    let (p, dir) = repo("", &format!("{MINIMAL}{PINNED}"));
    p.run(&["ci", "generate"], 0);
    let path = dir.join(".github/workflows/lockstep-pkgci.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    let injected = text.replacen(
        "lockstep pkg build --python",
        "echo \"${{ github.event.pull_request.title }}\"\n          lockstep pkg build --python",
        1,
    );
    assert_ne!(injected, text);
    std::fs::write(&path, &injected).unwrap();
    let zizmor = output(
        Command::new(linters().join("zizmor"))
            .args(["--offline", "--no-progress", "."])
            .current_dir(p.path()),
    );
    assert!(!zizmor.status.success());
    assert!(
        stdout(&zizmor).contains("template-injection"),
        "{}",
        stdout(&zizmor)
    );
    // --check sees the hand edit and shows it; it writes nothing.
    let out = p.run(&["ci", "generate", "--check"], 1);
    assert!(
        stdout(&out).contains("-          echo \"${{ github.event.pull_request.title }}\""),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("run `lockstep ci generate`"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), injected);

    std::fs::write(
        &path,
        text.replace("runs-on: ubuntu-24.04", "runs-on: gpu-box"),
    )
    .unwrap();
    let actionlint = output(
        Command::new(linters().join("actionlint"))
            .arg("-config-file")
            .arg(dir.join(".github/actionlint.yaml"))
            .arg(&path),
    );
    assert!(!actionlint.status.success());
    assert!(
        stdout(&actionlint).contains("gpu-box"),
        "{}",
        stdout(&actionlint)
    );
}

#[test]
fn generate_writes_through_a_link_and_restores_a_stale_file() {
    let (p, dir) = repo("", &format!("{MINIMAL}{PINNED}"));
    let real = p.root().join("elsewhere.yml");
    std::fs::write(&real, "stale\n").unwrap();
    std::fs::create_dir_all(dir.join(".github/workflows")).unwrap();
    let link = dir.join(".github/workflows/lockstep-pkgci.yml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    p.run(&["ci", "generate", "--check"], 1);
    p.run(&["ci", "generate"], 0);
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(&real)
        .unwrap()
        .contains("lockstep package CI"));
    p.run(&["ci", "generate", "--check"], 0);
}

#[test]
fn bad_ci_configs_are_clear_errors_and_write_nothing() {
    let cases: &[(&str, &str)] = &[
        (PINNED, "has nothing to run: lockstep.toml has no [[pkg.package]]"),
        (
            "[test.targets.gpu]\nshards = 0\n",
            "[test.targets.gpu] shards = 0 is out of range",
        ),
        (
            "[test.targets.\"g pu\"]\n",
            "test target `g pu` cannot name a CI job",
        ),
        (
            "[test.targets.gpu]\nruns-on = []\n",
            "[test.targets.gpu] runs-on is empty",
        ),
        (
            "[ci]\ntest-variant = \"debug\"\nlockstep = { path = \"x\" }\n",
            "test-variant `debug` is not a variant",
        ),
        (
            "[ci]\nlockstep = { git = \"file:///tmp/x\", rev = \"abc\" }\n",
            "is not a URL a runner can clone",
        ),
        (
            "[ci]\nlockstep = { git = \"git@github.com:o/lockstep.git\", rev = \"abc\" }\n",
            "is not a URL a runner can clone",
        ),
        (
            "[ci]\nlockstep = { git = \"https://x:ghp_SECRET@github.com/o/l\", rev = \"abc\" }\n",
            "is not a URL a runner can clone",
        ),
        (
            "[test.targets.gpu]\n[test.targets.GPU]\n",
            "differ only in case",
        ),
        (
            "[ci]\nlockstep = { git = \"https://x/y\", rev = \"--upload-pack=x\" }\n",
            "is not a git revision",
        ),
        (
            "[ci]\nlockstep = { path = \"../lockstep\" }\n",
            "is not a path inside the repository",
        ),
        (
            "[ci]\nlockstep = { path = \"nowhere\" }\n",
            "holds no Cargo.toml",
        ),
        (
            "[ci]\ntest-pythons = \"some\"\nlockstep = { path = \"x\" }\n",
            "unknown variant `some`, expected `all` or `first`",
        ),
        (
            "[pkg]\npython = [\"3.11\", \"3.12\"]\n[test]\npaths = [\"s\"]\n[test.targets.gpu]\nshards = 200\n",
            "makes 400 jobs (200 shards x 2 Pythons)",
        ),
        (
            "[ci]\nbuild-timeout-minutes = 0\n",
            "build-timeout-minutes = 0 is out of range",
        ),
        (
            "[pkg]\nmanylinux = \"2_17\"\n",
            "has no build image lockstep ci generate knows",
        ),
        ("[pkg]\nmanylinux = \"x\"\n", "not a manylinux policy"),
        (
            "[ci.release]\nschedule = \"0 5 * * *\"\n",
            "[ci.release] needs a [release] table",
        ),
        (
            "[release]\nversion-base = \"1.0.0\"\n[ci.release]\nschedule = \"0 5 * * * *\"\n",
            "[ci.release] schedule = \"0 5 * * * *\" is not a schedule GitHub runs",
        ),
        (
            "[release]\nversion-base = \"1.0.0\"\n[ci.release]\nschedule = \"*/2 * * * *\"\n",
            "is not a schedule GitHub runs",
        ),
        (
            "[release]\nversion-base = \"1.0.0\"\n[ci.release]\nchannel = \"final\"\n",
            "[ci.release] channel = \"final\"",
        ),
        (
            "[release]\nversion-base = \"1.0.0\"\nindex = \"../elsewhere\"\n[ci.release]\n",
            "[ci.release] pages deploys the release index",
        ),
        (
            "[ci.integrate]\nschedule = \"0 4 * * *\"\n",
            "[ci.integrate] needs an [integrate] table",
        ),
        (
            "[integrate]\n[ci.integrate]\nschedule = \"0 4 * * *\"\ntoken-secret = \"GITHUB_TOKEN\"\n",
            "token-secret = \"GITHUB_TOKEN\" is not a secret name",
        ),
        (
            "[ci.pins]\n\"someone/action\" = { version = \"v1\", sha = \"0123456789abcdef0123456789abcdef01234567\" }\n",
            "[ci.pins] \"someone/action\" is not an action lockstep's workflows use",
        ),
        (
            "[ci.pins]\n\"actions/checkout\" = { version = \"v6.2.0\", sha = \"main\" }\n",
            "sha = \"main\" is not a full commit",
        ),
    ];
    for (extra, expected) in cases {
        let config = if extra.contains("pkg.package") || *extra == PINNED {
            extra.to_string()
        } else {
            let pinned = if extra.contains("[ci]") { "" } else { PINNED };
            format!("{MINIMAL}{extra}{pinned}")
        };
        let (p, dir) = repo("", &config);
        let out = p.run(&["ci", "generate"], 2);
        assert!(
            stderr(&out).contains(expected),
            "{expected}:\n{}",
            stderr(&out)
        );
        assert!(
            !dir.join(".github").exists(),
            "{expected}: something was written"
        );
    }

    // GitHub runs at most 256 jobs of a matrix: 257 build cells are refused.
    let pythons: Vec<String> = (0..257).map(|i| format!("\"3.{i}\"")).collect();
    let (p, dir) = repo(
        "",
        &format!(
            "{MINIMAL}[pkg]\npython = [{}]\n{PINNED}",
            pythons.join(", ")
        ),
    );
    let out = p.run(&["ci", "generate"], 2);
    assert!(
        stderr(&out).contains("make 257 build jobs"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.join(".github").exists());

    // No [ci] lockstep, outside lockstep's repository: this binary's own
    // origin when the build knew it, else an error asking for the key.
    let (p, dir) = repo("", MINIMAL);
    match option_env!("LOCKSTEP_BUILT_FROM_GIT") {
        Some(url) => {
            let out = p.run(&["ci", "generate"], 0);
            assert!(
                stderr(&out).contains("[ci] lockstep is unset"),
                "{}",
                stderr(&out)
            );
            assert!(
                std::fs::read_to_string(dir.join(".github/workflows/lockstep-pkgci.yml"))
                    .unwrap()
                    .contains(url)
            );
        }
        None => {
            let out = p.run(&["ci", "generate"], 2);
            assert!(
                stderr(&out).contains("set [ci] lockstep in lockstep.toml: { version = "),
                "{}",
                stderr(&out)
            );
            assert!(
                stderr(&out).contains("was not found on its index"),
                "{}",
                stderr(&out)
            );
        }
    }
}

#[test]
fn this_repositorys_workflows_are_generated_and_current() {
    // .ci/run checks this too; here it fails with the diff in the test log.
    let top = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockstep"));
    cmd.args(["ci", "generate", "--check"]).current_dir(&top);
    isolate(
        &mut cmd,
        &top.join("target/ci-check-home"),
        &top.join("target/ci-check-cache"),
    );
    expect(&mut cmd, 0);
    let text = lint(&top);
    eprintln!("{text}");
}

/// A project that only tests (no packages): test jobs that install the
/// IREE toolchain from PyPI, no build job; with nothing at all to run, or
/// a release with nothing to release, a clear error and nothing written.
#[test]
fn tests_only_gives_test_jobs_with_the_toolchain_from_pypi() {
    let config =
        format!("[toolchain]\niree = \"3.13.0\"\n\n[test]\npaths = [\"suites\"]\n\n{PINNED}");
    let (p, dir) = repo("", &config);
    std::fs::create_dir_all(dir.join("suites")).unwrap();
    let out = p.run(&["ci", "generate"], 0);
    assert!(stdout(&out).contains("wrote: "), "{}", stdout(&out));
    assert!(stderr(&out).contains("no build job"), "{}", stderr(&out));
    lint(&p.path());
    let workflow = parse(&dir.join(".github/workflows/lockstep-pkgci.yml"));
    let jobs = check_structure(&workflow, &BTreeMap::from([("cpu", 1)]));
    assert_eq!(
        jobs.keys().map(String::as_str).collect::<Vec<_>>(),
        ["summary", "test-cpu"]
    );
    let names = step_names(&jobs["test-cpu"]);
    assert!(
        names.contains(&"Install the IREE toolchain from PyPI".to_string()),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("wheelhouse")), "{names:?}");
    p.run(&["ci", "generate", "--check"], 0);

    for (config, expected) in [
        (PINNED.to_string(), "has nothing to run"),
        (
            format!("{config}[release]\nversion-base = \"1.0.0\"\n[ci.release]\nschedule = \"0 5 * * *\"\n"),
            "[ci.release] publishes packages",
        ),
    ] {
        let (p, dir) = repo("", &config);
        if config.contains("[test]") {
            std::fs::create_dir_all(dir.join("suites")).unwrap();
        }
        let out = p.run(&["ci", "generate"], 2);
        assert!(stderr(&out).contains(expected), "{expected}:\n{}", stderr(&out));
        assert!(!dir.join(".github").exists(), "{expected}: something was written");
    }
}

#[test]
fn only_pkg_without_tests_builds_and_says_why_there_is_no_test_job() {
    let (p, dir) = repo("", &format!("{MINIMAL}{PINNED}"));
    let out = p.run(&["ci", "generate"], 0);
    assert!(
        stderr(&out).contains("no test jobs: lockstep.toml names no tests"),
        "{}",
        stderr(&out)
    );
    lint(&p.path());
    let workflow = parse(&dir.join(".github/workflows/lockstep-pkgci.yml"));
    let jobs: Vec<String> = match &workflow["jobs"] {
        Value::Mapping(m) => m.keys().map(str_of).collect(),
        other => panic!("jobs: {other:?}"),
    };
    assert_eq!(jobs, ["build", "summary"]);
}

/// Every file of the project `p` outside git's directories and the
/// commands' home, cache and TMPDIR.
fn files_under(p: &Project) -> Vec<PathBuf> {
    let own = [p.home(), p.cache(), p.root().join("tmp")];
    walk(p.root())
        .into_iter()
        .filter(|f| !f.components().any(|c| c.as_os_str() == ".git"))
        .filter(|f| !own.iter().any(|d| f.starts_with(d)))
        .collect()
}

#[test]
fn ci_out_leaving_the_repository_is_refused_and_nothing_is_written() {
    let p = Project::new();
    // The repository two levels down, so `../..` stays in the test's directory.
    let top = p.path().join("a/b");
    std::fs::create_dir_all(&top).unwrap();
    git(&top, &["init", "-q"]);
    let absolute = p.root().join("abs-escape");
    for out in [
        "../../escape",
        "..",
        ".",
        ".github/../../x",
        absolute.to_str().unwrap(),
    ] {
        write(
            &top.join("lockstep.toml"),
            &format!("{MINIMAL}{PINNED}out = {out:?}\n"),
        );
        let before = files_under(&p);
        for args in [&["ci", "generate"][..], &["ci", "generate", "--check"]] {
            let out_run = expect(&mut p.cmd_in(&top, args), 2);
            let err = stderr(&out_run);
            assert!(err.contains("[ci] out"), "{out}: {err}");
            assert!(err.contains("nothing was written"), "{out}: {err}");
            assert_eq!(files_under(&p), before, "{out}: something was written");
        }
    }
    // A directory inside the repository is fine, the linters' files beside it.
    write(
        &top.join("lockstep.toml"),
        &format!("{MINIMAL}{PINNED}out = \"ci/./workflows\"\n"),
    );
    expect(&mut p.cmd_in(&top, &["ci", "generate"]), 0);
    assert!(top.join("ci/workflows/lockstep-pkgci.yml").is_file());
    assert!(top.join("ci/actionlint.yaml").is_file());
    assert!(top.join("ci/zizmor.yml").is_file());
}

#[test]
fn out_on_the_command_line_may_leave_the_repository_without_the_linters_files() {
    let (p, dir) = repo("", &format!("{MINIMAL}{PINNED}"));
    let elsewhere = p.root().join("preview/workflows");
    let out = expect(
        &mut p.cmd(&["ci", "generate", "--out", elsewhere.to_str().unwrap()]),
        0,
    );
    assert!(elsewhere.join("lockstep-pkgci.yml").is_file());
    let preview = p.root().join("preview");
    assert!(!preview.join("actionlint.yaml").exists());
    assert!(!preview.join("zizmor.yml").exists());
    assert!(
        stderr(&out).contains("actionlint.yaml and zizmor.yml are left out"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.join(".github").exists());
    // Inside the repository they go beside it, as before.
    expect(&mut p.cmd(&["ci", "generate", "--out", "gen/workflows"]), 0);
    assert!(dir.join("gen/workflows/lockstep-pkgci.yml").is_file());
    assert!(dir.join("gen/actionlint.yaml").is_file());
}

/// `[ci.integrate] submodules` chooses what the integrate job fetches; by
/// default the integrated submodule (blobless), the followers' and the
/// smoke's (depth 1).
#[test]
fn the_integrate_workflow_fetches_only_the_submodules_it_needs() {
    let integrate = "[integrate]\nsubmodule = \"third_party/llvm-project\"\nsmoke-submodules = [\"third_party/benchmark\"]\n\n[[integrate.follow]]\nname = \"stablehlo\"\nsubmodule = \"third_party/stablehlo\"\nupstream-pin-file = \"build_tools/llvm_version.txt\"\n\n[ci.integrate]\nschedule = \"30 4 * * 1-5\"\n";
    let script = |extra: &str| {
        let (p, dir) = repo("", &format!("{MINIMAL}{PINNED}{integrate}{extra}"));
        p.run(&["ci", "generate"], 0);
        let workflow = parse(&dir.join(".github/workflows/lockstep-integrate.yml"));
        workflow["jobs"]["integrate"]["steps"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|s| s["name"].as_str() == Some("Check out submodules"))
            .map(|s| str_of(&s["run"]))
            .unwrap_or_default()
    };
    assert_eq!(
        script(""),
        "git submodule update --init --depth 1 -- third_party/benchmark\n\
         git submodule update --init --filter=blob:none -- third_party/llvm-project\n\
         git submodule update --init --depth 1 -- third_party/stablehlo\n"
    );
    assert_eq!(
        script("submodules = { \"third_party/llvm-project\" = \"full\", \"third_party/stablehlo\" = 50 }\n"),
        "git submodule update --init -- third_party/llvm-project\n\
         git submodule update --init --depth 50 -- third_party/stablehlo\n"
    );
    assert_eq!(script("submodules = {}\n"), "");

    // Bad values: exit 2 naming the key and the value; nothing written.
    for (extra, says) in [
        (
            "submodules = { \"x\" = 0 }\n",
            "`x` = 0 is not a history to fetch",
        ),
        (
            "submodules = { \"x\" = \"shallow\" }\n",
            "`x` = \"shallow\" is not a history",
        ),
        (
            "submodules = { \"../x\" = 1 }\n",
            "is not a path inside the repository",
        ),
        (
            "submodules = { \"/abs\" = 1 }\n",
            "is not a path inside the repository",
        ),
        (
            "submodules = { \"a b\" = 1 }\n",
            "is not a submodule path this workflow can name",
        ),
        (
            "submodules = { \"a;rm -rf /\" = 1 }\n",
            "is not a submodule path this workflow can name",
        ),
    ] {
        let (p, dir) = repo("", &format!("{MINIMAL}{PINNED}{integrate}{extra}"));
        let out = p.run(&["ci", "generate"], 2);
        let err = stderr(&out);
        assert!(
            err.contains("[ci.integrate] submodules") && err.contains(says),
            "{extra}: {err}"
        );
        assert!(!dir.join(".github/workflows").exists(), "{extra}");
    }
    // The smoke's submodules are checked where [integrate] is read.
    let (p, _) = repo(
        "",
        &format!("{MINIMAL}{PINNED}[integrate]\nsmoke-submodules = [\"../up\"]\n\n[ci.integrate]\nschedule = \"30 4 * * 1-5\"\n"),
    );
    let err = stderr(&p.run(&["ci", "generate"], 2));
    assert!(err.contains("smoke-submodules"), "{err}");
}

/// Unset [ci] lockstep: the running version's release from its index,
/// every wheel pinned by hash; set as `{ version, sha256 }`: the same,
/// with no lookup; bad values are errors naming them.
#[test]
fn runners_install_lockstep_from_its_release_pinned_by_hash() {
    let version = env!("CARGO_PKG_VERSION");
    let hash = "ab".repeat(32);
    let other = "cd".repeat(32);
    let page: &'static str = Box::leak(
        format!(
            r#"{{"meta": {{"api-version": "1.0"}}, "name": "lockstep-cli", "files": [
                {{"filename": "lockstep_cli-{version}-py3-none-manylinux_2_28_x86_64.whl", "url": "x", "hashes": {{"sha256": "{hash}"}}}},
                {{"filename": "lockstep_cli-0.0.1-py3-none-manylinux_2_28_x86_64.whl", "url": "y", "hashes": {{"sha256": "{other}"}}}}
            ]}}"#
        )
        .into_boxed_str(),
    );
    let (port, served) = serve(page, 4);
    let index = format!("http://127.0.0.1:{port}/simple");
    let (p, dir) = repo("", MINIMAL);
    std::fs::create_dir_all(dir.join("suites")).unwrap();
    let out = expect(
        p.cmd(&["ci", "generate"]).env("LOCKSTEP_CLI_INDEX", &index),
        0,
    );
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(
        stderr(&out).contains(&format!(
            "its release lockstep-cli=={version} (pinned by hash"
        )),
        "{}",
        stderr(&out)
    );
    lint(&p.path());
    let workflow = parse(&dir.join(".github/workflows/lockstep-pkgci.yml"));
    let jobs = check_structure(&workflow, &BTreeMap::from([("cpu", 1)]));
    for (id, job) in &jobs {
        if id == "summary" {
            continue;
        }
        let install = job["steps"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|s| s["name"].as_str() == Some("Install lockstep"))
            .unwrap_or_else(|| panic!("{id}: no Install lockstep step"));
        assert_eq!(
            str_of(&install["env"]["LOCKSTEP_REQUIREMENT"]),
            format!("lockstep-cli=={version} --hash=sha256:{hash}")
        );
        assert_eq!(str_of(&install["env"]["LOCKSTEP_INDEX"]), index);
        assert!(str_of(&install["run"]).contains("--require-hashes"));
        // No Rust, no cargo: a wheel.
        let names = step_names(job);
        assert!(
            !names
                .iter()
                .any(|n| n.contains("Rust") || n == "Restore lockstep"),
            "{id}: {names:?}"
        );
    }

    // Pinned in lockstep.toml: the same step, from PyPI, no lookup.
    let config = format!(
        "{MINIMAL}[ci]\nlockstep = {{ version = \"{version}\", sha256 = [\"{hash}\", \"{other}\"] }}\n"
    );
    let (p, dir) = repo("", &config);
    expect(
        p.cmd(&["ci", "generate"]).env("LOCKSTEP_CLI_INDEX", &index),
        0,
    );
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 1);
    lint(&p.path());
    let text = std::fs::read_to_string(dir.join(".github/workflows/lockstep-pkgci.yml")).unwrap();
    assert!(
        text.contains(&format!(
            "lockstep-cli=={version} --hash=sha256:{hash} --hash=sha256:{other}"
        )),
        "{text}"
    );
    assert!(!text.contains("LOCKSTEP_INDEX: "), "{text}");

    for (value, expected) in [
        (format!("{{ version = \"{version}\", sha256 = \"xyz\" }}"), "sha256 must be the 64-hex sha256"),
        (format!("{{ version = \"; rm -rf /\", sha256 = \"{hash}\" }}"), "is not a version"),
        (
            format!("{{ version = \"{version}\", sha256 = \"{hash}\", index = \"http://example.com/simple\" }}"),
            "is not an index URL a runner can use",
        ),
    ] {
        let (p, dir) = repo("", &format!("{MINIMAL}[ci]\nlockstep = {value}\n"));
        let out = p.run(&["ci", "generate"], 2);
        assert!(stderr(&out).contains(expected), "{expected}: {}", stderr(&out));
        assert!(!dir.join(".github").exists());
    }
}

#[test]
fn hosted_on_github_releases_the_publish_job_syncs_a_missed_cache_publishes_every_python_and_prunes(
) {
    let config = format!(
        "{FULL}[release]\nname = \"demo\"\nversion-base = \"0.3.0\"\nhosting = \"github-releases\"\nkeep = {{ snapshots = 30 }}\nbranches = [\"main\", \"release/0.2\"]\n\n[ci.release]\nschedule = \"0 5 * * *\"\n"
    );
    let (p, dir) = repo("", &config);
    std::fs::create_dir_all(dir.join("suites")).unwrap();
    p.run(&["ci", "generate"], 0);
    eprintln!("{}", lint(&p.path()));
    let release = parse(&dir.join(".github/workflows/lockstep-release.yml"));
    let publish = &release["jobs"]["publish"];
    assert_eq!(permissions(publish), vec!["contents: write"]);
    let steps = publish["steps"].as_sequence().unwrap();
    let named = |name: &str| {
        steps
            .iter()
            .find(|s| s["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("no step {name}: {:?}", step_names(publish)))
    };
    // Every Python, set up at once; one publish of every wheelhouse.
    assert_eq!(
        str_of(&named("Set up Python")["with"]["python-version"]),
        "3.11\n3.12\n"
    );
    assert_eq!(
        str_of(&named("Publish")["run"]),
        "lockstep release publish wheelhouse-py3.11 wheelhouse-py3.12 --tag \"$TAG\" --github-release\n"
    );
    let sync = named("Rebuild the release store from the GitHub Releases");
    assert_eq!(
        str_of(&sync["if"]),
        "steps.store.outputs.cache-matched-key == ''"
    );
    assert_eq!(
        str_of(&sync["run"]),
        "lockstep release sync --from-github\n"
    );
    let names = step_names(publish);
    let at = |n: &str| names.iter().position(|s| s == n).unwrap();
    assert!(
        at("Restore the release store") < at("Rebuild the release store from the GitHub Releases")
    );
    assert!(at("Rebuild the release store from the GitHub Releases") < at("Publish"));
    let fetch = str_of(&named("Fetch the release branches")["run"]);
    assert!(
        fetch.contains("origin '+refs/heads/release/0.2:refs/remotes/origin/release/0.2'"),
        "{fetch}"
    );
    let prune = named("Prune old snapshots ([release] keep)");
    assert_eq!(str_of(&prune["run"]), "lockstep release prune\n");
    assert_eq!(str_of(&prune["env"]["GITHUB_TOKEN"]), "${{ github.token }}");
    assert!(at("Publish") < at("Fetch the release branches"));
    assert!(at("Fetch the release branches") < at("Prune old snapshots ([release] keep)"));
    // The promote job rebuilds a missed store from the Releases too.
    let promote = &release["jobs"]["promote"];
    assert!(step_names(promote)
        .iter()
        .any(|n| n == "Rebuild the release store from the GitHub Releases"));

    // A branch name the script would have to quote is refused.
    let (p, _) = repo("", &config.replace("\"release/0.2\"", "\"x'; rm -rf /\""));
    let err = stderr(&p.run(&["ci", "generate"], 2));
    assert!(
        err.contains("is not a branch name the release workflow fetches"),
        "{err}"
    );
}

/// The `run` (or `with.key`) text of the step named `name` of `job`.
fn step_text(job: &Value, name: &str, key: &str) -> String {
    let Value::Sequence(steps) = &job["steps"] else {
        panic!("no steps: {job:?}");
    };
    let step = steps
        .iter()
        .find(|s| str_of(&s["name"]) == name)
        .unwrap_or_else(|| panic!("no step {name}"));
    match key {
        "run" => str_of(&step["run"]),
        other => str_of(&step["with"][other]),
    }
}

#[test]
fn pytest_suites_run_in_the_first_targets_jobs_against_the_built_wheels() {
    let config = format!(
        "{MINIMAL}\n[test]\ndefault-targets = [\"cpu\", \"cpu-sync\"]\npaths = [\"suites\"]\n\n[[test.pytest]]\nname = \"unit\"\n\n{PINNED}"
    );
    let (p, dir) = repo("", &config);
    std::fs::create_dir_all(dir.join("suites")).unwrap();
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    p.run(&["ci", "generate"], 0);
    lint(&p.path());
    let workflow = parse(&dir.join(".github/workflows/lockstep-pkgci.yml"));
    let jobs = check_structure(&workflow, &BTreeMap::from([("cpu", 1), ("cpu-sync", 1)]));
    let first = step_text(&jobs["test-cpu"], "Run the tests", "run");
    assert!(
        first.contains("--wheels \"$LOCKSTEP_IREE_MANIFEST\""),
        "{first}"
    );
    let other = step_text(&jobs["test-cpu-sync"], "Run the tests", "run");
    assert!(
        other.contains("-m \"not pytest\"") && !other.contains("--wheels"),
        "{other}"
    );
    // The downloads area: a key of its own, from the suite files.
    for job in ["test-cpu", "test-cpu-sync"] {
        let key = step_text(&jobs[job], "Restore the downloads area", "key");
        assert_eq!(
            key,
            "lockstep-downloads-${{ hashFiles('suites/**/*.suite.toml', 'suites/**/run_module_io.json') }}"
        );
        let path = step_text(&jobs[job], "Restore the lockstep cache", "path");
        assert!(
            path.contains("!${{ env.LOCKSTEP_CACHE }}/downloads"),
            "{path}"
        );
    }

    // pytest suites alone: test jobs that install no IREE toolchain.
    let config = format!("{MINIMAL}\n[[test.pytest]]\nname = \"unit\"\n\n{PINNED}");
    let (p, dir) = repo("", &config);
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    p.run(&["ci", "generate"], 0);
    lint(&p.path());
    let workflow = parse(&dir.join(".github/workflows/lockstep-pkgci.yml"));
    let job = &workflow["jobs"]["test-cpu"];
    let names = step_names(job);
    assert!(!names.iter().any(|n| n.contains("toolchain")), "{names:?}");
    assert_eq!(seq(&job["needs"]), ["build"]);
    let run = step_text(job, "Run the tests", "run");
    assert!(
        run.contains("--wheels \"$LOCKSTEP_IREE_MANIFEST\""),
        "{run}"
    );

    // pytest suites without packages: nothing to run them against in CI.
    let config = format!("[[test.pytest]]\nname = \"unit\"\n\n{PINNED}");
    let (p, dir) = repo("", &config);
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    let err = stderr(&p.run(&["ci", "generate"], 2));
    assert!(
        err.contains("[[test.pytest]] suites run against the wheels the build job makes"),
        "{err}"
    );
    assert!(!dir.join(".github").exists());

    // A test path a hashFiles() pattern cannot carry is refused.
    let config = format!("[test]\npaths = [\"s[1]\"]\n\n{PINNED}");
    let (p, dir) = repo("", &config);
    std::fs::create_dir_all(dir.join("s[1]")).unwrap();
    let err = stderr(&p.run(&["ci", "generate"], 2));
    assert!(
        err.contains("which a workflow's hashFiles() pattern cannot carry"),
        "{err}"
    );
}
