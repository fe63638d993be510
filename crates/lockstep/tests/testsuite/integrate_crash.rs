//! Crash safety of `lockstep integrate`: `kill -9` at random moments, the
//! one-integrate-at-a-time lock, and smoke process groups that outlive a
//! killed lockstep. Real git repositories, the real binary.

use std::fs;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{current_branch, git, is_clean, smoke_count, write_executable, Env};
use lockstep_core::process::pid_alive;
use lockstep_sandbox::SandboxSpec;
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Kills that must hit a running `lockstep integrate loop`.
const KILLS: usize = 20;
/// Give up spawning after this many attempts.
const MAX_ATTEMPTS: usize = 60;

/// The sandbox of the kill test: 48 affecting commits, a break at the 37th
/// (so `each` makes 36 advances before halting), carried patches, one of which
/// upstream lands along the way (it gets dropped).
fn crash_spec() -> SandboxSpec {
    SandboxSpec {
        commits: 80,
        affecting_ratio: 0.6,
        breaks: vec![0.75],
        patches: true,
        conflict_at: None,
        upstreams_patch_at: Some(0.3),
        docs_commits: 0,
        lit_changes: false,
        seed: 11,
    }
}

/// A small sandbox with carried patches and no break: the loop ends at head.
fn small_spec() -> SandboxSpec {
    SandboxSpec {
        commits: 20,
        affecting_ratio: 0.6,
        breaks: vec![],
        patches: true,
        conflict_at: None,
        upstreams_patch_at: Some(0.3),
        docs_commits: 0,
        lit_changes: false,
        seed: 5,
    }
}

/// Kills a process group when dropped, so a failing assertion does not leave
/// a lockstep (or a sleeping smoke) behind.
struct GroupGuard(i32);

impl GroupGuard {
    /// The group's leader was reaped: its id may be reused, never signal it.
    fn disarm(&mut self) {
        self.0 = 0;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.0 > 1 {
            let _ = killpg(Pid::from_raw(self.0), Signal::SIGKILL);
        }
    }
}

/// Spawns `lockstep integrate loop --strategy each` in its own process group,
/// stderr to `stderr`, stdout discarded.
fn spawn_loop(env: &Env, envs: &[(&str, &str)], stderr: &Path) -> Child {
    let mut cmd = env.cmd(&["integrate", "loop", "--strategy", "each"]);
    cmd.env_remove("LOCKSTEP_SANDBOX_SMOKE_SLEEP")
        .env_remove("LOCKSTEP_SANDBOX_SMOKE_LOG");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(fs::File::create(stderr).expect("stderr file")))
        .process_group(0);
    cmd.spawn().expect("spawn lockstep integrate loop")
}

/// `(pid, state, pgrp)` of every process, from `/proc`.
fn processes() -> Vec<(i32, char, i32)> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the parenthesised command: state, ppid, pgrp, ...
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() < 3 {
            continue;
        }
        let state = fields[0].chars().next().unwrap_or('?');
        let Ok(pgrp) = fields[2].parse::<i32>() else {
            continue;
        };
        out.push((pid, state, pgrp));
    }
    out
}

/// Live (not zombie) members of process group `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    processes()
        .into_iter()
        .filter(|&(_, state, pgrp)| pgrp == pgid && state != 'Z' && state != 'X')
        .map(|(pid, _, _)| pid)
        .collect()
}

/// Waits until nothing of process group `pgid` is alive (SIGKILL is
/// asynchronous for the children); panics after 10 s.
fn wait_group_gone(pgid: i32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = group_members(pgid);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes of killed group {pgid} still alive: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Live processes whose argv is exactly `argv`.
fn processes_with_argv(argv: &[&str]) -> Vec<(i32, i32)> {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    processes()
        .into_iter()
        .filter(|&(_, state, _)| state != 'Z' && state != 'X')
        .filter(|&(pid, _, _)| {
            fs::read(format!("/proc/{pid}/cmdline")).ok().as_deref() == Some(&want[..])
        })
        .map(|(pid, _, pgrp)| (pid, pgrp))
        .collect()
}

/// Every `*.lock` file under `dir`, recursively.
fn lock_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(_) if entry.file_name().to_string_lossy().ends_with(".lock") => found.push(path),
                _ => {}
            }
        }
    }
    found.sort();
    found
}

