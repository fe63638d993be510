//! The engine: each selected `hal.executable` through the steps in order
//! (cache, permit, tool, checks), spliced back; one `iree-opt` parse of the
//! result at the end. Also the `--wrap` form (one executable from stdin).
//! The direct form's iree-compile phases around it are [`crate::direct`]'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lockstep_core::events::Sink;
use lockstep_core::process::{self, Exit};
use lockstep_core::words::count;
use lockstep_core::Error;
use lockstep_iree::Toolchain;
use serde::Serialize;

use crate::cache::{self, Cache};
use crate::events::PreprocessEvent;
use crate::exec::{self, tail_lines};
use crate::limit::Limiter;
use crate::scan::{self, Module};
use crate::step::Step;

/// How many stderr lines an error shows.
pub(crate) const STDERR_LINES: usize = 12;

/// Limit for a whole-module iree-compile phase, and for the final iree-opt
/// parse when no --timeout is given: whole modules, not single executables.
pub(crate) const WHOLE_MODULE_TIMEOUT: Duration = Duration::from_secs(600);

/// The final parse gets at least this long even under a short per-tool
/// --timeout, which is sized for one executable.
const MIN_PARSE_TIMEOUT: Duration = Duration::from_secs(60);

/// What `lockstep preprocess` (the direct form) needs.
pub struct Options<'a> {
    /// In order; none leaves the input unchanged (the binary refuses that
    /// with a hint before compiling anything).
    pub steps: &'a [Step],
    /// Worker threads (tool processes are bounded by `limiter` too).
    pub jobs: usize,
    pub cache: Option<Cache>,
    /// Only executables whose symbol matches get the steps.
    pub only: Option<regex::Regex>,
    /// Only variants whose target matches get the steps (the others are
    /// held back and put back byte for byte: [`crate::variants`]).
    pub only_target: Option<regex::Regex>,
    /// Run a pass pipeline over all executables with one `iree-opt`
    /// (`false`: one per executable, `--no-batch`).
    pub batch: bool,
    pub timeout: Option<Duration>,
    /// Keep every executable's inputs and outputs here.
    pub keep_temps: Option<PathBuf>,
    /// Parent of run directories (kept after a failure), e.g. `$LOCKSTEP_HOME/preprocess/runs`.
    pub runs_dir: PathBuf,
    /// The IREE tools: iree-opt for pipelines, normalising outputs and
    /// validating the result (its identity keys the cache).
    pub toolchain: Option<&'a Toolchain>,
    pub cwd: PathBuf,
    pub limiter: &'a Limiter,
}

/// One step on one executable.
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    pub command: String,
    pub cached: bool,
    /// Time inside the tool processes (0 for a cache hit; a batched
    /// pipeline's time shared out evenly).
    pub tool_seconds: f64,
    /// Run in one iree-opt with the other executables of its batch.
    pub batched: bool,
}

/// One executable.
#[derive(Debug, Clone, Serialize)]
pub struct ExecutableReport {
    pub symbol: String,
    /// Whether `--only` selected it.
    pub selected: bool,
    /// Whether its text changed.
    pub changed: bool,
    pub steps: Vec<StepReport>,
}

/// The result of [`preprocess`].
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    #[serde(skip)]
    pub text: String,
    pub executables: Vec<ExecutableReport>,
    /// Tool processes run / steps answered from the cache.
    pub ran: usize,
    pub cached: usize,
    /// Sum of the time inside tool processes.
    pub tool_seconds: f64,
    /// Whether the result was parsed with iree-opt (skipped when nothing changed).
    pub validated: bool,
    pub validate_seconds: f64,
    pub seconds: f64,
    /// Where inputs and outputs were kept (`--keep-temps`).
    pub kept: Option<PathBuf>,
    /// Pipeline steps run together in one iree-opt per batch, and how
    /// many such processes ran.
    pub batched: usize,
    pub batches: usize,
    pub limiter: String,
}

/// A step that failed on one executable.
#[derive(Debug, Clone)]
struct Failure {
    symbol: String,
    step: usize,
    steps: usize,
    command: String,
    what: String,
    exit: Option<String>,
    stderr: Vec<String>,
    /// (label, path) of kept files.
    kept: Vec<(&'static str, PathBuf)>,
    /// Files that could not be kept, each with its error (naming the file).
    not_kept: Vec<String>,
    /// How to rerun it by hand.
    rerun: Option<String>,
}

impl Failure {
    fn into_error(self) -> Error {
        let mut err = Error::failed(format!(
            "preprocessing executable @{} failed: {}",
            self.symbol, self.what
        ))
        .cause(if self.steps > 1 {
            format!(
                "command (step {} of {}): {}",
                self.step, self.steps, self.command
            )
        } else {
            format!("command: {}", self.command)
        });
        if let Some(exit) = &self.exit {
            err = err.cause(format!("exit: {exit}"));
        }
        if self.stderr.is_empty() {
            err = err.cause("stderr: (empty)");
        } else {
            err = err.cause(format!(
                "stderr (last {}):",
                count(self.stderr.len(), "line", "lines")
            ));
            for line in &self.stderr {
                err = err.cause(format!("  {line}"));
            }
        }
        for (label, path) in &self.kept {
            err = err.cause(format!("{label} kept at {}", path.display()));
        }
        for line in &self.not_kept {
            err = err.cause(format!("not kept: {line}"));
        }
        match self.rerun {
            Some(rerun) => err.hint(format!("reproduce it with: {rerun}")),
            None => err.hint("look at the kept files, fix the tool, and run again"),
        }
    }
}

/// The shared per-step machinery of both forms.
struct Ctx<'a> {
    steps: &'a [Step],
    cache: Option<&'a Cache>,
    timeout: Option<Duration>,
    toolchain: Option<&'a Toolchain>,
    cwd: &'a Path,
    limiter: &'a Limiter,
    /// The original module (for alias definitions and resources).
    module: &'a Module,
    text: &'a str,
    /// `--wrap`: the tool's output is returned as printed (the compiler parses it).
    raw_output: bool,
    /// Keep cache hits' inputs and outputs too.
    keep_all: bool,
    /// Batched iree-opt processes run ([`Ctx::batched`]).
    batches: std::sync::atomic::AtomicUsize,
}

