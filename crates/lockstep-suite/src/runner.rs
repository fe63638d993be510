//! The scheduler: compile and run steps on N workers. Each distinct compile
//! (by cache key) runs once even when several tests need it; a run step waits
//! for its compile; benchmark steps run afterwards, one at a time, so their
//! timings are not disturbed by other work. Every process has a timeout and a
//! log whose first line is the exact command, reproducible from a shell. The
//! command lines and their parsers are lockstep-iree's; progress goes out as
//! [`TestEvent`]s.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use lockstep_cache::{Bucket, Cache, Entry, Key};
use lockstep_core::events::Sink;
use lockstep_core::process::Exit;
use lockstep_core::Error;
use lockstep_iree::invoke::{self, Limits, MinTime};
use lockstep_iree::{Benchmark, Compile, RunModule, Toolchain};

use crate::cache::{self, Failure, Meta};
use crate::events::TestEvent;
use crate::model::{
    Expect, Metrics, Outcome, RunReport, StepKind, StepResult, StepStatus, TestResult,
};
use crate::names::file_stem;
use crate::plan::{Source, Test};

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub jobs: usize,
    pub compile_timeout: Duration,
    pub run_timeout: Duration,
    /// Compile everything; keep modules in the run directory only.
    pub no_cache: bool,
    /// Logs and uncached modules go here.
    pub run_dir: PathBuf,
    /// lit, for the lit tests among the run's.
    pub lit: Option<crate::lit::LitProgram>,
    /// Compile nothing: every module comes from the cache (a bundle's).
    pub no_compile: bool,
    /// How files named by URL (torch_ops expected outputs) are fetched.
    pub downloads: crate::torch_ops::Downloads,
}

/// A compile's result, shared by the tests that need it.
#[derive(Debug, Clone)]
struct Compiled {
    step: StepResult,
    module: Option<PathBuf>,
    statistics: Option<PathBuf>,
}

enum Job {
    Compile(String),
    Run(usize),
}

struct State {
    queue: VecDeque<Job>,
    in_flight: usize,
    compiled: HashMap<String, Compiled>,
    done: Vec<Option<TestResult>>,
    finished: usize,
}

/// Runs `tests`; returns the report (results in the tests' order).
pub fn run(
    tests: &[Test],
    toolchain: &Toolchain,
    cache: &Cache,
    opts: &RunOptions,
    sink: &dyn Sink,
) -> Result<RunReport, Error> {
    let started = Instant::now();
    let compiles_area = (!opts.no_cache).then(|| cache.bucket(lockstep_cache::Area::Compile));
    fs_err::create_dir_all(&opts.run_dir)?;
    // Checked before anything runs: without these nothing can (a run of
    // pytest tests alone needs no IREE tool).
    let needs_iree = tests.iter().any(|t| t.pytest.is_none());
    if needs_iree && !opts.no_compile {
        toolchain.tool("iree-compile")?;
    }
    if needs_iree {
        toolchain.tool("iree-run-module")?;
    }
    let Compiles {
        keys,
        sources,
        early,
    } = compiles(tests, toolchain, cache, &opts.downloads.mirrors);
    let mut queue = VecDeque::new();
    let mut queued = std::collections::HashSet::new();
    for k in keys.iter().flatten() {
        if queued.insert(k.clone()) {
            queue.push_back(Job::Compile(k.clone()));
        }
    }
    let total = tests.len();
    // No more workers than tests: a -j of a million starts as many threads
    // as there is work for.
    let jobs = opts.jobs.clamp(1, total.max(1));
    sink.emit(&TestEvent::RunStarted {
        tests: total,
        jobs,
        compiler: toolchain.compiler_version.clone(),
        tools: toolchain.bin.clone(),
    });
    let state = Mutex::new(State {
        queue,
        in_flight: 0,
        compiled: HashMap::new(),
        done: early,
        finished: 0,
    });
    // Tests already decided (skipped compile, bad source) are reported first.
    {
        let mut st = lock(&state);
        for (i, t) in tests.iter().enumerate() {
            if st.done[i].is_none() && t.compile.is_none() && t.lit.is_none() && t.pytest.is_none()
            {
                st.done[i] = Some(skipped(t));
            }
        }
        let decided: Vec<TestResult> = st.done.iter().flatten().cloned().collect();
        for r in decided {
            st.finished += 1;
            sink.emit(&TestEvent::TestStarted { id: r.id.clone() });
            sink.emit(&finished_event(&r, st.finished, total));
        }
    }
    let wake = Condvar::new();
    let mut users: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, k) in keys.iter().enumerate() {
        if let Some(k) = k {
            users.entry(k.as_str()).or_default().push(i);
        }
    }
    let ctx = Ctx {
        tests,
        keys: &keys,
        users: &users,
        sources: &sources,
        toolchain,
        cache: compiles_area.as_ref(),
        whole: cache,
        opts,
        sink,
        total,
        // A bundle's tests (`no_compile`) run from a cache lockstep does
        // not own there: nothing is remembered into it.
        runtime: (needs_iree && !opts.no_compile)
            .then(|| crate::run_cache::runtime_identity(toolchain))
            .flatten(),
    };
    // The OS may refuse threads (a -j in the thousands under a low limit):
    // the workers that started do all the work; none at all is an error.
    lockstep_core::pool::run_workers("lockstep-test", jobs, |_| worker(&ctx, &state, &wake))?;
    let mut st = state.into_inner().unwrap_or_else(|e| e.into_inner());
    // lit tests: one lit process per suite.
    if let Some(program) = &opts.lit {
        let lit = crate::lit_runner::LitRun {
            program,
            toolchain,
            cache: compiles_area.as_ref(),
            jobs,
            timeout: opts.run_timeout,
            run_dir: &opts.run_dir,
            sink,
        };
        let mut finished = st.finished;
        for (i, result) in crate::lit_runner::run(&lit, tests, &mut finished, total) {
            st.done[i] = Some(result);
        }
        st.finished = finished;
    }
    // pytest tests: one pytest process per suite.
    if tests.iter().any(|t| t.pytest.is_some()) {
        let py = crate::pytest_runner::PytestRun {
            timeout: opts.run_timeout,
            run_dir: &opts.run_dir,
            sink,
        };
        let mut finished = st.finished;
        for (i, result) in crate::pytest_runner::run(&py, tests, &mut finished, total) {
            st.done[i] = Some(result);
        }
        st.finished = finished;
    }
    // Benchmarks, one at a time.
    for (i, t) in tests.iter().enumerate() {
        let (Some(bench), Some(result)) = (&t.benchmark, st.done[i].as_mut()) else {
            continue;
        };
        if result.outcome != Outcome::Pass {
            continue;
        }
        let Some(key) = &keys[i] else { continue };
        let Some(compiled) = st.compiled.get(key).cloned() else {
            continue;
        };
        let step = benchmark(&ctx, t, bench, &compiled);
        sink.emit(&TestEvent::BenchmarkFinished {
            id: t.id.clone(),
            status: step.status,
            time_ms: step.metrics.as_ref().and_then(|m| m.time_ms),
            message: step.message.clone(),
        });
        result.seconds += step.seconds;
        if step.status == StepStatus::Failed {
            result.outcome = Outcome::Fail;
            result.reason = format!("benchmark: {}", step.message);
        }
        result.steps.push(step);
    }
    let compiles_cached = st.compiled.values().filter(|c| c.step.cached).count();
    let compiles_run = st.compiled.len() - compiles_cached;
    let results: Vec<TestResult> = st.done.into_iter().flatten().collect();
    sink.emit(&TestEvent::RunFinished {
        wall_seconds: started.elapsed().as_secs_f64(),
        compiles_run,
        compiles_cached,
        failed: results.iter().any(|r| r.outcome.is_failure()),
    });
    Ok(RunReport {
        results,
        wall_seconds: started.elapsed().as_secs_f64(),
        jobs,
        compiler: toolchain.compiler_version.clone(),
        compiler_identity: toolchain.identity.clone(),
        compiles_run,
        compiles_cached,
        changes: Default::default(),
        shard: None,
    })
}

