//! One replay rule: `integrate loop`'s conflict search and its advances
//! replay the same carried patches (the stack as it stands after the last
//! advance), on stacks nobody planned (lockstep_testkit::stacks): backports
//! whose lines upstream rewrites later, local edits next to upstream
//! changes, patches upstream lands, carried reverts upstream reverts too.
//! Whatever the stack, the loop ends at upstream head, at a named conflict
//! that the current stack really has, or at a named smoke failure; never
//! at an internal error.

use std::path::PathBuf;
use std::process::Command;

use crate::common::{git, isolate};
use lockstep_testkit::stacks::{self, Carried, StackSandbox, StackSpec};
use proptest::prelude::*;

struct StackEnv {
    dir: tempfile::TempDir,
    sb: StackSandbox,
}

impl StackEnv {
    fn new(spec: &StackSpec) -> StackEnv {
        let dir = tempfile::tempdir().expect("temp dir");
        let sb = stacks::create(&dir.path().join("sb"), spec).expect("stack sandbox");
        StackEnv { dir, sb }
    }

    fn sub(&self) -> PathBuf {
        self.sb.superproject.join(&self.sb.submodule_path)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockstep"));
        cmd.args(args).current_dir(&self.sb.superproject);
        isolate(
            &mut cmd,
            &self.dir.path().join("home"),
            &self.dir.path().join("cache"),
        );
        cmd.env("LOCKSTEP_SANDBOX_SMOKE_LOG", self.smoke_log());
        cmd
    }

    fn smoke_log(&self) -> PathBuf {
        self.dir.path().join("smoke.log")
    }

    /// Runs lockstep; returns the exit code, stdout and stderr.
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.cmd(args).output().expect("run lockstep");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn json(&self, args: &[&str]) -> (i32, serde_json::Value, String) {
        let (code, out, err) = self.run(args);
        let value = serde_json::from_str(&out).unwrap_or(serde_json::Value::Null);
        (code, value, err)
    }
}

/// How one `integrate loop` ended, checked against the repositories.
enum End {
    AtHead,
    /// A conflict at this upstream commit (the current stack's).
    Conflict(String),
    /// A smoke failure; these breaks made it fail.
    Smoke(Vec<String>),
}

/// Runs `integrate loop` with `strategy` and checks where it ended: at
/// head, at a conflict the current stack really has (named patch and
/// files, the same answer `integrate next` gives, a report saying how to
/// go on), or at a smoke failure at a commit whose replay holds a break.
fn loop_once(env: &StackEnv, strategy: &str) -> (End, serde_json::Value) {
    let (code, report, err) = env.json(&["integrate", "loop", "--json", "--strategy", strategy]);
    assert!(
        !err.contains("internal"),
        "an internal error on {:?}:\n{err}",
        env.sb.patches
    );
    assert!(
        code == 0 || code == 3,
        "loop exited {code} on {:?}:\n{err}",
        env.sb.patches
    );
    let status = env.json(&["integrate", "status", "--json"]).1;
    let (base, current) = (
        status["merge_base"]
            .as_str()
            .expect("merge_base")
            .to_string(),
        status["current"].as_str().expect("current").to_string(),
    );
    let sub = env.sub();
    if code == 0 {
        assert_eq!(report["end"]["result"], "at_head", "{report}");
        assert_eq!(
            base, env.sb.head,
            "at head, the pin is based on upstream head"
        );
        return (End::AtHead, report);
    }
    let halt = &report["end"]["halt"];
    let culprit = halt["culprit"]["sha"]
        .as_str()
        .expect("culprit")
        .to_string();
    let end = match halt["kind"].as_str() {
        Some("conflict") => {
            let patch = halt["conflict"]["subject"].as_str().expect("patch subject");
            let files: Vec<String> = halt["conflict"]["files"]
                .as_array()
                .expect("files")
                .iter()
                .map(|f| f.as_str().expect("file").to_string())
                .collect();
            assert!(!files.is_empty(), "a conflict names its files: {halt}");
            match stacks::replay_by_hand(&sub, &base, &current, &culprit, false)
                .expect("replay by hand")
                .conflict {
                Some((subject, oracle_files)) => {
                    assert_eq!(subject, patch, "the patch that conflicts");
                    assert_eq!(oracle_files, files, "the files that conflict");
                }
                None => panic!(
                    "the loop halted at a conflict at {culprit}, but the carried stack applies there ({:?})",
                    env.sb.patches
                ),
            }
            // The advance agrees with the search.
            let (code, next, err) =
                env.json(&["integrate", "next", "--to", &culprit, "--dry-run", "--json"]);
            assert_eq!(code, 3, "{err}");
            assert_eq!(next["result"], "would_conflict", "{next}");
            assert_eq!(next["conflict"]["subject"], patch);
            // The report says what conflicted and how to go on.
            let text = std::fs::read_to_string(halt["report_path"].as_str().expect("report"))
                .expect("the halt report");
            assert!(text.contains(patch) && text.contains(&files[0]), "{text}");
            assert!(text.contains("lockstep integrate"), "{text}");
            End::Conflict(culprit)
        }
        Some("smoke") => {
            let head = halt["probe_head"].as_str().unwrap_or(&culprit).to_string();
            let found = Command::new("git")
                .current_dir(&sub)
                .args(["grep", "-ohE", "BROKEN_[0-9]+", &head, "--", "mlir"])
                .output()
                .expect("git grep");
            let mut breaks: Vec<String> = String::from_utf8_lossy(&found.stdout)
                .lines()
                .filter_map(|l| l.rsplit(':').next().map(str::to_string))
                .collect();
            breaks.sort();
            breaks.dedup();
            assert!(
                !breaks.is_empty(),
                "the smoke failed at {head}, which holds no break"
            );
            assert!(halt["log"].as_str().is_some(), "{halt}");
            End::Smoke(breaks)
        }
        other => panic!("unknown halt kind {other:?}: {halt}"),
    };
    (end, report)
}

