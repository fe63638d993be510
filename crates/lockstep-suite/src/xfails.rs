//! `lockstep test --update-xfails`: rewrites the expected-failure lists of an
//! iree-test-suites config (JSON or JSON5) from a run's results.
//!
//! Config files are written and reviewed by people: they carry comments, a key
//! order, trailing commas and an indentation style that a serializer round trip
//! would destroy, turning a two-line change into a noisy diff. So instead of
//! parsing into a value and re-serializing, a small scanner that understands
//! JSON5 *lexically* (strings in both quote kinds with escapes, `//` and `/* */`
//! comments, unquoted identifier keys, nesting) locates the top-level
//! `expected_compile_failures` and `expected_run_failures` keys and the exact
//! byte span of their array values. Only those spans are replaced; every other
//! byte of the file (other keys, their order, comments, trailing commas, CRLF
//! line endings, a BOM) is kept as it was.
//!
//! What is written:
//! - each list sorted (byte order) and de-duplicated, one JSON-escaped string per
//!   line, indented like the array's existing items or, failing that, one
//!   indentation unit deeper than its key; an empty list is written `[]`;
//! - a trailing comma after the last item when the array was already written
//!   one item per line and had one; for an array that was empty or on one line,
//!   when the file uses trailing commas anywhere (so strict JSON stays strict);
//! - the file's line ending (`\r\n` when the file has any, else `\n`).
//!
//! Comments *inside* a replaced array (between its `[` and `]`) are dropped with
//! the old items: they usually annotate entries that may no longer be listed.
//! Comments after the `]` (e.g. `], // flaky on CI`) are outside the span and
//! kept.
//!
//! A missing key is inserted as a new member just before the closing brace of
//! the top-level object (after any comment lines that precede the brace), with a
//! comma added after the previous last member when it had none.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use lockstep_core::config::line_col;
use lockstep_core::Error;

use crate::model::{RunReport, StepKind, StepStatus, TestResult};
use crate::plan::Test;
use crate::sources::SuiteConfig;

/// The config key listing tests whose compile step is expected to fail.
pub const COMPILE_KEY: &str = "expected_compile_failures";
/// The config key listing tests whose run step is expected to fail.
pub const RUN_KEY: &str = "expected_run_failures";

/// One config whose lists [`update`] rewrote (or found up to date).
#[derive(Debug, Clone)]
pub struct Updated {
    pub path: PathBuf,
    pub compile: usize,
    pub run: usize,
}

/// Updates each config's expected-failure lists from a run's results.
///
/// Starts from the lists in the file and changes only the cases whose step
/// ran: a test filtered out (`-k`, `-m`, `--shard`, `--last-failed`), or whose
/// run was skipped (`--skip-all-runs`, `skip_run_tests`), keeps its entries.
pub fn update(tests: &[Test], report: &RunReport) -> Result<Vec<Updated>, Error> {
    let results: HashMap<&str, &TestResult> =
        report.results.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut lists: BTreeMap<PathBuf, Lists> = BTreeMap::new();
    for t in tests {
        let (Some(config), Some(r)) = (&t.config, results.get(t.id.as_str())) else {
            continue;
        };
        let entry = match lists.entry(config.clone()) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(Lists::load(config)?),
        };
        entry.apply(&t.case, r);
    }
    let mut updated = Vec::new();
    for (path, lists) in lists {
        let text = lockstep_core::fs::read_input_text(
            "the suite config",
            &path,
            crate::sources::MAX_SUITE_BYTES,
        )?;
        let compile: Vec<String> = lists.compile.into_iter().collect();
        let run: Vec<String> = lists.run.into_iter().collect();
        let rewritten = rewrite_lists(&text, &path, &compile, &run)?;
        if rewritten != text {
            // Through a symbolic link: the file it names is replaced, the
            // link stays.
            let target = writable_file(&path)?;
            lockstep_core::fs::write_atomic(&target, rewritten.as_bytes())
                .map_err(|e| e.context(format!("cannot write {}", path.display())))?;
        }
        updated.push(Updated {
            path,
            compile: compile.len(),
            run: run.len(),
        });
    }
    Ok(updated)
}

/// Refuses, before a run, `--update-xfails` on configs it could not
/// rewrite: only a regular file (or a link to one) can be replaced.
pub fn check_updatable(configs: &[SuiteConfig]) -> Result<(), Error> {
    configs
        .iter()
        .try_for_each(|c| writable_file(&c.path).map(|_| ()))
}

/// The regular file `path` is or links to.
fn writable_file(path: &Path) -> Result<PathBuf, Error> {
    let refuse = |why: String| {
        Err(Error::usage(format!(
            "--update-xfails cannot rewrite {}: {why}",
            path.display()
        ))
        .hint("give --suite-config a regular file to update"))
    };
    match std::fs::canonicalize(path) {
        Ok(target) if target.is_file() => Ok(target),
        Ok(_) => refuse("it is not a regular file (a FIFO, a device or a directory)".into()),
        Err(e) => refuse(e.to_string()),
    }
}

/// A config's expected-failure lists being updated.
struct Lists {
    compile: BTreeSet<String>,
    run: BTreeSet<String>,
}

impl Lists {
    fn load(path: &Path) -> Result<Lists, Error> {
        let config = SuiteConfig::load(path)?;
        Ok(Lists {
            compile: config.expected_compile_failures.into_iter().collect(),
            run: config.expected_run_failures.into_iter().collect(),
        })
    }