struct Done {
    /// The replacement op text (no trailing newline), or the raw output in wrap form.
    output: String,
    steps: Vec<StepReport>,
}

impl Ctx<'_> {
    /// Runs every step on one executable (without the variants `held`
    /// back, put back at the end). `dir` holds its temporary files.
    fn process(
        &self,
        symbol: &str,
        op: &str,
        held: Option<&crate::variants::Held>,
        dir: &Path,
    ) -> Result<Done, Box<Failure>> {
        let mut current = held.map_or(op, |h| h.given.as_str()).to_string();
        let mut raw = String::new();
        let mut reports = Vec::with_capacity(self.steps.len());
        for k in 0..self.steps.len() {
            let (out, report) = self.step(k, symbol, &current, dir)?;
            if self.raw_output {
                raw = out;
            } else {
                current = out.trim_end().to_string();
            }
            reports.push(report);
        }
        if let Some(held) = held {
            current = self.restore(symbol, &current, held)?;
        }
        Ok(Done {
            output: if self.raw_output { raw } else { current },
            steps: reports,
        })
    }

    /// The held variants put back around `current`.
    fn restore(
        &self,
        symbol: &str,
        current: &str,
        held: &crate::variants::Held,
    ) -> Result<String, Box<Failure>> {
        crate::variants::restore(current, held).map_err(|e| {
            Box::new(Failure {
                symbol: symbol.to_string(),
                step: self.steps.len(),
                steps: self.steps.len(),
                command: self.steps.last().map(Step::display).unwrap_or_default(),
                what: format!("cannot put back the variants --only-target held: {e}"),
                exit: None,
                stderr: Vec::new(),
                kept: Vec::new(),
                not_kept: Vec::new(),
                rerun: None,
            })
        })
    }

    /// Runs step `k` (0-based) on one executable whose text is `current`:
    /// the step's output (the checked op text, or the raw output in wrap
    /// form) and its report. `dir` holds its temporary files.
    fn step(
        &self,
        k: usize,
        symbol: &str,
        current: &str,
        dir: &Path,
    ) -> Result<(String, StepReport), Box<Failure>> {
        let step = &self.steps[k];
        // Before or around a step's tool (no exit status, no stderr).
        let fail_setup = |n: usize, what: String, e: Error| {
            Box::new(Failure {
                symbol: symbol.to_string(),
                step: n,
                steps: self.steps.len(),
                command: self.steps[n - 1].display(),
                what: format!("{what}: {e}"),
                exit: None,
                stderr: Vec::new(),
                kept: Vec::new(),
                not_kept: Vec::new(),
                rerun: None,
            })
        };
        let n = k + 1;
        let input = if self.raw_output {
            self.text.to_string()
        } else {
            scan::self_contained_op(self.text, self.module, current).map_err(|e| {
                fail_setup(
                    n,
                    "cannot assemble its input".into(),
                    Error::failed(e.describe(current)),
                )
            })?
        };
        let iree_id = self.toolchain.map(|t| t.identity.as_str()).unwrap_or("");
        let key = cache::key(&input, &step.key_material(self.raw_output, iree_id));
        let in_path = dir.join(format!("{n}.in.mlir"));
        let out_path = dir.join(format!("{n}.out.mlir"));
        let err_path = dir.join(format!("{n}.err.txt"));
        // Files are written only when the step fails or --keep-temps
        // asks: the tool reads and writes pipes (exec.rs says why).
        // Each is bounded (exec::MAX_STDOUT, exec::MAX_STDERR); one that
        // cannot be written (a full disk, `ulimit -f`) is named.
        let write_kept = |files: &[(&'static str, &PathBuf, &[u8])]| {
            let mut kept = Vec::new();
            let mut errors = Vec::new();
            if let Err(e) = fs_err::create_dir_all(dir) {
                errors.push(e.to_string());
                return (kept, errors);
            }
            for (label, path, bytes) in files {
                match exec::write_kept(path, bytes) {
                    Ok(()) => kept.push((*label, (*path).clone())),
                    Err(e) => errors.push(format!("{label}: {e}")),
                }
            }
            (kept, errors)
        };
        // --keep-temps asked for them: a file that cannot be kept fails the step.
        let keep_or_fail = |files: &[(&'static str, &PathBuf, &[u8])]| {
            let (_, errors) = write_kept(files);
            match errors.is_empty() {
                true => Ok(()),
                false => Err(fail_setup(
                    n,
                    "cannot keep its files (--keep-temps)".into(),
                    Error::failed(errors.join("; ")),
                )),
            }
        };
        let hit = self
            .cache
            .and_then(|c| c.get(&key))
            .filter(|h| h.objects_unchanged());
        if let Some(hit) = hit {
            if self.keep_all {
                keep_or_fail(&[
                    ("input", &in_path, input.as_bytes()),
                    ("output", &out_path, hit.output.as_bytes()),
                ])?;
                self.keep_objects(&hit.objects, dir).map_err(|e| {
                    fail_setup(n, "cannot keep its objects (--keep-temps)".into(), e)
                })?;
            }
            let hit = hit.output;
            let report = StepReport {
                command: step.display(),
                cached: true,
                tool_seconds: 0.0,
                batched: false,
            };
            return Ok((hit, report));
        }
        let failure = |what: String, exit: Option<Exit>, output: Option<&[u8]>, stderr: &[u8]| {
            let mut files = vec![("input", &in_path, input.as_bytes())];
            if let Some(output) = output {
                files.push(("output", &out_path, output));
            }
            files.push(("stderr", &err_path, stderr));
            let (kept, not_kept) = write_kept(&files);
            Box::new(Failure {
                symbol: symbol.to_string(),
                step: n,
                steps: self.steps.len(),
                command: step.display(),
                what,
                exit: exit.map(|e| e.describe()),
                stderr: tail_lines(stderr, STDERR_LINES),
                kept,
                not_kept,
                rerun: Some(rerun_line(step, self, &in_path)),
            })
        };
        let (program, mut argv) = match self.argv(step) {
            Ok(x) => x,
            Err(e) => return Err(failure(e.to_string(), None, None, &[])),
        };
        if step.is_pipeline() && !input.contains("loc(") {
            // No debug locations in: print none (iree-opt would invent `<stdin>` ones).
            argv.retain(|a| a != "--mlir-print-debuginfo");
        }
        let ran = self
            .run_limited(&program, &argv, input.as_bytes())
            .map_err(|e| match e {
                NotRun::Permit(e) => fail_setup(n, "cannot get a permit to run".into(), e),
                NotRun::Run(e) => failure(e.to_string(), None, None, &[]),
            })?;
        // A kept output the tool was stopped in says so at its end.
        let shown_stdout: std::borrow::Cow<[u8]> = if ran.stdout_truncated {
            let mut cut = ran.stdout.clone();
            cut.extend_from_slice(exec::stdout_cut_marker().as_bytes());
            cut.into()
        } else {
            (&ran.stdout[..]).into()
        };
        if self.keep_all {
            keep_or_fail(&[
                ("input", &in_path, input.as_bytes()),
                ("output", &out_path, &shown_stdout),
                ("stderr", &err_path, &ran.stderr),
            ])?;
        }
        let mut report = StepReport {
            command: step.display(),
            cached: false,
            tool_seconds: ran.elapsed.as_secs_f64(),
            batched: false,
        };
        let tool_failed =
            |what: String| failure(what, Some(ran.exit), Some(&shown_stdout), &ran.stderr);
        if ran.stdout_truncated {
            // Before the exit status: the kill that stopped it is lockstep's.
            return Err(tool_failed(format!(
                "the tool printed more than {} bytes on stdout and was stopped (the output is kept up to there)",
                exec::MAX_STDOUT
            )));
        }
        match ran.exit {
            Exit::Code(0) => {}
            Exit::TimedOut => {
                let secs = self.timeout.map(|t| t.as_secs_f64()).unwrap_or(0.0);
                return Err(tool_failed(format!(
                    "the tool did not finish within {secs}s and was killed"
                )));
            }
            other => {
                return Err(tool_failed(format!(
                    "the tool failed ({})",
                    other.describe()
                )))
            }
        }
        let Ok(out_text) = std::str::from_utf8(&ran.stdout) else {
            return Err(tool_failed(
                "the tool printed bytes that are not UTF-8 text".into(),
            ));
        };
        let checked = match check_output(out_text, symbol, self.module, self.text, self.raw_output)
        {
            Ok(c) => c,
            Err(what) => return Err(tool_failed(what)),
        };
        let accepted = match checked {
            Checked::Op(op) => op,
            Checked::Raw => out_text.to_string(),
            Checked::NeedsNormalising => {
                let Some(print) = self.toolchain.and_then(|t| t.opt_print().ok()) else {
                    return Err(tool_failed(
                        "the output defines aliases that differ from the input's, and no iree-opt is available to inline them".into(),
                    ));
                };
                let opt = PathBuf::from(&print.argv[0]);
                let ran2 =
                    self.run_limited(&opt, &print.argv, &ran.stdout)
                        .map_err(|e| match e {
                            NotRun::Permit(e) => {
                                fail_setup(n, "cannot get a permit to run".into(), e)
                            }
                            NotRun::Run(e) => tool_failed(e.to_string()),
                        })?;
                report.tool_seconds += ran2.elapsed.as_secs_f64();
                let norm = String::from_utf8_lossy(&ran2.stdout);
                if self.keep_all {
                    let norm_path = dir.join(format!("{n}.local-scope.mlir"));
                    let norm_err = dir.join(format!("{n}.local-scope.err.txt"));
                    keep_or_fail(&[
                        ("local scope", &norm_path, &ran2.stdout),
                        ("local scope stderr", &norm_err, &ran2.stderr),
                    ])?;
                }
                if ran2.exit != Exit::Code(0) {
                    let mut f = failure(
                        "the output does not parse (iree-opt, inlining its aliases)".into(),
                        Some(ran2.exit),
                        Some(&ran.stdout),
                        &ran.stderr,
                    );
                    let norm_err = dir.join(format!("{n}.local-scope.err.txt"));
                    f.stderr = tail_lines(&ran2.stderr, STDERR_LINES);
                    match exec::write_kept(&norm_err, &ran2.stderr) {
                        Ok(()) => f.kept.push(("iree-opt stderr", norm_err)),
                        Err(e) => f.not_kept.push(format!("iree-opt stderr: {e}")),
                    }
                    return Err(f);
                }
                match check_output(&norm, symbol, self.module, self.text, false) {
                    Ok(Checked::Op(op)) => op,
                    Ok(_) => {
                        return Err(tool_failed(
                            "iree-opt --mlir-print-local-scope still printed aliases".into(),
                        ))
                    }
                    Err(what) => return Err(tool_failed(what)),
                }
            }
        };
        let objects = match self.check_variants(&input, &accepted) {
            Ok(objects) => objects,
            Err(what) => return Err(tool_failed(what)),
        };
        if self.keep_all {
            self.keep_objects(&objects, dir)
                .map_err(|e| fail_setup(n, "cannot keep its objects (--keep-temps)".into(), e))?;
        }
        if let Some(c) = self.cache {
            if let Err(e) = c.put(&key, &accepted, &objects) {
                tracing::warn!("cannot store a preprocess cache entry: {e}");
            }
        }
        Ok((accepted, report))
    }

    /// The checks on a tool's accepted output that need its input: as many
    /// variants as it was given, and every object it references readable
    /// (and, for ELF targets, an object for the triple). Returns the
    /// objects (file, sha256) for the cache entry.
    fn check_variants(
        &self,
        input: &str,
        accepted: &str,
    ) -> Result<Vec<(PathBuf, String)>, String> {
        if self.raw_output {
            return Ok(Vec::new());
        }
        let found = crate::variants::check_count(input, accepted)?;
        let objects =
            crate::variants::check_objects(accepted, &found, self.module, self.text, self.cwd)?;
        Ok(objects.into_iter().map(|o| (o.file, o.sha256)).collect())
    }

    /// Copies the objects an output references beside its kept files
    /// (`DIR/<executable>/objects/`), so a kept run can be compiled again
    /// elsewhere.
    fn keep_objects(&self, objects: &[(PathBuf, String)], dir: &Path) -> Result<(), Error> {
        if objects.is_empty() {
            return Ok(());
        }
        let into = dir.join("objects");
        fs_err::create_dir_all(&into)?;
        for (file, sha256) in objects {
            let name = format!(
                "{}-{}",
                sha256.get(..12).unwrap_or(sha256),
                lockstep_core::fs::file_name(file)
            );
            let bytes = fs_err::read(file)?;
            exec::write_kept(&into.join(name), &bytes)
                .map_err(|e| Error::failed("cannot keep an object").cause(e))?;
        }
        Ok(())
    }

    /// (program, argv) that runs `step`.
    fn argv(&self, step: &Step) -> Result<(PathBuf, Vec<String>), Error> {
        match step {
            Step::Tool { argv, program, .. } => Ok((program.clone(), argv.clone())),
            Step::Pipeline { inner, .. } => {
                let toolchain = self.toolchain.ok_or_else(|| {
                    Error::usage("pass pipelines need iree-opt, which is not available here")
                })?;
                let argv = toolchain.opt_pipeline(inner)?.argv;
                Ok((PathBuf::from(&argv[0]), argv))
            }
        }
    }
}

/// Why [`Ctx::run_limited`] ran nothing.
enum NotRun {
    /// No permit from the machine-wide limit.
    Permit(Error),
    /// The process could not be started or waited for.
    Run(Error),
}

impl Ctx<'_> {
    /// Runs one tool process (`stdin` in, stdout and stderr captured)
    /// holding a permit of the machine-wide limit until it ends.
    fn run_limited(
        &self,
        program: &Path,
        argv: &[String],
        stdin: &[u8],
    ) -> Result<exec::Ran, NotRun> {
        let _permit = self.limiter.acquire().map_err(NotRun::Permit)?;
        exec::run(&exec::Run {
            program,
            argv,
            cwd: self.cwd,
            stdin,
            timeout: self.timeout,
        })
        .map_err(NotRun::Run)
    }
}

