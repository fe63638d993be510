//! Issue 10 regressions for `lockstep integrate`: a wedged start names the
//! command that recovers; configuration values git cannot take are refused
//! with the repositories byte-identical; every kind of state database
//! damage (a corrupt page, a truncated file, 0 and 1 bytes, a newer schema)
//! is named with `integrate repair`, which keeps the file and rebuilds the
//! record so that status works again; numbers no clock holds, from the
//! command line or the database, are errors, not panics.

use std::path::{Path, PathBuf};

use crate::common::{expect_code, git, spec, stderr, Env};

/// Every byte of the superproject's and the submodule's git config and refs
/// (loose and packed), and HEAD: what a refused command must not change.
fn git_bytes(env: &Env) -> Vec<(PathBuf, Vec<u8>)> {
    let git_dir = env.sp().join(".git");
    let module = git_dir.join("modules/third_party/llvm-project");
    let mut files = Vec::new();
    for dir in [&git_dir, &module] {
        for name in ["config", "packed-refs", "HEAD"] {
            files.push(dir.join(name));
        }
        files.extend(crate::common::walk(&dir.join("refs")));
    }
    files
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(&f).unwrap_or_default();
            (f, bytes)
        })
        .collect()
}

/// lockstep.toml with `line` (`key = value`) in `[integrate]`, replacing
/// the key's line if there is one.
fn set_integrate_key(env: &Env, line: &str) {
    set_key(env, "[integrate]", line);
}

