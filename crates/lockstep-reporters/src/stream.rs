//! The `--events FILE|-` reporter: every event as one JSON object per line,
//!
//! ```json
//! {"schema":1,"command":"test","event":"test_finished","time":"2026-11-24T03:00:00.123Z","id":"...",...}
//! ```
//!
//! `schema` is [`lockstep_core::events::SCHEMA`], `time` RFC 3339 in UTC.
//! Each line is flushed as it is written, so a reader (a pipe, a FIFO, `tail
//! -f`) sees events as they happen. docs/schemas/events.json describes them.
//!
//! A stream is created closed ([`EventStream::new`]): its lines wait in
//! memory until [`EventStream::open`], which the binary calls once it knows
//! the target is none of the files the command reads (a command that
//! discovers its inputs, such as `lockstep test` finding suite files, knows
//! only after planning). A stream [`EventStream::discard`]ed never touches
//! its target.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use lockstep_core::events::{Event, Sink, SCHEMA};
use lockstep_core::output::Target;
use lockstep_core::Error;

pub struct EventStream {
    command: String,
    target: Target,
    state: Mutex<State>,
    /// Set after a write fails (a closed pipe): the stream stops, the command goes on.
    broken: AtomicBool,
}

enum State {
    /// Not opened yet: the lines so far.
    Waiting(Vec<String>),
    Open(Box<dyn Write + Send>),
    /// Never to be written (the target is one of the command's inputs).
    Discarded,
}

impl EventStream {
    /// A closed stream of `command`'s events to `target` (checked now, so
    /// a directory or a missing parent is refused before anything runs).
    pub fn new(command: &str, target: &Target) -> Result<EventStream, Error> {
        lockstep_core::output::resolve("--events", target)?;
        Ok(EventStream {
            command: command.to_string(),
            target: target.clone(),
            state: Mutex::new(State::Waiting(Vec::new())),
            broken: AtomicBool::new(false),
        })
    }

    /// Opens the target (a regular file is created or truncated; a FIFO or
    /// device is written in place; see lockstep_core::output) and writes
    /// the lines that waited. Opening twice is a no-op.
    pub fn open(&self) -> Result<(), Error> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let State::Waiting(waiting) = &mut *state else {
            return Ok(());
        };
        let waiting = std::mem::take(waiting);
        let mut writer = lockstep_core::output::open_stream("--events", &self.target)?;
        for line in waiting {
            if writeln!(writer, "{line}").is_err() {
                self.broken.store(true, Ordering::Relaxed);
            }
        }
        let _ = writer.flush();
        *state = State::Open(writer);
        Ok(())
    }

    /// Drops what waited; the target is never opened.
    pub fn discard(&self) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = State::Discarded;
    }

    /// Whether the stream is standard output (human output then moves to stderr).
    pub fn owns_stdout(&self) -> bool {
        self.target.is_stdout()
    }

    /// The line for `event`.
    fn line(&self, event: &dyn Event) -> String {
        let mut fields = match event.to_json() {
            serde_json::Value::Object(map) => map,
            other => {
                let mut map = serde_json::Map::new();
                map.insert("value".into(), other);
                map
            }
        };
        let name = fields
            .shift_remove("event")
            .unwrap_or_else(|| "unknown".into());
        let mut line = serde_json::Map::new();
        line.insert("schema".into(), SCHEMA.into());
        line.insert("command".into(), self.command.clone().into());
        line.insert("event".into(), name);
        line.insert("time".into(), now().into());
        line.extend(fields);
        serde_json::Value::Object(line).to_string()
    }
}

impl Sink for EventStream {
    fn emit(&self, event: &dyn Event) {
        if self.broken.load(Ordering::Relaxed) {
            return;
        }
        let line = self.line(event);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *state {
            State::Waiting(lines) => lines.push(line),
            State::Open(writer) => {
                if writeln!(writer, "{line}")
                    .and_then(|()| writer.flush())
                    .is_err()
                {
                    self.broken.store(true, Ordering::Relaxed);
                }
            }
            State::Discarded => {}
        }
    }
}

/// Now, RFC 3339 in UTC with milliseconds.
fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_core::events::Message;

    #[test]
    fn lines_carry_schema_command_event_time_and_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let stream = EventStream::new("test", &Target::Path(path.clone())).unwrap();
        stream.emit(&Message::Note("hi".into()));
        assert!(!path.exists(), "nothing is written before the stream opens");
        stream.open().unwrap();
        stream.emit(&Message::Warning("careful".into()));
        drop(stream);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["schema"], 1);
        assert_eq!(lines[0]["command"], "test");
        assert_eq!(lines[0]["event"], "note");
        assert_eq!(lines[0]["message"], "hi");
        assert_eq!(lines[1]["event"], "warning");
        let time = lines[0]["time"].as_str().unwrap();
        assert!(time.parse::<jiff::Timestamp>().is_ok(), "{time}");
        assert!(time.ends_with('Z'), "{time}");
        assert!(EventStream::new("x", &Target::Path(dir.path().join("no/such/dir/e"))).is_err());
        let kept = dir.path().join("input.toml");
        std::fs::write(&kept, "x = 1\n").unwrap();
        let stream = EventStream::new("test", &Target::Path(kept.clone())).unwrap();
        stream.emit(&Message::Note("hi".into()));
        stream.discard();
        stream.open().unwrap();
        drop(stream);
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "x = 1\n");
    }
}
