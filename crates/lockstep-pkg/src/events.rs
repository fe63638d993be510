//! What the package engine reports while it works: one event per cell
//! started, built (or taken from the wheel cache) and failed, and one per
//! manifest written. Reporters decide how they look.

use lockstep_core::events::{Event, Human};
use serde::Serialize;

/// An event of `lockstep pkg`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum PkgEvent {
    /// `cells` wheels are about to be built.
    BuildStarted {
        cells: usize,
        jobs: usize,
        revision: String,
        dirty: bool,
    },
    /// One cell's wheel is ready.
    CellBuilt {
        package: String,
        python: String,
        variant: String,
        wheel: String,
        seconds: f64,
        cached: bool,
    },
    /// One cell failed; its log is kept.
    CellFailed {
        package: String,
        python: String,
        variant: String,
        log: String,
    },
    /// A native wheel was repaired to a manylinux policy.
    Repaired { wheel: String, policy: String },
    /// A wheel built at its backend's version was stamped afterwards
    /// (`[pkg.version] rewrite`): `stamps` are text members still holding
    /// the old version.
    Restamped {
        package: String,
        wheel: String,
        from: String,
        to: String,
        stamps: Vec<String>,
    },
    /// The compiler cache's counts for this build.
    CompilerCache {
        tool: String,
        hits: u64,
        misses: u64,
        /// Calls not cached, by the tool's reason.
        #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        not_cached: std::collections::BTreeMap<String, u64>,
    },
    /// A manifest was written.
    ManifestWritten { path: String, wheels: usize },
    /// `pkg bisect` judged a commit.
    BisectStep {
        commit: String,
        verdict: String,
        cached: bool,
        remaining: usize,
    },
}

impl Event for PkgEvent {
    fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    fn human(&self) -> Human {
        match self {
            PkgEvent::BuildStarted {
                cells,
                jobs,
                revision,
                dirty,
            } => Human::Begin {
                total: *cells as u64,
                line: format!(
                    "building {} from {}{} with up to {jobs} at once",
                    lockstep_core::words::count(*cells, "wheel cell", "wheel cells"),
                    short(revision),
                    if *dirty {
                        " (uncommitted changes are not included)"
                    } else {
                        ""
                    }
                ),
            },
            PkgEvent::CellBuilt {
                package,
                python,
                variant,
                wheel,
                seconds,
                cached,
            } => Human::Done {
                line: format!(
                    "built {package} (python {python}, {variant}): {wheel} {}",
                    if *cached {
                        "(cached)".to_string()
                    } else {
                        format!("in {seconds:.1}s")
                    }
                ),
                notable: false,
            },
            PkgEvent::CellFailed {
                package,
                python,
                variant,
                log,
            } => Human::Done {
                line: format!("FAILED {package} (python {python}, {variant}); log: {log}"),
                notable: true,
            },
            PkgEvent::Repaired { wheel, policy } => {
                Human::Line(format!("repaired {wheel} to {policy}"))
            }
            PkgEvent::Restamped {
                package,
                wheel,
                from,
                to,
                stamps,
            } => Human::Line(format!(
                "stamped {wheel} after the build: {package}'s build gives {from} whatever lockstep asks (no static [project] version, no [pkg.version] write-file or env), so its METADATA, dist-info and RECORD were rewritten to {to}{}",
                if stamps.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; still saying {from}: {} (set [pkg.version] write-file or env to what its build reads to stamp those too)",
                        stamps.join(", ")
                    )
                }
            )),
            PkgEvent::CompilerCache {
                tool,
                hits,
                misses,
                not_cached,
            } => Human::Line(format!(
                "compiler cache ({tool}): {}, {}{}",
                lockstep_core::words::count(*hits as usize, "hit", "hits"),
                lockstep_core::words::count(*misses as usize, "miss", "misses"),
                if not_cached.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; not cacheable: {}",
                        not_cached
                            .iter()
                            .map(|(why, n)| format!("{why} ({n})"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            )),
            PkgEvent::ManifestWritten { path, wheels } => Human::Many(vec![
                Human::End,
                Human::Line(format!(
                    "wrote {path} ({})",
                    lockstep_core::words::count(*wheels, "wheel", "wheels")
                )),
            ]),
            PkgEvent::BisectStep {
                commit,
                verdict,
                cached,
                remaining,
            } => Human::Line(format!(
                "{}: {verdict}{} ({remaining} left to test)",
                short(commit),
                if *cached { " (cached verdict)" } else { "" }
            )),
        }
    }
}

fn short(rev: &str) -> &str {
    rev.get(..12).unwrap_or(rev)
}
