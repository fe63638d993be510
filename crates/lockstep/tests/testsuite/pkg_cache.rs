//! The compiler cache on packages shaped like real ones (lockstep_testkit::
//! shapes): scikit-build-core with pybind11 from PyPI, a setup.py that runs
//! CMake, a plain setuptools Extension. None sets anything for a cache; each
//! builds in a fresh staged tree and a freshly named isolated environment.
//! After a README-only change, and at a new `--version` of the same
//! sources, every compile is a hit (sccache, real builds).

use crate::common::*;
use lockstep_testkit::shapes::{self, Shape, ShapeSpec};

fn build(p: &Project, dir: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["pkg", "build", "--json"];
    all.extend_from_slice(args);
    let out = expect(&mut p.cmd_in(dir, &all), 0);
    serde_json::from_slice(&out.stdout).expect("build report JSON")
}

fn counts(report: &serde_json::Value) -> (u64, u64) {
    let c = &report["compiler_cache"];
    assert_eq!(c["tool"], "sccache", "{report}");
    (c["hits"].as_u64().unwrap(), c["misses"].as_u64().unwrap())
}

fn every_compile_hits_after_a_readme_change_and_at_a_new_version(shape: Shape) {
    let p = Project::new();
    let dir = p.root().join(shape.name());
    shapes::create(
        &dir,
        &ShapeSpec {
            shape,
            sources: 3,
            weight: 1,
            extra_config: String::new(),
        },
    )
    .expect("fixture");
    let cold = build(&p, &dir, &[]);
    let (_, misses) = counts(&cold);
    // The module and three kernels at least (CMake's probes besides).
    assert!(misses >= 4, "a cold cache compiles every source: {cold}");

    shapes::touch_readme(&dir, 1).expect("README change");
    let readme = build(&p, &dir, &[]);
    let (hits, misses) = counts(&readme);
    assert_eq!(misses, 0, "nothing a compile sees changed: {readme}");
    assert!(hits >= 4, "{readme}");

    let stamped = build(&p, &dir, &["--version", "7.1.0"]);
    let (hits, misses) = counts(&stamped);
    assert_eq!(misses, 0, "the same sources at another version: {stamped}");
    assert!(hits >= 4, "{stamped}");
    assert_eq!(stamped["version"], "7.1.0");
}

#[test]
fn scikit_build_core_with_pybind11_from_pypi() {
    every_compile_hits_after_a_readme_change_and_at_a_new_version(Shape::SkbuildPybind11);
}

#[test]
fn a_setup_py_that_runs_cmake() {
    every_compile_hits_after_a_readme_change_and_at_a_new_version(Shape::SetupPyCmake);
}

#[test]
fn a_plain_setuptools_extension() {
    every_compile_hits_after_a_readme_change_and_at_a_new_version(Shape::SetuptoolsExtension);
}
