//! `integrate start/status/next/loop` on real git repositories.

use crate::common::{ceil_log2, git, is_clean, smoke_count, spec, subjects, Env};
use lockstep_sandbox::{api_level_at, SandboxSpec};

fn with_patches(commits: usize) -> SandboxSpec {
    SandboxSpec {
        patches: true,
        upstreams_patch_at: Some(0.3),
        conflict_at: Some(0.7),
        docs_commits: 3,
        ..spec(commits)
    }
}

/// The person's fix after a smoke halt: advance onto the culprit, declare its
/// API level, commit.
fn fix_break(env: &Env, culprit: &str) {
    env.ok(&["integrate", "next", "--to", culprit], 0);
    let level = api_level_at(&env.sb, culprit).expect("level");
    std::fs::write(env.sp().join("API_LEVEL"), format!("{level}\n")).unwrap();
    git(
        env.sp(),
        &["commit", "-qam", &format!("Fix for API level {level}")],
    );
}

fn loop_json(
    env: &Env,
    args: &[&str],
    code: i32,
    smoke_log: &std::path::Path,
) -> serde_json::Value {
    let mut all = vec!["integrate", "loop", "--json"];
    all.extend_from_slice(args);
    let out = env
        .cmd(&all)
        .env("LOCKSTEP_SANDBOX_SMOKE_LOG", smoke_log)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("loop json")
}

