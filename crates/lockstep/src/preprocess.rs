//! `lockstep preprocess`: resolve options, dispatch to lockstep-preprocess,
//! print the summary, write the output and the JSON results.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lockstep_core::events::{Event, EventSink};
use lockstep_core::Error;
use lockstep_preprocess::cache::Cache;
use lockstep_preprocess::engine::{self, Options, Phase, WrapOptions};
use lockstep_preprocess::limit::Limiter;
use lockstep_preprocess::{scan, Step};

use crate::cli::PreprocessArgs;
use crate::output::Console;

pub fn run(args: PreprocessArgs, config: Option<&Path>, cwd: &Path) -> Result<i32, Error> {
    let loaded = lockstep_core::config::load(config, cwd)?;
    let defaults = &loaded.config.preprocess;
    let jobs =
        match args.jobs.or(defaults.jobs) {
            Some(0) => return Err(Error::usage("-j 0: at least one job is needed").hint(
                "pass -j N with N >= 1 (or set [preprocess] jobs), or omit it to use every core",
            )),
            Some(n) => n,
            None => std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
        };
    let timeout = match args.timeout {
        Some(s) if !(s > 0.0 && s.is_finite()) => {
            return Err(Error::usage(format!("invalid --timeout {s}"))
                .hint("give a number of seconds greater than 0, e.g. --timeout 30"))
        }
        Some(s) => Some(Duration::from_secs_f64(s)),
        None => defaults.timeout,
    };
    let home = lockstep_core::paths::home();
    let runs_dir = home.join("preprocess").join("runs");
    let cache = (!args.no_cache).then(|| Cache::new(&lockstep_cache::Cache::resolve(&loaded)));
    let makeflags = std::env::var("MAKEFLAGS").ok();
    if args.wrap {
        return wrap(
            &args,
            jobs,
            timeout,
            cache,
            runs_dir,
            &home,
            makeflags.as_deref(),
            cwd,
        );
    }
    let (Some(input), Some(output)) = (&args.input, &args.output) else {
        return Err(Error::usage("INPUT and -o OUTPUT are required")
            .hint("lockstep preprocess INPUT -o OUTPUT --with CMD"));
    };
    // --with replaces the configured steps; those resolve their tool paths
    // against lockstep.toml's directory.
    let (with, shell, base) = if args.with.is_empty() {
        (&defaults.with, defaults.with_shell, loaded.root.as_path())
    } else {
        (&args.with, args.with_shell, cwd)
    };
    if with.is_empty() {
        return Err(Error::usage("nothing to run: no --with command given")
            .hint("add --with 'TOOL ARGS' (stdin to stdout) or --with 'builtin.module(PASSES)', or set [preprocess] with in lockstep.toml"));
    }
    let steps = with
        .iter()
        .map(|w| Step::parse(w, shell, base))
        .collect::<Result<Vec<_>, _>>()?;
    let only = args.only.as_deref().map(engine::only).transpose()?;
    let console = Console::new();
    let tc = crate::toolchain::resolve(args.iree_bin.as_deref(), &loaded, &console)?;
    let iree_opt = tc.tool("iree-opt")?;
    let started = Instant::now();
    let bytes = fs_err::read(input).map_err(|e| {
        Error::usage(format!("cannot read {}", input.display()))
            .cause(e.to_string())
            .hint("pass an existing MLIR file as INPUT")
    })?;
    let work = runs_dir
        .join(format!(
            "{}-compile",
            jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S%.3f")
        ))
        .join(std::process::id().to_string());
    // At the executable-sources phase already, or a source program? The scan
    // that decides is the one the engine uses.
    let scanned = String::from_utf8(bytes).ok().and_then(|t| {
        let module = scan::scan(&t).ok().filter(|m| !m.executables.is_empty())?;
        Some((t, module))
    });
    let (text, module) = match scanned {
        Some(x) => x,
        None => {
            console.emit(Event::Info {
                message: format!(
                    "compiling {} to the executable-sources phase",
                    input.display()
                ),
            });
            let sources = work.join("executable-sources.mlir");
            engine::compile(
                &tc.tool("iree-compile")?,
                Phase::To,
                input,
                &args.rest,
                &sources,
                &work,
                cwd,
            )?;
            let text = fs_err::read_to_string(&sources)?;
            let module = engine::scan_module(&text)?;
            (text, module)
        }
    };
    let limiter = Limiter::from_env(makeflags.as_deref(), &home, jobs, std::process::id())?;
    let opts = Options {
        steps: &steps,
        jobs,
        cache,
        only,
        timeout,
        keep_temps: args.keep_temps.as_ref().map(|d| cwd.join(d)),
        runs_dir: runs_dir.clone(),
        iree_opt: Some((iree_opt, tc.identity.clone())),
        cwd: cwd.to_path_buf(),
        limiter: &limiter,
    };
    let outcome = engine::preprocess_scanned(&text, &module, &opts, &console)?;
    let out_path = if output.as_os_str() == "-" {
        std::io::stdout()
            .lock()
            .write_all(outcome.text.as_bytes())
            .map_err(|e| Error::failed("cannot write the output to stdout").cause(e.to_string()))?;
        None
    } else {
        let path = cwd.join(output);
        lockstep_core::cache::write_atomic(&path, outcome.text.as_bytes())?;
        Some(path)
    };
    if let Some(vmfb) = &args.compile {
        let source = match &out_path {
            Some(p) => p.clone(),
            None => {
                fs_err::create_dir_all(&work)?;
                let p = work.join("preprocessed.mlir");
                fs_err::write(&p, &outcome.text)?;
                p
            }
        };
        console.emit(Event::Info {
            message: format!("compiling to {}", vmfb.display()),
        });
        engine::compile(
            &tc.tool("iree-compile")?,
            Phase::From,
            &source,
            &args.rest,
            &cwd.join(vmfb),
            &work,
            cwd,
        )?;
    }
    let _ = std::fs::remove_dir_all(work.parent().unwrap_or(&work));
    let selected = outcome.executables.iter().filter(|e| e.selected).count();
    let changed = outcome.executables.iter().filter(|e| e.changed).count();
    let wall = started.elapsed().as_secs_f64();
    eprintln!(
        "preprocessed {selected} of {} executables with {} command{}: {} tool runs, {} cached, {changed} changed; {:.2}s ({:.2}s in tools, limit {})",
        outcome.executables.len(),
        steps.len(),
        if steps.len() == 1 { "" } else { "s" },
        outcome.ran,
        outcome.cached,
        wall,
        outcome.tool_seconds,
        outcome.limiter,
    );
    if let Some(dir) = &outcome.kept {
        eprintln!("inputs and outputs kept in {}", dir.display());
    }
    if let Some(json) = &args.json {
        let mut value = serde_json::to_value(&outcome)
            .map_err(|e| Error::failed("cannot encode the results as JSON").cause(e.to_string()))?;
        value["output"] = serde_json::json!(out_path.as_ref().map(|p| p.display().to_string()));
        value["compiled"] =
            serde_json::json!(args.compile.as_ref().map(|p| p.display().to_string()));
        value["wall_seconds"] = serde_json::json!(wall);
        let text = serde_json::to_string_pretty(&value)
            .map_err(|e| Error::failed("cannot encode the results as JSON").cause(e.to_string()))?;
        fs_err::write(cwd.join(json), text + "\n")?;
    }
    Ok(0)
}

