use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use crate::common::{
    ceil_log2, current_branch, expect_code, git, is_ancestor, is_clean, spec, subjects, text,
    with_break, write_executable, Env,
};

// ---------------------------------------------------------------------------
// Helpers.

fn head(dir: &Path) -> String {
    git(dir, &["rev-parse", "HEAD"])
}

/// The submodule commit recorded in superproject commit `rev`.
fn pin_at(env: &Env, rev: &str) -> String {
    git(
        env.sp(),
        &["rev-parse", &format!("{rev}:{}", env.sb.submodule_path)],
    )
}

/// Writes an executable script into the temp dir, outside the superproject
/// (so it never makes the superproject dirty); returns its absolute path.
fn script(env: &Env, name: &str, body: &str) -> PathBuf {
    let path = env.dir.path().join(name);
    write_executable(&path, &format!("#!/usr/bin/env bash\nset -u\n{body}"));
    path
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn bisect_json(env: &Env, extra: &[&str], command: &[&str]) -> serde_json::Value {
    let mut args = vec!["integrate", "bisect"];
    args.extend(extra);
    args.push("--json");
    args.push("--");
    args.extend(command);
    let out = env.ok(&args, 0);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("bisect json ({e}):\n{out}"))
}

/// Lines of a file, or none when it does not exist.
fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

fn advance_subjects(dir: &Path) -> Vec<String> {
    subjects(dir)
        .into_iter()
        .filter(|s| s.starts_with("Advance "))
        .collect()
}

// ---------------------------------------------------------------------------
// Submodule bisect.