#[test]
fn status_lists_pending_oldest_first_with_patch_reasons() {
    let env = Env::new(&with_patches(80));
    let s = env.status();
    let pending: Vec<&str> = s["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["sha"].as_str().unwrap())
        .collect();
    assert_eq!(
        pending,
        env.sb
            .affecting
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    for c in s["pending"].as_array().unwrap() {
        assert!(!c["subject"].as_str().unwrap().contains("[Docs]"));
        assert!(c["author"].as_str().is_some() && c["date"].as_str().is_some());
    }
    assert_eq!(s["clean"], false);
    assert_eq!(s["current"], env.sb.pin.as_str());
    assert_eq!(s["merge_base"], env.sb.base.as_str());
    assert_eq!(s["upstream_head"], env.sb.head.as_str());
    assert!(s["halted"].is_null());
    let patches = s["patches"].as_array().unwrap();
    let subjects: Vec<&str> = patches
        .iter()
        .map(|p| p["subject"].as_str().unwrap())
        .collect();
    assert_eq!(
        subjects,
        env.sb
            .patch_subjects
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    // Reasons: a body line, a trailer, a body line.
    assert!(patches[0]["reason"].as_str().unwrap().contains("legacy"));
    assert_eq!(patches[1]["reason"], "needed until upstream fixes line 5");
    // Only the third is already upstream.
    assert_eq!(patches[0]["upstreamed"], false);
    assert_eq!(patches[1]["upstreamed"], false);
    assert_eq!(patches[2]["upstreamed"], true);
    assert_eq!(
        patches[2]["upstreamed_by"],
        env.sb.upstreamed_commit.as_deref().unwrap()
    );

    // A patch without a reason is flagged in the text output; a hand-moved
    // submodule HEAD is shown.
    let sub = env.sub();
    std::fs::write(sub.join("mlir/lib/Local.cpp"), "int local;\n").unwrap();
    git(&sub, &["add", "."]);
    git(
        &sub,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@x",
            "commit",
            "-qm",
            "[mlir] Local tweak",
        ],
    );
    let text = env.ok(&["integrate", "status"], 0);
    assert!(text.contains("[mlir] Local tweak"), "{text}");
    assert!(text.contains("no reason recorded"), "{text}");
    assert!(text.contains("not the pin"), "{text}");
    assert!(text.contains("already upstream"), "{text}");
}

/// `integrate status` without fetching, as JSON.
fn status_unfetched(env: &Env) -> serde_json::Value {
    serde_json::from_str(&env.ok(&["integrate", "status", "--json"], 0)).expect("status json")
}

/// The pending commits' ids.
fn pending_shas(status: &serde_json::Value) -> Vec<String> {
    status["pending"]
        .as_array()
        .expect("pending")
        .iter()
        .map(|c| c["sha"].as_str().expect("sha").to_string())
        .collect()
}

/// What git lists for the same range and paths, oldest first, without the
/// subjects `skip` names.
fn git_listed(env: &Env, paths: &[&str], skip: &[&str]) -> Vec<String> {
    let range = format!("{}..refs/remotes/upstream/main", env.sb.pin);
    let mut args = vec!["log", "--reverse", "--format=%H %s", range.as_str(), "--"];
    args.extend_from_slice(paths);
    git(&env.sub(), &args)
        .lines()
        .filter(|l| !skip.iter().any(|s| l.contains(s)))
        .map(|l| l.split(' ').next().unwrap_or("").to_string())
        .collect()
}

/// status remembers its walk for one range: asked again it answers the
/// same; other tracked paths, other skip-subjects or an upstream that moved
/// are each answered as git lists them, never from the walk remembered.
#[test]
fn a_remembered_walk_answers_only_for_its_own_range() {
    let env = Env::new(&with_patches(60));
    let first = env.status();
    assert_eq!(pending_shas(&first), env.sb.affecting);
    assert_eq!(status_unfetched(&env)["pending"], first["pending"]);
    // A remembered walk that does not read (another lockstep's shape) is
    // walked again, never an error.
    let db = env.sp().join(".git/lockstep/state.db");
    let foreign = std::process::Command::new("python3")
        .arg("-c")
        .arg("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); n = c.execute(\"UPDATE records SET value = '{\\\"not\\\": 1}' WHERE name = 'pending-walk'\").rowcount; c.commit(); print(n)")
        .arg(&db)
        .output()
        .expect("python3");
    assert_eq!(
        String::from_utf8_lossy(&foreign.stdout).trim(),
        "1",
        "{foreign:?}"
    );
    assert_eq!(status_unfetched(&env)["pending"], first["pending"]);

    let config = env.sp().join("lockstep.toml");
    let original = std::fs::read_to_string(&config).unwrap();
    let every_path = original.replace("track-paths = [\"mlir\"]", "track-paths = []");
    assert_ne!(every_path, original);
    std::fs::write(&config, &every_path).unwrap();
    let all = status_unfetched(&env);
    assert_eq!(
        pending_shas(&all),
        git_listed(&env, &[], &["[Docs]", "Apply clang-tidy fixes"])
    );
    assert!(pending_shas(&all).len() > env.sb.affecting.len());

    std::fs::write(
        &config,
        every_path.replace("[integrate]\n", "[integrate]\nskip-subjects = []\n"),
    )
    .unwrap();
    let unskipped = status_unfetched(&env);
    assert_eq!(pending_shas(&unskipped), git_listed(&env, &[], &[]));
    assert!(unskipped["pending"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["subject"].as_str().unwrap().contains("[Docs]")));

    std::fs::write(&config, &original).unwrap();
    assert_eq!(status_unfetched(&env)["pending"], first["pending"]);
    // Upstream moves (a clone of the bare upstream commits and pushes).
    let work = tempfile::tempdir().unwrap();
    let clone = work.path().join("upstream");
    git(
        work.path(),
        &["clone", "-q", env.sb.upstream.to_str().unwrap(), "upstream"],
    );
    std::fs::write(clone.join("mlir/Late.cpp"), "int late;\n").unwrap();
    crate::common::commit_as_tester(&clone, "[mlir] A late change", true);
    git(&clone, &["push", "-q", "origin", "HEAD:main"]);
    let moved = env.status();
    let late = git(&env.sb.upstream, &["rev-parse", "HEAD"])
        .trim()
        .to_string();
    assert_eq!(pending_shas(&moved).last(), Some(&late));
    assert_eq!(
        pending_shas(&moved),
        git_listed(&env, &["mlir"], &["[Docs]", "Apply clang-tidy fixes"])
    );
}

#[test]
fn status_sees_a_carried_revert_that_upstream_also_made() {
    let env = Env::new(&spec(30));
    let sub = env.sub();
    // Carry a revert of an upstream commit from before the base.
    let victim = git(&sub, &["rev-parse", "HEAD~2"]);
    git(
        &sub,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@x",
            "revert",
            "--no-edit",
            &victim,
        ],
    );
    git(
        env.sp(),
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@x",
            "commit",
            "-qam",
            "Carry a revert",
        ],
    );
    // Upstream reverts the same commit later.
    let clone = env.dir.path().join("up-clone");
    git(
        env.dir.path(),
        &[
            "clone",
            "-q",
            env.sb.upstream.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    git(
        &clone,
        &[
            "-c",
            "user.name=U",
            "-c",
            "user.email=u@x",
            "revert",
            "--no-edit",
            &victim,
        ],
    );
    git(&clone, &["push", "-q", "origin", "HEAD:main"]);
    let s: serde_json::Value =
        serde_json::from_str(&env.ok(&["integrate", "status", "--json", "--fetch"], 0)).unwrap();
    let patch = &s["patches"][0];
    assert_eq!(patch["reverts"], victim.as_str());
    let upstream_revert = git(&clone, &["rev-parse", "HEAD"]);
    assert_eq!(patch["reverted_upstream_by"], upstream_revert.as_str());
}

#[test]
fn start_refuses_dirty_trees_and_numbers_taken_branches() {
    let env = Env::new(&spec(20));
    std::fs::write(env.sp().join("stray.txt"), "x").unwrap();
    let out = env.run(&["integrate", "start"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stray.txt"));
    assert!(env.sp().join("stray.txt").exists());
    std::fs::remove_file(env.sp().join("stray.txt")).unwrap();

    let first = env.ok(&["integrate", "start"], 0);
    let date = git(
        env.sp(),
        &["log", "-1", "--format=%cd", "--date=format:%Y%m%d"],
    );
    let branch = format!("integrates/llvm-{date}");
    assert!(first.contains(&branch), "{first}");
    assert_eq!(
        subjects(env.sp())[0],
        format!("Start LLVM integrate {branch}")
    );
    // On the integrate branch, a second start is refused (it would branch
    // a new integrate off this one), naming the branch and how to go on.
    let head = git(env.sp(), &["rev-parse", "HEAD"]);
    for args in [
        &["integrate", "start"][..],
        &["integrate", "start", "--branch", "other"][..],
    ] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&branch) && err.contains("lockstep integrate resume"),
            "{err}"
        );
    }
    assert_eq!(git(env.sp(), &["rev-parse", "HEAD"]), head);
    assert_eq!(git(env.sp(), &["branch", "--show-current"]), branch);
    git(env.sp(), &["checkout", "-q", "main"]);
    let second = env.ok(&["integrate", "start"], 0);
    assert!(second.contains(&format!("{branch}_1")), "{second}");
    git(env.sp(), &["checkout", "-q", "main"]);
    env.ok(&["integrate", "start", "--branch", "my-integrate"], 0);
    assert_eq!(git(env.sp(), &["branch", "--show-current"]), "my-integrate");
    // Taken names are refused.
    git(env.sp(), &["checkout", "-q", "main"]);
    env.ok(&["integrate", "start", "--branch", "my-integrate"], 2);
}

#[test]
fn next_moves_a_clean_pin_and_stages_only_the_submodule() {
    let env = Env::new(&spec(30));
    env.start();
    let n = env.sb.affecting.len();
    let dry = env.ok(&["integrate", "next", "--dry-run"], 0);
    assert!(dry.contains("would commit"), "{dry}");
    assert_eq!(subjects(env.sp()).len(), 3, "dry run must not commit");

    env.ok(&["integrate", "next"], 0);
    let target = &env.sb.affecting[0];
    let subject = &subjects(env.sp())[0];
    assert!(
        subject.starts_with(&format!("Advance LLVM to {target}: ")),
        "{subject}"
    );
    assert!(subject.ends_with(&format!(") (1 of {n})")), "{subject}");
    let author = git(&env.sub(), &["log", "-1", "--format=%an on %as", target]);
    assert!(subject.contains(&format!("({author})")), "{subject}");
    assert_eq!(git(&env.sub(), &["rev-parse", "HEAD"]), *target);
    let changed = git(env.sp(), &["show", "--format=", "--name-only", "HEAD"]);
    assert_eq!(changed, "third_party/llvm-project");
    assert!(is_clean(env.sp()));

    // An abbreviation works, counted in the pending list.
    let third = &env.sb.affecting[3];
    env.ok(&["integrate", "next", "--to", &third[..9]], 0);
    let subject = &subjects(env.sp())[0];
    assert!(
        subject.starts_with(&format!("Advance LLVM to {third}")),
        "{subject}"
    );
    assert!(subject.ends_with(&format!("(3 of {})", n - 1)), "{subject}");
}

#[test]
fn next_replays_patches_drops_upstreamed_ones_and_halts_on_conflict() {
    let env = Env::new(&with_patches(60));
    env.start();
    let upstreamed = env.sb.upstreamed_commit.clone().unwrap();
    env.ok(&["integrate", "next", "--to", &upstreamed], 0);
    let message = git(env.sp(), &["log", "-1", "--format=%B"]);
    assert!(message.contains("Lockstep-Dropped-Patch: "), "{message}");
    assert!(
        message.contains("Fix off-by-one in Upstreamed.cpp"),
        "{message}"
    );
    let s = env.status();
    assert_eq!(s["patches"].as_array().unwrap().len(), 2);
    assert_eq!(s["merge_base"], upstreamed.as_str());
    // The carried patches keep their authors and messages.
    let sub = env.sub();
    let log = git(
        &sub,
        &["log", "--format=%s|%an", &format!("{upstreamed}..HEAD")],
    );
    assert!(log.contains("Local fix in Conflict.cpp"), "{log}");

    // A conflict leaves everything where it was, with no rebase in progress.
    let before_super = git(env.sp(), &["rev-parse", "HEAD"]);
    let before_sub = git(&sub, &["rev-parse", "HEAD"]);
    let conflict = env.sb.conflict_commit.clone().unwrap();
    let out = env.ok(&["integrate", "next", "--to", &conflict], 3);
    assert!(out.contains("Conflict.cpp"), "{out}");
    assert_eq!(git(env.sp(), &["rev-parse", "HEAD"]), before_super);
    assert_eq!(git(&sub, &["rev-parse", "HEAD"]), before_sub);
    let git_dir = std::path::PathBuf::from(git(&sub, &["rev-parse", "--absolute-git-dir"]));
    assert!(!git_dir.join("rebase-merge").exists() && !git_dir.join("rebase-apply").exists());
    assert!(is_clean(env.sp()));
    let s = env.status();
    assert_eq!(s["halted"]["kind"], "conflict");
    assert_eq!(s["halted"]["commit"], conflict.as_str());
    let report = env.ok(&["integrate", "report"], 0);
    assert!(
        report.contains("Local fix in Conflict.cpp") && report.contains("mlir/lib/Conflict.cpp"),
        "{report}"
    );
}

#[test]
fn gallop_finds_each_break_with_logarithmic_smokes() {
    let env = Env::new(&SandboxSpec {
        breaks: vec![0.3, 0.7],
        ..spec(120)
    });
    env.start();
    let log = env.dir.path().join("smoke.log");
    let candidates = env.sb.affecting.len() + 1; // plus the untracked head
    let bound = ceil_log2(candidates) + 2;

    let first = loop_json(&env, &[], 3, &log);
    assert_eq!(
        first["end"]["halt"]["culprit"]["sha"],
        env.sb.breaks[0].as_str()
    );
    let runs = smoke_count(&log);
    assert!(
        runs <= bound,
        "{runs} smoke runs for {candidates} candidates (bound {bound})"
    );
    assert_eq!(first["smoke_runs"], runs);
    // The pin is the last good commit, everything is clean.
    let b0 = env
        .sb
        .affecting
        .iter()
        .position(|c| *c == env.sb.breaks[0])
        .unwrap();
    assert_eq!(
        git(&env.sub(), &["rev-parse", "HEAD"]),
        env.sb.affecting[b0 - 1]
    );
    assert_eq!(
        git(env.sp(), &["ls-tree", "HEAD", "third_party/llvm-project"])
            .split_whitespace()
            .nth(2)
            .unwrap(),
        env.sb.affecting[b0 - 1]
    );
    assert!(is_clean(env.sp()));

    // A rerun repeats no smoke.
    let again = loop_json(&env, &[], 3, &log);
    assert_eq!(again["smoke_runs"], 0);
    assert_eq!(smoke_count(&log), runs);
    assert_eq!(
        again["end"]["halt"]["culprit"]["sha"],
        env.sb.breaks[0].as_str()
    );

    fix_break(&env, &env.sb.breaks[0]);
    let second = loop_json(&env, &[], 3, &log);
    assert_eq!(
        second["end"]["halt"]["culprit"]["sha"],
        env.sb.breaks[1].as_str()
    );
    fix_break(&env, &env.sb.breaks[1]);
    let done = loop_json(&env, &[], 0, &log);
    assert_eq!(done["end"]["result"], "at_head");
    assert_eq!(git(&env.sub(), &["rev-parse", "HEAD"]), env.sb.head);
    let total = smoke_count(&log);
    assert!(total <= 2 * bound + 2, "{total} smoke runs in all");
    assert!(is_clean(env.sp()));
}

#[test]
fn each_smokes_every_commit_up_to_the_break() {
    let env = Env::new(&SandboxSpec {
        breaks: vec![0.4],
        ..spec(40)
    });
    env.start();
    let log = env.dir.path().join("smoke.log");
    let out = loop_json(&env, &["--strategy", "each"], 3, &log);
    let b = env
        .sb
        .affecting
        .iter()
        .position(|c| *c == env.sb.breaks[0])
        .unwrap();
    assert_eq!(
        out["end"]["halt"]["culprit"]["sha"],
        env.sb.breaks[0].as_str()
    );
    // Every commit up to and including the break (the pin is only smoked when
    // nothing in the run was good).
    assert_eq!(smoke_count(&log), b + 1);
    assert_eq!(out["advances"].as_array().unwrap().len(), b);
    let advances: Vec<String> = subjects(env.sp())
        .into_iter()
        .filter(|s| s.starts_with("Advance LLVM"))
        .collect();
    assert_eq!(advances.len(), b);
    assert!(advances
        .last()
        .unwrap()
        .ends_with(&format!("(1 of {})", env.sb.affecting.len())));
}

#[test]
fn gallop_stops_before_the_first_conflict_with_replays_alone() {
    let env = Env::new(&SandboxSpec {
        patches: true,
        conflict_at: Some(0.5),
        ..spec(80)
    });
    env.start();
    let log = env.dir.path().join("smoke.log");
    let out = loop_json(&env, &[], 3, &log);
    let conflict = env.sb.conflict_commit.clone().unwrap();
    assert_eq!(out["end"]["halt"]["kind"], "conflict");
    assert_eq!(out["end"]["halt"]["culprit"]["sha"], conflict.as_str());
    // Only the candidate just before the conflict is smoked.
    assert_eq!(smoke_count(&log), 1);
    let c = env
        .sb
        .affecting
        .iter()
        .position(|x| *x == conflict)
        .unwrap();
    let base = env.status()["merge_base"].as_str().unwrap().to_string();
    assert_eq!(base, env.sb.affecting[c - 1]);
}

#[test]
fn untestable_commits_are_skipped_like_git_bisect() {
    let env = Env::new(&SandboxSpec {
        breaks: vec![0.5],
        ..spec(60)
    });
    let b = env
        .sb
        .affecting
        .iter()
        .position(|c| *c == env.sb.breaks[0])
        .unwrap();
    let skipped = env.sb.affecting[b - 1].clone();
    // A smoke that cannot test the commit just before the break.
    let wrapper = env.sp().join("build_tools/maybe.sh");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\n[ \"$LOCKSTEP_PROBE_COMMIT\" = \"{skipped}\" ] && exit 125\nexec ./build_tools/smoke.sh\n"),
    )
    .unwrap();
    git(
        env.sp(),
        &[
            "update-index",
            "--add",
            "--chmod=+x",
            "build_tools/maybe.sh",
        ],
    );
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let toml = std::fs::read_to_string(env.sp().join("lockstep.toml")).unwrap();
    std::fs::write(
        env.sp().join("lockstep.toml"),
        toml.replace("./build_tools/smoke.sh", "./build_tools/maybe.sh"),
    )
    .unwrap();
    git(env.sp(), &["add", "."]);
    git(env.sp(), &["commit", "-qm", "maybe smoke"]);
    git(env.sp(), &["push", "-q", "origin", "main"]);
    env.start();
    let log = env.dir.path().join("smoke.log");
    let out = loop_json(&env, &[], 3, &log);
    let halt = &out["end"]["halt"];
    assert_eq!(halt["culprit"]["sha"], env.sb.breaks[0].as_str());
    assert_eq!(halt["skipped"][0], skipped.as_str());
    assert_eq!(halt["last_good"]["sha"], env.sb.affecting[b - 2].as_str());
    let report = env.ok(&["integrate", "report"], 0);
    assert!(report.contains("untestable"), "{report}");
}