/// Lock files in the superproject's git dir (submodule git dir included) and
/// in the fork (the export remote).
fn all_lock_files(env: &Env) -> Vec<PathBuf> {
    let mut locks = lock_files(&env.sp().join(".git"));
    locks.extend(lock_files(&env.sb.fork));
    locks
}

/// The submodule's git dir (absolute).
fn sub_git_dir(env: &Env) -> PathBuf {
    let dir = PathBuf::from(git(
        &env.sub(),
        &["rev-parse", "--path-format=absolute", "--git-dir"],
    ));
    assert!(dir.is_dir(), "{}", dir.display());
    dir
}

/// Lockstep replays in the object store: a rebase (or cherry-pick/merge)
/// state directory in the submodule is a half-done operation.
fn assert_no_rebase(env: &Env, when: &str) {
    let dir = sub_git_dir(env);
    for name in [
        "rebase-merge",
        "rebase-apply",
        "CHERRY_PICK_HEAD",
        "MERGE_HEAD",
        "REVERT_HEAD",
    ] {
        assert!(
            !dir.join(name).exists(),
            "{when}: {} exists in the submodule's git dir",
            name
        );
    }
}

/// One `Advance LLVM to ...` commit of the superproject.
#[derive(Debug, Clone, PartialEq)]
struct Advance {
    commit: String,
    /// The subject without the trailing ` (k of n)`.
    subject: String,
    k: usize,
    n: usize,
    /// The pin it records.
    pin: String,
}

/// The superproject's advance commits, oldest first (first-parent history).
fn advances(env: &Env) -> Vec<Advance> {
    let log = git(
        env.sp(),
        &["log", "--first-parent", "--reverse", "--format=%H %s"],
    );
    let mut out = Vec::new();
    for line in log.lines() {
        let (commit, subject) = line.split_once(' ').expect("log line");
        if !subject.starts_with("Advance LLVM to ") {
            continue;
        }
        let (head, counter) = subject
            .rsplit_once(" (")
            .unwrap_or_else(|| panic!("no (k of n) in {subject:?}"));
        let counter = counter
            .strip_suffix(')')
            .unwrap_or_else(|| panic!("bad (k of n) in {subject:?}"));
        let (k, n) = counter
            .split_once(" of ")
            .unwrap_or_else(|| panic!("bad (k of n) in {subject:?}"));
        let entry = git(env.sp(), &["ls-tree", commit, &env.sb.submodule_path]);
        // "160000 commit <sha>\t<path>"
        let pin = entry
            .split_whitespace()
            .nth(2)
            .unwrap_or_else(|| panic!("no gitlink in {commit}: {entry:?}"))
            .to_string();
        out.push(Advance {
            commit: commit.to_string(),
            subject: head.to_string(),
            k: k.parse().expect("k"),
            n: n.parse().expect("n"),
            pin,
        });
    }
    out
}

/// The single export branch in the fork (`refs/heads/sm-...`).
fn export_branch(env: &Env) -> String {
    let refs = git(
        &env.sb.fork,
        &["for-each-ref", "--format=%(refname)", "refs/heads/"],
    );
    // (`refs/heads/sm-*` would not match: the name holds a `/`.)
    let refs: Vec<&str> = refs
        .lines()
        .filter(|r| r.starts_with("refs/heads/sm-"))
        .collect();
    assert_eq!(refs.len(), 1, "export branches in the fork: {refs:?}");
    refs[0].to_string()
}

