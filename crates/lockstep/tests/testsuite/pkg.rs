//! `lockstep pkg build` / `pkg venv` with real uv, real setuptools builds of
//! a pure-Python package and a C extension, and the manifests read back by
//! uv and pip; the bad inputs of docs/pkg.md.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// A project holding the fixture packages at `version`, committed.
fn fixture(version: &str, extra: &str) -> Project {
    let p = Project::new();
    lockstep_sandbox::packages::create(&p.path(), version, extra).expect("fixture project");
    p
}

fn commit(p: &Project, message: &str) {
    let repo = lockstep_git::Repo::new(p.path());
    lockstep_sandbox::packages::commit_all(&repo, message).expect("commit");
}

fn manifest(p: &Project, name: &str) -> toml::Table {
    toml::from_str(&p.read(name)).expect("manifest is TOML")
}

/// The wheels of a manifest: (name, path, size, sha256).
fn wheels_of(lock: &toml::Table) -> Vec<(String, String, i64, String)> {
    let mut out = Vec::new();
    for package in lock["packages"].as_array().expect("packages") {
        for w in package["wheels"].as_array().expect("wheels") {
            out.push((
                w["name"].as_str().expect("name").to_string(),
                w["path"].as_str().expect("path").to_string(),
                w["size"].as_integer().expect("size"),
                w["hashes"]["sha256"].as_str().expect("sha256").to_string(),
            ));
        }
    }
    out.sort();
    out
}

fn python_in(venv: &Path, code: &str) -> String {
    let out = output(Command::new(venv.join("bin/python")).args(["-c", code]));
    assert!(out.status.success(), "python -c {code} failed");
    stdout(&out).trim().to_string()
}

fn zip_names(wheel: &Path) -> String {
    let out = output(
        Command::new("python3")
            .args(["-m", "zipfile", "-l"])
            .arg(wheel),
    );
    stdout(&out)
}

#[test]
fn build_writes_wheels_and_manifests_that_install_exactly() {
    let p = fixture("2.0.0", "");
    // Untracked files never reach a wheel; a dirty tree builds with a warning.
    p.write("pure/src/demo_pure/untracked.py", "SECRET = 1\n");
    p.write(
        "cext/setup.py",
        "raise SystemExit('the working tree is never built')\n",
    );
    let out = p.run(&["pkg", "build", "-j", "2", "--version", "2.1.0rc1"], 0);
    let err = stderr(&out);
    assert!(err.contains("uncommitted changes"), "{err}");
    let house = p.path().join("wheelhouse");
    assert!(stdout(&out).contains("pylock.toml"), "{}", stdout(&out));

    let release = manifest(&p, "wheelhouse/pylock.toml");
    let asserts = manifest(&p, "wheelhouse/pylock.asserts.toml");
    assert_eq!(release["lock-version"].as_str(), Some("1.0"));
    assert_eq!(release["tool"]["lockstep"]["dirty"].as_bool(), Some(true));
    let wheels = wheels_of(&release);
    assert_eq!(wheels.len(), 2, "{wheels:?}");
    for (name, path, size, sha) in &wheels {
        assert_eq!(name, path, "release wheels sit beside the manifest");
        let file = house.join(path);
        assert_eq!(std::fs::metadata(&file).expect("wheel").len() as i64, *size);
        assert_eq!(&sha256_of(&file), sha);
        assert!(name.contains("2.1.0rc1"), "{name}");
    }
    let asserts_wheels = wheels_of(&asserts);
    assert_eq!(asserts_wheels.len(), 1);
    assert!(
        asserts_wheels[0].1.starts_with("asserts/"),
        "{asserts_wheels:?}"
    );
    let pure = house.join(
        &wheels
            .iter()
            .find(|w| w.0.starts_with("demo_pure"))
            .expect("pure")
            .1,
    );
    assert!(pure.to_string_lossy().ends_with("py3-none-any.whl"));
    assert!(!zip_names(&pure).contains("untracked.py"));

    // Per wheel: its cell, command and seconds; per package: the revision.
    let head = git(&p.path(), &["rev-parse", "HEAD"]).trim().to_string();
    let cext = release["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"].as_str() == Some("demo-cext"))
        .expect("demo-cext");
    let info = &cext["tool"]["lockstep"];
    assert_eq!(info["source-revision"].as_str(), Some(head.as_str()));
    let cell = &info["wheels"][0];
    assert_eq!(
        cell["cells"][0].as_str(),
        Some("python=3.11 variant=release")
    );
    assert!(cell["command"]
        .as_array()
        .is_some_and(|c| c.iter().any(|w| w.as_str() == Some("build"))));
    assert!(cell["seconds"].as_float().is_some());

    // The user's tree: nothing built in it.
    assert!(!p.path().join("cext/build").exists());
    assert!(!p.path().join("pure/build").exists());

    // pkg venv installs exactly the manifest, per variant.
    let venv = p.root().join("venv");
    let out = p.run(
        &[
            "pkg",
            "venv",
            venv.to_str().expect("utf-8"),
            "--manifest",
            "wheelhouse/pylock.toml",
        ],
        0,
    );
    assert!(
        stdout(&out).contains("demo-cext==2.1.0rc1"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        python_in(&venv, "import demo_cext; print(demo_cext.asserts())"),
        "False"
    );
    let script = output(&mut Command::new(venv.join("bin/demo-pure")));
    assert_eq!(stdout(&script).trim(), "demo-pure 2.1.0rc1");
    p.run(
        &[
            "pkg",
            "venv",
            venv.to_str().expect("utf-8"),
            "--manifest",
            "wheelhouse/pylock.toml",
            "--variant",
            "asserts",
        ],
        0,
    );
    assert_eq!(
        python_in(&venv, "import demo_cext; print(demo_cext.asserts())"),
        "True"
    );
    assert!(venv.join(".lockstep-venv.json").is_file());
    let leftovers: Vec<_> = std::fs::read_dir(p.root())
        .expect("list")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".venv."))
        .collect();
    assert!(leftovers.is_empty(), "staging dirs left: {leftovers:?}");

    // A rebuild of the same commit comes from the wheel cache.
    let out = p.run(
        &[
            "pkg",
            "build",
            "--version",
            "2.1.0rc1",
            "--variant",
            "release",
        ],
        0,
    );
    assert!(stderr(&out).contains("(cached)"), "{}", stderr(&out));
}

