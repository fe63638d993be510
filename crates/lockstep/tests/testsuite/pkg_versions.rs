//! Versions of packages that are not a static `[project] version`: a
//! setup.py that reads the version from the environment or a file, a
//! version hard-coded in setup.py (stamped in the built wheel), a
//! pyproject without `[project]`, and a set whose packages keep their own
//! versions. Real uv and setuptools builds, wheels installed and read back.

use std::path::Path;

use crate::common::*;

/// A committed project with `files` (path, text) and `config` as
/// lockstep.toml.
fn project(files: &[(&str, &str)], config: &str) -> Project {
    let p = Project::new();
    git(&p.path(), &["init", "-q", "-b", "main"]);
    for (path, text) in files {
        p.write(path, text);
    }
    p.write("lockstep.toml", config);
    commit_as_tester(&p.path(), "init", true);
    p
}

/// A setup.py package `name` whose module `name` is empty; its version is
/// the Python expression `version`.
fn setup_py(name: &str, version: &str) -> String {
    format!(
        "import os\nfrom setuptools import setup\nsetup(name={name:?}, version={version}, py_modules=[{name:?}])\n"
    )
}

fn config(packages: &[(&str, &str)], extra: &str) -> String {
    let mut text = String::from(
        "[pkg]\npython = [\"3.11\"]\ncompiler-cache = \"none\"\nmanylinux = \"off\"\n",
    );
    for (name, source) in packages {
        text.push_str(&format!(
            "\n[[pkg.package]]\nname = \"{name}\"\nsource = \"{source}\"\n"
        ));
    }
    text.push_str(extra);
    text
}

