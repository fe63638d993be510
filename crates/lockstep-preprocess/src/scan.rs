//! A small scanner for MLIR text: just enough structure to cut the top-level
//! `hal.executable` ops out of a module and splice replacements back in.
//!
//! It tracks string literals (with escapes), `//` comments, the nesting of
//! `{}`, `()` and `[]` outside strings (`<>` need not be tracked: a brace
//! inside `<...>` is always balanced), `{-# ... #-}` resource blocks and
//! top-level attribute/type alias definitions (`#name = ...`, `!name = ...`),
//! which may appear before or after the module (the printer puts location
//! aliases at the end). Everything is byte offsets into the original text, so
//! what is not an executable can be kept byte for byte.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

/// Why text could not be scanned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanError {
    pub offset: usize,
    pub message: String,
}

impl ScanError {
    fn new(offset: usize, message: impl Into<String>) -> Self {
        ScanError {
            offset,
            message: message.into(),
        }
    }

    /// `line:col: message` within `text`.
    pub fn describe(&self, text: &str) -> String {
        let (line, col) = line_col(text, self.offset);
        format!("{line}:{col}: {}", self.message)
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, col)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A bare word, possibly with a sigil: `hal.executable`, `#map`, `@sym`, `%0`.
    Word,
    /// A string literal, quotes included (`@"sym"` is a Word starting with `@"`).
    Str,
    Open(u8),
    Close(u8),
    Newline,
    ResourceBlock,
    /// Any other single byte (`=`, `:`, `,`, `<`, `>`, `-` ...).
    Other(u8),
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Kind,
    start: usize,
    end: usize,
    /// Bracket depth before this token.
    depth: usize,
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.')
}

/// Skips a string literal starting at `i` (a `"`); returns the offset after it.
fn skip_string(bytes: &[u8], i: usize) -> Result<usize, ScanError> {
    let mut j = i + 1;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b'"' => return Ok(j + 1),
            b'\n' => {
                return Err(ScanError::new(
                    i,
                    "string literal is not closed on its line",
                ))
            }
            _ => j += 1,
        }
    }
    Err(ScanError::new(i, "string literal is not closed"))
}

fn tokenize(text: &str) -> Result<Vec<Token>, ScanError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::with_capacity(text.len() / 4);
    let mut stack: Vec<(u8, usize)> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let depth = stack.len();
        let push = |tokens: &mut Vec<Token>, kind, start, end| {
            tokens.push(Token {
                kind,
                start,
                end,
                depth,
            })
        };
        match b {
            b' ' | b'\t' | b'\r' => i += 1,
            b'\n' => {
                push(&mut tokens, Kind::Newline, i, i + 1);
                i += 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' => {
                let end = skip_string(bytes, i)?;
                push(&mut tokens, Kind::Str, i, end);
                i = end;
            }
            b'{' if bytes.get(i + 1) == Some(&b'-') && bytes.get(i + 2) == Some(&b'#') => {
                // `{-# ... #-}`: skip to the end, honouring strings.
                let mut j = i + 3;
                loop {
                    if j >= bytes.len() {
                        return Err(ScanError::new(i, "`{-#` resource block is not closed"));
                    }
                    match bytes[j] {
                        b'"' => j = skip_string(bytes, j)?,
                        b'#' if bytes.get(j + 1) == Some(&b'-')
                            && bytes.get(j + 2) == Some(&b'}') =>
                        {
                            j += 3;
                            break;
                        }
                        _ => j += 1,
                    }
                }
                push(&mut tokens, Kind::ResourceBlock, i, j);
                i = j;
            }
            b'{' | b'(' | b'[' => {
                push(&mut tokens, Kind::Open(b), i, i + 1);
                stack.push((b, i));
                i += 1;
            }
            b'}' | b')' | b']' => {
                let want = match b {
                    b'}' => b'{',
                    b')' => b'(',
                    _ => b'[',
                };
                match stack.pop() {
                    Some((open, _)) if open == want => {}
                    Some((open, at)) => {
                        let (l, c) = line_col(text, at);
                        return Err(ScanError::new(
                            i,
                            format!(
                                "`{}` does not match the `{}` opened at {l}:{c}",
                                b as char, open as char
                            ),
                        ));
                    }
                    None => {
                        return Err(ScanError::new(
                            i,
                            format!("`{}` without a matching opening bracket", b as char),
                        ))
                    }
                }
                tokens.push(Token {
                    kind: Kind::Close(b),
                    start: i,
                    end: i + 1,
                    depth: stack.len(),
                });
                i += 1;
            }
            b'#' | b'!' | b'@' | b'%' | b'^' => {
                if b == b'@' && bytes.get(i + 1) == Some(&b'"') {
                    let end = skip_string(bytes, i + 1)?;
                    push(&mut tokens, Kind::Word, i, end);
                    i = end;
                } else {
                    let mut j = i + 1;
                    while j < bytes.len()
                        && (is_word_byte(bytes[j]) || (bytes[j] == b'-' && b == b'%'))
                    {
                        j += 1;
                    }
                    push(&mut tokens, Kind::Word, i, j);
                    i = j;
                }
            }
            _ if is_word_byte(b) => {
                let mut j = i + 1;
                while j < bytes.len() && is_word_byte(bytes[j]) {
                    j += 1;
                }
                push(&mut tokens, Kind::Word, i, j);
                i = j;
            }
            _ => {
                // Multi-byte UTF-8 outside strings is not MLIR: one token
                // per character, so that every token is a slice of the text.
                let len = text
                    .get(i..)
                    .and_then(|rest| rest.chars().next())
                    .map_or(1, char::len_utf8);
                push(&mut tokens, Kind::Other(b), i, i + len);
                i += len;
            }
        }
    }
    if let Some((open, at)) = stack.last() {
        return Err(ScanError::new(
            *at,
            format!("`{}` is never closed", *open as char),
        ));
    }
    Ok(tokens)
}

