//! Benchmark for `lockstep integrate` (run it with `scripts/bench-integrate`).
//!
//! Part A, smoke runs: an upstream of 2000 commits (400 with `--quick`), about
//! 60% affecting the tracked path, 3 API-breaking commits at 15%, 50% and 85% of
//! the affecting range, a pin carrying patches. For `gallop` and `each` it runs
//! the real `lockstep` binary the way a person does: `integrate start`, then
//! `integrate loop --json` until upstream head, resolving every halt with
//! `integrate next --to <culprit>` and a commit of the fixed `API_LEVEL`. It
//! counts the smoke runs (lines the sandbox smoke script appends to
//! `$LOCKSTEP_SANDBOX_SMOKE_LOG`, independent of lockstep's own counter) and
//! checks that the halts name exactly the 3 breaking commits.
//! Target: `gallop` at most 40 smoke runs, all 3 culprits exact.
//!
//! Part B, status speed: on an upstream of 50,000 commits (10,000 with
//! `--quick`), the median wall time of `integrate status --json` divided by the
//! median of `git rev-list --count upstream ^merge-base -- mlir` (the same range
//! and path filter). Target: at most 1.5.
//!
//! Part C, integrates that reach review: on 400 upstream commits with two
//! breaks, the first persisting and revertable, the second reverted upstream
//! before head (a break `each` would halt at and `gallop` steps over), the
//! plain loop (halting at the first break, resolved as a person does) against
//! `loop --publish --on-break revert` on an identical sandbox with a loopback
//! GitHub: zero halts, the revert carried, one draft pull request created and
//! then updated (after one more upstream commit), the webhook posts counted.
//! Target: its smoke runs at most 1.25 x the plain loop's.
//!
//! Part D, CI as the bisect oracle: `integrate bisect --ci` over the 400
//! commits against a loopback CI that answers each pushed commit after 3
//! polls with what the sandbox's smoke would say. Target: CI rounds at most
//! ceil(log2 N) + 2 for N candidates, the break found exactly.
//!
//! Part E, carried stacks nobody planned: 50 random stacks of two carried
//! patches (backports whose lines upstream rewrites later, local edits next
//! to upstream changes, patches upstream lands, carried reverts, new files;
//! lockstep_testkit::stacks) over 300 upstream commits with planted breaks,
//! each driven to upstream head with `integrate loop` (gallop), every halt
//! resolved as a person does. Target: 0 internal errors (every loop ends at
//! head, at a named conflict or at a named smoke failure), and each loop's
//! smoke runs within the documented bound (ceil(log2 N) + 2 for N
//! candidates, plus one when it reaches head, plus one per search the
//! one replay rule restarts).
//!
//! Exits 0 whether or not the targets are met (it is a benchmark) and 1 when
//! something failed unexpectedly (a lockstep command exited with an unexpected
//! status, unparsable output, a git error).

// A benchmark/fixture program, not product code: it starts processes
// directly; product code goes through lockstep_core::process (clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use lockstep_sandbox::{self as sandbox, Sandbox, SandboxSpec};
use serde_json::Value;

type Res<T> = Result<T, String>;

const SMOKE_TARGET: usize = 40;
const RATIO_TARGET: f64 = 1.5;
const MAX_ROUNDS: usize = 10;
const STATUS_RUNS: usize = 7;
const BREAKS: [f64; 3] = [0.15, 0.5, 0.85];

struct Args {
    lockstep: PathBuf,
    quick: bool,
    skip_each: bool,
    status_only: bool,
    review_only: bool,
    stacks_only: bool,
    /// Part B's upstream size (default 50,000; 10,000 with --quick).
    status_commits: Option<usize>,
    /// Part E's number of random stacks.
    stacks: usize,
    keep: bool,
    /// Part R: a real upstream repository (path or URL) to measure status on.
    status_real: Option<String>,
    /// Part R: how many commits behind that upstream's head the pin sits.
    status_back: usize,
    /// Part R: the tracked path.
    status_track: String,
}

/// Part C's target: smoke runs of `loop --publish --on-break revert` over
/// those of the plain loop.
const REVIEW_RATIO_TARGET: f64 = 1.25;

const USAGE: &str =
    "usage: bench_integrate --lockstep PATH [--quick] [--skip-each] [--status-only] [--keep]

  --lockstep PATH  the lockstep binary to benchmark (e.g. target/release/lockstep)
  --quick          400 commits for part A, 10,000 for part B (a fast sanity run)
  --skip-each      do not run the (slow) `each` strategy in part A
  --status-only    run part B (status speed) only
  --review-only    run part C (publish, --on-break revert) only
  --status-commits N  part B on an upstream of N commits
  --stacks N       part E over N random stacks (default 50)
  --stacks-only    run part E (random carried stacks) only
  --keep           keep the sandboxes (their directory is printed)
  --status-real REPO  part R only: status on a real upstream (a path or URL, e.g. a
                   clone of openxla/stablehlo) pinned --status-back commits behind
                   its head in a superproject of its own, tracking --status-track
  --status-back N  part R's range (default 382: torch-mlir's stablehlo range of issue 46)
  --status-track PATH  part R's tracked path (default stablehlo)";

fn parse_args() -> Res<Args> {
    let mut lockstep = None;
    let mut quick = false;
    let mut skip_each = false;
    let mut status_only = false;
    let mut review_only = false;
    let mut stacks_only = false;
    let mut status_commits = None;
    let mut stacks = 50;
    let mut keep = false;
    let mut status_real = None;
    let mut status_back = 382;
    let mut status_track = "stablehlo".to_string();
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--lockstep" => {
                lockstep = Some(PathBuf::from(it.next().ok_or("--lockstep needs a path")?))
            }
            "--quick" => quick = true,
            "--skip-each" => skip_each = true,
            "--status-only" => status_only = true,
            "--review-only" => review_only = true,
            "--stacks-only" => stacks_only = true,
            "--status-commits" => {
                status_commits = Some(
                    it.next()
                        .and_then(|n| n.parse().ok())
                        .ok_or("--status-commits needs a number")?,
                )
            }
            "--stacks" => {
                stacks = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or("--stacks needs a number")?
            }
            "--keep" => keep = true,
            "--status-real" => {
                status_real = Some(it.next().ok_or("--status-real needs a repository")?)
            }
            "--status-back" => {
                status_back = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| *n > 0)
                    .ok_or("--status-back needs a positive number")?
            }
            "--status-track" => status_track = it.next().ok_or("--status-track needs a path")?,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let lockstep = lockstep.ok_or_else(|| format!("--lockstep is required\n{USAGE}"))?;
    let lockstep = fs::canonicalize(&lockstep).map_err(|e| {
        format!(
            "cannot find the lockstep binary {}: {e}",
            lockstep.display()
        )
    })?;
    Ok(Args {
        lockstep,
        quick,
        skip_each,
        status_only,
        review_only,
        stacks_only,
        status_commits,
        stacks,
        keep,
        status_real,
        status_back,
        status_track,
    })
}

fn main() {
    // Hermetic git, as in scripts/test: no user or system configuration (hooks,
    // fsmonitor, identity) changes what is measured. Set before any thread starts.
    std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
    std::env::set_var("GIT_CONFIG_GLOBAL", "/dev/null");
    std::env::remove_var("LOCKSTEP_SANDBOX_SMOKE_SLEEP");
    std::env::remove_var("LOCKSTEP_SANDBOX_SMOKE_LOG");
    std::env::remove_var("LOCKSTEP_WEBHOOK_URL");

    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    match run(&args) {
        Ok(()) => {}
        Err(e) => {
            eprintln!("\nerror: {e}");
            println!("\nbenchmark aborted: {}", e.lines().next().unwrap_or(""));
            std::process::exit(1);
        }
    }
}

