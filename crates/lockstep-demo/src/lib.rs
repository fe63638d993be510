//! The story `lockstep demo` tells: each area's engine on the embedded
//! defaults and the sandbox fixtures, in order (an integrate to upstream
//! head, the smoke suite, the kernel benchmarks, packages built and
//! installed exactly, an IREE-shaped snapshot cut, built from its submodule,
//! published with its PyPI dependency, served and installed with pip, with
//! lockstep's own Python kernels launched from it when the demo runs from a
//! checkout),
//! every test, bench and integrate loop run recorded in the demo's own
//! results history and a report site written from it, then one line per
//! part and whether all passed.
//!
//! It drives the engines the way the commands do and prints its story to a
//! writer; it stands above every engine, and no engine depends on it.

mod bench;
mod integrate;
mod kernels;
mod packages;
mod release;
mod report;
mod tests;
mod wheels;

pub use kernels::build_env as wheel_build_env;

use std::io::Write;
use std::path::{Path, PathBuf};

use lockstep_core::events::Sink;
use lockstep_core::words::count;
use lockstep_core::Error;

/// Runs every part in `dir` (default: a new directory under the system's
/// temporary directory), writing the story to `out`; whether all passed.
/// The directory is kept either way (the story ends by naming it).
pub fn run(dir: Option<&Path>, sink: &dyn Sink, out: &mut dyn Write) -> Result<bool, Error> {
    let exchanges = integrate::exchange_log()?;
    let root = root(dir)?;
    writeln!(out, "== lockstep demo in {}", root.display())?;
    let history = report::History::new(&root.join("history"));
    let integrate = integrate::run(&root.join("integrate"), exchanges, &history, sink, out)?;
    let mut parts = vec![
        (
            "integrate: halts at exactly the planted culprits, to upstream head",
            integrate.ok,
        ),
        (
            "test: the smoke suite on the CPU",
            tests::run(&history, sink, out)?,
        ),
        (
            "bench: the default kernels timed and verified (twice)",
            bench::run(&history, sink, out)?,
        ),
        (
            "pkg: built once, installed exactly, imported",
            packages::run(&root.join("packages"), sink, out)?,
        ),
    ];
    let released = release::run(&root.join("release"), sink, out)?;
    parts.push((
        "release: an IREE-shaped snapshot (submodule, manylinux, PyPI dependency) cut, published, served and installed with pip",
        released.ok,
    ));
    parts.push((
        "report: a site from the demo's own history and release store",
        report::site(&history, &released.store, &root.join("site"), out)?,
    ));
    writeln!(out, "\n== demo summary")?;
    for (part, ok) in &parts {
        writeln!(out, "   {} {part}", if *ok { "ok    " } else { "FAILED" })?;
    }
    let all = parts.iter().all(|(_, ok)| *ok);
    let passed = parts.iter().filter(|(_, ok)| *ok).count();
    writeln!(
        out,
        "   {}; everything is kept in {}",
        if all {
            format!("all {} passed", count(passed, "step", "steps"))
        } else {
            format!("{passed} of {} passed", count(parts.len(), "step", "steps"))
        },
        root.display()
    )?;
    Ok(all)
}

fn root(dir: Option<&Path>) -> Result<PathBuf, Error> {
    let root = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::temp_dir().join(format!("lockstep-demo-{}", std::process::id())),
    };
    fs_err::create_dir_all(&root)?;
    Ok(std::path::absolute(&root)?)
}