fn rerun_line(step: &Step, ctx: &Ctx, input: &Path) -> String {
    let words = match ctx.argv(step) {
        Ok((_, argv)) => argv,
        Err(_) => vec![step.display()],
    };
    format!(
        "{} < {}",
        process::shell_command(ctx.cwd, &words),
        process::quote(&input.display().to_string())
    )
}

enum Checked {
    /// The replacement op text.
    Op(String),
    /// The output as printed (wrap form).
    Raw,
    /// Aliases differ from the input's: inline them with iree-opt.
    NeedsNormalising,
}

/// The cheap in-process checks on a tool's output.
fn check_output(
    out: &str,
    symbol: &str,
    module: &Module,
    text: &str,
    raw: bool,
) -> Result<Checked, String> {
    if out.trim().is_empty() {
        return Err("the tool printed nothing (expected one hal.executable on stdout)".into());
    }
    let scanned = scan::scan(out)
        .map_err(|e| format!("the output is not well-formed MLIR: {}", e.describe(out)))?;
    let exe = match scanned.top_ops.as_slice() {
        [only] if only.name == "hal.executable" => &scanned.executables[0],
        [only] if scanned.wrapped && (only.name == "module" || only.name == "builtin.module") => {
            if scanned.executables.len() != 1 || !scanned.other_ops.is_empty() {
                return Err(format!(
                    "expected exactly one hal.executable, found a module holding {}",
                    describe_ops(&scanned)
                ));
            }
            &scanned.executables[0]
        }
        [] => return Err("the output holds no operation (expected one hal.executable)".into()),
        ops => {
            return Err(format!(
                "expected exactly one hal.executable, found {} ({})",
                count(ops.len(), "top-level op", "top-level ops"),
                op_names(ops.iter().map(|o| o.name.clone()), ops.len())
            ));
        }
    };
    if exe.symbol != symbol {
        return Err(format!(
            "the output is hal.executable @{} but the input was @{symbol} (the symbol name must be kept)",
            exe.symbol
        ));
    }
    if raw {
        return Ok(Checked::Raw);
    }
    for (k, v) in &scanned.resources.entries {
        if module.resources.entries.get(k) != Some(v) {
            return Err(format!(
                "the output adds or changes the dialect resource `{}` ({}), which splicing does not support",
                k.1, k.0
            ));
        }
    }
    for alias in &scanned.aliases {
        let same = module
            .alias_index
            .get(&alias.name)
            .is_some_and(|&i| text[module.aliases[i].span.clone()] == out[alias.span.clone()]);
        if !same {
            return Ok(Checked::NeedsNormalising);
        }
    }
    Ok(Checked::Op(out[exe.span.clone()].to_string()))
}