/// Whether `commit` is reachable from `branch` in the bare repository `repo`.
fn reachable(repo: &Path, commit: &str, branch: &str) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["merge-base", "--is-ancestor", commit, branch])
        .stderr(Stdio::null())
        .status()
        .expect("git merge-base")
        .success()
}

/// Everything that must hold after a finished (halted) loop, in either sandbox.
fn assert_consistent(env: &Env, label: &str) {
    assert!(
        is_clean(env.sp()),
        "{label}: superproject not clean:\n{}",
        git(
            env.sp(),
            &["status", "--porcelain", "--ignore-submodules=none"]
        )
    );
    let gitlink = git(
        env.sp(),
        &["rev-parse", &format!("HEAD:{}", env.sb.submodule_path)],
    );
    assert_eq!(
        git(&env.sub(), &["rev-parse", "HEAD"]),
        gitlink,
        "{label}: submodule HEAD is not the pin recorded in HEAD"
    );
    assert_no_rebase(env, label);

    // No exported head lost: every patched pin is on the export branch.
    let branch = export_branch(env);
    let status = env.status();
    let integrate_branch = status["branch"].as_str().expect("branch");
    assert_eq!(
        branch,
        format!("refs/heads/sm-super-{integrate_branch}"),
        "{label}: export branch name"
    );
    let upstream_ref = status["upstream_ref"].as_str().expect("upstream_ref");
    for adv in advances(env) {
        let pure_upstream = Command::new("git")
            .arg("-C")
            .arg(env.sub())
            .args(["merge-base", "--is-ancestor", &adv.pin, upstream_ref])
            .status()
            .expect("git")
            .success();
        if pure_upstream {
            continue;
        }
        assert!(
            reachable(&env.sb.fork, &adv.pin, &branch),
            "{label}: pin {} of {} ({}) is not reachable from {branch} in the fork",
            adv.pin,
            adv.commit,
            adv.subject
        );
    }

    // Checked last, so that a leftover lock file does not hide the rest.
    let locks = all_lock_files(env);
    assert!(locks.is_empty(), "{label}: lock files left: {locks:#?}");
}

fn patch_subjects(status: &serde_json::Value) -> Vec<String> {
    status["patches"]
        .as_array()
        .expect("patches")
        .iter()
        .map(|p| p["subject"].as_str().expect("subject").to_string())
        .collect()
}

fn halt_commit(status: &serde_json::Value) -> String {
    status["halted"]["commit"]
        .as_str()
        .unwrap_or_else(|| panic!("not halted: {status:#}"))
        .to_string()
}

/// Where a killed run was, judging by its last progress line and whether the
/// smoke of its last probe had started.
fn phase(stderr: &str, smoke_runs: usize) -> &'static str {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let probes = lines.iter().filter(|l| l.starts_with("probe ")).count();
    let last = lines.last().copied().unwrap_or("").trim();
    if last.is_empty() {
        "startup"
    } else if last.starts_with("warning: the previous")
        || last.starts_with("warning: removing")
        || last.starts_with("finishing the interrupted")
    {
        "recovery"
    } else if last.starts_with("fetching") {
        "fetch"
    } else if last.starts_with("probe ") {
        if smoke_runs >= probes {
            "smoke"
        } else {
            "probe checkout"
        }
    } else if last.ends_with("s)") && (last.contains(" good") || last.contains(" bad")) {
        "advance commit"
    } else if last.starts_with("committed ") {
        "export"
    } else if last.starts_with("exported ") {
        "replay/next probe"
    } else {
        "other"
    }
}