/// What a run compiles: per test its key, per key what to compile.
struct Compiles {
    /// `None`: nothing to compile (skipped, or it failed before compiling).
    keys: Vec<Option<String>>,
    /// Source, flags, directory and statistics of each key.
    sources: HashMap<String, (PathBuf, Vec<String>, PathBuf, bool)>,
    /// Results of tests that failed before compiling (bad source).
    early: Vec<Option<TestResult>>,
}

/// Resolves sources (downloads happen here, once each) and compile keys.
fn compiles(
    tests: &[Test],
    toolchain: &Toolchain,
    cache: &Cache,
    mirrors: &lockstep_cache::download::Mirrors,
) -> Compiles {
    let mut keys: Vec<Option<String>> = Vec::with_capacity(tests.len());
    let mut sources: HashMap<String, (PathBuf, Vec<String>, PathBuf, bool)> = HashMap::new();
    let mut early: Vec<Option<TestResult>> = vec![None; tests.len()];
    // Each source is fetched and hashed once, each flag list's identity
    // computed once, however many tests share them.
    let mut resolved: HashMap<Source, Result<(PathBuf, Vec<u8>), String>> = HashMap::new();
    let mut identities: HashMap<&[String], String> = HashMap::new();
    // The `#hal.executable.object` paths each source names.
    let mut objects: HashMap<Source, Vec<String>> = HashMap::new();
    for (i, t) in tests.iter().enumerate() {
        let Some(spec) = &t.compile else {
            keys.push(None);
            continue;
        };
        if let Some(Err(why)) = t.torch.as_ref().map(|torch| &torch.spec) {
            early[i] = Some(failed_before_compile(t, why));
            keys.push(None);
            continue;
        }
        let (path, digest) = match resolved.entry(spec.source.clone()).or_insert_with(|| {
            resolve_source(&spec.source, cache, mirrors).map(|(path, digest, found)| {
                objects.insert(spec.source.clone(), found);
                (path, digest)
            })
        }) {
            Ok(found) => found.clone(),
            Err(msg) => {
                early[i] = Some(failed_before_compile(t, msg));
                keys.push(None);
                continue;
            }
        };
        let identity = identities
            .entry(spec.flags.as_slice())
            .or_insert_with(|| lockstep_iree::key_identity(&toolchain.identity, &spec.flags));
        // Objects a (preprocessed) source links are part of what it compiles to.
        let digest = match objects.get(&spec.source) {
            Some(paths) if !paths.is_empty() => with_objects(&digest, paths, &spec.cwd),
            _ => digest,
        };
        let key = cache::key(identity, &digest, &spec.flags, spec.statistics).to_string();
        sources.entry(key.clone()).or_insert((
            path,
            spec.flags.clone(),
            spec.cwd.clone(),
            spec.statistics,
        ));
        keys.push(Some(key));
    }
    Compiles {
        keys,
        sources,
        early,
    }
}