/// A top-level alias definition (`#map = ...`, `!ty = ...`).
#[derive(Debug, Clone)]
pub struct Alias {
    /// With its sigil: `#map`.
    pub name: String,
    /// The whole definition, without the trailing newline.
    pub span: Range<usize>,
    /// Aliases this definition refers to (indices into [`Module::aliases`]).
    pub refs: Vec<usize>,
}

/// A top-level `hal.executable` op.
#[derive(Debug, Clone)]
pub struct Executable {
    /// Without `@` (and unquoted): `main_dispatch_0`.
    pub symbol: String,
    /// From `hal.executable` to the end of its region and trailing `loc(...)`.
    pub span: Range<usize>,
    /// Every alias it needs, transitively, in file order.
    pub aliases: Vec<usize>,
    /// `dense_resource<KEY>` keys it refers to.
    pub resources: BTreeSet<String>,
}

/// Another top-level op (anything but an executable), for the checks.
#[derive(Debug, Clone)]
pub struct Op {
    pub name: String,
    pub span: Range<usize>,
}

/// The scanned structure of a module.
#[derive(Debug, Clone, Default)]
pub struct Module {
    pub aliases: Vec<Alias>,
    pub executables: Vec<Executable>,
    /// Ops at the executables' level that are not executables.
    pub other_ops: Vec<Op>,
    /// Ops at the very top of the file (`module` counts as one).
    pub top_ops: Vec<Op>,
    /// Whether the executables sit inside an explicit `module { ... }`.
    pub wrapped: bool,
    /// The `{-# ... #-}` block, if any.
    pub resource_block: Option<Range<usize>>,
    /// Its `dialect_resources` entries, parsed once (every executable's text
    /// and every check reads them).
    pub resources: Resources,
    /// Alias name (with sigil) -> index into `aliases`.
    pub alias_index: BTreeMap<String, usize>,
}

struct Cursor<'a> {
    text: &'a str,
    tokens: &'a [Token],
}

