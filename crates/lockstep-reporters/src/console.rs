//! The console reporter: events as people read them, on stderr. On a TTY a
//! progress bar counts units of work and only notable lines (failures) are
//! printed above it; otherwise every line is printed plainly, so CI logs
//! read top to bottom. `-q` keeps only warnings and results.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use lockstep_core::error::printable;
use lockstep_core::events::{Event, Human, Sink};

use crate::Out;

pub struct Console {
    tty: bool,
    quiet: bool,
    out: Out,
    bar: Mutex<Option<indicatif::ProgressBar>>,
}

impl Console {
    pub fn new(quiet: bool, out: Out) -> Console {
        Console {
            tty: std::io::stderr().is_terminal(),
            quiet,
            out,
            bar: Mutex::new(None),
        }
    }

    /// Prints a line on stderr, above the bar when there is one.
    fn eprint(&self, line: &str, dim: bool) {
        let bar = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        let text = if dim && self.tty {
            format!("\x1b[2m{line}\x1b[0m")
        } else {
            line.to_string()
        };
        match bar.as_ref() {
            Some(bar) => bar.println(text),
            None => {
                let _ = writeln!(std::io::stderr().lock(), "{text}");
            }
        }
    }

    fn begin(&self, total: u64) {
        if !self.tty || self.quiet {
            return;
        }
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {msg}")
        {
            bar.set_style(style);
        }
        *self.bar.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar);
    }

    fn done(&self, line: &str, notable: bool) {
        let bar = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        match bar.as_ref() {
            Some(bar) => {
                if notable {
                    bar.println(line);
                }
                bar.inc(1);
            }
            None if !self.quiet && !line.is_empty() => {
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
            None => {}
        }
    }

    fn end(&self) {
        if let Some(bar) = self.bar.lock().unwrap_or_else(|e| e.into_inner()).take() {
            bar.finish_and_clear();
        }
    }

    /// Result lines, with the bar out of the way.
    fn stdout(&self, text: &str) {
        let bar = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        match bar.as_ref() {
            Some(bar) => bar.suspend(|| self.out.line(text)),
            None => self.out.line(text),
        }
    }
}

impl Sink for Console {
    fn emit(&self, event: &dyn Event) {
        self.show(event.human());
    }
}

impl Console {
    /// Shows `human`; control characters that came from input are escaped
    /// ([`printable`]), never sent to the terminal raw.
    fn show(&self, human: Human) {
        match human {
            Human::Silent => {}
            Human::Line(line) if !self.quiet => self.eprint(&printable(&line), true),
            Human::Line(_) => {}
            Human::Warning(message) => {
                self.eprint(&format!("warning: {}", printable(&message)), false)
            }
            Human::Stdout(text) => self.stdout(&printable(&text)),
            Human::Begin { total, line } => {
                if !self.quiet && !line.is_empty() {
                    self.eprint(&printable(&line), false);
                }
                self.begin(total)
            }
            Human::Done { line, notable } => self.done(&printable(&line), notable),
            Human::End => self.end(),
            Human::Many(all) => all.into_iter().for_each(|h| self.show(h)),
        }
    }
}
