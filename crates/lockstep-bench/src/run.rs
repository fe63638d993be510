//! Running a batch: parsed commands become signatures, unique signatures are
//! compiled by iree-compile on `jobs` workers (through the kernel cache), then
//! each kernel is timed by iree-benchmark-module in its own process, one at a
//! time. Every kernel gets deterministic seeded inputs ([`tensor_data::inputs`])
//! written as raw `.bin` files, which the timed run reads (unless a splat
//! value is forced); with verification on (`--verify` or a line's `-V 1`)
//! iree-run-module runs the kernel once more on them, in its own process, for
//! the output compared with the f64 reference. Command lines are
//! lockstep-iree's; progress goes out as [`BenchEvent`]s.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use lockstep_cache::{Bucket, Key};
use lockstep_core::events::Sink;
use lockstep_iree::{Benchmark, Invocation, Limits, MinTime, RunModule, Toolchain};
use serde::Serialize;

use crate::device::Device;
use crate::events::BenchEvent;
use crate::jobs::Job;
use crate::modules::{self, Compiler, Counters};
use crate::references;
use crate::rows::{Check, Row, Stats};
use lockstep_kernels::compare;
use lockstep_kernels::kernel;
use lockstep_kernels::signature::{signatures, OpSignature, Operand};
use lockstep_kernels::tensor_data;

/// The seed of the verification inputs: every run gets the same data.
pub const VERIFY_SEED: u64 = 0x5EED;

/// How to compile and run.
#[derive(Debug)]
pub struct Options {
    /// The IREE tools (the compiler's identity keys the cache).
    pub toolchain: Toolchain,
    /// Target flags, runtime device and its flags.
    pub device: Device,
    /// Added after the device's target flags.
    pub compile_flags: Vec<String>,
    pub jobs: usize,
    /// Per compile, timed and verification process.
    pub timeout: Duration,
    /// `--task_topology_max_group_count` for local-task.
    pub threads: Option<usize>,
    /// Fill every timed input with this value instead of the seeded inputs.
    pub splat: Option<String>,
    /// Verify every kernel (as if each line had `-V 1`).
    pub verify: bool,
    /// The cache's kernel area (`None`: off).
    pub cache: Option<Bucket>,
    /// The cache's references area (`None`: references computed every time).
    pub references: Option<Bucket>,
    /// Logs and uncached modules.
    pub work_dir: PathBuf,
    /// The most bytes one kernel's tensors may need (inputs, outputs and,
    /// when verifying, the f64 reference); see [`default_max_bytes`].
    pub max_bytes: u64,
    /// Set when a row's reason cites a log in `work_dir` (which must then
    /// be kept).
    pub logs_cited: std::sync::atomic::AtomicBool,
    /// Compile (and, with a references area, compute references) but run
    /// nothing: why, as the rows' status (`--compile-only`, or the device
    /// missing on this machine: `skipped: ...`).
    pub no_runs: Option<String>,
    /// Nothing may be compiled: every module must be in `cache` (a bundle).
    pub no_compile: bool,
    /// Where rows are recorded and answered from (`None`: every row is
    /// measured; `--no-cache`, a cache that is off, a bundle).
    pub record: Option<crate::recorded::Record>,
}

/// The bytes a kernel needs in memory and on disk: its operands, the padded
/// or dilated copies its module makes of them ([`kernel::scratch_elements`]),
/// plus for verification the f64 copies of its inputs and the reference's
/// two f64 values (value and tolerance scale) per output element.
pub fn bytes_needed(sig: &OpSignature, verify: bool) -> u64 {
    let f64s = |operands: &[Operand], per_element: u64| {
        operands
            .iter()
            .map(|o| o.elements().saturating_mul(per_element))
            .fold(0u64, u64::saturating_add)
    };
    let reference = if verify {
        f64s(&sig.inputs, 8).saturating_add(f64s(&sig.outputs, 16))
    } else {
        0
    };
    let scratch = kernel::scratch_elements(sig).saturating_mul(sig.dtype.bytes());
    sig.bytes.saturating_add(reference).saturating_add(scratch)
}

