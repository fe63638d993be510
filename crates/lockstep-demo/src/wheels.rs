//! What the demo's package and release parts share: uv found the way
//! every command finds it, a venv's Python run through the Python layer,
//! and `pkg build` printed the way the story shows it.

use std::io::Write;
use std::path::Path;

use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_pkg::BuildRequest;
use lockstep_python::uv::Uv;

/// uv, found or installed the way every command finds it.
pub(crate) fn uv(sink: &dyn Sink) -> Result<Uv, Error> {
    lockstep_python::uv::find_default(sink)
}

/// What `venv`'s Python prints for `args` (through the Python layer: no
/// index variables or secrets reach it), trimmed; a failure is an error.
pub(crate) fn python(uv: &Uv, venv: &Path, args: &[&str]) -> Result<String, Error> {
    let mut argv = vec!["python".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let ran = uv.venv(venv).run(
        &argv,
        &lockstep_python::venv::RunIn {
            what: "python",
            cwd: venv,
            timeout: std::time::Duration::from_secs(1800),
            log: None,
        },
    )?;
    Ok(ran.require_success()?.output().trim().to_string())
}

/// `pkg build` as the demo shows it: a line per wheel, with its variant and,
/// for a native wheel, the manylinux platform it was repaired to.
pub(crate) fn build_wheels(
    request: &BuildRequest,
    sink: &dyn Sink,
    out: &mut dyn Write,
) -> Result<lockstep_pkg::build::BuildReport, Error> {
    let report = lockstep_pkg::build(request, sink)?;
    for wheel in &report.wheels {
        let file = wheel.file.file_name().map(|n| n.to_string_lossy());
        let repaired = wheel
            .manylinux
            .as_deref()
            .map(|p| format!(" (repaired to {p})"));
        writeln!(
            out,
            "   {} ({}): {}{}",
            wheel.package,
            wheel.variant,
            file.unwrap_or_default(),
            repaired.unwrap_or_default()
        )?;
    }
    Ok(report)
}
