//! `find_uv` runs the uv `$LOCKSTEP_UV` names and takes its timeouts from
//! `$LOCKSTEP_UV_TIMEOUT`: a uv that hangs is killed then, with an error
//! naming the command, the limit and the log. A uv on PATH is never used
//! implicitly. (Its own test binary: it changes the environment for the
//! whole process.)

use lockstep_core::events::NullSink;
use lockstep_python::uv::find_uv;

#[test]
fn a_hung_uv_on_path_is_killed_at_the_timeout_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("uv");
    std::fs::write(
        &fake,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'uv 0.0.0'; exit 0; fi\nsleep 600 & wait\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::env::set_var("LOCKSTEP_UV", &fake);
    std::env::set_var("LOCKSTEP_UV_TIMEOUT", "1");
    std::env::set_var("LOCKSTEP_HOME", dir.path().join("home"));
    let uv = find_uv(dir.path(), dir.path(), &NullSink).expect("the fake uv answers --version");
    assert_eq!(uv.argv(), [fake.display().to_string()]);
    let venv = uv.venv(&dir.path().join("venv"));
    let err = uv
        .install(
            &venv,
            lockstep_python::uv::Install::Pypi(&["packaging==24.0".into()]),
        )
        .expect_err("killed");
    let text = err.render();
    assert!(
        text.contains("uv pip install did not finish within 1 s"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "command: {} pip install --no-config",
            fake.display()
        )),
        "{text}"
    );
    let log = dir.path().join("home/logs/python");
    assert!(text.contains(&format!("log: {}", log.display())), "{text}");

    std::env::set_var("LOCKSTEP_UV_TIMEOUT", "soon");
    let err = find_uv(dir.path(), dir.path(), &NullSink).expect_err("not seconds");
    assert_eq!(err.exit_code(), 2);

    // A named uv that does not run is an error naming where it was named;
    // lockstep does not fall back to another one.
    std::env::set_var("LOCKSTEP_UV_TIMEOUT", "1");
    std::env::set_var("LOCKSTEP_UV", dir.path().join("no-such-uv"));
    let err = find_uv(dir.path(), dir.path(), &NullSink).expect_err("no such uv");
    assert_eq!(err.exit_code(), 2);
    assert!(
        err.message.contains("$LOCKSTEP_UV names"),
        "{}",
        err.render()
    );
    assert!(!dir.path().join("uv").exists(), "nothing installed");
}