fn run(args: &Args) -> Res<()> {
    let tmp = tempfile::Builder::new()
        .prefix("lockstep-bench-integrate-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let root = tmp.path().to_path_buf();
    if args.keep {
        let kept = tmp.keep();
        println!("sandboxes kept in {}", kept.display());
    }
    if let Some(upstream) = &args.status_real {
        return part_r(args, &root, upstream);
    }
    let commits_a = if args.quick { 400 } else { 2000 };
    let commits_b = args
        .status_commits
        .unwrap_or(if args.quick { 10_000 } else { 50_000 });
    println!(
        "lockstep integrate benchmark{} ({})",
        if args.quick { " --quick" } else { "" },
        args.lockstep.display()
    );

    if args.stacks_only {
        let e = part_e(args, &root.join("e"))?;
        println!("\n== summary");
        println!("  overall: {}", pass(e));
        return Ok(());
    }
    if args.review_only {
        let c = part_c(args, &root.join("c"))?;
        let d = part_d(args, &root.join("d"))?;
        println!("\n== summary");
        println!("  overall: {}", pass(c && d));
        return Ok(());
    }
    // Part A.
    let mut results = Vec::new();
    if !args.status_only {
        println!(
            "\n== A. smoke runs: {commits_a} upstream commits, ~60% affecting mlir/, 3 breaking commits at 15%, 50%, 85% of the affecting range, carried patches"
        );
        let mut strategies = vec!["gallop"];
        if !args.skip_each {
            strategies.push("each");
        }
        for (i, strategy) in strategies.iter().enumerate() {
            let dir = root.join(format!("a-{strategy}"));
            results.push(part_a(args, &dir, commits_a, strategy, i == 0)?);
        }
        print_part_a(&results);
    }

    // Part B.
    println!(
        "\n== B. status speed: {commits_b} upstream commits, ~60% affecting mlir/, carried patches"
    );
    let b = part_b(args, &root.join("b"), commits_b)?;

    // Summary.
    println!("\n== summary");
    let mut all_pass = true;
    if let Some(gallop) = results.first() {
        let each = results.get(1);
        let a_pass = gallop.smoke_runs <= SMOKE_TARGET && gallop.all_exact();
        let k = gallop.expected.len();
        let n = gallop.candidates;
        println!("  part A ({commits_a} commits, {n} candidates at start)");
        for r in &results {
            println!(
                "    {:<7} smoke runs {} (lockstep says {}, cached {}), halts {}, culprits exact {}/{}, advances {}, rounds {}, end {}, wall {:.1} s",
                r.strategy,
                r.smoke_runs,
                r.reported_smoke,
                r.reported_cached,
                r.halts.len(),
                r.exact_count(),
                r.expected.len(),
                r.advances,
                r.rounds,
                r.end,
                r.wall
            );
        }
        println!(
            "    theoretical bound for gallop: K x (ceil(log2 N) + 2) + 1 = {k} x ({} + 2) + 1 = {} (N = {n}); gallop used {} -> {}",
            ceil_log2(n),
            bound(k, n),
            gallop.smoke_runs,
            within(gallop.smoke_runs, bound(k, n))
        );
        if let Some(each) = each {
            if each.smoke_runs > 0 {
                println!(
                    "    gallop/each smoke ratio: {:.3}",
                    gallop.smoke_runs as f64 / each.smoke_runs as f64
                );
            }
        }
        println!(
            "    target: gallop <= {SMOKE_TARGET} smoke runs ({}), all culprits exact ({}/{k}) -> {}",
            gallop.smoke_runs,
            gallop.exact_count(),
            pass(a_pass)
        );
        all_pass &= a_pass;
        if let Some(each) = each {
            println!(
                "    each: all culprits exact ({}/{}) -> {}",
                each.exact_count(),
                each.expected.len(),
                pass(each.all_exact())
            );
            all_pass &= each.all_exact();
        }
    }
    let b_pass = b.ratio <= RATIO_TARGET;
    println!("  part B ({commits_b} commits)");
    println!(
        "    median status {:.3} s, median rev-list {:.3} s, ratio {:.2}",
        b.status_median, b.revlist_median, b.ratio
    );
    println!(
        "    pending from status {} vs rev-list count {} -> {}",
        b.pending,
        b.revlist_count,
        if b.pending == b.revlist_count {
            "equal"
        } else {
            "DIFFERENT"
        }
    );
    println!(
        "    target: status / rev-list <= {RATIO_TARGET} ({:.2}) -> {}",
        b.ratio,
        pass(b_pass)
    );
    all_pass &= b_pass && b.pending == b.revlist_count;
    if !args.status_only {
        all_pass &= part_c(args, &root.join("c"))?;
        all_pass &= part_d(args, &root.join("d"))?;
        all_pass &= part_e(args, &root.join("e"))?;
    }
    let notes: Vec<String> = results
        .iter()
        .flat_map(|r| r.notes.iter().map(move |n| format!("{}: {n}", r.strategy)))
        .chain(b.notes.iter().map(|n| format!("status: {n}")))
        .collect();
    if !notes.is_empty() {
        println!("  observations:");
        for n in notes {
            println!("    - {n}");
        }
    }
    println!("  overall: {}", pass(all_pass));
    Ok(())
}

fn pass(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "FAIL"
    }
}

fn ceil_log2(n: usize) -> usize {
    if n <= 1 {
        0
    } else {
        (usize::BITS - (n - 1).leading_zeros()) as usize
    }
}

/// K halting runs of at most ceil(log2 N) + 2 smokes each, plus the one
/// smoke of the final run that reaches head.
fn bound(k: usize, n: usize) -> usize {
    k * (ceil_log2(n) + 2) + 1
}

fn within(used: usize, bound: usize) -> String {
    if used <= bound {
        "within the bound".to_string()
    } else {
        format!("EXCEEDS the bound by {}", used - bound)
    }
}

fn short(sha: &str) -> &str {
    &sha[..12.min(sha.len())]
}

// ---------------------------------------------------------------------------
// Running commands.

/// A finished command.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    secs: f64,
}

impl Run {
    fn describe(&self, what: &str) -> String {
        let tail = |s: &str| {
            let lines: Vec<&str> = s.lines().collect();
            let from = lines.len().saturating_sub(30);
            lines[from..].join("\n")
        };
        format!(
            "{what} exited {}\n--- stdout (last 30 lines) ---\n{}\n--- stderr (last 30 lines) ---\n{}",
            match self.code {
                Some(c) => c.to_string(),
                None => "by a signal".to_string(),
            },
            tail(&self.stdout),
            tail(&self.stderr)
        )
    }
}

fn finish(out: Output, started: Instant) -> Run {
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        secs: started.elapsed().as_secs_f64(),
    }
}

/// Where lockstep runs: the superproject, with its own lockstep home.
struct Ctx<'a> {
    lockstep: &'a Path,
    superproject: &'a Path,
    home: PathBuf,
    smoke_log: Option<PathBuf>,
}

impl Ctx<'_> {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(self.lockstep);
        cmd.args(args)
            .current_dir(self.superproject)
            .env("LOCKSTEP_HOME", &self.home);
        if let Some(log) = &self.smoke_log {
            cmd.env("LOCKSTEP_SANDBOX_SMOKE_LOG", log);
        }
        cmd
    }

    /// Runs `lockstep ARGS`; an exit status outside `ok` is an error.
    fn run(&self, args: &[&str], ok: &[i32]) -> Res<Run> {
        let started = Instant::now();
        let out = self
            .command(args)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.lockstep.display()))?;
        let run = finish(out, started);
        check(run, &format!("lockstep {}", args.join(" ")), ok)
    }

    /// Like [`Ctx::run`], printing `progress()` to stderr every 15 s while it runs.
    fn run_with_progress(
        &self,
        args: &[&str],
        ok: &[i32],
        progress: &(dyn Fn() -> String + Sync),
    ) -> Res<Run> {
        let (tx, rx) = mpsc::channel::<()>();
        std::thread::scope(|scope| {
            scope.spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) =
                    rx.recv_timeout(Duration::from_secs(15))
                {
                    eprintln!("    ... {}", progress());
                }
            });
            let result = self.run(args, ok);
            drop(tx);
            result
        })
    }
}