impl Cursor<'_> {
    fn slice(&self, t: &Token) -> &str {
        self.text.get(t.start..t.end).unwrap_or("")
    }

    fn word_is(&self, i: usize, word: &str) -> bool {
        self.tokens
            .get(i)
            .is_some_and(|t| t.kind == Kind::Word && self.slice(t) == word)
    }

    /// Next index after `i` that is not a newline.
    fn next_significant(&self, mut i: usize) -> usize {
        i += 1;
        while i < self.tokens.len() && self.tokens[i].kind == Kind::Newline {
            i += 1;
        }
        i
    }

    /// Index of the token closing the bracket opened at `open`.
    fn matching(&self, open: usize) -> usize {
        let depth = self.tokens[open].depth;
        let mut i = open + 1;
        while i < self.tokens.len() {
            let t = &self.tokens[i];
            if matches!(t.kind, Kind::Close(_)) && t.depth == depth {
                return i;
            }
            i += 1;
        }
        self.tokens.len() - 1
    }

    /// End (token index, exclusive) of a generic op starting at `start`: the
    /// first newline at the op's depth, or the close of the enclosing block.
    fn op_end(&self, start: usize) -> usize {
        let depth = self.tokens[start].depth;
        let mut i = start + 1;
        while i < self.tokens.len() {
            let t = &self.tokens[i];
            if t.depth == depth && t.kind == Kind::Newline {
                return i;
            }
            // The close of the enclosing block (a close token carries the depth after it).
            if matches!(t.kind, Kind::Close(_)) && t.depth < depth {
                return i;
            }
            i += 1;
        }
        self.tokens.len()
    }

    /// For an op with a region: the index of the region's `{` (skipping an
    /// `attributes {...}` dictionary), searching up to `limit`.
    fn region_open(&self, start: usize, limit: usize) -> Option<usize> {
        let depth = self.tokens[start].depth;
        let mut i = start + 1;
        while i < limit {
            let t = &self.tokens[i];
            if t.depth == depth && t.kind == Kind::Open(b'{') {
                let prev = (start..i)
                    .rev()
                    .find(|&k| self.tokens[k].kind != Kind::Newline);
                if prev.is_some_and(|k| self.word_is(k, "attributes")) {
                    i = self.matching(i) + 1;
                    continue;
                }
                return Some(i);
            }
            if t.depth < depth {
                return None;
            }
            i += 1;
        }
        None
    }

    /// End (token index, exclusive) of a `hal.executable` op: its region's
    /// closing brace and an optional trailing `loc(...)`.
    fn executable_end(&self, start: usize) -> Result<usize, ScanError> {
        let open = self.region_open(start, self.tokens.len()).ok_or_else(|| {
            ScanError::new(self.tokens[start].start, "hal.executable has no body")
        })?;
        let close = self.matching(open);
        let mut end = close + 1;
        if self.word_is(end, "loc")
            && self
                .tokens
                .get(end + 1)
                .is_some_and(|t| t.kind == Kind::Open(b'('))
        {
            end = self.matching(end + 1) + 1;
        }
        Ok(end)
    }

    fn byte_end(&self, end_token: usize) -> usize {
        // The op's text ends at the last token before `end_token`.
        self.tokens[..end_token].last().map(|t| t.end).unwrap_or(0)
    }
}

