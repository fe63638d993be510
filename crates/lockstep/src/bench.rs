//! `lockstep bench`: turn the command line or commands file into jobs, resolve
//! the tools, run them through lockstep-bench, print BOO's lines and write the
//! reports.

use std::path::Path;
use std::time::Duration;

use lockstep_bench::run::{self, Job, Options};
use lockstep_bench::{commands, defaults, device, parse_argv};
use lockstep_core::config::Loaded;
use lockstep_core::Error;

use crate::cli;
use crate::output::Console;

pub fn run(args: cli::BenchArgs, loaded: &Loaded) -> Result<i32, Error> {
    let jobs = jobs(&args)?;
    let bench_config = &loaded.config.bench;
    let device = device::resolve(args.device.as_deref(), bench_config)?;
    let timeout = match args.timeout {
        Some(secs) if !(secs > 0.0 && secs.is_finite()) => {
            return Err(Error::usage(format!(
                "--timeout must be positive, got {secs}"
            )))
        }
        Some(secs) => Duration::from_secs_f64(secs),
        None => bench_config.timeout.unwrap_or(Duration::from_secs(600)),
    };
    if args.threads == Some(0) || args.jobs == Some(0) {
        return Err(Error::usage("-j and --threads must be at least 1"));
    }
    let console = Console::new();
    let tc = crate::toolchain::resolve(args.iree_bin.as_deref(), loaded, &console)?;
    let work = tempfile::Builder::new()
        .prefix("lockstep-bench-")
        .tempdir()
        .map_err(|e| Error::failed("cannot create a temporary directory").cause(e.to_string()))?;
    let opts = Options {
        compiler: tc.tool("iree-compile")?,
        benchmark: tc.tool("iree-benchmark-module")?,
        runner: tc.tool("iree-run-module")?,
        identity: tc.identity.clone(),
        device,
        compile_flags: bench_config
            .compile_flags
            .iter()
            .chain(&args.compile_flags)
            .cloned()
            .collect(),
        jobs: args.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        }),
        timeout: Some(timeout),
        threads: args.threads,
        splat: args.splat_input_value.clone(),
        verify: args.verify,
        cache: lockstep_bench::cache::location(
            bench_config
                .cache_dir
                .as_ref()
                .map(|dir| loaded.root.join(dir))
                .as_deref(),
        ),
        work_dir: work.path().to_path_buf(),
    };
    let mut last = None;
    let summary = run::run(&jobs, &opts, |row| {
        if last != Some(row.command) {
            println!("{}", row.arguments);
            for note in &row.notes {
                match row.line {
                    Some(n) => eprintln!("note: line {n}: {note}"),
                    None => eprintln!("note: {note}"),
                }
            }
            last = Some(row.command);
        }
        for line in row.boo_lines() {
            println!("{line}");
        }
    });
    if let Some(path) = &args.csv {
        write(path, &lockstep_bench::report::csv(&summary.rows))?;
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&summary)
            .map_err(|e| Error::failed("cannot encode the results").cause(e.to_string()))?;
        write(path, &text)?;
    }
    let failed = summary.failed();
    eprintln!(
        "{} kernels: {} ok, {} failed ({} compiled, {} from the cache)",
        summary.rows.len(),
        summary.rows.len() - failed,
        failed,
        summary.compiled,
        summary.cache_hits
    );
    if failed > 0 {
        // The failed rows cite logs in the work directory: keep it.
        let kept = work.keep();
        eprintln!("logs kept in {}", kept.display());
    }
    Ok(if failed > 0 { 1 } else { 0 })
}

/// The bench part of `lockstep demo`: the embedded default set, timed and
/// verified on the CPU, printed like a normal run.
// Called by `lockstep demo` (wired by the owner).
pub fn demo() -> Result<i32, Error> {
    println!("\n== lockstep bench --verify (the embedded default commands, real IREE compiler and runtime)");
    let cwd = std::env::current_dir()?;
    let loaded = lockstep_core::config::load(None, &cwd)?;
    let args = cli::BenchArgs {
        commands_file: None,
        csv: None,
        json: None,
        verify: true,
        jobs: None,
        device: Some(device::DEFAULT_DEVICE.to_string()),
        compile_flags: Vec::new(),
        timeout: None,
        threads: None,
        splat_input_value: None,
        iree_bin: None,
        command: Vec::new(),
    };
    run(args, &loaded)
}

/// The jobs: the single command (invalid → usage error), the commands file
/// (invalid lines become failed rows) or the embedded defaults.
fn jobs(args: &cli::BenchArgs) -> Result<Vec<Job>, Error> {
    let (text, is_tsv, extra) = match &args.commands_file {
        Some(path) => {
            let text = fs_err::read_to_string(path)?;
            let is_tsv = path.extension().is_some_and(|e| e == "tsv");
            (text, is_tsv, args.command.clone())
        }
        None if args.command.is_empty() => (defaults::COMMANDS.to_string(), false, Vec::new()),
        None => {
            let (_, argv) = commands::strip_prefixes(args.command.clone());
            let arguments = argv.join(" ");
            let parsed = parse_argv(&argv).map_err(|e| e.into_usage_error(&arguments))?;
            return Ok(vec![Job {
                line: None,
                arguments,
                parsed: Ok(parsed),
                repeat: None,
            }]);
        }
    };
    Ok(commands::parse_file(&text, is_tsv)
        .into_iter()
        .map(|line| {
            if !line.is_ok() {
                let reason = line.error.clone().unwrap_or_default();
                return Job {
                    line: Some(line.number),
                    arguments: line.text,
                    parsed: Err(reason),
                    repeat: line.repeat,
                };
            }
            let argv: Vec<String> = line.argv.iter().chain(&extra).cloned().collect();
            Job {
                line: Some(line.number),
                arguments: argv.join(" "),
                parsed: parse_argv(&argv).map_err(|e| e.reason),
                repeat: line.repeat,
            }
        })
        .collect())
}

fn write(path: &Path, text: &str) -> Result<(), Error> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs_err::create_dir_all(dir)?;
    }
    fs_err::write(path, text)?;
    Ok(())
}