/// The top-level ops of `m` for an error, bounded ([`op_names`]): a tool
/// printing millions of lines must not make a message of millions of names.
fn describe_ops(m: &Module) -> String {
    let total = m.executables.len() + m.other_ops.len();
    let names = m
        .executables
        .iter()
        .map(|e| format!("hal.executable @{}", e.symbol))
        .chain(m.other_ops.iter().map(|o| o.name.clone()));
    op_names(names, total)
}

/// At most [`SHOWN_OPS`] of `names` (of `total`), each cut to 80
/// characters, then how many more; `nothing` for none.
fn op_names(names: impl Iterator<Item = String>, total: usize) -> String {
    const SHOWN_OPS: usize = 8;
    let mut names: Vec<String> = names
        .take(SHOWN_OPS)
        .map(|n| match n.char_indices().nth(80) {
            Some((cut, _)) => format!("{}...", &n[..cut]),
            None => n,
        })
        .collect();
    if total > SHOWN_OPS {
        names.push(format!("... and {} more", total - SHOWN_OPS));
    }
    if names.is_empty() {
        "nothing".into()
    } else {
        names.join(", ")
    }
}

/// A file-name-safe label: `007-main_dispatch_3`.
fn label(index: usize, symbol: &str) -> String {
    let clean: String = symbol
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    format!("{index:03}-{clean}")
}

/// Runs the steps on every selected executable of `text` and returns the
/// spliced module. Nothing is written outside the run/keep directories.
pub fn preprocess(text: &str, opts: &Options, sink: &dyn Sink) -> Result<Outcome, Error> {
    let module = scan_module(text)?;
    preprocess_scanned(text, &module, opts, sink)
}