/// Scans a whole module (or a single op, as a tool prints it).
pub fn scan(text: &str) -> Result<Module, ScanError> {
    let tokens = tokenize(text)?;
    let cur = Cursor {
        text,
        tokens: &tokens,
    };
    let mut module = Module::default();
    let mut alias_index: BTreeMap<String, usize> = BTreeMap::new();
    // Token range of each alias definition (after its name), so that finding
    // what an alias refers to walks only its own tokens.
    let mut alias_tokens: Vec<Range<usize>> = Vec::new();
    // Pass 1: the top level.
    let mut top_module_region: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i];
        debug_assert_eq!(t.depth, 0);
        match t.kind {
            Kind::Newline => i += 1,
            Kind::ResourceBlock => {
                if module.resource_block.is_some() {
                    return Err(ScanError::new(
                        t.start,
                        "more than one `{-#` resource block",
                    ));
                }
                module.resource_block = Some(t.start..t.end);
                i += 1;
            }
            Kind::Word
                if (cur.slice(&t).starts_with('#') || cur.slice(&t).starts_with('!'))
                    && tokens
                        .get(cur.next_significant(i))
                        .is_some_and(|n| n.kind == Kind::Other(b'=')) =>
            {
                let end = cur.op_end(i);
                let name = cur.slice(&t).to_string();
                if alias_index
                    .insert(name.clone(), module.aliases.len())
                    .is_some()
                {
                    return Err(ScanError::new(
                        t.start,
                        format!("alias `{name}` is defined twice"),
                    ));
                }
                module.aliases.push(Alias {
                    name,
                    span: t.start..cur.byte_end(end),
                    refs: Vec::new(),
                });
                alias_tokens.push(i + 1..end);
                i = end;
            }
            Kind::Word => {
                let name = cur.slice(&t).to_string();
                let end = if name == "hal.executable" {
                    cur.executable_end(i)?
                } else {
                    cur.op_end(i)
                };
                if (name == "module" || name == "builtin.module") && top_module_region.is_none() {
                    if let Some(open) = cur.region_open(i, end) {
                        top_module_region = Some((open, cur.matching(open)));
                    }
                }
                module.top_ops.push(Op {
                    name,
                    span: t.start..cur.byte_end(end),
                });
                i = end;
            }
            _ => {
                return Err(ScanError::new(
                    t.start,
                    format!(
                        "expected an operation or an alias definition at the top level, found `{}`",
                        cur.slice(&t)
                    ),
                ))
            }
        }
    }
    if let Some(block) = &module.resource_block {
        module.resources = resources(&text[block.clone()]);
    }
    // Pass 2: the executables' level.
    let (level, from, to) = match top_module_region {
        Some((open, close)) if module.top_ops.len() == 1 => (1, open + 1, close),
        _ => (0, 0, tokens.len()),
    };
    module.wrapped = level == 1;
    let mut i = from;
    while i < to {
        let t = tokens[i];
        if t.depth != level || t.kind != Kind::Word {
            i += 1;
            continue;
        }
        let name = cur.slice(&t);
        if level == 0 && (name.starts_with('#') || name.starts_with('!')) {
            // An alias definition, handled in pass 1.
            i = cur.op_end(i);
            continue;
        }
        if name == "hal.executable" {
            let end = cur.executable_end(i)?;
            let mut symbol = None;
            let mut k = i + 1;
            while k < end {
                let w = &tokens[k];
                if w.kind == Kind::Word {
                    let s = cur.slice(w);
                    if let Some(sym) = s.strip_prefix('@') {
                        symbol = Some(unquote(sym));
                        break;
                    }
                }
                if w.kind != Kind::Word && w.kind != Kind::Newline {
                    break;
                }
                k += 1;
            }
            let symbol = symbol
                .ok_or_else(|| ScanError::new(t.start, "hal.executable without a @symbol name"))?;
            // Direct references for now; made transitive once every alias's are known.
            let (direct, resources) = direct_references(text, &tokens[i..end], &alias_index);
            module.executables.push(Executable {
                symbol,
                span: t.start..cur.byte_end(end),
                aliases: direct.into_iter().collect(),
                resources,
            });
            i = end;
        } else {
            let end = cur.op_end(i);
            if level == 1 {
                module.other_ops.push(Op {
                    name: name.to_string(),
                    span: t.start..cur.byte_end(end),
                });
            }
            i = end.max(i + 1);
        }
    }
    if level == 0 {
        module.other_ops = module
            .top_ops
            .iter()
            .filter(|op| op.name != "hal.executable")
            .cloned()
            .collect();
    }
    // Alias references, then the transitive closure per executable.
    for (a, range) in module.aliases.iter_mut().zip(alias_tokens) {
        a.refs = tokens[range]
            .iter()
            .filter(|t| t.kind == Kind::Word)
            .filter_map(|t| alias_index.get(cur.slice(t)).copied())
            .collect();
    }
    for exe in &mut module.executables {
        exe.aliases = transitive(&module.aliases, exe.aliases.iter().copied());
    }
    module.alias_index = alias_index;
    Ok(module)
}

/// Aliases of `module` (transitively, in file order) and resource keys that
/// the op text `op` refers to.
pub fn references(op: &str, module: &Module) -> Result<(Vec<usize>, BTreeSet<String>), ScanError> {
    let tokens = tokenize(op)?;
    let (direct, resources) = direct_references(op, &tokens, &module.alias_index);
    Ok((transitive(&module.aliases, direct), resources))
}

/// The aliases (indices) and `dense_resource<KEY>` keys that `tokens` (of
/// `text`) name directly.
fn direct_references(
    text: &str,
    tokens: &[Token],
    alias_index: &BTreeMap<String, usize>,
) -> (BTreeSet<usize>, BTreeSet<String>) {
    let mut direct = BTreeSet::new();
    let mut resources = BTreeSet::new();
    for (k, t) in tokens.iter().enumerate() {
        if t.kind != Kind::Word {
            continue;
        }
        let s = &text[t.start..t.end];
        if let Some(&a) = alias_index.get(s) {
            direct.insert(a);
        } else if s == "dense_resource"
            && tokens
                .get(k + 1)
                .is_some_and(|n| n.kind == Kind::Other(b'<'))
        {
            if let Some(key) = tokens.get(k + 2) {
                resources.insert(unquote(&text[key.start..key.end]));
            }
        }
    }
    (direct, resources)
}