#[test]
fn manifests_install_with_uv_and_pip_directly() {
    let p = fixture("3.0.0", "");
    p.run(&["pkg", "build", "--variant", "release"], 0);
    let uv = uv_argv();
    let venv = p.root().join("uvenv");
    run_ok(
        Command::new(&uv[0])
            .args(&uv[1..])
            .args(["venv", "-q"])
            .arg(&venv),
    );
    run_ok(
        Command::new(&uv[0])
            .args(&uv[1..])
            .args(["pip", "sync", "--offline", "--python"])
            .arg(venv.join("bin/python"))
            .arg(p.path().join("wheelhouse/pylock.toml")),
    );
    assert_eq!(
        python_in(&venv, "import demo_cext; print(demo_cext.asserts())"),
        "False"
    );

    // pip reads PEP 751 files from pip 25.1 on; the venv gets a current pip.
    let pipenv = p.root().join("pipenv");
    let python = bare_venv("python3", &pipenv);
    run_ok(pip_into(&python).args(["install", "-q", "pip>=25.1"]));
    run_ok(
        Command::new(pipenv.join("bin/python"))
            .args(["-m", "pip", "install", "-q", "--no-index", "-r"])
            .arg(p.path().join("wheelhouse/pylock.toml")),
    );
    assert_eq!(
        python_in(
            &pipenv,
            "import demo_pure, importlib.metadata as m; print(m.version('demo-pure'))"
        ),
        "3.0.0"
    );
}

fn run_ok(cmd: &mut Command) {
    let out = output(cmd);
    assert!(out.status.success(), "{cmd:?} failed");
}

/// How the tests start uv: lockstep's own (installed into the shared
/// toolchains directory on first use, as lockstep itself does).
fn uv_argv() -> Vec<String> {
    lockstep_uv().argv().to_vec()
}

