//! What `lockstep preprocess` reports while it works: the iree-compile
//! phases around it, the start of the batch, and each executable as it is
//! done. The console shows a bar on a TTY and the phases as lines.

use std::path::PathBuf;

use lockstep_core::events::{to_json, Event, Human};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum PreprocessEvent {
    /// An iree-compile phase starts (`compile-to-executable-sources` or
    /// `compile-from-executable-sources`).
    PhaseStarted {
        phase: &'static str,
        input: PathBuf,
        output: PathBuf,
    },
    PhaseFinished {
        phase: &'static str,
        ok: bool,
        seconds: f64,
    },
    /// The executables of the module; `selected` of them get the steps.
    ModuleStarted {
        executables: usize,
        selected: usize,
        steps: usize,
    },
    /// One executable starts its steps.
    ExecutableStarted { symbol: String, index: usize },
    /// One executable went through every step (or failed).
    ExecutableFinished {
        symbol: String,
        index: usize,
        ok: bool,
        changed: bool,
        /// Steps answered by the cache / tool processes run.
        cached: usize,
        ran: usize,
        tool_seconds: f64,
    },
    /// The spliced module was parsed (`ok`) with iree-opt.
    Validated { ok: bool, seconds: f64 },
    /// Every executable is done.
    ModuleFinished {
        ran: usize,
        cached: usize,
        changed: usize,
    },
}

impl Event for PreprocessEvent {
    fn to_json(&self) -> serde_json::Value {
        to_json(self)
    }

    fn human(&self) -> Human {
        match self {
            PreprocessEvent::PhaseStarted {
                phase: "compile-to-executable-sources",
                input,
                ..
            } => Human::Line(format!(
                "compiling {} to the executable-sources phase",
                input.display()
            )),
            PreprocessEvent::PhaseStarted { output, .. } => {
                Human::Line(format!("compiling to {}", output.display()))
            }
            PreprocessEvent::ModuleStarted { selected, .. } => Human::Begin {
                total: *selected as u64,
                line: String::new(),
            },
            // The bar counts executables; a plain log stays short (the
            // summary says what happened).
            PreprocessEvent::ExecutableFinished { symbol, ok, .. } => Human::Done {
                line: if *ok {
                    String::new()
                } else {
                    format!("@{symbol} failed")
                },
                notable: !*ok,
            },
            PreprocessEvent::ModuleFinished { .. } => Human::End,
            _ => Human::Silent,
        }
    }
}
