//! `lockstep bench` beyond this machine's CPU, with the real IREE tools:
//!
//! - a GPU device this machine lacks (`--device cuda`, `--device hip`) is
//!   skipped, naming the driver and the devices found, exit 0, never a
//!   failed row; `--compile-only` compiles for it here (cuda's default
//!   target; hip needs a chip named when none is detected);
//! - compile here, run there: `--bundle DIR` writes the modules, references
//!   and the compiler's identity, `--from-bundle DIR` runs them with only
//!   the runtime's tools (iree-base-runtime's directory: no iree-compile),
//!   compiling nothing; altered or mismatched bundles are refused before
//!   anything runs and left as they were;
//! - `lockstep test --target cuda|hip` (built-in GPU targets): compiled
//!   for the GPU where a chip is known, runs skipped by name where the
//!   device is missing, exit 0;
//! - `lockstep test --bundle DIR` / `--from-bundle DIR`: the suites, their
//!   modules and the compiler's identity; run with the runtime alone,
//!   nothing compiled, a bundle missing a module under its compiler's key
//!   refused;
//! - `lockstep doctor` lists the HAL drivers and devices.

use std::path::{Path, PathBuf};

use crate::common::*;

const COMMANDS: &str = "conv -n 2 -c 16 -H 8 -W 8 -k 8 -y 1 -x 1 -F 1 -i 3\n\
                        convbfp16 -n 2 -c 8 -H 8 -W 8 -k 8 -y 3 -x 3 -p 1 -q 1 -F 4 -i 3\n\
                        gemm -m 8 -n 8 -k 8 -i 3\n";

/// The runtime-only tools of the provisioned IREE (its iree-base-runtime's
/// native directory, which holds no iree-compile).
fn runtime_only_dir() -> PathBuf {
    let lib = toolchains().join("iree-3.13.0/venv/lib");
    let site = std::fs::read_dir(&lib)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("site-packages/iree/_runtime_libs"))
        .find(|p| p.join("iree-run-module").is_file())
        .expect("iree-base-runtime's tools");
    assert!(!site.join("iree-compile").exists());
    site
}

fn gpu_here(driver: &str) -> bool {
    lockstep_iree::gpu::detect(driver).is_ok()
}

