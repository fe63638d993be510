//! `lockstep doctor` lists every tool lockstep would use, where it lives
//! and its version (a missing one listed as missing, exit 0), the Pythons
//! installed outside PATH, and each directory lockstep writes with its
//! size; it installs nothing. And `pkg build` and `pkg venv` find a pyenv
//! Python that is not activated by one search, or say where it looked.

use std::path::Path;

use crate::common::{assert_schema, stderr, stdout, write, write_executable, Project};

/// A pyenv root holding a "3.99.1" whose interpreter answers `--version`
/// as that version (and is otherwise the machine's python3, noting each
/// such start in `versions/3.99.1/started`).
fn fake_pyenv(root: &Path) {
    let python = root.join("versions/3.99.1/bin/python3.99");
    std::fs::create_dir_all(python.parent().unwrap()).unwrap();
    write_executable(
        &python,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Python 3.99.1'; exit 0; fi\necho \"$0\" >> \"$(dirname \"$0\")/../started\"\nexec python3 \"$@\"\n",
    );
    std::fs::create_dir_all(root.join("versions/3.98-dev")).unwrap();
}

#[test]
fn doctor_lists_tools_pythons_and_directories_and_installs_nothing() {
    let p = Project::new();
    let pyenv = p.root().join("pyenv");
    fake_pyenv(&pyenv);
    let toolchains = p.root().join("toolchains");
    // PATH with git but without cmake, ninja or ccache.
    let bin = p.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let git = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    std::os::unix::fs::symlink(git.trim(), bin.join("git")).unwrap();
    std::os::unix::fs::symlink("/bin/sh", bin.join("sh")).unwrap();
    let run = |args: &[&str]| {
        let mut cmd = p.cmd(args);
        cmd.env("PYENV_ROOT", &pyenv)
            .env("LOCKSTEP_TOOLCHAINS", &toolchains)
            .env("PATH", &bin)
            .env_remove("LOCKSTEP_UV");
        crate::common::expect(&mut cmd, 0)
    };
    let out = run(&["doctor"]);
    let text = stdout(&out);
    for line in [
        "uv ",
        "not installed yet (installed on first use)",
        "git version",
        "cmake         MISSING",
        "ninja         MISSING",
        "sccache",
        "auditwheel",
        "iree-compile",
        "3.99.1",
        "[pyenv]",
        "Directories lockstep writes:",
        "cache area compile",
    ] {
        assert!(text.contains(line), "{line}:\n{text}");
    }
    let json: serde_json::Value =
        serde_json::from_slice(&run(&["doctor", "--json"]).stdout).unwrap();
    assert_schema("doctor.json", &json);
    let tool = |name: &str| {
        json["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .clone()
    };
    assert_eq!(tool("cmake")["status"], "missing");
    assert_eq!(tool("git")["status"], "found");
    assert_eq!(tool("uv")["status"], "first-use");
    assert_eq!(tool("iree-compile")["status"], "first-use");
    let python = json["pythons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["version"] == "3.99.1")
        .expect("the pyenv Python");
    assert_eq!(python["source"], "pyenv");
    // Nothing was installed.
    assert!(
        !toolchains.exists(),
        "doctor created the toolchains directory"
    );
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn pkg_build_finds_a_pyenv_python_that_is_not_activated_or_says_where_it_looked() {
    let p = Project::new();
    let pyenv = p.root().join("pyenv");
    fake_pyenv(&pyenv);
    crate::common::git(&p.path(), &["init", "-q", "-b", "main"]);
    write(
        &p.path().join("pure/pyproject.toml"),
        "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"demo-pure\"\nversion = \"1.0\"\n",
    );
    p.write(
        "lockstep.toml",
        "[pkg]\npython = [\"3.98\"]\n\n[[pkg.package]]\nname = \"demo-pure\"\nsource = \"pure\"\n",
    );
    crate::common::git(&p.path(), &["add", "-A"]);
    crate::common::commit_as_tester(&p.path(), "init", false);
    // 3.98: nowhere. The error names where lockstep looked, what it saw
    // and the setting that adds an interpreter; nothing is written.
    let mut cmd = p.cmd(&["pkg", "build"]);
    cmd.env("PYENV_ROOT", &pyenv);
    let out = crate::common::expect(&mut cmd, 2);
    let err = stderr(&out);
    assert!(
        err.contains("Python 3.98 is not installed where lockstep looks"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{} (pyenv): 3.98-dev, 3.99.1",
            pyenv.join("versions").display()
        )),
        "{err}"
    );
    assert!(err.contains("[tools] python = ["), "{err}");
    assert!(!p.path().join("wheelhouse").exists());
    // An unreadable pyenv directory is named, not a crash.
    let broken = p.root().join("broken-pyenv");
    write(&broken.join("versions"), "not a directory\n");
    let mut cmd = p.cmd(&["pkg", "build"]);
    cmd.env("PYENV_ROOT", &broken);
    let err = stderr(&crate::common::expect(&mut cmd, 2));
    assert!(err.contains("(pyenv): cannot be read"), "{err}");
    // 3.99: pyenv's, though not on PATH; doctor lists it, and so does the
    // interpreter search pkg build uses (the build itself would need a
    // real 3.99, so only the discovery is checked here).
    let mut cmd = p.cmd(&["doctor", "--json"]);
    cmd.env("PYENV_ROOT", &pyenv);
    let json: serde_json::Value =
        serde_json::from_slice(&crate::common::expect(&mut cmd, 0).stdout).unwrap();
    assert!(json["pythons"].to_string().contains("3.99.1"));
    // [tools] python names an interpreter anywhere.
    p.write(
        "lockstep.toml",
        &format!(
            "[tools]\npython = [\"{}\"]\n\n[pkg]\npython = [\"3.98\"]\n\n[[pkg.package]]\nname = \"demo-pure\"\nsource = \"pure\"\n",
            pyenv.join("versions/3.99.1/bin/python3.99").display()
        ),
    );
    let mut cmd = p.cmd(&["doctor", "--json"]);
    cmd.env("PYENV_ROOT", p.root().join("none"));
    let json: serde_json::Value =
        serde_json::from_slice(&crate::common::expect(&mut cmd, 0).stdout).unwrap();
    assert!(
        json["pythons"].to_string().contains("[tools] python"),
        "{json}"
    );
}

/// `[tools]` names a uv or an interpreter: a uv that does not run is exit 2
/// naming the setting (no fallback, nothing built); an interpreter that
/// does not run is listed as such where a missing Python is explained.
#[test]
fn bad_tools_settings_are_named() {
    let p = Project::new();
    crate::common::git(&p.path(), &["init", "-q", "-b", "main"]);
    write(
        &p.path().join("pure/pyproject.toml"),
        "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"demo-pure\"\nversion = \"1.0\"\n",
    );
    let package =
        "[pkg]\npython = [\"3.98\"]\n\n[[pkg.package]]\nname = \"demo-pure\"\nsource = \"pure\"\n";
    p.write(
        "lockstep.toml",
        &format!("[tools]\nuv = \"no/such/uv\"\n\n{package}"),
    );
    crate::common::git(&p.path(), &["add", "-A"]);
    crate::common::commit_as_tester(&p.path(), "init", false);
    let mut cmd = p.cmd(&["pkg", "build"]);
    cmd.env_remove("LOCKSTEP_UV");
    let err = stderr(&crate::common::expect(&mut cmd, 2));
    assert!(
        err.contains("[tools] uv names") && err.contains("no/such/uv"),
        "{err}"
    );
    assert!(!p.path().join("wheelhouse").exists());

    let broken = p.root().join("python3.98");
    write_executable(&broken, "#!/bin/sh\nexit 1\n");
    p.write(
        "lockstep.toml",
        &format!("[tools]\npython = [\"{}\"]\n\n{package}", broken.display()),
    );
    let mut cmd = p.cmd(&["pkg", "build"]);
    cmd.env("PYENV_ROOT", p.root().join("no-pyenv"));
    let err = stderr(&crate::common::expect(&mut cmd, 2));
    assert!(
        err.contains(&format!(
            "[tools] python: {} (does not run)",
            broken.display()
        )),
        "{err}"
    );
}

/// `pkg venv --python` goes through the search `pkg build` uses: the pyenv
/// Python that is not on PATH is the venv's interpreter, and a version
/// found nowhere is the same exit 2 naming where lockstep looked.
#[test]
fn pkg_venv_finds_a_pyenv_python_exactly_as_pkg_build() {
    let p = Project::new();
    let pyenv = p.root().join("pyenv");
    fake_pyenv(&pyenv);
    let set = p.path().join("set");
    std::fs::create_dir_all(&set).unwrap();
    let wheel = r#"
import sys, zipfile
with zipfile.ZipFile(sys.argv[1] + "/tiny-1.0-py3-none-any.whl", "w") as z:
    z.writestr("tiny/__init__.py", "VERSION = '1.0'\n")
    z.writestr("tiny-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: tiny\nVersion: 1.0\n\n")
    z.writestr("tiny-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("tiny-1.0.dist-info/RECORD", "")
"#;
    crate::common::expect(
        std::process::Command::new("python3")
            .args(["-c", wheel])
            .arg(&set),
        0,
    );
    p.run(&["pkg", "manifest", "set"], 0);
    let venv = p.root().join("v");
    let venv_arg = venv.to_str().unwrap();
    let args = [
        "pkg",
        "venv",
        venv_arg,
        "--manifest",
        "set/pylock.toml",
        "--python",
        "3.99",
    ];
    let mut cmd = p.cmd(&args);
    cmd.env("PYENV_ROOT", &pyenv);
    crate::common::expect(&mut cmd, 0);
    let started = std::fs::read_to_string(pyenv.join("versions/3.99.1/started"))
        .expect("uv ran the pyenv interpreter");
    assert!(
        started.contains("versions/3.99.1/bin/python3.99"),
        "{started}"
    );
    assert!(venv.join("lib").is_dir() && venv.join(".lockstep-venv.json").is_file());
    // Nowhere: the message of `pkg build`, exit 2, nothing made.
    let other = p.root().join("v2");
    let mut args = args;
    args[2] = other.to_str().unwrap();
    args[6] = "3.98";
    let mut cmd = p.cmd(&args);
    cmd.env("PYENV_ROOT", &pyenv);
    let err = stderr(&crate::common::expect(&mut cmd, 2));
    assert!(
        err.contains("Python 3.98 is not installed where lockstep looks"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{} (pyenv): 3.98-dev, 3.99.1",
            pyenv.join("versions").display()
        )),
        "{err}"
    );
    assert!(!other.exists());
}