/// The default limit: half of the memory available now or half of the
/// free space where inputs are written, whichever is smaller.
// statvfs's field types differ between platforms: the casts are for them.
#[allow(clippy::unnecessary_cast)]
pub fn default_max_bytes(work_dir: &Path) -> u64 {
    let memory = available_memory().unwrap_or(u64::MAX);
    let disk = nix::sys::statvfs::statvfs(work_dir)
        .map(|s| (s.blocks_available() as u64).saturating_mul(s.fragment_size() as u64))
        .unwrap_or(u64::MAX);
    memory.min(disk) / 2
}

/// MemAvailable of /proc/meminfo, in bytes.
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// The row's failure when `sig` needs more than the limit: the sizes, the
/// limit and how to raise it.
fn too_large(sig: &OpSignature, verify: bool, limit: u64) -> Option<String> {
    let need = bytes_needed(sig, verify);
    if need <= limit {
        return None;
    }
    let shapes: Vec<String> = sig
        .inputs
        .iter()
        .chain(&sig.outputs)
        .map(|o| {
            let dims: Vec<String> = o.shape.iter().map(u64::to_string).collect();
            format!("{} {}x{}", o.name, dims.join("x"), o.elem.name())
        })
        .collect();
    Some(format!(
        "too large: the tensors ({}) need {need} bytes{}{}, more than the limit of {limit} bytes; raise it with --max-bytes or [bench] max-bytes",
        shapes.join(", "),
        match kernel::scratch_elements(sig) {
            0 => String::new(),
            n => format!(
                " with {} of working copies",
                lockstep_core::words::count(n as usize, "element", "elements")
            ),
        },
        if verify { " and the f64 reference" } else { "" },
    ))
}

/// What a run did (the `--json` results, docs/schemas/bench-results.json).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The device name given and the runtime device it opened.
    pub device: String,
    pub runtime_device: String,
    pub rows: Vec<Row>,
    /// Kernels compiled by iree-compile in this run.
    pub compiled: usize,
    /// Kernels taken from the cache.
    pub cache_hits: usize,
    /// Rows answered from their record (neither timed nor verified again).
    pub recorded: usize,
}

impl Summary {
    /// Rows that failed, including rows whose verification failed.
    pub fn failed(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| !(r.ok() || r.skipped()) || r.verify == "FAIL")
            .count()
    }

    /// Rows compiled but not run (`--compile-only`, or no such device here).
    pub fn skipped(&self) -> usize {
        self.rows.iter().filter(|r| r.skipped()).count()
    }
}

/// A row waiting for its kernel.
struct Planned {
    row: Row,
    /// The kernel to run, when there is one.
    kernel: Option<Work>,
}

/// What to do with one kernel.
struct Work {
    key: Key,
    iterations: u32,
    /// False for `-t 0`.
    time: bool,
    verify: bool,
    sig: OpSignature,
}

/// A compiled module, whether it came from the cache and the wall seconds of
/// its compile (0 when cached), or why there is none.
type Module = Result<(PathBuf, bool, f64), String>;

struct Kernel {
    func_name: String,
    mlir: String,
}

impl Options {
    /// Every iree-compile flag of the batch: the device's target flags,
    /// then `[bench] compile-flags` and `--compile-flag`.
    pub fn all_flags(&self) -> Vec<String> {
        self.device
            .target_flags
            .iter()
            .chain(&self.compile_flags)
            .cloned()
            .collect()
    }
}