#[test]
fn a_smoke_that_runs_too_long_counts_as_bad() {
    let env = Env::new(&spec(20));
    let toml = std::fs::read_to_string(env.sp().join("lockstep.toml")).unwrap();
    std::fs::write(
        env.sp().join("lockstep.toml"),
        toml.replace("smoke-timeout = \"5m\"", "smoke-timeout = \"1s\""),
    )
    .unwrap();
    git(env.sp(), &["commit", "-qam", "short timeout"]);
    let started = std::time::Instant::now();
    let out = env
        .cmd(&["integrate", "loop", "--json"])
        .env("LOCKSTEP_SANDBOX_SMOKE_SLEEP", "300")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Far below the smoke's own 300 s, whatever the load: it was stopped.
    assert!(started.elapsed() < std::time::Duration::from_secs(200));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["end"]["halt"]["at_pin"], true);
    assert!(
        json["end"]["halt"]["exit"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{json}"
    );
}

#[test]
fn max_steps_limits_the_run_and_prints_what_is_pending() {
    let env = Env::new(&spec(30));
    env.start();
    let out = env.ok(
        &[
            "integrate",
            "loop",
            "--strategy",
            "each",
            "--max-steps",
            "3",
        ],
        0,
    );
    assert!(out.contains("still pending"), "{out}");
    let advances = subjects(env.sp())
        .into_iter()
        .filter(|s| s.starts_with("Advance"))
        .count();
    assert_eq!(advances, 3);
    assert_eq!(git(&env.sub(), &["rev-parse", "HEAD"]), env.sb.affecting[2]);
    // gallop with a limit stops at the limit too.
    env.ok(&["integrate", "loop", "--max-steps", "5"], 0);
    assert_eq!(git(&env.sub(), &["rev-parse", "HEAD"]), env.sb.affecting[7]);
}

