//! Bad input to `lockstep integrate` is refused before anything is written:
//! branch names git would misread (`@`, `HEAD`, `refs/heads/x` ...), a
//! configuration whose submodule is `.` or not a submodule, remote names
//! that are options; `status` changes no remote without `--fetch`; a
//! damaged state database is named with `integrate repair` as the way out,
//! and repair rebuilds the integrate record from git (docs/reliability.md).

mod common;

use std::path::Path;

use common::{git, spec, stderr, Env};

/// Everything of the superproject a refused command must leave as it was.
fn snapshot(sp: &Path) -> String {
    let lockstep_dir: Vec<String> = common::walk(&sp.join(".git/lockstep"))
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    format!(
        "config:\n{}\nrefs:\n{}\nsub config:\n{}\nsub refs:\n{}\nHEAD {}\nstatus:\n{}\nstate: {lockstep_dir:?}",
        std::fs::read_to_string(sp.join(".git/config")).unwrap(),
        git(sp, &["for-each-ref"]),
        git(sp, &["-C", "third_party/llvm-project", "config", "--list", "--local"]),
        git(sp, &["-C", "third_party/llvm-project", "for-each-ref"]),
        git(sp, &["rev-parse", "HEAD"]),
        git(sp, &["status", "--porcelain"]),
    )
}

/// lockstep.toml of the sandbox with `line` (`key = value`) replacing its
/// line for that key (or added to `[integrate]`).
fn set_config(env: &Env, line: &str) {
    let path = env.sp().join("lockstep.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let key = format!("{} ", line.split(' ').next().unwrap());
    let mut body: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with(&key))
        .map(str::to_string)
        .collect();
    let at = body.iter().position(|l| l == "[integrate]").unwrap() + 1;
    body.insert(at, line.to_string());
    std::fs::write(&path, body.join("\n") + "\n").unwrap();
}

#[test]
fn branch_names_git_would_misread_are_refused_before_anything_is_written() {
    let env = Env::new(&spec(6));
    let before = snapshot(env.sp());
    for name in [
        "@",
        "HEAD",
        "refs/heads/x",
        "",
        "a b",
        "..",
        "x.lock",
        "-x",
        "a@{1}",
    ] {
        let flag = format!("--branch={name}");
        let out = env.run(&["integrate", "start", "--no-fetch", &flag]);
        assert_eq!(out.status.code(), Some(2), "{name:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("cannot be a branch name"),
            "{name:?}: {}",
            stderr(&out)
        );
        assert_eq!(snapshot(env.sp()), before, "{name:?} changed nothing");
    }
    // A good name then works, with nothing to recover first.
    env.ok(
        &["integrate", "start", "--no-fetch", "--branch", "good-name"],
        0,
    );
    assert_eq!(git(env.sp(), &["branch", "--show-current"]), "good-name");
    // A bad [integrate] branch template is refused the same way.
    git(env.sp(), &["checkout", "-q", "main"]);
    set_config(&env, "branch = \"refs/heads/llvm-{date}\"");
    let before = snapshot(env.sp());
    let out = env.run(&["integrate", "start", "--no-fetch"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("[integrate] branch"),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(env.sp()), before);
}

#[test]
fn a_bad_integrate_config_touches_no_repository() {
    let env = Env::new(&spec(4));
    let cases = [
        ("submodule = \".\"", "[integrate] submodule"),
        ("submodule = \"\"", "[integrate] submodule"),
        ("submodule = \"../elsewhere\"", "[integrate] submodule"),
        ("submodule = \"build_tools\"", "is not a submodule of"),
        ("upstream-remote = \"-evil\"", "[integrate] upstream-remote"),
        ("upstream-branch = \"a b\"", "[integrate] upstream-branch"),
    ];
    let original = std::fs::read_to_string(env.sp().join("lockstep.toml")).unwrap();
    for (line, needle) in cases {
        std::fs::write(env.sp().join("lockstep.toml"), &original).unwrap();
        set_config(&env, line);
        let before = snapshot(env.sp());
        for args in [
            &["integrate", "status"][..],
            &["integrate", "status", "--fetch"],
            &["integrate", "next"],
        ] {
            let out = env.run(args);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{line} {args:?}: {}",
                stderr(&out)
            );
            assert!(
                stderr(&out).contains(needle),
                "{line} {args:?}: {}",
                stderr(&out)
            );
            assert_eq!(
                snapshot(env.sp()),
                before,
                "{line} {args:?} touched nothing"
            );
        }
    }
}

#[test]
fn status_adds_no_remote_without_fetch() {
    let env = Env::new(&spec(4));
    let sub = env.sub();
    // The sandbox's submodule has no `upstream` remote yet (upstream-url
    // says where it is).
    assert!(!git(&sub, &["remote"]).contains("upstream"));
    let before = snapshot(env.sp());
    let out = env.ok(&["integrate", "status"], 0);
    assert!(out.contains("was never fetched"), "{out}");
    assert!(
        out.contains("--fetch` would add the remote `upstream`"),
        "{out}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&env.ok(&["integrate", "status", "--json"], 0)).unwrap();
    assert_eq!(json["upstream_fetched"], false);
    assert!(json["pending"].as_array().unwrap().is_empty());
    // Its own state database may appear; the repositories are untouched.
    let repos = |snap: String| snap.split("\nstate:").next().unwrap().to_string();
    assert_eq!(
        repos(snapshot(env.sp())),
        repos(before),
        "status changed no remote"
    );
    // With --fetch it does what it said.
    env.ok(&["integrate", "status", "--fetch"], 0);
    assert!(!git(&sub, &["remote"]).is_empty());
    assert_eq!(env.status()["upstream_fetched"], true);
}

#[test]
fn a_damaged_state_database_is_named_and_repaired_from_git() {
    let env = Env::new(&spec(4));
    env.ok(
        &["integrate", "start", "--no-fetch", "--branch", "llvm-int"],
        0,
    );
    let db = env.sp().join(".git/lockstep/state.db");
    for damage in [&b""[..], b"x", &[0x42u8; 8192][..]] {
        std::fs::write(&db, damage).unwrap();
        let _ = std::fs::remove_file(env.sp().join(".git/lockstep/state.db-wal"));
        let out = env.run(&["integrate", "status"]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(&db.display().to_string()), "{err}");
        assert!(err.contains("lockstep integrate repair"), "{err}");
        assert_eq!(std::fs::read(&db).unwrap(), damage, "left as it was");
        let repaired = env.ok(&["integrate", "repair", "--json"], 0);
        let repaired: serde_json::Value = serde_json::from_str(&repaired).unwrap();
        let aside = repaired["moved_aside"].as_str().expect("moved aside");
        assert_eq!(std::fs::read(aside).unwrap(), damage, "kept, not deleted");
        assert_eq!(repaired["integrate_branch"], "llvm-int");
        env.ok(&["integrate", "status"], 0);
    }
    // abort --all knows the rebuilt record: back to the base (detached:
    // where the user was before `start` is not in git), branch kept.
    let base = git(env.sp(), &["rev-parse", "llvm-int~1"]);
    env.ok(&["integrate", "abort", "--all"], 0);
    assert_eq!(git(env.sp(), &["rev-parse", "HEAD"]), base);
    assert!(!git(env.sp(), &["branch", "--list", "llvm-int"]).is_empty());
    let out = env.ok(&["integrate", "repair"], 0);
    assert!(out.contains("nothing to repair"), "{out}");
}
