//! Human output: the console event printer and logging setup.

use std::io::{IsTerminal, Write};

use lockstep_core::events::{Event, EventSink};

/// Logs go to stderr; `-v` raises the level, `LOCKSTEP_LOG` overrides it.
pub fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("LOCKSTEP_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default))
        // The HTTP client logs request URLs, and webhook URLs are secrets.
        .add_directive("ureq=warn".parse().expect("static directive"))
        .add_directive("rustls=warn".parse().expect("static directive"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .without_time()
        .try_init();
}

/// Prints engine events as plain progress lines on stderr.
pub struct Console {
    tty: bool,
}

impl Console {
    pub fn new() -> Self {
        Console {
            tty: std::io::stderr().is_terminal(),
        }
    }
}

impl EventSink for Console {
    fn emit(&self, event: Event) {
        let line = match event {
            Event::Info { message } => message,
            Event::Warn { message } => format!("warning: {message}"),
            Event::ProbeStarted {
                commit,
                subject,
                position,
                total,
            } => {
                let at = if position == 0 {
                    "pin".to_string()
                } else {
                    format!("{position}/{total}")
                };
                format!("probe {at} {} {subject}", &commit[..12.min(commit.len())])
            }
            Event::ProbeFinished {
                commit,
                outcome,
                cached,
                seconds,
            } => format!(
                "  {} {outcome}{} ({seconds:.1}s)",
                &commit[..12.min(commit.len())],
                if cached { " (cached)" } else { "" }
            ),
            Event::Advanced {
                superproject_commit,
                message,
                ..
            } => {
                format!(
                    "committed {} {message}",
                    &superproject_commit[..12.min(superproject_commit.len())]
                )
            }
            Event::Exported { branch, commit } => {
                format!("exported {} to {branch}", &commit[..12.min(commit.len())])
            }
        };
        let mut err = std::io::stderr().lock();
        let _ = if self.tty {
            writeln!(err, "\x1b[2m{line}\x1b[0m")
        } else {
            writeln!(err, "{line}")
        };
    }
}
