//! The tables lockstep.toml may have (each owned by its engine crate).
//!
//! lockstep-fuzz compiles this very file (`#[path]`) and fuzzes the
//! configuration through [`SECTIONS`], so the list has one home. It is not
//! a library the binary links: a second crate would compile every table's
//! deserializer a second time into the binary (1.3 MB measured).

use std::path::Path;

use lockstep_core::config::{Loaded, SectionSpec};
use lockstep_core::Error;

/// Every table, in the order the docs list them.
pub const SECTIONS: &[SectionSpec] = &[
    SectionSpec::of::<lockstep_integrate::config::IntegrateConfig>(),
    SectionSpec::of::<lockstep_iree::config::ToolchainConfig>(),
    SectionSpec::of::<lockstep_suite::config::TestConfig>(),
    SectionSpec::of::<lockstep_preprocess::config::PreprocessConfig>(),
    SectionSpec::of::<lockstep_bench::config::BenchConfig>(),
    SectionSpec::of::<lockstep_pkg::config::PkgConfig>(),
    SectionSpec::of::<lockstep_ci::config::CiConfig>(),
    SectionSpec::of::<lockstep_release::config::ReleaseConfig>(),
    SectionSpec::of::<lockstep_history::HistoryConfig>(),
    SectionSpec::of::<lockstep_python::settings::ToolsConfig>(),
];

/// lockstep.toml from `--config` or found from `cwd`, every table checked.
pub fn load(explicit: Option<&Path>, cwd: &Path) -> Result<Loaded, Error> {
    lockstep_core::config::load(explicit, cwd, SECTIONS)
}
