//! `lockstep integrate revert`: a revert of an upstream commit carried as a
//! patch with its reason, listed by `status`, and dropped by the advance once
//! upstream reverts (or reverts and relands) the commit itself; bad input
//! changes nothing. Real git repositories (lockstep-sandbox).

use crate::common::*;

/// A clone of the sandbox's upstream, to land upstream commits in.
fn upstream_clone(env: &Env) -> std::path::PathBuf {
    let dir = env.dir.path().join("upstream-work");
    git(
        env.dir.path(),
        &[
            "clone",
            "-q",
            &env.sb.upstream.to_string_lossy(),
            &dir.to_string_lossy(),
        ],
    );
    dir
}

fn commit_upstream(dir: &std::path::Path, args: &[&str]) -> String {
    let mut all = vec![
        "-c",
        "user.name=Upstream",
        "-c",
        "user.email=up@example.com",
    ];
    all.extend_from_slice(args);
    git(dir, &all);
    git(dir, &["push", "-q", "origin", "HEAD:main"]);
    git(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

/// The sandbox taken to upstream head (no breaks, no patches).
fn at_head(commits: usize) -> Env {
    let env = Env::new(&spec(commits));
    env.start();
    env.ok(&["integrate", "loop"], 0);
    env
}

#[test]
fn a_carried_revert_is_listed_and_dropped_when_upstream_reverts_it() {
    let env = at_head(16);
    let target = env.sb.affecting[2].clone();
    let out = env.ok(
        &[
            "integrate",
            "revert",
            &target,
            "--reason",
            "breaks our lowering",
            "--json",
        ],
        0,
    );
    let reverted: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(reverted["reverted"], target.as_str(), "{reverted}");
    let message = git(env.sp(), &["log", "-1", "--format=%B"]);
    assert!(
        message.starts_with(&format!("Carry a revert of {} in LLVM: ", &target[..12]))
            && message.contains("Lockstep-Reason: breaks our lowering")
            && message.contains(&format!("Lockstep-Revert: {target}")),
        "{message}"
    );
    let status = env.status();
    let patches = status["patches"].as_array().expect("patches");
    assert_eq!(patches.len(), 1, "{status}");
    assert_eq!(patches[0]["reverts"], target.as_str(), "{status}");
    assert_eq!(patches[0]["reason"], "breaks our lowering", "{status}");
    let human = env.ok(&["integrate", "status"], 0);
    assert!(
        human.contains("carried reverts: 1") && human.contains("breaks our lowering"),
        "{human}"
    );
    assert!(is_clean(env.sp()));

    // Twice, a pending commit, an empty reason: refused, nothing changes.
    let head = git(env.sp(), &["rev-parse", "HEAD"]).trim().to_string();
    let err = stderr(&env.run(&["integrate", "revert", &target, "--reason", "again"]));
    assert!(err.contains("is carried already"), "{err}");
    let err = stderr(&env.run(&["integrate", "revert", &target, "--reason", " "]));
    assert!(err.contains("--reason must be one line"), "{err}");
    let up = upstream_clone(&env);
    std::fs::write(up.join("NEW.txt"), "new\n").expect("write");
    git(&up, &["add", "NEW.txt"]);
    let pending = commit_upstream(&up, &["commit", "-q", "-m", "[mlir] A new commit"]);
    env.ok(&["integrate", "status", "--fetch"], 0);
    let err = stderr(&env.run(&["integrate", "revert", &pending, "--reason", "x"]));
    assert!(
        err.contains("is not in the pinned upstream history"),
        "{err}"
    );
    assert_eq!(git(env.sp(), &["rev-parse", "HEAD"]).trim(), head);

    // Upstream reverts the same commit: the advance drops the carried
    // revert and says so.
    let upstream_revert = commit_upstream(&up, &["revert", "--no-edit", &target]);
    env.ok(&["integrate", "loop"], 0);
    let log = git(env.sp(), &["log", "--format=%B", &format!("{head}..HEAD")]);
    assert!(
        log.contains(&format!(
            "(reverted upstream in {})",
            &upstream_revert[..12]
        )),
        "{log}"
    );
    let status = env.status();
    assert_eq!(
        status["patches"].as_array().map(Vec::len),
        Some(0),
        "{status}"
    );
    assert_eq!(status["pin"], upstream_revert.as_str(), "{status}");
}

#[test]
fn a_revert_that_does_not_apply_changes_nothing() {
    let env = at_head(16);
    let target = env.sb.affecting[1].clone();
    // Upstream rewrites what the target changed: its revert conflicts.
    let files = git(&env.sub(), &["show", "--name-only", "--format=", &target]);
    let file = files.lines().next().expect("a file").to_string();
    let up = upstream_clone(&env);
    std::fs::write(up.join(&file), "rewritten entirely\n").expect("write");
    git(&up, &["add", &file]);
    commit_upstream(&up, &["commit", "-q", "-m", "[mlir] Rewrite it"]);
    env.ok(&["integrate", "loop"], 0);
    let head = git(env.sp(), &["rev-parse", "HEAD"]).trim().to_string();
    let out = env.run(&["integrate", "revert", &target, "--reason", "x"]);
    let (_, err) = expect_code(&out, 1, "a conflicting revert");
    assert!(
        err.contains("does not apply on the pin") && err.contains(&file),
        "{err}"
    );
    assert_eq!(git(env.sp(), &["rev-parse", "HEAD"]).trim(), head);
    assert!(is_clean(env.sp()) && is_clean(&env.sub()));
}

#[test]
fn loop_on_break_revert_carries_the_culprits_revert_and_reaches_head() {
    let env = Env::new(&with_break(40));
    env.start();
    let brk = env.sb.breaks[0].clone();
    let out = env.ok(&["integrate", "loop", "--on-break", "revert", "--json"], 0);
    let looped: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(looped["end"]["result"], "at_head", "{looped}");
    assert_eq!(looped["reverted"][0]["sha"], brk.as_str(), "{looped}");
    let status = env.status();
    let reverts: Vec<&serde_json::Value> = status["patches"]
        .as_array()
        .expect("patches")
        .iter()
        .filter(|p| p["reverts"] == brk.as_str())
        .collect();
    assert_eq!(reverts.len(), 1, "{status}");
    assert!(reverts[0]["reason"]
        .as_str()
        .is_some_and(|r| r.contains("--on-break revert")));
    assert_eq!(
        status["pending"].as_array().map(Vec::len),
        Some(0),
        "{status}"
    );
    let log = git(env.sp(), &["log", "--format=%B"]);
    assert!(log.contains(&format!("Lockstep-Revert: {brk}")), "{log}");
    assert!(is_clean(env.sp()));

    // Without it the same integrate halts at the break.
    let env = Env::new(&with_break(40));
    env.start();
    env.ok(&["integrate", "loop"], 3);
    let err = stderr(&env.run(&["integrate", "loop", "--on-break", "sometimes"]));
    assert!(err.contains("expected `halt` or `revert`"), "{err}");
}

#[test]
fn mark_records_the_stable_release_gate_and_status_shows_why() {
    let env = at_head(12);
    let out = env.ok(
        &["integrate", "mark", "--unstable", "ROCm tests disabled"],
        0,
    );
    assert!(
        out.contains("not ok for a stable release: ROCm tests disabled"),
        "{out}"
    );
    let mark = std::fs::read_to_string(env.sp().join(".lockstep/unstable")).expect("mark");
    assert!(mark.contains("ROCm tests disabled"), "{mark}");
    assert!(is_clean(env.sp()), "the mark is committed");
    env.ok(
        &[
            "integrate",
            "revert",
            &env.sb.affecting[2],
            "--reason",
            "breaks our lowering",
        ],
        0,
    );
    let status = env.status();
    let why: Vec<&str> = status["not_stable"]
        .as_array()
        .expect("not_stable")
        .iter()
        .filter_map(|r| r.as_str())
        .collect();
    assert_eq!(why.len(), 2, "{status}");
    assert_eq!(why[0], "ROCm tests disabled");
    assert!(why[1].starts_with(&format!(
        "carries a revert of {}",
        &env.sb.affecting[2][..12]
    )));
    assert!(env
        .ok(&["integrate", "status"], 0)
        .contains("not ok for a stable release:"));
    let err = stderr(&env.run(&["integrate", "mark", "--unstable", ""]));
    assert!(err.contains("needs a reason"), "{err}");
    let err = stderr(&env.run(&["integrate", "mark"]));
    assert!(err.contains("required"), "{err}");
    env.ok(&["integrate", "mark", "--stable"], 0);
    assert!(!env.sp().join(".lockstep/unstable").exists());
    assert_eq!(env.status()["not_stable"].as_array().map(Vec::len), Some(1));
}

#[test]
fn mark_refuses_a_committed_link_out_of_the_repository() {
    let env = at_head(6);
    let elsewhere = env.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("unstable"), "# theirs\nkeep me\n").unwrap();
    std::os::unix::fs::symlink(&elsewhere, env.sp().join(".lockstep")).unwrap();
    commit_as_tester(env.sp(), "A link out", true);
    let head = git(env.sp(), &["rev-parse", "HEAD"]);
    for args in [
        &["integrate", "mark", "--unstable", "reason"][..],
        &["integrate", "mark", "--stable"][..],
    ] {
        let out = env.run(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("symbolic link out of the repository"), "{err}");
        assert!(err.contains(".lockstep"), "{err}");
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("unstable")).unwrap(),
            "# theirs\nkeep me\n"
        );
        assert_eq!(
            git(env.sp(), &["rev-parse", "HEAD"]),
            head,
            "nothing committed"
        );
        assert!(is_clean(env.sp()));
    }
}