/// Scans a module for [`preprocess_scanned`], with the error a user sees.
pub fn scan_module(text: &str) -> Result<Module, Error> {
    scan::scan(text).map_err(|e| {
        Error::failed("cannot split the input into executables")
            .cause(e.describe(text))
            .hint("the input must be MLIR text as iree-compile or iree-opt print it")
    })
}

/// [`preprocess`] for a module already scanned (`module` is `scan(text)`):
/// large modules are not scanned twice.
pub fn preprocess_scanned(
    text: &str,
    module: &Module,
    opts: &Options,
    sink: &dyn Sink,
) -> Result<Outcome, Error> {
    let started = Instant::now();
    // Failed runs keep their files there: bounded by age and size.
    exec::prune_runs(&opts.runs_dir, None);
    let run_dir = match &opts.keep_temps {
        Some(dir) => dir.clone(),
        None => opts.runs_dir.join(exec::run_name("")),
    };
    let ctx = Ctx {
        steps: opts.steps,
        cache: opts.cache.as_ref(),
        timeout: opts.timeout,
        toolchain: opts.toolchain,
        cwd: &opts.cwd,
        limiter: opts.limiter,
        module,
        text,
        raw_output: false,
        keep_all: opts.keep_temps.is_some(),
        batches: Default::default(),
    };
    let by_symbol: Vec<usize> = module
        .executables
        .iter()
        .enumerate()
        .filter(|(_, e)| opts.only.as_ref().is_none_or(|re| re.is_match(&e.symbol)))
        .map(|(i, _)| i)
        .collect();
    let (selected, held) = select_targets(text, module, &by_symbol, opts.only_target.as_ref())?;
    if module.executables.is_empty() {
        sink.warn("the input holds no hal.executable; the output is the input unchanged");
    } else if by_symbol.is_empty() {
        sink.warn("--only selected no executable; the output is the input unchanged");
    } else if selected.is_empty() {
        sink.warn(format!(
            "--only-target matched no variant; the output is the input unchanged (targets seen: {})",
            targets_seen(text, module, &by_symbol)
        ));
    }
    sink.emit(&PreprocessEvent::ModuleStarted {
        executables: module.executables.len(),
        selected: selected.len(),
        steps: opts.steps.len(),
    });
    let results = run_stages(
        &ctx,
        text,
        module,
        &selected,
        &held,
        &run_dir,
        (opts.jobs, opts.batch),
        sink,
    )?;
    let failures: Vec<Failure> = results
        .values()
        .filter_map(|r| r.as_ref().err().map(|f| (**f).clone()))
        .collect();
    if let Some(first) = failures.first() {
        let mut err = first.clone().into_error();
        let unfinished = selected.len() - results.len();
        if failures.len() > 1 || unfinished > 0 {
            let others: Vec<String> = failures[1..]
                .iter()
                .map(|f| format!("@{}", f.symbol))
                .collect();
            let mut line = String::new();
            if !others.is_empty() {
                line.push_str(&format!("also failed: {}", others.join(", ")));
            }
            if unfinished > 0 {
                if !line.is_empty() {
                    line.push_str("; ");
                }
                line.push_str(&format!(
                    "{} not started after the failure",
                    count(unfinished, "executable was", "executables were")
                ));
            }
            err = err.cause(line);
        }
        err = err.cause(format!(
            "temporary files of this run: {}",
            run_dir.display()
        ));
        if opts.keep_temps.is_none() {
            exec::prune_runs(&opts.runs_dir, Some(&run_dir));
        }
        return Err(err);
    }
    // Splice.
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut reports = Vec::with_capacity(module.executables.len());
    let mut spans: Vec<(std::ops::Range<usize>, usize)> = Vec::new();
    let mut prev = 0;
    let (mut ran, mut cached, mut tool_seconds) = (0, 0, 0.0);
    for (i, exe) in module.executables.iter().enumerate() {
        out.push_str(&text[prev..exe.span.start]);
        let original = &text[exe.span.clone()];
        let (replacement, steps) = match results.get(&i) {
            Some(Ok(done)) => (done.output.as_str(), done.steps.clone()),
            _ => (original, Vec::new()),
        };
        for s in &steps {
            if s.cached {
                cached += 1;
            } else {
                ran += 1;
                tool_seconds += s.tool_seconds;
            }
        }
        let start = out.len();
        out.push_str(replacement);
        spans.push((start..out.len(), i));
        reports.push(ExecutableReport {
            symbol: exe.symbol.clone(),
            selected: results.contains_key(&i),
            changed: replacement != original,
            steps,
        });
        prev = exe.span.end;
    }
    out.push_str(&text[prev..]);
    // One parse of the result, when anything changed.
    let changed = reports.iter().any(|r| r.changed);
    let mut validate_seconds = 0.0;
    if changed {
        let t = Instant::now();
        let valid = validate(&out, &spans, module, &run_dir, opts, &reports);
        validate_seconds = t.elapsed().as_secs_f64();
        sink.emit(&PreprocessEvent::Validated {
            ok: valid.is_ok(),
            seconds: validate_seconds,
        });
        valid?;
    }
    sink.emit(&PreprocessEvent::ModuleFinished {
        ran,
        cached,
        changed: reports.iter().filter(|r| r.changed).count(),
    });
    if opts.keep_temps.is_none() {
        let _ = std::fs::remove_dir_all(&run_dir);
    } else {
        fs_err::create_dir_all(&run_dir)?;
        let kept = run_dir.join("output.mlir");
        exec::write_kept(&kept, out.as_bytes())
            .map_err(|e| Error::failed("cannot keep the output (--keep-temps)").cause(e))?;
    }
    let batched = reports
        .iter()
        .flat_map(|r| r.steps.iter())
        .filter(|s| s.batched)
        .count();
    Ok(Outcome {
        text: out,
        executables: reports,
        ran,
        cached,
        tool_seconds,
        validated: changed,
        validate_seconds,
        seconds: started.elapsed().as_secs_f64(),
        kept: opts.keep_temps.clone(),
        batched,
        batches: ctx.batches.load(std::sync::atomic::Ordering::Relaxed),
        limiter: opts.limiter.describe(),
    })
}

