//! The Python layer against the real uv, real builds and real wheels: the
//! environment policy as a console script and a shell in a venv see it, an
//! exact venv whose wheel needs a package the set lacks, and a uv that
//! hangs.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use lockstep_core::events::NullSink;
use lockstep_python::uv::{find_uv, Build, Timeouts, Uv};
use lockstep_python::venv::{self, From, RunIn};

fn uv() -> Uv {
    let root = std::path::absolute(lockstep_core::paths::toolchains()).expect("toolchains");
    std::fs::create_dir_all(&root).expect("toolchains dir");
    find_uv(&root, &root, &NullSink).expect("uv")
}

/// Writes a setuptools project `name` with `pyproject` extra lines and a
/// module body, builds its wheel with the layer's `uv build` into `out`.
fn build(uv: &Uv, work: &Path, out: &Path, name: &str, project: &str, module: &str) {
    let src = work.join(name);
    std::fs::create_dir_all(src.join("src").join(name)).unwrap();
    std::fs::write(
        src.join("pyproject.toml"),
        format!(
            "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\
             [project]\nname = \"{name}\"\nversion = \"1.0\"\n{project}"
        ),
    )
    .unwrap();
    std::fs::write(src.join("src").join(name).join("__init__.py"), module).unwrap();
    let python = uv.find_python("3.11", work).expect("python 3.11");
    let log = work.join(format!("{name}.log"));
    let ran = uv
        .build(&Build {
            sdist: false,
            python: &python,
            package: &src,
            out_dir: out,
            cwd: work,
            env: &[],
            timeout: Duration::from_secs(600),
            log: &log,
        })
        .expect("uv build runs");
    assert!(ran.success(), "{}", ran.output());
}

/// Two wheelhouses built once per test binary: `probe` (a console script
/// printing its environment; no dependencies) and `needy` (declares
/// `packaging`, and `pywin32` for Windows only).
fn wheelhouses() -> &'static (PathBuf, PathBuf) {
    static HOUSES: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    HOUSES.get_or_init(|| {
        let work = tempfile::tempdir().expect("tmp").keep();
        let uv = uv();
        let probe = work.join("probe-house");
        build(
            &uv,
            &work,
            &probe,
            "probe",
            "[project.scripts]\nprobe-env = \"probe:main\"\n",
            "import os\n\ndef main():\n    for k in sorted(os.environ):\n        print(k)\n",
        );
        let needy = work.join("needy-house");
        build(
            &uv,
            &work,
            &needy,
            "needy",
            "dependencies = [\"packaging>=20\", \"pywin32; sys_platform == 'win32'\"]\n",
            "import packaging\n",
        );
        (probe, needy)
    })
}

#[test]
fn children_never_see_index_variables_or_secrets() {
    for (k, v) in [
        ("UV_INDEX_URL", "http://127.0.0.1:9/simple/"),
        ("PIP_INDEX_URL", "http://127.0.0.1:9/simple/"),
        ("GITHUB_TOKEN", "ghp_secret"),
        ("TWINE_PASSWORD", "pypi-secret"),
        ("MY_WEBHOOK", "https://hooks.example/secret"),
        ("PYTHONPATH", "/somewhere/src"),
    ] {
        std::env::set_var(k, v);
    }
    // The webhook variable a lockstep.toml names is registered once, for
    // every child.
    lockstep_core::process::also_secret("MY_WEBHOOK");
    assert!(
        std::env::var_os("CARGO_MANIFEST_DIR").is_some(),
        "run by cargo test"
    );
    let uv = uv();
    let (probe, _) = wheelhouses();
    let dir = tempfile::tempdir().unwrap();
    // A dead index in UV_INDEX_URL does not matter: the install is offline
    // from the wheels, and the variable never reaches uv.
    let made = venv::create_exact(
        &uv,
        &dir.path().join("venv"),
        From::Wheels(probe),
        None,
        &NullSink,
    )
    .expect("exact venv");
    assert!(made.packages.iter().any(|(n, _)| n == "probe"));
    let venv = uv.venv(&made.dir);
    let how = RunIn {
        what: "the probe",
        cwd: dir.path(),
        timeout: Duration::from_secs(120),
        log: None,
    };
    for argv in [
        vec!["probe-env".to_string()],
        vec!["sh".into(), "-c".into(), "env | cut -d= -f1".into()],
    ] {
        let ran = venv
            .run(&argv, &how)
            .expect("runs")
            .require_success()
            .expect("exit 0");
        let seen: Vec<String> = ran.output().lines().map(String::from).collect();
        for hidden in [
            "UV_INDEX_URL",
            "PIP_INDEX_URL",
            "GITHUB_TOKEN",
            "TWINE_PASSWORD",
            "MY_WEBHOOK",
            "PYTHONPATH",
            // cargo set these for this test; a child's own cargo must not see them.
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
        ] {
            assert!(!seen.iter().any(|k| k == hidden), "{argv:?} saw {hidden}");
        }
        assert!(
            seen.iter().any(|k| k == "VIRTUAL_ENV"),
            "{argv:?}: {seen:?}"
        );
    }
}

