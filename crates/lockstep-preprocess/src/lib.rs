//! Executable preprocessing: cut every top-level `hal.executable` out of an
//! MLIR module at the executable-sources phase, pass it through external tools
//! (stdin to stdout) or `iree-opt` pass pipelines, check the results and
//! splice them back, keeping everything else byte for byte.
//!
//! It owns the MLIR text scanner ([`scan`]), the machine-wide concurrency
//! limit shared by cooperating processes ([`limit`]: a flock token pool or the
//! GNU make jobserver), the per-executable result cache ([`cache`]) and the
//! engine ([`engine`]) behind both `lockstep preprocess` and its `--wrap` form.
//!
//! It must not parse command lines or print: the binary does that. It does not
//! provision IREE; callers hand it the `iree-opt` it may use.

pub mod cache;
pub mod config;
pub mod direct;
pub mod engine;
pub mod events;
pub mod exec;
pub mod limit;
pub mod scan;
pub mod session;
pub mod step;
pub mod variants;

pub use engine::{preprocess, wrap, Options, Outcome, WrapOptions};
pub use step::Step;
