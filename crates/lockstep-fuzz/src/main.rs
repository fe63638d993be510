//! `lockstep-fuzz`: runs the fuzz targets (see the library docs) for a
//! given time or number of inputs each, prints per target the inputs tried
//! and the panics, hangs and unnamed refusals found, saves failing inputs
//! under `fuzz/failures/TARGET/` and, with `--save`, inputs with new
//! outcomes into the corpus. Exits 1 when anything broke the contract.
//! `scripts/fuzz` is the way to run it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use lockstep_fuzz::run::{self, Limits};

#[derive(Debug, Parser)]
#[command(name = "lockstep-fuzz")]
struct Args {
    /// Targets to run (default: all). `--list` names them.
    targets: Vec<String>,
    /// Seconds per target.
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
    /// Stop a target after this many inputs instead.
    #[arg(long)]
    inputs: Option<u64>,
    /// An input that takes longer than this many seconds is a hang.
    #[arg(long, default_value_t = 5.0)]
    per_input: f64,
    /// The corpus directory (one subdirectory per target).
    #[arg(long, default_value = "fuzz/corpus")]
    corpus: PathBuf,
    /// Where failing inputs are written.
    #[arg(long, default_value = "fuzz/failures")]
    failures: PathBuf,
    /// Add inputs with new outcomes to the corpus.
    #[arg(long)]
    save: bool,
    /// With --save, keep at most this many new inputs per target and run: a
    /// target whose refusals quote the input finds a new outcome in nearly
    /// every input, and the corpus is for inputs worth committing.
    #[arg(long, default_value_t = 16)]
    save_at_most: usize,
    /// Random seed (default: from the clock; printed so a run can be repeated).
    #[arg(long)]
    seed: Option<u64>,
    /// List the targets and exit.
    #[arg(long)]
    list: bool,
}

fn seconds(flag: &str, value: f64) -> Result<Duration, String> {
    lockstep_core::config::seconds(&format!("--{flag}"), value).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.list {
        for t in lockstep_fuzz::all() {
            println!("{}", t.name);
        }
        return ExitCode::SUCCESS;
    }
    match fuzz_all(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

/// Runs every chosen target; Ok(false) when any broke the contract.
fn fuzz_all(args: &Args) -> Result<bool, String> {
    let targets = match args.targets.as_slice() {
        [] => lockstep_fuzz::all(),
        names => names
            .iter()
            .map(|n| lockstep_fuzz::find(n).ok_or_else(|| format!("no target `{n}` (see --list)")))
            .collect::<Result<_, _>>()?,
    };
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    });
    let limits = Limits {
        inputs: args.inputs,
        duration: args
            .inputs
            .is_none()
            .then(|| seconds("seconds", args.seconds))
            .transpose()?,
        per_input: seconds("per-input", args.per_input)?,
        seed,
    };
    println!("seed {seed}; {:?} per input is a hang", limits.per_input);
    println!(
        "{:<14} {:>9} {:>9} {:>9} {:>6} {:>6} {:>8} {:>7} {:>9}",
        "target", "inputs", "accepted", "refused", "panics", "hangs", "unnamed", "novel", "slowest"
    );
    let mut clean = true;
    for target in &targets {
        let corpus = run::load_corpus(&args.corpus, target.name);
        let report = lockstep_fuzz::fuzz(target, &corpus, &limits);
        println!(
            "{:<14} {:>9} {:>9} {:>9} {:>6} {:>6} {:>8} {:>7} {:>7.1}ms",
            report.target,
            report.tried,
            report.accepted,
            report.refused,
            report.panics.len(),
            report.hangs.len(),
            report.unnamed.len(),
            report.novel.len(),
            report.slowest.as_secs_f64() * 1000.0
        );
        if args.save {
            for input in report.novel.iter().take(args.save_at_most) {
                run::save(&args.corpus, target.name, input).map_err(|e| e.to_string())?;
            }
        }
        for (kind, failures) in [
            ("panic", &report.panics),
            ("hang", &report.hangs),
            ("unnamed", &report.unnamed),
        ] {
            for f in failures.iter().take(20) {
                let path =
                    run::save(&args.failures, target.name, &f.input).map_err(|e| e.to_string())?;
                println!("  {kind}: {} ({})", f.message, path.display());
            }
        }
        clean &= report.clean();
    }
    Ok(clean)
}