/// Sets `[integrate] smoke` to `script` (written into the superproject and
/// committed with the config `extra`, on origin/main too).
fn smoke_and_rules(env: &Env, script: &str, extra: &str) {
    write_executable(&env.sp().join("build_tools/smoke2.sh"), script);
    let path = env.sp().join("lockstep.toml");
    let toml = std::fs::read_to_string(&path).expect("config");
    let toml = toml.replace(
        "smoke = [\"./build_tools/smoke.sh\"]",
        "smoke = [\"./build_tools/smoke2.sh\"]",
    );
    std::fs::write(&path, format!("{toml}{extra}")).expect("write");
    commit_as_tester(env.sp(), "Smoke with verdict rules", true);
    git(env.sp(), &["push", "-q", "origin", "HEAD:main"]);
    git(env.sp(), &["fetch", "-q", "origin"]);
}

#[test]
fn verdict_rules_tell_a_missing_device_from_a_crash() {
    // The break makes the smoke say the device is missing: counted good by
    // a rule, the loop runs to head with no halt.
    let env = Env::new(&with_break(24));
    smoke_and_rules(
        &env,
        "#!/bin/sh\n./build_tools/smoke.sh >/dev/null 2>&1 && exit 0\necho 'error: HIP device not found'\nexit 1\n",
        "\n[[integrate.verdicts]]\nname = \"device missing\"\noutput = \"device not found\"\nverdict = \"good\"\n",
    );
    env.start();
    let out = env.ok(&["integrate", "loop", "--json"], 0);
    let looped: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(looped["end"]["result"], "at_head", "{looped}");

    // A crash (exit 134) is bad by rule, and the report says which rule.
    let env = Env::new(&with_break(24));
    smoke_and_rules(
        &env,
        "#!/bin/sh\n./build_tools/smoke.sh >/dev/null 2>&1 && exit 0\necho 'Aborted (core dumped)'\nexit 134\n",
        "\n[[integrate.verdicts]]\nname = \"compiler crash\"\nexit = [134]\nverdict = \"bad\"\n",
    );
    env.start();
    env.ok(&["integrate", "loop"], 3);
    let report = env.ok(&["integrate", "report"], 0);
    assert!(
        report.contains("exit status 134; verdict bad by rule `compiler crash`"),
        "{report}"
    );

    // A rule that matches nothing is refused before anything runs.
    let env = Env::new(&spec(6));
    smoke_and_rules(
        &env,
        "#!/bin/sh\nexit 0\n",
        "\n[[integrate.verdicts]]\nverdict = \"good\"\n",
    );
    let err = stderr(&env.run(&["integrate", "start"]));
    assert!(
        err.contains(
            "[integrate] verdicts[1] = \"\" in lockstep.toml is not valid: it matches nothing"
        ),
        "{err}"
    );
}

