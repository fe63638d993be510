//! Regression tests on the real IREE compiler and runtime.
//!
//! It owns test discovery (the iree-test-suites layouts, onnx_ops-style and
//! [`torch_ops`], with their JSON/JSON5 configs, and native `*.suite.toml` files), the target matrix, the scheduler
//! that runs compile and run steps on N workers, its events, what it keeps
//! in the shared cache and each test's last result ([`last_results`]). Its
//! output formats (JUnit, JSON, Markdown) are [`results`]; the console and
//! `--events` reporters are lockstep-reporters'.
//! It must not know how the toolchain is installed (lockstep-iree does).

pub mod bundle;
pub mod cache;
pub mod config;
pub mod events;
pub mod last_results;
pub mod lit;
mod lit_runner;
pub mod markers;
pub mod model;
pub mod names;
pub mod plan;
pub mod pytest;
mod pytest_runner;
pub mod results;
mod run_cache;
pub mod runner;
pub mod session;
pub mod sources;
pub mod torch_ops;
pub mod walk;
pub mod xfails;