struct Ctx<'a> {
    tests: &'a [Test],
    keys: &'a [Option<String>],
    /// The tests that need each compile (by key).
    users: &'a HashMap<&'a str, Vec<usize>>,
    sources: &'a HashMap<String, (PathBuf, Vec<String>, PathBuf, bool)>,
    toolchain: &'a Toolchain,
    /// The compile area (`None` with --no-cache).
    cache: Option<&'a Bucket>,
    /// The whole cache (its downloads area).
    whole: &'a Cache,
    opts: &'a RunOptions,
    sink: &'a dyn Sink,
    total: usize,
    /// `iree-run-module`'s identity, for remembered passes
    /// ([`crate::run_cache`]); `None`: runs are not remembered.
    runtime: Option<String>,
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

fn worker(ctx: &Ctx, state: &Mutex<State>, wake: &Condvar) {
    loop {
        let job = {
            let mut st = lock(state);
            loop {
                if let Some(job) = st.queue.pop_front() {
                    st.in_flight += 1;
                    break job;
                }
                if st.in_flight == 0 {
                    wake.notify_all();
                    return;
                }
                st = wake.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        };
        match job {
            Job::Compile(key) => {
                let compiled = compile(ctx, &key);
                let mut st = lock(state);
                st.compiled.insert(key.clone(), compiled.clone());
                for &i in ctx.users.get(key.as_str()).into_iter().flatten() {
                    if st.done[i].is_some() {
                        continue;
                    }
                    let t = &ctx.tests[i];
                    if compiled.step.status == StepStatus::Passed
                        && t.run.is_some()
                        && t.expect != Expect::CompileFail
                    {
                        // Runs go first so results stream while compiles continue.
                        st.queue.push_front(Job::Run(i));
                    } else {
                        let r = decide(t, compiled.step.clone(), None);
                        finish(ctx, &mut st, i, r);
                    }
                }
                st.in_flight -= 1;
                wake.notify_all();
            }
            Job::Run(i) => {
                let key = ctx.keys[i].clone().unwrap_or_default();
                // A run is only queued after its compile was recorded.
                let compiled =
                    lock(state)
                        .compiled
                        .get(&key)
                        .cloned()
                        .unwrap_or_else(|| Compiled {
                            step: step(
                                StepKind::Compile,
                                StepStatus::Failed,
                                String::new(),
                                None,
                                "internal: compile result missing".into(),
                            ),
                            module: None,
                            statistics: None,
                        });
                let t = &ctx.tests[i];
                let run_key = match (ctx.cache, &ctx.runtime) {
                    (Some(_), Some(runtime)) => crate::run_cache::key(runtime, &key, t),
                    _ => None,
                };
                let remembered = run_key
                    .as_ref()
                    .zip(ctx.cache)
                    .is_some_and(|(k, bucket)| crate::run_cache::passed(bucket, k));
                let run_step = if remembered {
                    let mut cached = step(
                        StepKind::Run,
                        StepStatus::Passed,
                        String::new(),
                        None,
                        "passed before with these inputs (cached)".into(),
                    );
                    cached.cached = true;
                    cached
                } else {
                    let ran = run_module(ctx, t, &compiled);
                    if let (Some(k), Some(bucket), StepStatus::Passed) =
                        (&run_key, ctx.cache, ran.status)
                    {
                        crate::run_cache::remember(bucket, k);
                    }
                    ran
                };
                let mut st = lock(state);
                let r = decide(&ctx.tests[i], compiled.step.clone(), Some(run_step));
                finish(ctx, &mut st, i, r);
                st.in_flight -= 1;
                wake.notify_all();
            }
        }
    }
}

/// Records a decided test; its event goes out under the state lock, so
/// `done` counts up in order.
fn finish(ctx: &Ctx, st: &mut State, i: usize, result: TestResult) {
    st.finished += 1;
    ctx.sink
        .emit(&finished_event(&result, st.finished, ctx.total));
    st.done[i] = Some(result);
}

fn finished_event(r: &TestResult, done: usize, total: usize) -> TestEvent {
    TestEvent::TestFinished {
        id: r.id.clone(),
        outcome: r.outcome,
        seconds: r.seconds,
        reason: r.reason.clone(),
        done,
        total,
    }
}

/// The source's local path, sha256 (raw bytes) and the object paths it
/// names (`#hal.executable.object<{path = "..."}>`: a preprocessed module's
/// external kernels, read in the same pass as the hash).
fn resolve_source(
    source: &Source,
    cache: &Cache,
    mirrors: &lockstep_cache::download::Mirrors,
) -> Result<(PathBuf, Vec<u8>, Vec<String>), String> {
    let mut objects = Vec::new();
    let (path, hex_digest) = match source {
        Source::File(p)
            if p.metadata()
                .is_ok_and(|m| m.is_file() && m.len() <= SCANNED_SOURCE_BYTES) =>
        {
            let bytes = lockstep_core::fs::read_tree_file(
                "the source",
                p,
                crate::sources::MAX_SOURCE_BYTES,
            )
            .map_err(|e| format!("cannot read the source: {}", e.message))?;
            objects = object_paths(&bytes);
            (p.clone(), lockstep_core::hash::sha256_bytes(&bytes))
        }
        // A model's weights inline: hashed as it streams, never held.
        Source::File(p) if p.is_file() => {
            let (digest, _) = lockstep_core::fs::sha256_tree_file(
                "the source",
                p,
                crate::sources::MAX_SOURCE_BYTES,
            )
            .map_err(|e| format!("cannot read the source: {}", e.message))?;
            (p.clone(), digest)
        }
        Source::File(p) => return Err(format!("source file {} {}", p.display(), not_a_file(p))),
        // fetch verified the file against this digest.
        Source::Url { url, sha256 } => (
            lockstep_cache::download::fetch_mirrored(cache, url, sha256, mirrors)
                .map_err(|e| e.to_string())?,
            sha256.trim().to_lowercase(),
        ),
    };
    let digest = hex::decode(&hex_digest).map_err(|e| format!("bad sha256 {hex_digest}: {e}"))?;
    Ok((path, digest, objects))
}

/// Sources up to this size are read whole, to find the objects they name
/// (a preprocessed module with external kernels is small; a model with
/// its weights inline is hashed as it streams).
const SCANNED_SOURCE_BYTES: u64 = 64 << 20;

/// The `path`s of the `#hal.executable.object<{path = "..."}>`s in an MLIR
/// text, each once.
fn object_paths(bytes: &[u8]) -> Vec<String> {
    const MARK: &[u8] = b"#hal.executable.object<{";
    let mut found: Vec<String> = Vec::new();
    let mut at = 0;
    while let Some(i) = find(&bytes[at..], MARK) {
        let start = at + i + MARK.len();
        at = start;
        let rest = &bytes[start..bytes.len().min(start + 4096)];
        let text = String::from_utf8_lossy(rest);
        let Some(after) = text.trim_start().strip_prefix("path") else {
            continue;
        };
        let Some(after) = after.trim_start().strip_prefix('=') else {
            continue;
        };
        let Some(literal) = after.trim_start().strip_prefix('"') else {
            continue;
        };
        let Some(end) = literal.find('"') else {
            continue;
        };
        let path = literal[..end].to_string();
        if !found.contains(&path) {
            found.push(path);
        }
    }
    found
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `digest` with the bytes of each object in `paths` (relative to the
/// compile's directory `cwd`): a rebuilt kernel is a new compile. A missing
/// object keys as missing (the compile then fails saying so).
fn with_objects(digest: &[u8], paths: &[String], cwd: &Path) -> Vec<u8> {
    let mut text = hex::encode(digest);
    for path in paths {
        let file = cwd.join(path);
        let sha =
            lockstep_core::hash::sha256_file_memo(&file, &lockstep_core::paths::file_hashes())
                .unwrap_or_else(|_| "missing".into());
        text.push_str(&format!("\nobject {path} {sha}"));
    }
    hex::decode(lockstep_core::hash::sha256_bytes(text.as_bytes())).unwrap_or_default()
}

fn compile(ctx: &Ctx, key: &str) -> Compiled {
    let Some((source, flags, cwd, statistics)) = ctx.sources.get(key) else {
        return Compiled {
            step: step(
                StepKind::Compile,
                StepStatus::Failed,
                String::new(),
                None,
                "internal: no source recorded for this compile".into(),
            ),
            module: None,
            statistics: None,
        };
    };
    let users: Vec<String> = ctx
        .users
        .get(key)
        .into_iter()
        .flatten()
        .map(|&i| ctx.tests[i].id.clone())
        .collect();
    for id in &users {
        ctx.sink.emit(&TestEvent::TestStarted { id: id.clone() });
    }
    ctx.sink.emit(&TestEvent::CompileStarted {
        key: key.to_string(),
        source: source.clone(),
        tests: users,
    });
    let started = Instant::now();
    let compiled = compile_step(ctx, key, source, flags, cwd, *statistics, started);
    ctx.sink.emit(&TestEvent::CompileFinished {
        key: key.to_string(),
        status: compiled.step.status,
        cached: compiled.step.cached,
        seconds: compiled.step.seconds,
        message: compiled.step.message.clone(),
    });
    compiled
}

fn compile_step(
    ctx: &Ctx,
    key: &str,
    source: &Path,
    flags: &[String],
    cwd: &Path,
    statistics: bool,
    started: Instant,
) -> Compiled {
    match compile_inner(ctx, key, source, flags, cwd, statistics) {
        Ok(mut c) => {
            if !c.step.cached {
                c.step.seconds = started.elapsed().as_secs_f64();
            }
            c
        }
        Err(e) => Compiled {
            step: step(
                StepKind::Compile,
                StepStatus::Failed,
                String::new(),
                None,
                format!("{e}"),
            ),
            module: None,
            statistics: None,
        },
    }
}

fn compile_inner(
    ctx: &Ctx,
    key: &str,
    source: &Path,
    flags: &[String],
    cwd: &Path,
    statistics: bool,
) -> Result<Compiled, Error> {
    let slot = match (ctx.cache, Key::parse(key)) {
        (Some(bucket), Some(key)) => Some(bucket.slot(&key, None)),
        _ => None,
    };
    if ctx.opts.no_compile {
        // A bundle's entries are read, never rebuilt or removed.
        return match slot.as_ref().and_then(|s| s.peek()) {
            Some(entry) => Ok(from_entry(&entry, statistics)),
            None => Err(Error::failed(format!(
                "not in the bundle: no module for {} with these flags",
                source.display()
            ))),
        };
    }
    if let Some(entry) = slot.as_ref().and_then(|s| s.get()) {
        return Ok(from_entry(&entry, statistics));
    }
    // Another runner compiling the same key holds the lock: wait, then use
    // what it built.
    let lock = slot.as_ref().map(|s| s.lock()).transpose()?;
    if let Some(entry) = lock.as_ref().and_then(|l| l.get()) {
        return Ok(from_entry(&entry, statistics));
    }
    // The compiler writes into the run directory, which is kept, so the
    // logged command reproduces exactly; the cache gets a copy.
    let out_dir = ctx.opts.run_dir.join("modules").join(short_key(key));
    fs_err::create_dir_all(&out_dir)?;
    let module = out_dir.join("module.vmfb");
    let stats = out_dir.join("statistics.json");
    let invocation = ctx.toolchain.compile(&Compile {
        source,
        flags,
        output: &module,
        phase: None,
        statistics: statistics.then_some(stats.as_path()),
    })?;
    let log = ctx
        .opts
        .run_dir
        .join("compile")
        .join(format!("{}.log", short_key(key)));
    let done = invocation.run(&Limits {
        cwd,
        timeout: ctx.opts.compile_timeout,
        log: &log,
    })?;
    let command = done.command.clone();
    let tail = done.tail(30);
    let meta = |failure: Option<Failure>| Meta {
        command: command.clone(),
        compiler: ctx.toolchain.compiler_version.clone(),
        failure,
    };
    match done.exit {
        Exit::Code(0) => {
            let (module, statistics_file) = match &lock {
                None => (module, statistics.then_some(stats)),
                Some(lock) => {
                    let mut stage = lock.stage();
                    stage.copy(cache::MODULE, &module)?;
                    if statistics && stats.is_file() {
                        stage.copy(cache::STATISTICS, &stats)?;
                    }
                    let entry = stage.commit(to_json(&meta(None))?)?;
                    (
                        entry.file(cache::MODULE).unwrap_or(&module).to_path_buf(),
                        statistics
                            .then(|| entry.file(cache::STATISTICS).map(Path::to_path_buf))
                            .flatten(),
                    )
                }
            };
            Ok(Compiled {
                step: StepResult {
                    log: Some(log),
                    output_tail: tail,
                    ..step(
                        StepKind::Compile,
                        StepStatus::Passed,
                        command,
                        None,
                        String::new(),
                    )
                },
                module: Some(module),
                statistics: statistics_file,
            })
        }
        exit => {
            let message = match exit {
                Exit::TimedOut => format!("iree-compile {}", done.describe_exit()),
                Exit::Signal(s) => format!("iree-compile crashed (signal {s})"),
                other => format!(
                    "iree-compile failed ({}): {}",
                    other.describe(),
                    done.first_error()
                ),
            };
            // Deterministic compile errors are cached; timeouts and crashes are not.
            if let (Exit::Code(_), Some(lock)) = (exit, &lock) {
                let failure = Failure {
                    exit: exit.describe(),
                    output: tail.clone(),
                };
                if let Ok(meta) = to_json(&meta(Some(failure))) {
                    let _ = lock.stage().commit(meta);
                }
            }
            Ok(Compiled {
                step: StepResult {
                    log: Some(log),
                    output_tail: tail,
                    ..step(
                        StepKind::Compile,
                        StepStatus::Failed,
                        command,
                        None,
                        message,
                    )
                },
                module: None,
                statistics: None,
            })
        }
    }
}

/// A compile answered by the cache: its module, or its cached failure.
fn from_entry(entry: &Entry, statistics: bool) -> Compiled {
    let meta: Meta = entry.meta_as().unwrap_or(Meta {
        command: String::new(),
        compiler: String::new(),
        failure: None,
    });
    let module = entry.file(cache::MODULE);
    match (&meta.failure, module) {
        (None, Some(module)) => Compiled {
            step: StepResult {
                cached: true,
                ..step(
                    StepKind::Compile,
                    StepStatus::Passed,
                    meta.command.clone(),
                    None,
                    format!("cached in {}", module.parent().unwrap_or(module).display()),
                )
            },
            module: Some(module.to_path_buf()),
            statistics: statistics
                .then(|| entry.file(cache::STATISTICS).map(Path::to_path_buf))
                .flatten(),
        },
        (failure, _) => {
            let (exit, output) = failure
                .as_ref()
                .map(|f| (f.exit.clone(), f.output.clone()))
                .unwrap_or_else(|| ("left no module".into(), String::new()));
            let why = lockstep_iree::invoke::first_error(&output);
            Compiled {
                step: StepResult {
                    cached: true,
                    output_tail: output,
                    ..step(
                        StepKind::Compile,
                        StepStatus::Failed,
                        meta.command,
                        None,
                        format!("iree-compile {exit} (cached): {why}"),
                    )
                },
                module: None,
                statistics: None,
            }
        }
    }
}

fn to_json(meta: &Meta) -> Result<serde_json::Value, Error> {
    serde_json::to_value(meta)
        .map_err(|e| Error::failed("cannot encode a cache record").cause(e.to_string()))
}

fn run_module(ctx: &Ctx, t: &Test, compiled: &Compiled) -> StepResult {
    let Some(spec) = &t.run else {
        return step(
            StepKind::Run,
            StepStatus::Skipped,
            String::new(),
            None,
            "run skipped".into(),
        );
    };
    let Some(module) = &compiled.module else {
        return step(
            StepKind::Run,
            StepStatus::Skipped,
            String::new(),
            None,
            "no module".into(),
        );
    };
    let failed = |command: String, log: Option<PathBuf>, message: String| {
        step(StepKind::Run, StepStatus::Failed, command, log, message)
    };
    let io = match torch_io(ctx, t, true) {
        Ok(io) => io,
        Err(why) => return failed(String::new(), None, why),
    };
    let flags = match parameter_flags(ctx, t) {
        Ok(extra) => [spec.flags.clone(), extra].concat(),
        Err(why) => return failed(String::new(), None, why),
    };
    let invocation = match ctx.toolchain.run_module(&RunModule {
        module,
        device: None,
        function: io.function.as_deref(),
        flags: &flags,
        inputs: &io.inputs,
        outputs: &io.outputs,
    }) {
        Ok(invocation) => invocation,
        Err(e) => return failed(String::new(), None, e.to_string()),
    };
    let command = invocation.command(&spec.cwd);
    if let Some(missing) = spec.files.iter().find(|f| !f.is_file()) {
        return failed(
            command,
            None,
            match std::fs::metadata(missing) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    format!("missing input file {}", missing.display())
                }
                _ => format!("input file {} {}", missing.display(), not_a_file(missing)),
            },
        );
    }
    let log = ctx
        .opts
        .run_dir
        .join("run")
        .join(format!("{}.log", file_stem(&t.id)));
    let limits = Limits {
        cwd: &spec.cwd,
        timeout: ctx.opts.run_timeout,
        log: &log,
    };
    let done = match invocation.run(&limits) {
        Ok(done) => done,
        Err(e) => return failed(command, Some(log), e.to_string()),
    };
    let (status, message) = match done.exit {
        Exit::Code(0) => (StepStatus::Passed, String::new()),
        Exit::TimedOut => (
            StepStatus::Failed,
            format!("iree-run-module {}", done.describe_exit()),
        ),
        Exit::Signal(s) => (
            StepStatus::Failed,
            format!("iree-run-module crashed (signal {s})"),
        ),
        other => (
            StepStatus::Failed,
            format!(
                "iree-run-module failed ({}): {}",
                other.describe(),
                done.first_error()
            ),
        ),
    };
    // torch_ops: the outputs against the expected ones (numpy's allclose).
    let (status, message) = match (&status, t.torch.as_ref().and_then(|r| r.spec.as_ref().ok())) {
        (StepStatus::Passed, Some(torch)) => {
            match crate::torch_ops::compare(torch, &io.outputs, &io.expected) {
                Ok(()) => (status, message),
                Err(why) => (
                    StepStatus::Failed,
                    format!("outputs differ from the expected outputs: {why}"),
                ),
            }
        }
        _ => (status, message),
    };
    StepResult {
        seconds: done.elapsed.as_secs_f64(),
        output_tail: done.tail(30),
        fetched: io.fetched,
        ..step(StepKind::Run, status, command, Some(log), message)
    }
}

/// `--parameters=SCOPE=PATH` for each of the test's parameter files: a
/// file beside the suite (a regular file), or one fetched by URL into the
/// downloads area and checked against its sha256 (once, whatever the number
/// of tests and runs that name it).
fn parameter_flags(ctx: &Ctx, t: &Test) -> Result<Vec<String>, String> {
    t.parameters
        .iter()
        .enumerate()
        .map(|(i, (scope, source))| {
            let path = match source {
                Source::File(p) if p.is_file() => p.clone(),
                Source::File(p) => {
                    return Err(format!("parameter file {} {}", p.display(), not_a_file(p)))
                }
                Source::Url { url, sha256 } => {
                    let kept = lockstep_cache::download::fetch_mirrored(
                        ctx.whole,
                        url,
                        sha256,
                        &ctx.opts.downloads.mirrors,
                    )
                    .map_err(|e| format!("parameters of scope `{scope}`: {e}"))?;
                    named_for_iree(ctx, t, i, url, &kept)?
                }
            };
            Ok(format!("--parameters={scope}={}", path.display()))
        })
        .collect()
}

/// IREE picks a parameter file's format by its extension, and the
/// downloads area names files by their digest: a link in the run
/// directory gives the downloaded file the extension its URL has
/// (`.irpa` when the URL has none IREE reads).
fn named_for_iree(
    ctx: &Ctx,
    t: &Test,
    i: usize,
    url: &str,
    kept: &Path,
) -> Result<PathBuf, String> {
    let path_part = url.split(['?', '#']).next().unwrap_or(url);
    let ext = [".irpa", ".gguf", ".safetensors"]
        .into_iter()
        .find(|e| path_part.ends_with(e))
        .unwrap_or(".irpa");
    let dir = ctx.opts.run_dir.join("parameters").join(file_stem(&t.id));
    let link = dir.join(format!("{i}{ext}"));
    fs_err::create_dir_all(&dir).map_err(|e| e.to_string())?;
    match std::fs::read_link(&link) {
        Ok(target) if target == kept => return Ok(link),
        Ok(_) => fs_err::remove_file(&link).map_err(|e| e.to_string())?,
        Err(_) => {}
    }
    std::os::unix::fs::symlink(kept, &link)
        .map_err(|e| format!("cannot link {} for IREE: {e}", link.display()))?;
    Ok(link)
}

/// A torch_ops test's function, inputs (generated), output files and
/// expected outputs (fetched); nothing for other tests.
#[derive(Default)]
struct TorchIo {
    function: Option<String>,
    inputs: Vec<String>,
    outputs: Vec<PathBuf>,
    expected: Vec<PathBuf>,
    /// Files fetched by URL alone, with what they held.
    fetched: Vec<crate::model::Fetched>,
}

fn torch_io(ctx: &Ctx, t: &Test, with_outputs: bool) -> Result<TorchIo, String> {
    let Some(torch) = &t.torch else {
        return Ok(TorchIo::default());
    };
    let spec = torch.spec.as_ref().map_err(|why| why.clone())?;
    let io_dir = ctx.opts.run_dir.join("io").join(file_stem(&t.id));
    let mut io = TorchIo {
        function: Some(spec.function.clone()),
        inputs: crate::torch_ops::write_inputs(
            spec,
            &torch.dir,
            &io_dir,
            ctx.whole,
            &ctx.opts.downloads,
        )?,
        ..TorchIo::default()
    };
    if with_outputs {
        for (i, file) in spec.expected.iter().enumerate() {
            let (path, sha256) =
                crate::torch_ops::resolve(file, &torch.dir, ctx.whole, &ctx.opts.downloads)
                    .map_err(|why| format!("expected output {i}: {why}"))?;
            if let (crate::torch_ops::FileRef::Url(url), Some(sha256)) = (file, sha256) {
                io.fetched.push(crate::model::Fetched {
                    url: url.clone(),
                    sha256,
                });
            }
            io.expected.push(path);
            io.outputs.push(io_dir.join(format!("output_{i}.npy")));
        }
    }
    Ok(io)
}

/// The benchmark step; a failure to start it is a failed step, not an
/// error, so the finished run is still reported.
fn benchmark(
    ctx: &Ctx,
    t: &Test,
    bench: &crate::plan::BenchSpec,
    compiled: &Compiled,
) -> StepResult {
    let failed = |command: String, log: Option<PathBuf>, message: String| {
        step(
            StepKind::Benchmark,
            StepStatus::Failed,
            command,
            log,
            message,
        )
    };
    let Some(module) = &compiled.module else {
        return step(
            StepKind::Benchmark,
            StepStatus::Skipped,
            String::new(),
            None,
            "no module".into(),
        );
    };
    let g = &bench.goldens;
    let io = match torch_io(ctx, t, false) {
        Ok(io) => io,
        Err(why) => return failed(String::new(), None, why),
    };
    let flags = match parameter_flags(ctx, t) {
        Ok(extra) => [bench.flags.clone(), extra].concat(),
        Err(why) => return failed(String::new(), None, why),
    };
    let invocation = match ctx.toolchain.benchmark_module(&Benchmark {
        run: RunModule {
            module,
            device: None,
            function: io.function.as_deref(),
            flags: &flags,
            inputs: &io.inputs,
            outputs: &[],
        },
        repetitions: g.repetitions.max(1) as u64,
        min_time: MinTime::Seconds(g.min_time_s),
        json_out: None,
        threads: None,
    }) {
        Ok(invocation) => invocation,
        // A missing iree-benchmark-module fails this step only.
        Err(e) => return failed(String::new(), None, e.to_string()),
    };
    let cwd = t
        .run
        .as_ref()
        .map(|r| r.cwd.clone())
        .or_else(|| t.torch.as_ref().map(|r| r.dir.clone()))
        .unwrap_or_default();
    let log = ctx
        .opts
        .run_dir
        .join("benchmark")
        .join(format!("{}.log", file_stem(&t.id)));
    let done = match invocation.run(&Limits {
        cwd: &cwd,
        timeout: ctx.opts.run_timeout,
        log: &log,
    }) {
        Ok(done) => done,
        Err(e) => return failed(invocation.command(&cwd), Some(log), e.to_string()),
    };
    let mut metrics = Metrics {
        golden_time_ms: g.time_ms,
        vmfb_size: fs_err::metadata(module).ok().map(|m| m.len()),
        dispatch_count: compiled
            .statistics
            .as_ref()
            .and_then(|p| invoke::dispatch_count(p)),
        ..Metrics::default()
    };
    if !done.success() {
        return StepResult {
            seconds: done.elapsed.as_secs_f64(),
            output_tail: done.tail(30),
            metrics: Some(metrics),
            ..step(
                StepKind::Benchmark,
                StepStatus::Failed,
                done.command.clone(),
                Some(log),
                format!("iree-benchmark-module {}", done.exit.describe()),
            )
        };
    }
    metrics.time_ms = lockstep_iree::benchmark::entries(&done.output())
        .ok()
        .and_then(|entries| lockstep_iree::benchmark::median_us(&entries))
        .map(|us| us / 1e3);
    let mut problems = Vec::new();
    if let (Some(golden), Some(got)) = (g.time_ms, metrics.time_ms) {
        if got > golden * g.tolerance {
            problems.push(format!(
                "time {got:.3} ms > golden {golden} ms x {}",
                g.tolerance
            ));
        }
    }
    if let Some(golden) = g.dispatch_count {
        match metrics.dispatch_count {
            Some(got) if got > golden => {
                problems.push(format!("dispatch count {got} > golden {golden}"))
            }
            None => problems.push("no dispatch count in the compiler statistics".into()),
            _ => {}
        }
    }
    if let (Some(golden), Some(got)) = (g.vmfb_size, metrics.vmfb_size) {
        if got > golden {
            problems.push(format!("vmfb size {got} > golden {golden}"));
        }
    }
    let status = if problems.is_empty() {
        StepStatus::Passed
    } else {
        StepStatus::Failed
    };
    StepResult {
        seconds: done.elapsed.as_secs_f64(),
        metrics: Some(metrics),
        ..step(
            StepKind::Benchmark,
            status,
            done.command.clone(),
            Some(log),
            problems.join("; "),
        )
    }
}

/// The outcome of a test from its steps, following the iree-test-suites runner.
pub fn decide(t: &Test, compile: StepResult, run: Option<StepResult>) -> TestResult {
    let compile_ok = compile.status == StepStatus::Passed;
    let run_status = run.as_ref().map(|r| r.status);
    let (outcome, reason) = match (compile_ok, t.expect, run_status) {
        (false, Expect::CompileFail, _) => (Outcome::Xfail, t.expect_reason.clone()),
        (false, _, _) => (Outcome::Fail, format!("compile: {}", compile.message)),
        (true, Expect::CompileFail, _) => (
            Outcome::Xpass,
            format!("compiled although {}", t.expect_reason),
        ),
        (true, Expect::RunFail, Some(StepStatus::Failed)) => {
            (Outcome::Xfail, t.expect_reason.clone())
        }
        (true, Expect::RunFail, Some(StepStatus::Passed)) => {
            (Outcome::Xpass, format!("ran although {}", t.expect_reason))
        }
        (true, _, Some(StepStatus::Failed)) => (
            Outcome::Fail,
            format!(
                "run: {}",
                run.as_ref().map(|r| r.message.clone()).unwrap_or_default()
            ),
        ),
        // Compiled, but its device is not on this machine.
        (true, _, None) if t.skip_reason.is_some() => {
            (Outcome::Skip, t.skip_reason.clone().unwrap_or_default())
        }
        (true, _, _) => (Outcome::Pass, String::new()),
    };
    let mut steps = vec![compile];
    match run {
        Some(r) => steps.push(r),
        None => {
            let why = if !compile_ok {
                "compile failed"
            } else if t.expect == Expect::CompileFail {
                "compile was expected to fail"
            } else if let Some(why) = &t.skip_reason {
                why.as_str()
            } else {
                "run skipped"
            };
            steps.push(step(
                StepKind::Run,
                StepStatus::Skipped,
                String::new(),
                None,
                why.into(),
            ));
        }
    }
    TestResult {
        id: t.id.clone(),
        case: t.case.clone(),
        group: t.group.clone(),
        outcome,
        reason,
        seconds: steps.iter().map(|s| s.seconds).sum(),
        steps,
        markers: t.markers.clone(),
    }
}

fn skipped(t: &Test) -> TestResult {
    let (reason, message) = match &t.skip_reason {
        Some(why) => (why.clone(), why.clone()),
        None => (
            "listed in skip_compile_tests".to_string(),
            "skipped by configuration".to_string(),
        ),
    };
    TestResult {
        id: t.id.clone(),
        case: t.case.clone(),
        group: t.group.clone(),
        outcome: Outcome::Skip,
        reason,
        steps: vec![
            step(
                StepKind::Compile,
                StepStatus::Skipped,
                String::new(),
                None,
                message.clone(),
            ),
            step(
                StepKind::Run,
                StepStatus::Skipped,
                String::new(),
                None,
                message,
            ),
        ],
        seconds: 0.0,
        markers: t.markers.clone(),
    }
}

fn failed_before_compile(t: &Test, message: &str) -> TestResult {
    let compile = step(
        StepKind::Compile,
        StepStatus::Failed,
        String::new(),
        None,
        message.to_string(),
    );
    let mut r = decide(
        &Test {
            expect: Expect::Pass,
            ..t.clone()
        },
        compile,
        None,
    );
    r.outcome = Outcome::Fail;
    r.reason = format!("compile: {message}");
    r
}

fn step(
    kind: StepKind,
    status: StepStatus,
    command: String,
    log: Option<PathBuf>,
    message: String,
) -> StepResult {
    StepResult {
        kind,
        status,
        command,
        log,
        seconds: 0.0,
        cached: false,
        message,
        output_tail: String::new(),
        metrics: None,
        fetched: Vec::new(),
    }
}

/// Why `path`, which is not a regular file, cannot be read as one.
fn not_a_file(path: &Path) -> String {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist".into(),
        Err(e) => format!("cannot be read ({e})"),
        Ok(m) if m.is_dir() => "is a directory, not a file".into(),
        Ok(_) => "is not a regular file (a device or a FIFO)".into(),
    }
}