/// Every step on the `selected` executables, step by step: a tool step
/// runs one process per executable (on `jobs` workers, each holding a
/// permit), a pipeline step one `iree-opt` over all of them at once
/// ([`Ctx::batched`]). The first failure stops the next step; an
/// executable that did not finish is absent from the result.
#[allow(clippy::too_many_arguments)]
fn run_stages(
    ctx: &Ctx,
    text: &str,
    module: &Module,
    selected: &[usize],
    held: &BTreeMap<usize, crate::variants::Held>,
    run_dir: &Path,
    (jobs, batch): (usize, bool),
    sink: &dyn Sink,
) -> Result<BTreeMap<usize, Result<Done, Box<Failure>>>, Error> {
    // Each executable's text so far and its step reports.
    let mut state: BTreeMap<usize, (String, Vec<StepReport>)> = BTreeMap::new();
    for &i in selected {
        let exe = &module.executables[i];
        let start = held
            .get(&i)
            .map_or(&text[exe.span.clone()], |h| h.given.as_str());
        state.insert(i, (start.to_string(), Vec::new()));
        sink.emit(&PreprocessEvent::ExecutableStarted {
            symbol: exe.symbol.clone(),
            index: i,
        });
    }
    let dir_of = |i: usize| run_dir.join(label(i, &module.executables[i].symbol));
    let mut failed: BTreeMap<usize, Box<Failure>> = BTreeMap::new();
    for k in 0..ctx.steps.len() {
        if !failed.is_empty() {
            break;
        }
        let alive: Vec<(usize, &str, &str)> = state
            .iter()
            .map(|(&i, (current, _))| (i, module.executables[i].symbol.as_str(), current.as_str()))
            .collect();
        let outcomes = if batch && ctx.steps[k].is_pipeline() && alive.len() > 1 && !ctx.keep_all {
            ctx.batched(k, &alive, &dir_of, jobs)?
        } else {
            ctx.each(k, &alive, &dir_of, jobs)?
        };
        let mut finished: std::collections::BTreeSet<usize> = Default::default();
        for (i, outcome) in outcomes {
            finished.insert(i);
            match outcome {
                Ok((out, report)) => {
                    if let Some(st) = state.get_mut(&i) {
                        st.0 = out.trim_end().to_string();
                        st.1.push(report);
                    }
                }
                Err(f) => {
                    failed.insert(i, f);
                }
            }
        }
        // Not reached after a failure: unfinished.
        state.retain(|i, _| finished.contains(i) && !failed.contains_key(i));
    }
    let mut results: BTreeMap<usize, Result<Done, Box<Failure>>> = BTreeMap::new();
    if failed.is_empty() {
        for (i, (current, steps)) in state {
            let exe = &module.executables[i];
            let output = match held.get(&i) {
                Some(h) => match ctx.restore(&exe.symbol, &current, h) {
                    Ok(out) => out,
                    Err(f) => {
                        results.insert(i, Err(f));
                        continue;
                    }
                },
                None => current,
            };
            results.insert(i, Ok(Done { output, steps }));
        }
    }
    for (i, f) in failed {
        results.insert(i, Err(f));
    }
    for (&i, result) in &results {
        let exe = &module.executables[i];
        sink.emit(&finished_event(
            &exe.symbol,
            i,
            &text[exe.span.clone()],
            result,
        ));
    }
    Ok(results)
}

/// Each executable's (index) outcome of one step: its new text and the
/// step's report, or the failure.
type StepOutcomes = Vec<(usize, Result<(String, StepReport), Box<Failure>>)>;

