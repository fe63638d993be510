//! Moving the pin in the work tree without losing anyone's work
//! ([`checkout_submodule`], over `lockstep_pin::Pin::put`: local changes
//! refused unless lockstep's own interrupted checkout explains them), and
//! the `Integrate` methods built on it that put the work tree back at the
//! superproject's pin, or the user back on their branch.
//!
//! Every step that moves the submodule (`advance`, `probe`, `bisect`,
//! `start`) and `recover` use it, so it sits below all of them.

use lockstep_core::Error;

use crate::Integrate;

/// Checks the submodule out at the pin recorded in the superproject's HEAD.
pub(crate) fn sync_submodule_to_pin(ig: &Integrate) -> Result<(), Error> {
    let pin = ig.pin()?;
    let current = ig.checked_out()?;
    checkout_submodule(ig, &pin, &[&current, &pin])
}

/// Checks out the branch (or detached commit) the user had, with its pin.
pub(crate) fn return_to(ig: &Integrate, branch: Option<&str>, head: &str) -> Result<(), Error> {
    match branch {
        Some(b) => {
            ig.superproject.git(&["checkout", "-q", b])?;
        }
        None => ig.superproject.checkout_detached(head)?,
    }
    crate::checkout::sync_submodule_to_pin(ig)
}

/// Puts the work tree's pin at `target` (the submodule checked out, or the
/// pin's file written), allowing only what lockstep's own interrupted
/// change between two of `sources` explains (`lockstep_pin::Pin::put`).
pub fn checkout_submodule(ig: &Integrate, target: &str, sources: &[&str]) -> Result<(), Error> {
    ig.pin_of()
        .put(&ig.superproject, target, sources, &ig.checksums())
}