/// Runs every job; each row goes out as an event as soon as it is final, in order.
pub fn run(jobs: &[Job], opts: &Options, sink: &dyn Sink) -> Summary {
    let flags = opts.all_flags();
    let mut planned = Vec::new();
    let mut kernels: Vec<(Key, Kernel)> = Vec::new();
    let mut seen = HashSet::new();
    for (index, job) in jobs.iter().enumerate() {
        let base = Row {
            command: index,
            line: job.line,
            arguments: job.arguments.clone(),
            repeat: job.repeat,
            notes: job
                .parsed
                .as_ref()
                .map(|c| c.notes.clone())
                .unwrap_or_default(),
            ..Row::default()
        };
        let command = match &job.parsed {
            Ok(command) => command,
            Err(reason) => {
                let status = match job.line {
                    Some(n) => format!("line {n}: {reason}"),
                    None => reason.clone(),
                };
                planned.push(Planned {
                    row: Row { status, ..base },
                    kernel: None,
                });
                continue;
            }
        };
        for sig in signatures(&command.op) {
            let mut row = base.clone();
            row.func_name = sig.func_name.clone();
            if let Some(out) = sig.outputs.first() {
                row.output_shape = out.shape.clone();
                row.output_dtype = out.elem.name().to_string();
            }
            if let Some(reason) = too_large(&sig, opts.verify || command.verify, opts.max_bytes) {
                row.status = reason;
                planned.push(Planned { row, kernel: None });
                continue;
            }
            match kernel::module(&sig) {
                Ok(mlir) => {
                    let key = modules::kernel_key(&opts.toolchain.identity, &mlir, &flags);
                    if seen.insert(key.clone()) {
                        kernels.push((
                            key.clone(),
                            Kernel {
                                func_name: sig.func_name.clone(),
                                mlir,
                            },
                        ));
                    }
                    planned.push(Planned {
                        row,
                        kernel: Some(Work {
                            key,
                            iterations: command.iterations,
                            time: command.time,
                            verify: opts.verify || command.verify,
                            sig,
                        }),
                    });
                }
                Err(reason) => {
                    let prefix = format!("{}: ", sig.func_name);
                    let reason = reason.strip_prefix(&prefix).unwrap_or(&reason);
                    row.status = format!("not supported yet: {reason}");
                    planned.push(Planned { row, kernel: None });
                }
            }
        }
    }

    let recorded = answer_from_record(&mut planned, &mut kernels, opts);
    sink.emit(&BenchEvent::BatchStarted {
        commands: jobs.len(),
        rows: planned.len(),
        kernels: kernels.len(),
        device: opts.device.name.clone(),
        runtime_device: opts.device.runtime.clone(),
    });
    let compiled = AtomicUsize::new(0);
    let hits = AtomicUsize::new(0);
    // The workers compile the kernels, then fill in missing references.
    let references = missing_references(&planned, opts);
    let tasks = kernels.len() + references.len();
    let done = lockstep_core::pool::map_all("bench", opts.jobs, tasks, |i| {
        if let Some((key, kernel)) = kernels.get(i) {
            let result = if let (Some(why), Some(_)) = (&opts.no_runs, &opts.device.unresolved) {
                // No target to compile for, and no device to run on.
                Err(why.clone())
            } else if opts.no_compile {
                from_bundle(key, kernel, opts, &hits)
            } else {
                obtain(key, kernel, &flags, opts, &compiled, &hits)
            };
            sink.emit(&compiled_event(key, kernel, &result));
            Some((key.clone(), result))
        } else {
            let (bucket, sig) = &references[i - kernels.len()];
            // A failure shows again, on its row, when the check computes it.
            if let Err(e) = references::ensure(bucket, sig, VERIFY_SEED) {
                tracing::debug!("reference of {}: {e}", sig.func_name);
            }
            None
        }
    });
    let modules: HashMap<Key, Module> = match done {
        Ok(done) => done.into_iter().flatten().collect(),
        Err(e) => kernels
            .iter()
            .map(|(key, _)| (key.clone(), Err(e.render().trim_end().to_string())))
            .collect(),
    };

    let mut rows = Vec::new();
    // Kernels whose compile time is already on an earlier row.
    let mut charged = HashSet::new();
    for Planned { mut row, kernel } in planned {
        if let Some(work) = kernel {
            match &modules[&work.key] {
                Err(reason) => row.status = reason.clone(),
                Ok((module, cached, seconds)) => {
                    row.cached = *cached;
                    row.module = Some(module.clone());
                    if charged.insert(work.key.clone()) {
                        row.compile_seconds = *seconds;
                    }
                    match &opts.no_runs {
                        Some(why) => row.status = why.clone(),
                        None => {
                            execute(&mut row, module, &work, opts, rows.len());
                            if let Some(record) = &opts.record {
                                record.remember(&work.row_key(), &row);
                            }
                        }
                    }
                }
            }
        }
        sink.emit(&BenchEvent::RowFinished {
            index: rows.len(),
            first_of_command: rows
                .last()
                .is_none_or(|last: &Row| last.command != row.command),
            boo_lines: row.boo_lines(),
            row: Box::new(row.clone()),
        });
        rows.push(row);
    }
    let summary = Summary {
        device: opts.device.name.clone(),
        runtime_device: opts.device.runtime.clone(),
        rows,
        compiled: compiled.into_inner(),
        cache_hits: hits.into_inner(),
        recorded,
    };
    sink.emit(&BenchEvent::BatchFinished {
        rows: summary.rows.len(),
        failed: summary.failed(),
        compiled: summary.compiled,
        cache_hits: summary.cache_hits,
        recorded: summary.recorded,
    });
    summary
}

