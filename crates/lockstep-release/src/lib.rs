//! The release engine behind `lockstep release`: version templates that
//! give unique, increasing PEP 440 versions ([`template`]), race-safe tags
//! ([`cut`]), an immutable release store ([`store`]) with a static PEP
//! 503/691 index ([`index`]) served locally by [`serve`], publishing a
//! wheelhouse ([`publish`]) with its GitHub Release ([`github`]) and promoting a candidate to a final version by
//! rewriting its wheels ([`promote`]).
//!
//! It returns data and never prints; the binary reports.

pub mod bump;
pub mod config;
pub mod cut;
pub mod final_release;
pub mod github;
pub mod human;
pub mod index;
pub mod promote;
pub mod prune;
pub mod publication;
pub mod publish;
pub mod serve;
pub mod settings;
pub mod store;
pub mod sync;
pub mod template;
pub mod txn;
pub mod upload;

/// The git repository around `dir` (cut reads HEAD and pushes tags from it).
pub fn open_repo(dir: &std::path::Path) -> Result<lockstep_git::Repo, lockstep_core::Error> {
    Ok(lockstep_git::Repo::discover(dir)?)
}