/// `direct` and every alias they refer to, transitively, in file order.
fn transitive(aliases: &[Alias], direct: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    let mut stack: Vec<usize> = direct.into_iter().collect();
    while let Some(a) = stack.pop() {
        if seen.insert(a) {
            stack.extend(aliases[a].refs.iter().copied());
        }
    }
    seen.into_iter().collect()
}

fn unquote(s: &str) -> String {
    match s.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(inner) => inner.to_string(),
        None => s.to_string(),
    }
}

/// A `hal.executable.variant` inside one `hal.executable`'s text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// Without the `@`.
    pub symbol: String,
    /// Byte range of the whole variant op in the executable's text.
    pub span: Range<usize>,
    /// What is inside `target(...)`: an alias (`#executable_target_...`) or
    /// the attribute itself.
    pub target: String,
    /// The `path`s of its `#hal.executable.object<{path = "..."}>`s.
    pub objects: Vec<String>,
}

/// The variants of the `hal.executable` op `op` (its text, as a tool
/// prints it: the executable alone, aliases before it allowed), in order.
pub fn variants(op: &str) -> Result<Vec<Variant>, ScanError> {
    let tokens = tokenize(op)?;
    let cur = Cursor {
        text: op,
        tokens: &tokens,
    };
    let Some(start) =
        (0..tokens.len()).find(|&i| tokens[i].depth == 0 && cur.word_is(i, "hal.executable"))
    else {
        return Err(ScanError::new(0, "no hal.executable"));
    };
    let open = cur
        .region_open(start, tokens.len())
        .ok_or_else(|| ScanError::new(tokens[start].start, "hal.executable has no body"))?;
    let close = cur.matching(open);
    let depth = tokens[open].depth + 1;
    let mut found = Vec::new();
    let mut i = open + 1;
    while i < close {
        if tokens[i].depth != depth || !cur.word_is(i, "hal.executable.variant") {
            i += 1;
            continue;
        }
        let body = cur
            .region_open(i, close)
            .ok_or_else(|| ScanError::new(tokens[i].start, "hal.executable.variant has no body"))?;
        let mut end = cur.matching(body) + 1;
        if cur.word_is(end, "loc")
            && tokens
                .get(end + 1)
                .is_some_and(|t| t.kind == Kind::Open(b'('))
        {
            end = cur.matching(end + 1) + 1;
        }
        let mut symbol = None;
        let mut target = String::new();
        let mut objects = Vec::new();
        let mut k = i + 1;
        while k < body {
            let t = &tokens[k];
            if t.depth == depth && t.kind == Kind::Word {
                let word = cur.slice(t);
                let call = tokens
                    .get(k + 1)
                    .is_some_and(|n| n.kind == Kind::Open(b'('));
                if symbol.is_none() && word.starts_with('@') {
                    symbol = Some(unquote(&word[1..]));
                } else if word == "target" && call {
                    let shut = cur.matching(k + 1);
                    target = op[tokens[k + 1].end..tokens[shut].start].trim().to_string();
                    k = shut;
                } else if word == "objects" && call {
                    let shut = cur.matching(k + 1);
                    objects = object_paths(&cur, k + 1, shut);
                    k = shut;
                }
            }
            k += 1;
        }
        let symbol = symbol.ok_or_else(|| {
            ScanError::new(
                tokens[i].start,
                "hal.executable.variant without a @symbol name",
            )
        })?;
        found.push(Variant {
            symbol,
            span: tokens[i].start..cur.byte_end(end),
            target,
            objects,
        });
        i = end;
    }
    Ok(found)
}

/// The string after each `path =` between the tokens `from` and `to`.
fn object_paths(cur: &Cursor, from: usize, to: usize) -> Vec<String> {
    let mut paths = Vec::new();
    let mut k = from;
    while k < to {
        if cur.word_is(k, "path") {
            let eq = cur.next_significant(k);
            let value = cur.next_significant(eq);
            let is_eq = cur
                .tokens
                .get(eq)
                .is_some_and(|t| t.kind == Kind::Other(b'='));
            if let (true, Some(t)) = (is_eq, cur.tokens.get(value)) {
                if t.kind == Kind::Str {
                    paths.push(unescape(cur.slice(t)));
                }
            }
        }
        k += 1;
    }
    paths
}

/// An MLIR string literal's value (`\"`, `\\` and `\n`-style escapes).
fn unescape(literal: &str) -> String {
    let inner = literal
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(literal);
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Entries of a `{-# dialect_resources: { DIALECT: { KEY: "VALUE" } } #-}` block.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    /// (dialect, key) -> value text (with quotes).
    pub entries: BTreeMap<(String, String), String>,
}