impl Work {
    /// What this row's record is keyed by beyond the batch.
    fn row_key(&self) -> crate::recorded::RowKey<'_> {
        crate::recorded::RowKey {
            kernel: &self.key,
            iterations: self.iterations,
            time: self.time,
            verify: self.verify,
        }
    }
}

/// Fills the rows whose record answers them and drops the kernels only
/// they needed (nothing is compiled, timed or verified for them); how many.
fn answer_from_record(
    planned: &mut [Planned],
    kernels: &mut Vec<(Key, Kernel)>,
    opts: &Options,
) -> usize {
    let Some(record) = &opts.record else {
        return 0;
    };
    let mut answered = 0;
    for p in planned.iter_mut() {
        let hit = p
            .kernel
            .as_ref()
            .is_some_and(|work| record.answer(&work.row_key(), &mut p.row));
        if hit {
            p.kernel = None;
            answered += 1;
        }
    }
    let needed: HashSet<&Key> = planned
        .iter()
        .filter_map(|p| p.kernel.as_ref().map(|w| &w.key))
        .collect();
    kernels.retain(|(key, _)| needed.contains(key));
    answered
}

/// The event for a kernel whose module is `module`.
fn compiled_event(key: &Key, kernel: &Kernel, module: &Module) -> BenchEvent {
    BenchEvent::KernelCompiled {
        func_name: kernel.func_name.clone(),
        key: key.to_string(),
        cached: module.as_ref().is_ok_and(|(_, cached, _)| *cached),
        ok: module.is_ok(),
        seconds: module.as_ref().map_or(0.0, |(_, _, seconds)| *seconds),
        message: module.as_ref().err().cloned().unwrap_or_default(),
    }
}

/// The references verified rows need that the area does not hold yet, one
/// per signature (none without an area: each check computes its own).
fn missing_references<'a>(
    planned: &'a [Planned],
    opts: &'a Options,
) -> Vec<(&'a Bucket, &'a OpSignature)> {
    let Some(bucket) = &opts.references else {
        return Vec::new();
    };
    let mut seen = HashSet::new();
    planned
        .iter()
        .filter_map(|p| p.kernel.as_ref())
        .filter(|work| work.verify && seen.insert(work.sig.func_name.clone()))
        .filter(|work| {
            bucket
                .slot(&references::key(&work.sig, VERIFY_SEED), None)
                .get()
                .is_none()
        })
        .map(|work| (bucket, &work.sig))
        .collect()
}

