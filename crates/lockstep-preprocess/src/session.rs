//! One `lockstep preprocess` from request to result: the steps (`--with`
//! or `[preprocess] with`), the worker count, timeout, cache and the
//! machine-wide tool limit resolved and checked before anything runs, then
//! the direct form ([`direct`]) or the `--wrap` form ([`wrap`]). The binary
//! parses flags into a [`Request`] and prints.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::events::Sink;
use lockstep_core::output::Target;
use lockstep_core::words::count;
use lockstep_core::Error;
use lockstep_iree::Toolchain;

use crate::cache::Cache;
use crate::config::PreprocessConfig;
use crate::direct::{self, Direct, Report};
use crate::engine::{self, Options, WrapOptions};
use crate::limit::Limiter;
use crate::Step;

/// What a `lockstep preprocess` command line asks for (paths as given,
/// relative to `cwd`).
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub input: Option<PathBuf>,
    pub output: Option<PathBuf>,
    pub with: Vec<String>,
    pub with_shell: bool,
    pub jobs: Option<usize>,
    pub no_cache: bool,
    pub only: Option<String>,
    /// `--only-target REGEX`: only variants whose target matches.
    pub only_target: Option<String>,
    /// `--with-input PATH|GLOB`: files the tools read (their contents join
    /// the cache key).
    pub with_inputs: Vec<String>,
    /// `--no-batch`: a pass pipeline runs one iree-opt per executable.
    pub no_batch: bool,
    /// Seconds per tool process.
    pub timeout: Option<f64>,
    pub keep_temps: Option<PathBuf>,
    pub compile: Option<PathBuf>,
    pub wrap: bool,
    /// After `--`: iree-compile flags (direct form) or the tool's argv (`--wrap`).
    pub rest: Vec<String>,
}

/// Everything both forms share, resolved.
struct Common {
    jobs: usize,
    timeout: Option<Duration>,
    cache: Option<Cache>,
}

fn common(
    req: &Request,
    cfg: &PreprocessConfig,
    cache: &lockstep_cache::Cache,
) -> Result<Common, Error> {
    let jobs = match req.jobs {
        Some(_) => lockstep_core::pool::jobs(req.jobs, "-j")?,
        None => lockstep_core::pool::jobs(cfg.jobs, "[preprocess] jobs")?,
    };
    let timeout = match req.timeout {
        Some(s) => Some(lockstep_core::config::seconds("--timeout", s)?),
        None => cfg.timeout,
    };
    Ok(Common {
        jobs,
        timeout,
        cache: (!req.no_cache).then(|| Cache::new(cache)),
    })
}

/// The direct form, checked: what runs once the toolchain is known.
pub struct Prepared {
    input: PathBuf,
    output: Target,
    steps: Vec<Step>,
    only: Option<regex::Regex>,
    only_target: Option<regex::Regex>,
    batch: bool,
    common: Common,
    keep_temps: Option<PathBuf>,
    compile: Option<PathBuf>,
    flags: Vec<String>,
    cwd: PathBuf,
}

/// Checks the direct form of `req` (`root`: lockstep.toml's directory,
/// which `[preprocess] with` tool paths are relative to).
pub fn prepare(
    req: &Request,
    cfg: &PreprocessConfig,
    cache: &lockstep_cache::Cache,
    root: &Path,
    cwd: &Path,
) -> Result<Prepared, Error> {
    let common = common(req, cfg, cache)?;
    let (Some(input), Some(output)) = (&req.input, &req.output) else {
        return Err(Error::usage("INPUT and -o OUTPUT are required")
            .hint("lockstep preprocess INPUT -o OUTPUT --with CMD"));
    };
    // --with replaces the configured steps; those resolve their tool paths
    // against lockstep.toml's directory.
    let (with, shell, base) = if req.with.is_empty() {
        (&cfg.with, cfg.with_shell, root)
    } else {
        (&req.with, req.with_shell, cwd)
    };
    if with.is_empty() {
        return Err(Error::usage("nothing to run: no --with command given")
            .hint("add --with 'TOOL ARGS' (stdin to stdout) or --with 'builtin.module(PASSES)', or set [preprocess] with in lockstep.toml"));
    }
    let inputs = declared_inputs(&req.with_inputs, cwd)?;
    let steps = with
        .iter()
        .map(|w| Step::parse(w, shell, base).map(|s| s.reading(&inputs)))
        .collect::<Result<Vec<_>, _>>()?;
    let only = req.only.as_deref().map(engine::only).transpose()?;
    let only_target = req
        .only_target
        .as_deref()
        .map(engine::only_target)
        .transpose()?;
    let keep_temps = req.keep_temps.as_ref().map(|d| cwd.join(d));
    if let Some(dir) = &keep_temps {
        keep_temps_dir(dir)?;
    }
    Ok(Prepared {
        input: input.clone(),
        output: Target::parse(output),
        steps,
        only,
        only_target,
        batch: !req.no_batch,
        common,
        keep_temps,
        compile: req.compile.clone(),
        flags: req.rest.clone(),
        cwd: cwd.to_path_buf(),
    })
}

