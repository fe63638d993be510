//! The integrate engine: moving an upstream pin (a git submodule that may carry
//! local patches) forward through upstream commits while keeping the
//! superproject building.
//!
//! It owns the integrate workflow: status (pin, carried patches, pending
//! affecting commits), advancing the pin with a patch-stack replay that never
//! leaves a half-done rebase, the smoke search strategies (`each`, `gallop`),
//! exporting patched heads, halt reports, bisecting, and recovery after a crash.
//! It returns data and emits events; it never prints.
//!
//! It must not parse command lines or format human output beyond report text,
//! and knows nothing of the synthetic repositories of the demo and the tests
//! (lockstep-sandbox).

// Unit tests start their fixtures' processes directly; product code goes
// through lockstep_core::process (clippy.toml), checked without cfg(test).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod advance;
pub mod bisect;
pub mod check_bisect;
pub mod checkout;
pub mod ci;
pub mod config;
pub mod context;
pub mod continues;
pub mod events;
pub mod export;
pub mod final_checks;
pub mod follow;
pub mod halt;
pub mod human;
pub mod journal;
pub mod mark;
pub mod notify;
pub mod outcome;
pub mod probe;
pub mod publish;
pub mod recover;
pub mod repair;
pub mod replay;
pub mod resume;
pub mod revert;
pub mod reverts;
pub mod search;
pub mod start;
pub mod status;
pub mod validate;

pub use context::Integrate;
