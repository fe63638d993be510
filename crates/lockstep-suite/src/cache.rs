//! What `lockstep test` keeps in the cache's `compile` area: one entry per
//! distinct compile (compiler identity, source bytes, every flag, whether
//! statistics were dumped), holding the module (`vmfb`), the compiler's
//! statistics when asked for, and the exact command. Deterministic compile
//! errors are cached too (a second run of an unchanged suite compiles
//! nothing); timeouts and crashes are not. The entry protocol, locks and
//! pruning are lockstep-cache's.

use lockstep_cache::{Area, Key, KeyBuilder};
use serde::{Deserialize, Serialize};

/// The format of compile entries (bump when what they hold changes).
const VERSION: u32 = 2;

/// The module's suffix in an entry.
pub const MODULE: &str = "vmfb";

/// The statistics file's suffix in an entry.
pub const STATISTICS: &str = "statistics.json";

/// What an entry's seal records besides its files.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    /// The command that compiled it, reproducible from a shell.
    pub command: String,
    /// The compiler's version line.
    pub compiler: String,
    /// Exit and output tail of a cached failure (no module then).
    pub failure: Option<Failure>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Failure {
    pub exit: String,
    pub output: String,
}

/// The key of one compile, from the source's sha256 (raw bytes), so a
/// runner hashes each source once however many tests compile it.
/// `identity` is the compiler's key identity (see `lockstep_iree::key_identity`).
pub fn key(identity: &str, source_sha256: &[u8], flags: &[String], statistics: bool) -> Key {
    KeyBuilder::new(Area::Compile, VERSION)
        .part("compiler", identity)
        .part("source-sha256", source_sha256)
        .parts("flags", flags)
        .part("statistics", [u8::from(statistics)])
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_cover_compiler_source_and_flags() {
        let base = key("id", b"src", &["-a".into()], false);
        assert_ne!(base, key("id2", b"src", &["-a".into()], false));
        assert_ne!(base, key("id", b"src2", &["-a".into()], false));
        assert_ne!(base, key("id", b"src", &["-b".into()], false));
        assert_ne!(base, key("id", b"src", &["-a".into()], true));
    }
}
