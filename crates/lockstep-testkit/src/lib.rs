//! Fixtures only the tests, the benchmarks and the fixture examples use:
//! random carried stacks over random upstream histories ([`stacks`]: the
//! replay property test and `scripts/bench-integrate`), native packages
//! shaped like real projects ([`shapes`]: the compiler-cache tests and
//! `scripts/bench-pkg`), a new upstream commit for the IREE-shaped
//! fixture ([`native`]), and the loopback GitHub with Releases and a CI
//! ([`github`]: the sandbox's server, which the demo uses, with them
//! plugged in). The fixture programs `scripts/bench-pkg` runs are
//! its examples (`pkg-fixture`, `native-fixture`, `shape-fixture`).
//!
//! Dev-only, like `lockstep-actions`: a dev-dependency of the tests (and a
//! dependency of the fuzz runner, which does not ship), never of a crate
//! the released binary links (`crates/lockstep/tests/testsuite/docs.rs` checks). What the demo needs stays in
//! `lockstep-sandbox`, whose repository building blocks (`repos::fast_import`,
//! `repos::write_commit`, `repos::Layout` ...) these fixtures share.

pub mod conformance;
pub mod github;
pub mod native;
pub mod shapes;
pub mod stacks;

/// `$LOCKSTEP_TOOLCHAINS` as the environment sets it, else the default under
/// the user's home (a test's own `LOCKSTEP_HOME` would move the default):
/// the toolchains every test shares, and beside them (`../test-tools`) the
/// tools only tests use.
pub fn toolchains() -> std::path::PathBuf {
    std::env::var_os("LOCKSTEP_TOOLCHAINS")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/lockstep/toolchains")
        })
}