/// Drives the integrate to upstream head, checking every halt and
/// resolving it as a person does: a conflict by rebasing the stack onto
/// the culprit without the patches that no longer apply, a smoke failure
/// by declaring its breaks accepted in the superproject.
fn drive(env: &StackEnv, strategy: &str) -> Vec<serde_json::Value> {
    let (code, _, err) = env.run(&["integrate", "start"]);
    assert_eq!(code, 0, "integrate start: {err}");
    let sp = &env.sb.superproject;
    let sub = env.sub();
    let mut reports = Vec::new();
    for _ in 0..16 {
        let (end, report) = loop_once(env, strategy);
        reports.push(report);
        match end {
            End::AtHead => return reports,
            End::Conflict(culprit) => {
                let status = env.json(&["integrate", "status", "--json"]).1;
                let base = status["merge_base"].as_str().expect("merge_base");
                let current = status["current"].as_str().expect("current");
                let resolved = stacks::replay_by_hand(&sub, base, current, &culprit, true)
                    .expect("replay by hand");
                git(&sub, &["checkout", "-q", "--detach", &resolved.head]);
                git(sp, &["add", &env.sb.submodule_path]);
                git(sp, &["commit", "-qm", "Rebase the carried patches by hand"]);
            }
            End::Smoke(breaks) => {
                let path = sp.join("ACCEPTED_BREAKS");
                let mut text = std::fs::read_to_string(&path).unwrap_or_default();
                for b in breaks {
                    text.push_str(&b);
                    text.push('\n');
                }
                std::fs::write(&path, text).expect("write ACCEPTED_BREAKS");
                git(sp, &["add", "ACCEPTED_BREAKS"]);
                git(sp, &["commit", "-qm", "Adapt to the upstream API"]);
            }
        }
    }
    panic!(
        "the integrate did not reach head after 16 loops ({:?})",
        env.sb.patches
    );
}

/// The reported shape over `commits` upstream commits: a backport of the
/// commit at `at` whose line upstream rewrites at 30%, then a local edit
/// whose line upstream changes at 80%.
fn backport_then_local_edit(commits: usize, at: f64, seed: u64) -> StackSpec {
    StackSpec {
        commits,
        carried: vec![
            Carried::Backport {
                at,
                rewritten: Some(0.3),
            },
            Carried::LocalEdit {
                changed: Some(0.8),
                offset: 0,
            },
        ],
        breaks: vec![],
        interfere: false,
        seed,
    }
}

/// The shape that crashed a real integrate: a backport of an early upstream
/// commit whose line upstream rewrites later, then a local edit upstream
/// changes further on. The search from the original stack sees the backport
/// conflict at the rewrite; the stack as rebased past the backport's commit
/// has dropped it and applies there. Before the fix the loop advanced,
/// smoked the rewrite (a wasted smoke) and died with `internal: conflict
/// without details`.
#[test]
fn the_search_judges_a_candidate_with_the_stack_the_advance_carries() {
    let env = StackEnv::new(&backport_then_local_edit(120, 0.07, 11));
    let reports = drive(&env, "gallop");
    assert_eq!(reports.len(), 2, "one halt, then head");
    let report = &reports[0];
    let halt = &report["end"]["halt"];
    assert_eq!(halt["kind"], "conflict", "{report}");
    assert!(
        halt["conflict"]["subject"]
            .as_str()
            .unwrap_or_default()
            .starts_with("[mlir] Local change"),
        "{halt}"
    );
    // One smoke before each stopping point (the commit before the rewrite,
    // the commit before the local edit's conflict); none at a conflict.
    assert_eq!(report["smoke_runs"], 2, "{report}");
}

/// The same fixture with `each`: one smoke per candidate, the same halt.
#[test]
fn each_halts_at_the_same_conflict_as_gallop() {
    let spec = backport_then_local_edit(40, 0.1, 5);
    let gallop = &drive(&StackEnv::new(&spec), "gallop")[0];
    let each = &drive(&StackEnv::new(&spec), "each")[0];
    assert_eq!(
        gallop["end"]["halt"]["culprit"]["sha"],
        each["end"]["halt"]["culprit"]["sha"]
    );
    assert_eq!(
        gallop["end"]["halt"]["conflict"]["subject"],
        each["end"]["halt"]["conflict"]["subject"]
    );
}

/// How many random stacks the property test tries (`LOCKSTEP_REPLAY_CASES`
/// to run more, as the benchmark does).
fn cases() -> u32 {
    std::env::var("LOCKSTEP_REPLAY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Random stacks over random upstream histories: every loop ends at
    /// head, at a conflict the current stack has, or at a named smoke
    /// failure, until the integrate reaches head.
    #[test]
    fn any_stack_ends_at_head_or_a_named_halt(
        seed in any::<u64>(),
        commits in 12usize..60,
        each in any::<bool>(),
    ) {
        let spec = stacks::random_spec(seed, commits);
        let env = StackEnv::new(&spec);
        drive(&env, if each { "each" } else { "gallop" });
    }
}