/// A follower (StableHLO-like): its own repository whose
/// `build_tools/llvm_version.txt` pins `first`, then a newer commit pinning
/// `second` on its origin's main; added to the superproject as a submodule,
/// configured as `[[integrate.follow]]`, pushed to origin/main.
fn with_follower(env: &Env, first: &str, second: &str) -> String {
    let origin = env.dir.path().join("stablehlo.git");
    let work = env.dir.path().join("stablehlo-work");
    git(
        env.dir.path(),
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            &origin.to_string_lossy(),
        ],
    );
    git(
        env.dir.path(),
        &["init", "-q", "-b", "main", &work.to_string_lossy()],
    );
    std::fs::create_dir_all(work.join("build_tools")).expect("mkdir");
    std::fs::write(
        work.join("build_tools/llvm_version.txt"),
        format!("{first}\n"),
    )
    .expect("write");
    commit_as_tester(&work, "StableHLO at an older LLVM", true);
    git(&work, &["push", "-q", &origin.to_string_lossy(), "main"]);
    git(
        env.sp(),
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            &origin.to_string_lossy(),
            "third_party/stablehlo",
        ],
    );
    let path = env.sp().join("lockstep.toml");
    let toml = std::fs::read_to_string(&path).expect("config");
    std::fs::write(
        &path,
        format!("{toml}\n[[integrate.follow]]\nname = \"stablehlo\"\nsubmodule = \"third_party/stablehlo\"\nupstream-pin-file = \"build_tools/llvm_version.txt\"\n"),
    )
    .expect("write");
    commit_as_tester(env.sp(), "Add StableHLO, following LLVM", true);
    git(env.sp(), &["push", "-q", "origin", "HEAD:main"]);
    git(env.sp(), &["fetch", "-q", "origin"]);
    std::fs::write(
        work.join("build_tools/llvm_version.txt"),
        format!("{second}\n"),
    )
    .expect("write");
    commit_as_tester(&work, "Bump LLVM", true);
    git(&work, &["push", "-q", &origin.to_string_lossy(), "main"]);
    git(&work, &["rev-parse", "HEAD"]).trim().to_string()
}

