//! The direct form of `lockstep preprocess`: read INPUT (a module at the
//! executable-sources phase, or a source program, which iree-compile first
//! takes to that phase), preprocess every executable ([`crate::engine`]),
//! write the result, and, when asked, let iree-compile continue from the
//! phase to a vmfb. The compiles are lockstep-iree's; the phases report as
//! [`PreprocessEvent`]s.

use std::path::{Path, PathBuf};
use std::time::Instant;

use lockstep_core::events::Sink;
use lockstep_core::output::{self, Target};
use lockstep_core::Error;
use lockstep_iree::{Compile, Limits, Phase, Toolchain};
use serde::Serialize;

use crate::engine::{self, Options, Outcome, STDERR_LINES, WHOLE_MODULE_TIMEOUT};
use crate::events::PreprocessEvent;
use crate::scan;

/// What the direct form reads and writes.
pub struct Direct<'a> {
    pub input: &'a Path,
    pub output: &'a Target,
    /// Continue to this vmfb after writing the output.
    pub compile: Option<&'a Path>,
    /// iree-compile flags for both phases.
    pub flags: &'a [String],
    pub toolchain: &'a Toolchain,
}

/// What the direct form did: the engine's outcome plus where things went
/// (the `--json` results, docs/schemas/preprocess-results.json).
#[derive(Debug, Serialize)]
pub struct Report {
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The output file (`null` for stdout).
    pub output: Option<PathBuf>,
    /// The vmfb of `--compile`.
    pub compiled: Option<PathBuf>,
    pub wall_seconds: f64,
}

/// The largest INPUT read (MLIR of real models runs to hundreds of MB; a
/// device like /dev/zero must not exhaust memory).
const MAX_INPUT_BYTES: u64 = 4 << 30;

/// Runs the direct form; `opts.runs_dir` holds the compile logs (removed
/// after a success).
pub fn run(d: &Direct, opts: &Options, sink: &dyn Sink) -> Result<Report, Error> {
    let started = Instant::now();
    let work = opts.runs_dir.join(crate::exec::run_name("compile-"));
    let bytes = lockstep_core::fs::read_input("INPUT", d.input, MAX_INPUT_BYTES)?;
    // At the executable-sources phase already, or a source program? The scan
    // that decides is the one the engine uses.
    let scanned = String::from_utf8(bytes).ok().and_then(|t| {
        let module = scan::scan(&t).ok().filter(|m| !m.executables.is_empty())?;
        Some((t, module))
    });
    let (text, module) = match scanned {
        Some(found) => found,
        None => {
            let sources = work.join("executable-sources.mlir");
            compile(
                d,
                Phase::ToExecutableSources,
                d.input,
                &sources,
                &work,
                sink,
            )?;
            let text = fs_err::read_to_string(&sources)?;
            let module = engine::scan_module(&text)?;
            (text, module)
        }
    };
    let outcome = engine::preprocess_scanned(&text, &module, opts, sink)?;
    output::write_as("-o", d.output, outcome.text.as_bytes())?;
    let out_path = match d.output {
        Target::Path(p) => Some(std::path::absolute(p).unwrap_or_else(|_| p.clone())),
        Target::Stdout => None,
    };
    if let Some(vmfb) = d.compile {
        // iree-compile reads and writes lockstep's own files: -o may be a
        // FIFO (read once, by its reader) and --compile a FIFO or a link,
        // which only lockstep_core::output writes correctly.
        fs_err::create_dir_all(&work)?;
        let source = work.join("preprocessed.mlir");
        fs_err::write(&source, &outcome.text)?;
        let compiled = work.join("compiled.vmfb");
        compile(
            d,
            Phase::FromExecutableSources,
            &source,
            &compiled,
            &work,
            sink,
        )?;
        output::copy_as("--compile", &Target::Path(vmfb.to_path_buf()), &compiled)?;
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(Report {
        outcome,
        output: out_path,
        compiled: d.compile.map(Path::to_path_buf),
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

/// One iree-compile phase; a failure names the phase, the tool's last lines
/// and how to reproduce it (its log is kept).
fn compile(
    d: &Direct,
    phase: Phase,
    input: &Path,
    output: &Path,
    work: &Path,
    sink: &dyn Sink,
) -> Result<(), Error> {
    let name = match phase {
        Phase::ToExecutableSources => "compile-to-executable-sources",
        Phase::FromExecutableSources => "compile-from-executable-sources",
    };
    sink.emit(&PreprocessEvent::PhaseStarted {
        phase: name,
        input: input.to_path_buf(),
        output: output.to_path_buf(),
    });
    fs_err::create_dir_all(work)?;
    let invocation = d.toolchain.compile(&Compile {
        source: input,
        flags: d.flags,
        output,
        phase: Some(phase),
        statistics: None,
    })?;
    let log = work.join(format!("{name}.log"));
    let cwd = std::env::current_dir()?;
    let ran = invocation.run(&Limits {
        cwd: &cwd,
        timeout: WHOLE_MODULE_TIMEOUT,
        log: &log,
    })?;
    sink.emit(&PreprocessEvent::PhaseFinished {
        phase: name,
        ok: ran.success(),
        seconds: ran.elapsed.as_secs_f64(),
    });
    if ran.success() {
        return Ok(());
    }
    let what = match phase {
        Phase::ToExecutableSources => format!(
            "cannot compile {} to the executable-sources phase",
            input.display()
        ),
        Phase::FromExecutableSources => {
            format!("cannot compile {} to {}", input.display(), output.display())
        }
    };
    let mut err = Error::failed(what).cause(format!("iree-compile: {}", ran.describe_exit()));
    let printed = ran.output();
    let lines: Vec<&str> = printed.lines().filter(|l| !l.trim().is_empty()).collect();
    for line in &lines[lines.len().saturating_sub(STDERR_LINES)..] {
        err = err.cause(format!("  {line}"));
    }
    Err(err
        .cause(format!("log kept at {}", log.display()))
        .hint(format!("reproduce with: {}", ran.command)))
}
