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

use lockstep_core::Error;
use lockstep_git::Oid;
use serde::{Deserialize, Serialize};

use crate::Integrate;

/// A journaled step, owned by its command's module: the store's name for
/// it, how a rerun finishes it after a crash (`resume`) and how `integrate
/// abort` takes it back (`undo`). `recover` only reads the records and
/// dispatches to these.
pub(crate) trait Journaled: for<'de> Deserialize<'de> {
    /// The step's kind in the store (`Store::begin`).
    const KIND: &'static str;
    /// Rolls the unfinished step `id` forward (or puts back what it moved,
    /// for a step that cannot be finished); an advance says what it
    /// finished.
    fn resume(&self, ig: &Integrate, id: i64) -> Result<Option<Resumed>, Error>;
    /// Undoes the step; says what was undone.
    fn undo(&self, ig: &Integrate) -> Result<String, Error>;
}

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

/// One kind of journaled step, as recovery dispatches it: its name in the
/// store and its own module's resume and undo ([`Journaled`]).
pub(crate) struct Entry {
    pub kind: &'static str,
    pub resume: fn(&Integrate, i64, &serde_json::Value) -> Result<Option<Resumed>, Error>,
    pub undo: fn(&Integrate, &serde_json::Value) -> Result<String, Error>,
}

impl Entry {
    const fn of<J: Journaled>() -> Entry {
        Entry {
            kind: J::KIND,
            resume: |ig, id, state| read::<J>(J::KIND, state)?.resume(ig, id),
            undo: |ig, state| read::<J>(J::KIND, state)?.undo(ig),
        }
    }
}

/// Every journaled step: the one table recovery (`recover`) dispatches
/// from. A new journaled command adds its record type here; its resume and
/// undo stay in its own module.
pub(crate) const STEPS: &[Entry] = &[
    Entry::of::<AdvanceJournal>(),
    Entry::of::<ProbeJournal>(),
    Entry::of::<SuperBisectJournal>(),
    Entry::of::<StartJournal>(),
];

/// The entry of the step kind `kind`; `None` for a kind this lockstep does
/// not know (a newer one wrote it).
pub(crate) fn entry(kind: &str) -> Option<&'static Entry> {
    STEPS.iter().find(|e| e.kind == kind)
}

/// The journaled state `state` of a step of `kind`; an error naming the kind
/// and the way out when it is not of that kind's form.
fn read<T: for<'de> Deserialize<'de>>(kind: &str, state: &serde_json::Value) -> Result<T, Error> {
    serde_json::from_value(state.clone()).map_err(|e| {
        Error::failed(format!(
            "the journaled `{kind}` step in lockstep's state database is unreadable"
        ))
        .cause(e.to_string())
        .hint("`lockstep integrate abort` undoes unfinished steps; if it fails the same way, `lockstep integrate repair --force` moves the database aside (kept) and rebuilds the integrate record from git")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_kind_has_one_entry_and_a_wrong_shape_names_the_way_out() {
        let kinds: Vec<&str> = STEPS.iter().map(|e| e.kind).collect();
        let mut unique = kinds.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), kinds.len(), "{kinds:?}");
        let start = StartJournal {
            branch: "b".into(),
            base: "c".into(),
            original_branch: None,
            original_head: "d".into(),
        };
        let value = serde_json::to_value(&start).unwrap();
        assert!(read::<StartJournal>("start", &value).is_ok_and(|s| s.branch == "b"));
        let err = read::<AdvanceJournal>("advance", &value).unwrap_err();
        assert!(err.message.contains("`advance`"), "{}", err.message);
        assert!(err.hint.unwrap().contains("lockstep integrate abort"));
        assert!(entry("no-such-step").is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Any JSON under any kind: a record or a clean error, never a panic.
        #[test]
        fn any_journal_value_reads_or_fails_cleanly(
            state in r#"(?s)[{}\[\]":,a-z0-9 \\\x00-\x1f\u{e9}]{0,200}"#,
        ) {
            let value = serde_json::from_str::<serde_json::Value>(&state).unwrap_or(serde_json::Value::String(state));
            for kind in ["advance", "probe", "start"] {
                let read = match kind {
                    "advance" => read::<AdvanceJournal>(kind, &value).map(drop),
                    "probe" => read::<ProbeJournal>(kind, &value).map(drop),
                    _ => read::<StartJournal>(kind, &value).map(drop),
                };
                if let Err(e) = read {
                    let named = format!("`{kind}`");
                    prop_assert!(e.message.contains(&named));
                }
            }
        }
    }
}