#[test]
fn followers_show_their_distance_and_move_with_bump_followers() {
    let env = Env::new(&spec(20));
    let first = env.sb.affecting[1].clone();
    let second = env.sb.head.clone();
    let newer = with_follower(&env, &first, &second);
    env.start();
    let status = env.status();
    let f = &status["followers"][0];
    assert_eq!(f["name"], "stablehlo", "{status}");
    assert_eq!(f["upstream_pin"], first.as_str(), "{status}");
    assert!(f["behind"].as_u64().is_some(), "{status}");
    let human = env.ok(&["integrate", "status"], 0);
    assert!(
        human.contains("stablehlo (third_party/stablehlo) pins"),
        "{human}"
    );

    // The loop goes to head and says the follower is behind.
    let out = env.run(&["integrate", "loop", "--json"]);
    let (stdout, stderr) = expect_code(&out, 0, "loop");
    assert!(
        stderr.contains("follower stablehlo pins an upstream"),
        "{stderr}"
    );
    let looped: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    let behind = looped["followers"][0]["behind"].as_u64().expect("behind");
    assert!(behind > 0, "{looped}");

    // --bump-followers moves it to its head in one commit; it then pins
    // upstream head, like the integrate.
    let out = env.ok(&["integrate", "loop", "--bump-followers", "--json"], 0);
    let looped: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(looped["bumped"][0]["to"], newer.as_str(), "{looped}");
    assert_eq!(looped["followers"][0]["behind"], 0, "{looped}");
    let pinned = git(env.sp(), &["rev-parse", "HEAD:third_party/stablehlo"]);
    assert_eq!(pinned.trim(), newer);
    assert!(git(env.sp(), &["log", "-1", "--format=%B"]).contains("stablehlo: "));
    assert!(is_clean(env.sp()));
}