#[test]
fn a_fix_committed_after_a_halt_gets_a_fresh_smoke() {
    let env = Env::new(&SandboxSpec {
        breaks: vec![0.5],
        ..spec(40)
    });
    env.start();
    let log = env.dir.path().join("smoke.log");
    loop_json(&env, &[], 3, &log);
    let before = smoke_count(&log);
    std::fs::write(env.sp().join("src/extra.cpp"), "int extra;\n").unwrap();
    git(env.sp(), &["add", "."]);
    git(env.sp(), &["commit", "-qm", "unrelated change"]);
    let out = loop_json(&env, &[], 3, &log);
    assert!(smoke_count(&log) > before);
    assert_eq!(out["cached"], 0);
}

#[test]
fn dry_run_loop_changes_nothing() {
    let env = Env::new(&spec(20));
    env.start();
    let head = git(env.sp(), &["rev-parse", "HEAD"]);
    let pin = git(&env.sub(), &["rev-parse", "HEAD"]);
    let log = env.dir.path().join("smoke.log");
    let out = env
        .cmd(&["integrate", "loop", "--dry-run"])
        .env("LOCKSTEP_SANDBOX_SMOKE_LOG", &log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("would search"), "{stdout}");
    assert_eq!(smoke_count(&log), 0, "a dry run runs no smoke");
    assert_eq!(git(env.sp(), &["rev-parse", "HEAD"]), head);
    assert_eq!(git(&env.sub(), &["rev-parse", "HEAD"]), pin);
    assert_eq!(
        git(env.sp(), &["ls-tree", "HEAD", "third_party/llvm-project"])
            .split_whitespace()
            .nth(2)
            .unwrap(),
        pin
    );
    assert!(is_clean(env.sp()));
    let out = env.ok(&["integrate", "abort"], 0);
    assert!(out.contains("nothing unfinished"), "{out}");
}