/// The files `--with-input` names (paths or globs, relative to `cwd`),
/// sorted: each must exist as a regular file, each glob match at least one;
/// a directory is refused (name its files with a glob).
fn declared_inputs(patterns: &[String], cwd: &Path) -> Result<Vec<PathBuf>, Error> {
    const MAX_INPUTS: usize = 10_000;
    let mut files = Vec::new();
    for pattern in patterns {
        let full = cwd.join(pattern);
        let text = full.to_string_lossy().into_owned();
        let is_glob = pattern.contains(['*', '?', '[']);
        let matched: Vec<PathBuf> = if is_glob {
            glob::glob(&text)
                .map_err(|e| {
                    Error::usage(format!("--with-input {pattern}: not a glob pattern: {e}"))
                        .hint("write a path or a glob such as 'kernels/*.c' or 'tables/**/*.json'")
                })?
                .filter_map(Result::ok)
                .filter(|p| p.is_file())
                .collect()
        } else if full.exists() {
            vec![full.clone()]
        } else {
            return Err(Error::usage(format!(
                "--with-input {pattern}: no such file ({})",
                full.display()
            ))
            .hint("declare the files your tool reads, relative to the current directory; nothing was run"));
        };
        if matched.is_empty() {
            return Err(Error::usage(format!("--with-input {pattern} matches no file"))
                .hint("declare the files your tool reads, relative to the current directory; nothing was run"));
        }
        for path in matched {
            let meta = std::fs::metadata(&path).map_err(|e| {
                Error::usage(format!("--with-input {}: {e}", path.display()))
                    .hint("declare files that exist (the tool reads them); nothing was run")
            })?;
            if !meta.is_file() {
                return Err(Error::usage(format!(
                    "--with-input {} is not a regular file",
                    path.display()
                ))
                .hint("name the files themselves, or a glob such as 'DIR/**/*'; nothing was run"));
            }
            files.push(path);
        }
        if files.len() > MAX_INPUTS {
            return Err(
                Error::usage(format!("--with-input names more than {MAX_INPUTS} files"))
                    .hint("declare the files the tool reads, not a whole tree"),
            );
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// `--keep-temps DIR` must be a directory or not exist yet (it is created
/// with its parents): a file, a device or a link to nothing there is a
/// usage error before anything runs, not "kept in FILE" with nothing kept.
fn keep_temps_dir(dir: &Path) -> Result<(), Error> {
    use std::os::unix::fs::FileTypeExt;
    let what = match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(meta) if meta.is_file() => "a regular file",
        Ok(meta) if meta.file_type().is_fifo() => "a FIFO",
        Ok(meta) if meta.file_type().is_char_device() || meta.file_type().is_block_device() => {
            "a device"
        }
        Ok(_) => "a socket or other special file",
        Err(_) if std::fs::symlink_metadata(dir).is_ok() => "a symbolic link to nothing",
        Err(_) => return Ok(()),
    };
    Err(Error::usage(format!(
        "--keep-temps {} is {what}, not a directory",
        dir.display()
    ))
    .hint("name a directory for the inputs and outputs to be kept in (it is created if missing); nothing was run"))
}

/// Runs the direct form with `toolchain`; says what it did as a note.
pub fn run(p: Prepared, toolchain: &Toolchain, sink: &dyn Sink) -> Result<Report, Error> {
    let limiter = Limiter::from_env(
        std::env::var("MAKEFLAGS").ok().as_deref(),
        &lockstep_core::paths::tokens(),
        p.common.jobs,
        std::process::id(),
    )?;
    let opts = Options {
        steps: &p.steps,
        jobs: p.common.jobs,
        cache: p.common.cache,
        only: p.only,
        only_target: p.only_target,
        batch: p.batch,
        timeout: p.common.timeout,
        keep_temps: p.keep_temps,
        runs_dir: lockstep_core::paths::preprocess_runs(),
        toolchain: Some(toolchain),
        cwd: p.cwd,
        limiter: &limiter,
    };
    let report = direct::run(
        &Direct {
            input: &p.input,
            output: &p.output,
            compile: p.compile.as_deref(),
            flags: &p.flags,
            toolchain,
        },
        &opts,
        sink,
    )?;
    let outcome = &report.outcome;
    let selected = outcome.executables.iter().filter(|e| e.selected).count();
    let changed = outcome.executables.iter().filter(|e| e.changed).count();
    let batched = match outcome.batches {
        0 => String::new(),
        n => format!(
            " ({} of them in {})",
            outcome.batched,
            count(n, "batched iree-opt", "batched iree-opts")
        ),
    };
    sink.note(format!(
        "preprocessed {selected} of {} with {}: {}{batched}, {} cached, {changed} changed; {:.2}s ({:.2}s in tools, limit {})",
        count(outcome.executables.len(), "executable", "executables"),
        count(p.steps.len(), "command", "commands"),
        count(outcome.ran, "tool run", "tool runs"),
        outcome.cached,
        report.wall_seconds,
        outcome.tool_seconds,
        outcome.limiter,
    ));
    if let Some(dir) = &outcome.kept {
        sink.note(format!("inputs and outputs kept in {}", dir.display()));
    }
    Ok(report)
}

/// The `--wrap` form: one executable from `stdin` through the tool after
/// `--`, written to `stdout`.
pub fn wrap(
    req: &Request,
    cfg: &PreprocessConfig,
    cache: &lockstep_cache::Cache,
    cwd: &Path,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
) -> Result<(), Error> {
    let common = common(req, cfg, cache)?;
    if req.input.is_some() || req.output.is_some() || !req.with.is_empty() || req.compile.is_some()
    {
        return Err(Error::usage("--wrap takes its command after `--`, not INPUT, -o, --with or --compile")
            .hint("--iree-hal-preprocess-executables-with=\"lockstep preprocess --wrap -j 4 -- my-tool ARGS\""));
    }
    let Some(program) = req.rest.first() else {
        return Err(Error::usage("--wrap needs the tool to run after `--`")
            .hint("lockstep preprocess --wrap -- my-tool ARGS"));
    };
    if program.starts_with("builtin.module") {
        return Err(Error::usage("--wrap runs tools, not pass pipelines")
            .hint("give the pipeline to iree-compile directly: --iree-hal-preprocess-executables-with='builtin.module(...)'"));
    }
    let step = if req.with_shell {
        Step::tool(vec!["sh".into(), "-c".into(), req.rest.join(" ")], cwd)?
    } else {
        Step::tool(req.rest.clone(), cwd)?
    };
    // make's implicit token belongs to the job iree-compile runs in: the
    // wrappers iree-compile starts share it.
    let limiter = Limiter::from_env(
        std::env::var("MAKEFLAGS").ok().as_deref(),
        &lockstep_core::paths::tokens(),
        common.jobs,
        std::os::unix::process::parent_id(),
    )?;
    let mut input = String::new();
    stdin
        .read_to_string(&mut input)
        .map_err(|e| Error::failed("cannot read the executable on stdin").cause(e.to_string()))?;
    let out = engine::wrap(
        &input,
        &WrapOptions {
            step: &step,
            cache: common.cache,
            timeout: common.timeout,
            runs_dir: lockstep_core::paths::preprocess_runs(),
            cwd: cwd.to_path_buf(),
            limiter: &limiter,
        },
    )?;
    stdout
        .write_all(out.as_bytes())
        .map_err(|e| Error::failed("cannot write the executable to stdout").cause(e.to_string()))
}