/// The wheel files in `dir`, sorted.
fn wheels(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".whl"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The version `name` reports in a venv holding the manifest's wheels
/// exactly (`pkg venv`): METADATA, dist-info and RECORD agree, or the
/// install fails.
fn installed_version(p: &Project, name: &str) -> String {
    p.run(
        &[
            "pkg",
            "venv",
            "--manifest",
            "wheelhouse/pylock.toml",
            "venv",
        ],
        0,
    );
    let out = output(
        std::process::Command::new(p.path().join("venv/bin/python")).args([
            "-c",
            &format!("import importlib.metadata as m; print(m.version({name:?}))"),
        ]),
    );
    assert!(out.status.success());
    stdout(&out).trim().to_string()
}

#[test]
fn a_setup_py_package_takes_its_version_from_the_environment_or_a_file() {
    // No pyproject.toml at all: setuptools' legacy backend.
    let p = project(
        &[
            (
                "envpkg/setup.py",
                &setup_py("envpkg", "os.environ.get('ENVPKG_VERSION', '0.0.0')"),
            ),
            ("envpkg/envpkg.py", ""),
        ],
        &config(
            &[("envpkg", "envpkg")],
            "\n[pkg.version]\nenv = \"ENVPKG_VERSION\"\n",
        ),
    );
    p.run(&["pkg", "build", "--version", "1.2.3"], 0);
    assert_eq!(
        wheels(&p.path().join("wheelhouse")),
        ["envpkg-1.2.3-py3-none-any.whl"]
    );
    assert_eq!(installed_version(&p, "envpkg"), "1.2.3");

    // A version file the setup.py reads, beside a pyproject without [project].
    let p = project(
        &[
            (
                "filepkg/pyproject.toml",
                "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n",
            ),
            (
                "filepkg/setup.py",
                &setup_py("filepkg", "open(os.path.join(os.path.dirname(__file__), 'VERSION')).read().strip()"),
            ),
            ("filepkg/VERSION", "0.4.0\n"),
            ("filepkg/filepkg.py", ""),
        ],
        &config(&[("filepkg", "filepkg")], "\n[pkg.version]\nwrite-file = \"VERSION\"\nscheme = \"dev\"\n"),
    );
    // The dev scheme takes its release from the committed file.
    let out = p.run(&["pkg", "build", "--json"], 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let version = report["version"].as_str().unwrap().to_string();
    assert!(version.starts_with("0.4.0.dev0+g"), "{version}");
    assert_eq!(installed_version(&p, "filepkg"), version);
    std::fs::remove_dir_all(p.path().join("wheelhouse")).unwrap();
    std::fs::remove_dir_all(p.path().join("venv")).unwrap();
    p.run(&["pkg", "build", "--version", "0.5.0rc1"], 0);
    assert_eq!(installed_version(&p, "filepkg"), "0.5.0rc1");
}

#[test]
fn a_hard_coded_version_is_stamped_in_the_built_wheel_or_refused_when_asked() {
    let setup = setup_py("fixed", "'0.0.1'");
    let files = [
        (
            "fixed/pyproject.toml",
            "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n",
        ),
        ("fixed/setup.py", setup.as_str()),
        ("fixed/fixed.py", "__version__ = \"0.0.1\"\n"),
    ];
    // Without a version asked, the backend's own.
    let p = project(&files, &config(&[("fixed", "fixed")], ""));
    let out = p.run(&["pkg", "build", "--json"], 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["version"], "0.0.1");
    assert_eq!(
        wheels(&p.path().join("wheelhouse")),
        ["fixed-0.0.1-py3-none-any.whl"]
    );

    // At a version: built at 0.0.1, then stamped, with a line saying so and
    // naming the member that still says 0.0.1.
    std::fs::remove_dir_all(p.path().join("wheelhouse")).unwrap();
    let out = p.run(&["pkg", "build", "--version", "2.0.0"], 0);
    let err = stderr(&out);
    assert!(
        err.contains("stamped fixed-2.0.0-py3-none-any.whl after the build")
            && err.contains("gives 0.0.1")
            && err.contains("still saying 0.0.1: fixed.py"),
        "{err}"
    );
    assert_eq!(
        wheels(&p.path().join("wheelhouse")),
        ["fixed-2.0.0-py3-none-any.whl"]
    );
    assert_eq!(installed_version(&p, "fixed"), "2.0.0");
    // Its own version asked for: nothing to stamp, nothing said.
    std::fs::remove_dir_all(p.path().join("wheelhouse")).unwrap();
    let out = p.run(&["pkg", "build", "--version", "0.0.1"], 0);
    assert!(!stderr(&out).contains("stamped"), "{}", stderr(&out));
    assert_eq!(
        wheels(&p.path().join("wheelhouse")),
        ["fixed-0.0.1-py3-none-any.whl"]
    );

    // `rewrite = false`: the error names the settings; nothing is written.
    let p = project(
        &files,
        &config(&[("fixed", "fixed")], "\n[pkg.version]\nrewrite = false\n"),
    );
    let out = p.run(&["pkg", "build", "--version", "2.0.0"], 2);
    let err = stderr(&out);
    assert!(
        err.contains("cannot stamp version 2.0.0 into fixed")
            && err.contains("[pkg.version] rewrite = false")
            && err.contains("write-file"),
        "{err}"
    );
    assert!(!p.path().join("wheelhouse").exists());

    // A build that ignores the variable it was told it reads: an error, not
    // a silent restamp.
    let p = project(
        &files,
        &config(
            &[("fixed", "fixed")],
            "\n[pkg.version]\nenv = \"FIXED_VERSION\"\n",
        ),
    );
    let err = stderr(&p.run(&["pkg", "build", "--version", "2.0.0"], 1));
    assert!(err.contains("ignored the stamp"), "{err}");
    assert!(wheels(&p.path().join("wheelhouse")).is_empty());
}

#[test]
fn a_set_of_independently_versioned_packages_builds_and_keeps_its_versions() {
    let pyproject = |name: &str, version: &str| {
        format!(
            "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"{name}\"\nversion = \"{version}\"\n"
        )
    };
    let hello = pyproject("hello", "1.2.3");
    let skc = pyproject("skcdemo", "0.1.0");
    let files = [
        ("hello/pyproject.toml", hello.as_str()),
        ("hello/hello.py", ""),
        ("skc/pyproject.toml", skc.as_str()),
        ("skc/skcdemo.py", ""),
    ];
    let packages = [("hello", "hello"), ("skcdemo", "skc")];
    let p = project(&files, &config(&packages, ""));
    let out = p.run(&["pkg", "build", "--json"], 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["version"].is_null(), "no one version: {report}");
    assert_eq!(
        wheels(&p.path().join("wheelhouse")),
        [
            "hello-1.2.3-py3-none-any.whl",
            "skcdemo-0.1.0-py3-none-any.whl"
        ]
    );
    let lock: toml::Table = toml::from_str(&p.read("wheelhouse/pylock.toml")).unwrap();
    let versions: Vec<(String, String)> = lock["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["version"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        versions,
        [
            ("hello".into(), "1.2.3".into()),
            ("skcdemo".into(), "0.1.0".into())
        ]
    );
    // The manifest installs as it is.
    assert_eq!(installed_version(&p, "skcdemo"), "0.1.0");
    // One version stamped on all of them, as a release does.
    std::fs::remove_dir_all(p.path().join("wheelhouse")).unwrap();
    p.run(&["pkg", "build", "--version", "5.0.0"], 0);
    assert_eq!(
        wheels(&p.path().join("wheelhouse")),
        [
            "hello-5.0.0-py3-none-any.whl",
            "skcdemo-5.0.0-py3-none-any.whl"
        ]
    );
    // `[pkg] one-version = true` keeps the old check.
    let p = project(
        &files,
        &config(&packages, "").replace("[pkg]\n", "[pkg]\none-version = true\n"),
    );
    let err = stderr(&p.run(&["pkg", "build"], 2));
    assert!(
        err.contains("the set is not at one version ([pkg] one-version = true): hello is 1.2.3, skcdemo is 0.1.0"),
        "{err}"
    );
    assert!(!p.path().join("wheelhouse").exists());
}
