//! lockstep released like the tools its users know: in a clone of this
//! repository, `lockstep pkg build --package lockstep-cli` builds the
//! `lockstep` binary into a wheel (maturin's bin bindings), `lockstep
//! release publish` installs it in a fresh venv, runs it and adds it to the
//! release store (lockstep releases itself with itself), and `uv tool
//! install lockstep-cli` from that store's index gives a `lockstep` that
//! runs.
//!
//! The wheel's binary is built with the dev profile, without debug info,
//! in a target directory of its own (kept between runs): the release
//! profile would make this test a ten-minute build.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// The repository this test belongs to.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workspace's `version` in Cargo.toml.
fn cargo_version() -> String {
    let text = std::fs::read_to_string(repository().join("Cargo.toml")).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    table["workspace"]["package"]["version"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn lockstep_cli_builds_publishes_and_installs_with_uv_tool() {
    // lockstep.toml's [release] version-base is the crate's version.
    let config: toml::Table =
        toml::from_str(&std::fs::read_to_string(repository().join("lockstep.toml")).unwrap())
            .unwrap();
    let base = config["release"]["version-base"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        base,
        cargo_version(),
        "lockstep.toml [release] version-base"
    );

    let p = Project::new();
    let clone = p.root().join("lockstep");
    let out = Command::new("git")
        .args(["clone", "--quiet", "--no-hardlinks"])
        .arg(repository())
        .arg(&clone)
        .output()
        .expect("git clone");
    assert!(out.status.success(), "{}", text(&out.stderr));

    // The crate's own version: what `ci generate` looks up below.
    let version = base.clone();
    let build_env = wheel_build_env();
    let wheelhouse = p.root().join("wheelhouse");
    let built = expect(
        p.cmd_in(
            &clone,
            &[
                "pkg",
                "build",
                "--package",
                "lockstep-cli",
                "--version",
                &version,
                "--out",
            ],
        )
        .arg(&wheelhouse)
        .envs(build_env.clone()),
        0,
    );
    let wheels: Vec<String> = std::fs::read_dir(&wheelhouse)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".whl"))
        .collect();
    assert_eq!(
        wheels,
        [format!("lockstep_cli-{version}-py3-none-linux_x86_64.whl")],
        "{}",
        stderr(&built)
    );

    // A release is the whole set (lockstep-ci-probe too); lockstep-cli's
    // wheel comes from the wheel cache. Published: installed in a fresh
    // venv, `lockstep --version` run there ([release] smoke), then added
    // to the store.
    let set = p.root().join("set");
    let built = expect(
        p.cmd_in(&clone, &["pkg", "build", "--version", &version, "--out"])
            .arg(&set)
            .envs(build_env.clone()),
        0,
    );
    assert!(stderr(&built).contains("(cached)"), "{}", stderr(&built));
    // With its GitHub Release (the loopback GitHub): the wheels, the
    // binary itself out of the wheel, and SHA256SUMS over all of them.
    let tag = format!("v{version}");
    git(&clone, &["tag", &tag]);
    let github = lockstep_testkit::github::FakeGithub::start("o/lockstep", "ghp_test_token")
        .expect("loopback GitHub");
    let published = expect(
        p.cmd_in(
            &clone,
            &[
                "release",
                "publish",
                "--json",
                "--tag",
                &tag,
                "--github-release",
            ],
        )
        .arg(&set)
        .env("GITHUB_API_URL", github.url())
        .env("GITHUB_REPOSITORY", "o/lockstep")
        .env("GITHUB_TOKEN", "ghp_test_token"),
        0,
    );
    let doc: serde_json::Value = serde_json::from_slice(&published.stdout).expect("JSON");
    assert_eq!(doc["version"], version, "{doc}");
    let releases = github.releases();
    let release = releases.iter().find(|r| r.tag == tag).expect("the release");
    let program = format!("lockstep-{version}-linux_x86_64");
    let binary = release
        .assets
        .get(&program)
        .unwrap_or_else(|| panic!("no {program} among {:?}", release.assets.keys()));
    let sums = String::from_utf8(release.assets["SHA256SUMS"].clone()).unwrap();
    let standalone = p.root().join(&program);
    std::fs::write(&standalone, binary).unwrap();
    assert!(
        sums.contains(&format!("{}  {program}\n", sha256_of(&standalone))),
        "{sums}"
    );
    assert!(sums.lines().any(|l| l.ends_with(".whl")), "{sums}");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&standalone, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ran = Command::new(&standalone).arg("--version").output().unwrap();
    assert_eq!(text(&ran.stdout).trim(), format!("lockstep {version}"));
    let simple = clone.join("release/index/simple");
    assert!(simple.join("lockstep-cli/index.html").is_file());

    // A workflow generated without [ci] lockstep installs this very
    // release, pinned by the hash `ci generate` read from the index; its
    // install step, run as a runner would, gives a `lockstep` that runs.
    let served = Served::start_in(&p, &clone);
    let project = p.root().join("project");
    write(
        &project.join("lockstep.toml"),
        "[test]\npaths = [\"suites\"]\n",
    );
    write(&project.join("suites/.keep"), "");
    let git_init = Command::new("git")
        .arg("-C")
        .arg(&project)
        .args(["init", "-q"])
        .output()
        .unwrap();
    assert!(git_init.status.success());
    expect(
        p.cmd_in(&project, &["ci", "generate"])
            .env("LOCKSTEP_CLI_INDEX", served.url()),
        0,
    );
    let workflow: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(project.join(".github/workflows/lockstep-pkgci.yml")).unwrap(),
    )
    .unwrap();
    let install = workflow["jobs"]["test-cpu"]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str() == Some("Install lockstep"))
        .expect("an Install lockstep step")
        .clone();
    let runner_temp = p.root().join("runner-temp");
    std::fs::create_dir_all(&runner_temp).unwrap();
    let github_path = p.root().join("github-path");
    let mut step = Command::new("bash");
    step.arg("-euo")
        .arg("pipefail")
        .arg("-c")
        .arg(install["run"].as_str().unwrap());
    for (key, value) in install["env"].as_mapping().unwrap() {
        step.env(key.as_str().unwrap(), value.as_str().unwrap());
    }
    let ran = step
        .env("RUNNER_TEMP", &runner_temp)
        .env("GITHUB_PATH", &github_path)
        .env("PIP_CACHE_DIR", p.root().join("pip-cache"))
        .env("PIP_CONFIG_FILE", "/dev/null")
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}{}",
        text(&ran.stdout),
        text(&ran.stderr)
    );
    let on_path = std::fs::read_to_string(&github_path).unwrap();
    let installed = Command::new(Path::new(on_path.trim()).join("lockstep"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        text(&installed.stdout).trim(),
        format!("lockstep {version}")
    );
    drop(served);

    // `uv tool install` from that index: a `lockstep` that runs.
    let tools = p.root().join("uv-tools");
    let bin = p.root().join("uv-bin");
    let index = format!("file://{}", simple.display());
    let installed = Command::new(shared_uv())
        .args(["tool", "install", "--no-config", "--index-url", &index])
        .arg(format!("lockstep-cli=={version}"))
        .env("UV_TOOL_DIR", &tools)
        .env("UV_TOOL_BIN_DIR", &bin)
        .env("UV_CACHE_DIR", p.root().join("uv-cache"))
        .env_remove("UV_INDEX_URL")
        .env_remove("UV_EXTRA_INDEX_URL")
        .output()
        .expect("uv tool install");
    assert!(
        installed.status.success(),
        "{}{}",
        text(&installed.stdout),
        text(&installed.stderr)
    );
    let ran = Command::new(bin.join("lockstep"))
        .arg("--version")
        .output()
        .expect("the installed lockstep");
    assert!(ran.status.success());
    assert_eq!(
        text(&ran.stdout).trim(),
        format!("lockstep {}", cargo_version())
    );
}
