//! Kernel benchmarks in the style of the BOO driver (iree-turbine): the
//! kernels lockstep-kernels describes (MIOpenDriver commands, signatures,
//! MLIR, references) compiled, run and timed.
//!
//! [`run`] compiles the kernels with iree-compile through the kernel
//! [`cache`] and times each with iree-benchmark-module in its own process,
//! and with verification on runs it once more with iree-run-module on
//! deterministic inputs and checks the output against the kernel's
//! reference, which [`references`] keeps in the cache; [`rows`] holds the
//! rows, their statistics and the CSV. Tool paths come from the caller
//! (lockstep-iree resolves them); nothing here prints (the binary does).
//!
//! Modules only use modules below them (`scripts/check-module-cycles` checks
//! it), from the bottom: [`config`], [`device`], [`jobs`], [`cache`] (and
//! [`modules`], the one path to a compiled kernel, shared with the Python
//! package) and
//! [`references`], [`recorded`] (rows remembered: a warm rerun reads them);
//! [`run`] on top of them, then [`session`]; [`regressions`]
//! (bench compare), [`bisect`] (the first commit whose packages made a
//! kernel slower) above that, and [`human`] (how compare's and bisect's
//! results read, printed by the binary) on top.

pub mod bisect;
pub mod bundle;
pub mod cache;
pub mod config;
pub mod device;
pub mod events;
pub mod human;
pub mod jobs;
pub mod modules;
pub mod recorded;
pub mod references;
pub mod regressions;
pub mod rows;
pub mod run;
pub mod session;

#[cfg(test)]
mod testing;
