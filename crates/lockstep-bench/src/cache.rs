//! What `lockstep bench` keeps in the cache's `kernels` area, laid out like
//! BOO's: `<dir>/<func_name>/<key>.vmfb` next to `<key>.mlir`, `<key>.cmd`
//! (the exact compile command) and the seal `<key>.json`. The key covers the
//! compiler identity, the MLIR text and every compile flag (BOO's ignores the
//! compiler version). Where the area lives (`$BOO_CACHE_DIR`, `[bench]
//! cache-dir`, `BOO_CACHE_ON=0`), the entry protocol, locks and pruning are
//! lockstep-cache's.

use lockstep_cache::{Area, Key, KeyBuilder};

/// The format of kernel entries (bump when what they hold changes).
const VERSION: u32 = 2;

/// The compiled module.
pub const MODULE: &str = "vmfb";
/// The kernel's MLIR source.
pub const SOURCE: &str = "mlir";
/// The iree-compile command that built the module.
pub const COMMAND: &str = "cmd";

/// The cache key of one kernel (`identity`: the compiler's key identity).
pub fn key(identity: &str, mlir: &str, flags: &[String]) -> Key {
    KeyBuilder::new(Area::Kernels, VERSION)
        .part("compiler", identity)
        .part("mlir", mlir)
        .parts("flags", flags)
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_covers_identity_source_and_flags() {
        let flags = vec!["--a".to_string()];
        let base = key("id", "module", &flags);
        assert_eq!(base, key("id", "module", &flags));
        assert_ne!(base, key("id2", "module", &flags));
        assert_ne!(base, key("id", "module2", &flags));
        assert_ne!(base, key("id", "module", &["--b".to_string()]));
        assert_ne!(base, key("id", "module", &[]));
    }
}
