//! `lockstep cache info` and `lockstep cache prune` over every area with real
//! entries (test's compiles, bench's kernels and references, preprocessed
//! executables, a download from a loopback server), files lockstep did not
//! create left alone and named, and a toolchain reinstalled elsewhere hitting
//! a warm cache (docs/cache.md).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::common::Project;
use serde_json::Value;

const AREAS: [&str; 9] = [
    "compile",
    "kernels",
    "preprocess",
    "downloads",
    "references",
    "results",
    "wheels",
    "toolchains",
    "compiler",
];

fn area<'a>(info: &'a Value, name: &str) -> &'a Value {
    info["areas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("no area {name} in {info:#}"))
}

/// The project's own toolchains directory, for the cache commands (the
/// toolchains the tests share are never pruned).
fn own_toolchains(p: &Project) -> PathBuf {
    p.root().join("toolchains")
}

fn cache_cmd(p: &Project, args: &[&str]) -> std::process::Output {
    p.run_with(args, &[("LOCKSTEP_TOOLCHAINS", &own_toolchains(p))], 0)
}

fn info(p: &Project) -> Value {
    let out = cache_cmd(p, &["cache", "info", "--json"]);
    serde_json::from_slice(&out.stdout).expect("cache info --json is JSON")
}

/// A toolchain as lockstep-iree lays one out (its manifest, its lock, the
/// private uv beside it), in the project's own toolchains directory.
fn fake_toolchain(p: &Project) {
    let dir = own_toolchains(p);
    std::fs::create_dir_all(dir.join("iree-0.0.1/bin")).unwrap();
    std::fs::write(dir.join("iree-0.0.1/toolchain.json"), "{}").unwrap();
    std::fs::write(dir.join("iree-0.0.1/bin/iree-compile"), "#!/bin/sh\n").unwrap();
    std::fs::write(dir.join(".iree-0.0.1.lock"), "").unwrap();
    std::fs::create_dir_all(dir.join(".uv/bin")).unwrap();
    std::fs::write(dir.join(".uv/bin/uv"), "uv").unwrap();
}

/// Bytes of every file below `dir`, except `skip`.
fn bytes_below(dir: &Path, skip: &[PathBuf]) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if skip.contains(&path) {
            continue;
        }
        total += if path.is_dir() {
            bytes_below(&path, skip)
        } else {
            entry.metadata().map(|m| m.len()).unwrap_or(0)
        };
    }
    total
}

/// Fills every area with real entries.
fn fill_every_area(p: &Project) {
    static BODY: &str = "// served\nfunc.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = arith.addf %a, %b : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n";
    let (port, _) = crate::common::serve(BODY, 4);
    let sha = crate::common::sha256_hex(BODY.as_bytes());
    p.write("s/add.mlir", crate::common::ADD);
    p.write(
        "s/adds.suite.toml",
        &(crate::common::native_add_test("local", "add.mlir", "11 22 33 44")
            + &format!(
                "[[test]]\nname = \"remote\"\nurl = \"http://127.0.0.1:{port}/add.mlir\"\n\
                 sha256 = \"{sha}\"\nfunction = \"main\"\n\
                 inputs = [\"4xf32=1 2 3 4\", \"4xf32=10 20 30 40\"]\n\
                 outputs = [\"4xf32=11 22 33 44\"]\n"
            )),
    );
    p.run(&["test", "s"], 0);
    p.run(
        &[
            "bench", "--verify", "conv", "-n", "1", "-c", "4", "-H", "6", "-W", "6", "-k", "8",
            "-y", "3", "-x", "3", "-F", "1",
        ],
        0,
    );
    p.write("p.mlir", crate::common::ADD);
    p.run(
        &[
            "preprocess",
            "p.mlir",
            "-o",
            "out.mlir",
            "--with",
            "cat",
            "--",
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
        ],
        0,
    );
    let packages = p.root().join("packages");
    lockstep_sandbox::packages::create(&packages, "1.0.0", "").unwrap();
    crate::common::expect(
        &mut p.cmd_in(&packages, &["pkg", "build", "--variant", "release"]),
        0,
    );
    // The compiler area: a native build under sccache.
    let native = lockstep_sandbox::native::create(
        &p.root().join("native"),
        &lockstep_sandbox::native::NativeSpec::default(),
    )
    .unwrap();
    crate::common::expect(&mut p.cmd_in(&native.project, &["pkg", "build"]), 0);
    fake_toolchain(p);
}