    /// Lists or unlists `case` by the steps of `r` that ran.
    fn apply(&mut self, case: &str, r: &TestResult) {
        let status = |kind: StepKind| {
            r.steps
                .iter()
                .find(|s| s.kind == kind)
                .map_or(StepStatus::Skipped, |s| s.status)
        };
        match status(StepKind::Compile) {
            StepStatus::Skipped => {}
            StepStatus::Failed => {
                self.compile.insert(case.to_string());
                // A case that cannot compile cannot run: one list says it.
                self.run.remove(case);
            }
            StepStatus::Passed => {
                self.compile.remove(case);
            }
        }
        match status(StepKind::Run) {
            StepStatus::Skipped => {}
            StepStatus::Failed => {
                self.run.insert(case.to_string());
            }
            StepStatus::Passed => {
                self.run.remove(case);
            }
        }
    }
}

/// Replaces the two arrays' contents in `text` (JSON or JSON5) with `compile` and `run` (sorted, one string per line,
/// indented like the surrounding file), preserving all other text. If a key is missing, inserts it before the closing brace
/// of the top-level object. Strings are written with JSON escaping. Errors (usage) when the text is not an object or an array
/// can't be found/parsed, naming the key.
///
/// Lists are also de-duplicated. Comments inside a replaced array are dropped
/// (see the module documentation); everything outside the two arrays' spans is
/// kept byte for byte.
///
/// `origin` is the file the text was read from: every error names it. Never
/// panics, whatever the text.
pub fn rewrite_lists(
    text: &str,
    origin: &Path,
    compile: &[String],
    run: &[String],
) -> Result<String, Error> {
    rewrite_text(text, compile, run).map_err(|e| {
        let message = format!("{}: {}", origin.display(), e.message);
        Error { message, ..e }
    })
}

fn rewrite_text(text: &str, compile: &[String], run: &[String]) -> Result<String, Error> {
    let scan = scan(text)?;

    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let unit = scan
        .members
        .iter()
        .filter_map(|m| line_indent(text, m.key_start))
        .find(|indent| !indent.is_empty())
        .unwrap_or("  ")
        .to_string();

    let mut edits: Vec<Edit> = Vec::new();
    let mut missing: Vec<(&str, Vec<String>)> = Vec::new();

    for (key, list) in [(COMPILE_KEY, compile), (RUN_KEY, run)] {
        let items = sorted_unique(list);
        let mut found = scan.members.iter().filter(|m| m.key == key);
        let Some(member) = found.next() else {
            missing.push((key, items));
            continue;
        };
        if let Some(again) = found.next() {
            let (first_line, _) = line_col(text, member.key_start);
            let (second_line, _) = line_col(text, again.key_start);
            return Err(Error::usage(format!(
                "`{key}` appears twice in the config (lines {first_line} and {second_line})"
            ))
            .hint(format!("keep one `{key}` list and run again")));
        }
        let ValueKind::Array(array) = &member.value.kind else {
            let (line, column) = line_col(text, member.value.start);
            return Err(Error::usage(format!(
                "`{key}` is not an array: found {} at line {line}, column {column}",
                describe_span(text, member.value.start, member.value.end)
            ))
            .hint(format!(
                "make `{key}` a list of test names, e.g. `\"{key}\": []`"
            )));
        };
        let key_indent = line_indent(text, member.key_start).unwrap_or("");
        let item_indent = match array.first_item_start.and_then(|p| line_indent(text, p)) {
            Some(indent) => indent.to_string(),
            None => format!("{key_indent}{unit}"),
        };
        // A multi-line array with items keeps its own style; an empty or
        // one-line array (now becoming multi-line) follows the file's.
        let multi_line = text[member.value.start..member.value.end].contains('\n');
        let trailing = if array.first_item_start.is_some() && multi_line {
            array.trailing_comma
        } else {
            scan.uses_trailing_commas
        };
        edits.push(Edit {
            start: member.value.start,
            end: member.value.end,
            text: render_array(&items, &item_indent, key_indent, nl, trailing)?,
        });
    }

    if !missing.is_empty() {
        let indent = match scan.members.last() {
            Some(last) => line_indent(text, last.key_start).unwrap_or(&unit),
            None => &unit,
        }
        .to_string();
        let quote_keys = scan.members.first().is_none_or(|m| m.key_quoted);
        if let Some(last) = scan.members.last() {
            if !last.comma_after {
                edits.push(Edit {
                    start: last.value.end,
                    end: last.value.end,
                    text: ",".to_string(),
                });
            }
        }
        let mut block = String::new();
        for (i, (key, items)) in missing.iter().enumerate() {
            block.push_str(&indent);
            if quote_keys {
                block.push_str(&json_string(key)?);
            } else {
                block.push_str(key);
            }
            block.push_str(": ");
            let item_indent = format!("{indent}{unit}");
            block.push_str(&render_array(
                items,
                &item_indent,
                &indent,
                nl,
                scan.uses_trailing_commas,
            )?);
            if i + 1 < missing.len() || scan.uses_trailing_commas {
                block.push(',');
            }
            block.push_str(nl);
        }
        let close = scan.close;
        let line_start = text[..close].rfind('\n').map_or(0, |i| i + 1);
        let brace_starts_line = text[line_start..close]
            .chars()
            .all(|c| c == ' ' || c == '\t');
        if brace_starts_line {
            edits.push(Edit {
                start: line_start,
                end: line_start,
                text: block,
            });
        } else {
            edits.push(Edit {
                start: close,
                end: close,
                text: format!("{nl}{block}"),
            });
        }
    }

    apply(text, edits)
}