/// Times and/or verifies one compiled kernel, filling its row.
fn execute(row: &mut Row, module: &Path, work: &Work, opts: &Options, index: usize) {
    let dir = opts.work_dir.join("inputs").join(index.to_string());
    if let Err(reason) = time_and_check(row, module, work, opts, index, &dir) {
        row.status = reason;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn time_and_check(
    row: &mut Row,
    module: &Path,
    work: &Work,
    opts: &Options,
    index: usize,
    dir: &Path,
) -> Result<(), String> {
    let sig = &work.sig;
    // The seeded inputs feed verification, and the timed run unless a splat
    // value is forced.
    let files = if work.verify || (work.time && opts.splat.is_none()) {
        write_inputs(sig, dir)?
    } else {
        Vec::new()
    };
    if work.time {
        let inputs = match &opts.splat {
            Some(value) => Inputs::Splat(value),
            None => Inputs::Files(&files),
        };
        let (seconds, stats) = time(module, sig, work.iterations, opts, index, inputs)?;
        row.timing_seconds = Some(seconds);
        let median = stats.median * 1e-6;
        if median > 0.0 {
            row.gflops = Some(sig.flops as f64 / median / 1e9);
            row.gbps = Some(sig.bytes as f64 / median / 1e9);
        }
        row.stats = Some(stats);
    }
    row.status = "ok".to_string();
    if work.verify {
        let check = match check(module, sig, opts, dir, &files) {
            Ok(v) => Check {
                max_abs: Some(v.max_abs),
                max_rel: Some(v.max_rel),
                failures: v.failures,
                error: None,
                passed: v.passed,
            },
            Err(reason) => Check {
                max_abs: None,
                max_rel: None,
                failures: 0,
                error: Some(reason),
                passed: false,
            },
        };
        row.verify = if check.passed { "PASS" } else { "FAIL" }.to_string();
        row.check = Some(check);
    }
    Ok(())
}

/// Writes the seeded inputs of `sig` (the values [`tensor_data::inputs`] gives)
/// as `in0.bin`, `in1.bin`, ... in `dir`, encoding as it goes so a large
/// tensor is never held as f64.
fn write_inputs(sig: &OpSignature, dir: &Path) -> Result<Vec<PathBuf>, String> {
    use std::io::Write as _;
    std::fs::create_dir_all(dir).map_err(|e| write_error(dir, &e))?;
    let mut files = Vec::new();
    for (a, operand) in sig.inputs.iter().enumerate() {
        let file = dir.join(format!("in{a}.bin"));
        let io = |e: std::io::Error| write_error(&file, &e);
        let mut out = std::io::BufWriter::new(std::fs::File::create(&file).map_err(io)?);
        let mut values = tensor_data::input_values(sig, a, VERIFY_SEED).peekable();
        while values.peek().is_some() {
            let chunk: Vec<f64> = values.by_ref().take(1 << 16).collect();
            out.write_all(&tensor_data::encode(&chunk, operand.elem))
                .map_err(io)?;
        }
        out.flush().map_err(io)?;
        files.push(file);
    }
    Ok(files)
}

/// A row's reason for an input that could not be written: the file, the
/// error, and when it is the file size limit (`EFBIG`: lockstep ignores
/// `SIGXFSZ`), which limit.
fn write_error(path: &Path, e: &std::io::Error) -> String {
    let limit = match e.raw_os_error() {
        Some(27) => " (the file size limit, `ulimit -f`, was reached)",
        _ => "",
    };
    format!(
        "cannot write the kernel's inputs to {}: {e}{limit}",
        path.display()
    )
}

/// What a run feeds the kernel's arguments.
#[derive(Clone, Copy)]
enum Inputs<'a> {
    /// One raw `.bin` file per input.
    Files(&'a [PathBuf]),
    /// Every element of every input set to this value.
    Splat(&'a str),
}

/// `DIMSxTYPE=VALUE` (the `--input=` values) for each input of `sig`.
fn input_values(sig: &OpSignature, inputs: Inputs) -> Vec<String> {
    sig.inputs
        .iter()
        .enumerate()
        .map(|(i, input)| {
            let dims: Vec<String> = input.shape.iter().map(u64::to_string).collect();
            let value = match inputs {
                Inputs::Files(files) => format!("@{}", files[i].display()),
                Inputs::Splat(value) => value.to_string(),
            };
            format!("{}x{}={value}", dims.join("x"), input.elem.mlir())
        })
        .collect()
}

/// `iree-run-module` running `sig`'s function once on the input `files`,
/// writing each result to its file in `outs`.
pub(crate) fn run_module_invocation(
    toolchain: &Toolchain,
    module: &Path,
    device: &Device,
    sig: &OpSignature,
    files: &[PathBuf],
    outs: &[PathBuf],
) -> Result<Invocation, String> {
    let inputs = input_values(sig, Inputs::Files(files));
    toolchain
        .run_module(&RunModule {
            module,
            device: Some(&device.runtime),
            function: Some(&sig.func_name),
            flags: &device.run_flags,
            inputs: &inputs,
            outputs: outs,
        })
        .map_err(|e| e.render())
}

/// Runs the kernel once on the verification inputs with iree-run-module and
/// compares each of its outputs with the reference.
fn check(
    module: &Path,
    sig: &OpSignature,
    opts: &Options,
    dir: &Path,
    files: &[PathBuf],
) -> Result<compare::OutputCheck, String> {
    if sig.outputs.is_empty() {
        return Err("the kernel has no output".to_string());
    }
    let outs: Vec<PathBuf> = (0..sig.outputs.len())
        .map(|i| dir.join(format!("out{i}.bin")))
        .collect();
    let log = dir.with_extension("verify.log");
    let invocation =
        run_module_invocation(&opts.toolchain, module, &opts.device, sig, files, &outs)?;
    run_tool(&invocation, &log, opts, "verification run failed")?;
    let expected = references::load_or_compute(opts.references.as_ref(), sig, VERIFY_SEED)?;
    if expected.len() != sig.outputs.len() {
        return Err(format!(
            "the reference has {}, the kernel {}",
            lockstep_core::words::count(expected.len(), "output", "outputs"),
            sig.outputs.len()
        ));
    }
    let mut verdict: Option<compare::OutputCheck> = None;
    for ((operand, out), want) in sig.outputs.iter().zip(&outs).zip(&expected) {
        let bytes = std::fs::read(out)
            .map_err(|e| format!("no verification output for {} ({e})", operand.name))?;
        let got = tensor_data::decode(&bytes, operand.elem)?;
        let this = compare::compare_as(operand.elem, &got, &want.values, &want.sums);
        verdict = Some(match verdict {
            Some(v) => v.merge(this),
            None => this,
        });
    }
    verdict.ok_or_else(|| "the kernel has no output".to_string())
}

/// The module of a kernel: from the cache, or compiled (and cached); see
/// [`modules::obtain`].
fn obtain(
    key: &Key,
    kernel: &Kernel,
    flags: &[String],
    opts: &Options,
    compiled: &AtomicUsize,
    hits: &AtomicUsize,
) -> Module {
    let compiler = Compiler {
        toolchain: &opts.toolchain,
        flags,
        timeout: opts.timeout,
        work_dir: &opts.work_dir,
        logs_cited: &opts.logs_cited,
    };
    let counters = Counters { compiled, hits };
    modules::obtain(
        &compiler,
        opts.cache.as_ref(),
        key,
        &kernel.func_name,
        &kernel.mlir,
        &counters,
    )
    .map(|m| (m.path, m.cached, m.seconds))
}

/// The module of a kernel from a bundle's kernel area: never compiled.
fn from_bundle(key: &Key, kernel: &Kernel, opts: &Options, hits: &AtomicUsize) -> Module {
    let found = opts
        .cache
        .as_ref()
        .and_then(|bucket| bucket.slot(key, Some(&kernel.func_name)).peek())
        .and_then(|entry| entry.file(crate::cache::MODULE).map(Path::to_path_buf));
    match found {
        Some(module) => {
            hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok((module, true, 0.0))
        }
        None => Err(format!(
            "not in the bundle: {} (key {key}) is missing or corrupt there",
            kernel.func_name
        )),
    }
}

/// Times one kernel: `iterations` samples after one warm-up run, and the wall
/// seconds of the iree-benchmark-module process.
fn time(
    module: &Path,
    sig: &OpSignature,
    iterations: u32,
    opts: &Options,
    index: usize,
    inputs: Inputs,
) -> Result<(f64, Stats), String> {
    let out = opts.work_dir.join("runs").join(format!("{index}.json"));
    let log = opts.work_dir.join("runs").join(format!("{index}.log"));
    let _ = std::fs::remove_file(&out);
    let inputs = input_values(sig, inputs);
    let invocation = opts
        .toolchain
        .benchmark_module(&Benchmark {
            run: RunModule {
                module,
                device: Some(&opts.device.runtime),
                function: Some(&sig.func_name),
                flags: &opts.device.run_flags,
                inputs: &inputs,
                outputs: &[],
            },
            // One warm-up repetition, then one sample per iteration.
            repetitions: u64::from(iterations) + 1,
            min_time: MinTime::Iterations(1),
            json_out: Some(&out),
            threads: opts.threads.filter(|_| opts.device.is_local_task()),
        })
        .map_err(|e| e.render())?;
    let seconds = run_tool(&invocation, &log, opts, "run failed")?;
    let text = std::fs::read_to_string(&out)
        .map_err(|e| format!("run failed: no benchmark output ({e})"))?;
    let mut samples =
        lockstep_iree::benchmark::samples_us(&lockstep_iree::benchmark::entries(&text)?);
    // The first repetition is the warm-up.
    if samples.len() > 1 {
        samples.remove(0);
    }
    let stats =
        Stats::from_samples(&samples).ok_or_else(|| "run failed: no timing samples".to_string())?;
    Ok((seconds, stats))
}

/// Runs one tool under the run's timeout ([`modules::run_tool`]).
fn run_tool(
    invocation: &Invocation,
    log: &Path,
    opts: &Options,
    failure: &str,
) -> Result<f64, String> {
    let limits = Limits {
        cwd: &opts.work_dir,
        timeout: opts.timeout,
        log,
    };
    modules::run_tool(invocation, &limits, &opts.logs_cited, failure)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::sig;

    #[test]
    fn bytes_needed_counts_operands_copies_and_the_reference() {
        // gemm 4x4x4 f32: a, b and c are 16 elements of 4 bytes each.
        let gemm = sig("gemm -m 4 -k 4 -n 4");
        assert_eq!(bytes_needed(&gemm, false), 3 * 16 * 4);
        // Verifying: 8 bytes per input element, 16 per output element.
        assert_eq!(bytes_needed(&gemm, true), 3 * 16 * 4 + 32 * 8 + 16 * 16);
        // A forward convolution's zero-padded input copy counts.
        let conv = sig("conv -n 1 -c 1 -H 4 -W 4 -k 1 -y 3 -x 3 -p 1 -q 1 -F 1");
        let operands = (16 + 9 + 16) * 4;
        assert_eq!(bytes_needed(&conv, false), operands + 36 * 4);
    }

    #[test]
    fn too_large_names_every_tensor_and_the_limit() {
        let gemm = sig("gemm -m 1000000 -k 1000000 -n 1");
        let reason = too_large(&gemm, false, 1 << 30).unwrap();
        assert!(reason.contains("a 1000000x1000000xfloat32"), "{reason}");
        assert!(reason.contains("limit of 1073741824 bytes"), "{reason}");
        assert!(reason.contains("--max-bytes"), "{reason}");
        assert_eq!(too_large(&sig("gemm -m 4 -k 4 -n 4"), true, 1 << 30), None);
        // Saturating: sizes past u64 do not wrap below the limit.
        let huge = sig("gemm -m 2147483647 -k 2147483647 -n 2147483647");
        assert!(too_large(&huge, true, u64::MAX - 1).is_some());
    }
}
