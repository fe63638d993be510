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

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

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
    let base = config["release"]["version-base"].as_str().unwrap().to_string();
    assert_eq!(base, cargo_version(), "lockstep.toml [release] version-base");

    let p = Project::new();
    let clone = p.root().join("lockstep");
    let out = Command::new("git")
        .args(["clone", "--quiet", "--no-hardlinks"])
        .arg(repository())
        .arg(&clone)
        .output()
        .expect("git clone");
    assert!(out.status.success(), "{}", text(&out.stderr));

    let version = format!("{base}.dev1");
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lockstep-cli-wheel");
    let build_env: [(&str, &Path); 3] = [
        ("CARGO_TARGET_DIR", &target),
        ("MATURIN_PEP517_ARGS", Path::new("--profile dev")),
        ("CARGO_PROFILE_DEV_DEBUG", Path::new("false")),
    ];
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
        .envs(build_env),
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

    // Published: installed in a fresh venv, `lockstep --version` run there
    // ([release] smoke), then added to the store.
    let published = expect(
        p.cmd_in(&clone, &["release", "publish", "--json"])
            .arg(&wheelhouse),
        0,
    );
    let doc: serde_json::Value = serde_json::from_slice(&published.stdout).expect("JSON");
    assert_eq!(doc["version"], version, "{doc}");
    let simple = clone.join("release/index/simple");
    assert!(simple.join("lockstep-cli/index.html").is_file());

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
    assert_eq!(text(&ran.stdout).trim(), format!("lockstep {}", cargo_version()));
}
