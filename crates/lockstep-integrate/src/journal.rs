//! The journal records: the state each mutating step writes to the store
//! before it acts (an advance, the probes' checkouts, a superproject bisect,
//! a start), the record of the integrate in progress, and what a new session
//! reports having finished for a dead one.
//!
//! The steps (`advance`, `probe`, `bisect`, `start`) write these records and
//! `recover` reads them after a crash to roll each step forward or, with
//! `integrate abort`, back. Only the data lives here, below both, so that no
//! step depends on recovery and recovery depends on the steps only for their
//! behaviour.

use lockstep_git::Oid;
use serde::{Deserialize, Serialize};

/// Journaled state of one advance.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdvanceJournal {
    pub target: Oid,
    pub superproject_before: Oid,
    pub submodule_before: Oid,
    pub new_head: Oid,
    pub message: String,
    pub export: bool,
}

/// State journaled while probes move the submodule away from the pin.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeJournal {
    /// Superproject HEAD when the search started.
    pub superproject_head: Oid,
    /// Submodule HEAD to return to when the superproject HEAD has not moved.
    pub restore: Oid,
    /// Process group of the running smoke, if any.
    pub pgid: Option<i32>,
    /// Submodule commit a checkout was moving to (its files may be half written).
    #[serde(default)]
    pub moving_to: Option<Oid>,
}

/// Journal of a superproject bisect (to return the user's checkout).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SuperBisectJournal {
    pub original_branch: Option<String>,
    pub original_head: Oid,
}

/// The record of the integrate in progress (and the start step's journal).
pub const INTEGRATE_RECORD: &str = "integrate";

/// Journaled state of `integrate start`, kept under [`INTEGRATE_RECORD`] once
/// the start is done.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StartJournal {
    pub branch: String,
    pub base: Oid,
    /// Where the user was before: branch (or None when detached) and commit.
    pub original_branch: Option<String>,
    pub original_head: Oid,
}

/// An interrupted advance that a new session finished.
#[derive(Debug, Clone, Serialize)]
pub struct Resumed {
    pub target: Oid,
    pub superproject_commit: Oid,
    pub message: String,
    pub export: Option<String>,
}
