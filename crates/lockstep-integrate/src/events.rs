//! What `lockstep integrate` reports while it works: each probe (a smoke or
//! bisect command on one upstream commit), each advance of the pin, each
//! exported head. Notes and warnings are lockstep-core's.

use lockstep_core::events::{to_json, Event, Human};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum IntegrateEvent {
    /// A smoke (or bisect) command starts on a commit; `position` 0 is the
    /// pin itself, else the candidate's place among `total`.
    ProbeStarted {
        commit: String,
        subject: String,
        position: usize,
        total: usize,
    },
    /// A probe finished (`outcome`: good, bad, untestable, ...).
    ProbeFinished {
        commit: String,
        outcome: String,
        cached: bool,
        seconds: f64,
    },
    /// The pin moved and the superproject got a commit.
    Advanced {
        commit: String,
        superproject_commit: String,
        message: String,
    },
    /// A patched head was published.
    Exported { branch: String, commit: String },
}

fn short(sha: &str) -> &str {
    &sha[..12.min(sha.len())]
}

impl Event for IntegrateEvent {
    fn to_json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn human(&self) -> Human {
        Human::Line(match self {
            IntegrateEvent::ProbeStarted {
                commit,
                subject,
                position,
                total,
            } => {
                let at = if *position == 0 {
                    "pin".to_string()
                } else {
                    format!("{position}/{total}")
                };
                format!("probe {at} {} {subject}", short(commit))
            }
            IntegrateEvent::ProbeFinished {
                commit,
                outcome,
                cached,
                seconds,
            } => format!(
                "  {} {outcome}{} ({seconds:.1}s)",
                short(commit),
                if *cached { " (cached)" } else { "" }
            ),
            IntegrateEvent::Advanced {
                superproject_commit,
                message,
                ..
            } => format!("committed {} {message}", short(superproject_commit)),
            IntegrateEvent::Exported { branch, commit } => {
                format!("exported {} to {branch}", short(commit))
            }
        })
    }
}