/// lockstep.toml with `line` (`key = value`) in `table` (which must be
/// there), replacing the key's line in that table if there is one.
fn set_key(env: &Env, table: &str, line: &str) {
    let path = env.sp().join("lockstep.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let key = format!("{} ", line.split(' ').next().unwrap());
    let mut body: Vec<String> = text.lines().map(str::to_string).collect();
    let at = body.iter().position(|l| l == table).expect(table) + 1;
    let end = body[at..]
        .iter()
        .position(|l| l.starts_with('['))
        .map_or(body.len(), |n| at + n);
    body.drain(at..end).for_each(drop);
    let kept: Vec<String> = text
        .lines()
        .skip(at)
        .take(end - at)
        .filter(|l| !l.starts_with(&key))
        .map(str::to_string)
        .collect();
    body.splice(at..at, std::iter::once(line.to_string()).chain(kept));
    std::fs::write(&path, body.join("\n") + "\n").unwrap();
}

#[test]
fn a_start_that_fails_after_its_journal_names_abort_which_recovers() {
    let env = Env::new(&spec(4));
    // git cannot create the branch while its lock file exists: the start
    // fails after it was journaled.
    let lock = env.sp().join(".git/refs/heads/wedged.lock");
    std::fs::write(&lock, "").unwrap();
    let out = env.run(&["integrate", "start", "--no-fetch", "--branch", "wedged"]);
    let (_, err) = expect_code(&out, 1, "start with a locked ref");
    assert!(
        err.contains("cannot start the integrate branch wedged"),
        "{err}"
    );
    assert!(err.contains("lockstep integrate abort"), "{err}");
    // Every later mutating command tries to finish it and says the same.
    let out = env.run(&["integrate", "next", "--no-export"]);
    let (_, err) = expect_code(&out, 1, "next over a wedged start");
    assert!(
        err.contains("cannot finish the interrupted start of wedged"),
        "{err}"
    );
    assert!(err.contains("lockstep integrate abort"), "{err}");
    // The named command recovers; a later start then works.
    let undone = env.ok(&["integrate", "abort"], 0);
    assert!(undone.contains("undone: start of wedged"), "{undone}");
    std::fs::remove_file(&lock).unwrap();
    env.ok(
        &[
            "integrate",
            "start",
            "--no-fetch",
            "--branch",
            "after-abort",
        ],
        0,
    );
    assert_eq!(git(env.sp(), &["branch", "--show-current"]), "after-abort");
}

#[test]
fn each_listed_bad_branch_name_is_refused_with_exit_2_and_nothing_written() {
    let env = Env::new(&spec(4));
    let long = format!("integrates/{}", "x".repeat(300));
    let names = [
        "@",
        "HEAD",
        "@{-1}",
        "a@{u}",
        "-b",
        "--force",
        "refs/heads/x",
        "refs/x",
        "",
        "a b",
        "..",
        "a..b",
        "x.lock",
        "a:b",
        "a~1",
        "a^",
        "a?",
        "a*",
        "a[",
        "a\\b",
        "/a",
        "a/",
        "a.",
        "a\tb",
        &long,
    ];
    let state = env.sp().join(".git/lockstep");
    let before = git_bytes(&env);
    for name in names {
        let flag = format!("--branch={name}");
        let out = env.run(&["integrate", "start", "--no-fetch", &flag]);
        let (_, err) = expect_code(&out, 2, &format!("start --branch {name:?}"));
        assert!(err.contains("cannot be a branch name"), "{name:?}: {err}");
        assert!(err.contains("nothing was done"), "{name:?}: {err}");
        assert!(git_bytes(&env) == before, "{name:?} changed git's files");
        assert!(
            !state.join("state.db").exists(),
            "{name:?}: no journal was written"
        );
    }
    // The template's result is checked the same way.
    for template in [
        "@",
        "HEAD-{date}@{1}",
        "-llvm-{date}",
        "refs/heads/llvm-{date}",
    ] {
        set_integrate_key(&env, &format!("branch = {template:?}"));
        let out = env.run(&["integrate", "start", "--no-fetch"]);
        let (_, err) = expect_code(&out, 2, template);
        assert!(err.contains("[integrate] branch"), "{template}: {err}");
        assert!(git_bytes(&env) == before, "{template} changed git's files");
    }
}

#[test]
fn config_values_git_cannot_take_leave_every_git_byte_alone() {
    let env = Env::new(&spec(4));
    let original = std::fs::read_to_string(env.sp().join("lockstep.toml")).unwrap();
    // (table, line, what the error names); the config loader refuses a
    // NUL in any string itself, naming the key.
    let cases = [
        (
            "[integrate]",
            r#"upstream-url = "https://x/\u0000y""#,
            "upstream-url",
        ),
        (
            "[integrate]",
            r#"upstream-remote = "--upload-pack=x""#,
            "[integrate] upstream-remote",
        ),
        (
            "[integrate]",
            r#"upstream-remote = "a b""#,
            "[integrate] upstream-remote",
        ),
        (
            "[integrate]",
            r#"upstream-branch = "-main""#,
            "[integrate] upstream-branch",
        ),
        (
            "[integrate]",
            r#"upstream-name = "LL\nVM""#,
            "[integrate] upstream-name",
        ),
        (
            "[integrate]",
            r#"submodule = "/abs""#,
            "[integrate] submodule",
        ),
        ("[integrate]", r#"submodule = ".""#, "[integrate] submodule"),
        ("[integrate]", r#"submodule = """#, "[integrate] submodule"),
        (
            "[integrate]",
            r#"submodule = "../elsewhere""#,
            "[integrate] submodule",
        ),
        (
            "[integrate]",
            r#"upstream-branch = "a b""#,
            "[integrate] upstream-branch",
        ),
        (
            "[integrate]",
            r#"submodule = "third_party/../third_party/llvm-project""#,
            "[integrate] submodule",
        ),
        ("[integrate]", r#"smoke = ["./smoke\u0000.sh"]"#, "smoke"),
        (
            "[integrate.export]",
            "remote = \"-x\"",
            "[integrate] export.remote",
        ),
        (
            "[integrate.export]",
            "branch = \"sm {repo}\"",
            "[integrate] export.branch",
        ),
    ];
    for (table, line, needle) in cases {
        std::fs::write(env.sp().join("lockstep.toml"), &original).unwrap();
        set_key(&env, table, line);
        let before = git_bytes(&env);
        for args in [
            &["integrate", "status"][..],
            &["integrate", "status", "--fetch"],
            &["integrate", "start"],
            &["integrate", "next"],
            &["integrate", "loop", "--dry-run"],
        ] {
            let out = env.run(args);
            let (_, err) = expect_code(&out, 2, &format!("{needle} {args:?}"));
            assert!(err.contains(needle), "{needle} {args:?}: {err}");
            assert!(!err.contains("install git"), "{needle} {args:?}: {err}");
            assert!(
                git_bytes(&env) == before,
                "{needle} {args:?} changed git's files"
            );
        }
    }
}

#[test]
fn an_upstream_url_git_would_read_as_an_option_is_refused_where_the_file_says_it() {
    let env = Env::new(&spec(4));
    let marker = env.dir.path().join("proxy-ran");
    set_integrate_key(
        &env,
        &format!(
            "upstream-url = \"-oProxyCommand=touch {}\"",
            marker.display()
        ),
    );
    let text = std::fs::read_to_string(env.sp().join("lockstep.toml")).unwrap();
    let line = text
        .lines()
        .position(|l| l.starts_with("upstream-url"))
        .expect("the key")
        + 1;
    let before = git_bytes(&env);
    for args in [
        &["integrate", "status"][..],
        &["integrate", "status", "--fetch"],
        &["integrate", "start"],
        &["integrate", "loop", "--dry-run"],
    ] {
        let out = env.run(args);
        let (_, err) = expect_code(&out, 2, &format!("{args:?}"));
        assert!(
            err.contains(&format!("lockstep.toml:{line}:")),
            "{args:?} names no file:line: {err}"
        );
        assert!(
            err.contains("upstream-url `-oProxyCommand=touch") && err.contains("starts with `-`"),
            "{args:?}: {err}"
        );
        assert!(git_bytes(&env) == before, "{args:?} changed git's files");
    }
    assert!(!marker.exists());
}

#[test]
fn a_path_that_is_not_a_submodule_lists_those_there_are() {
    let env = Env::new(&spec(4));
    set_integrate_key(&env, r#"submodule = "build_tools""#);
    let before = git_bytes(&env);
    let out = env.run(&["integrate", "status"]);
    let (_, err) = expect_code(&out, 2, "status of a non-submodule");
    assert!(err.contains("`build_tools`"), "{err}");
    assert!(err.contains("is not a submodule of"), "{err}");
    assert!(err.contains("third_party/llvm-project"), "lists it: {err}");
    assert!(err.contains("lockstep.toml"), "{err}");
    assert!(!err.contains("submodule update --init"), "{err}");
    assert!(git_bytes(&env) == before);
}

#[test]
fn status_without_fetch_reports_the_missing_remote_and_changes_no_git_byte() {
    let env = Env::new(&spec(4));
    let before = git_bytes(&env);
    let text = env.ok(&["integrate", "status"], 0);
    assert!(
        text.contains("--fetch` would add the remote `upstream`"),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&env.ok(&["integrate", "status", "--json"], 0)).unwrap();
    assert_eq!(json["upstream_fetched"], false);
    assert!(json["pending"].as_array().unwrap().is_empty());
    assert!(git_bytes(&env) == before, "status wrote to git");
    // With --fetch it does what it said.
    env.ok(&["integrate", "status", "--fetch"], 0);
    assert!(git(&env.sub(), &["remote"]).contains("upstream"));
    assert_eq!(env.status()["upstream_fetched"], true);
}

/// The state database of `env` after a start, with its WAL folded in.
fn started(env: &Env) -> PathBuf {
    env.ok(
        &["integrate", "start", "--no-fetch", "--branch", "llvm-int"],
        0,
    );
    let db = env.sp().join(".git/lockstep/state.db");
    // The last connection's close folds the WAL back into the file.
    assert!(!db.with_extension("db-wal").exists(), "no WAL left");
    db
}

/// Runs status over a damaged `db`: exit 1 naming the file and repair,
/// the file left as it was; then repair keeps it and status works again.
fn damaged_then_repaired(env: &Env, db: &Path, what: &str) {
    let damaged = std::fs::read(db).unwrap();
    let out = env.run(&["integrate", "status"]);
    let (_, err) = expect_code(&out, 1, what);
    assert!(err.contains(&db.display().to_string()), "{what}: {err}");
    assert!(err.contains("lockstep integrate repair"), "{what}: {err}");
    assert_eq!(
        std::fs::read(db).unwrap(),
        damaged,
        "{what}: left as it was"
    );
    let repaired: serde_json::Value =
        serde_json::from_str(&env.ok(&["integrate", "repair", "--json"], 0)).unwrap();
    let aside = repaired["moved_aside"].as_str().expect("moved aside");
    assert!(aside.contains("state.db.damaged-"), "{what}: {aside}");
    assert_eq!(std::fs::read(aside).unwrap(), damaged, "{what}: kept");
    assert_eq!(repaired["integrate_branch"], "llvm-int", "{what}");
    env.ok(&["integrate", "status"], 0);
    // The aside file is not deleted by a second repair either.
    env.ok(&["integrate", "repair", "--force"], 0);
    assert!(Path::new(aside).exists(), "{what}");
}

#[test]
fn every_kind_of_state_database_damage_is_named_and_repaired() {
    let env = Env::new(&spec(4));
    let db = started(&env);
    let good = std::fs::read(&db).unwrap();
    assert!(good.len() >= 8192, "several pages: {}", good.len());

    let mut corrupt = good.clone();
    corrupt[4096..4096 + 256].fill(0xa5);
    let mut newer = good.clone();
    // The header's user_version (offset 60, big-endian): the schema version.
    newer[60..64].copy_from_slice(&99u32.to_be_bytes());
    let cases: [(&str, Vec<u8>); 5] = [
        ("a corrupt page", corrupt),
        ("a truncated file", good[..good.len() / 2].to_vec()),
        ("a 0-byte file", vec![]),
        ("a 1-byte file", vec![b'S']),
        ("a newer schema", newer),
    ];
    for (what, bytes) in cases {
        std::fs::write(&db, &bytes).unwrap();
        let _ = std::fs::remove_file(db.with_extension("db-shm"));
        damaged_then_repaired(&env, &db, what);
    }
    let out = env.run(&["integrate", "status"]);
    expect_code(&out, 0, "status after the last repair");
    // abort --all knows the rebuilt record: back to the base (detached:
    // where the user was before `start` is not in git), branch kept.
    let base = git(env.sp(), &["rev-parse", "llvm-int~1"]);
    env.ok(&["integrate", "abort", "--all"], 0);
    assert_eq!(git(env.sp(), &["rev-parse", "HEAD"]), base);
    assert!(!git(env.sp(), &["branch", "--list", "llvm-int"]).is_empty());
    let out = env.ok(&["integrate", "repair"], 0);
    assert!(out.contains("nothing to repair"), "{out}");
}

#[test]
fn a_newer_schema_says_so() {
    let env = Env::new(&spec(4));
    let db = started(&env);
    let mut bytes = std::fs::read(&db).unwrap();
    bytes[60..64].copy_from_slice(&7u32.to_be_bytes());
    std::fs::write(&db, &bytes).unwrap();
    let out = env.run(&["integrate", "status"]);
    let (_, err) = expect_code(&out, 1, "a newer schema");
    assert!(err.contains("newer lockstep"), "{err}");
    assert!(err.contains(&db.display().to_string()), "{err}");
}

#[test]
fn numbers_no_clock_holds_are_errors_not_panics() {
    let env = Env::new(&spec(4));
    for timeout in ["1e30", "18446744073709551616", "-1", "nan"] {
        let flag = format!("--timeout={timeout}");
        let out = env.run(&[
            "integrate",
            "bisect",
            "--good",
            "HEAD",
            "--bad",
            "HEAD",
            &flag,
            "--",
            "true",
        ]);
        let (_, err) = expect_code(&out, 2, timeout);
        assert!(err.contains("--timeout"), "{timeout}: {err}");
    }
    for wait in ["1e30", "18446744073709551616"] {
        let out = env.run(&["integrate", "loop", "--wait", wait]);
        expect_code(&out, 2, wait);
    }
    set_integrate_key(&env, r#"smoke-timeout = "99999999999999999999999h""#);
    let out = env.run(&["integrate", "status"]);
    let (_, err) = expect_code(&out, 2, "a huge smoke-timeout");
    assert!(err.contains("99999999999999999999999h"), "{err}");
    assert!(err.contains("lockstep.toml:"), "names the line: {err}");
}

#[test]
fn a_dead_sessions_time_from_the_database_is_not_a_panic() {
    let env = Env::new(&spec(4));
    env.start();
    {
        let store = lockstep_store::Store::open(&env.sp().join(".git/lockstep")).unwrap();
        store
            .set(
                "session",
                &serde_json::json!({"pid": 999_999_999, "command": "integrate loop", "started_at": 1e300}),
            )
            .unwrap();
    }
    let out = env.run(&["integrate", "abort"]);
    let (_, err) = expect_code(&out, 0, "abort after a session from the far future");
    assert!(err.contains("did not finish"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_state_database_that_is_a_directory_is_named() {
    let env = Env::new(&spec(4));
    let db = env.sp().join(".git/lockstep/state.db");
    std::fs::create_dir_all(&db).unwrap();
    let out = env.run(&["integrate", "status"]);
    let (_, err) = expect_code(&out, 2, "state.db is a directory");
    assert!(err.contains(&db.display().to_string()), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    assert!(stderr(&out).contains("directory"), "{err}");
}

/// Runs SQL on the database at `db` with Python's sqlite3 (the test does
/// what another program or an older lockstep would have done to it).
fn sql(db: &Path, statements: &str) {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit(); c.close()",
        ])
        .arg(db)
        .arg(statements)
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_link_at_the_state_database_or_its_neighbours_is_refused_and_never_followed() {
    let env = Env::new(&spec(4));
    let state = env.sp().join(".git/lockstep");
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    for name in ["state.db", "state.db-wal", "state.db-shm", "lock"] {
        let _ = std::fs::remove_dir_all(&state);
        std::fs::create_dir_all(&state).unwrap();
        let target = outside.join(format!("{name}.target"));
        let link = state.join(name);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let before = git_bytes(&env);
        for args in [
            &["integrate", "status"][..],
            &["integrate", "start", "--no-fetch", "--branch", "via-link"],
            &["integrate", "repair", "--force"],
        ] {
            let out = env.run(args);
            let (_, err) = expect_code(&out, 2, &format!("{name} {args:?}"));
            assert!(err.contains(&link.display().to_string()), "{name}: {err}");
            assert!(err.contains("is a symbolic link"), "{name}: {err}");
            assert!(!target.exists(), "{name} {args:?}: created at the target");
            assert!(git_bytes(&env) == before, "{name} {args:?} changed git");
            let made: Vec<_> = std::fs::read_dir(&state)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(made, [std::ffi::OsString::from(name)], "{args:?}");
        }
    }
}

#[test]
fn a_state_directory_that_is_a_file_says_what_it_is_and_what_to_do() {
    let env = Env::new(&spec(4));
    let state = env.sp().join(".git/lockstep");
    std::fs::write(&state, "not a directory\n").unwrap();
    for args in [
        &["integrate", "status"][..],
        &["integrate", "start", "--no-fetch", "--branch", "x"],
        &["integrate", "repair"],
    ] {
        let out = env.run(args);
        let (_, err) = expect_code(&out, 2, &format!("{args:?}"));
        assert!(
            err.contains(&format!(
                "{} is a regular file, not a directory",
                state.display()
            )),
            "{args:?}: {err}"
        );
        assert!(err.contains("mv "), "{args:?}: says what to do: {err}");
        assert!(!err.contains("os error"), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read(&state).unwrap(), b"not a directory\n");
}

#[test]
fn a_database_of_another_schema_or_with_unreadable_values_names_repair() {
    let env = Env::new(&spec(4));
    let db = started(&env);
    // An older schema: a probes table without `seconds`.
    sql(
        &db,
        "DROP TABLE probes; CREATE TABLE probes (key TEXT PRIMARY KEY, context TEXT NOT NULL, commit_sha TEXT NOT NULL, outcome TEXT NOT NULL, detail TEXT NOT NULL, log TEXT, at REAL NOT NULL);",
    );
    let out = env.run(&["integrate", "status"]);
    let (_, err) = expect_code(&out, 1, "an older schema");
    assert!(err.contains("damaged or from another version"), "{err}");
    assert!(err.contains(&db.display().to_string()), "{err}");
    assert!(err.contains("lockstep integrate repair"), "{err}");
    assert!(!err.contains("SELECT"), "no raw SQL: {err}");
    assert!(!err.contains("permissions"), "{err}");
    env.ok(&["integrate", "repair"], 0);
    env.ok(&["integrate", "status"], 0);
    // A blob where text belongs (the halt record).
    sql(
        &db,
        "INSERT INTO records (name, value) VALUES ('halt', X'00ff');",
    );
    let out = env.run(&["integrate", "status"]);
    let (_, err) = expect_code(&out, 1, "a blob record");
    assert!(err.contains("damaged or from another version"), "{err}");
    assert!(err.contains("lockstep integrate repair"), "{err}");
    assert!(!err.contains("permissions"), "{err}");
    env.ok(&["integrate", "repair"], 0);
    env.ok(&["integrate", "status"], 0);
}

#[test]
fn special_refs_and_names_that_shadow_a_remote_branch_are_refused_before_anything() {
    let env = Env::new(&spec(4));
    let state = env.sp().join(".git/lockstep");
    let before = git_bytes(&env);
    for name in [
        "FETCH_HEAD",
        "ORIG_HEAD",
        "MERGE_HEAD",
        "origin/main",
        "origin/new",
        "origin",
        "tags/v1",
        "remotes/origin/x",
        "heads/x",
    ] {
        let flag = format!("--branch={name}");
        let out = env.run(&["integrate", "start", "--no-fetch", &flag]);
        let (_, err) = expect_code(&out, 2, &format!("start --branch {name:?}"));
        assert!(err.contains("cannot be a branch name"), "{name:?}: {err}");
        assert!(err.contains("nothing was done"), "{name:?}: {err}");
        assert!(git_bytes(&env) == before, "{name:?} changed git's files");
        assert!(!state.join("state.db").exists(), "{name:?}: a journal");
    }
    let out = env.run(&[
        "integrate",
        "start",
        "--no-fetch",
        "--branch",
        "origin/main",
    ]);
    let (_, err) = expect_code(&out, 2, "origin/main");
    assert!(
        err.contains("shadow the remote-tracking branch `origin/main` of the remote `origin`"),
        "{err}"
    );
    // `origin/main` still means the remote-tracking branch.
    assert!(git(env.sp(), &["branch", "--list", "origin/*"]).is_empty());
    // The template's result too.
    set_integrate_key(&env, r#"branch = "origin/llvm-{date}""#);
    let out = env.run(&["integrate", "start", "--no-fetch"]);
    let (_, err) = expect_code(&out, 2, "a template under origin/");
    assert!(err.contains("[integrate] branch"), "{err}");
    assert!(git_bytes(&env) == before);
}

#[test]
fn unknown_placeholders_and_overlong_values_are_refused_naming_the_key() {
    let env = Env::new(&spec(4));
    let original = std::fs::read_to_string(env.sp().join("lockstep.toml")).unwrap();
    let long = "x".repeat(100_000);
    let cases = [
        (
            "[integrate]",
            r#"branch = "integrates/llvm-{unknown}""#.to_string(),
            "`{unknown}` is not a placeholder; the known one is `{date}`",
        ),
        (
            "[integrate]",
            r#"branch = "integrates/llvm-{dat}""#.to_string(),
            "[integrate] branch",
        ),
        (
            "[integrate.export]",
            r#"branch = "sm-{repo}-{brnch}""#.to_string(),
            "the known ones are `{repo}` and `{branch}`",
        ),
        (
            "[integrate]",
            format!("upstream-branch = \"{long}\""),
            "is 100000 bytes long; at most 1024 are allowed",
        ),
        (
            "[integrate]",
            format!("upstream-url = \"https://example.invalid/{long}\""),
            "[integrate] upstream-url",
        ),
    ];
    for (table, line, needle) in cases {
        std::fs::write(env.sp().join("lockstep.toml"), &original).unwrap();
        set_key(&env, table, &line);
        let before = git_bytes(&env);
        for args in [
            &["integrate", "status"][..],
            &["integrate", "status", "--fetch"],
            &["integrate", "start"],
            &["integrate", "next"],
        ] {
            let out = env.run(args);
            let (_, err) = expect_code(&out, 2, &format!("{needle} {args:?}"));
            assert!(err.contains(needle), "{needle} {args:?}: {err}");
            assert!(!err.contains("Argument list too long"), "{err}");
            assert!(!err.contains("reachable"), "{err}");
            assert!(err.len() < 2000, "the value is not printed whole");
            assert!(git_bytes(&env) == before, "{needle} {args:?} changed git");
        }
    }
}

#[test]
fn a_usage_error_in_next_or_bisect_arguments_leaves_no_remote_and_no_ref() {
    let env = Env::new(&spec(4));
    // A loop that fetched, then found no smoke to run, puts the fetch back.
    set_integrate_key(&env, "smoke = []");
    crate::common::commit_as_tester(env.sp(), "No smoke", true);
    let before = git_bytes(&env);
    let out = env.run(&["integrate", "loop"]);
    let (_, err) = expect_code(&out, 2, "loop without a smoke");
    assert!(err.contains("no smoke command is configured"), "{err}");
    assert!(git_bytes(&env) == before, "the loop's fetch was put back");
    git(env.sp(), &["reset", "-q", "--hard", "HEAD~1"]);
    let remotes = git(&env.sub(), &["remote"]);
    let before = git_bytes(&env);
    for args in [
        &["integrate", "next", "--to", "zzz"][..],
        &["integrate", "next", "--dry-run", "--to", "zzz"],
        &["integrate", "next", "--to=-x"],
        &[
            "integrate",
            "bisect",
            "--good",
            "zzz",
            "--bad",
            "HEAD",
            "--",
            "true",
        ],
    ] {
        let out = env.run(args);
        let (_, err) = expect_code(&out, 2, &format!("{args:?}"));
        assert!(
            err.contains("does not name") || err.contains("is not a revision"),
            "{args:?}: {err}"
        );
        assert_eq!(
            git(&env.sub(), &["remote"]),
            remotes,
            "{args:?} added a remote"
        );
        assert!(git_bytes(&env) == before, "{args:?} changed git's files");
    }
    // A revision only the fetch brings is found, and then the fetch stays.
    let out = env.run(&["integrate", "next", "--dry-run", "--to", &env.sb.head]);
    expect_code(&out, 0, "--to upstream's head, never fetched before");
    assert!(git(&env.sub(), &["remote"]).contains("upstream"));
    // Once upstream was fetched, an unknown revision is named with the range.
    env.status();
    let before = git_bytes(&env);
    let out = env.run(&["integrate", "next", "--to", "zzz"]);
    let (_, err) = expect_code(&out, 2, "--to zzz after a fetch");
    assert!(err.contains("does not name exactly one commit"), "{err}");
    assert!(git_bytes(&env) == before);
}

#[test]
fn the_commands_own_outputs_inside_the_superproject_are_not_uncommitted_changes() {
    let env = Env::new(&spec(6));
    env.start();
    // A dry run and a real step, each streaming events into the superproject.
    let out = env.run(&["integrate", "loop", "--dry-run", "--events", "loop.jsonl"]);
    expect_code(&out, 0, "loop --dry-run --events inside");
    // Once written it is the user's file like any other: out of the way.
    std::fs::remove_file(env.sp().join("loop.jsonl")).unwrap();
    let out = env.run(&["integrate", "next", "--no-export", "--events", "ev.jsonl"]);
    let (_, err) = expect_code(&out, 0, "next --events inside");
    assert!(!err.contains("uncommitted"), "{err}");
    assert!(
        std::fs::read_to_string(env.sp().join("ev.jsonl"))
            .unwrap()
            .contains("\"advanced\""),
        "the events were written"
    );
    std::fs::remove_file(env.sp().join("ev.jsonl")).unwrap();
    // Through a path with `..` and from the events' own directory too.
    std::fs::create_dir_all(env.sp().join("logs")).unwrap();
    let out = env.run(&[
        "integrate",
        "next",
        "--no-export",
        "--events",
        "logs/../logs/n.jsonl",
    ]);
    expect_code(&out, 0, "next --events logs/../logs/n.jsonl");
    std::fs::remove_dir_all(env.sp().join("logs")).unwrap();
    // Anything else untracked still stops it, and only that is named.
    std::fs::write(env.sp().join("other.txt"), "mine\n").unwrap();
    let out = env.run(&["integrate", "next", "--no-export", "--events", "ev2.jsonl"]);
    let (_, err) = expect_code(&out, 2, "another untracked file");
    assert!(err.contains("?? other.txt"), "{err}");
    assert!(!err.contains("ev2.jsonl"), "{err}");
}

#[test]
fn urls_from_the_configuration_are_printed_without_credentials() {
    let env = Env::new(&spec(4));
    set_integrate_key(
        &env,
        r#"upstream-url = "https://user:s3cret@example.invalid/llvm.git""#,
    );
    set_integrate_key(
        &env,
        r#"commit-url = "https://user:s3cret@example.invalid/commit/{sha}""#,
    );
    let out = env.run(&["integrate", "status", "--events", "-"]);
    let (text, err) = expect_code(&out, 0, "status with credentials in the URL");
    assert!(
        text.contains("would add the remote `upstream` (https://example.invalid/llvm.git)")
            || err.contains("would add the remote `upstream` (https://example.invalid/llvm.git)"),
        "{text}{err}"
    );
    let json = env.ok(&["integrate", "status", "--json"], 0);
    for shown in [&text, &err, &json] {
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(!shown.contains("user:"), "{shown}");
    }
}