#[test]
fn a_final_release_beside_the_candidate_is_never_chosen() {
    let p = fixture("4.0.0", "");
    p.run(
        &[
            "pkg",
            "build",
            "--variant",
            "release",
            "--version",
            "4.0.0rc1",
        ],
        0,
    );
    let other = p.root().join("final");
    p.run(
        &[
            "pkg",
            "build",
            "--variant",
            "release",
            "--version",
            "4.0.0",
            "--out",
            other.to_str().expect("utf-8"),
        ],
        0,
    );
    for entry in std::fs::read_dir(&other)
        .expect("list")
        .filter_map(|e| e.ok())
    {
        if entry.path().extension().is_some_and(|x| x == "whl") {
            std::fs::copy(
                entry.path(),
                p.path().join("wheelhouse").join(entry.file_name()),
            )
            .expect("copy");
        }
    }
    let venv = p.root().join("v");
    p.run(
        &[
            "pkg",
            "venv",
            venv.to_str().expect("utf-8"),
            "--manifest",
            "wheelhouse/pylock.toml",
        ],
        0,
    );
    assert_eq!(
        python_in(
            &venv,
            "import importlib.metadata as m; print(m.version('demo-cext'))"
        ),
        "4.0.0rc1"
    );
    // A directory of wheels with two versions is refused by name.
    let out = p.run(&["toolchain", "install", "--wheels", "wheelhouse"], 2);
    let err = stderr(&out);
    assert!(
        err.contains("several versions") && err.contains("4.0.0, 4.0.0rc1"),
        "{err}"
    );
}

