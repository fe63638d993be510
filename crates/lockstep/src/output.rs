//! Logging setup and the report of an error that ends a command.

use std::io::IsTerminal;

use lockstep_core::events::{Event, Human};
use lockstep_core::Error;
use lockstep_report::Reporters;

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

/// The error that ended a command: on stderr as `error:` / `cause:` /
/// `hint:` lines, and in the event stream as an `error` event.
pub fn report_error(reporters: &Reporters, err: &Error) {
    use lockstep_core::events::Sink;
    reporters.emit(&Failure(err));
    eprint!("{}", err.render());
}

struct Failure<'a>(&'a Error);

impl Event for Failure<'_> {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "event": "error",
            "message": self.0.message,
            "causes": self.0.causes,
            "hint": self.0.hint,
            "exit_code": self.0.exit_code(),
        })
    }

    fn human(&self) -> Human {
        // Printed by report_error after every other reporter saw it.
        Human::Silent
    }
}

/// The version of every JSON document a query command prints.
pub const JSON_SCHEMA: u32 = 1;

/// `value` (an object without a `schema` key) as a pretty JSON document
/// with `"schema"` as its first key, serialized straight from the value
/// (a status of 30,000 pending commits is printed without a copy).
pub fn json_document(value: &impl serde::Serialize) -> Result<String, Error> {
    #[derive(serde::Serialize)]
    struct Document<'a, T: serde::Serialize> {
        schema: u32,
        #[serde(flatten)]
        value: &'a T,
    }
    serde_json::to_string_pretty(&Document {
        schema: JSON_SCHEMA,
        value,
    })
    .map_err(|e| Error::failed("cannot encode the output as JSON").cause(e.to_string()))
}
