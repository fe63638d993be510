//! The `lockstep-kernels` Python package as a user gets it: in a clone of
//! this repository `lockstep pkg build --package lockstep-kernels` builds
//! its wheel (maturin over PyO3), `lockstep release publish` validates it in
//! a fresh venv (its NumPy and IREE requirements from PyPI) and adds it to a
//! release store, `lockstep release serve` serves that index and uv installs
//! it from there into a fresh venv, where:
//!
//! - the examples of docs/kernels-python.md run as written;
//! - the package's own tests (python/lockstep-kernels/tests) pass: every
//!   conv direction, gemm, layer norm, DLPack, bad input, the cache (shared
//!   across processes, off, BOO's variables, corrupt entries, unwritable),
//!   one compile across threads and processes, GPUs skipped by name;
//! - a kernel `lockstep bench` compiled launches from Python without a
//!   compile (the same key), and one launched from Python is a bench hit.
//!
//! The wheel is built with the dev profile in the target directory
//! tests/testsuite/pkg_cli.rs uses (kept between runs; cargo's lock serializes them).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The python code blocks of a Markdown page, each run as its own function.
fn examples_of(page: &str) -> String {
    let mut script = String::new();
    let mut block: Option<String> = None;
    let mut n = 0;
    for line in page.lines() {
        match (&mut block, line.trim_end()) {
            (None, "```python") => block = Some(String::new()),
            (Some(body), "```") => {
                script.push_str(&format!("def example_{n}():\n"));
                for l in body.lines() {
                    script.push_str(&format!("    {l}\n"));
                }
                script.push_str(&format!("example_{n}()\nprint('example {n} ok')\n"));
                n += 1;
                block = None;
            }
            (Some(body), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(n >= 4, "the page has {n} python examples");
    script
}

#[test]
fn the_kernels_package_builds_publishes_installs_and_launches() {
    let p = Project::new();
    let clone = p.root().join("lockstep");
    let out = Command::new("git")
        .args(["clone", "--quiet", "--no-hardlinks"])
        .arg(repository())
        .arg(&clone)
        .output()
        .expect("git clone");
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The working tree's package and docs (this test may run before they
    // are committed).
    for rel in [
        "python/lockstep-kernels",
        "crates/lockstep-kernels-py",
        "docs",
    ] {
        let copied = Command::new("cp")
            .args(["-a", "-T"])
            .arg(repository().join(rel))
            .arg(clone.join(rel))
            .output()
            .unwrap();
        assert!(copied.status.success(), "{}", text(&copied.stderr));
    }

    // The set is this one package (lockstep.toml's whole set, with
    // lockstep-cli's binary, is tests/testsuite/pkg_cli.rs's), released with a
    // smoke that imports it.
    write(
        &clone.join("lockstep.toml"),
        "[pkg]\npython = [\"3.11\"]\nout = \"wheelhouse\"\ncompiler-cache = \"none\"\n\
         manylinux = \"off\"\n\n[[pkg.package]]\nname = \"lockstep-kernels\"\n\
         source = \"python/lockstep-kernels\"\n\n[release]\nname = \"kernels\"\n\
         version-base = \"0.1.0\"\nindex = \"release/index\"\n\
         smoke = \"python -c 'import lockstep_kernels'\"\n",
    );
    // At the clone's commit time: the demo's and pkg_cli's wheel builds of
    // this commit compiled ring, libsqlite3-sys ... with that
    // SOURCE_DATE_EPOCH in the build directory this build shares.
    commit_as_tester_at_head_time(&clone, "only lockstep-kernels");
    let build_env = wheel_build_env();
    let wheelhouse = p.root().join("wheelhouse");
    let built = expect(
        p.cmd_in(&clone, &["pkg", "build", "--version", "0.1.0", "--out"])
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
    assert_eq!(wheels.len(), 1, "{wheels:?} {}", stderr(&built));
    assert!(
        wheels[0].starts_with("lockstep_kernels-0.1.0-cp311-cp311-")
            && wheels[0].ends_with("linux_x86_64.whl"),
        "{wheels:?}"
    );

    // Published: validated in a fresh venv, NumPy and IREE from PyPI.
    expect(
        p.cmd_in(&clone, &["release", "publish"]).arg(&wheelhouse),
        0,
    );
    let served = Served::start_in(&p, &clone);

    // A fresh venv, the package from the served index.
    let venv = p.root().join("venv");
    let uv = |args: &[&str]| {
        let out = Command::new(shared_uv())
            .args(args)
            .env("VIRTUAL_ENV", &venv)
            .env_remove("UV_INDEX_URL")
            .env_remove("UV_EXTRA_INDEX_URL")
            .output()
            .expect("uv");
        assert!(
            out.status.success(),
            "uv {args:?}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
    };
    let python = python_of("3.11");
    uv(&["venv", "--quiet", "--no-config", "--python"]
        .iter()
        .copied()
        .chain([python.to_str().unwrap(), venv.to_str().unwrap()])
        .collect::<Vec<_>>());
    uv(&[
        "pip",
        "install",
        "--quiet",
        "--no-config",
        "--index-url",
        &served.url(),
        "--extra-index-url",
        "https://pypi.org/simple/",
        "--index-strategy",
        "unsafe-best-match",
        "lockstep-kernels==0.1.0",
        // The IREE lockstep's own toolchain uses: one identity for both.
        "iree-base-compiler==3.13.0",
        "iree-base-runtime==3.13.0",
    ]);
    drop(served);
    let venv_python = venv.join("bin/python");
    let kernel_cache = p.root().join("kernels");
    let run_python = |args: &[&str], cwd: &Path| {
        let out = Command::new(&venv_python)
            .args(args)
            .current_dir(cwd)
            .env("LOCKSTEP_KERNEL_CACHE_DIR", &kernel_cache)
            .env("LOCKSTEP_KERNEL_WORK_DIR", p.root().join("kernel-work"))
            .env_remove("LOCKSTEP_IREE_BIN")
            .env_remove("BOO_CACHE_DIR")
            .env_remove("BOO_CACHE_ON")
            .output()
            .expect("python");
        assert!(
            out.status.success(),
            "python {args:?}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    };

    // The docs page's examples, as written.
    let page = std::fs::read_to_string(clone.join("docs/kernels-python.md")).unwrap();
    let script = p.root().join("examples.py");
    std::fs::write(&script, examples_of(&page)).unwrap();
    let printed = run_python(&[script.to_str().unwrap()], p.root());
    assert!(printed.contains("example 3 ok"), "{printed}");

    // The package's own tests, against the installed wheel (not the
    // source tree: they run from a copy of the tests directory alone).
    let tests = p.root().join("py-tests");
    let copied = Command::new("cp")
        .args(["-a", "-T"])
        .arg(clone.join("python/lockstep-kernels/tests"))
        .arg(&tests)
        .output()
        .unwrap();
    assert!(copied.status.success());
    let out = Command::new(&venv_python)
        .args(["-m", "unittest", "discover", "-v", "-s"])
        .arg(&tests)
        .current_dir(p.root())
        .env_remove("LOCKSTEP_IREE_BIN")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let report = text(&out.stderr);
    assert!(
        report.contains("test_gpu_devices_launch_or_skip_naming_what_is_missing"),
        "{report}"
    );

    // lockstep bench and the package share one cache: a kernel benchmarked
    // launches without compiling, and one launched is a bench hit.
    let benched = "conv -n 2 -c 16 -H 8 -W 8 -k 8 -y 1 -x 1 -F 1 -t 0";
    let bench = |command: &str| {
        let out = expect(
            p.cmd(&["bench", "--json", "-"])
                .args(command.split(' '))
                .env("LOCKSTEP_KERNEL_CACHE_DIR", &kernel_cache),
            0,
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("bench JSON");
        doc
    };
    let doc = bench(benched);
    assert_eq!(doc["compiled"], 1, "{doc}");
    let launched = run_python(
        &[
            "-c",
            &format!(
                "import lockstep_kernels as lk; f = lk.get_launchable({:?}); print(f.cached)",
                benched.trim_end_matches(" -t 0")
            ),
        ],
        p.root(),
    );
    assert_eq!(launched.trim(), "True", "bench's kernel was compiled again");
    let fresh = "gemm -m 8 -n 8 -k 8 -F 1";
    let launched = run_python(
        &[
            "-c",
            &format!("import lockstep_kernels as lk; print(lk.get_launchable({fresh:?}).cached)"),
        ],
        p.root(),
    );
    assert_eq!(launched.trim(), "False");
    let doc = bench(&format!("{fresh} -t 0"));
    assert_eq!(doc["compiled"], 0, "{doc}");
}
