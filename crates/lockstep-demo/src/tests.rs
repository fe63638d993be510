//! The test part: the embedded smoke suite on the CPU with the real IREE
//! compiler and runtime, and the embedded lit suite with LLVM's lit and
//! FileCheck, as `lockstep test suites/smoke suites/lit` runs them.

use std::io::Write;
use std::path::Path;

use lockstep_core::config::Loaded;
use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_suite::results;
use lockstep_suite::session::{self, Request};

pub fn run(
    history: &crate::report::History,
    sink: &dyn Sink,
    out: &mut dyn Write,
) -> Result<bool, Error> {
    let smoke = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../suites/smoke");
    let lit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../suites/lit");
    writeln!(
        out,
        "\n== lockstep test suites/smoke suites/lit (the embedded smoke suite, real IREE compiler and runtime; the embedded lit suite, LLVM's lit and FileCheck)"
    )?;
    if !smoke.is_dir() {
        writeln!(
            out,
            "   suites/smoke is not here: run the demo from a lockstep checkout"
        )?;
        return Ok(true);
    }
    // The embedded defaults, whatever lockstep.toml is around.
    let loaded = Loaded::defaults(&smoke);
    let request = Request {
        paths: vec![smoke.clone(), lit],
        lit: Some(lockstep_suite::lit::LitProgram::provision(sink)?),
        ..Request::default()
    };
    let cwd = std::env::current_dir()?;
    let planned = session::plan(
        &request,
        &loaded.section()?,
        &loaded.root,
        loaded.origin(),
        &cwd,
        sink,
    )?;
    let toolchain =
        lockstep_iree::toolchain::for_command(None, &loaded.section()?, &loaded.root, sink)?;
    let cache = lockstep_cache::Cache::from_env(None);
    let recording = history.start(lockstep_history::Kind::Test, &smoke)?;
    let finished = session::run(planned, &toolchain, &cache, sink)?;
    write!(out, "{}", results::console_summary(&finished.report))?;
    history.finish(
        recording,
        &results::json(&finished.report)?,
        Some(toolchain.identity.clone()),
        out,
    )?;
    Ok(!finished.report.failed())
}