#[test]
fn an_exact_venv_that_cannot_import_is_an_error_naming_what_is_missing() {
    let uv = uv();
    let (_, needy) = wheelhouses();
    let dir = tempfile::tempdir().unwrap();
    let house = dir.path().join("house");
    std::fs::create_dir_all(&house).unwrap();
    for entry in std::fs::read_dir(needy).unwrap().flatten() {
        std::fs::copy(entry.path(), house.join(entry.file_name())).unwrap();
    }
    let mut lock = lockstep_python::pylock::from_dir(&house).unwrap();
    for package in &mut lock.packages {
        for wheel in &mut package.wheels {
            wheel.path = wheel.name.clone();
        }
    }
    let manifest = house.join("pylock.toml");
    std::fs::write(&manifest, lock.to_toml().unwrap()).unwrap();
    let dest = dir.path().join("venv");
    let err = venv::create_exact(&uv, &dest, From::Manifest(&manifest), None, &NullSink)
        .expect_err("packaging is in no manifest");
    let text = err.render();
    assert_eq!(err.exit_code(), 1, "{text}");
    assert!(text.contains("needy"), "{text}");
    assert!(text.contains("packaging>=20"), "{text}");
    assert!(text.contains(&manifest.display().to_string()), "{text}");
    assert!(text.contains("hint: add packaging to the set"), "{text}");
    assert!(!text.contains("pywin32"), "markers are evaluated: {text}");
    assert!(!dest.exists(), "nothing is left at the destination");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(
        leftovers.len(),
        1,
        "no staging directory left: {leftovers:?}"
    );
}

#[test]
fn a_hung_uv_is_killed_at_its_timeout_with_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("uv");
    std::fs::write(
        &fake,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'uv 0.0.0'; exit 0; fi\nexec sleep 600\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let uv = Uv::new(vec![fake.to_string_lossy().into_owned()])
        .with_timeouts(Timeouts::all(Duration::from_secs(2)))
        .logs_in(&dir.path().join("logs"));
    let err = uv
        .create_venv(&dir.path().join("venv"), &Default::default())
        .expect_err("killed");
    let text = err.render();
    assert!(text.contains("uv venv did not finish within 2 s"), "{text}");
    assert!(
        text.contains(&format!("command: {}", fake.display())),
        "{text}"
    );
    assert!(text.contains("log: "), "{text}");
    assert!(text.contains("LOCKSTEP_UV_TIMEOUT"), "{text}");
}

/// `uv build` takes build requirements from uv's cache first (`--offline`);
/// with a cache that lacks them, the first try fails and the build runs
/// again online: the build succeeds all the same.
#[test]
fn a_build_whose_requirements_are_not_cached_falls_back_to_the_index() {
    let work = tempfile::tempdir().expect("tmp");
    let empty_cache = work.path().join("empty-uv-cache");
    let mut argv = uv().argv().to_vec();
    argv.extend(["--cache-dir".to_string(), empty_cache.display().to_string()]);
    let cold = Uv::new(argv).logs_in(&work.path().join("logs"));
    let out = work.path().join("house");
    build(&cold, work.path(), &out, "coldcache", "", "X = 1\n");
    let wheels: Vec<_> = std::fs::read_dir(&out)
        .expect("wheelhouse")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".whl"))
        .collect();
    assert_eq!(wheels.len(), 1);
    let log = std::fs::read_to_string(work.path().join("coldcache.log")).expect("log");
    assert!(
        !log.contains("the network was disabled"),
        "the log is the online build's: {log}"
    );
}