/// The kill -9 fault injection the crash-safety section promises: kill the
/// whole process group of `integrate loop` (lockstep and its git children) at
/// random moments, rerun, and compare the end state with an uninterrupted run.
#[test]
fn kill_9_at_random_points_loses_nothing() {
    let spec = crash_spec();

    // Reference: uninterrupted.
    let reference = Env::new(&spec);
    reference.start();
    let started = Instant::now();
    reference.ok(&["integrate", "loop", "--strategy", "each"], 3);
    let ref_elapsed = started.elapsed();
    let ref_advances = advances(&reference);
    let ref_status = reference.status();
    assert_eq!(halt_commit(&ref_status), reference.sb.breaks[0]);
    assert!(ref_advances.len() >= 30, "{}", ref_advances.len());
    assert_consistent(&reference, "reference");

    // The kill window: startup plus about one advance, so that most runs are
    // killed before they make much progress (the rerun's startup and
    // recovery get hit too), and 20 kills land long before the halt.
    let step_ms = ref_elapsed.as_millis() as u64 / (ref_advances.len() as u64 + 1);
    let max_delay = (200 + step_ms).clamp(300, 2000);
    eprintln!(
        "reference: {} advances in {:?} (~{step_ms} ms each); kill delays 20..{max_delay} ms",
        ref_advances.len(),
        ref_elapsed
    );

    // Victim: the same sandbox, killed over and over.
    let victim = Env::new(&spec);
    assert_eq!(
        victim.sb.head, reference.sb.head,
        "same spec, same upstream"
    );
    victim.start();
    let work = victim.dir.path().join("attempts");
    fs::create_dir_all(&work).expect("attempts dir");
    let smoke_log = victim.dir.path().join("smoke.log");
    let smoke_log_s = smoke_log.to_str().expect("utf-8").to_string();
    // LOCKSTEP_CRASH_SEED explores other kill schedules.
    let seed = std::env::var("LOCKSTEP_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x10c4_57e9);
    eprintln!("kill schedule seed: {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut landed: Vec<(u64, &'static str, usize)> = Vec::new();
    let mut attempts = 0;
    let mut finished_early = false;
    let mut kills_leaving_locks = 0;
    while landed.len() < KILLS && attempts < MAX_ATTEMPTS {
        attempts += 1;
        let delay = rng.gen_range(20..max_delay);
        let slow_smoke = rng.gen_bool(0.5);
        let mut envs = vec![("LOCKSTEP_SANDBOX_SMOKE_LOG", smoke_log_s.as_str())];
        if slow_smoke {
            envs.push(("LOCKSTEP_SANDBOX_SMOKE_SLEEP", "0.05"));
        }
        let smokes_before = smoke_count(&smoke_log);
        let stderr_path = work.join(format!("attempt-{attempts}.stderr"));
        let mut child = spawn_loop(&victim, &envs, &stderr_path);
        let pgid = child.id() as i32;
        let mut guard = GroupGuard(pgid);
        std::thread::sleep(Duration::from_millis(delay));
        let status = match child.try_wait().expect("try_wait") {
            Some(status) => status,
            None => {
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
                child.wait().expect("wait")
            }
        };
        wait_group_gone(pgid);
        guard.disarm();
        let stderr = fs::read_to_string(&stderr_path).unwrap_or_default();
        if status.signal() != Some(Signal::SIGKILL as i32) {
            // It finished before the kill: that must be the halt.
            assert_eq!(
                status.code(),
                Some(3),
                "attempt {attempts} (after {} kills; the last one (delay ms, phase, advances): \
                 {:?}) exited {status:?}: the rerun did not continue\nstderr:\n{stderr}",
                landed.len(),
                landed.last()
            );
            finished_early = true;
            break;
        }
        let smokes = smoke_count(&smoke_log) - smokes_before;
        let where_ = phase(&stderr, smokes);
        let locks: Vec<String> = all_lock_files(&victim)
            .iter()
            .map(|p| {
                p.strip_prefix(&victim.sb.root)
                    .unwrap_or(p)
                    .display()
                    .to_string()
            })
            .collect();
        if !locks.is_empty() {
            kills_leaving_locks += 1;
        }
        eprintln!(
            "  kill {:2} at {delay:3} ms: {where_:<17} smokes started: {smokes}, locks left: {locks:?}, last line: {:?}",
            landed.len() + 1,
            stderr.lines().last().unwrap_or("")
        );
        assert_no_rebase(&victim, &format!("after kill {}", landed.len() + 1));
        landed.push((delay, where_, advances(&victim).len()));
    }

    let mut phases: Vec<(&str, usize)> = Vec::new();
    for (_, p, _) in &landed {
        match phases.iter_mut().find(|(q, _)| q == p) {
            Some((_, n)) => *n += 1,
            None => phases.push((p, 1)),
        }
    }
    eprintln!(
        "{} kills landed in {attempts} attempts{}; by phase: {phases:?}; {kills_leaving_locks} left git lock files",
        landed.len(),
        if finished_early { " (then a run finished before its kill)" } else { "" },
    );
    eprintln!(
        "advances after each kill: {:?}",
        landed.iter().map(|(_, _, a)| *a).collect::<Vec<_>>()
    );
    assert!(
        landed.len() >= KILLS,
        "only {} kills hit a running process before the loop finished (attempts: {attempts})",
        landed.len()
    );

    // Rerun the same command to the end.
    let out = victim
        .cmd(&["integrate", "loop", "--strategy", "each"])
        .env_remove("LOCKSTEP_SANDBOX_SMOKE_SLEEP")
        .env("LOCKSTEP_SANDBOX_SMOKE_LOG", &smoke_log)
        .output()
        .expect("run lockstep");
    assert_eq!(
        out.status.code(),
        Some(3),
        "final loop\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "victim: {} smoke runs in total (reference: {})",
        smoke_count(&smoke_log),
        ref_advances.len() + 2
    );

    // Same history of advances: same targets, same order, none twice, none missing.
    let got = advances(&victim);
    let want_subjects: Vec<&str> = ref_advances.iter().map(|a| a.subject.as_str()).collect();
    let got_subjects: Vec<&str> = got.iter().map(|a| a.subject.as_str()).collect();
    assert_eq!(got_subjects, want_subjects, "advance commits differ");
    // `k of n` are counted from where each run started, so a rerun renumbers;
    // what stays is how many pending commits remain after each target.
    for (g, w) in got.iter().zip(&ref_advances) {
        assert!(g.k >= 1 && g.k <= g.n, "{g:?}");
        assert_eq!(
            g.n - g.k,
            w.n - w.k,
            "pending after {}: {g:?} vs {w:?}",
            g.subject
        );
    }

    let status = victim.status();
    assert_eq!(
        halt_commit(&status),
        halt_commit(&ref_status),
        "halt commit"
    );
    assert_eq!(
        status["halted"]["kind"], ref_status["halted"]["kind"],
        "halt kind"
    );
    assert_eq!(
        patch_subjects(&status),
        patch_subjects(&ref_status),
        "carried patches"
    );
    assert_eq!(status["pending"], ref_status["pending"], "pending commits");
    assert_eq!(
        git(&victim.sub(), &["rev-parse", "HEAD^{tree}"]),
        git(&reference.sub(), &["rev-parse", "HEAD^{tree}"]),
        "tree of the final pin"
    );
    assert_eq!(
        git(&victim.sub(), &["rev-parse", "HEAD~1^{tree}"]),
        git(&reference.sub(), &["rev-parse", "HEAD~1^{tree}"]),
        "tree of the final pin's parent (upstream plus the first carried patch)"
    );
    assert_consistent(&victim, "victim");
}

/// A second mutating command fails at once naming the holder; a killed
/// holder's lock is taken over.
#[test]
fn second_integrate_fails_at_once_naming_the_holder() {
    let env = Env::new(&small_spec());
    env.start();
    let smoke_log = env.dir.path().join("smoke.log");
    let smoke_log_s = smoke_log.to_str().expect("utf-8");
    let stderr_path = env.dir.path().join("first.stderr");
    let mut first = spawn_loop(
        &env,
        &[
            ("LOCKSTEP_SANDBOX_SMOKE_LOG", smoke_log_s),
            // Long enough that a command waiting for the lock would still
            // be waiting when the holder is killed below.
            ("LOCKSTEP_SANDBOX_SMOKE_SLEEP", "600"),
        ],
        &stderr_path,
    );
    let pid = first.id() as i32;
    let mut guard = GroupGuard(pid);

    // Wait until it sits in its first smoke.
    let deadline = Instant::now() + Duration::from_secs(30);
    while smoke_count(&smoke_log) == 0 {
        if let Some(status) = first.try_wait().expect("try_wait") {
            panic!(
                "the first loop exited {status:?} before its smoke\n{}",
                fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "the first loop never smoked");
        std::thread::sleep(Duration::from_millis(10));
    }
    let head_before = git(env.sp(), &["rev-parse", "HEAD"]);

    let started = Instant::now();
    let out = env.run(&["integrate", "next"]);
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "`integrate next` while a loop runs\nstderr:\n{stderr}"
    );
    // It did not wait for the holder: the holder is still in its first
    // smoke (checked below), so the lock was never free (no wall clock:
    // a loaded machine makes any start slow).
    assert_eq!(smoke_count(&smoke_log), 1, "the holder moved on");
    assert!(
        stderr.contains("integrate loop"),
        "stderr does not name the holder's command:\n{stderr}"
    );
    assert!(
        stderr.contains(&format!("pid {pid}")),
        "stderr does not name the holder's pid {pid}:\n{stderr}"
    );
    assert!(
        first.try_wait().expect("try_wait").is_none(),
        "the refused command disturbed the running loop"
    );
    assert_eq!(git(env.sp(), &["rev-parse", "HEAD"]), head_before);
    eprintln!("refused in {took:?}: {}", stderr.trim());

    // Kill the holder (its smoke keeps sleeping in its own group), then a new
    // loop takes the lock over and finishes.
    killpg(Pid::from_raw(pid), Signal::SIGKILL).expect("killpg");
    let status = first.wait().expect("wait");
    assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
    wait_group_gone(pid);
    guard.disarm();

    let started = Instant::now();
    let out = env
        .cmd(&["integrate", "loop", "--strategy", "each"])
        .env_remove("LOCKSTEP_SANDBOX_SMOKE_SLEEP")
        .env("LOCKSTEP_SANDBOX_SMOKE_LOG", &smoke_log)
        .output()
        .expect("run lockstep");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "loop after the holder died\nstdout:\n{}\nstderr:\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    eprintln!("takeover loop finished in {:?}", started.elapsed());
    assert!(is_clean(env.sp()), "superproject not clean after takeover");
    let status = env.status();
    assert!(status["halted"].is_null(), "{status:#}");
    assert_eq!(status["pending"].as_array().map(Vec::len), Some(0));
    assert_eq!(status["merge_base"], status["upstream_head"]);
    assert_eq!(
        git(&env.sub(), &["rev-parse", "HEAD"]),
        git(
            env.sp(),
            &["rev-parse", &format!("HEAD:{}", env.sb.submodule_path)]
        )
    );
    assert!(
        all_lock_files(&env).is_empty(),
        "{:?}",
        all_lock_files(&env)
    );
}

/// lockstep dies (alone) while its smoke sleeps in the smoke's own process
/// group: the rerun kills that group.
#[test]
fn killed_smoke_process_group_is_cleaned_up() {
    let env = Env::new(&small_spec());
    env.start();
    // A sleep length no other process uses: it marks our smoke's `sleep`.
    let marker = format!("29.{:06}", std::process::id() % 1_000_000);
    let stderr_path = env.dir.path().join("first.stderr");
    let mut first = spawn_loop(
        &env,
        &[("LOCKSTEP_SANDBOX_SMOKE_SLEEP", marker.as_str())],
        &stderr_path,
    );
    let pid = first.id() as i32;
    let mut guard = GroupGuard(pid);

    let deadline = Instant::now() + Duration::from_secs(30);
    let (sleep_pid, smoke_pgid) = loop {
        if let Some(&found) = processes_with_argv(&["sleep", &marker]).first() {
            break found;
        }
        if let Some(status) = first.try_wait().expect("try_wait") {
            panic!(
                "the loop exited {status:?} before its smoke slept\n{}",
                fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "the smoke never started");
        std::thread::sleep(Duration::from_millis(10));
    };
    let _smoke_guard = GroupGuard(smoke_pgid);
    assert_ne!(
        smoke_pgid, pid,
        "the smoke must run in its own process group"
    );
    // lockstep journals the smoke's group right after spawning it; let that
    // land (this test is about a smoke that outlives lockstep, not about
    // dying inside that window).
    std::thread::sleep(Duration::from_millis(300));

    // lockstep alone dies; its smoke lives on.
    kill(Pid::from_raw(pid), Signal::SIGKILL).expect("kill");
    let status = first.wait().expect("wait");
    guard.disarm();
    assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        pid_alive(sleep_pid),
        "precondition: the smoke's sleep should outlive lockstep"
    );

    let out = env
        .cmd(&["integrate", "loop", "--strategy", "each"])
        .env_remove("LOCKSTEP_SANDBOX_SMOKE_SLEEP")
        .output()
        .expect("run lockstep");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "rerun\nstdout:\n{}\nstderr:\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    // SIGKILL is asynchronous: give the old group a moment to die.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !group_members(smoke_pgid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !pid_alive(sleep_pid),
        "the old smoke's `sleep {marker}` (pid {sleep_pid}) survived the rerun\nrerun stderr:\n{stderr}"
    );
    assert!(
        group_members(smoke_pgid).is_empty(),
        "the old smoke group {smoke_pgid} survived: {:?}",
        group_members(smoke_pgid)
    );
    assert!(processes_with_argv(&["sleep", &marker]).is_empty());
    assert!(is_clean(env.sp()));
    assert!(env.status()["halted"].is_null());
}

/// Deterministic form of a lock file the kill test only hits now and then:
/// lockstep's `git commit` and `git fetch`, and the fork's `git receive-pack`
/// serving lockstep's `git push`, each start `git maintenance run --auto
/// --detach`, which holds `objects/maintenance.lock` while it runs. Killed
/// there (it is in lockstep's process group until it detaches), it leaves that
/// file behind, and no later `git maintenance` in that repository ever runs.
/// The rerun must remove it like any other lock file the killed command left.
#[test]
fn killed_git_maintenance_lock_is_cleaned_up() {
    let env = Env::new(&small_spec());
    env.start();
    let smoke_log = env.dir.path().join("smoke.log");
    let smoke_log_s = smoke_log.to_str().expect("utf-8");
    let stderr_path = env.dir.path().join("first.stderr");
    let mut first = spawn_loop(
        &env,
        &[
            ("LOCKSTEP_SANDBOX_SMOKE_LOG", smoke_log_s),
            ("LOCKSTEP_SANDBOX_SMOKE_SLEEP", "3"),
        ],
        &stderr_path,
    );
    let pid = first.id() as i32;
    let mut guard = GroupGuard(pid);
    let deadline = Instant::now() + Duration::from_secs(30);
    while smoke_count(&smoke_log) == 0 {
        if let Some(status) = first.try_wait().expect("try_wait") {
            panic!(
                "the loop exited {status:?} before its smoke\n{}",
                fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "the loop never smoked");
        std::thread::sleep(Duration::from_millis(10));
    }

    // What a `git maintenance run --auto` killed while holding its lock
    // leaves, in each repository lockstep's git processes write to.
    let planted = [
        env.sp().join(".git/objects/maintenance.lock"),
        sub_git_dir(&env).join("objects/maintenance.lock"),
        env.sb.fork.join("objects/maintenance.lock"),
    ];
    for path in &planted {
        fs::write(path, "").expect("plant lock");
    }
    killpg(Pid::from_raw(pid), Signal::SIGKILL).expect("killpg");
    let status = first.wait().expect("wait");
    assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
    wait_group_gone(pid);
    guard.disarm();

    let out = env
        .cmd(&["integrate", "loop", "--strategy", "each"])
        .env_remove("LOCKSTEP_SANDBOX_SMOKE_SLEEP")
        .output()
        .expect("run lockstep");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "rerun\nstdout:\n{}\nstderr:\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    let left: Vec<&PathBuf> = planted.iter().filter(|p| p.exists()).collect();
    assert!(
        left.is_empty(),
        "lock files the killed command left were not removed: {left:#?}\nrerun stderr:\n{stderr}"
    );
    assert!(
        all_lock_files(&env).is_empty(),
        "{:?}",
        all_lock_files(&env)
    );
}

/// lockstep dies (alone) while a superproject bisect's command sleeps in its
/// own process group: `integrate abort` kills that group and returns the
/// superproject to the branch, so bisect journals the group like a probe does.
#[test]
fn killed_superproject_bisect_command_is_cleaned_up() {
    let env = Env::new(&small_spec());
    env.start();
    let branch = current_branch(&env);
    for _ in 0..4 {
        env.ok(&["integrate", "next"], 0);
    }
    let tip = git(env.sp(), &["rev-parse", "HEAD"]);
    // A sleep length no other process uses: it marks our command's `sleep`.
    let marker = format!("28.{:06}", std::process::id() % 1_000_000);
    let script = env.dir.path().join("sleepy.sh");
    write_executable(&script, &format!("#!/bin/sh\nsleep {marker}\nexit 0\n"));
    let stderr_path = env.dir.path().join("bisect.stderr");
    let mut first = env
        .cmd(&["integrate", "bisect", "--superproject", "--good", "main"])
        .args(["--bad", &branch, "--"])
        .arg(&script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            fs::File::create(&stderr_path).expect("stderr file"),
        ))
        .process_group(0)
        .spawn()
        .expect("spawn lockstep integrate bisect");
    let pid = first.id() as i32;
    let mut guard = GroupGuard(pid);

    let deadline = Instant::now() + Duration::from_secs(30);
    let (sleep_pid, command_pgid) = loop {
        if let Some(&found) = processes_with_argv(&["sleep", &marker]).first() {
            break found;
        }
        if let Some(status) = first.try_wait().expect("try_wait") {
            panic!(
                "the bisect exited {status:?} before its command slept\n{}",
                fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        }
        assert!(
            Instant::now() < deadline,
            "the bisect command never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let _command_guard = GroupGuard(command_pgid);
    assert_ne!(
        command_pgid, pid,
        "the command must run in its own process group"
    );
    // Let the journal write that follows the spawn land.
    std::thread::sleep(Duration::from_millis(300));

    kill(Pid::from_raw(pid), Signal::SIGKILL).expect("kill");
    let status = first.wait().expect("wait");
    guard.disarm();
    assert_eq!(status.signal(), Some(Signal::SIGKILL as i32));
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        pid_alive(sleep_pid),
        "precondition: the command's sleep should outlive lockstep"
    );

    let out = env.ok(&["integrate", "abort"], 0);
    assert!(out.contains("superproject bisect checkout"), "{out}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !group_members(command_pgid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !pid_alive(sleep_pid),
        "the bisect command's `sleep {marker}` (pid {sleep_pid}) survived the abort"
    );
    assert!(group_members(command_pgid).is_empty());
    assert_eq!(current_branch(&env), branch);
    assert_eq!(git(env.sp(), &["rev-parse", "HEAD"]), tip);
    assert!(is_clean(env.sp()));
}
