//! lockstep's reporters: everything that turns the event stream into output.
//! Engines emit events ([`lockstep_core::events`]) and return data; the binary
//! hands their events to [`Reporters`], which fans each one out to
//!
//! - the [`console::Console`] on stderr: a progress bar on a TTY, plain lines
//!   otherwise, only warnings and results with `-q`;
//! - the [`stream::EventStream`] of `--events FILE|-`: one JSON object per
//!   line with `schema`, `command`, `event` and `time`, in the spirit of
//!   cargo's `--message-format json` and nextest's machine output.
//!
//! It also decides where human output goes ([`Out`]): standard output, unless
//! the event stream or a machine output (`--json -`) owns it, then standard
//! error. It holds a command line's output specification and checks its
//! rules before anything runs ([`spec::Spec`]). How an event looks is the event's own
//! ([`lockstep_core::events::Human`]); an area's result formats (JUnit,
//! Markdown ...) live with the area's result types (`lockstep_suite::results`).

pub mod console;
pub mod spec;
pub mod stream;

use std::io::Write;

use lockstep_core::events::{Event, Human, Sink};
use lockstep_core::output::Target;
use lockstep_core::Error;
use serde_json::json;

pub use console::Console;
pub use stream::EventStream;

/// Where human output that would go to standard output goes.
#[derive(Debug, Clone, Copy)]
pub struct Out {
    to_stderr: bool,
}

impl Out {
    /// Standard output.
    pub fn stdout() -> Out {
        Out { to_stderr: false }
    }

    /// Prints `text` (no newline added) with every control character but
    /// newline and tab escaped: human output holds text from input
    /// (commit subjects, test ids, names read from files), and an escape
    /// sequence in it must not reach the terminal. The one terminal rule,
    /// for every human output (docs/reliability.md).
    pub fn print(&self, text: &str) {
        let text = lockstep_core::error::printable(text);
        let _ = if self.to_stderr {
            std::io::stderr().lock().write_all(text.as_bytes())
        } else {
            std::io::stdout().lock().write_all(text.as_bytes())
        };
    }

    /// Prints `line` and a newline.
    pub fn line(&self, line: impl std::fmt::Display) {
        self.print(&format!("{line}\n"));
    }
}

/// A story told through a writer (`lockstep demo`'s) goes where human
/// output goes, as text.
impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.print(&String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// How a command reports.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `-q`: no progress, only warnings, results and errors.
    pub quiet: bool,
    /// `--events FILE|-`.
    pub events: Option<Target>,
    /// A machine output of the command (`--json -`, `--csv -` ...) writes
    /// to standard output: human output goes to standard error.
    pub stdout_taken: bool,
}

/// Every reporter of one command.
pub struct Reporters {
    console: Console,
    stream: Option<EventStream>,
    out: Out,
}

impl Reporters {
    /// The reporters of `command` (the name in every event line); opens the
    /// event stream and says that the command started.
    pub fn new(command: &str, options: &Options) -> Result<Reporters, Error> {
        let stream = options
            .events
            .as_ref()
            .map(|target| EventStream::new(command, target))
            .transpose()?;
        let out = Out {
            to_stderr: options.stdout_taken
                || stream.as_ref().is_some_and(EventStream::owns_stdout),
        };
        let reporters = Reporters {
            console: Console::new(options.quiet, out),
            stream,
            out,
        };
        reporters.emit(&Lifecycle::Started {
            version: env!("CARGO_PKG_VERSION"),
        });
        Ok(reporters)
    }

    /// Where human output for standard output goes.
    pub fn out(&self) -> Out {
        self.out
    }

    /// Opens the `--events` stream (its first lines waited in memory until
    /// the command knew its target is none of its inputs).
    pub fn open_events(&self) -> Result<(), Error> {
        match &self.stream {
            Some(stream) => stream.open(),
            None => Ok(()),
        }
    }

    /// The `--events` target is one of the command's inputs: it is never
    /// written.
    pub fn discard_events(&self) {
        if let Some(stream) = &self.stream {
            stream.discard();
        }
    }

    /// The command failed with `err`: an `error` event (every reporter
    /// sees it before stderr does), then the error on stderr. Returns the
    /// exit status `err` calls for.
    pub fn fail(&self, err: &Error) -> i32 {
        self.emit(&Lifecycle::Failed(err));
        eprint!("{}", err.render());
        err.exit_code()
    }

    /// Says that the command ended with `exit_code` (opening the event
    /// stream if nothing did).
    pub fn finish(&self, exit_code: i32) {
        self.emit(&Lifecycle::Finished { exit_code });
        if let Err(e) = self.open_events() {
            eprint!("{}", e.render());
        }
    }
}

impl Sink for Reporters {
    fn emit(&self, event: &dyn Event) {
        self.console.emit(event);
        if let Some(stream) = &self.stream {
            stream.emit(event);
        }
    }
}

/// The first and last events of every command (and the error that ended
/// one).
enum Lifecycle<'a> {
    Started { version: &'static str },
    Failed(&'a Error),
    Finished { exit_code: i32 },
}

impl Event for Lifecycle<'_> {
    fn to_json(&self) -> serde_json::Value {
        match self {
            Lifecycle::Started { version } => {
                json!({"event": "command_started", "lockstep_version": version})
            }
            Lifecycle::Failed(err) => json!({
                "event": "error",
                "message": err.message,
                "causes": err.causes,
                "hint": err.hint,
                "exit_code": err.exit_code(),
            }),
            Lifecycle::Finished { exit_code } => {
                json!({"event": "command_finished", "exit_code": exit_code})
            }
        }
    }

    fn human(&self) -> Human {
        Human::Silent
    }
}

/// The usage error for two outputs that both want standard output.
pub fn stdout_conflict(first: &str, second: &str) -> Error {
    Error::usage(format!(
        "{first} and {second} cannot both write to standard output"
    ))
    .hint({
        let flag = first.trim_end_matches(" -");
        let file = match flag {
            "--events" => "events.jsonl",
            "--csv" => "results.csv",
            "--junit" => "junit.xml",
            "--summary" => "summary.md",
            "-o" => "out.mlir",
            _ => "out.json",
        };
        format!("send one of them to a file, e.g. {flag} {file}")
    })
}
