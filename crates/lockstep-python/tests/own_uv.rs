//! lockstep runs its own pinned uv, installed under the toolchains
//! directory on first use: a uv on PATH is never used implicitly, and
//! nothing is written outside that directory (no `pip install --user` into
//! `~/.local`). (Its own test binary: it changes HOME and PATH for the
//! whole process.)

// Test code starts its fixtures' processes directly; product code goes
// through lockstep_core::process (clippy.toml).
#![allow(clippy::disallowed_methods)]

use lockstep_core::events::NullSink;
use lockstep_python::uv::{find_uv, locate_uv, UvLocation, PINNED_UV};

#[test]
fn lockstep_installs_its_own_uv_under_the_toolchains_directory_only() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // A uv on PATH that would be taken by mistake: it answers --version.
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("uv");
    std::fs::write(&fake, "#!/bin/sh\necho 'uv 0.0.0'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::set_var("PATH", format!("{}:{path}", bin.display()));
    std::env::set_var("HOME", &home);
    std::env::set_var("LOCKSTEP_HOME", dir.path().join("lockstep-home"));
    std::env::remove_var("LOCKSTEP_UV");
    std::env::remove_var("PYTHONUSERBASE");

    let root = dir.path().join("toolchains");
    std::fs::create_dir_all(&root).unwrap();
    let own = root.join("uv").join(PINNED_UV).join("bin").join("uv");
    assert_eq!(locate_uv(&root), UvLocation::Missing { path: own.clone() });

    let uv = find_uv(&root, &root, &NullSink).expect("lockstep's own uv");
    assert_eq!(uv.argv(), [own.display().to_string()]);
    assert_eq!(locate_uv(&root), UvLocation::Own { path: own.clone() });
    let version = std::process::Command::new(&own)
        .arg("--version")
        .output()
        .expect("run uv");
    let version = String::from_utf8_lossy(&version.stdout);
    assert!(version.contains(PINNED_UV), "{version}");
    // Nothing in the user's home (pip --user would write ~/.local).
    let written: Vec<_> = std::fs::read_dir(&home).unwrap().flatten().collect();
    assert!(written.is_empty(), "{written:?}");
    // A second find takes the installed one.
    let again = find_uv(&root, &root, &NullSink).expect("found again");
    assert_eq!(again.argv(), uv.argv());
}
