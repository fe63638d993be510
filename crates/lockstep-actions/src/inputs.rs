//! What every emulated action shares: reading its evaluated `with:` inputs
//! ([`input`], [`flag`]) and what it returns ([`ActionResult`]).
//!
//! Why: the dispatcher (actions.rs) and the actions it hands steps to
//! (artifacts.rs, cache.rs) all need these; kept below all of them, they
//! let those modules depend on each other in one direction only.

use std::collections::BTreeMap;

/// (succeeded, outputs) of an action; Err fails the step with the message.
pub(crate) type ActionResult = Result<(bool, Vec<(String, String)>), String>;

/// The input `name`, trimmed; None when absent or empty.
pub(crate) fn input<'w>(with: &'w BTreeMap<String, String>, name: &str) -> Option<&'w str> {
    with.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
}

/// Whether the input `name` is `true`.
pub(crate) fn flag(with: &BTreeMap<String, String>, name: &str) -> bool {
    input(with, name) == Some("true")
}