/// The first 16 hex digits of a cache key: a short, unique enough name.
fn short_key(key: &str) -> &str {
    key.get(..16).unwrap_or(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_a_source_names_are_found_and_key_the_compile() {
        let text = br#"hal.executable.variant public @v target(#t) objects([#hal.executable.object<{path = "k.o"}>, #hal.executable.object<{ path = "/abs/j.o" }>, #hal.executable.object<{path = "k.o"}>]) {"#;
        assert_eq!(object_paths(text), ["k.o", "/abs/j.o"]);
        assert!(
            object_paths(b"#hal.executable.object<{data = dense<0> : vector<1xi8>}>").is_empty()
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("k.o"), b"one").unwrap();
        let paths = vec!["k.o".to_string()];
        let first = with_objects(b"d", &paths, dir.path());
        assert_eq!(first, with_objects(b"d", &paths, dir.path()));
        std::fs::write(dir.path().join("k.o"), b"two!").unwrap();
        assert_ne!(
            first,
            with_objects(b"d", &paths, dir.path()),
            "a rebuilt object"
        );
    }

    #[test]
    fn what_a_non_file_is_is_said() -> Result<(), Box<dyn std::error::Error>> {
        let tmp = tempfile::tempdir()?;
        assert_eq!(not_a_file(tmp.path()), "is a directory, not a file");
        assert_eq!(not_a_file(&tmp.path().join("nope")), "does not exist");
        assert!(not_a_file(Path::new("/dev/zero")).contains("not a regular file"));
        Ok(())
    }
}
