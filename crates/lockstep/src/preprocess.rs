//! `lockstep preprocess`: resolve options, call lockstep-preprocess (the
//! direct form, or the `--wrap` form), print the summary, write the results.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::events::Sink;
use lockstep_core::output::{self, Target};
use lockstep_core::Error;
use lockstep_preprocess::cache::Cache;
use lockstep_preprocess::direct::{self, Direct};
use lockstep_preprocess::engine::{self, Options, WrapOptions};
use lockstep_preprocess::limit::Limiter;
use lockstep_preprocess::Step;
use lockstep_report::Reporters;

use crate::cli::PreprocessArgs;

pub fn run(
    args: PreprocessArgs,
    config: Option<&Path>,
    cwd: &Path,
    rep: &Reporters,
) -> Result<i32, Error> {
    let sink: &dyn Sink = rep;
    let loaded = crate::config::load(config, cwd)?;
    let defaults: lockstep_preprocess::config::PreprocessConfig = loaded.section()?;
    let defaults = &defaults;
    let jobs = match args.jobs {
        Some(_) => lockstep_core::pool::jobs(args.jobs, "-j")?,
        None => lockstep_core::pool::jobs(defaults.jobs, "[preprocess] jobs")?,
    };
    let timeout = match args.timeout {
        Some(s) => Some(lockstep_core::config::seconds("--timeout", s)?),
        None => defaults.timeout,
    };
    let tokens = lockstep_core::paths::tokens();
    let runs_dir = lockstep_core::paths::preprocess_runs();
    let cache = match args.no_cache {
        true => None,
        false => Some(Cache::new(&crate::config::cache(&loaded)?)),
    };
    let makeflags = std::env::var("MAKEFLAGS").ok();
    if args.wrap {
        return wrap(
            &args,
            jobs,
            timeout,
            cache,
            runs_dir,
            &tokens,
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
    let tc = crate::toolchain::resolve(args.iree_bin.as_deref(), &loaded, rep)?;
    let limiter = Limiter::from_env(makeflags.as_deref(), &tokens, jobs, std::process::id())?;
    let opts = Options {
        steps: &steps,
        jobs,
        cache,
        only,
        timeout,
        keep_temps: args.keep_temps.as_ref().map(|d| cwd.join(d)),
        runs_dir,
        toolchain: Some(&tc),
        cwd: cwd.to_path_buf(),
        limiter: &limiter,
    };
    let output = Target::parse(output);
    let direct = Direct {
        input,
        output: &output,
        compile: args.compile.as_deref(),
        flags: &args.rest,
        toolchain: &tc,
    };
    let report = direct::run(&direct, &opts, sink)?;
    let outcome = &report.outcome;
    let selected = outcome.executables.iter().filter(|e| e.selected).count();
    let changed = outcome.executables.iter().filter(|e| e.changed).count();
    sink.note(format!(
        "preprocessed {selected} of {} executables with {} command{}: {} tool runs, {} cached, {changed} changed; {:.2}s ({:.2}s in tools, limit {})",
        outcome.executables.len(),
        steps.len(),
        if steps.len() == 1 { "" } else { "s" },
        outcome.ran,
        outcome.cached,
        report.wall_seconds,
        outcome.tool_seconds,
        outcome.limiter,
    ));
    if let Some(dir) = &outcome.kept {
        sink.note(format!("inputs and outputs kept in {}", dir.display()));
    }
    if let Some(json) = &args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| Error::failed("cannot encode the results as JSON").cause(e.to_string()))?;
        output::write_as(
            "--json",
            &Target::parse(json),
            format!("{text}\n").as_bytes(),
        )?;
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
    tokens: &Path,
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
    let limiter = Limiter::from_env(makeflags, tokens, jobs, std::os::unix::process::parent_id())?;
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
