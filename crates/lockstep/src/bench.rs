//! `lockstep bench`: resolve the options, let lockstep-bench turn the command
//! line or commands file into jobs and run them (its events print BOO's
//! lines), write the reports.

use std::path::Path;
use std::time::Duration;

use lockstep_bench::device;
use lockstep_bench::jobs;
use lockstep_bench::run::{self, Options};
use lockstep_cache::Area;
use lockstep_core::config::Loaded;
use lockstep_core::Error;

use lockstep_report::Reporters;

use crate::cli;

pub fn run(args: cli::BenchArgs, loaded: &Loaded, rep: &Reporters) -> Result<i32, Error> {
    let sink: &dyn lockstep_core::events::Sink = rep;
    let jobs = jobs::jobs(args.commands_file.as_deref(), &args.command, sink)?;
    let bench_config: lockstep_bench::config::BenchConfig = loaded.section()?;
    let bench_config = &bench_config;
    let device = device::resolve(args.device.as_deref(), bench_config)?;
    let timeout = match args.timeout {
        Some(secs) => lockstep_core::config::seconds("--timeout", secs)?,
        None => bench_config.timeout.unwrap_or(Duration::from_secs(600)),
    };
    if let Some(value) = &args.splat_input_value {
        jobs::check_splat(value, &jobs)?;
    }
    let jobs_n = lockstep_core::pool::jobs(args.jobs, "-j")?;
    if args.threads == Some(0) {
        return Err(Error::usage("--threads 0: at least one thread is needed")
            .hint("give --threads 1 or more, or leave it out"));
    }
    let tc = crate::toolchain::resolve(args.iree_bin.as_deref(), loaded, rep)?;
    // Every row needs these: a missing one is an error before any compile.
    for tool in ["iree-compile", "iree-benchmark-module", "iree-run-module"] {
        tc.tool(tool)?;
    }
    let work = tempfile::Builder::new()
        .prefix("lockstep-bench-")
        .tempdir()
        .map_err(|e| Error::failed("cannot create a temporary directory").cause(e.to_string()))?;
    let cache = crate::config::cache(loaded)?;
    let opts = Options {
        toolchain: tc.clone(),
        device,
        compile_flags: bench_config
            .compile_flags
            .iter()
            .chain(&args.compile_flags)
            .cloned()
            .collect(),
        jobs: jobs_n,
        timeout,
        threads: args.threads,
        splat: args.splat_input_value.clone(),
        verify: args.verify,
        cache: cache.enabled(Area::Kernels),
        references: cache.enabled(Area::References),
        max_bytes: match args
            .max_bytes
            .as_deref()
            .or(bench_config.max_bytes.as_deref())
        {
            Some(size) => lockstep_cache::maintain::parse_size(size).map_err(|e| {
                e.context(format!("invalid --max-bytes / [bench] max-bytes `{size}`"))
            })?,
            None => run::default_max_bytes(work.path()),
        },
        work_dir: work.path().to_path_buf(),
    };
    let summary = run::run(&jobs, &opts, sink);
    if let Some(path) = &args.csv {
        write("--csv", path, &lockstep_bench::rows::csv(&summary.rows))?;
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&summary)
            .map_err(|e| Error::failed("cannot encode the results").cause(e.to_string()))?;
        write("--json", path, &text)?;
    }
    let failed = summary.failed();
    sink.note(format!(
        "{} kernels: {} ok, {} failed ({} compiled, {} from the cache)",
        summary.rows.len(),
        summary.rows.len() - failed,
        failed,
        summary.compiled,
        summary.cache_hits
    ));
    let cites_logs = |text: &str| text.contains("(log: ");
    let logs_cited = summary.rows.iter().any(|row| {
        cites_logs(&row.status)
            || row
                .check
                .as_ref()
                .and_then(|c| c.error.as_deref())
                .is_some_and(cites_logs)
    });
    if logs_cited {
        // Failed rows cite logs in the work directory: keep it.
        let kept = work.keep();
        sink.note(format!("logs kept in {}", kept.display()));
    }
    Ok(if failed > 0 { 1 } else { 0 })
}

/// The bench part of `lockstep demo`: the embedded default set, timed and
/// verified on the CPU, printed like a normal run.
// Called by `lockstep demo` (wired by the owner).
pub fn demo(rep: &Reporters) -> Result<i32, Error> {
    rep.out().line("\n== lockstep bench --verify (the embedded default commands, real IREE compiler and runtime)");
    let cwd = std::env::current_dir()?;
    let loaded = crate::config::load(None, &cwd)?;
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
        max_bytes: None,
        iree_bin: None,
        command: Vec::new(),
    };
    run(args, &loaded, rep)
}

fn write(flag: &str, path: &Path, text: &str) -> Result<(), Error> {
    use lockstep_core::output::{write_as, Target};
    write_as(flag, &Target::parse(path), text.as_bytes())
}
