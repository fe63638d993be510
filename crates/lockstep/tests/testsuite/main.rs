//! lockstep's command-line tests, one test binary (cargo's own
//! `tests/testsuite/main.rs` pattern): each module is what was a test
//! binary of its own, sharing the harness in `common` and everything it
//! provisions once per process (the IREE toolchain, lockstep's uv, the
//! built wheels). One link instead of forty-eight.
//!
//! Run one module with `cargo test -p lockstep --test testsuite MODULE::`.

// Test code starts its fixtures' processes directly; product code goes
// through lockstep_core::process (clippy.toml).
#![allow(clippy::disallowed_methods)]
// Each module uses a part of the harness.
#![allow(dead_code)]

mod common;

mod bench;
mod bench_bad_input;
mod bench_bisect;
mod bench_compare;
mod bench_devices;
mod bench_pipeline;
mod cache;
mod canary;
mod ci;
mod cli;
mod docs;
mod doctor;
mod events;
mod github_reads;
mod hardening3;
mod history;
mod init;
mod integrate_bisect_abort;
mod integrate_crash;
mod integrate_export_report;
mod integrate_flow;
mod integrate_hardening;
mod integrate_pin_file;
mod integrate_pin_pattern;
mod integrate_publish;
mod integrate_replay;
mod integrate_revert;
mod kernels_py;
mod output;
mod output_targets;
mod pipeline;
mod pkg;
mod pkg_cache;
mod pkg_cli;
mod pkg_fetch;
mod pkg_native;
mod pkg_versions;
mod preprocess;
mod pytest;
mod release;
mod release_github;
mod report_site;
mod schemas;
mod serve;
mod suite;
mod suite_bad_input;
mod suite_lit;
mod toolchain;
mod torch_ops;
mod torch_ops_numpy;
