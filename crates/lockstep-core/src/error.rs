//! The one error type commands report through.
//!
//! Every error carries what failed in the user's terms, the chain of causes, an
//! optional hint with the next command to run, and a kind that decides the exit
//! status (usage/configuration errors exit 2, failed operations exit 1).

use std::fmt;

/// Decides the exit status of a command that ends with this error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad arguments or configuration: nothing was done (exit 2).
    Usage,
    /// The operation ran and failed (exit 1).
    Failed,
}

/// An error with a message, causes and a hint, printed as
/// `error: ...`, `cause: ...`, `hint: ...` lines.
#[derive(Debug, Clone)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub causes: Vec<String>,
    pub hint: Option<String>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An operation failed (exit 1).
    pub fn failed(message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Failed,
            message: message.into(),
            causes: Vec::new(),
            hint: None,
        }
    }

    /// The user asked for something that cannot be done as asked (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Usage,
            ..Error::failed(message)
        }
    }

    /// Adds a cause line.
    pub fn cause(mut self, cause: impl Into<String>) -> Self {
        self.causes.push(cause.into());
        self
    }

    /// Sets the hint line (the next thing the user should do).
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Wraps this error under a higher-level message: the old message becomes
    /// the first cause.
    pub fn context(mut self, message: impl Into<String>) -> Self {
        let old = std::mem::replace(&mut self.message, message.into());
        self.causes.insert(0, old);
        self
    }

    /// Exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            ErrorKind::Usage => 2,
            ErrorKind::Failed => 1,
        }
    }

    /// The full multi-line report.
    pub fn render(&self) -> String {
        let mut out = format!("error: {}\n", self.message);
        for cause in &self.causes {
            for line in cause.lines() {
                out.push_str(&format!("cause: {line}\n"));
            }
        }
        if let Some(hint) = &self.hint {
            out.push_str(&format!("hint: {hint}\n"));
        }
        out
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        for cause in &self.causes {
            write!(f, ": {cause}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        Error::failed(err.to_string())
    }
}

/// Adds context to any result whose error converts into [`Error`].
pub trait ResultExt<T> {
    fn context(self, message: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: Into<Error>> ResultExt<T> for std::result::Result<T, E> {
    fn context(self, message: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| e.into().context(message()))
    }
}