#[test]
fn wait_picks_up_new_upstream_commits_at_head() {
    let env = Env::new(&spec(10));
    env.start();
    let mut child = env
        .cmd(&["integrate", "loop", "--wait", "1"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let at_head = || git(&env.sub(), &["rev-parse", "HEAD"]) == env.sb.head;
    while !at_head() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(at_head(), "loop did not reach head");
    // Upstream moves on.
    let clone = env.dir.path().join("up-clone");
    git(
        env.dir.path(),
        &[
            "clone",
            "-q",
            env.sb.upstream.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    std::fs::write(clone.join("mlir/lib/New.cpp"), "int fresh;\n").unwrap();
    git(&clone, &["add", "."]);
    git(
        &clone,
        &[
            "-c",
            "user.name=U",
            "-c",
            "user.email=u@x",
            "commit",
            "-qm",
            "[mlir] Fresh commit",
        ],
    );
    git(&clone, &["push", "-q", "origin", "HEAD:main"]);
    let fresh = git(&clone, &["rev-parse", "HEAD"]);
    // The pin is committed (the submodule alone moves for every probe).
    let pinned =
        || git(env.sp(), &["ls-tree", "HEAD", "third_party/llvm-project"]).contains(&fresh);
    while !pinned() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(pinned(), "the new upstream commit was not taken");
    assert!(subjects(env.sp())[0].contains("[mlir] Fresh commit"));
}

#[test]
fn a_failing_pin_halts_without_blaming_upstream() {
    let env = Env::new(&SandboxSpec {
        breaks: vec![0.5],
        ..spec(30)
    });
    std::fs::write(env.sp().join("API_LEVEL"), "9\n").unwrap();
    git(env.sp(), &["commit", "-qam", "break the superproject"]);
    let log = env.dir.path().join("smoke.log");
    let out = loop_json(&env, &[], 3, &log);
    assert_eq!(out["end"]["halt"]["at_pin"], true);
    let candidates = env.sb.affecting.len() + 1;
    assert!(
        smoke_count(&log) <= ceil_log2(candidates) + 2,
        "{}",
        smoke_count(&log)
    );
    let report = env.ok(&["integrate", "report"], 0);
    assert!(report.contains("the current pin fails"), "{report}");
}
