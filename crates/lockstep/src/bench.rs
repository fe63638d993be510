//! `lockstep bench`: turn the command line or commands file into jobs, resolve
//! the tools, run them through lockstep-bench, print BOO's lines and write the
//! reports.

use std::path::Path;
use std::time::Duration;

use lockstep_bench::run::{self, Job, Options};
use lockstep_bench::{commands, defaults, device, parse_argv, ElemType};
use lockstep_cache::{Area, Cache};
use lockstep_core::config::Loaded;
use lockstep_core::Error;

use lockstep_report::Reporters;

use crate::cli;

pub fn run(args: cli::BenchArgs, loaded: &Loaded, rep: &Reporters) -> Result<i32, Error> {
    let out = rep.out();
    let sink: &dyn lockstep_core::events::Sink = rep;
    let jobs = jobs(&args, sink)?;
    let bench_config = &loaded.config.bench;
    let device = device::resolve(args.device.as_deref(), bench_config)?;
    let timeout = match args.timeout {
        Some(secs) => Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                Error::usage(format!("invalid --timeout {secs}"))
                    .hint("give a positive number of seconds, e.g. --timeout 600")
            })?,
        None => bench_config.timeout.unwrap_or(Duration::from_secs(600)),
    };
    if let Some(value) = &args.splat_input_value {
        check_splat(value, &jobs)?;
    }
    if args.threads == Some(0) || args.jobs == Some(0) {
        return Err(Error::usage("-j and --threads must be at least 1"));
    }
    let tc = crate::toolchain::resolve(args.iree_bin.as_deref(), loaded, rep)?;
    let work = tempfile::Builder::new()
        .prefix("lockstep-bench-")
        .tempdir()
        .map_err(|e| Error::failed("cannot create a temporary directory").cause(e.to_string()))?;
    let cache = Cache::resolve(loaded);
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
        timeout,
        threads: args.threads,
        splat: args.splat_input_value.clone(),
        verify: args.verify,
        cache: cache.enabled(Area::Kernels),
        references: cache.enabled(Area::References),
        work_dir: work.path().to_path_buf(),
    };
    let mut last = None;
    let summary = run::run(&jobs, &opts, |row| {
        if last != Some(row.command) {
            out.line(&row.arguments);
            for note in &row.notes {
                match row.line {
                    Some(n) => sink.note(format!("note: line {n}: {note}")),
                    None => sink.note(format!("note: {note}")),
                }
            }
            last = Some(row.command);
        }
        for line in row.boo_lines() {
            out.line(line);
        }
    });
    if let Some(path) = &args.csv {
        write(path, &lockstep_bench::rows::csv(&summary.rows))?;
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&summary)
            .map_err(|e| Error::failed("cannot encode the results").cause(e.to_string()))?;
        write(path, &text)?;
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
    run(args, &loaded, rep)
}

/// The jobs: the single command (invalid → usage error), the commands file
/// (invalid lines become failed rows) or the embedded defaults.
fn jobs(args: &cli::BenchArgs, sink: &dyn lockstep_core::events::Sink) -> Result<Vec<Job>, Error> {
    if args.commands_file.is_some() {
        check_extra_flags(&args.command)?;
    } else if let Some(word) = args.command.first().filter(|w| w.starts_with('-')) {
        return Err(misplaced_option(word));
    }
    let (text, is_tsv, extra) = match &args.commands_file {
        Some(path) => {
            let text = fs_err::read_to_string(path).map_err(|e| {
                Error::usage(format!("cannot read the commands file {}", path.display()))
                    .cause(e.to_string())
                    .hint("pass an existing file with one MIOpenDriver command per line")
            })?;
            let is_tsv = path.extension().is_some_and(|e| e == "tsv");
            (text, is_tsv, args.command.clone())
        }
        None if args.command.is_empty() => (defaults::COMMANDS.to_string(), false, Vec::new()),
        None => {
            let (_, argv) = commands::strip_prefixes(args.command.clone());
            let arguments = shell_join(&argv);
            let parsed = parse_argv(&argv).map_err(|e| e.into_usage_error(&arguments))?;
            return Ok(vec![Job {
                line: None,
                arguments,
                parsed: Ok(parsed),
                repeat: None,
            }]);
        }
    };
    let lines = commands::parse_file(&text, is_tsv);
    if lines.is_empty() {
        if let Some(path) = &args.commands_file {
            sink.warn(format!(
                "{} has no commands (only blank lines and # comments)",
                path.display()
            ));
        }
    }
    Ok(lines
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
                arguments: shell_join(&argv),
                parsed: parse_argv(&argv).map_err(|e| e.reason),
                repeat: line.repeat,
            }
        })
        .collect())
}

/// The error for a lockstep option found where the MIOpen command should
/// start: a mistyped option, or a short option with its value attached.
fn misplaced_option(word: &str) -> Error {
    Error::usage(format!("`{word}` is not an option of lockstep bench")).hint(
        "lockstep's options go before the MIOpen command word and take their value as the \
         next word or after `=` (`-j 4`, `--jobs=4`); see `lockstep bench --help`",
    )
}

/// The words after `--commands-file FILE` go on every line, so each must be
/// a flag some MIOpen command knows: a mistyped lockstep option there would
/// otherwise fail every line.
fn check_extra_flags(extra: &[String]) -> Result<(), Error> {
    if extra.is_empty() {
        return Ok(());
    }
    let failures: Vec<String> = ["conv", "gemm", "layernorm"]
        .iter()
        .filter_map(|word| {
            let argv: Vec<String> = std::iter::once(word.to_string())
                .chain(extra.iter().cloned())
                .collect();
            parse_argv(&argv).err().map(|e| e.reason)
        })
        .filter(|reason| reason.contains("unknown flag"))
        .collect();
    if failures.len() < 3 {
        return Ok(());
    }
    Err(Error::usage(format!(
        "`{}` after --commands-file is not a MIOpen flag",
        extra.join(" ")
    ))
    .cause(failures[0].clone())
    .hint(
        "lockstep's options go before --commands-file's extra flags; the words after \
         `--` are MIOpen flags added to every line (e.g. `--commands-file cmds.txt -- -i 20`)",
    ))
}

/// `--splat-input-value` must be a number every input can hold: a finite
/// number, and an integer within int8's range when a kernel has int8 inputs.
fn check_splat(value: &str, jobs: &[Job]) -> Result<(), Error> {
    let bad = |why: &str| {
        Error::usage(format!("invalid --splat-input-value `{value}`: {why}"))
            .hint("give a number, e.g. --splat-input-value 1 (an integer for convint8)")
    };
    let number: f64 = value
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| bad("not a finite number"))?;
    let int8_inputs = jobs
        .iter()
        .filter_map(|job| job.parsed.as_ref().ok())
        .flat_map(|command| lockstep_bench::signatures(&command.op))
        .any(|sig| sig.inputs.iter().any(|o| o.elem == ElemType::I8));
    if int8_inputs && !(number.fract() == 0.0 && (-128.0..=127.0).contains(&number)) {
        return Err(bad("int8 inputs need an integer from -128 to 127"));
    }
    Ok(())
}

/// The words joined so that splitting them again gives the same words: a
/// word with blanks or quotes is quoted; MIOpen's `-!`, `-$` ... stay as
/// MIOpen writes them.
fn shell_join(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty() && !w.contains(|c: char| c.is_whitespace() || "'\"\\".contains(c)) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn write(path: &Path, text: &str) -> Result<(), Error> {
    lockstep_core::output::write(&lockstep_core::output::Target::parse(path), text.as_bytes())
}
