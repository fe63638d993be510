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

/// `url` without a `user:password@` part, for messages.
pub fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// Whether `c` changes how the text around it reads: a control character
/// (newline, CR, ESC, the C1 range, NUL ...) or an invisible format
/// character ([`is_invisible_format`]: bidirectional controls, which reorder
/// what a terminal or an editor shows, line and paragraph separators, which
/// an editor shows as a line break, zero-width characters). The one
/// predicate behind the terminal rule ([`printable`]) and the refusal of
/// such names where lockstep would write them into a configuration
/// (`lockstep init`).
pub fn hides_text(c: char) -> bool {
    c.is_control() || is_invisible_format(c)
}

/// `text` with every character [`hides_text`] names escaped (`\n`,
/// `\u{1b}`, `\u{202e}`): a name from input shown as it is spelled.
pub fn spelled(text: &str) -> String {
    escape_controls(text, |_| false).into_owned()
}

/// A name or value from input as an error quotes it: [`spelled`] (every
/// character [`hides_text`] names escaped) and at most `max_chars` of it,
/// cut with `…`, so that a hostile file's names (a bundle's manifest, a
/// server's answer) never make a message unbounded.
pub fn shown(text: &str, max_chars: usize) -> String {
    let cut: String = text.chars().take(max_chars).collect();
    let mut out = spelled(&cut);
    if text.chars().nth(max_chars).is_some() {
        out.push('…');
    }
    out
}

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
    /// Control characters from input (a name with an escape sequence, a
    /// NUL) are shown escaped, never sent to the terminal raw.
    pub fn render(&self) -> String {
        let mut out = format!("error: {}\n", printable_line(&self.message));
        for cause in &self.causes {
            for line in cause.lines() {
                out.push_str(&format!("cause: {}\n", printable_line(line)));
            }
        }
        if let Some(hint) = &self.hint {
            out.push_str(&format!("hint: {}\n", printable(hint)));
        }
        out
    }
}

/// `text` with every control character but newline and tab escaped
/// (`\u{1b}`, `\0` ...), and every invisible format character
/// ([`is_invisible_format`]: bidi overrides such as U+202E, zero-width
/// characters, line and paragraph separators), for printing text that came
/// from input: a commit subject must not reorder or hide what the terminal
/// shows around it.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    escape_controls(text, |c| c == '\n' || c == '\t')
}

/// [`printable`] for one line: newlines are escaped too.
pub fn printable_line(text: &str) -> std::borrow::Cow<'_, str> {
    escape_controls(text, |c| c == '\t')
}

/// Whether `c` is a character a terminal shows as nothing, or that changes
/// how the text around it is shown, without being a control character:
/// Unicode's format characters (category Cf: the bidi marks U+061C,
/// U+200E/F, embeddings and overrides U+202A-202E, isolates U+2066-2069,
/// zero-width U+200B-200D, U+2060-2064, the BOM U+FEFF, the soft hyphen,
/// tags U+E0000-E007F ...) and the line and paragraph separators
/// U+2028/2029. Unicode 15's list.
pub fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061C}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08E2}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0001}'
            | '\u{E0020}'..='\u{E007F}'
    )
}

fn escape_controls(text: &str, keep: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    let escape = |c: char| hides_text(c) && !keep(c);
    if !text.chars().any(escape) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escape(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_reach_messages() {
        assert_eq!(
            without_userinfo("https://__token__:pypi-x@host/legacy/"),
            "https://host/legacy/"
        );
        assert_eq!(without_userinfo("https://host/a@b"), "https://host/a@b");
        assert_eq!(without_userinfo("/srv/git"), "/srv/git");
    }

    #[test]
    fn hidden_characters_are_named_and_spelled_out() {
        for c in [
            '\n', '\r', '\t', '\u{1b}', '\0', '\u{85}', '\u{9b}', '\u{202e}', '\u{2067}',
            '\u{200f}', '\u{61c}', '\u{2028}', '\u{200b}', '\u{feff}',
        ] {
            assert!(hides_text(c), "{c:?}");
        }
        for c in ['a', 'é', '中', ' ', '\u{a0}'] {
            assert!(!hides_text(c), "{c:?}");
        }
        assert_eq!(
            spelled("a\n[b]\u{1b}c\u{202e}d é"),
            "a\\n[b]\\u{1b}c\\u{202e}d é"
        );
    }

    #[test]
    fn control_characters_from_input_are_escaped() {
        let err = Error::usage("bad name `a\u{1b}[31mred\nline\0`")
            .cause("x\u{7}y")
            .hint("fix\tit");
        let text = err.render();
        assert_eq!(
            text,
            "error: bad name `a\\u{1b}[31mred\\nline\\u{0}`\ncause: x\\u{7}y\nhint: fix\tit\n"
        );
        assert!(matches!(
            printable("plain\ntext"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn bidi_and_invisible_format_characters_are_escaped() {
        // A commit subject that reorders what follows it (Trojan Source).
        let subject = "Fix \u{202E}}lanigiro{ \u{2066}x\u{2069} \u{061C}\u{200E}\u{200F}";
        let shown = printable_line(subject);
        assert_eq!(
            shown,
            "Fix \\u{202e}}lanigiro{ \\u{2066}x\\u{2069} \\u{61c}\\u{200e}\\u{200f}"
        );
        for c in [
            '\u{202A}',
            '\u{202B}',
            '\u{202C}',
            '\u{202D}',
            '\u{202E}',
            '\u{2066}',
            '\u{2067}',
            '\u{2068}',
            '\u{2069}',
            '\u{200B}',
            '\u{200D}',
            '\u{2060}',
            '\u{FEFF}',
            '\u{00AD}',
            '\u{2028}',
            '\u{2029}',
            '\u{E0041}',
            '\u{13439}',
        ] {
            let text = format!("a{c}b");
            assert!(!printable(&text).contains(c), "{:?}", c);
            assert!(!Error::failed(text.clone()).render().contains(c), "{:?}", c);
        }
        // Letters of every script, emoji and combining marks are text.
        for plain in ["Ändere 変更 تغيير", "fix 🚀", "e\u{301}"] {
            assert!(
                matches!(printable(plain), std::borrow::Cow::Borrowed(_)),
                "{plain}"
            );
        }
    }

    #[test]
    fn shown_escapes_and_cuts() {
        assert_eq!(shown("plain", 10), "plain");
        assert_eq!(shown("a\u{1b}b", 10), "a\\u{1b}b");
        assert_eq!(shown(&"é".repeat(30), 5), format!("{}…", "é".repeat(5)));
        assert_eq!(shown("12345", 5), "12345");
    }
}