fn check(run: Run, what: &str, ok: &[i32]) -> Res<Run> {
    match run.code {
        Some(c) if ok.contains(&c) => Ok(run),
        _ => Err(run.describe(what)),
    }
}

/// `git ARGS` (the reference a benchmark times), timed; a failure is an error.
fn timed_git(args: &[&str]) -> Res<Run> {
    let started = Instant::now();
    let out = Command::new("git")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    check(
        finish(out, started),
        &format!("git {}", args.join(" ")),
        &[0],
    )
}

fn git(dir: &Path, args: &[&str]) -> Res<String> {
    let started = Instant::now();
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    let run = finish(out, started);
    let run = check(
        run,
        &format!("git -C {} {}", dir.display(), args.join(" ")),
        &[0],
    )?;
    Ok(run.stdout.trim().to_string())
}

fn parse_json(run: &Run, what: &str) -> Res<Value> {
    serde_json::from_str(&run.stdout)
        .map_err(|e| format!("{what}: cannot parse its JSON output ({e})\n{}", run.stdout))
}

fn str_field<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for key in path {
        cur = cur.get(key)?;
    }
    cur.as_str()
}

fn smoke_lines(log: &Path) -> usize {
    fs::read_to_string(log)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn create_sandbox(dir: &Path, spec: &SandboxSpec) -> Res<Sandbox> {
    let started = Instant::now();
    let sb = sandbox::create(dir, spec)
        .map_err(|e| format!("cannot create the sandbox in {}: {e}", dir.display()))?;
    eprintln!(
        "  sandbox: {} pending commits, {} affecting, created in {:.1} s",
        sb.pending.len(),
        sb.affecting.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(sb)
}

// ---------------------------------------------------------------------------
// Part A: smoke runs and culprits.

struct StrategyResult {
    strategy: String,
    /// Lines in the smoke log: smoke processes actually started.
    smoke_runs: usize,
    /// Sum of lockstep's own `smoke_runs` over the loop rounds.
    reported_smoke: usize,
    reported_cached: usize,
    advances: usize,
    rounds: usize,
    /// Halt culprits in order.
    halts: Vec<String>,
    /// The sandbox's breaking commits in order.
    expected: Vec<String>,
    /// Candidates of the first loop (pending affecting commits, plus upstream
    /// head when it is untracked).
    candidates: usize,
    /// How it ended: "at_head", or what went wrong.
    end: String,
    wall: f64,
    notes: Vec<String>,
}

impl StrategyResult {
    fn exact(&self, i: usize) -> bool {
        self.halts.get(i) == self.expected.get(i) && i < self.expected.len()
    }

    fn exact_count(&self) -> usize {
        (0..self.expected.len()).filter(|&i| self.exact(i)).count()
    }

    fn all_exact(&self) -> bool {
        self.halts == self.expected && self.end == "at_head"
    }
}

fn part_a(
    args: &Args,
    dir: &Path,
    commits: usize,
    strategy: &str,
    describe: bool,
) -> Res<StrategyResult> {
    eprintln!("\n[A] strategy {strategy}");
    let spec = SandboxSpec {
        commits,
        affecting_ratio: 0.6,
        breaks: BREAKS.to_vec(),
        patches: true,
        conflict_at: None,
        upstreams_patch_at: None,
        docs_commits: 0,
        lit_changes: false,
        seed: 42,
    };
    let sb = create_sandbox(&dir.join("sb"), &spec)?;
    let log = dir.join("smoke.log");
    let ctx = Ctx {
        lockstep: &args.lockstep,
        superproject: &sb.superproject,
        home: dir.join("home"),
        smoke_log: Some(log.clone()),
    };
    let position = |sha: &str| sb.affecting.iter().position(|a| a == sha);
    if describe {
        println!(
            "  sandbox: {} pending, {} affecting, pin carries {} patches",
            sb.pending.len(),
            sb.affecting.len(),
            sb.patch_subjects.len()
        );
        for (k, b) in sb.breaks.iter().enumerate() {
            println!(
                "  break {} at {:.0}%: {} (affecting #{} of {}, API level {})",
                k + 1,
                BREAKS[k] * 100.0,
                short(b),
                position(b).map(|p| p + 1).unwrap_or(0),
                sb.affecting.len(),
                sandbox::api_level_at(&sb, b).unwrap_or(0)
            );
        }
    }

    let mut r = StrategyResult {
        strategy: strategy.to_string(),
        smoke_runs: 0,
        reported_smoke: 0,
        reported_cached: 0,
        advances: 0,
        rounds: 0,
        halts: vec![],
        expected: sb.breaks.clone(),
        candidates: 0,
        end: "rounds cap".to_string(),
        wall: 0.0,
        notes: vec![],
    };

    let started = ctx.run(&["integrate", "start"], &[0])?;
    let mut wall = started.secs;
    eprintln!("  {}", started.stdout.trim());

    // Untimed: the candidates the loop starts with.
    let status = ctx.run(&["integrate", "status", "--json"], &[0])?;
    let status = parse_json(&status, "lockstep integrate status --json")?;
    let pending: Vec<&str> = status["pending"]
        .as_array()
        .ok_or("status --json has no `pending` array")?
        .iter()
        .filter_map(|c| c["sha"].as_str())
        .collect();
    let head = str_field(&status, &["upstream_head"]).unwrap_or("");
    r.candidates = pending.len() + usize::from(!pending.contains(&head));
    if pending.len() != sb.affecting.len() {
        r.notes.push(format!(
            "status lists {} pending commits, the sandbox has {} affecting",
            pending.len(),
            sb.affecting.len()
        ));
    }

    for round in 1..=MAX_ROUNDS {
        r.rounds = round;
        let before = smoke_lines(&log);
        let round_start = Instant::now();
        let progress = || {
            format!(
                "{strategy} round {round}: {} smoke runs so far, {:.0} s into the round",
                smoke_lines(&log),
                round_start.elapsed().as_secs_f64()
            )
        };
        eprintln!(
            "  round {round}: lockstep integrate loop --strategy {strategy} --json ({} smoke runs so far)",
            before
        );
        let what = format!("lockstep integrate loop --strategy {strategy} --json");
        let run = ctx.run_with_progress(
            &["integrate", "loop", "--strategy", strategy, "--json"],
            &[0, 3],
            &progress,
        )?;
        wall += run.secs;
        let report = parse_json(&run, &what)?;
        let smokes = report["smoke_runs"].as_u64().unwrap_or(0) as usize;
        let cached = report["cached"].as_u64().unwrap_or(0) as usize;
        let advances = report["advances"].as_array().map(|a| a.len()).unwrap_or(0);
        r.reported_smoke += smokes;
        r.reported_cached += cached;
        r.advances += advances;
        let result = str_field(&report, &["end", "result"]).unwrap_or("?");
        let logged = smoke_lines(&log) - before;
        eprintln!(
            "    exit {}, {result}: {logged} smoke runs logged (lockstep: {smokes}, cached {cached}), {advances} advances, {:.1} s",
            run.code.unwrap_or(-1),
            run.secs
        );
        if logged != smokes {
            r.notes.push(format!(
                "round {round}: the smoke log grew by {logged} lines but lockstep reported {smokes} smoke runs"
            ));
        }
        match (run.code, result) {
            (Some(0), "at_head") => {
                r.end = "at_head".to_string();
                break;
            }
            (Some(3), "halted") => {
                let halt = &report["end"]["halt"];
                let culprit = str_field(halt, &["culprit", "sha"])
                    .ok_or_else(|| format!("{what}: halted without end.halt.culprit.sha"))?
                    .to_string();
                let kind = str_field(halt, &["kind"]).unwrap_or("?").to_string();
                let at_pin = halt["at_pin"].as_bool().unwrap_or(false);
                let last_good = str_field(halt, &["last_good", "sha"]).unwrap_or("?");
                let k = r.halts.len();
                let expected = sb.breaks.get(k).map(String::as_str).unwrap_or("(none)");
                eprintln!(
                    "    halted ({kind}{}) at {} (affecting #{}), last good {}; expected break {}: {}",
                    if at_pin { ", at the pin" } else { "" },
                    short(&culprit),
                    position(&culprit).map(|p| (p + 1).to_string()).unwrap_or_else(|| "-".into()),
                    short(last_good),
                    k + 1,
                    if culprit == expected { "exact" } else { "WRONG" }
                );
                if culprit != expected {
                    r.notes.push(format!(
                        "round {round}: halted at {culprit} (affecting #{}), expected break {} {expected} (affecting #{})",
                        position(&culprit).map(|p| (p + 1).to_string()).unwrap_or_else(|| "-".into()),
                        k + 1,
                        position(expected).map(|p| (p + 1).to_string()).unwrap_or_else(|| "-".into()),
                    ));
                }
                r.halts.push(culprit.clone());
                if kind != "smoke" || at_pin {
                    r.notes.push(format!(
                        "round {round}: unexpected halt kind {kind} (at_pin {at_pin}) at {culprit}; stopped"
                    ));
                    r.end = format!("halted ({kind})");
                    break;
                }
                wall += resolve(&ctx, &sb, &culprit, &mut r.notes, round)?;
            }
            (code, result) => {
                r.notes.push(format!(
                    "round {round}: exit {code:?} with end.result {result:?}; stopped"
                ));
                r.end = result.to_string();
                break;
            }
        }
    }
    if r.end == "rounds cap" {
        r.notes.push(format!(
            "not at upstream head after {MAX_ROUNDS} loop rounds"
        ));
    }
    r.wall = wall;
    r.smoke_runs = smoke_lines(&log);

    // Untimed check: at the end nothing is pending and the pin is based on head.
    if r.end == "at_head" {
        let status = ctx.run(&["integrate", "status", "--json"], &[0])?;
        let status = parse_json(&status, "lockstep integrate status --json")?;
        let left = status["pending"].as_array().map(|a| a.len()).unwrap_or(0);
        let base = str_field(&status, &["merge_base"]).unwrap_or("");
        if left != 0 || base != sb.head {
            r.notes.push(format!(
                "after at_head: {left} commits still pending, merge base {base} (upstream head {})",
                sb.head
            ));
        }
    }
    eprintln!(
        "  {strategy}: {} smoke runs, {} halts, {}/{} culprits exact, {:.1} s",
        r.smoke_runs,
        r.halts.len(),
        r.exact_count(),
        r.expected.len(),
        r.wall
    );
    Ok(r)
}

/// What a person does after an API break: `next --to <culprit>`, declare the
/// culprit's API level in `API_LEVEL`, commit. Returns the seconds it took.
fn resolve(
    ctx: &Ctx<'_>,
    sb: &Sandbox,
    culprit: &str,
    notes: &mut Vec<String>,
    round: usize,
) -> Res<f64> {
    let started = Instant::now();
    ctx.run(&["integrate", "next", "--to", culprit], &[0])?;
    let level = sandbox::api_level_at(sb, culprit)
        .ok_or_else(|| format!("the halt culprit {culprit} is not a commit of the sandbox"))?;
    let sp = &sb.superproject;
    fs::write(sp.join("API_LEVEL"), format!("{level}\n"))
        .map_err(|e| format!("cannot write API_LEVEL: {e}"))?;
    git(sp, &["add", "API_LEVEL"])?;
    let message = format!("Fix for API level {level}");
    let unchanged = Command::new("git")
        .arg("-C")
        .arg(sp)
        .args(["diff", "--cached", "--quiet"])
        .status()
        .map_err(|e| format!("cannot run git: {e}"))?
        .success();
    if unchanged {
        // A wrong culprit: the project already declares its level. Commit
        // anyway so the loop can go on (it will likely halt there again).
        notes.push(format!(
            "round {round}: API_LEVEL already {level} at culprit {culprit}; committed an empty fix"
        ));
        git(sp, &["commit", "--quiet", "--allow-empty", "-m", &message])?;
    } else {
        git(sp, &["commit", "--quiet", "-m", &message])?;
    }
    eprintln!(
        "    resolved: next --to {}, API_LEVEL = {level}, committed ({:.1} s)",
        short(culprit),
        started.elapsed().as_secs_f64()
    );
    Ok(started.elapsed().as_secs_f64())
}

fn print_part_a(results: &[StrategyResult]) {
    let gallop = &results[0];
    println!("\n  culprits:");
    for (k, b) in gallop.expected.iter().enumerate() {
        let named: Vec<String> = results
            .iter()
            .map(|r| {
                let got = r.halts.get(k).map(|s| short(s)).unwrap_or("(no halt)");
                format!(
                    "{} {got} {}",
                    r.strategy,
                    if r.exact(k) { "exact" } else { "NOT EXACT" }
                )
            })
            .collect();
        println!(
            "    break {} ({:.0}%) {}: {}",
            k + 1,
            BREAKS[k] * 100.0,
            short(b),
            named.join(", ")
        );
    }
    for r in results {
        for extra in r.halts.iter().skip(r.expected.len()) {
            println!("    {} extra halt at {}", r.strategy, short(extra));
        }
    }
    println!();
    println!(
        "  {:<9} {:>10} {:>9} {:>6} {:>15} {:>9}",
        "strategy", "smoke runs", "(lockstep)", "halts", "culprits exact", "wall"
    );
    for r in results {
        let exact = format!(
            "{}/{} {}",
            r.exact_count(),
            r.expected.len(),
            if r.all_exact() { "yes" } else { "no" }
        );
        println!(
            "  {:<9} {:>10} {:>9} {:>6} {:>15} {:>7.1} s",
            r.strategy,
            r.smoke_runs,
            r.reported_smoke,
            r.halts.len(),
            exact,
            r.wall
        );
    }
    println!(
        "  (smoke runs = lines the smoke script logged; (lockstep) = the sum of lockstep's own smoke_runs)"
    );
    println!(
        "  theoretical bound K x (ceil(log2 N) + 2) + 1 (the run reaching head) with K = {}, N = {} candidates at start: {} (gallop used {}: {})",
        gallop.expected.len(),
        gallop.candidates,
        bound(gallop.expected.len(), gallop.candidates),
        gallop.smoke_runs,
        within(gallop.smoke_runs, bound(gallop.expected.len(), gallop.candidates))
    );
    println!(
        "  target: gallop <= {SMOKE_TARGET} smoke runs, all culprits exact -> {}",
        pass(gallop.smoke_runs <= SMOKE_TARGET && gallop.all_exact())
    );
    if let Some(each) = results.get(1) {
        if each.smoke_runs > 0 {
            println!(
                "  gallop/each smoke ratio: {:.3}",
                gallop.smoke_runs as f64 / each.smoke_runs as f64
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Part B: status speed.

struct StatusResult {
    status_median: f64,
    revlist_median: f64,
    ratio: f64,
    pending: usize,
    revlist_count: usize,
    notes: Vec<String>,
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn part_b(args: &Args, dir: &Path, commits: usize) -> Res<StatusResult> {
    eprintln!("\n[B] status speed, {commits} commits");
    let spec = SandboxSpec {
        commits,
        affecting_ratio: 0.6,
        breaks: vec![],
        patches: true,
        conflict_at: None,
        upstreams_patch_at: None,
        docs_commits: 0,
        lit_changes: false,
        seed: 1,
    };
    let sb = create_sandbox(&dir.join("sb"), &spec)?;
    let ctx = Ctx {
        lockstep: &args.lockstep,
        superproject: &sb.superproject,
        home: dir.join("home"),
        smoke_log: None,
    };
    let mut notes = vec![];

    // Untimed: fetch upstream the way lockstep would (remote from upstream-url).
    let sub = sb.superproject.join(&sb.submodule_path);
    let upstream_url = sb.upstream.to_string_lossy().into_owned();
    let fetch_started = Instant::now();
    git(
        &sub,
        &["remote", "add", "--no-tags", "upstream", &upstream_url],
    )?;
    git(
        &sub,
        &[
            "fetch",
            "-q",
            "upstream",
            "+refs/heads/main:refs/remotes/upstream/main",
        ],
    )?;
    println!(
        "  fetch (untimed): {:.2} s",
        fetch_started.elapsed().as_secs_f64()
    );
    // The first status after a fetch is cold: it computes the merge base and
    // scans the pending range for the carried patches' files; later ones reuse
    // those (kept in the store, extended incrementally when upstream moves).
    let first_run = ctx.run(&["integrate", "status", "--json"], &[0])?;
    let first = parse_json(&first_run, "lockstep integrate status --json")?;
    let cold_secs = first_run.secs;
    let merge_base = str_field(&first, &["merge_base"]).unwrap_or("").to_string();
    if merge_base != sb.base {
        notes.push(format!(
            "status reports merge_base {merge_base}, the sandbox's base is {}",
            sb.base
        ));
    }
    let sub_arg = sub.to_string_lossy().into_owned();
    let exclude = format!("^{}", sb.base);
    let revlist_args = [
        "-C",
        sub_arg.as_str(),
        "rev-list",
        "--count",
        "refs/remotes/upstream/main",
        exclude.as_str(),
        "--",
        "mlir",
    ];

    // What a person runs to see the same list (issue 46's reference).
    let log_args = [
        "-C",
        sub_arg.as_str(),
        "log",
        "--format=%H %s %an %aI",
        "refs/remotes/upstream/main",
        exclude.as_str(),
        "--",
        "mlir",
    ];
    let mut log_times = vec![];
    let mut status_times = vec![];
    let mut revlist_times = vec![];
    let mut pending = 0;
    let mut revlist_count = 0;
    for i in 1..=STATUS_RUNS {
        let run = ctx.run(&["integrate", "status", "--json"], &[0])?;
        let v = parse_json(&run, "lockstep integrate status --json")?;
        pending = v["pending"].as_array().map(|a| a.len()).unwrap_or(0);
        status_times.push(run.secs);

        let started = Instant::now();
        let out = Command::new("git")
            .args(revlist_args)
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        let run = check(
            finish(out, started),
            &format!("git {}", revlist_args.join(" ")),
            &[0],
        )?;
        revlist_count =
            run.stdout.trim().parse().map_err(|e| {
                format!("git rev-list --count printed {:?}: {e}", run.stdout.trim())
            })?;
        revlist_times.push(run.secs);
        log_times.push(timed_git(&log_args)?.secs);
        eprintln!(
            "  run {i}/{STATUS_RUNS}: status {:.3} s ({pending} pending), rev-list {:.3} s ({revlist_count})",
            status_times[i - 1],
            revlist_times[i - 1]
        );
    }
    let status_median = median(status_times.clone());
    let revlist_median = median(revlist_times.clone());
    let log_median = median(log_times.clone());
    let ratio = if revlist_median > 0.0 {
        status_median / revlist_median
    } else {
        f64::INFINITY
    };
    let fmt = |xs: &[f64]| {
        xs.iter()
            .map(|x| format!("{x:.3}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "  sandbox: {} pending, {} affecting; range ^{} refs/remotes/upstream/main -- mlir",
        sb.pending.len(),
        sb.affecting.len(),
        short(&sb.base)
    );
    println!(
        "  lockstep integrate status --json      runs (s): {}",
        fmt(&status_times)
    );
    println!(
        "  git rev-list --count ... -- mlir      runs (s): {}",
        fmt(&revlist_times)
    );
    println!(
        "  git log --format='%H %s %an %aI' ... -- mlir runs (s): {}",
        fmt(&log_times)
    );
    println!(
        "  median status {status_median:.3} s / median git log {log_median:.3} s = {:.2} (issue 46: <= 1.1 on an issue-sized range, <= 1.2 on 50,000 commits)",
        status_median / log_median
    );
    println!(
        "  first (cold) status {cold_secs:.3} s = {:.2} x median rev-list",
        cold_secs / revlist_median
    );
    println!(
        "  median status {status_median:.3} s, median rev-list {revlist_median:.3} s, ratio {ratio:.2}"
    );
    println!(
        "  pending commits from status: {pending}, rev-list count: {revlist_count} ({})",
        if pending == revlist_count {
            "equal"
        } else {
            "DIFFERENT"
        }
    );
    println!(
        "  target: status / rev-list <= {RATIO_TARGET} -> {}",
        pass(ratio <= RATIO_TARGET)
    );
    if pending != revlist_count {
        notes.push(format!(
            "status lists {pending} pending commits, rev-list counts {revlist_count}"
        ));
    }
    Ok(StatusResult {
        status_median,
        revlist_median,
        ratio,
        pending,
        revlist_count,
        notes,
    })
}

// ---------------------------------------------------------------------------
// Part R: status on a real upstream.

/// Runs of each command in part R (alternating, medians compared).
const REAL_RUNS: usize = 21;

/// `integrate status` on a real upstream's history (issue 46's torch-mlir
/// range: openxla/stablehlo pinned 382 commits behind its head, tracking
/// `stablehlo/`) against what a person runs to see the same list, `git log
/// --format='%H %s %an %aI' PIN..upstream -- PATH`, alternating, medians.
/// The superproject is one of its own holding only the submodule: what
/// status reads of a superproject is its pin, branch and stable mark.
fn part_r(args: &Args, dir: &Path, upstream: &str) -> Res<()> {
    let back = args.status_back;
    let track = args.status_track.as_str();
    eprintln!(
        "\n[R] status on a real upstream: {upstream}, pinned {back} commits back, tracking {track}"
    );
    let sup = dir.join("superproject");
    let sub_path = "externals/upstream";
    let sub = sup.join(sub_path);
    fs::create_dir_all(&sup).map_err(|e| format!("cannot create {}: {e}", sup.display()))?;
    git(&sup, &["init", "-q", "-b", "main"])?;
    // The history without a checkout (a mirror may lack large blobs):
    // status reads commits and the tracked paths' trees, never the files.
    git(&sup, &["clone", "-q", "--no-checkout", upstream, sub_path])?;
    let head = git(&sub, &["rev-parse", "HEAD"])?.trim().to_string();
    let pin = git(&sub, &["rev-parse", &format!("HEAD~{back}")])?
        .trim()
        .to_string();
    git(&sub, &["update-ref", "--no-deref", "HEAD", &pin])?;
    let gitmodules =
        format!("[submodule \"{sub_path}\"]\n\tpath = {sub_path}\n\turl = {upstream}\n");
    fs::write(sup.join(".gitmodules"), gitmodules).map_err(|e| e.to_string())?;
    let config = format!(
        "[integrate]\nsubmodule = \"{sub_path}\"\nupstream-url = {upstream:?}\nupstream-branch = {:?}\ntrack-paths = [{track:?}]\nsmoke = [\"true\"]\n",
        head_branch(&sub)
    );
    fs::write(sup.join("lockstep.toml"), config).map_err(|e| e.to_string())?;
    git(
        &sup,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{pin},{sub_path}"),
        ],
    )?;
    git(&sup, &["add", ".gitmodules", "lockstep.toml"])?;
    git(
        &sup,
        &[
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
            "commit",
            "-q",
            "-m",
            "pin",
        ],
    )?;
    let ctx = Ctx {
        lockstep: &args.lockstep,
        superproject: &sup,
        home: dir.join("home"),
        smoke_log: None,
    };
    // Untimed: the fetch, and the first (cold) status that remembers the merge base.
    ctx.run(&["integrate", "status", "--fetch", "--json"], &[0])?;
    let sub_arg = sub.to_string_lossy().into_owned();
    let range = format!("{pin}..refs/remotes/upstream/{}", head_branch(&sub));
    let log_args = [
        "-C",
        sub_arg.as_str(),
        "log",
        "--format=%H %s %an %aI",
        range.as_str(),
        "--",
        track,
    ];
    let (mut status_times, mut log_times) = (vec![], vec![]);
    let (mut pending, mut listed) = (0, 0);
    for _ in 0..REAL_RUNS {
        let run = ctx.run(&["integrate", "status"], &[0])?;
        status_times.push(run.secs);
        let json = ctx.run(&["integrate", "status", "--json"], &[0])?;
        pending = parse_json(&json, "lockstep integrate status --json")?["pending"]
            .as_array()
            .map_or(0, Vec::len);
        let run = timed_git(&log_args)?;
        listed = run.stdout.lines().count();
        log_times.push(run.secs);
    }
    // Cold: the first status after upstream moved (the walk remembered for
    // one range only): upstream's tracking ref alternates between its head
    // and the commit before, so every status walks; git log walks the same.
    let tracking = format!("refs/remotes/upstream/{}", head_branch(&sub));
    let (mut cold_times, mut cold_log_times) = (vec![], vec![]);
    for i in 0..REAL_RUNS {
        let tip = if i % 2 == 0 {
            format!("{head}~1")
        } else {
            head.clone()
        };
        git(&sub, &["update-ref", &tracking, &tip])?;
        cold_times.push(ctx.run(&["integrate", "status"], &[0])?.secs);
        let cold_range = format!("{pin}..{tip}");
        let args = [
            "-C",
            sub_arg.as_str(),
            "log",
            "--format=%H %s %an %aI",
            cold_range.as_str(),
            "--",
            track,
        ];
        cold_log_times.push(timed_git(&args)?.secs);
    }
    git(&sub, &["update-ref", &tracking, &head])?;
    let (cold_median, cold_log_median) = (median(cold_times), median(cold_log_times));
    let upstream_commits = git(&sub, &["rev-list", "--count", &range])?
        .trim()
        .to_string();
    let (status_median, log_median) = (median(status_times), median(log_times));
    let ratio = status_median / log_median;
    println!(
        "  range: {upstream_commits} upstream commits ({} .. {}), {listed} touching {track}",
        short(&pin),
        short(&head)
    );
    println!("  median `lockstep integrate status` {:.1} ms, median git log {:.1} ms, ratio {ratio:.2} over {REAL_RUNS} runs each, alternating", status_median * 1e3, log_median * 1e3);
    println!(
        "  pending commits from status: {pending}, listed by git log: {listed} ({})",
        if pending == listed {
            "equal"
        } else {
            "DIFFERENT"
        }
    );
    println!("  the first status after upstream moved (the range walked, not remembered): median {:.1} ms, git log {:.1} ms, ratio {:.2}", cold_median * 1e3, cold_log_median * 1e3, cold_median / cold_log_median);
    println!("  target (issue 46): <= 1.1 -> {}", pass(ratio <= 1.1));
    if pending != listed {
        return Err(format!(
            "status lists {pending} pending commits, git log {listed}"
        ));
    }
    Ok(())
}

/// The branch `origin/HEAD` names in a fresh clone (else `main`).
fn head_branch(repo: &Path) -> String {
    git(
        repo,
        &["symbolic-ref", "--short", "refs/remotes/origin/HEAD"],
    )
    .map(|b| b.trim().trim_start_matches("origin/").to_string())
    .unwrap_or_else(|_| "main".to_string())
}

// ---------------------------------------------------------------------------
// Part C: integrates that reach review.

const REVIEW_REPO: &str = "bench/superproject";
const REVIEW_TOKEN: &str = "bench-token";

/// The part C sandbox: 400 commits, breaks at 30% and 60% of the affecting
/// range, the second reverted upstream (the new head). Returns the sandbox.
fn review_sandbox(dir: &Path) -> Res<Sandbox> {
    let spec = SandboxSpec {
        commits: 400,
        affecting_ratio: 0.6,
        breaks: vec![0.3, 0.6],
        patches: true,
        conflict_at: None,
        upstreams_patch_at: None,
        docs_commits: 0,
        lit_changes: false,
        seed: 11,
    };
    let sb = create_sandbox(&dir.join("sb"), &spec)?;
    let work = dir.join("upstream-work");
    git(
        dir,
        &[
            "clone",
            "-q",
            &sb.upstream.to_string_lossy(),
            &work.to_string_lossy(),
        ],
    )?;
    git(
        &work,
        &[
            "-c",
            "user.name=Upstream",
            "-c",
            "user.email=up@example.com",
            "revert",
            "--no-edit",
            &sb.breaks[1],
        ],
    )?;
    git(&work, &["push", "-q", "origin", "HEAD:main"])?;
    Ok(sb)
}

/// `[integrate.github]` (and `extra`) added to the sandbox's lockstep.toml,
/// committed and pushed to origin/main, where `integrate start` branches from.
fn publish_settings(sb: &Sandbox, extra: &str) -> Res<()> {
    let config = sb.superproject.join("lockstep.toml");
    let text = fs::read_to_string(&config).map_err(|e| e.to_string())?;
    fs::write(
        &config,
        format!("{text}\n[integrate.github]\nrepository = \"{REVIEW_REPO}\"\n{extra}"),
    )
    .map_err(|e| e.to_string())?;
    git(
        &sb.superproject,
        &[
            "-c",
            "user.name=Bench",
            "-c",
            "user.email=b@example.com",
            "commit",
            "-qam",
            "Publish settings",
        ],
    )?;
    git(&sb.superproject, &["push", "-q", "origin", "HEAD:main"])?;
    git(&sb.superproject, &["fetch", "-q", "origin"])?;
    Ok(())
}

fn part_c(args: &Args, dir: &Path) -> Res<bool> {
    println!(
        "\n== C. reaching review: 400 upstream commits, 2 breaks (30%: persists, revertable; 60%: reverted upstream before head), carried patches"
    );
    // The plain loop, halts resolved as a person does.
    eprintln!("\n[C] plain loop");
    let plain_dir = dir.join("plain");
    let sb = review_sandbox(&plain_dir)?;
    let log = plain_dir.join("smoke.log");
    let ctx = Ctx {
        lockstep: &args.lockstep,
        superproject: &sb.superproject,
        home: plain_dir.join("home"),
        smoke_log: Some(log.clone()),
    };
    ctx.run(&["integrate", "start"], &[0])?;
    let mut plain_halts = 0;
    let mut notes = Vec::new();
    for round in 1..=MAX_ROUNDS {
        let run = ctx.run(&["integrate", "loop", "--json"], &[0, 3])?;
        let doc = parse_json(&run, "integrate loop")?;
        match str_field(&doc, &["end", "result"]) {
            Some("halted") => {
                plain_halts += 1;
                let culprit = str_field(&doc, &["end", "halt", "culprit", "sha"])
                    .ok_or("a halt without a culprit")?
                    .to_string();
                resolve(&ctx, &sb, &culprit, &mut notes, round)?;
            }
            Some("at_head") => break,
            other => return Err(format!("plain loop ended with {other:?}")),
        }
    }
    let plain_smokes = smoke_lines(&log);

    // The same sandbox, published, breaks reverted by lockstep.
    eprintln!("\n[C] loop --publish --on-break revert");
    let review_dir = dir.join("review");
    let sb = review_sandbox(&review_dir)?;
    let gh = lockstep_testkit::github::FakeGithub::start(REVIEW_REPO, REVIEW_TOKEN)
        .map_err(|e| format!("cannot start the loopback GitHub: {e}"))?;
    publish_settings(&sb, "\n[integrate.notify]\nkind = \"json\"\n")?;
    let log = review_dir.join("smoke.log");
    let ctx = Ctx {
        lockstep: &args.lockstep,
        superproject: &sb.superproject,
        home: review_dir.join("home"),
        smoke_log: Some(log.clone()),
    };
    let run_review = |args: &[&str], ok: &[i32]| -> Res<Run> {
        let started = Instant::now();
        let out = ctx
            .command(args)
            .env("GITHUB_API_URL", gh.url())
            .env("GITHUB_TOKEN", REVIEW_TOKEN)
            .env("LOCKSTEP_WEBHOOK_URL", gh.webhook_url())
            .output()
            .map_err(|e| format!("cannot run lockstep: {e}"))?;
        check(
            finish(out, started),
            &format!("lockstep {}", args.join(" ")),
            ok,
        )
    };
    run_review(&["integrate", "start"], &[0])?;
    let started = Instant::now();
    let run = run_review(
        &[
            "integrate",
            "loop",
            "--publish",
            "--on-break",
            "revert",
            "--json",
        ],
        &[0, 3],
    )?;
    let wall = started.elapsed().as_secs_f64();
    let doc = parse_json(&run, "integrate loop --publish --on-break revert")?;
    let review_smokes = smoke_lines(&log);
    let end = str_field(&doc, &["end", "result"])
        .unwrap_or("?")
        .to_string();
    let reverted: Vec<String> = doc["reverted"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["sha"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let review_halts = usize::from(end == "halted");
    // One more upstream commit: the next publish updates the pull request.
    let work = review_dir.join("upstream-work");
    fs::write(work.join("mlir/NEXT.txt"), "next\n").map_err(|e| e.to_string())?;
    git(&work, &["add", "mlir/NEXT.txt"])?;
    git(
        &work,
        &[
            "-c",
            "user.name=Upstream",
            "-c",
            "user.email=up@example.com",
            "commit",
            "-qm",
            "[mlir] One more",
        ],
    )?;
    git(&work, &["push", "-q", "origin", "HEAD:main"])?;
    run_review(
        &["integrate", "loop", "--publish", "--on-break", "revert"],
        &[0],
    )?;
    let pulls = gh.pulls();
    let updates = gh.requests().iter().filter(|r| r.method == "PATCH").count();
    let posts = gh.webhook_posts().len();
    let carried = reverted.first() == sb.breaks.first() && reverted.len() == 1;
    let ratio = review_smokes as f64 / plain_smokes.max(1) as f64;
    let ok = end == "at_head"
        && review_halts == 0
        && carried
        && pulls.len() == 1
        && updates >= 1
        && ratio <= REVIEW_RATIO_TARGET;
    println!("  plain loop: {plain_smokes} smoke runs, {plain_halts} halt(s) resolved by a person");
    println!(
        "  loop --publish --on-break revert: {review_smokes} smoke runs, {review_halts} halt(s), end {end}, reverts carried {} ({}), {:.1} s",
        reverted.len(),
        reverted.iter().map(|r| short(r)).collect::<Vec<_>>().join(", "),
        wall
    );
    println!(
        "  pull requests: {} (draft {}), updated {updates} time(s); webhook posts {posts}",
        pulls.len(),
        pulls.first().map(|p| p.draft).unwrap_or(false)
    );
    println!(
        "  target: smoke runs <= {REVIEW_RATIO_TARGET} x plain ({review_smokes}/{plain_smokes} = {ratio:.2}), zero halts, the first break's revert carried, one PR created and updated -> {}",
        pass(ok)
    );
    for n in notes {
        println!("    - plain: {n}");
    }
    Ok(ok)
}

// ---------------------------------------------------------------------------
// Part D: CI as the bisect oracle.

fn part_d(args: &Args, dir: &Path) -> Res<bool> {
    println!(
        "\n== D. bisect --ci: 400 upstream commits, one break at 40%, a loopback CI answering after 3 polls"
    );
    let spec = SandboxSpec {
        commits: 400,
        affecting_ratio: 0.6,
        breaks: vec![0.4],
        patches: true,
        conflict_at: None,
        upstreams_patch_at: None,
        docs_commits: 0,
        lit_changes: false,
        seed: 5,
    };
    let sb = create_sandbox(&dir.join("sb"), &spec)?;
    publish_settings(&sb, "")?;
    let gh = lockstep_testkit::github::FakeGithub::start(REVIEW_REPO, REVIEW_TOKEN)
        .map_err(|e| format!("cannot start the loopback GitHub: {e}"))?;
    let (origin, fork, path) = (
        sb.super_origin.clone(),
        sb.fork.clone(),
        sb.submodule_path.clone(),
    );
    gh.set_ci(
        std::sync::Arc::new(move |sha: &str| {
            let pin = git(&origin, &["rev-parse", &format!("{sha}:{path}")]).unwrap_or_default();
            let have = git(&fork, &["show", &format!("{pin}:mlir/include/API_VERSION")])
                .unwrap_or_default();
            let want = git(&origin, &["show", &format!("{sha}:API_LEVEL")]).unwrap_or_default();
            if !have.is_empty() && have == want {
                "success"
            } else {
                "failure"
            }
            .to_string()
        }),
        3,
    );
    let ctx = Ctx {
        lockstep: &args.lockstep,
        superproject: &sb.superproject,
        home: dir.join("home"),
        smoke_log: None,
    };
    ctx.run(&["integrate", "start"], &[0])?;
    let started = Instant::now();
    let out = ctx
        .command(&[
            "integrate",
            "bisect",
            "--ci",
            "--ci-poll",
            "0.1",
            "--good",
            &sb.base,
            "--bad",
            &sb.head,
            "--json",
        ])
        .env("GITHUB_API_URL", gh.url())
        .env("GITHUB_TOKEN", REVIEW_TOKEN)
        .output()
        .map_err(|e| format!("cannot run lockstep: {e}"))?;
    let run = check(finish(out, started), "lockstep integrate bisect --ci", &[0])?;
    let wall = started.elapsed().as_secs_f64();
    let doc = parse_json(&run, "integrate bisect --ci")?;
    let n = doc["candidates"].as_u64().unwrap_or(0) as usize;
    let rounds = gh.ci_commits().len();
    let found = str_field(&doc, &["first_bad", "sha"])
        .unwrap_or("")
        .to_string();
    let exact = found == sb.breaks[0];
    let bound = ceil_log2(n) + 2;
    let ok = exact && rounds <= bound;
    println!(
        "  {n} candidates; {rounds} CI round(s) (bound ceil(log2 {n}) + 2 = {bound}); first bad {} ({}); {:.1} s",
        short(&found),
        if exact { "the break, exactly" } else { "NOT the break" },
        wall
    );
    println!(
        "  target: CI rounds <= {bound}, the break named -> {}",
        pass(ok)
    );
    Ok(ok)
}

// ---------------------------------------------------------------------------
// Part E: random carried stacks.

/// Part E's upstream size and carried patches per stack.
const STACK_COMMITS: usize = 300;
const STACK_PATCHES: usize = 2;

/// How one random stack went.
#[derive(Default)]
struct StackRun {
    loops: usize,
    conflicts: usize,
    smoke_halts: usize,
    smoke_runs: usize,
    /// Loops whose smoke runs passed ceil(log2 N) + 2 (+1 at head).
    over_bound: usize,
    /// The most smoke runs beyond that bound in one loop.
    worst_excess: usize,
    internal: Option<String>,
}

fn part_e(args: &Args, dir: &Path) -> Res<bool> {
    use lockstep_testkit::stacks;
    println!(
        "\n== E. {} random carried stacks of {STACK_PATCHES} patches over {STACK_COMMITS} upstream commits, driven to head (gallop)",
        args.stacks
    );
    let started = Instant::now();
    let mut runs = Vec::new();
    let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
    for seed in 0..args.stacks as u64 {
        let mut spec = stacks::random_spec(seed, STACK_COMMITS);
        // Exactly two carried patches: the rest of a second draw fills in.
        let mut extra = stacks::random_spec(seed ^ 0xFFFF, STACK_COMMITS).carried;
        while spec.carried.len() < STACK_PATCHES && !extra.is_empty() {
            spec.carried.push(extra.remove(0));
        }
        spec.carried.truncate(STACK_PATCHES);
        for c in &spec.carried {
            *kinds.entry(c.kind()).or_default() += 1;
        }
        let case = dir.join(format!("s{seed}"));
        let sb = stacks::create(&case.join("sb"), &spec).map_err(|e| e.render())?;
        let run = drive_stack(args, &case, &sb)?;
        if let Some(why) = &run.internal {
            eprintln!("  stack {seed}: {why}");
        }
        runs.push(run);
        if (seed + 1) % 10 == 0 {
            eprintln!("  [E] {} of {} stacks", seed + 1, args.stacks);
        }
    }
    let internal = runs.iter().filter(|r| r.internal.is_some()).count();
    let loops: usize = runs.iter().map(|r| r.loops).sum();
    let over: usize = runs.iter().map(|r| r.over_bound).sum();
    let worst = runs.iter().map(|r| r.worst_excess).max().unwrap_or(0);
    let mut per_stack: Vec<usize> = runs.iter().map(|r| r.smoke_runs).collect();
    per_stack.sort_unstable();
    println!(
        "  patches drawn: {}",
        kinds
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  {} loops: {} conflict halts, {} smoke halts; smoke runs per stack median {}, max {}; {:.1} s",
        loops,
        runs.iter().map(|r| r.conflicts).sum::<usize>(),
        runs.iter().map(|r| r.smoke_halts).sum::<usize>(),
        per_stack.get(per_stack.len() / 2).copied().unwrap_or(0),
        per_stack.last().copied().unwrap_or(0),
        started.elapsed().as_secs_f64()
    );
    println!(
        "  loops over ceil(log2 N) + 2 (+1 at head): {over} of {loops} (at most {worst} more; each search the replay rule restarts after an advance costs one)"
    );
    let ok = internal == 0;
    println!("  target: 0 internal errors ({internal}) -> {}", pass(ok));
    Ok(ok)
}

/// Drives one stack sandbox to upstream head (at most 30 loops).
fn drive_stack(
    args: &Args,
    dir: &Path,
    sb: &lockstep_testkit::stacks::StackSandbox,
) -> Res<StackRun> {
    use lockstep_testkit::stacks;
    let log = dir.join("smoke.log");
    let ctx = Ctx {
        lockstep: &args.lockstep,
        superproject: &sb.superproject,
        home: dir.join("home"),
        smoke_log: Some(log.clone()),
    };
    let sub = sb.superproject.join(&sb.submodule_path);
    let mut run = StackRun::default();
    ctx.run(&["integrate", "start"], &[0])?;
    for _ in 0..30 {
        let before = smoke_lines(&log);
        let status = parse_json(
            &ctx.run(&["integrate", "status", "--json"], &[0])?,
            "integrate status",
        )?;
        let n = status["pending"].as_array().map(|a| a.len()).unwrap_or(0) + 1;
        let started = Instant::now();
        let out = ctx
            .command(&["integrate", "loop", "--json"])
            .output()
            .map_err(|e| format!("cannot run lockstep: {e}"))?;
        let loop_run = finish(out, started);
        run.loops += 1;
        let used = smoke_lines(&log) - before;
        run.smoke_runs += used;
        let code = loop_run.code.unwrap_or(-1);
        if !(code == 0 || code == 3) || loop_run.stderr.contains("internal") {
            run.internal = Some(loop_run.describe("integrate loop"));
            return Ok(run);
        }
        let bound = ceil_log2(n) + 2 + usize::from(code == 0);
        if used > bound {
            eprintln!(
                "    {}: a loop over {n} candidates used {used} smoke runs (bound {bound})",
                dir.display()
            );
            run.over_bound += 1;
            run.worst_excess = run.worst_excess.max(used - bound);
        }
        if code == 0 {
            return Ok(run);
        }
        let doc = parse_json(&loop_run, "integrate loop")?;
        let halt = &doc["end"]["halt"];
        let culprit = str_field(halt, &["culprit", "sha"])
            .unwrap_or("")
            .to_string();
        match str_field(halt, &["kind"]) {
            Some("conflict") => {
                run.conflicts += 1;
                let status = parse_json(
                    &ctx.run(&["integrate", "status", "--json"], &[0])?,
                    "integrate status",
                )?;
                let base = str_field(&status, &["merge_base"])
                    .unwrap_or("")
                    .to_string();
                let current = str_field(&status, &["current"]).unwrap_or("").to_string();
                let resolved = stacks::replay_by_hand(&sub, &base, &current, &culprit, true)
                    .map_err(|e| e.render())?;
                git(&sub, &["checkout", "-q", "--detach", &resolved.head])?;
                commit_as_person(
                    &sb.superproject,
                    &sb.submodule_path,
                    "Rebase the carried patches by hand",
                )?;
            }
            Some("smoke") => {
                run.smoke_halts += 1;
                let head = str_field(halt, &["probe_head"])
                    .unwrap_or(&culprit)
                    .to_string();
                let found = git(
                    &sub,
                    &["grep", "-ohE", "BROKEN_[0-9]+", &head, "--", "mlir"],
                )
                .unwrap_or_default();
                let path = sb.superproject.join("ACCEPTED_BREAKS");
                let mut text = fs::read_to_string(&path).unwrap_or_default();
                for line in found.lines() {
                    if let Some(word) = line.rsplit(':').next() {
                        text.push_str(word);
                        text.push('\n');
                    }
                }
                fs::write(&path, text).map_err(|e| e.to_string())?;
                commit_as_person(
                    &sb.superproject,
                    "ACCEPTED_BREAKS",
                    "Adapt to the upstream API",
                )?;
            }
            other => {
                run.internal = Some(format!("a halt of unknown kind {other:?}"));
                return Ok(run);
            }
        }
    }
    run.internal = Some("not at head after 30 loops".into());
    Ok(run)
}

/// `git add PATH` and a commit by a person, in `repo`.
fn commit_as_person(repo: &Path, path: &str, message: &str) -> Res<()> {
    git(repo, &["add", path])?;
    git(
        repo,
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@e",
            "commit",
            "-qm",
            message,
        ],
    )
    .map(drop)
}