#[test]
fn info_lists_every_area_and_prune_to_zero_empties_them_but_not_foreign_files() {
    let p = Project::new();
    fill_every_area(&p);
    // Files lockstep did not create, in its areas and beside them.
    let cache = p.cache();
    let foreign = vec![
        cache.join("bench/conv_2d_mine/0123.vmfb"),
        cache.join("compile/notes.txt"),
        cache.join("my-stuff"),
    ];
    for path in &foreign[..2] {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"not lockstep's").unwrap();
    }
    std::fs::create_dir_all(&foreign[2]).unwrap();

    let before = info(&p);
    assert_eq!(before["schema"], 1);
    assert_eq!(
        Path::new(before["root"].as_str().unwrap()),
        cache.as_path(),
        "{before:#}"
    );
    let names: Vec<&str> = before["areas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, AREAS);
    for name in AREAS {
        let a = area(&before, name);
        assert!(a["entries"].as_u64().unwrap() >= 1, "{name}: {a}");
        assert!(a["bytes"].as_u64().unwrap() > 0, "{name}: {a}");
        assert!(Path::new(a["path"].as_str().unwrap()).is_dir(), "{a}");
    }
    assert_eq!(
        area(&before, "kernels")["path"],
        cache.join("bench").display().to_string()
    );
    let mut listed: Vec<PathBuf> = before["foreign"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| PathBuf::from(f.as_str().unwrap()))
        .collect();
    listed.sort();
    let mut want = foreign.clone();
    want.sort();
    assert_eq!(listed, want);

    let out = cache_cmd(&p, &["cache", "prune", "--max-size", "0"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let toolchains = own_toolchains(&p);
    assert!(!toolchains.join("iree-0.0.1").exists(), "{stdout}");
    assert!(
        toolchains.join(".uv/bin/uv").exists(),
        "the private uv stays"
    );
    for path in &foreign {
        assert!(path.exists(), "{} was removed", path.display());
        assert!(stdout.contains(&path.display().to_string()), "{stdout}");
    }
    assert!(stdout.contains("downloads: removed 1 entry"), "{stdout}");
    let after = info(&p);
    for name in AREAS {
        let a = area(&after, name);
        assert_eq!(
            (a["entries"].as_u64(), a["bytes"].as_u64()),
            (Some(0), Some(0)),
            "{a}"
        );
    }
    // What is left besides the foreign files (locks, the tag) is small.
    let left = bytes_below(&cache, &foreign);
    assert!(left < 1 << 20, "{left} bytes left");

    // Emptied, the cache is rebuilt: both sources compile again.
    p.run(&["test", "s", "--json", "again.json"], 0);
    assert_eq!(p.json("again.json")["summary"]["compiles_run"], 2);
}

#[test]
fn prune_needs_a_limit_and_rejects_bad_sizes() {
    let p = Project::new();
    let out = p.run(&["cache", "prune"], 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to prune by"));
    for bad in ["-1M", "2Q", "lots", "1e30T"] {
        let out = p.run(&["cache", "prune", &format!("--max-size={bad}")], 2);
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("invalid size"),
            "{bad}"
        );
    }
}

#[test]
fn a_toolchain_reinstalled_elsewhere_hits_the_warm_cache() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    p.run(&["test", "s", "--json", "first.json"], 0);
    let first = p.json("first.json");
    assert_eq!(first["summary"]["compiles_run"], 1);

    // The same IREE version installed again in another directory: files
    // copied (not hard-linked from uv's cache), with new mtimes.
    let elsewhere = p.path().join("other-toolchains");
    let install = p.run_with(
        &["toolchain", "install", "--json"],
        &[
            ("LOCKSTEP_TOOLCHAINS", elsewhere.as_path()),
            ("UV_LINK_MODE", Path::new("copy")),
        ],
        0,
    );
    let installed: Value = serde_json::from_slice(&install.stdout).unwrap();
    let bin = PathBuf::from(installed["bin"].as_str().unwrap());
    assert!(bin.starts_with(&elsewhere), "{installed:#}");
    let real = |bin: &Path| std::fs::canonicalize(bin.join("iree-compile")).unwrap();
    let (a, b) = (real(crate::common::iree_bin()), real(&bin));
    assert_ne!(a, b);
    let (ma, mb) = (a.metadata().unwrap(), b.metadata().unwrap());
    assert_ne!(ma.ino(), mb.ino(), "a copy, not a hard link");
    assert_ne!(
        ma.mtime_nsec() + ma.mtime() * 1_000_000_000,
        mb.mtime_nsec() + mb.mtime() * 1_000_000_000
    );

    p.run_with(
        &["test", "s", "--json", "second.json"],
        &[("LOCKSTEP_TOOLCHAINS", elsewhere.as_path())],
        0,
    );
    let second = p.json("second.json");
    assert_eq!(second["summary"]["compiles_run"], 0, "{second:#}");
    assert_eq!(second["summary"]["compiles_cached"], 1);
    assert_eq!(
        second["summary"]["compiler_identity"],
        first["summary"]["compiler_identity"]
    );
}

#[test]
fn toolchains_are_pruned_by_last_use_and_never_while_installing() {
    let p = Project::new();
    fake_toolchain(&p);
    let dir = own_toolchains(&p);
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    // A half-built toolchain of a killed install.
    std::fs::create_dir_all(dir.join(".iree-0.0.2.tmp-99999999-0/venv")).unwrap();
    let before = info(&p);
    let a = area(&before, "toolchains");
    assert_eq!(a["entries"], 1, "{a}");
    assert_eq!(Path::new(a["path"].as_str().unwrap()), dir.as_path());
    assert!(before["foreign"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f.as_str().unwrap().ends_with("notes.txt")));
    // Used just now: --older-than keeps it; the half-built one goes.
    let out = cache_cmd(&p, &["cache", "prune", "--older-than", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("toolchains: removed 0 entries"), "{stdout}");
    assert!(dir.join("iree-0.0.1").exists());
    assert!(!dir.join(".iree-0.0.2.tmp-99999999-0").exists());
    // Being installed (its lock held): kept, counted in use.
    let lock = std::fs::File::options()
        .write(true)
        .open(dir.join(".iree-0.0.1.lock"))
        .unwrap();
    lock.lock().unwrap();
    let out = cache_cmd(&p, &["cache", "prune", "--max-size", "0"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 in use"), "{stdout}");
    assert!(dir.join("iree-0.0.1/toolchain.json").exists());
    drop(lock);
    cache_cmd(&p, &["cache", "prune", "--max-size", "0"]);
    assert!(!dir.join("iree-0.0.1").exists());
    assert!(dir.join("notes.txt").exists() && dir.join(".uv/bin/uv").exists());
}
