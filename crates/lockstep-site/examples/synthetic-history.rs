//! Writes a synthetic results history for `scripts/bench-report`: test runs
//! of many tests (a few flaky, a few failing for a while, some with
//! benchmark steps against goldens), bench runs of many kernels (one slowed
//! down 15% two thirds of the way), and integrate loops.
//!
//! Usage: synthetic-history DIR [--runs N] [--tests N] [--kernels N]
//! (defaults 1000, 1000, 30: N test runs and N bench runs).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use lockstep_history::{file_name, Kind, Machine, RunRecord, Source};
use serde_json::{json, Value};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn record(n: usize, kind: Kind, commit: usize, results: Value) -> RunRecord {
    let secs = n * 97;
    let started = format!(
        "2026-01-{:02}T{:02}:{:02}:{:02}Z",
        1 + secs / 86_400 % 28,
        secs / 3600 % 24,
        secs / 60 % 60,
        secs % 60
    );
    RunRecord {
        schema: 1,
        id: format!("{started}-{}-{n}", kind.name()),
        kind,
        finished: started.clone(),
        started,
        source: Source {
            commit: Some({
                let x = (commit as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                format!("{x:016x}{:016x}{commit:08x}", x.rotate_left(17))
            }),
            branch: Some("main".into()),
            dirty: false,
        },
        pins: BTreeMap::from([(
            "third_party/llvm-project".to_string(),
            format!("{:040x}", commit / 10),
        )]),
        toolchain: Some(format!("{:064x}", commit / 100)),
        machine: Machine {
            cpu: "Synthetic CPU".into(),
            cores: 8,
            os: "linux-x86_64".into(),
            host: "bench-host".into(),
        },
        results,
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut dir = None;
    let (mut runs, mut tests, mut kernels) = (1000usize, 1000usize, 30usize);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| -> Option<usize> {
            let v = it.next().and_then(|v| v.parse().ok());
            if v.is_none() {
                eprintln!("error: {name} takes a number");
            }
            v
        };
        match a.as_str() {
            "--runs" => match value("--runs") {
                Some(v) => runs = v,
                None => return ExitCode::from(2),
            },
            "--tests" => match value("--tests") {
                Some(v) => tests = v,
                None => return ExitCode::from(2),
            },
            "--kernels" => match value("--kernels") {
                Some(v) => kernels = v,
                None => return ExitCode::from(2),
            },
            other if dir.is_none() => dir = Some(PathBuf::from(other)),
            other => {
                eprintln!("error: unexpected argument {other}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(dir) = dir else {
        eprintln!("usage: synthetic-history DIR [--runs N] [--tests N] [--kernels N]");
        return ExitCode::from(2);
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: cannot create {}: {e}", dir.display());
        return ExitCode::from(1);
    }
    let mut rng = Rng(0x6c6f_636b_7374_6570);
    let write = |run: &RunRecord| -> Result<(), String> {
        let path = dir.join(file_name(run));
        let bytes = serde_json::to_vec(run).map_err(|e| e.to_string())?;
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))
    };
    let mut n = 0;
    for r in 0..runs {
        // Two test runs per commit, so flakiness shows.
        let commit = r / 2;
        let rows: Vec<Value> = (0..tests)
            .map(|t| {
                let case = format!("suite{}/test_{t:04}", t % 10);
                let group = if t % 3 == 0 { "vulkan" } else { "cpu" };
                let flaky = t % 50 == 7 && rng.unit() < 0.15;
                let broken = t % 97 == 5 && (commit / 40) % 5 == 2;
                let outcome = if flaky || broken { "fail" } else { "pass" };
                let steps: Vec<Value> = if t % 50 == 0 {
                    let time = 2.0 + (t % 7) as f64 * (1.0 + 0.03 * rng.unit());
                    vec![json!({"kind": "benchmark", "status": "passed", "command": "", "log": null,
                        "seconds": 0.1, "cached": false, "message": "", "output_tail": "",
                        "metrics": {"time_ms": time, "golden_time_ms": 2.2 + (t % 7) as f64,
                                    "dispatch_count": 3, "vmfb_size": 1000}})]
                } else {
                    Vec::new()
                };
                json!({"id": format!("{case} [{group}]"), "case": case, "group": group,
                       "outcome": outcome, "reason": if outcome == "fail" { "mismatch" } else { "" },
                       "steps": steps, "seconds": 0.05, "markers": []})
            })
            .collect();
        let doc = json!({"schema": 1, "version": 1,
            "summary": {"total": tests}, "changes": {"newly_failing": [], "newly_passing": [], "slower": []},
            "tests": rows});
        if let Err(e) = write(&record(n, Kind::Test, commit, doc)) {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
        n += 1;
    }
    for r in 0..runs {
        let rows: Vec<Value> = (0..kernels)
            .map(|k| {
                // Kernel 7 slows down 15% within the charted runs.
                let slow = if k == 7 && r >= runs - runs / 50 { 1.15 } else { 1.0 };
                let base = 50.0 + 10.0 * k as f64;
                let times: Vec<f64> = (0..10)
                    .map(|_| base * slow * (1.0 + 0.02 * rng.unit()))
                    .collect();
                let median = base * slow * 1.01;
                json!({"command": k, "line": k + 1,
                    "arguments": format!("conv -n 1 -c {} -H 56 -W 56 -k 64 -y 3 -x 3 -F 1", 16 + k),
                    "func_name": format!("conv_2d_float32_forward_{k}"), "output_shape": [1, 64, 56, 56],
                    "output_dtype": "float32",
                    "stats": {"min": median, "max": median, "mean": median, "median": median, "stddev": 0.5,
                              "samples": 10, "times_us": times},
                    "gflops": 1000.0 / median, "gbps": 1.0, "verify": "", "status": "ok", "cached": true,
                    "compile_seconds": 0.0, "timing_seconds": 0.1, "module": null, "repeat": null,
                    "check": null, "notes": []})
            })
            .collect();
        let doc = json!({"schema": 1, "device": "local-task", "runtime_device": "local-task",
            "rows": rows, "compiled": 0, "cache_hits": kernels});
        if let Err(e) = write(&record(n, Kind::Bench, r / 2, doc)) {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
        n += 1;
    }
    for r in 0..(runs / 50).max(1) {
        let doc = json!({"schema": 1, "smoke_runs": 3 + r % 4, "cached": r % 2,
            "advances": (0..r % 3).map(|i| format!("{:040x}", 0xadd0 + r * 10 + i)).collect::<Vec<_>>(),
            "end": {"result": if r % 5 == 4 { "halted" } else { "at_head" }}});
        if let Err(e) = write(&record(n, Kind::Integrate, r * 25, doc)) {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
        n += 1;
    }
    println!("wrote {n} runs into {}", dir.display());
    ExitCode::SUCCESS
}
