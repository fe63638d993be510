//! Moved: atomic writes live in [`crate::fs`]; the caches in lockstep-cache.
//! This re-export keeps older call sites building until they move.

pub use crate::fs::{temp_name, write_atomic};
