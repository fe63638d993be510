//! `find_uv` picks the `uv` first on PATH and takes its timeouts from
//! `$LOCKSTEP_UV_TIMEOUT`: a uv that hangs is killed then, with an error
//! naming the command, the limit and the log. (Its own test binary: it
//! changes PATH for the whole process.)

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
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::set_var("PATH", format!("{}:{path}", bin.display()));
    std::env::set_var("LOCKSTEP_UV_TIMEOUT", "1");
    std::env::set_var("LOCKSTEP_HOME", dir.path().join("home"));
    let uv = find_uv(dir.path(), dir.path(), &NullSink).expect("the fake uv answers --version");
    assert_eq!(uv.argv(), ["uv"]);
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
        text.contains("command: uv pip install --no-config"),
        "{text}"
    );
    let log = dir.path().join("home/logs/python");
    assert!(text.contains(&format!("log: {}", log.display())), "{text}");

    std::env::set_var("LOCKSTEP_UV_TIMEOUT", "soon");
    let err = find_uv(dir.path(), dir.path(), &NullSink).expect_err("not seconds");
    assert_eq!(err.exit_code(), 2);
}
