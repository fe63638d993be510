//! `lockstep toolchain install|path` with the real binary and real IREE
//! packages from PyPI.
//!
//! The shared installs use `$LOCKSTEP_TOOLCHAINS` as the environment sets it
//! (default `~/.cache/lockstep/toolchains`) so test runs do not reinstall;
//! tests about installing itself use a fresh temporary directory (uv's own
//! cache keeps those fast after the first download).

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::{stderr, stdout, Project};

fn run(cmd: &mut Command) -> Output {
    crate::common::output(cmd)
}

/// The single line `lockstep toolchain path` printed.
fn single_line(out: &Output) -> PathBuf {
    assert!(out.status.success(), "{}", stderr(out));
    let text = stdout(out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "path prints one line: {text:?}");
    PathBuf::from(lines[0])
}

fn is_elf(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

/// A directory with a fake `iree-compile` (a shell script printing a version).
fn fake_tools(dir: &Path, stamp: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("iree-compile");
    std::fs::write(
        &path,
        format!("#!/bin/sh\necho '  IREE compiler version {stamp} @ fake'\n"),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir.to_path_buf()
}

#[test]
fn install_then_path_gives_native_tools_that_compile_and_run() {
    let work = Project::new();
    let cwd = &work.path();

    let out = run(&mut work.cmd(&["toolchain", "install"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("iree-base-compiler 3.13.0, iree-base-runtime 3.13.0 in "),
        "{text}"
    );
    assert!(text.contains("iree-compile reports 3.13.0"), "{text}");

    // PATH holds another iree-compile: it must not be picked.
    let decoy = fake_tools(&cwd.join("decoy"), "decoy");
    let path_var = std::env::join_paths(
        std::iter::once(decoy.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let out = run(work.cmd(&["toolchain", "path"]).env("PATH", &path_var));
    let bin = single_line(&out);
    assert_ne!(bin, decoy);
    assert!(bin.is_absolute(), "{}", bin.display());

    let compile = bin.join("iree-compile");
    let run_module = bin.join("iree-run-module");
    // The native binaries, not the venv's Python console scripts.
    assert!(is_elf(&compile), "{} is not an ELF", compile.display());
    assert!(
        is_elf(&run_module),
        "{} is not an ELF",
        run_module.display()
    );

    std::fs::write(cwd.join("add.mlir"), crate::common::ADD).unwrap();
    let out = run(Command::new(&compile).current_dir(cwd).args([
        "add.mlir",
        "--iree-hal-target-device=local",
        "--iree-hal-local-target-device-backends=llvm-cpu",
        "--iree-llvmcpu-target-cpu=host",
        "-o",
        "add.vmfb",
    ]));
    assert!(
        out.status.success(),
        "iree-compile failed: {}",
        stderr(&out)
    );
    let out = run(Command::new(&run_module).current_dir(cwd).args([
        "--module=add.vmfb",
        "--device=local-task",
        "--function=main",
        "--input=4xf32=1 2 3 4",
        "--input=4xf32=10 20 30 40",
        "--expected_output=4xf32=11 22 33 44",
    ]));
    assert!(
        out.status.success(),
        "iree-run-module failed: {}{}",
        stdout(&out),
        stderr(&out)
    );

    // The JSON form describes the same toolchain.
    let out = run(&mut work.cmd(&["toolchain", "install", "--json"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["bin"], bin.display().to_string());
    assert_eq!(json["source"], "provisioned");
    assert_eq!(
        json["packages"],
        serde_json::json!([
            ["iree-base-compiler", "3.13.0"],
            ["iree-base-runtime", "3.13.0"]
        ])
    );
    assert!(json["compiler_version"]
        .as_str()
        .unwrap()
        .starts_with("IREE compiler version 3.13.0"));
    let identity = json["identity"].as_str().unwrap();
    assert_eq!(identity.len(), 64);
    assert!(identity.chars().all(|c| c.is_ascii_hexdigit()));
}

#[test]
fn concurrent_installs_leave_one_complete_install() {
    let work = Project::new();
    let toolchains = work.path().join("toolchains");
    // The leftovers of an install that was killed half-way.
    let stale = toolchains.join(".iree-3.13.0.tmp-999999");
    std::fs::create_dir_all(stale.join("venv")).unwrap();
    std::fs::write(stale.join("venv/half"), "x").unwrap();

    let spawn = || {
        work.cmd(&["toolchain", "install", "--json"])
            .env("LOCKSTEP_TOOLCHAINS", &toolchains)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn lockstep")
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let mut identities = Vec::new();
    for out in [&a, &b] {
        eprintln!("stdout:\n{}\nstderr:\n{}", stdout(out), stderr(out));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(
            json["bin"],
            toolchains.join("iree-3.13.0/bin").display().to_string()
        );
        identities.push(json["identity"].as_str().unwrap().to_string());
    }
    assert_eq!(identities[0], identities[1]);
    let installing = [&a, &b]
        .iter()
        .filter(|o| stderr(o).contains("installing IREE 3.13.0 into"))
        .count();
    assert_eq!(installing, 1, "exactly one process installs");

    let mut names: Vec<String> = std::fs::read_dir(&toolchains)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec![".iree-3.13.0.lock", "iree-3.13.0"]);
    let dir = toolchains.join("iree-3.13.0");
    assert!(dir.join("toolchain.json").is_file());
    assert!(is_elf(&dir.join("bin/iree-compile")));
    // The venv was built elsewhere and renamed: its own scripts still work.
    let wrapper = Command::new(dir.join("venv/bin/iree-compile"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(
        wrapper.status.success(),
        "{}",
        String::from_utf8_lossy(&wrapper.stderr)
    );

    // Installed: `path` prints it without installing again.
    let out = run(work
        .cmd(&["toolchain", "path"])
        .env("LOCKSTEP_TOOLCHAINS", &toolchains));
    assert_eq!(single_line(&out), dir.join("bin"));
    assert!(!stderr(&out).contains("installing"), "{}", stderr(&out));
}

#[test]
fn path_provisions_on_first_use() {
    let work = Project::new();
    let toolchains = work.path().join("toolchains");
    let out = run(work
        .cmd(&["toolchain", "path"])
        .env("LOCKSTEP_TOOLCHAINS", &toolchains));
    let bin = single_line(&out);
    assert_eq!(bin, toolchains.join("iree-3.13.0/bin"));
    let err = stderr(&out);
    assert!(
        err.contains("installing IREE 3.13.0 into") && err.contains("(first use)"),
        "{err}"
    );
    assert!(is_elf(&bin.join("iree-compile")));
}

#[test]
fn bad_version_is_a_usage_error() {
    let work = Project::new();
    let toolchains = work.path().join("toolchains");
    let out = run(work
        .cmd(&["toolchain", "install", "--iree", "1.2.x"])
        .env("LOCKSTEP_TOOLCHAINS", &toolchains));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("invalid IREE version `1.2.x`"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty());
    assert!(!toolchains.exists(), "nothing is done for a bad version");
}

#[test]
fn unknown_version_names_the_package() {
    let work = Project::new();
    let toolchains = work.path().join("toolchains");
    let out = run(work
        .cmd(&["toolchain", "install", "--iree", "9.9.9"])
        .env("LOCKSTEP_TOOLCHAINS", &toolchains));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no version 9.9.9 of iree-base-compiler"),
        "{err}"
    );
    assert!(err.contains("hint: "), "{err}");
    // No half-built directory is left behind.
    let names: Vec<String> = std::fs::read_dir(&toolchains)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec![".iree-9.9.9.lock"]);
}

#[test]
fn path_follows_flag_then_env_then_config() {
    let work = Project::new();
    let cwd = &work.path();
    // Nothing may be provisioned by these commands.
    let toolchains = cwd.join("toolchains");
    let flag = fake_tools(&cwd.join("flag-tools"), "1.0.0");
    let env = fake_tools(&cwd.join("env-tools"), "2.0.0");
    let config = fake_tools(&cwd.join("config-tools"), "3.0.0");
    std::fs::write(
        cwd.join("lockstep.toml"),
        "[toolchain]\niree-bin = \"config-tools\"\n",
    )
    .unwrap();
    let path = |args: &[&str], env_value: Option<&Path>| {
        let mut all = vec!["toolchain", "path"];
        all.extend_from_slice(args);
        let mut cmd = work.cmd(&all);
        cmd.env("LOCKSTEP_TOOLCHAINS", &toolchains);
        if let Some(v) = env_value {
            cmd.env("LOCKSTEP_IREE_BIN", v);
        }
        run(&mut cmd)
    };
    let flag_arg = flag.display().to_string();
    assert_eq!(
        single_line(&path(&["--iree-bin", &flag_arg], Some(&env))),
        flag
    );
    assert_eq!(single_line(&path(&[], Some(&env))), env);
    // Relative to lockstep.toml; an empty variable counts as unset.
    assert_eq!(single_line(&path(&[], Some(Path::new("")))), config);
    assert_eq!(single_line(&path(&[], None)), config);

    let out = path(&["--iree-bin", "no-such-dir"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--iree-bin"), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-dir"), "{}", stderr(&out));
    let out = path(&[], Some(&cwd.join("missing-env")));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("$LOCKSTEP_IREE_BIN"),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        cwd.join("lockstep.toml"),
        "[toolchain]\niree-bin = \"gone\"\n",
    )
    .unwrap();
    let out = path(&[], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("[toolchain] iree-bin"),
        "{}",
        stderr(&out)
    );
    assert!(!toolchains.exists());
}
