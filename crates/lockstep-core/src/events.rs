//! The event stream: engines report what they do as events; reporters (the
//! console printer, JSON writers, webhooks) consume them. Engines never print.

use serde::Serialize;

/// Something an engine did that a person or a machine may want to see.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A plain progress message.
    Info { message: String },
    /// A warning the user should read, the operation continues.
    Warn { message: String },
    /// A smoke (or bisect) command starts on a probe.
    ProbeStarted {
        commit: String,
        subject: String,
        position: usize,
        total: usize,
    },
    /// A probe finished.
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

/// Receives events. Implementations must be cheap: engines call this inline.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: Event);
}

/// Discards events (for library callers that do not report).
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&self, _event: Event) {}
}

/// Collects events in memory (for tests and JSON reports).
#[derive(Default)]
pub struct Collect(pub std::sync::Mutex<Vec<Event>>);

impl EventSink for Collect {
    fn emit(&self, event: Event) {
        if let Ok(mut events) = self.0.lock() {
            events.push(event);
        }
    }
}