#[test]
fn tampered_and_missing_wheels_are_named_and_nothing_is_installed() {
    let p = fixture("5.0.0", "");
    p.run(&["pkg", "build", "--variant", "release"], 0);
    let lock = manifest(&p, "wheelhouse/pylock.toml");
    let wheels = wheels_of(&lock);
    let victim = p.path().join("wheelhouse").join(&wheels[0].1);
    let venv = p.root().join("v");
    let venv_arg = venv.to_str().expect("utf-8");

    let mut bytes = std::fs::read(&victim).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&victim, &bytes).expect("tamper");
    let out = p.run(
        &[
            "pkg",
            "venv",
            venv_arg,
            "--manifest",
            "wheelhouse/pylock.toml",
        ],
        1,
    );
    let err = stderr(&out);
    assert!(
        err.contains(&wheels[0].0) && err.contains("sha256"),
        "{err}"
    );
    assert!(!venv.exists());

    std::fs::remove_file(&victim).expect("remove");
    let out = p.run(
        &[
            "pkg",
            "venv",
            venv_arg,
            "--manifest",
            "wheelhouse/pylock.toml",
        ],
        1,
    );
    let err = stderr(&out);
    assert!(
        err.contains(&wheels[0].0) && err.contains("missing"),
        "{err}"
    );
    assert!(!venv.exists());

    // A directory lockstep did not make is never replaced.
    write(&venv.join("mine.txt"), "keep me");
    p.run(&["pkg", "build", "--variant", "release"], 0);
    let out = p.run(
        &[
            "pkg",
            "venv",
            venv_arg,
            "--manifest",
            "wheelhouse/pylock.toml",
        ],
        2,
    );
    assert!(
        stderr(&out).contains("not a venv lockstep made"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(venv.join("mine.txt")).expect("kept"),
        "keep me"
    );

    // Not a manifest at all.
    p.write("bad.toml", "lock-version = \"1.0\"\n[[packages]]\nname = \"x\"\nversion = \"1.0\"\n[[packages.wheels]]\npath = \"../x-1.0-py3-none-any.whl\"\n");
    let out = p.run(&["pkg", "venv", "v2", "--manifest", "bad.toml"], 2);
    assert!(
        stderr(&out).contains("stay beside the manifest"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_build_inputs_are_clear_errors() {
    let p = fixture("6.0.0", "");
    // An interpreter that is not installed: named, exit 2.
    let out = p.run(&["pkg", "build", "--python", "3.99"], 2);
    assert!(
        stderr(&out).contains("Python 3.99 is not installed"),
        "{}",
        stderr(&out)
    );
    // An unknown variant, with a suggestion.
    let out = p.run(&["pkg", "build", "--variant", "assert"], 2);
    assert!(
        stderr(&out).contains("unknown variant `assert`") && stderr(&out).contains("asserts"),
        "{}",
        stderr(&out)
    );
    // A version that is not PEP 440.
    let out = p.run(&["pkg", "build", "--version", "1.0-final-2"], 2);
    assert!(
        stderr(&out).contains("not a PEP 440 version"),
        "{}",
        stderr(&out)
    );

    // A package directory without a pyproject.toml.
    let text = p
        .read("lockstep.toml")
        .replace("source = \"pure\"", "source = \"nowhere\"");
    p.write("lockstep.toml", &text);
    let out = p.run(&["pkg", "build"], 2);
    assert!(
        stderr(&out).contains("package demo-pure: nowhere/pyproject.toml does not exist"),
        "{}",
        stderr(&out)
    );
    let text = text.replace("source = \"nowhere\"", "source = \"pure\"");
    p.write("lockstep.toml", &text);

    // A dynamic version without write-file or env cannot be stamped before
    // the build; with `[pkg.version] rewrite = false` that is an error
    // naming the package and the settings (by default the built wheel is
    // stamped: tests/testsuite/pkg_versions.rs).
    p.write(
        "pure/pyproject.toml",
        "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n[project]\nname = \"demo-pure\"\ndynamic = [\"version\"]\n",
    );
    p.write(
        "lockstep.toml",
        &format!("{text}\n[pkg.version]\nrewrite = false\n"),
    );
    commit(&p, "dynamic version");
    let out = p.run(&["pkg", "build", "--version", "6.1.0"], 2);
    assert!(
        stderr(&out).contains("demo-pure") && stderr(&out).contains("no static [project] version"),
        "{}",
        stderr(&out)
    );
    p.write("lockstep.toml", &text);

    // A build that fails: the cell is named with its log's last lines, exit 1, no manifest.
    git(
        &p.path(),
        &["checkout", "-q", "HEAD~1", "--", "pure/pyproject.toml"],
    );
    p.write(
        "cext/setup.py",
        "raise SystemExit('demo build failure: compiler exploded')\n",
    );
    commit(&p, "break the C build");
    let out = p.run(&["pkg", "build", "--variant", "release"], 1);
    let err = stderr(&out);
    assert!(err.contains("1 of 2 cells failed to build"), "{err}");
    assert!(
        err.contains("demo-cext (python 3.11, variant release)"),
        "{err}"
    );
    assert!(err.contains("compiler exploded"), "{err}");
    assert!(!p.path().join("wheelhouse/pylock.toml").exists());
    let log = p
        .path()
        .join("wheelhouse/.logs/demo-cext-release-py3.11.log");
    assert!(log.is_file(), "{}", log.display());
}

#[test]
fn toolchain_from_a_set_without_iree_adds_it_to_the_pinned_iree() {
    let p = fixture("7.0.0", "");
    p.run(&["pkg", "build", "--variant", "release"], 0);
    let out = p.run(
        &[
            "toolchain",
            "install",
            "--manifest",
            "wheelhouse/pylock.toml",
            "--json",
        ],
        0,
    );
    let t: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    let names: Vec<&str> = t["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| p[0].as_str())
        .collect();
    assert!(
        names.contains(&"iree-base-compiler") && names.contains(&"demo-cext"),
        "{names:?}"
    );
    let bin = PathBuf::from(t["bin"].as_str().expect("bin"));
    assert!(bin.join("iree-compile").exists());
    assert!(bin
        .parent()
        .expect("dir")
        .join("venv/bin/demo-pure")
        .exists());
    // The same set again is the same toolchain; another set is another one.
    let again = p.run(
        &[
            "toolchain",
            "install",
            "--manifest",
            "wheelhouse/pylock.toml",
            "--json",
        ],
        0,
    );
    let t2: serde_json::Value = serde_json::from_str(&stdout(&again)).expect("json");
    assert_eq!(t["identity"], t2["identity"]);
    // Commands resolve it through $LOCKSTEP_IREE_MANIFEST.
    let manifest = p.path().join("wheelhouse/pylock.toml");
    let out = p.run_with(
        &["toolchain", "path"],
        &[("LOCKSTEP_IREE_MANIFEST", &manifest)],
        0,
    );
    assert_eq!(stdout(&out).trim(), bin.to_str().expect("utf-8"));
}

#[test]
fn bisect_finds_the_commit_whose_packages_break_and_caches_verdicts() {
    // Only demo-pure: a bisection builds one cell per commit.
    let p = fixture("8.0.0", "");
    let config = p.read("lockstep.toml");
    let only_pure = config
        .split("[[pkg.package]]\nname = \"demo-cext\"")
        .next()
        .expect("config")
        .to_string();
    p.write("lockstep.toml", &only_pure);
    commit(&p, "c1: only the pure package");
    let good = git(&p.path(), &["rev-parse", "HEAD"]).trim().to_string();
    p.write("pure/src/demo_pure/extra.py", "X = 2\n");
    commit(&p, "c2");
    let init = p.read("pure/src/demo_pure/__init__.py");
    p.write(
        "pure/src/demo_pure/__init__.py",
        &init.replace(
            "print(f\"demo-pure",
            "raise SystemExit(3)\n    print(f\"demo-pure",
        ),
    );
    commit(&p, "c3: breaks demo-pure");
    let breaking = git(&p.path(), &["rev-parse", "HEAD"]).trim().to_string();
    for n in 4..7 {
        p.write(&format!("pure/src/demo_pure/m{n}.py"), "Y = 1\n");
        commit(&p, &format!("c{n}"));
    }
    let before = git(&p.path(), &["status", "--porcelain"]);
    let args = [
        "pkg",
        "bisect",
        "--good",
        good.as_str(),
        "--bad",
        "HEAD",
        "--json",
        "--",
        "demo-pure",
    ];
    let out = p.run(&args, 0);
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(
        report["first_bad"].as_str(),
        Some(breaking.as_str()),
        "{report}"
    );
    let steps = report["steps"].as_array().expect("steps");
    assert!(steps.len() <= 3, "log2(6) probes at most: {steps:?}");
    assert!(steps.iter().all(|s| s["cached"] == false));
    // The working tree was never checked out or written.
    assert_eq!(git(&p.path(), &["status", "--porcelain"]), before);
    assert_eq!(
        git(&p.path(), &["rev-parse", "HEAD"]).trim(),
        git(&p.path(), &["rev-parse", "main"]).trim()
    );
    // Again: every verdict from the cache.
    let out = p.run(&args, 0);
    let again: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(again["first_bad"], report["first_bad"]);
    assert!(again["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .all(|s| s["cached"] == true));
    // Bad ranges are usage errors.
    let out = p.run(
        &[
            "pkg",
            "bisect",
            "--good",
            "HEAD",
            "--bad",
            good.as_str(),
            "--",
            "true",
        ],
        2,
    );
    assert!(stderr(&out).contains("not an ancestor"), "{}", stderr(&out));
}

/// The IREE 3.13.0 compiler and runtime wheels from PyPI, downloaded once
/// per machine beside the shared toolchains (built in a temporary directory
/// and renamed, so a killed download is never used).
fn iree_wheels() -> PathBuf {
    let dir = toolchains()
        .with_file_name("test-wheels")
        .join("iree-3.13.0");
    if dir.join("done").is_file() {
        return dir;
    }
    let tmp = dir.with_file_name(format!("iree-3.13.0.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    run_ok(
        Command::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
            ])
            .arg(&tmp)
            .args(["iree-base-compiler==3.13.0", "iree-base-runtime==3.13.0"]),
    );
    std::fs::write(tmp.join("done"), "").expect("mark");
    if std::fs::rename(&tmp, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&tmp); // another test got there first
    }
    dir
}

#[test]
fn toolchain_from_built_iree_wheels_runs_the_tests() {
    let p = Project::new();
    let wheels = iree_wheels();
    // The set's toolchains go under the test's own root, not beside the
    // shared PyPI toolchains.
    let own = p.root().join("toolchains");
    let own: &[(&str, &Path)] = &[("LOCKSTEP_TOOLCHAINS", &own)];
    let out = p.run_with(
        &[
            "toolchain",
            "install",
            "--wheels",
            wheels.to_str().expect("utf-8"),
            "--json",
        ],
        own,
        0,
    );
    let t: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert!(
        t["bin"].as_str().is_some_and(|b| b.contains("iree-set-")),
        "{t}"
    );
    assert!(
        t["compiler_version"]
            .as_str()
            .is_some_and(|v| v.contains("3.13.0")),
        "{t}"
    );
    // A manifest of the same wheels is the same toolchain (identity = the wheels).
    let copy = p.root().join("copy");
    std::fs::create_dir_all(&copy).expect("mkdir");
    for entry in std::fs::read_dir(&wheels)
        .expect("list")
        .filter_map(|e| e.ok())
    {
        if entry.path().extension().is_some_and(|x| x == "whl") {
            std::fs::copy(entry.path(), copy.join(entry.file_name())).expect("copy");
        }
    }
    p.run(&["pkg", "manifest", copy.to_str().expect("utf-8")], 0);
    let manifest = copy.join("pylock.toml");
    let again = p.run_with(
        &[
            "toolchain",
            "install",
            "--manifest",
            manifest.to_str().expect("utf-8"),
            "--json",
        ],
        own,
        0,
    );
    let t2: serde_json::Value = serde_json::from_str(&stdout(&again)).expect("json");
    assert_eq!(t["identity"], t2["identity"]);
    // `lockstep test` runs on it through $LOCKSTEP_IREE_MANIFEST.
    p.add_suite(&[("adds", "11 22 33 44")]);
    let out = p.run_with(
        &["test", "s"],
        &[own[0], ("LOCKSTEP_IREE_MANIFEST", &manifest)],
        0,
    );
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(all.contains("1 pass") && all.contains("iree-set-"), "{all}");

    // Half a set: the compiler without its runtime is refused (version skew).
    for entry in std::fs::read_dir(&copy)
        .expect("list")
        .filter_map(|e| e.ok())
    {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("iree_base_runtime")
            || entry.file_name() == "pylock.toml"
        {
            std::fs::remove_file(entry.path()).expect("remove");
        }
    }
    let out = p.run_with(
        &[
            "toolchain",
            "install",
            "--wheels",
            copy.to_str().expect("utf-8"),
        ],
        own,
        2,
    );
    assert!(
        stderr(&out).contains("holds iree-base-compiler but no iree-base-runtime"),
        "{}",
        stderr(&out)
    );
}

/// A wheel of `project` at `version` requiring `requires` (Requires-Dist
/// lines), written into `dir`.
fn wheel_requiring(dir: &Path, project: &str, version: &str, requires: &[&str]) {
    std::fs::create_dir_all(dir).expect("create");
    let script = r#"
import sys, zipfile
d, project, version = sys.argv[1:4]
requires = "".join(f"Requires-Dist: {r}\n" for r in sys.argv[4:])
mod = project.replace('-', '_')
info = f"{mod}-{version}.dist-info"
with zipfile.ZipFile(f"{d}/{mod}-{version}-py3-none-any.whl", "w") as z:
    z.writestr(f"{mod}/__init__.py", f"VERSION = {version!r}\n")
    z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n{requires}\n")
    z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr(f"{info}/RECORD", "")
"#;
    expect(
        Command::new("python3")
            .args(["-c", script])
            .arg(dir)
            .args([project, version])
            .args(requires),
        0,
    );
}

#[test]
fn venv_takes_the_sets_dependencies_from_an_index_and_never_the_set_itself() {
    // The index: `dep` 1.0 and a newer `app` the set must not be replaced by.
    let index = Project::new();
    index.write(
        "lockstep.toml",
        "[release]\nname = \"deps\"\nversion-base = \"1.0.0\"\ndependency-index = \"none\"\n",
    );
    for (project, version) in [("dep", "1.0"), ("app", "9.0")] {
        let dir = index.path().join(format!("wh-{project}"));
        wheel_requiring(&dir, project, version, &[]);
        index.run(&["pkg", "manifest", dir.to_str().expect("utf-8")], 0);
        index.run(&["release", "publish", dir.to_str().expect("utf-8")], 0);
    }
    let served = Served::start(&index);
    let url = served.url();

    // The set: app 1.0, which requires dep (not in the set).
    let p = Project::new();
    let set = p.path().join("set");
    wheel_requiring(&set, "app", "1.0", &["dep>=1.0"]);
    p.run(&["pkg", "manifest", "set"], 0);
    let venv = p.root().join("v");
    let venv_arg = venv.to_str().expect("utf-8");
    let err = stderr(&p.run(
        &["pkg", "venv", venv_arg, "--manifest", "set/pylock.toml"],
        1,
    ));
    assert!(
        err.contains("dep>=1.0") && err.contains("does not hold"),
        "{err}"
    );
    assert!(!venv.exists());

    let out = p.run(
        &[
            "pkg",
            "venv",
            venv_arg,
            "--manifest",
            "set/pylock.toml",
            "--dependency-index",
            &url,
            "--json",
        ],
        0,
    );
    let made: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(
        made["dependencies"],
        serde_json::json!([["dep", "1.0"]]),
        "{made}"
    );
    assert_eq!(made["dependency_index"], url.as_str(), "{made}");
    assert_eq!(
        python_in(&venv, "import app, dep; print(app.VERSION, dep.VERSION)"),
        "1.0 1.0"
    );
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(venv.join(".lockstep-venv.json")).expect("record"),
    )
    .expect("json");
    assert_eq!(record["dependencies"], made["dependencies"]);

    // A dependency the index lacks: named, and the venv is left as it was.
    let missing = p.path().join("set2");
    wheel_requiring(&missing, "app", "1.0", &["dep>=5"]);
    p.run(&["pkg", "manifest", "set2"], 0);
    let err = stderr(&p.run(
        &[
            "pkg",
            "venv",
            venv_arg,
            "--manifest",
            "set2/pylock.toml",
            "--dependency-index",
            &url,
        ],
        1,
    ));
    assert!(
        err.contains("cannot install the set's dependencies (dep>=5)"),
        "{err}"
    );
    assert_eq!(python_in(&venv, "import dep; print(dep.VERSION)"), "1.0");

    // An index that is not https (or http to this machine) is refused first.
    let err = stderr(&p.run(
        &[
            "pkg",
            "venv",
            "v3",
            "--manifest",
            "set/pylock.toml",
            "--dependency-index",
            "ftp://example.com/simple/",
        ],
        2,
    ));
    assert!(err.contains("--dependency-index is refused"), "{err}");
    assert!(!p.path().join("v3").exists());
    drop(served);
}

/// The `lockstep_build.json` inside `wheel`.
fn build_record(wheel: &Path) -> serde_json::Value {
    let file = std::fs::File::open(wheel).expect("wheel");
    let mut zip = zip::ZipArchive::new(file).expect("a zip");
    let name = (0..zip.len())
        .map(|i| {
            zip.by_index(i)
                .expect("member")
                .name()
                .expect("a UTF-8 name")
                .to_string()
        })
        .find(|n| n.ends_with("lockstep_build.json"))
        .expect("a build record");
    let mut text = String::new();
    std::io::Read::read_to_string(&mut zip.by_name(&name).expect("member"), &mut text)
        .expect("read");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn a_pin_file_or_a_pin_inside_a_file_is_the_upstream_revision_of_every_wheel() {
    let pinned = "0123456789abcdef0123456789abcdef01234567";
    for (config, file, text) in [
        (
            "\n[integrate]\npin-file = \"llvm-project.version\"\nupstream-url = \"https://example.com/llvm.git\"\n",
            "llvm-project.version",
            format!("{pinned}\n"),
        ),
        (
            "\n[integrate]\nupstream-url = \"https://example.com/llvm.git\"\npin = { file = \"third_party/llvm/workspace.bzl\", pattern = 'LLVM_COMMIT = \"([0-9a-f]{40})\"' }\n",
            "third_party/llvm/workspace.bzl",
            format!("def repo():\n    LLVM_COMMIT = \"{pinned}\"\n"),
        ),
    ] {
        let p = fixture("2.0.0", config);
        p.write(file, &text);
        commit(&p, "pin upstream");
        p.run(&["pkg", "build", "--variant", "release"], 0);
        let lock = manifest(&p, "wheelhouse/pylock.toml");
        for package in lock["packages"].as_array().expect("packages") {
            assert_eq!(
                package["tool"]["lockstep"]["upstream-revision"].as_str(),
                Some(pinned),
                "{file}: {package}"
            );
        }
        for (_, path, _, _) in wheels_of(&lock) {
            let record = build_record(&p.path().join("wheelhouse").join(&path));
            assert_eq!(record["upstream-revision"], pinned, "{file}: {record}");
        }
    }
}
