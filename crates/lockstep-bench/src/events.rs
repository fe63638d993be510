//! What `lockstep bench` reports while it runs: the batch, each distinct
//! kernel's compile, each row as soon as it is final. A row reads on stdout
//! as BOO prints it (the command, then `>>>` lines); its notes (flags accepted
//! and ignored) and each compile go to stderr; on a TTY a bar counts the
//! compiles and the rows.

use lockstep_core::events::{to_json, Event, Human};
use lockstep_core::words::count;
use serde::Serialize;

use crate::rows::Row;

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum BenchEvent {
    /// The batch: its commands, the rows and distinct kernels they make.
    BatchStarted {
        commands: usize,
        rows: usize,
        kernels: usize,
        device: String,
        runtime_device: String,
    },
    /// A distinct kernel is compiled (or found in the cache).
    KernelCompiled {
        func_name: String,
        key: String,
        cached: bool,
        ok: bool,
        seconds: f64,
        message: String,
    },
    /// A row is final (timed, verified, or failed).
    RowFinished {
        /// Its place among the batch's rows.
        index: usize,
        /// Whether it is its command's first row (the command is printed once).
        first_of_command: bool,
        row: Box<Row>,
        /// The row as BOO prints it.
        boo_lines: Vec<String>,
    },
    /// Every row is final.
    BatchFinished {
        rows: usize,
        failed: usize,
        compiled: usize,
        cache_hits: usize,
        /// Rows answered from their record.
        recorded: usize,
    },
}

impl Event for BenchEvent {
    fn to_json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn human(&self) -> Human {
        match self {
            // Compiles and rows both advance the progress: a long compile
            // phase is never a blank screen.
            BenchEvent::BatchStarted {
                rows,
                kernels,
                device,
                ..
            } => Human::Begin {
                total: (*rows + *kernels) as u64,
                line: format!(
                    "{} to compile, then {} to time on {device}",
                    count(*kernels, "kernel", "kernels"),
                    count(*rows, "row", "rows"),
                ),
            },
            BenchEvent::RowFinished {
                first_of_command,
                row,
                boo_lines,
                ..
            } => {
                let mut shown = Vec::new();
                if *first_of_command {
                    shown.push(Human::Stdout(row.arguments.clone()));
                    shown.extend(row.notes.iter().map(|note| {
                        Human::Line(match row.line {
                            Some(n) => format!("note: line {n}: {note}"),
                            None => format!("note: {note}"),
                        })
                    }));
                }
                shown.extend(boo_lines.iter().cloned().map(Human::Stdout));
                shown.push(Human::Done {
                    line: String::new(),
                    notable: false,
                });
                Human::Many(shown)
            }
            BenchEvent::BatchFinished { .. } => Human::End,
            BenchEvent::KernelCompiled {
                func_name,
                cached,
                ok,
                seconds,
                message,
                ..
            } => Human::Done {
                line: match (ok, cached) {
                    (false, _) if message.starts_with(crate::rows::SKIPPED) => {
                        format!("{func_name}: not compiled, {message}")
                    }
                    (false, _) => format!("{func_name}: compile failed: {message}"),
                    (true, true) => format!("{func_name}: from the cache"),
                    (true, false) => format!("{func_name}: compiled in {seconds:.1}s"),
                },
                notable: !ok,
            },
        }
    }
}
