//! The bench part: the embedded default kernel set on the CPU, compiled,
//! timed in their own processes and verified against f64 references.

use std::io::Write;

use lockstep_bench::config::BenchConfig;
use lockstep_bench::session::{self, Request};
use lockstep_core::events::Sink;
use lockstep_core::Error;

pub fn run(
    history: &crate::report::History,
    sink: &dyn Sink,
    out: &mut dyn Write,
) -> Result<bool, Error> {
    writeln!(
        out,
        "\n== lockstep bench --verify (the embedded default commands, real IREE compiler and runtime)"
    )?;
    // Each run is a point of the history's trends: measured, never
    // answered from the record an earlier run left (docs/bench.md).
    let request = Request {
        verify: true,
        no_cache: true,
        device: Some(lockstep_bench::device::DEFAULT_DEVICE.to_string()),
        ..Request::default()
    };
    let toolchain = lockstep_iree::toolchain::for_command(
        None,
        &Default::default(),
        &std::env::current_dir()?,
        sink,
    )?;
    let cache = lockstep_cache::Cache::from_env(None);
    // Twice (the second from the compile cache): two points of each trend.
    let mut ok = true;
    for _ in 0..2 {
        let prepared = session::prepare(&request, &BenchConfig::default(), sink)?;
        let recording = history.start(lockstep_history::Kind::Bench, &std::env::current_dir()?)?;
        let finished = session::run(prepared, &toolchain, &cache, sink)?;
        history.finish(
            recording,
            &lockstep_core::output::document(&finished.summary)?,
            Some(toolchain.identity.clone()),
            out,
        )?;
        ok &= finished.summary.failed() == 0;
    }
    Ok(ok)
}
