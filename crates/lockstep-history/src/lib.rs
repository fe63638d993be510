//! The results history: one immutable JSON file per run of `lockstep test`,
//! `lockstep bench` or `lockstep integrate loop`, in a directory.
//!
//! Why files and not a database: CI machines each write their own runs, and
//! histories merge by copying files (no shared server, no lock). A file is
//! never rewritten: it is created whole under a temporary name and linked
//! into place without replacing anything, so two writers never clobber each
//! other and a reader never sees half a run. Reading is forgiving: a file
//! that is truncated, foreign, or from a newer schema is skipped and named
//! ([`Skipped`]), never a crash; two files holding the same run identity
//! count once.
//!
//! A [`RunRecord`] carries what a comparison needs besides the command's
//! own results document (kept as it was printed with `--json`): the source
//! commit, the pins (the upstream LLVM commit), the toolchain's identity,
//! and the machine. [`collect`] gathers those for a run being recorded
//! (`--record DIR`, `[history] dir`), [`import`] makes runs from the
//! `--json` files of earlier runs, [`list`] summarises each run.

pub mod analysis;
pub mod collect;
pub mod config;
pub mod durations;
pub mod human;
pub mod import;
pub mod list;
pub mod record;
pub mod recorder;
pub mod speed;
pub mod store;
pub mod trimmed;
pub mod views;

pub use collect::Recording;
pub use config::HistoryConfig;
pub use record::{Kind, Machine, RunRecord, Source, SCHEMA};
pub use store::{file_name, load, write, Loaded, Skipped};