#[test]
fn gpu_devices_this_machine_lacks_are_skipped_by_name() {
    let p = Project::new();
    for device in ["cuda", "hip"] {
        if gpu_here(device) {
            continue;
        }
        let out = p.run(
            &[
                "bench", "--device", device, "--json", "-", "gemm", "-m", "4", "-n", "4", "-k",
                "4", "-i", "2",
            ],
            0,
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let status = doc["rows"][0]["status"].as_str().unwrap().to_string();
        assert!(
            status.starts_with(&format!("skipped: no `{device}` device on this machine")),
            "{status}"
        );
        assert!(status.contains("local-task://"), "{status}");
        // Skipped, not failed.
        assert!(
            stderr(&out).contains("0 failed, 1 not run"),
            "{}",
            stderr(&out)
        );
    }
    // Compiled here for cuda (the compiler's default target), run nowhere.
    if !gpu_here("cuda") {
        let out = p.run(
            &[
                "bench",
                "--compile-only",
                "--device",
                "cuda",
                "gemm",
                "-m",
                "4",
                "-n",
                "4",
                "-k",
                "6",
            ],
            0,
        );
        assert!(
            stdout(&out).contains(">>> compiled (--compile-only)"),
            "{}",
            stdout(&out)
        );
        assert!(stderr(&out).contains("1 compiled"), "{}", stderr(&out));
    }
    // hip with no chip to detect cannot be compiled for: the error says how.
    if !gpu_here("hip") {
        let out = p.run(
            &[
                "bench",
                "--compile-only",
                "--device",
                "hip",
                "gemm",
                "-m",
                "4",
                "-n",
                "4",
                "-k",
                "4",
            ],
            2,
        );
        let err = stderr(&out);
        assert!(
            err.contains("needs a GPU target") && err.contains("[bench.devices.hip]"),
            "{err}"
        );
    }
}

#[test]
fn a_bundle_compiled_here_runs_with_the_runtime_alone() {
    let p = Project::new();
    let commands = p.write("commands.txt", COMMANDS);
    let bundle = p.root().join("bundle");
    let out = p.run(
        &[
            "bench",
            "-j",
            "2",
            "--verify",
            "--bundle",
            bundle.to_str().unwrap(),
            "--commands-file",
            commands.to_str().unwrap(),
        ],
        0,
    );
    assert_eq!(
        stdout(&out)
            .matches(">>> compiled (--compile-only)")
            .count(),
        3,
        "{}",
        stdout(&out)
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("bundle.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["kernels"].as_array().unwrap().len(), 3);
    // --verify: the references travel in the bundle.
    assert_eq!(
        walk(&bundle.join("references"))
            .iter()
            .filter(|f| f.to_string_lossy().ends_with(".out0.f64"))
            .count(),
        3
    );
    assert!(manifest["compiler"]["version"]
        .as_str()
        .unwrap()
        .contains("IREE compiler version"));

    // On "another machine": the runtime's tools alone, an empty cache.
    let runtime = runtime_only_dir();
    let other = Project::new();
    let out = other.run(
        &[
            "bench",
            "--from-bundle",
            bundle.to_str().unwrap(),
            "--iree-bin",
            runtime.to_str().unwrap(),
            "--verify",
            "--json",
            "-",
        ],
        0,
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["compiled"], 0, "{doc}");
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        assert_eq!(row["status"], "ok", "{row}");
        assert_eq!(row["verify"], "PASS", "{row}");
    }
}

/// A copy of `bundle` with `edit` applied to its manifest text.
fn altered(p: &Project, bundle: &Path, name: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let copy = p.root().join(name);
    let ok = std::process::Command::new("cp")
        .args(["-a", "-T"])
        .arg(bundle)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(ok.success());
    let manifest = copy.join("bundle.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, edit(&text)).unwrap();
    copy
}

#[test]
fn altered_or_mismatched_bundles_are_refused_and_kept() {
    let p = Project::new();
    let bundle = p.root().join("bundle");
    p.run(
        &[
            "bench",
            "--bundle",
            bundle.to_str().unwrap(),
            "gemm",
            "-m",
            "8",
            "-n",
            "8",
            "-k",
            "8",
        ],
        0,
    );
    let refused = |dir: &Path, needle: &str| {
        let out = p.run(&["bench", "--from-bundle", dir.to_str().unwrap()], 2);
        let err = stderr(&out);
        assert!(err.contains(needle), "{needle}: {err}");
        assert!(stdout(&out).is_empty(), "nothing ran: {}", stdout(&out));
    };
    // Made by another compiler than its keys say.
    let other = altered(&p, &bundle, "other-compiler", |t| {
        let doc: serde_json::Value = serde_json::from_str(t).unwrap();
        let id = doc["compiler"]["identity"].as_str().unwrap().to_string();
        t.replace(&id, &"ab".repeat(32))
    });
    refused(&other, "was not built by the compiler its manifest names");
    // Compiled by another IREE than the runtime here.
    let older = altered(&p, &bundle, "older", |t| {
        t.replacen("\"3.13.0\"", "\"3.12.0\"", 1)
    });
    refused(
        &older,
        "compiled by IREE 3.12.0, the runtime here is IREE 3.13.0",
    );
    // A module that does not match the manifest: refused, and left as it was.
    let tampered = altered(&p, &bundle, "tampered", |t| t.to_string());
    let mlir = walk(&tampered.join("kernels"))
        .into_iter()
        .find(|f| f.extension().is_some_and(|e| e == "vmfb"))
        .unwrap();
    std::fs::write(&mlir, b"not a module").unwrap();
    refused(&tampered, ".vmfb does not match bundle.json");
    assert_eq!(std::fs::read(&mlir).unwrap(), b"not a module");
    // Not a bundle; a newer format; a bundle never overwrites.
    refused(p.root(), "no bundle.json: not a bundle");
    let future = altered(&p, &bundle, "future", |t| {
        t.replace("\"schema\": 2", "\"schema\": 9")
    });
    refused(&future, "schema 9");
    let out = p.run(
        &[
            "bench",
            "--bundle",
            bundle.to_str().unwrap(),
            "gemm",
            "-m",
            "2",
            "-n",
            "2",
            "-k",
            "2",
        ],
        2,
    );
    assert!(stderr(&out).contains("is not empty"), "{}", stderr(&out));
    let out = p.run(
        &[
            "bench",
            "--from-bundle",
            bundle.to_str().unwrap(),
            "--device",
            "cuda",
        ],
        2,
    );
    assert!(
        stderr(&out).contains("give no --device"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn doctor_lists_the_runtime_drivers_and_devices() {
    let p = Project::new();
    // The provisioned toolchain is there (the other tests use it).
    p.run(&["toolchain", "install"], 0);
    let out = p.run(&["doctor"], 0);
    let text = stdout(&out);
    assert!(text.contains("IREE runtime devices (--device):"), "{text}");
    assert!(
        text.contains("HAL drivers: ") && text.contains("local-task"),
        "{text}"
    );
    assert!(
        text.contains("devices:     ") && text.contains("local-task://"),
        "{text}"
    );
    assert!(text.contains("cuda  GPU: "), "{text}");
    let out = p.run(&["doctor", "--json"], 0);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let drivers = doc["devices"]["runtime"]["drivers"].as_array().unwrap();
    assert!(drivers.iter().any(|d| d == "local-sync"), "{doc}");
}

#[test]
fn test_gpu_targets_compile_and_skip_where_the_device_is_missing() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    let out = p.run(
        &[
            "test", "s", "--target", "cuda", "--target", "hip", "--json", "-",
        ],
        0,
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for t in doc["tests"].as_array().unwrap() {
        let group = t["group"].as_str().unwrap();
        if gpu_here(group) {
            continue;
        }
        assert_eq!(t["outcome"], "skip", "{t}");
        let reason = t["reason"].as_str().unwrap();
        match group {
            "cuda" => {
                // Compiled for the GPU, run skipped naming the driver.
                assert_eq!(t["steps"][0]["status"], "passed", "{t}");
                assert!(
                    reason.starts_with("no `cuda` device on this machine"),
                    "{reason}"
                );
            }
            _ => assert!(reason.contains("no `hip` chip to compile for"), "{reason}"),
        }
    }
    let out = p.run(&["test", "s", "--target", "tpu"], 2);
    assert!(
        stderr(&out).contains("the GPUs cuda, hip"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_test_bundle_compiled_here_runs_with_the_runtime_alone() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44"), ("wrong", "0 0 0 0")]);
    let bundle = p.root().join("tests-bundle");
    let out = p.run(
        &[
            "test",
            "s",
            "--target",
            "cpu",
            "--target",
            "cuda",
            "--bundle",
            bundle.to_str().unwrap(),
        ],
        0,
    );
    assert!(
        stderr(&out).contains("bundle written to"),
        "{}",
        stderr(&out)
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("bundle.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["kind"], "test");
    assert_eq!(manifest["tests"].as_array().unwrap().len(), 4);
    assert!(bundle.join("suites/s/adds.suite.toml").is_file());

    // Elsewhere: the runtime's tools alone; nothing compiled; the wrong
    // expectation still fails (the bundle carries the expected outputs).
    let runtime = runtime_only_dir();
    let other = Project::new();
    let out = other.run(
        &[
            "test",
            "--from-bundle",
            bundle.to_str().unwrap(),
            "--iree-bin",
            runtime.to_str().unwrap(),
            "--json",
            "-",
        ],
        1,
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let outcome = |id: &str| {
        doc["tests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap_or_else(|| panic!("{id} in {doc}"))["outcome"]
            .clone()
    };
    assert_eq!(outcome("adds/add [cpu]"), "pass");
    assert_eq!(outcome("adds/wrong [cpu]"), "fail");
    if !gpu_here("cuda") {
        assert_eq!(outcome("adds/add [cuda]"), "skip");
    }
    assert!(
        text(&out.stderr).contains("compiles: 0 run"),
        "{}",
        text(&out.stderr)
    );

    // Modules not under the keys the compiler its manifest names gives
    // (made by another compiler than it says): refused, nothing runs.
    let identity = manifest["identity"].as_str().unwrap().to_string();
    let claimed = altered(&p, &bundle, "other-compiler", |t| {
        t.replace(&identity, &"ab".repeat(32))
    });
    let out = other.run(&["test", "--from-bundle", claimed.to_str().unwrap()], 2);
    assert!(
        stderr(&out).contains("not in the bundle under the keys its compiler"),
        "{}",
        stderr(&out)
    );
    // A module missing: refused, naming its seal.
    let entry = walk(&bundle.join("cache/compile"))
        .into_iter()
        .find(|f| f.extension().is_some_and(|e| e == "json"))
        .unwrap();
    std::fs::remove_file(&entry).unwrap();
    let out = other.run(&["test", "--from-bundle", bundle.to_str().unwrap()], 2);
    assert!(
        stderr(&out).contains("cannot be used") && stderr(&out).contains("does not exist"),
        "{}",
        stderr(&out)
    );
    let out = other.run(
        &[
            "test",
            "--from-bundle",
            bundle.to_str().unwrap(),
            "--target",
            "cpu",
        ],
        2,
    );
    assert!(
        stderr(&out).contains("give no PATH, --target"),
        "{}",
        stderr(&out)
    );
    let out = other.run(&["test", "--from-bundle", p.root().to_str().unwrap()], 2);
    assert!(stderr(&out).contains("not a bundle"), "{}", stderr(&out));
    let out = p.run(&["test", "s", "--bundle", bundle.to_str().unwrap()], 2);
    assert!(stderr(&out).contains("is not empty"), "{}", stderr(&out));
}

#[test]
fn bundles_are_whole_or_absent_whatever_the_cache_settings() {
    let p = Project::new();
    // With the kernel cache off, the modules are compiled into the bundle.
    let bundle = p.root().join("no-cache-bundle");
    let mut cmd = p.cmd(&[
        "bench",
        "--bundle",
        bundle.to_str().unwrap(),
        "gemm",
        "-m",
        "4",
        "-n",
        "4",
        "-k",
        "4",
    ]);
    expect(cmd.env("LOCKSTEP_KERNEL_CACHE", "0"), 0);
    let out = p.run(
        &[
            "bench",
            "--from-bundle",
            bundle.to_str().unwrap(),
            "--json",
            "-",
        ],
        0,
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["rows"][0]["status"], "ok", "{doc}");
    // A batch with a kernel that does not compile writes no bundle at all
    // (and leaves no staging directory).
    let commands = p.write(
        "bad.txt",
        "gemm -m 4 -n 4 -k 4\nconv -n 1 -c 1 -H 4 -W 4 -k 1 -y 1 -x 1 -F 1\n",
    );
    let failed = p.root().join("failed-bundle");
    let out = p.run(
        &[
            "bench",
            "--bundle",
            failed.to_str().unwrap(),
            "--compile-flag=--iree-this-flag-does-not-exist",
            "--commands-file",
            commands.to_str().unwrap(),
        ],
        1,
    );
    assert!(
        stderr(&out).contains("no bundle written"),
        "{}",
        stderr(&out)
    );
    assert!(!failed.exists());
    let leftovers: Vec<_> = std::fs::read_dir(p.root())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("failed-bundle"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A test bundle needs the cache and a target it can compile for.
    p.add_suite(&[("add", "11 22 33 44")]);
    let t = p.root().join("t-bundle");
    let out = p.run(
        &["test", "s", "--no-cache", "--bundle", t.to_str().unwrap()],
        2,
    );
    assert!(
        stderr(&out).contains("give no --no-cache"),
        "{}",
        stderr(&out)
    );
    if !gpu_here("hip") {
        let out = p.run(
            &[
                "test",
                "s",
                "--target",
                "hip",
                "--bundle",
                t.to_str().unwrap(),
            ],
            2,
        );
        assert!(
            stderr(&out).contains("nothing to compile for"),
            "{}",
            stderr(&out)
        );
        assert!(!t.exists());
    }
}

#[test]
fn gpu_targets_with_their_chip_named_compile_here() {
    // The flags lockstep writes for a detected chip (and the docs show),
    // compiled by the real iree-compile on a machine without either GPU.
    let p = Project::new();
    let flags = |driver: &str, chip: &str| {
        lockstep_iree::gpu::chip_flags(driver, chip)
            .iter()
            .map(|f| format!("{f:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    p.write(
        "lockstep.toml",
        &format!(
            "[bench.devices.ampere]\nruntime-device = \"cuda\"\ncompile-flags = [{}]\n\
             [bench.devices.mi300]\nruntime-device = \"hip\"\ncompile-flags = [{}]\n",
            flags(
                "cuda",
                &lockstep_iree::gpu::sm_of_compute_cap("9.0").unwrap()
            ),
            flags("hip", "gfx942"),
        ),
    );
    for device in ["ampere", "mi300"] {
        let out = p.run(
            &[
                "bench",
                "--compile-only",
                "--device",
                device,
                "conv",
                "-n",
                "1",
                "-c",
                "8",
                "-H",
                "8",
                "-W",
                "8",
                "-k",
                "8",
                "-y",
                "3",
                "-x",
                "3",
                "-p",
                "1",
                "-q",
                "1",
                "-F",
                "1",
            ],
            0,
        );
        assert!(
            stdout(&out).contains(">>> compiled (--compile-only)"),
            "{device}: {}",
            stdout(&out)
        );
    }
}

#[test]
fn bad_bundle_paths_and_manifests_are_usage_errors_naming_them() {
    let p = Project::new();
    let file = p.write("not-a-dir", "x");
    let out = p.run(
        &[
            "bench",
            "--bundle",
            file.to_str().unwrap(),
            "gemm",
            "-m",
            "2",
            "-n",
            "2",
            "-k",
            "2",
        ],
        2,
    );
    assert!(
        stderr(&out).contains("--bundle") && stderr(&out).contains("not-a-dir"),
        "{}",
        stderr(&out)
    );
    p.add_suite(&[("add", "11 22 33 44")]);
    let out = p.run(&["test", "s", "--bundle", file.to_str().unwrap()], 2);
    assert!(
        stderr(&out).contains("--bundle") && stderr(&out).contains("not-a-dir"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");

    // A manifest that is not JSON, and a bundle of the other kind.
    let garbage = p.root().join("garbage");
    std::fs::create_dir_all(&garbage).unwrap();
    std::fs::write(garbage.join("bundle.json"), b"\xff{not json").unwrap();
    for command in ["bench", "test"] {
        let out = p.run(&[command, "--from-bundle", garbage.to_str().unwrap()], 2);
        assert!(
            stderr(&out).contains("--from-bundle"),
            "{command}: {}",
            stderr(&out)
        );
    }
    let bench_bundle = p.root().join("bench-bundle");
    p.run(
        &[
            "bench",
            "--bundle",
            bench_bundle.to_str().unwrap(),
            "gemm",
            "-m",
            "2",
            "-n",
            "2",
            "-k",
            "2",
        ],
        0,
    );
    let out = p.run(
        &["test", "--from-bundle", bench_bundle.to_str().unwrap()],
        2,
    );
    assert!(
        stderr(&out).contains("is not a test bundle's"),
        "{}",
        stderr(&out)
    );
    let test_bundle = p.root().join("test-bundle");
    p.run(&["test", "s", "--bundle", test_bundle.to_str().unwrap()], 0);
    let out = p.run(
        &["bench", "--from-bundle", test_bundle.to_str().unwrap()],
        2,
    );
    assert!(
        stderr(&out).contains("is a test bundle"),
        "{}",
        stderr(&out)
    );
}

/// `path` replaced by a FIFO nothing writes to.
fn fifo_at(path: &Path) {
    let _ = std::fs::remove_file(path);
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
}

/// `path` replaced by a symbolic link to `target`.
fn link_at(path: &Path, target: &str) {
    let _ = std::fs::remove_file(path);
    std::os::unix::fs::symlink(target, path).unwrap();
}

/// The one file under `dir` whose name ends with `suffix`.
fn the_file(dir: &Path, suffix: &str) -> PathBuf {
    let found: Vec<PathBuf> = walk(dir)
        .into_iter()
        .filter(|f| f.to_string_lossy().ends_with(suffix))
        .collect();
    assert_eq!(found.len(), 1, "{suffix} in {dir:?}: {found:?}");
    found[0].clone()
}

/// The seal beside `payload` rewritten to record `bytes` as its content:
/// what someone who alters a module and recomputes its seal leaves.
fn reseal(payload: &Path, bytes: &[u8]) {
    let suffix = payload.extension().unwrap().to_str().unwrap().to_string();
    let seal = payload.with_extension("json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&seal).unwrap()).unwrap();
    doc["files"][&suffix]["size"] = bytes.len().into();
    doc["files"][&suffix]["sha256"] = lockstep_core::hash::sha256_bytes(bytes).into();
    std::fs::write(&seal, serde_json::to_string(&doc).unwrap()).unwrap();
    std::fs::write(payload, bytes).unwrap();
}

#[test]
fn bundle_files_that_are_fifos_or_devices_are_refused_at_once() {
    // Issue 41: a module, a seal or the commands of a bundle that is a
    // FIFO, /dev/zero or /dev/urandom made `--from-bundle` never end. Each
    // is refused before anything runs (exit 2), naming the file.
    let p = Project::new();
    let bundle = p.root().join("bundle");
    p.run(
        &[
            "bench",
            "--bundle",
            bundle.to_str().unwrap(),
            "gemm",
            "-m",
            "8",
            "-n",
            "8",
            "-k",
            "8",
        ],
        0,
    );
    type Plant = fn(&Path);
    let cases: [(&str, Plant, &str, &str); 7] = [
        (
            "zero-module",
            |b| link_at(&the_file(&b.join("kernels"), ".vmfb"), "/dev/zero"),
            ".vmfb cannot be used",
            "is a device (through a link)",
        ),
        // Its seal saying it is empty (so that its size "matches"): hashed
        // without end before.
        (
            "zero-module-resealed",
            |b| {
                let vmfb = the_file(&b.join("kernels"), ".vmfb");
                reseal(&vmfb, b"");
                link_at(&vmfb, "/dev/zero");
            },
            ".vmfb cannot be used",
            "is a device (through a link)",
        ),
        (
            "fifo-seal",
            |b| fifo_at(&the_file(&b.join("kernels"), ".json")),
            ".json cannot be used",
            "is a FIFO",
        ),
        (
            "fifo-mlir",
            |b| fifo_at(&the_file(&b.join("kernels"), ".mlir")),
            ".mlir cannot be used",
            "is a FIFO",
        ),
        (
            "random-commands",
            |b| link_at(&b.join("commands.txt"), "/dev/urandom"),
            "commands.txt cannot be used",
            "is a device (through a link)",
        ),
        (
            "fifo-manifest",
            |b| fifo_at(&b.join("bundle.json")),
            "bundle.json cannot be read",
            "is a FIFO",
        ),
        (
            "proc-manifest",
            |b| link_at(&b.join("bundle.json"), "/proc/self/status"),
            "bundle.json cannot be read",
            "kernel file",
        ),
    ];
    for (name, plant, says, kind) in cases {
        let copy = altered(&p, &bundle, name, |t| t.to_string());
        plant(&copy);
        let out = p.run(&["bench", "--from-bundle", copy.to_str().unwrap()], 2);
        let err = stderr(&out);
        assert!(
            err.contains(&format!("--from-bundle {}", copy.display())),
            "{name}: {err}"
        );
        assert!(err.contains(says) && err.contains(kind), "{name}: {err}");
        assert!(stdout(&out).is_empty(), "{name}: nothing ran");
    }
}

#[test]
fn a_module_altered_with_its_seal_recomputed_is_refused() {
    // The seal covers a module's bytes; the manifest lists every file's
    // sha256, so a module altered together with its seal no longer
    // matches the manifest (docs/bench.md: refused).
    let p = Project::new();
    let bundle = p.root().join("bundle");
    p.run(
        &[
            "bench",
            "--bundle",
            bundle.to_str().unwrap(),
            "gemm",
            "-m",
            "8",
            "-n",
            "8",
            "-k",
            "8",
        ],
        0,
    );
    let other = p.root().join("other");
    p.run(
        &[
            "bench",
            "--bundle",
            other.to_str().unwrap(),
            "gemm",
            "-m",
            "8",
            "-n",
            "8",
            "-k",
            "4",
        ],
        0,
    );
    // Another kernel's (valid, runnable) module in its place, resealed.
    let copy = altered(&p, &bundle, "resealed", |t| t.to_string());
    let vmfb = the_file(&copy.join("kernels"), ".vmfb");
    let foreign = std::fs::read(the_file(&other.join("kernels"), ".vmfb")).unwrap();
    reseal(&vmfb, &foreign);
    let out = p.run(&["bench", "--from-bundle", copy.to_str().unwrap()], 2);
    let err = stderr(&out);
    assert!(err.contains(".vmfb does not match bundle.json"), "{err}");
    assert!(stdout(&out).is_empty(), "nothing ran: {}", stdout(&out));
    // A file added to the bundle is refused too, naming it.
    let copy = altered(&p, &bundle, "added", |t| t.to_string());
    std::fs::write(copy.join("kernels/extra.vmfb"), b"x").unwrap();
    let out = p.run(&["bench", "--from-bundle", copy.to_str().unwrap()], 2);
    assert!(
        stderr(&out).contains("kernels/extra.vmfb is not one of the files bundle.json lists"),
        "{}",
        stderr(&out)
    );
    // The sha256 of bundle.json is printed where it is made and where it
    // runs, to compare when the way between them is not trusted.
    let sha =
        lockstep_core::hash::sha256_bytes(&std::fs::read(bundle.join("bundle.json")).unwrap());
    let out = p.run(&["bench", "--from-bundle", bundle.to_str().unwrap()], 0);
    assert!(
        stderr(&out).contains(&format!("bundle.json sha256 {sha}")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn outputs_inside_a_bundle_are_refused_before_anything_runs() {
    // Issue 41: `--from-bundle B --json B/bundle.json` overwrote the
    // manifest. An output inside the bundle read or written (through
    // links too) is a usage error naming the flag; nothing is written.
    let p = Project::new();
    let bundle = p.root().join("bundle");
    p.run(
        &[
            "bench",
            "--bundle",
            bundle.to_str().unwrap(),
            "gemm",
            "-m",
            "4",
            "-n",
            "4",
            "-k",
            "4",
        ],
        0,
    );
    let manifest = std::fs::read(bundle.join("bundle.json")).unwrap();
    let via = p.root().join("via");
    std::os::unix::fs::symlink(&bundle, &via).unwrap();
    let to_manifest = p.root().join("results.json");
    std::os::unix::fs::symlink(bundle.join("bundle.json"), &to_manifest).unwrap();
    let b = bundle.to_str().unwrap().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "bench".into(),
                "--from-bundle".into(),
                b.clone(),
                "--json".into(),
                format!("{b}/bundle.json"),
            ],
            "--json",
        ),
        (
            vec![
                "bench".into(),
                "--from-bundle".into(),
                b.clone(),
                "--csv".into(),
                format!("{}/new.csv", via.display()),
            ],
            "--csv",
        ),
        (
            vec![
                "bench".into(),
                "--from-bundle".into(),
                b.clone(),
                "--json".into(),
                to_manifest.display().to_string(),
            ],
            "--json",
        ),
        (
            vec![
                "--events".into(),
                format!("{b}/kernels/events.jsonl"),
                "bench".into(),
                "--from-bundle".into(),
                b.clone(),
            ],
            "--events",
        ),
    ];
    for (args, flag) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = p.run(&args, 2);
        let err = stderr(&out);
        assert!(
            err.contains(&format!("{flag} "))
                && err.contains(&format!("is inside --from-bundle {b}")),
            "{args:?}: {err}"
        );
        assert!(stdout(&out).is_empty(), "{args:?} ran: {}", stdout(&out));
    }
    assert_eq!(std::fs::read(bundle.join("bundle.json")).unwrap(), manifest);
    assert!(!bundle.join("kernels/events.jsonl").exists());
    // The bundle still runs.
    p.run(&["bench", "--from-bundle", &b], 0);

    // A test bundle, read or being written.
    p.add_suite(&[("add", "11 22 33 44")]);
    let tb = p.root().join("tb");
    p.run(&["test", "s", "--bundle", tb.to_str().unwrap()], 0);
    let junit = tb.join("suites/s/add.mlir");
    let source = std::fs::read(&junit).unwrap();
    let out = p.run(
        &[
            "test",
            "--from-bundle",
            tb.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
        2,
    );
    assert!(
        stderr(&out).contains("is inside --from-bundle"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&junit).unwrap(), source);
    let empty = p.root().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = p.run(
        &[
            "test",
            "s",
            "--bundle",
            empty.to_str().unwrap(),
            "--json",
            empty.join("results.json").to_str().unwrap(),
        ],
        2,
    );
    assert!(
        stderr(&out).contains("is inside --bundle"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
}

#[test]
fn a_test_bundle_runs_the_selection_it_was_made_with() {
    // Issue 41: a bundle made with `-k` was refused without the same `-k`
    // and blamed on tampering. It records its tests and runs them; `-k`
    // and `-m` there narrow them.
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44"), ("wrong", "0 0 0 0")]);
    let bundle = p.root().join("k-bundle");
    p.run(
        &[
            "test",
            "s",
            "-k",
            "/add",
            "--bundle",
            bundle.to_str().unwrap(),
        ],
        0,
    );
    let b = bundle.to_str().unwrap();
    let out = p.run(&["test", "--from-bundle", b, "--json", "-"], 0);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = doc["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["adds/add [cpu]"], "{doc}");
    let out = p.run(&["test", "--from-bundle", b, "-k", "/add"], 0);
    assert!(stdout(&out).contains("1 pass"), "{}", stdout(&out));
    // `--list` lists the bundle's selection and runs nothing.
    let out = p.run(&["test", "--from-bundle", b, "--list"], 0);
    assert!(
        stdout(&out).starts_with("adds/add [cpu]") && !stdout(&out).contains("pass"),
        "{}",
        stdout(&out)
    );
    // Narrowed to nothing: no tests selected, not "altered".
    let out = p.run(&["test", "--from-bundle", b, "-k", "wrong"], 0);
    assert!(
        stderr(&out).contains("no tests selected"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_test_bundle_inside_its_suite_is_refused_before_anything_is_written() {
    // Issue 41: `test --bundle DIR` with DIR inside a suite copied the
    // suite into itself.
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    let suite = p.path().join("s");
    let before = walk(&suite);
    let inside = suite.join("bundle");
    let out = p.run(&["test", "s", "--bundle", inside.to_str().unwrap()], 2);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("--bundle {}", inside.display()))
            && err.contains(&format!("is inside the suite {}", suite.display())),
        "{err}"
    );
    // Through a link to the suite too.
    let link = p.root().join("suite-link");
    std::os::unix::fs::symlink(&suite, &link).unwrap();
    let out = p.run(
        &[
            "test",
            "s",
            "--bundle",
            link.join("deeper/b").to_str().unwrap(),
        ],
        2,
    );
    assert!(
        stderr(&out).contains("is inside the suite"),
        "{}",
        stderr(&out)
    );
    assert_eq!(walk(&suite), before, "nothing written");
    let leftovers: Vec<_> = std::fs::read_dir(&suite)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers.len(), 2, "{leftovers:?}");
}

#[test]
fn test_bundle_files_that_are_fifos_devices_or_altered_are_refused_at_once() {
    // Issue 41: a suite source of a test bundle linked to /dev/zero (or a
    // seal that is a FIFO) made `test --from-bundle` never end; an
    // expected output altered in the copied suite ran.
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    let bundle = p.root().join("tb");
    p.run(&["test", "s", "--bundle", bundle.to_str().unwrap()], 0);
    type Plant = fn(&Path);
    let cases: [(&str, Plant, &str); 5] = [
        (
            "zero-source",
            |b| link_at(&b.join("suites/s/add.mlir"), "/dev/zero"),
            "suites/s/add.mlir cannot be used",
        ),
        (
            "fifo-seal",
            |b| fifo_at(&the_file(&b.join("cache"), ".json")),
            ".json cannot be used",
        ),
        (
            "fifo-suite",
            |b| fifo_at(&b.join("suites/s/adds.suite.toml")),
            "suites/s/adds.suite.toml cannot be used",
        ),
        (
            "fifo-config",
            |b| fifo_at(&b.join("lockstep.toml")),
            "lockstep.toml cannot be used",
        ),
        (
            "expected-output",
            |b| {
                let suite = b.join("suites/s/adds.suite.toml");
                let text = std::fs::read_to_string(&suite).unwrap();
                std::fs::write(&suite, text.replace("11 22 33 44", "0 0 0 0")).unwrap();
            },
            "suites/s/adds.suite.toml does not match bundle.json",
        ),
    ];
    for (name, plant, says) in cases {
        let copy = altered(&p, &bundle, name, |t| t.to_string());
        plant(&copy);
        let out = p.run(&["test", "--from-bundle", copy.to_str().unwrap()], 2);
        let err = stderr(&out);
        assert!(err.contains(says), "{name}: {err}");
        assert!(
            !stdout(&out).contains("test result"),
            "{name}: ran: {}",
            stdout(&out)
        );
    }
}