#[test]
fn bisect_finds_the_break_in_logarithmic_runs_and_caches() {
    let env = Env::new(&with_break(40));
    let culprit = env.sb.breaks[0].clone();
    let n = env.sb.pending.len();
    assert_eq!(n, 40);
    let bound = ceil_log2(n) + 1;

    let out = env.ok(
        &[
            "integrate",
            "bisect",
            "--good",
            &env.sb.base,
            "--bad",
            &env.sb.head,
            "--",
            "./build_tools/smoke.sh",
        ],
        0,
    );
    assert!(
        out.contains(&format!("first bad commit: {culprit}")),
        "{out}"
    );
    let runs: usize = out
        .lines()
        .find_map(|l| l.strip_suffix(" runs"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no `N runs` in:\n{out}"));
    assert!((1..=bound).contains(&runs), "{runs} runs for {n} commits");
    assert_eq!(head(&env.sub()), env.sb.pin, "submodule back at the pin");
    assert!(is_clean(env.sp()));

    // The same bisect again: every step is cached.
    let json = bisect_json(
        &env,
        &["--good", &env.sb.base, "--bad", &env.sb.head],
        &["./build_tools/smoke.sh"],
    );
    assert_eq!(json["first_bad"]["sha"], culprit.as_str(), "{json}");
    assert_eq!(json["runs"], 0, "{json}");
    assert_eq!(json["candidates"], n, "{json}");
    let steps = json["steps"].as_array().expect("steps");
    assert!(!steps.is_empty() && steps.len() <= bound, "{json}");
    assert!(steps.iter().all(|s| s["cached"] == true), "{json}");
    assert_eq!(head(&env.sub()), env.sb.pin);
    assert!(is_clean(env.sp()));
}

#[test]
fn bisect_replays_the_carried_patches_at_every_step() {
    let env = Env::new(&with_break(40));
    let culprit = env.sb.breaks[0].clone();
    // The carried revert restores the legacy registration upstream dropped.
    let legacy = "mlir/lib/Legacy.cpp";
    let pristine = git(
        &env.sb.upstream,
        &["show", &format!("{}:{legacy}", env.sb.base)],
    );
    assert!(!pristine.contains("registerLegacyPassPipeline"));
    let carried = git(&env.sb.fork, &["show", &format!("{}:{legacy}", env.sb.pin)]);
    assert!(carried.contains("registerLegacyPassPipeline"));

    let log = env.dir.path().join("replay.log");
    let cmd = script(
        &env,
        "needs-revert.sh",
        &format!(
            r#"log={log}
sub=third_party/llvm-project
if ! grep -q registerLegacyPassPipeline "$sub/mlir/lib/Legacy.cpp"; then
  echo "pristine $LOCKSTEP_PROBE_COMMIT" >> "$log"
  exit 1
fi
echo "patched $LOCKSTEP_PROBE_COMMIT $(git -C "$sub" rev-parse HEAD~3) $(git -C "$sub" rev-parse HEAD) $LOCKSTEP_PROBE_HEAD" >> "$log"
exec ./build_tools/smoke.sh
"#,
            log = path_str(&log)
        ),
    );
    let json = bisect_json(
        &env,
        &["--good", &env.sb.base, "--bad", &env.sb.head],
        &[path_str(&cmd)],
    );
    assert_eq!(json["first_bad"]["sha"], culprit.as_str(), "{json}");
    let lines = lines_of(&log);
    assert_eq!(json["runs"].as_u64(), Some(lines.len() as u64), "{lines:?}");
    assert!(!lines.is_empty());
    for line in &lines {
        let words: Vec<&str> = line.split(' ').collect();
        assert_eq!(
            words[0], "patched",
            "the command saw a pristine tree: {line}"
        );
        // The checked-out head is the probed upstream commit plus the three
        // carried patches, and it is what LOCKSTEP_PROBE_HEAD says.
        assert_eq!(words[1], words[2], "{line}");
        assert_eq!(words[3], words[4], "{line}");
        assert!(env.sb.pending.iter().any(|p| p == words[1]), "{line}");
    }
    assert_eq!(head(&env.sub()), env.sb.pin);
    assert!(is_clean(env.sp()));
}

#[test]
fn bisect_skips_exit_125() {
    let env = Env::new(&with_break(40));
    let culprit = env.sb.breaks[0].clone();
    let parent = git(&env.sb.upstream, &["rev-parse", &format!("{culprit}^")]);
    let cmd = script(
        &env,
        "skip-parent.sh",
        &format!(
            "if [ \"$LOCKSTEP_PROBE_COMMIT\" = {parent} ]; then exit 125; fi\nexec ./build_tools/smoke.sh\n"
        ),
    );
    let json = bisect_json(
        &env,
        &["--good", &env.sb.base, "--bad", &env.sb.head],
        &[path_str(&cmd)],
    );
    assert_eq!(json["first_bad"]["sha"], culprit.as_str(), "{json}");
    // The culprit's parent could not be tested, so it may be the first bad one.
    assert_eq!(json["ambiguous"], serde_json::json!([parent]), "{json}");
    let steps = json["steps"].as_array().expect("steps");
    assert!(
        steps
            .iter()
            .any(|s| s["commit"]["sha"] == parent.as_str() && s["verdict"] == "skip"),
        "{json}"
    );
    assert_eq!(head(&env.sub()), env.sb.pin);
    assert!(is_clean(env.sp()));

    // Text output mentions the ambiguity.
    let out = env.ok(
        &[
            "integrate",
            "bisect",
            "--good",
            &env.sb.base,
            "--bad",
            &env.sb.head,
            "--",
            path_str(&cmd),
        ],
        0,
    );
    assert!(out.contains(&culprit), "{out}");
    assert!(out.contains("untestable"), "{out}");
    assert!(out.contains(&parent), "{out}");
}

#[test]
fn bisect_aborts_on_exit_200_and_restores_the_submodule() {
    let env = Env::new(&with_break(40));
    let cmd = script(&env, "explode.sh", "exit 200\n");
    let args = [
        "integrate",
        "bisect",
        "--good",
        &env.sb.base,
        "--bad",
        &env.sb.head,
        "--",
        path_str(&cmd),
    ];
    for attempt in 0..2 {
        let out = env.run(&args);
        let (_, stderr) = expect_code(&out, 1, &format!("bisect with exit 200 (#{attempt})"));
        assert!(stderr.contains("abort"), "{stderr}");
        assert!(stderr.contains("200"), "{stderr}");
        assert_eq!(head(&env.sub()), env.sb.pin, "submodule restored");
        assert!(is_clean(env.sp()));
    }

    // Nothing is left locked or journaled: a working bisect runs next.
    let json = bisect_json(
        &env,
        &["--good", &env.sb.base, "--bad", &env.sb.head],
        &["./build_tools/smoke.sh"],
    );
    assert_eq!(json["first_bad"]["sha"], env.sb.breaks[0].as_str());
    let out = env.ok(&["integrate", "abort"], 0);
    assert!(out.contains("nothing unfinished"), "{out}");
}

/// An aborting exit is not a verdict: once the command is fixed, the same
/// bisect runs it again instead of replaying the abort from the cache.
#[test]
fn an_aborted_step_is_not_cached() {
    let env = Env::new(&with_break(40));
    let marker = env.dir.path().join("broken-tool");
    std::fs::write(&marker, "").expect("marker");
    let cmd = script(
        &env,
        "needs-tool.sh",
        &format!(
            "if [ -e {} ]; then echo 'tool crashed'; exit 200; fi\nexec ./build_tools/smoke.sh\n",
            path_str(&marker)
        ),
    );
    let args = [
        "integrate",
        "bisect",
        "--good",
        &env.sb.base,
        "--bad",
        &env.sb.head,
        "--",
        path_str(&cmd),
    ];
    let out = env.run(&args);
    let (_, stderr) = expect_code(&out, 1, "bisect with a crashing tool");
    assert!(stderr.contains("abort"), "{stderr}");

    std::fs::remove_file(&marker).expect("fix the tool");
    let out = env.run(&args);
    let (stdout, _) = expect_code(&out, 0, "the same bisect once the tool is fixed");
    assert!(
        stdout.contains(&format!("first bad commit: {}", env.sb.breaks[0])),
        "{stdout}"
    );
    assert_eq!(head(&env.sub()), env.sb.pin);
    assert!(is_clean(env.sp()));
}

// ---------------------------------------------------------------------------
// Superproject bisect.

#[test]
fn superproject_bisect_updates_the_submodule_at_every_step() {
    let env = Env::new(&spec(40));
    env.start();
    let branch = current_branch(&env);
    for _ in 0..6 {
        env.ok(&["integrate", "next"], 0);
    }
    assert_eq!(advance_subjects(env.sp()).len(), 6);
    let tip = head(env.sp());
    let x = env.sb.affecting[3].clone();
    let bad_commit = git(env.sp(), &["log", "--format=%H %s"])
        .lines()
        .find(|l| l[41..].starts_with(&format!("Advance LLVM to {x}")))
        .map(|l| l[..40].to_string())
        .expect("the advance to X");

    let log = env.dir.path().join("super-bisect.log");
    let cmd = script(
        &env,
        "not-past-x.sh",
        &format!(
            r#"echo "$LOCKSTEP_PROBE_COMMIT $(git -C third_party/llvm-project rev-parse HEAD)" >> {log}
if git -C third_party/llvm-project merge-base --is-ancestor {x} HEAD; then exit 1; fi
exit 0
"#,
            log = path_str(&log)
        ),
    );
    let json = bisect_json(
        &env,
        &["--superproject", "--good", "main", "--bad", &branch],
        &[path_str(&cmd)],
    );
    assert_eq!(json["mode"], "superproject", "{json}");
    assert_eq!(json["first_bad"]["sha"], bad_commit.as_str(), "{json}");
    assert_eq!(json["candidates"], 7, "Start plus six advances: {json}");

    // At every step the submodule was at that superproject commit's pin, and
    // the verdict followed from it.
    let lines = lines_of(&log);
    assert!(!lines.is_empty());
    assert_eq!(json["runs"].as_u64(), Some(lines.len() as u64));
    let steps = json["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), lines.len());
    let mut pins = std::collections::HashSet::new();
    for (line, step) in lines.iter().zip(steps) {
        let (commit, sub_head) = line.split_once(' ').expect("two words");
        assert_eq!(step["commit"]["sha"], commit, "{json}");
        assert_eq!(
            pin_at(&env, commit),
            sub_head,
            "submodule not updated at {commit}"
        );
        let bad = is_ancestor(&env.sb.upstream, &x, sub_head);
        assert_eq!(step["verdict"], if bad { "bad" } else { "good" }, "{json}");
        pins.insert(sub_head.to_string());
    }
    assert!(
        pins.len() > 1,
        "the submodule moved between steps: {lines:?}"
    );

    // The user's checkout is back.
    assert_eq!(current_branch(&env), branch);
    assert_eq!(head(env.sp()), tip);
    assert_eq!(head(&env.sub()), pin_at(&env, "HEAD"));
    assert!(is_clean(env.sp()));
}

// ---------------------------------------------------------------------------
// Abort.

#[test]
fn abort_with_nothing_unfinished() {
    let env = Env::new(&spec(40));
    let out = env.ok(&["integrate", "abort"], 0);
    assert!(out.contains("nothing unfinished"), "{out}");
    env.start();
    let before = head(env.sp());
    let out = env.ok(&["integrate", "abort"], 0);
    assert!(out.contains("nothing unfinished"), "{out}");
    assert_eq!(head(env.sp()), before);
    assert!(is_clean(env.sp()));
}

#[test]
fn abort_all_returns_to_the_original_branch_and_keeps_the_integrate() {
    let env = Env::new(&with_break(40));
    assert_eq!(current_branch(&env), "main");
    let main = head(env.sp());
    env.start();
    let branch = current_branch(&env);
    env.ok(&["integrate", "next"], 0);
    env.ok(&["integrate", "next"], 0);
    let tip = head(env.sp());
    assert_ne!(head(&env.sub()), env.sb.pin);

    let out = env.ok(&["integrate", "abort", "--all"], 0);
    assert!(
        out.contains(&format!("undone: integrate {branch}")),
        "{out}"
    );
    assert!(out.contains("branch kept"), "{out}");
    assert_eq!(current_branch(&env), "main");
    assert_eq!(head(env.sp()), main);
    assert_eq!(
        git(
            env.sp(),
            &["rev-parse", "--verify", &format!("refs/heads/{branch}")]
        ),
        tip,
        "the integrate branch is kept"
    );
    assert_eq!(head(&env.sub()), env.sb.pin, "submodule at main's pin");
    assert!(is_clean(env.sp()));
    let status = env.status();
    assert!(status["halted"].is_null(), "{status}");
    assert_eq!(status["branch"], "main", "{status}");
    assert_eq!(status["pin"], env.sb.pin.as_str(), "{status}");
}

#[test]
fn abort_all_after_a_halt_clears_it() {
    let env = Env::new(&with_break(40));
    env.start();
    env.ok(&["integrate", "loop"], 3);
    assert!(!env.status()["halted"].is_null());
    env.ok(&["integrate", "abort", "--all"], 0);
    assert_eq!(current_branch(&env), "main");
    assert_eq!(head(&env.sub()), env.sb.pin);
    assert!(is_clean(env.sp()));
    assert!(env.status()["halted"].is_null());
    let out = env.run(&["integrate", "report"]);
    let (_, stderr) = expect_code(&out, 1, "report after abort --all");
    assert!(stderr.contains("no halt"), "{stderr}");
}

/// Installs a superproject pre-commit hook that SIGKILLs the lockstep process
/// running the commit, then fails the commit.
fn install_killer_hook(env: &Env) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let hooks = PathBuf::from(git(env.sp(), &["rev-parse", "--absolute-git-dir"])).join("hooks");
    std::fs::create_dir_all(&hooks).expect("hooks dir");
    let hook = hooks.join("pre-commit");
    std::fs::write(
        &hook,
        r#"#!/bin/sh
pid=$PPID
while [ -n "$pid" ] && [ "$pid" -gt 1 ]; do
  if [ "$(cat /proc/$pid/comm 2>/dev/null)" = "lockstep" ]; then
    kill -9 "$pid"
    sleep 0.2
    break
  fi
  pid=$(ps -o ppid= -p "$pid" | tr -d ' ')
done
exit 1
"#,
    )
    .expect("write hook");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    hook
}

/// Starts an integrate and kills `integrate next` in the middle of its commit.
/// Returns the superproject HEAD before it (the hook is removed again).
fn interrupted_advance(env: &Env) -> String {
    env.start();
    let before = head(env.sp());
    let hook = install_killer_hook(env);
    let out = env.run(&["integrate", "next"]);
    assert_eq!(
        out.status.signal(),
        Some(9),
        "lockstep was not killed: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    std::fs::remove_file(hook).expect("remove hook");
    assert_eq!(head(env.sp()), before, "nothing was committed");

    // The journal holds the unfinished advance to the first pending commit.
    let store = lockstep_store::Store::open(&env.sp().join(".git/lockstep")).expect("store");
    let ops = store.unfinished_all().expect("unfinished");
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert_eq!(ops[0].kind, "advance");
    assert_eq!(ops[0].state["target"], env.sb.affecting[0].as_str());
    before
}

#[test]
fn abort_undoes_an_interrupted_advance() {
    let env = Env::new(&spec(40));
    let before = interrupted_advance(&env);
    let target = env.sb.affecting[0].clone();

    let out = env.ok(&["integrate", "abort"], 0);
    assert!(
        out.contains(&format!("undone: advance to {target}")),
        "{out}"
    );
    assert_eq!(head(env.sp()), before, "superproject HEAD unchanged");
    assert_eq!(
        head(&env.sub()),
        env.sb.pin,
        "submodule back at the old pin"
    );
    assert!(
        is_clean(env.sp()),
        "{}",
        git(
            env.sp(),
            &["status", "--porcelain", "--ignore-submodules=none"]
        )
    );
    let out = env.ok(&["integrate", "abort"], 0);
    assert!(out.contains("nothing unfinished"), "{out}");

    // And the integrate goes on normally.
    env.ok(&["integrate", "next"], 0);
    assert_eq!(advance_subjects(env.sp()).len(), 1);
    assert_eq!(pin_at(&env, "HEAD"), target);
}

#[test]
fn rerunning_next_finishes_an_interrupted_advance() {
    let env = Env::new(&spec(40));
    let before = interrupted_advance(&env);
    let target = env.sb.affecting[0].clone();

    env.ok(&["integrate", "next"], 0);
    let advances = advance_subjects(env.sp());
    assert_eq!(advances.len(), 1, "exactly one new advance: {advances:?}");
    assert!(
        advances[0].starts_with(&format!("Advance LLVM to {target}:")),
        "{advances:?}"
    );
    assert_eq!(
        git(env.sp(), &["rev-parse", "HEAD^"]),
        before,
        "one commit on top of the old HEAD"
    );
    assert_eq!(pin_at(&env, "HEAD"), target);
    assert_eq!(head(&env.sub()), target);
    assert!(is_clean(env.sp()));
    let status = env.status();
    assert_eq!(
        status["pending"][0]["sha"],
        env.sb.affecting[1].as_str(),
        "{status}"
    );
}

// ---------------------------------------------------------------------------
// Refusals.

#[test]
fn dirty_trees_are_refused_and_preserved() {
    let env = Env::new(&spec(40));
    env.start();
    let before = head(env.sp());
    let sub_before = head(&env.sub());

    let notes = env.sp().join("notes.txt");
    std::fs::write(&notes, "my notes\n").expect("write");
    let out = env.run(&["integrate", "next"]);
    let (_, stderr) = expect_code(&out, 2, "next with an untracked file");
    assert!(stderr.contains("notes.txt"), "{stderr}");
    assert_eq!(head(env.sp()), before);
    assert_eq!(head(&env.sub()), sub_before);
    assert_eq!(std::fs::read_to_string(&notes).expect("kept"), "my notes\n");
    std::fs::remove_file(&notes).expect("remove");

    let readme = env.sub().join("README.md");
    let mut content = std::fs::read_to_string(&readme).expect("README.md");
    content.push_str("local edit\n");
    std::fs::write(&readme, &content).expect("write");
    let out = env.run(&["integrate", "next"]);
    let (_, stderr) = expect_code(&out, 2, "next with a modified submodule file");
    assert!(stderr.contains("README.md"), "{stderr}");
    assert_eq!(head(env.sp()), before);
    assert_eq!(head(&env.sub()), sub_before);
    assert_eq!(std::fs::read_to_string(&readme).expect("kept"), content);

    // The loop refuses too.
    let out = env.run(&["integrate", "loop"]);
    let (_, stderr) = expect_code(&out, 2, "loop with a modified submodule file");
    assert!(stderr.contains("README.md"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&readme).expect("kept"), content);
    assert_eq!(head(env.sp()), before);
}

#[test]
fn unknown_config_key_cites_file_and_line() {
    let env = Env::new(&spec(40));
    let path = env.sp().join("lockstep.toml");
    std::fs::write(
        &path,
        "[integrate]\nsubmodule = \"third_party/llvm-project\"\nsmoke-timout = \"2h\"\n",
    )
    .expect("write lockstep.toml");
    for args in [
        &["integrate", "status"][..],
        &["integrate", "next"][..],
        &["integrate", "start"][..],
    ] {
        let out = env.run(args);
        let (_, stderr) = expect_code(&out, 2, &format!("{args:?} with a bad config"));
        assert!(stderr.contains("lockstep.toml:3:"), "{stderr}");
        assert!(stderr.contains("smoke-timout"), "{stderr}");
    }
    assert_eq!(current_branch(&env), "main", "nothing started");
}

#[test]
fn next_to_outside_the_pending_range_is_a_usage_error() {
    let env = Env::new(&spec(40));
    env.start();
    let before = head(env.sp());
    let n = env.sb.affecting.len();

    for rev in [env.sb.base.as_str(), "zzzz"] {
        let out = env.run(&["integrate", "next", "--to", rev]);
        let (_, stderr) = expect_code(&out, 2, &format!("next --to {rev}"));
        assert!(stderr.contains("pending range"), "{stderr}");
        assert_eq!(head(env.sp()), before);
    }

    let target = env.sb.affecting[2].clone();
    let out = env.ok(&["integrate", "next", "--to", &target[..7]], 0);
    assert!(out.contains(&target), "{out}");
    let message = git(env.sp(), &["log", "-1", "--format=%s"]);
    assert!(
        message.starts_with(&format!("Advance LLVM to {target}: ")),
        "{message}"
    );
    assert!(message.ends_with(&format!("(3 of {n})")), "{message}");
    assert_eq!(pin_at(&env, "HEAD"), target);
    assert!(is_clean(env.sp()));

    // Behind the pin now: the old commits are no longer pending.
    let out = env.run(&["integrate", "next", "--to", &env.sb.affecting[1]]);
    let (_, stderr) = expect_code(&out, 2, "next --to an already integrated commit");
    assert!(stderr.contains("pending range"), "{stderr}");
}