impl Ctx<'_> {
    /// Step `k` on each of `alive` (index, symbol, text), one process each
    /// on `jobs` workers; the first failure starts nothing new.
    fn each(
        &self,
        k: usize,
        alive: &[(usize, &str, &str)],
        dir_of: &(dyn Fn(usize) -> PathBuf + Sync),
        jobs: usize,
    ) -> Result<StepOutcomes, Error> {
        let done = lockstep_core::pool::map("preprocess", jobs, alive.len(), |n, stop| {
            let (i, symbol, current) = alive[n];
            let result = self.step(k, symbol, current, &dir_of(i));
            if result.is_err() {
                // Start nothing new; running tools finish (or time out).
                stop.stop();
            }
            (i, result)
        })?;
        Ok(done.into_iter().flatten().collect())
    }

    /// The pipeline step `k` on all of `alive` with one `iree-opt`: cache
    /// hits answered first, the misses printed into one module (the
    /// module's aliases and resources once, then each executable) and run
    /// together, IREE's own threads inside. Each executable of the result
    /// is checked as a tool's output is; one that is missing or fails a
    /// check, or a batch that fails as a whole, is run again on its own
    /// ([`Ctx::each`]), so every failure names its executable.
    fn batched(
        &self,
        k: usize,
        alive: &[(usize, &str, &str)],
        dir_of: &(dyn Fn(usize) -> PathBuf + Sync),
        jobs: usize,
    ) -> Result<StepOutcomes, Error> {
        let step = &self.steps[k];
        let iree_id = self.toolchain.map(|t| t.identity.as_str()).unwrap_or("");
        let material = step.key_material(false, iree_id);
        let mut outcomes = Vec::with_capacity(alive.len());
        let mut misses: Vec<(usize, &str, &str, String)> = Vec::new();
        for &(i, symbol, current) in alive {
            let Ok(input) = scan::self_contained_op(self.text, self.module, current) else {
                misses.push((i, symbol, current, String::new()));
                continue;
            };
            let key = cache::key(&input, &material);
            let hit = self
                .cache
                .and_then(|c| c.get(&key))
                .filter(|h| h.objects_unchanged());
            match hit {
                Some(hit) => outcomes.push((
                    i,
                    Ok((
                        hit.output,
                        StepReport {
                            command: step.display(),
                            cached: true,
                            tool_seconds: 0.0,
                            batched: false,
                        },
                    )),
                )),
                None => misses.push((i, symbol, current, input)),
            }
        }
        let mut again: Vec<(usize, &str, &str)> = Vec::new();
        let together: Vec<&(usize, &str, &str, String)> =
            misses.iter().filter(|m| !m.3.is_empty()).collect();
        again.extend(
            misses
                .iter()
                .filter(|m| m.3.is_empty())
                .map(|m| (m.0, m.1, m.2)),
        );
        if together.len() < 2 {
            again.extend(together.iter().map(|m| (m.0, m.1, m.2)));
        } else {
            match self.run_batch(step, &together) {
                Some((printed, scanned, seconds)) => {
                    let share = seconds / together.len() as f64;
                    for m in &together {
                        match self.accept_batched(m, &printed, &scanned, &material) {
                            Some(out) => outcomes.push((
                                m.0,
                                Ok((
                                    out,
                                    StepReport {
                                        command: step.display(),
                                        cached: false,
                                        tool_seconds: share,
                                        batched: true,
                                    },
                                )),
                            )),
                            None => again.push((m.0, m.1, m.2)),
                        }
                    }
                }
                None => again.extend(together.iter().map(|m| (m.0, m.1, m.2))),
            }
        }
        if !again.is_empty() {
            outcomes.extend(self.each(k, &again, dir_of, jobs)?);
        }
        Ok(outcomes)
    }

    /// One `iree-opt` of `step` over the executables of `batch`: the
    /// printed module (scanned) and the seconds it took, or `None` when it
    /// failed (each is then run on its own, for its own error).
    #[allow(clippy::type_complexity)]
    fn run_batch(
        &self,
        step: &Step,
        batch: &[&(usize, &str, &str, String)],
    ) -> Option<(String, Module, f64)> {
        let Step::Pipeline { inner, .. } = step else {
            return None;
        };
        let mut argv = self.toolchain?.opt_pipeline(inner).ok()?.argv;
        let mut input = String::new();
        for alias in &self.module.aliases {
            input.push_str(self.text.get(alias.span.clone())?);
            input.push('\n');
        }
        for m in batch {
            input.push_str(m.2);
            input.push('\n');
        }
        if let Some(block) = &self.module.resource_block {
            input.push_str(self.text.get(block.clone())?);
            input.push('\n');
        }
        if !input.contains("loc(") {
            argv.retain(|a| a != "--mlir-print-debuginfo");
        }
        let ran = self
            .run_limited(Path::new(&argv[0]), &argv, input.as_bytes())
            .ok()?;
        if ran.exit != Exit::Code(0) || ran.stdout_truncated {
            return None;
        }
        let printed = String::from_utf8(ran.stdout).ok()?;
        let scanned = scan::scan(&printed).ok()?;
        self.batches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some((printed, scanned, ran.elapsed.as_secs_f64()))
    }

    /// The executable `m` (index, symbol, text, input) of a batch's
    /// printed module, checked as a tool's output is and stored in the
    /// cache under its own key; `None` when it is missing or a check fails
    /// (it is then run on its own).
    fn accept_batched(
        &self,
        m: &(usize, &str, &str, String),
        printed: &str,
        scanned: &Module,
        material: &str,
    ) -> Option<String> {
        let exe = scanned.executables.iter().find(|e| e.symbol == m.1)?;
        let text = printed.get(exe.span.clone())?;
        let op = match check_output(text, m.1, self.module, self.text, false) {
            Ok(Checked::Op(op)) => op,
            _ => return None,
        };
        let objects = self.check_variants(&m.3, &op).ok()?;
        if let Some(c) = self.cache {
            if let Err(e) = c.put(&cache::key(&m.3, material), &op, &objects) {
                tracing::warn!("cannot store a preprocess cache entry: {e}");
            }
        }
        Some(op)
    }
}

/// The executables (of `candidates`) with a variant whose target matches
/// `only_target`, and for each the variants held back; all of them, none
/// held, without `--only-target`.
fn select_targets(
    text: &str,
    module: &Module,
    candidates: &[usize],
    only_target: Option<&regex::Regex>,
) -> Result<(Vec<usize>, BTreeMap<usize, crate::variants::Held>), Error> {
    let Some(re) = only_target else {
        return Ok((candidates.to_vec(), BTreeMap::new()));
    };
    let mut selected = Vec::new();
    let mut held = BTreeMap::new();
    for &i in candidates {
        let exe = &module.executables[i];
        let op = &text[exe.span.clone()];
        let split = crate::variants::hold(op, re, module, text).map_err(|e| {
            Error::failed(format!(
                "cannot read the variants of hal.executable @{}",
                exe.symbol
            ))
            .cause(e)
        })?;
        if let Some(split) = split {
            selected.push(i);
            if split.order.iter().any(Option::is_some) {
                held.insert(i, split);
            }
        }
    }
    Ok((selected, held))
}

/// The distinct targets (backend and format) of the candidates' variants,
/// for the warning when `--only-target` matches none.
fn targets_seen(text: &str, module: &Module, candidates: &[usize]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for &i in candidates {
        let op = &text[module.executables[i].span.clone()];
        for v in scan::variants(op).unwrap_or_default() {
            let target = crate::variants::resolve_target(&v.target, module, text);
            let short: String = target
                .split_once('{')
                .map_or(target.as_str(), |(head, _)| head)
                .trim_end_matches([',', ' '])
                .chars()
                .take(120)
                .collect();
            if !seen.contains(&short) {
                seen.push(short);
            }
        }
    }
    if seen.is_empty() {
        "none".into()
    } else {
        seen.join("; ")
    }
}

/// The event for an executable whose steps ended with `result`.
fn finished_event(
    symbol: &str,
    index: usize,
    original: &str,
    result: &Result<Done, Box<Failure>>,
) -> PreprocessEvent {
    let steps = result.as_ref().map(|d| d.steps.as_slice()).unwrap_or(&[]);
    PreprocessEvent::ExecutableFinished {
        symbol: symbol.to_string(),
        index,
        ok: result.is_ok(),
        changed: result.as_ref().is_ok_and(|d| d.output != original),
        cached: steps.iter().filter(|s| s.cached).count(),
        ran: steps.iter().filter(|s| !s.cached).count(),
        tool_seconds: steps.iter().map(|s| s.tool_seconds).sum(),
    }
}

