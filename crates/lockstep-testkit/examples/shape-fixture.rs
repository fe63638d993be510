//! Writes and changes the real-shaped native packages (see `shapes.rs`) for
//! scripts such as `scripts/bench-pkg`:
//!
//! ```text
//! shape-fixture create DIR SHAPE SOURCES WEIGHT [EXTRA_CONFIG_FILE]
//! shape-fixture readme DIR N        # commit a README-only change
//! shape-fixture source DIR I N      # commit a one-line change to src/kI.cpp
//! ```
//!
//! SHAPE is `skbuild` (scikit-build-core + pybind11), `setup-cmake` (a
//! setup.py running CMake) or `extension` (a setuptools Extension).

use std::path::PathBuf;
use std::process::ExitCode;

use lockstep_testkit::shapes::{self, Shape, ShapeSpec};

const USAGE: &str = "usage: shape-fixture create DIR SHAPE SOURCES WEIGHT [EXTRA_CONFIG_FILE] | readme DIR N | source DIR I N";

fn number(text: Option<&String>, what: &str, max: usize) -> Result<usize, String> {
    match text.map(|t| t.parse::<usize>()) {
        Some(Ok(n)) if n <= max => Ok(n),
        _ => Err(format!("{what} must be a number up to {max}")),
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let dir = PathBuf::from(args.get(1).ok_or(USAGE)?);
    match args.first().map(String::as_str) {
        Some("create") => {
            let shape = match args.get(2).map(String::as_str) {
                Some("skbuild") => Shape::SkbuildPybind11,
                Some("setup-cmake") => Shape::SetupPyCmake,
                Some("extension") => Shape::SetuptoolsExtension,
                _ => {
                    return Err(format!(
                        "SHAPE must be skbuild, setup-cmake or extension\n{USAGE}"
                    ))
                }
            };
            let extra_config = match args.get(5) {
                Some(file) => std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?,
                None => String::new(),
            };
            let spec = ShapeSpec {
                shape,
                sources: number(args.get(3), "SOURCES", 200)?.max(1),
                weight: number(args.get(4), "WEIGHT", 64)?.max(1),
                extra_config,
            };
            shapes::create(&dir, &spec)
                .map(drop)
                .map_err(|e| e.render())
        }
        Some("readme") => {
            let n = number(args.get(2), "N", u32::MAX as usize)? as u32;
            shapes::touch_readme(&dir, n).map_err(|e| e.render())
        }
        Some("source") => {
            let i = number(args.get(2), "I", 200)?;
            let n = number(args.get(3), "N", u32::MAX as usize)? as u32;
            shapes::touch_source(&dir, i, n).map_err(|e| e.render())
        }
        _ => Err(USAGE.to_string()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