#[allow(clippy::too_many_arguments)]
fn wrap(
    args: &PreprocessArgs,
    jobs: usize,
    timeout: Option<Duration>,
    cache: Option<Cache>,
    runs_dir: PathBuf,
    home: &Path,
    makeflags: Option<&str>,
    cwd: &Path,
) -> Result<i32, Error> {
    if args.input.is_some()
        || args.output.is_some()
        || !args.with.is_empty()
        || args.compile.is_some()
    {
        return Err(Error::usage("--wrap takes its command after `--`, not INPUT, -o, --with or --compile")
            .hint("--iree-hal-preprocess-executables-with=\"lockstep preprocess --wrap -j 4 -- my-tool ARGS\""));
    }
    if args.rest.is_empty() {
        return Err(Error::usage("--wrap needs the tool to run after `--`")
            .hint("lockstep preprocess --wrap -- my-tool ARGS"));
    }
    if args.rest[0].starts_with("builtin.module") {
        return Err(Error::usage("--wrap runs tools, not pass pipelines")
            .hint("give the pipeline to iree-compile directly: --iree-hal-preprocess-executables-with='builtin.module(...)'"));
    }
    let step = if args.with_shell {
        Step::tool(vec!["sh".into(), "-c".into(), args.rest.join(" ")], cwd)?
    } else {
        Step::tool(args.rest.clone(), cwd)?
    };
    // make's implicit token belongs to the job iree-compile runs in: the
    // wrappers iree-compile starts share it.
    let limiter = Limiter::from_env(makeflags, home, jobs, std::os::unix::process::parent_id())?;
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| Error::failed("cannot read the executable on stdin").cause(e.to_string()))?;
    let out = engine::wrap(
        &input,
        &WrapOptions {
            step: &step,
            cache,
            timeout,
            runs_dir,
            cwd: cwd.to_path_buf(),
            limiter: &limiter,
        },
    )?;
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(|e| Error::failed("cannot write the executable to stdout").cause(e.to_string()))?;
    Ok(0)
}