/// Parses the `dialect_resources` section of a resource block.
pub fn resources(block: &str) -> Resources {
    let block = block.trim();
    let inner = block
        .strip_prefix("{-#")
        .and_then(|b| b.strip_suffix("#-}"))
        .unwrap_or(block);
    let Ok(tokens) = tokenize(inner) else {
        return Resources::default();
    };
    let sig: Vec<Token> = tokens
        .into_iter()
        .filter(|t| t.kind != Kind::Newline)
        .collect();
    let text = |t: &Token| &inner[t.start..t.end];
    let mut out = Resources::default();
    let mut path: Vec<String> = Vec::new();
    let mut pending: Option<String> = None;
    for (k, t) in sig.iter().enumerate() {
        match t.kind {
            Kind::Word | Kind::Str
                if sig.get(k + 1).is_some_and(|n| n.kind == Kind::Other(b':')) =>
            {
                pending = Some(unquote(text(t)));
            }
            Kind::Open(b'{') => {
                path.push(pending.take().unwrap_or_default());
            }
            Kind::Close(b'}') => {
                path.pop();
            }
            Kind::Str | Kind::Word if pending.is_some() => {
                let key = pending.take().unwrap_or_default();
                if path.len() == 2 && path[0] == "dialect_resources" {
                    out.entries
                        .insert((path[1].clone(), key), text(t).to_string());
                }
            }
            _ => {}
        }
    }
    out
}

/// A resource block holding only `keys` (in every dialect that has them).
pub fn trimmed_resource_block(all: &Resources, keys: &BTreeSet<String>) -> Option<String> {
    let mut by_dialect: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for ((dialect, key), value) in &all.entries {
        if keys.contains(key) {
            by_dialect.entry(dialect).or_default().push((key, value));
        }
    }
    if by_dialect.is_empty() {
        return None;
    }
    let mut out = String::from("{-#\n  dialect_resources: {\n");
    let dialects: Vec<String> = by_dialect
        .iter()
        .map(|(dialect, entries)| {
            let lines: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("      {}: {v}", quote_key(k)))
                .collect();
            format!("    {dialect}: {{\n{}\n    }}", lines.join(",\n"))
        })
        .collect();
    out.push_str(&dialects.join(",\n"));
    out.push_str("\n  }\n#-}\n");
    Some(out)
}

fn quote_key(key: &str) -> String {
    if !key.is_empty() && key.bytes().all(is_word_byte) {
        key.to_string()
    } else {
        format!("\"{key}\"")
    }
}

/// The text a tool gets for executable `index` of `module`: the aliases it
/// needs (in file order), the op itself, and the resources it refers to.
pub fn self_contained(text: &str, module: &Module, index: usize) -> String {
    let exe = &module.executables[index];
    assemble(
        text,
        module,
        &text[exe.span.clone()],
        &exe.aliases,
        &exe.resources,
    )
}

/// Like [`self_contained`] for a replacement op text (a later step's input):
/// its references are looked up in `module` (whose text is `text`).
pub fn self_contained_op(text: &str, module: &Module, op: &str) -> Result<String, ScanError> {
    let (aliases, resources) = references(op, module)?;
    Ok(assemble(text, module, op, &aliases, &resources))
}