/// Replaces `start..end` with `text`.
struct Edit {
    start: usize,
    end: usize,
    text: String,
}

fn apply(text: &str, mut edits: Vec<Edit>) -> Result<String, Error> {
    // Stable: edits at the same position keep the order they were made in.
    edits.sort_by_key(|e| e.start);
    let mut out = String::with_capacity(text.len() + 256);
    let mut cursor = 0;
    for edit in edits {
        if edit.start < cursor || edit.end < edit.start || edit.end > text.len() {
            return Err(Error::failed(
                "internal error: overlapping edits while rewriting the expected-failure lists",
            ));
        }
        out.push_str(&text[cursor..edit.start]);
        out.push_str(&edit.text);
        cursor = edit.end;
    }
    out.push_str(&text[cursor..]);
    Ok(out)
}

fn sorted_unique(list: &[String]) -> Vec<String> {
    let mut items = list.to_vec();
    items.sort();
    items.dedup();
    items
}

fn json_string(s: &str) -> Result<String, Error> {
    serde_json::to_string(s).map_err(|e| {
        Error::failed(format!("cannot write `{s}` as a JSON string")).cause(e.to_string())
    })
}

fn render_array(
    items: &[String],
    item_indent: &str,
    close_indent: &str,
    nl: &str,
    trailing_comma: bool,
) -> Result<String, Error> {
    if items.is_empty() {
        return Ok("[]".to_string());
    }
    let mut out = String::from("[");
    out.push_str(nl);
    for (i, item) in items.iter().enumerate() {
        out.push_str(item_indent);
        out.push_str(&json_string(item)?);
        if i + 1 < items.len() || trailing_comma {
            out.push(',');
        }
        out.push_str(nl);
    }
    out.push_str(close_indent);
    out.push(']');
    Ok(out)
}

/// The leading whitespace of the line holding `pos`, when only whitespace
/// precedes `pos` on that line (the thing at `pos` starts its line).
fn line_indent(text: &str, pos: usize) -> Option<&str> {
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..pos];
    let before = before.strip_prefix('\u{feff}').unwrap_or(before);
    before
        .chars()
        .all(|c| c == ' ' || c == '\t')
        .then_some(before)
}

fn describe_span(text: &str, start: usize, end: usize) -> String {
    let snippet = &text[start..end];
    let mut short: String = snippet.chars().take(30).collect();
    if short.len() < snippet.len() {
        short.push_str("...");
    }
    let short = short.replace(['\n', '\r'], " ");
    format!("`{short}`")
}

// ---------------------------------------------------------------------------
// The scanner.

/// What the scan of the top-level object found.
struct Scan {
    members: Vec<Member>,
    /// Byte offset of the top-level object's closing `}`.
    close: usize,
    /// A `,` directly before a `]` or `}` somewhere in the file.
    uses_trailing_commas: bool,
}

/// One member of the top-level object.
struct Member {
    key: String,
    key_start: usize,
    key_quoted: bool,
    value: Value,
    /// A `,` follows the value.
    comma_after: bool,
}

struct Value {
    start: usize,
    /// Exclusive.
    end: usize,
    kind: ValueKind,
}

enum ValueKind {
    Scalar,
    Object,
    Array(ArrayInfo),
}

struct ArrayInfo {
    first_item_start: Option<usize>,
    trailing_comma: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Open(char),
    Close(char),
    Colon,
    Comma,
    /// A string literal, decoded.
    Str(String),
    /// An unquoted word: identifier, number, `true`, `null`, `Infinity`...
    Word(String),
    End,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    start: usize,
    end: usize,
}

/// A scan error at a byte offset, turned into a user-facing [`Error`] by [`scan`].
struct ScanError {
    message: String,
    pos: usize,
}

type ScanResult<T> = Result<T, ScanError>;

fn err<T>(message: impl Into<String>, pos: usize) -> ScanResult<T> {
    Err(ScanError {
        message: message.into(),
        pos,
    })
}

fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    peeked: Option<Token>,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Self {
        Lexer {
            text,
            pos: 0,
            peeked: None,
        }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn peek_char(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump_char(&mut self) -> Option<char> {
        let c = self.peek_char()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn skip_trivia(&mut self) -> ScanResult<()> {
        loop {
            let rest = self.rest();
            if let Some(c) = rest.chars().next() {
                if c.is_whitespace() || c == '\u{feff}' {
                    self.pos += c.len_utf8();
                    continue;
                }
            }
            if rest.starts_with("//") {
                let len = rest.find(is_line_terminator).unwrap_or(rest.len());
                self.pos += len;
                continue;
            }
            if let Some(body) = rest.strip_prefix("/*") {
                match body.find("*/") {
                    Some(i) => self.pos += 2 + i + 2,
                    None => return err("unterminated `/*` comment", self.pos),
                }
                continue;
            }
            return Ok(());
        }
    }

    fn peek(&mut self) -> ScanResult<Token> {
        if let Some(token) = &self.peeked {
            return Ok(token.clone());
        }
        let token = self.lex()?;
        self.peeked = Some(token.clone());
        Ok(token)
    }

    fn next(&mut self) -> ScanResult<Token> {
        match self.peeked.take() {
            Some(token) => Ok(token),
            None => self.lex(),
        }
    }

    fn lex(&mut self) -> ScanResult<Token> {
        self.skip_trivia()?;
        let start = self.pos;
        let Some(c) = self.peek_char() else {
            return Ok(Token {
                tok: Tok::End,
                start,
                end: start,
            });
        };
        let tok = match c {
            '{' | '[' => {
                self.bump_char();
                Tok::Open(c)
            }
            '}' | ']' => {
                self.bump_char();
                Tok::Close(c)
            }
            ':' => {
                self.bump_char();
                Tok::Colon
            }
            ',' => {
                self.bump_char();
                Tok::Comma
            }
            '"' | '\'' => Tok::Str(self.string(c)?),
            '/' => return err("unexpected `/`", start),
            _ => {
                while let Some(c) = self.peek_char() {
                    if c.is_whitespace()
                        || c == '\u{feff}'
                        || matches!(c, '{' | '}' | '[' | ']' | ':' | ',' | '"' | '\'' | '/')
                    {
                        break;
                    }
                    self.pos += c.len_utf8();
                }
                Tok::Word(decode_identifier(&self.text[start..self.pos]))
            }
        };
        Ok(Token {
            tok,
            start,
            end: self.pos,
        })
    }

    /// Lexes a string literal starting at the opening quote; returns its value.
    fn string(&mut self, quote: char) -> ScanResult<String> {
        let start = self.pos;
        self.bump_char();
        let mut value = String::new();
        loop {
            let Some(c) = self.bump_char() else {
                return err("unterminated string", start);
            };
            match c {
                c if c == quote => return Ok(value),
                '\n' | '\r' => return err("unterminated string (line break inside it)", start),
                '\\' => {
                    let escape_at = self.pos - 1;
                    let Some(e) = self.bump_char() else {
                        return err("unterminated string", start);
                    };
                    match e {
                        'n' => value.push('\n'),
                        'r' => value.push('\r'),
                        't' => value.push('\t'),
                        'b' => value.push('\u{8}'),
                        'f' => value.push('\u{c}'),
                        'v' => value.push('\u{b}'),
                        '0' => value.push('\0'),
                        'x' => {
                            let code = self.hex(2, escape_at)?;
                            value.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                        }
                        'u' => {
                            let code = self.hex(4, escape_at)?;
                            value.push(self.utf16(code, escape_at)?);
                        }
                        // Line continuations.
                        '\r' => {
                            if self.peek_char() == Some('\n') {
                                self.bump_char();
                            }
                        }
                        '\n' | '\u{2028}' | '\u{2029}' => {}
                        other => value.push(other),
                    }
                }
                c => value.push(c),
            }
        }
    }

    fn hex(&mut self, digits: usize, escape_at: usize) -> ScanResult<u32> {
        let rest = self.rest();
        let Some(hex) = rest.get(..digits) else {
            return err("invalid escape in a string", escape_at);
        };
        match u32::from_str_radix(hex, 16) {
            Ok(code) if hex.chars().all(|c| c.is_ascii_hexdigit()) => {
                self.pos += digits;
                Ok(code)
            }
            _ => err("invalid escape in a string", escape_at),
        }
    }

    /// Combines a `\uD8xx\uDCxx` surrogate pair; a lone surrogate becomes U+FFFD.
    fn utf16(&mut self, code: u32, escape_at: usize) -> ScanResult<char> {
        if (0xD800..0xDC00).contains(&code) && self.rest().starts_with("\\u") {
            let save = self.pos;
            self.pos += 2;
            let low = self.hex(4, escape_at)?;
            if (0xDC00..0xE000).contains(&low) {
                let combined = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                return Ok(char::from_u32(combined).unwrap_or('\u{fffd}'));
            }
            self.pos = save;
        }
        Ok(char::from_u32(code).unwrap_or('\u{fffd}'))
    }
}

/// JSON5 identifiers may spell characters as `\uXXXX`; decode those (rare, but
/// a key spelled that way is still the key).
fn decode_identifier(word: &str) -> String {
    if !word.contains("\\u") {
        return word.to_string();
    }
    let mut out = String::new();
    let mut rest = word;
    while let Some(i) = rest.find("\\u") {
        out.push_str(&rest[..i]);
        let hex = rest.get(i + 2..i + 6);
        match hex
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .and_then(char::from_u32)
        {
            Some(c) => {
                out.push(c);
                rest = &rest[i + 6..];
            }
            None => {
                out.push_str("\\u");
                rest = &rest[i + 2..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn describe(text: &str, token: &Token) -> String {
    match token.tok {
        Tok::End => "the end of the text".to_string(),
        _ => describe_span(text, token.start, token.end),
    }
}

struct Parser<'a> {
    text: &'a str,
    lex: Lexer<'a>,
    uses_trailing_commas: bool,
    depth: usize,
}

/// Deepest nesting accepted, so hostile input is an error, not a stack overflow.
const MAX_DEPTH: usize = 256;

impl<'a> Parser<'a> {
    fn expected<T>(&self, what: &str, found: &Token) -> ScanResult<T> {
        err(
            format!("expected {what}, found {}", describe(self.text, found)),
            found.start,
        )
    }

    /// Parses any value, the first token of which is next.
    fn value(&mut self) -> ScanResult<Value> {
        let token = self.lex.next()?;
        let start = token.start;
        match token.tok {
            Tok::Str(_) | Tok::Word(_) => Ok(Value {
                start,
                end: token.end,
                kind: ValueKind::Scalar,
            }),
            Tok::Open(open) => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return err(format!("nesting deeper than {MAX_DEPTH} levels"), start);
                }
                let value = if open == '{' {
                    self.object_body(start)
                } else {
                    self.array_body(start)
                };
                self.depth -= 1;
                value
            }
            _ => self.expected("a value", &token),
        }
    }

    /// After `{`: members up to and including `}`.
    fn object_body(&mut self, start: usize) -> ScanResult<Value> {
        let mut count = 0;
        loop {
            let token = self.lex.next()?;
            match token.tok {
                Tok::Close('}') => {
                    if count > 0 {
                        // Only reachable right after a comma.
                        self.uses_trailing_commas = true;
                    }
                    return Ok(Value {
                        start,
                        end: token.end,
                        kind: ValueKind::Object,
                    });
                }
                Tok::Str(_) | Tok::Word(_) => {}
                _ => return self.expected("a key or `}`", &token),
            }
            let colon = self.lex.next()?;
            if colon.tok != Tok::Colon {
                return self.expected("`:` after the key", &colon);
            }
            self.value()?;
            count += 1;
            let sep = self.lex.next()?;
            match sep.tok {
                Tok::Comma => {}
                Tok::Close('}') => {
                    return Ok(Value {
                        start,
                        end: sep.end,
                        kind: ValueKind::Object,
                    })
                }
                _ => return self.expected("`,` or `}`", &sep),
            }
        }
    }

    /// After `[`: items up to and including `]`.
    fn array_body(&mut self, start: usize) -> ScanResult<Value> {
        let mut first_item_start = None;
        loop {
            let token = self.lex.peek()?;
            if token.tok == Tok::Close(']') {
                self.lex.next()?;
                let trailing_comma = first_item_start.is_some();
                if trailing_comma {
                    self.uses_trailing_commas = true;
                }
                return Ok(Value {
                    start,
                    end: token.end,
                    kind: ValueKind::Array(ArrayInfo {
                        first_item_start,
                        trailing_comma,
                    }),
                });
            }
            let item = self.value()?;
            first_item_start.get_or_insert(item.start);
            let sep = self.lex.next()?;
            match sep.tok {
                Tok::Comma => {}
                Tok::Close(']') => {
                    return Ok(Value {
                        start,
                        end: sep.end,
                        kind: ValueKind::Array(ArrayInfo {
                            first_item_start,
                            trailing_comma: false,
                        }),
                    })
                }
                _ => return self.expected("`,` or `]`", &sep),
            }
        }
    }
}

/// Scans the top-level object, recording each member's key and value span.
fn scan(text: &str) -> Result<Scan, Error> {
    let mut parser = Parser {
        text,
        lex: Lexer::new(text),
        uses_trailing_commas: false,
        depth: 0,
    };
    // The key whose value was being scanned when an error happened.
    let mut current_key: Option<String> = None;
    let result = scan_top(&mut parser, &mut current_key);
    result.map_err(|e| {
        let (line, column) = line_col(text, e.pos);
        let message = match current_key {
            Some(key) => format!(
                "cannot parse the value of `{key}` in the config: {} at line {line}, column {column}",
                e.message
            ),
            None => format!(
                "cannot parse the config: {} at line {line}, column {column}",
                e.message
            ),
        };
        Error::usage(message).hint("the config must be a JSON or JSON5 object; fix its syntax and run again")
    })
}

fn scan_top(parser: &mut Parser<'_>, current_key: &mut Option<String>) -> ScanResult<Scan> {
    let open = parser.lex.next()?;
    if open.tok != Tok::Open('{') {
        return parser.expected("a JSON object starting with `{`", &open);
    }
    let mut members: Vec<Member> = Vec::new();
    let close = loop {
        let token = parser.lex.next()?;
        let (key, key_quoted) = match token.tok {
            Tok::Close('}') => {
                if !members.is_empty() {
                    parser.uses_trailing_commas = true;
                }
                break token.start;
            }
            Tok::Str(key) => (key, true),
            Tok::Word(key) => (key, false),
            _ => return parser.expected("a key or `}`", &token),
        };
        let colon = parser.lex.next()?;
        if colon.tok != Tok::Colon {
            return parser.expected(&format!("`:` after the key `{key}`"), &colon);
        }
        *current_key = Some(key.clone());
        let value = parser.value()?;
        *current_key = None;
        let sep = parser.lex.next()?;
        let comma_after = match sep.tok {
            Tok::Comma => true,
            Tok::Close('}') => false,
            _ => return parser.expected(&format!("`,` or `}}` after the value of `{key}`"), &sep),
        };
        members.push(Member {
            key,
            key_start: token.start,
            key_quoted,
            value,
            comma_after,
        });
        if !comma_after {
            break sep.start;
        }
    };
    let rest = parser.lex.next()?;
    if rest.tok != Tok::End {
        return parser.expected("nothing after the top-level object", &rest);
    }
    Ok(Scan {
        members,
        close,
        uses_trailing_commas: parser.uses_trailing_commas,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_core::ErrorKind;
    use serde_json::{json, Value as Json};

    fn s(list: &[&str]) -> Vec<String> {
        list.iter().map(|x| x.to_string()).collect()
    }

    fn rewrite(text: &str, compile: &[&str], run: &[&str]) -> String {
        match rewrite_lists(text, Path::new("c.json"), &s(compile), &s(run)) {
            Ok(out) => out,
            Err(e) => panic!("rewrite failed: {}\n--- input ---\n{text}", e.render()),
        }
    }

    fn parse5(text: &str) -> Json {
        match json5::from_str::<Json>(text) {
            Ok(v) => v,
            Err(e) => panic!("json5 cannot parse the result: {e}\n--- text ---\n{text}"),
        }
    }

    fn rewrite_error(text: &str) -> String {
        match rewrite_lists(text, Path::new("c.json"), &s(&["a"]), &s(&["b"])) {
            Ok(out) => panic!("expected an error, got:\n{out}"),
            Err(e) => {
                assert_eq!(e.kind, ErrorKind::Usage, "{}", e.render());
                e.message
            }
        }
    }

    const DOC_EXAMPLE: &str = r#"{
  "config_name": "cpu_llvm_sync",
  "iree_compile_flags": ["--iree-hal-target-backends=llvm-cpu"],
  "iree_run_module_flags": ["--device=local-sync"],
  "skip_compile_tests": [],       // not compiled, not run
  "skip_run_tests": [],           // compiled only
  "expected_compile_failures": [],
  "expected_run_failures": [],
}
"#;

    #[test]
    fn doc_example_empty_lists_get_filled() {
        let out = rewrite(DOC_EXAMPLE, &["onnx/b", "onnx/a"], &["onnx/c"]);
        let expected = r#"{
  "config_name": "cpu_llvm_sync",
  "iree_compile_flags": ["--iree-hal-target-backends=llvm-cpu"],
  "iree_run_module_flags": ["--device=local-sync"],
  "skip_compile_tests": [],       // not compiled, not run
  "skip_run_tests": [],           // compiled only
  "expected_compile_failures": [
    "onnx/a",
    "onnx/b",
  ],
  "expected_run_failures": [
    "onnx/c",
  ],
}
"#;
        assert_eq!(out, expected);
        let v = parse5(&out);
        assert_eq!(v["expected_compile_failures"], json!(["onnx/a", "onnx/b"]));
        assert_eq!(v["expected_run_failures"], json!(["onnx/c"]));
        assert_eq!(v["config_name"], json!("cpu_llvm_sync"));
    }

    #[test]
    fn emptying_lists_writes_empty_arrays() {
        let text = "{\n  \"expected_compile_failures\": [\n    \"x\",\n  ],\n  \"expected_run_failures\": [\"y\"]\n}\n";
        let out = rewrite(text, &[], &[]);
        assert_eq!(
            out,
            "{\n  \"expected_compile_failures\": [],\n  \"expected_run_failures\": []\n}\n"
        );
    }

    #[test]
    fn idempotent() {
        let once = rewrite(DOC_EXAMPLE, &["b", "a"], &["c"]);
        let twice = rewrite(&once, &["a", "b"], &["c"]);
        assert_eq!(once, twice);
    }

    #[test]
    fn strict_json_stays_strict() {
        let text = r#"{
    "config_name": "x",
    "expected_compile_failures": [],
    "expected_run_failures": [
        "old"
    ]
}"#;
        let out = rewrite(text, &["c1"], &["r2", "r1"]);
        let expected = r#"{
    "config_name": "x",
    "expected_compile_failures": [
        "c1"
    ],
    "expected_run_failures": [
        "r1",
        "r2"
    ]
}"#;
        assert_eq!(out, expected);
        // Plain serde_json accepts it: no trailing commas were introduced.
        let v: Json = match serde_json::from_str(&out) {
            Ok(v) => v,
            Err(e) => panic!("not strict JSON: {e}\n{out}"),
        };
        assert_eq!(v["expected_run_failures"], json!(["r1", "r2"]));
    }

    #[test]
    fn comments_around_and_inside_arrays() {
        let text = r#"// header comment mentioning expected_run_failures: [1, 2]
{
  /* block comment before */
  "config_name": "c", // trailing line comment
  // the compile list:
  "expected_compile_failures": [ // inside: dropped
    "old1", /* inside: dropped */
    // inside: dropped
    "old2",
  ], // after the array: kept
  "expected_run_failures": /* between colon and value: kept */ [
    "r", // dropped
  ] /* after: kept */,
  /* last comment */
}
// footer
"#;
        let out = rewrite(text, &["new"], &["r1"]);
        let expected = r#"// header comment mentioning expected_run_failures: [1, 2]
{
  /* block comment before */
  "config_name": "c", // trailing line comment
  // the compile list:
  "expected_compile_failures": [
    "new",
  ], // after the array: kept
  "expected_run_failures": /* between colon and value: kept */ [
    "r1",
  ] /* after: kept */,
  /* last comment */
}
// footer
"#;
        assert_eq!(out, expected);
        let v = parse5(&out);
        assert_eq!(v["expected_compile_failures"], json!(["new"]));
        assert_eq!(v["expected_run_failures"], json!(["r1"]));
    }

    #[test]
    fn unquoted_keys_and_single_quotes() {
        let text = "{\n\tconfig_name: 'it\\'s',\n\tiree_compile_flags: ['--x=\"q\"', \"a'b\"],\n\texpected_compile_failures: ['a', 'b'],\n\texpected_run_failures: [],\n}\n";
        let out = rewrite(text, &["z"], &["y", "x"]);
        let expected = "{\n\tconfig_name: 'it\\'s',\n\tiree_compile_flags: ['--x=\"q\"', \"a'b\"],\n\texpected_compile_failures: [\n\t\t\"z\",\n\t],\n\texpected_run_failures: [\n\t\t\"x\",\n\t\t\"y\",\n\t],\n}\n";
        assert_eq!(out, expected);
        let v = parse5(&out);
        assert_eq!(v["config_name"], json!("it's"));
        assert_eq!(v["iree_compile_flags"], json!(["--x=\"q\"", "a'b"]));
        assert_eq!(v["expected_run_failures"], json!(["x", "y"]));
    }

    #[test]
    fn item_indentation_follows_existing_items() {
        let text = "{\n  \"expected_compile_failures\": [\n        \"deep\"\n  ],\n  \"expected_run_failures\": []\n}";
        let out = rewrite(text, &["a", "b"], &["c"]);
        assert_eq!(
            out,
            "{\n  \"expected_compile_failures\": [\n        \"a\",\n        \"b\"\n  ],\n  \"expected_run_failures\": [\n    \"c\"\n  ]\n}"
        );
    }

    #[test]
    fn crlf_line_endings_preserved() {
        let text = "{\r\n  \"config_name\": \"c\", // note\r\n  \"expected_compile_failures\": [\"x\"],\r\n  \"expected_run_failures\": [],\r\n}\r\n";
        let out = rewrite(text, &["a", "b"], &["c"]);
        let expected = "{\r\n  \"config_name\": \"c\", // note\r\n  \"expected_compile_failures\": [\r\n    \"a\",\r\n    \"b\",\r\n  ],\r\n  \"expected_run_failures\": [\r\n    \"c\",\r\n  ],\r\n}\r\n";
        assert_eq!(out, expected);
        // Every newline is part of a CRLF pair.
        assert_eq!(out.matches('\n').count(), out.matches("\r\n").count());
        let v = parse5(&out);
        assert_eq!(v["expected_compile_failures"], json!(["a", "b"]));
    }

    #[test]
    fn missing_keys_inserted_before_closing_brace() {
        let text = "{\n  \"config_name\": \"c\",\n  \"skip_run_tests\": [] // last\n  // a comment line before the brace\n}\n";
        let out = rewrite(text, &["a"], &[]);
        let expected = "{\n  \"config_name\": \"c\",\n  \"skip_run_tests\": [], // last\n  // a comment line before the brace\n  \"expected_compile_failures\": [\n    \"a\"\n  ],\n  \"expected_run_failures\": []\n}\n";
        assert_eq!(out, expected);
        let v = parse5(&out);
        assert_eq!(v["expected_compile_failures"], json!(["a"]));
        assert_eq!(v["expected_run_failures"], json!([]));
        assert_eq!(v["skip_run_tests"], json!([]));
    }

    #[test]
    fn one_missing_key_with_trailing_comma_style() {
        let text = "{\n  config_name: 'c',\n  expected_compile_failures: [],\n}";
        let out = rewrite(text, &[], &["r"]);
        let expected = "{\n  config_name: 'c',\n  expected_compile_failures: [],\n  expected_run_failures: [\n    \"r\",\n  ],\n}";
        assert_eq!(out, expected);
        let v = parse5(&out);
        assert_eq!(v["expected_run_failures"], json!(["r"]));
    }

    #[test]
    fn missing_keys_in_one_line_and_empty_objects() {
        let out = rewrite("{\"config_name\": \"c\"}", &["a"], &["b"]);
        assert_eq!(
            out,
            "{\"config_name\": \"c\",\n  \"expected_compile_failures\": [\n    \"a\"\n  ],\n  \"expected_run_failures\": [\n    \"b\"\n  ]\n}"
        );
        let v = parse5(&out);
        assert_eq!(v["config_name"], json!("c"));
        assert_eq!(v["expected_run_failures"], json!(["b"]));

        let out = rewrite("{}", &[], &["b"]);
        let v = parse5(&out);
        assert_eq!(
            v,
            json!({"expected_compile_failures": [], "expected_run_failures": ["b"]})
        );

        let out = rewrite("{\n}\n", &[], &[]);
        assert_eq!(
            out,
            "{\n  \"expected_compile_failures\": [],\n  \"expected_run_failures\": []\n}\n"
        );
    }

    #[test]
    fn key_inside_strings_or_comments_is_not_matched() {
        let text = r#"{
  // "expected_compile_failures": ["in a comment"],
  /* expected_run_failures: ["in a block comment"] */
  "note": "expected_compile_failures: [\"in a string\"]",
  'other': 'expected_run_failures',
  "nested": { "expected_compile_failures": ["nested, not top-level"] },
  "list": ["expected_run_failures", ["expected_compile_failures"]],
  "expected_compile_failures": ["real"],
}"#;
        let out = rewrite(text, &["new"], &["run"]);
        assert!(out.contains(r#"// "expected_compile_failures": ["in a comment"],"#));
        assert!(out.contains(r#"/* expected_run_failures: ["in a block comment"] */"#));
        assert!(out.contains(r#""note": "expected_compile_failures: [\"in a string\"]","#));
        assert!(out
            .contains(r#""nested": { "expected_compile_failures": ["nested, not top-level"] },"#));
        let v = parse5(&out);
        assert_eq!(v["expected_compile_failures"], json!(["new"]));
        assert_eq!(v["expected_run_failures"], json!(["run"]));
        assert_eq!(
            v["nested"]["expected_compile_failures"],
            json!(["nested, not top-level"])
        );
        assert_eq!(
            v["note"],
            json!("expected_compile_failures: [\"in a string\"]")
        );
    }

    #[test]
    fn escaped_key_spellings_are_matched() {
        let text = "{\"expected_compile\\u005ffailures\": [\"old\"], 'expected_run_failures': []}";
        let out = rewrite(text, &["new"], &[]);
        assert!(!out.contains("old"), "{out}");
        let v = parse5(&out);
        assert_eq!(v["expected_compile_failures"], json!(["new"]));
    }

    #[test]
    fn strings_are_json_escaped() {
        let out = rewrite(
            "{\"expected_compile_failures\": [], \"expected_run_failures\": []}",
            &["quote\"back\\slash", "tab\there", "é/ü"],
            &[],
        );
        assert!(out.contains(r#""quote\"back\\slash""#), "{out}");
        assert!(out.contains(r#""tab\there""#), "{out}");
        let v = parse5(&out);
        assert_eq!(
            v["expected_compile_failures"],
            json!(["quote\"back\\slash", "tab\there", "é/ü"])
        );
    }

    #[test]
    fn lists_are_sorted_and_deduplicated() {
        let out = rewrite(DOC_EXAMPLE, &["b", "a", "b"], &[]);
        let v = parse5(&out);
        assert_eq!(v["expected_compile_failures"], json!(["a", "b"]));
    }

    #[test]
    fn bom_and_tricky_scalars_are_kept() {
        let text = "\u{feff}{\n  num: +Infinity, hex: 0x1F, neg: -.5, url: \"http://x//y/*z*/\",\n  expected_compile_failures: [],\n  expected_run_failures: [],\n}";
        let out = rewrite(text, &["a"], &[]);
        assert!(out.starts_with(
            "\u{feff}{\n  num: +Infinity, hex: 0x1F, neg: -.5, url: \"http://x//y/*z*/\",\n"
        ));
        assert!(
            out.contains("  expected_compile_failures: [\n    \"a\",\n  ],"),
            "{out}"
        );
        // The json5 crate cannot put hex or infinities into a serde_json value;
        // swap them for plain numbers to check the rest parses.
        let parseable = out
            .trim_start_matches('\u{feff}')
            .replace("+Infinity", "1")
            .replace("0x1F", "31");
        let v = parse5(&parseable);
        assert_eq!(v["url"], json!("http://x//y/*z*/"));
        assert_eq!(v["expected_compile_failures"], json!(["a"]));
    }

    #[test]
    fn error_not_an_object() {
        let msg = rewrite_error("[1, 2]");
        assert!(msg.contains("expected a JSON object"), "{msg}");
        assert!(msg.contains("line 1, column 1"), "{msg}");
        let msg = rewrite_error("  // only a comment\n");
        assert!(msg.contains("the end of the text"), "{msg}");
        let msg = rewrite_error("{} {}");
        assert!(msg.contains("nothing after the top-level object"), "{msg}");
    }

    #[test]
    fn error_value_not_an_array() {
        let msg = rewrite_error("{\n  \"expected_run_failures\": null\n}");
        assert!(
            msg.contains("`expected_run_failures` is not an array"),
            "{msg}"
        );
        assert!(msg.contains("`null` at line 2, column 28"), "{msg}");
        let msg = rewrite_error("{\"expected_compile_failures\": {\"a\": 1}}");
        assert!(
            msg.contains("`expected_compile_failures` is not an array"),
            "{msg}"
        );
    }

    #[test]
    fn error_unparsable_array_names_the_key() {
        let msg = rewrite_error("{\n  \"expected_run_failures\": [\"a\" \"b\"]\n}");
        assert!(msg.contains("value of `expected_run_failures`"), "{msg}");
        assert!(msg.contains("expected `,` or `]`"), "{msg}");
        assert!(msg.contains("line 2, column 33"), "{msg}");
        let msg = rewrite_error("{\n  \"expected_compile_failures\": [\"a\n");
        assert!(
            msg.contains("value of `expected_compile_failures`"),
            "{msg}"
        );
        assert!(msg.contains("unterminated string"), "{msg}");
        let msg = rewrite_error("{\"expected_compile_failures\": [1, /* x ]}");
        assert!(msg.contains("unterminated `/*` comment"), "{msg}");
        let msg = rewrite_error("{\"expected_compile_failures\": [");
        assert!(msg.contains("the end of the text"), "{msg}");
    }

    #[test]
    fn error_duplicate_key() {
        let msg =
            rewrite_error("{\n\"expected_run_failures\": [],\n\"expected_run_failures\": []\n}");
        assert!(msg.contains("appears twice"), "{msg}");
        assert!(msg.contains("lines 2 and 3"), "{msg}");
    }

    #[test]
    fn error_deep_nesting() {
        let text = format!("{{\"a\": {}{}}}", "[".repeat(10_000), "]".repeat(10_000));
        let msg = rewrite_error(&text);
        assert!(msg.contains("nesting deeper than"), "{msg}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        #[test]
        fn any_text_is_rewritten_or_refused_naming_the_file(text in "\\PC{0,300}") {
            if let Err(err) = rewrite_lists(&text, Path::new("p/fuzz.json"), &s(&["a"]), &s(&[])) {
                proptest::prop_assert!(err.message.contains("p/fuzz.json"), "{}", err.message);
            }
        }

        #[test]
        fn edited_configs_are_rewritten_or_refused_naming_the_file(
            cut in 0usize..400,
            len in 0usize..8,
            insert in "[\\[\\]{}\"',:/*a-z \\n]{0,4}",
        ) {
            let mut chars: Vec<char> = DOC_EXAMPLE.chars().collect();
            let at = cut.min(chars.len());
            let end = (at + len).min(chars.len());
            chars.splice(at..end, insert.chars());
            let text: String = chars.into_iter().collect();
            match rewrite_lists(&text, Path::new("p/fuzz.json"), &s(&["x\"y"]), &s(&["b"])) {
                // A rewrite of a JSON5 object is still one.
                Ok(out) => {
                    if json5::from_str::<Json>(&text).is_ok() {
                        proptest::prop_assert!(json5::from_str::<Json>(&out).is_ok(), "{out}");
                    }
                }
                Err(err) => proptest::prop_assert!(err.message.contains("p/fuzz.json"), "{}", err.message),
            }
        }
    }
}
