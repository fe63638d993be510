//! The event plumbing: engines report what they do as events and never print;
//! reporters (the console, the `--events` JSON Lines stream) consume them.
//!
//! Each area defines its own event type in its own crate (an enum serialized
//! with `#[serde(tag = "event", rename_all = "snake_case")]`) and implements
//! [`Event`] for it; this module knows no area's events, only the two every
//! area shares ([`Message`]: notes and warnings). How an event looks on the
//! console is part of the event ([`Human`]); where and whether it is shown
//! (a progress bar on a TTY, plain lines otherwise, nothing with `-q`) is the
//! console reporter's business.

use std::sync::Mutex;

use serde::Serialize;

/// The version of the event stream's JSON (`schema` in every line): the one
/// version of lockstep's JSON documents.
pub use crate::output::SCHEMA;

/// Something an engine did that a person or a machine may want to see.
pub trait Event: Send + Sync {
    /// The event as a JSON object whose `event` field names it.
    fn to_json(&self) -> serde_json::Value;
    /// How the console shows it.
    fn human(&self) -> Human;
}

/// How the console shows an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Human {
    /// Not shown (detail for machines).
    Silent,
    /// A progress line on stderr (hidden by `-q`).
    Line(String),
    /// `warning: ...` on stderr, even with `-q`.
    Warning(String),
    /// Result lines for stdout (e.g. bench's BOO lines), even with `-q`.
    Stdout(String),
    /// `total` units of work start: `line` (unless empty) as a progress
    /// line, then a progress bar on a TTY.
    Begin { total: u64, line: String },
    /// One unit is done: the bar advances; `line` (unless empty) is printed
    /// on a plain stderr, and on a TTY only when `notable` (a failure, say).
    Done { line: String, notable: bool },
    /// The units are done: the bar goes away.
    End,
    /// Several of the above, in order.
    Many(Vec<Human>),
}

/// Receives events. Implementations must be cheap and thread-safe: engines
/// call this inline, from worker threads.
pub trait Sink: Send + Sync {
    fn emit(&self, event: &dyn Event);
}

impl dyn Sink + '_ {
    /// Emits a [`Message::Note`].
    pub fn note(&self, message: impl Into<String>) {
        self.emit(&Message::Note(message.into()));
    }

    /// Emits a [`Message::Warning`].
    pub fn warn(&self, message: impl Into<String>) {
        self.emit(&Message::Warning(message.into()));
    }
}

/// The events every area shares.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", content = "message", rename_all = "snake_case")]
pub enum Message {
    /// A plain progress message.
    Note(String),
    /// Something the user should read; the operation continues.
    Warning(String),
}

impl Event for Message {
    fn to_json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn human(&self) -> Human {
        match self {
            Message::Note(m) => Human::Line(m.clone()),
            Message::Warning(m) => Human::Warning(m.clone()),
        }
    }
}

/// `value` as JSON (an event that cannot be encoded becomes a note saying so,
/// never a panic).
pub fn to_json(value: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or_else(
        |e| serde_json::json!({"event": "note", "message": format!("unencodable event: {e}")}),
    )
}

/// Discards events (for library callers that do not report).
pub struct NullSink;

impl Sink for NullSink {
    fn emit(&self, _event: &dyn Event) {}
}

/// Keeps every event's JSON (for tests).
#[derive(Default)]
pub struct Collect(pub Mutex<Vec<serde_json::Value>>);

impl Collect {
    /// The `event` names received so far, in order.
    pub fn names(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|events| {
                events
                    .iter()
                    .map(|e| e["event"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Sink for Collect {
    fn emit(&self, event: &dyn Event) {
        if let Ok(mut events) = self.0.lock() {
            events.push(event.to_json());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_serialize_with_their_name() {
        let collect = Collect::default();
        let sink: &dyn Sink = &collect;
        sink.note("hello");
        sink.warn("careful");
        let events = collect.0.lock().unwrap().clone();
        assert_eq!(
            events,
            vec![
                serde_json::json!({"event": "note", "message": "hello"}),
                serde_json::json!({"event": "warning", "message": "careful"}),
            ]
        );
        assert_eq!(collect.names(), ["note", "warning"]);
        assert_eq!(
            Message::Warning("x".into()).human(),
            Human::Warning("x".into())
        );
    }
}