#[test]
fn a_follower_without_an_upstream_pin_is_named() {
    let env = Env::new(&spec(8));
    let (first, second) = (env.sb.affecting[0].clone(), env.sb.affecting[1].clone());
    with_follower(&env, &first, &second);
    // Its head loses the pin file.
    let work = env.dir.path().join("stablehlo-work");
    git(&work, &["rm", "-q", "build_tools/llvm_version.txt"]);
    commit_as_tester(&work, "Drop the LLVM pin", false);
    git(
        &work,
        &[
            "push",
            "-q",
            &env.dir.path().join("stablehlo.git").to_string_lossy(),
            "main",
        ],
    );
    env.start();
    let head = git(env.sp(), &["rev-parse", "HEAD"]);
    let err = stderr(&env.run(&["integrate", "loop", "--bump-followers"]));
    assert!(
        err.contains("follower stablehlo")
            && err.contains("has no upstream pin file build_tools/llvm_version.txt"),
        "{err}"
    );
    assert_eq!(git(env.sp(), &["rev-parse", "HEAD"]), head, "nothing moved");
    let path = env.sp().join("lockstep.toml");
    let toml = std::fs::read_to_string(&path).expect("config");
    std::fs::write(
        &path,
        toml.replace("upstream-pin-file = \"build_tools/llvm_version.txt\"\n", ""),
    )
    .expect("write");
    let err = stderr(&env.run(&["integrate", "status"]));
    assert!(
        err.contains("give exactly one of upstream-pin-file, upstream-submodule and upstream-pin"),
        "{err}"
    );
}

#[test]
fn a_follower_pinning_by_its_own_submodule_is_read_from_the_gitlink() {
    let env = Env::new(&spec(10));
    let pinned = env.sb.affecting[1].clone();
    let origin = env.dir.path().join("torch-mlir.git");
    let work = env.dir.path().join("torch-mlir-work");
    git(
        env.dir.path(),
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            &origin.to_string_lossy(),
        ],
    );
    git(
        env.dir.path(),
        &["init", "-q", "-b", "main", &work.to_string_lossy()],
    );
    // Torch-MLIR pins LLVM as its own submodule: a gitlink is all it takes.
    git(
        &work,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{pinned},externals/llvm-project"),
        ],
    );
    commit_as_tester(&work, "Pin LLVM", false);
    git(&work, &["push", "-q", &origin.to_string_lossy(), "main"]);
    git(
        env.sp(),
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            &origin.to_string_lossy(),
            "third_party/torch-mlir",
        ],
    );
    let path = env.sp().join("lockstep.toml");
    let toml = std::fs::read_to_string(&path).expect("config");
    std::fs::write(
        &path,
        format!("{toml}\n[[integrate.follow]]\nname = \"torch-mlir\"\nsubmodule = \"third_party/torch-mlir\"\nupstream-submodule = \"externals/llvm-project\"\n"),
    )
    .expect("write");
    commit_as_tester(env.sp(), "Add Torch-MLIR, following LLVM", true);
    git(env.sp(), &["push", "-q", "origin", "HEAD:main"]);
    git(env.sp(), &["fetch", "-q", "origin"]);
    env.start();
    env.ok(&["integrate", "loop"], 0);
    let status = env.status();
    let f = &status["followers"][0];
    assert_eq!(f["upstream_pin"], pinned.as_str(), "{status}");
    assert!(f["behind"].as_u64().is_some_and(|b| b > 0), "{status}");
    assert!(f["problem"].is_null(), "{status}");
}