/// Parses the spliced module once with iree-opt; an error is mapped back to
/// the executable whose text holds its location (or, when the location is a
/// debug location, found by parsing the changed executables one by one).
fn validate(
    out: &str,
    spans: &[(std::ops::Range<usize>, usize)],
    module: &Module,
    run_dir: &Path,
    opts: &Options,
    reports: &[ExecutableReport],
) -> Result<(), Error> {
    let Some(toolchain) = opts.toolchain else {
        return Ok(());
    };
    fs_err::create_dir_all(run_dir)?;
    let path = run_dir.join("spliced.mlir");
    fs_err::write(&path, out)?;
    let log = run_dir.join("spliced.iree-opt.log");
    let timeout = opts
        .timeout
        .map_or(WHOLE_MODULE_TIMEOUT, |t| t.max(MIN_PARSE_TIMEOUT));
    let check = |file: &Path, log: &Path| -> Result<lockstep_iree::Ran, Error> {
        toolchain.opt_check(file)?.run(&lockstep_iree::Limits {
            cwd: &opts.cwd,
            timeout,
            log,
        })
    };
    let whole = check(&path, &log)?;
    if whole.success() {
        return Ok(());
    }
    let log_text = whole.output();
    // `.../spliced.mlir:LINE:COL: error: ...`
    let mut culprit: Option<usize> = None;
    if let Ok(re) = regex::Regex::new(r"spliced\.mlir:(\d+):(\d+):") {
        if let Some(c) = re.captures(&log_text) {
            let line: usize = c[1].parse().unwrap_or(0);
            let offset = line_offset(out, line);
            culprit = spans
                .iter()
                .find(|(span, _)| span.contains(&offset))
                .map(|(_, i)| *i);
        }
    }
    if culprit.is_none() {
        // A verifier error at a debug location: parse each changed executable alone.
        for (span, i) in spans {
            if !reports[*i].changed {
                continue;
            }
            let alone = scan::self_contained_op(out, module, &out[span.clone()]).ok();
            let Some(alone) = alone else { continue };
            let file = run_dir.join(format!(
                "{}.check.mlir",
                label(*i, &module.executables[*i].symbol)
            ));
            fs_err::write(&file, alone)?;
            if !check(&file, &file.with_extension("log"))?.success() {
                culprit = Some(*i);
                break;
            }
        }
    }
    let mut err = match culprit {
        Some(i) => Error::failed(format!(
            "preprocessing executable @{} failed: the result does not parse or verify",
            module.executables[i].symbol
        )),
        None => Error::failed("the preprocessed module does not parse or verify"),
    };
    err = err.cause("iree-opt says:");
    for line in log_text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(STDERR_LINES)
    {
        err = err.cause(format!("  {line}"));
    }
    if let Some(i) = culprit {
        let dir = run_dir.join(label(i, &module.executables[i].symbol));
        err = err.cause(format!(
            "its inputs and outputs are kept in {}",
            dir.display()
        ));
    }
    Err(err
        .cause(format!("spliced module kept at {}", path.display()))
        .hint(format!("reproduce with: {}", whole.command)))
}

fn line_offset(text: &str, line: usize) -> usize {
    if line <= 1 {
        return 0;
    }
    text.match_indices('\n')
        .nth(line - 2)
        .map(|(i, _)| i + 1)
        .unwrap_or(text.len())
}

/// What the `--wrap` form needs.
pub struct WrapOptions<'a> {
    pub step: &'a Step,
    pub cache: Option<Cache>,
    pub timeout: Option<Duration>,
    pub runs_dir: PathBuf,
    pub cwd: PathBuf,
    pub limiter: &'a Limiter,
}

/// The `--wrap` form: one executable (as the compiler prints it) through one
/// tool, with the permit, cache and checks. Returns what to print on stdout.
pub fn wrap(input: &str, opts: &WrapOptions) -> Result<String, Error> {
    let module = scan::scan(input).map_err(|e| {
        Error::failed("cannot read the executable on stdin")
            .cause(e.describe(input))
            .hint("`lockstep preprocess --wrap` reads one hal.executable on stdin, as iree-compile --iree-hal-preprocess-executables-with= passes it")
    })?;
    let symbol = match module.executables.as_slice() {
        [one] => one.symbol.clone(),
        other => {
            return Err(Error::failed(format!(
                "expected one hal.executable on stdin, found {}",
                other.len()
            ))
            .hint("`lockstep preprocess --wrap -- TOOL` is meant to be run by iree-compile; use `lockstep preprocess INPUT -o OUTPUT --with TOOL` for a whole module"))
        }
    };
    let dir = opts
        .runs_dir
        .join(exec::run_name(&format!("wrap-{}-", label(0, &symbol))));
    let steps = std::slice::from_ref(opts.step);
    let ctx = Ctx {
        steps,
        cache: opts.cache.as_ref(),
        timeout: opts.timeout,
        toolchain: None,
        cwd: &opts.cwd,
        limiter: opts.limiter,
        module: &module,
        text: input,
        raw_output: true,
        keep_all: false,
        batches: Default::default(),
    };
    match ctx.process(&symbol, input, None, &dir) {
        Ok(done) => {
            let _ = std::fs::remove_dir_all(&dir);
            Ok(done.output)
        }
        Err(f) => {
            // This run kept its files: the runs directory stays bounded.
            exec::prune_runs(&opts.runs_dir, Some(&dir));
            Err((*f).into_error())
        }
    }
}

/// Compiles an `--only-target` expression.
pub fn only_target(pattern: &str) -> Result<regex::Regex, Error> {
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
            Error::usage(format!("invalid --only-target expression `{pattern}`"))
                .cause(e.to_string())
                .hint("--only-target takes a regular expression matched against each variant's target, e.g. 'embedded-elf-x86_64' or 'aarch64-'")
        })
}

/// Compiles an `--only` expression.
pub fn only(pattern: &str) -> Result<regex::Regex, Error> {
    regex::Regex::new(pattern).map_err(|e| {
        Error::usage(format!("invalid --only expression `{pattern}`"))
            .cause(e.to_string())
            .hint("--only takes a regular expression matched against executable symbols, e.g. 'dispatch_(0|3)$'")
    })
}