fn assemble(
    text: &str,
    module: &Module,
    op: &str,
    aliases: &[usize],
    resource_keys: &BTreeSet<String>,
) -> String {
    let mut out = String::with_capacity(op.len() + 64);
    for &a in aliases {
        out.push_str(&text[module.aliases[a].span.clone()]);
        out.push('\n');
    }
    out.push_str(op);
    out.push('\n');
    if !resource_keys.is_empty() {
        if let Some(trimmed) = trimmed_resource_block(&module.resources, resource_keys) {
            out.push_str(&trimmed);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn variants_with_their_targets_and_objects() {
        let op = r#"hal.executable private @ex {
  hal.executable.variant public @x86 target(#executable_target_embedded_elf_x86_64_) objects([#hal.executable.object<{path = "/tmp/k \"1\".o"}>, #hal.executable.object<{path = "b.o"}>]) {
    hal.executable.export public @f ordinal(0) layout(#pipeline_layout) { ^bb0(%arg0: !hal.device): hal.return %c1, %c1, %c1 : index, index, index }
    builtin.module { func.func @f() { return } }
  }
  hal.executable.variant public @"arm 64" target(#hal.executable.target<"llvm-cpu", "embedded-elf-arm_64", {target_triple = "aarch64-unknown-unknown-eabi-elf"}>) {
    builtin.module { }
  } loc("x.mlir":3:4)
}"#;
        let found = variants(op).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].symbol, "x86");
        assert_eq!(found[0].target, "#executable_target_embedded_elf_x86_64_");
        assert_eq!(found[0].objects, ["/tmp/k \"1\".o", "b.o"]);
        assert!(op[found[0].span.clone()].starts_with("hal.executable.variant public @x86"));
        assert!(op[found[0].span.clone()].ends_with('}'));
        assert_eq!(found[1].symbol, "arm 64");
        assert!(found[1].target.contains("aarch64-unknown-unknown-eabi-elf"));
        assert!(op[found[1].span.clone()].ends_with("loc(\"x.mlir\":3:4)"));
        assert!(found[1].objects.is_empty());
        assert!(variants("func.func @f() { return }").is_err());
    }

    use super::*;

    const MODULE: &str = r##"#map = affine_map<(d0) -> (d0)>
#target = #hal.executable.target<"llvm-cpu", "x", {map = #map}>
#unused = #hal.executable.target<"llvm-cpu", "y", {}>
module attributes {hal.device.targets = [#target]} {
  util.global private @dev = #hal.device.target<"local", [#target]> : !hal.device
  hal.executable private @ex_a {
    hal.executable.variant public @v target(#target) {
      // a comment with } and { braces
      builtin.module {
        func.func @f() attributes {s = "}{ \" ]"} {
          %cst = arith.constant dense_resource<blob1> : tensor<2xf32> loc("weird{file}.mlir":1:2)
          return loc(#loc1)
        }
      }
    }
  } loc(#loc2)
  hal.executable public @"ex b" attributes {note = "{"} {
    hal.executable.variant public @v target(<"llvm-cpu", "z", {}>) {
    }
  }
  func.func @main() {
    return
  }
}
#loc1 = loc("a.mlir":1:1)
#loc2 = loc(callsite(#loc1 at "b{.mlir":2:2))
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x0400000000000000",
      blob2: "0x04000000FFFFFFFF"
    }
  }
#-}
"##;

    #[test]
    fn finds_executables_aliases_and_resources() {
        let m = scan(MODULE).unwrap();
        assert!(m.wrapped);
        let names: Vec<&str> = m.aliases.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["#map", "#target", "#unused", "#loc1", "#loc2"]);
        assert_eq!(m.executables.len(), 2);
        let a = &m.executables[0];
        assert_eq!(a.symbol, "ex_a");
        assert!(MODULE[a.span.clone()].starts_with("hal.executable private @ex_a {"));
        assert!(MODULE[a.span.clone()].ends_with("} loc(#loc2)"));
        // #target needs #map; #loc2 needs #loc1; #unused is not referenced.
        let needed: Vec<&str> = a
            .aliases
            .iter()
            .map(|&i| m.aliases[i].name.as_str())
            .collect();
        assert_eq!(needed, ["#map", "#target", "#loc1", "#loc2"]);
        assert_eq!(a.resources.iter().collect::<Vec<_>>(), ["blob1"]);
        let b = &m.executables[1];
        assert_eq!(b.symbol, "ex b");
        assert!(MODULE[b.span.clone()].ends_with("}\n  }"));
        assert!(b.aliases.is_empty());
        let others: Vec<&str> = m.other_ops.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(others, ["util.global", "func.func"]);
        assert!(MODULE[m.resource_block.clone().unwrap()].starts_with("{-#"));
    }

    #[test]
    fn self_contained_text_carries_aliases_and_resources() {
        let m = scan(MODULE).unwrap();
        let text = self_contained(MODULE, &m, 0);
        assert!(text.starts_with("#map = affine_map<(d0) -> (d0)>\n#target = "));
        assert!(text.contains(
            "#loc2 = loc(callsite(#loc1 at \"b{.mlir\":2:2))\nhal.executable private @ex_a"
        ));
        assert!(text.contains("blob1: \"0x0400000000000000\""));
        assert!(!text.contains("blob2"));
        assert!(!text.contains("#unused"));
        // The result scans on its own as exactly one executable.
        let again = scan(&text).unwrap();
        assert_eq!(again.executables.len(), 1);
        assert_eq!(again.top_ops.len(), 1);
        assert!(again.resource_block.is_some());
    }

    #[test]
    fn strings_and_locs_with_braces_do_not_confuse_nesting() {
        let text = "hal.executable @x {\n  %0 = \"a.b\"() {s = \"}}}\\\"{\"} : () -> () loc(\"f{{.mlir\":1:1)\n}\n";
        let m = scan(text).unwrap();
        assert_eq!(m.executables.len(), 1);
        assert!(!m.wrapped);
        assert_eq!(&text[m.executables[0].span.clone()], text.trim_end());
    }

    #[test]
    fn unbalanced_text_is_an_error_with_a_position() {
        let err = scan("hal.executable @x {\n  %0 = \"x\"() : () -> ()\n").unwrap_err();
        assert!(
            err.describe("hal.executable @x {\n").starts_with("1:19"),
            "{err:?}"
        );
        let err = scan("module {\n  \"unterminated\n}\n").unwrap_err();
        assert!(err.message.contains("string"), "{err:?}");
        assert!(scan("module { ) }").is_err());
    }

    #[test]
    fn a_module_wrapping_one_executable_on_one_line() {
        let m = scan("module {hal.executable private @x {}}").unwrap();
        assert_eq!(m.executables.len(), 1);
        assert_eq!(m.top_ops.len(), 1);
        assert!(m.other_ops.is_empty());
    }

    #[test]
    fn resource_blocks_parse_and_trim() {
        let m = scan(MODULE).unwrap();
        let all = resources(&MODULE[m.resource_block.clone().unwrap()]);
        assert_eq!(all.entries.len(), 2);
        assert_eq!(m.resources.entries, all.entries, "parsed once by scan");
        let keys: BTreeSet<String> = ["blob2".to_string()].into();
        let trimmed = trimmed_resource_block(&all, &keys).unwrap();
        assert!(trimmed.contains("blob2: \"0x04000000FFFFFFFF\"") && !trimmed.contains("blob1"));
        assert_eq!(resources(&trimmed).entries.len(), 1);
    }

    /// Pieces MLIR is made of, so random text reaches the scanner's deeper
    /// states (strings, nesting, aliases, resources) and not only its first error.
    fn mlir_piece() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just("hal.executable private @e {".to_string()),
            Just("module {".to_string()),
            Just("}".to_string()),
            Just("{".to_string()),
            Just("(".to_string()),
            Just(")".to_string()),
            Just("\"".to_string()),
            Just("\\".to_string()),
            Just("\n".to_string()),
            Just("#map = affine_map<(d0) -> (d0)>\n".to_string()),
            Just(" loc(#loc1)".to_string()),
            Just("{-#\n  dialect_resources: {\n    builtin: {\n      b: \"0x04\"\n".to_string()),
            Just("#-}".to_string()),
            Just("dense_resource<b>".to_string()),
            Just("hal.executable.variant public @v target(#t) ".to_string()),
            Just("objects([#hal.executable.object<{path = \"a.o\"}>]) ".to_string()),
            Just("// comment {\n".to_string()),
            "\\PC{0,8}",
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]

        /// Any text: a module or an error with a position inside the text,
        /// never a panic; whatever scans can be cut into self-contained
        /// executables.
        #[test]
        fn any_text_scans_or_fails_cleanly(pieces in proptest::collection::vec(mlir_piece(), 0..40)) {
            let text: String = pieces.concat();
            match scan(&text) {
                Ok(m) => {
                    for (i, e) in m.executables.iter().enumerate() {
                        proptest::prop_assert!(text.get(e.span.clone()).is_some());
                        let alone = self_contained(&text, &m, i);
                        proptest::prop_assert!(!alone.is_empty());
                        if let Ok(found) = variants(&text[e.span.clone()]) {
                            for v in found {
                                proptest::prop_assert!(text[e.span.clone()].get(v.span.clone()).is_some());
                            }
                        }
                    }
                    if let Some(block) = &m.resource_block {
                        let _ = resources(&text[block.clone()]);
                    }
                }
                Err(e) => {
                    let at = e.describe(&text);
                    proptest::prop_assert!(!at.is_empty());
                }
            }
        }

        /// Arbitrary bytes made text: no panic.
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
            let _ = variants(&text);
            if let Ok(m) = scan(&text) {
                for i in 0..m.executables.len() {
                    let _ = self_contained(&text, &m, i);
                }
            }
            let _ = resources(&text);
        }
    }
}
