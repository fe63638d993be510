//! GitHub Actions expressions (`${{ ... }}`), parsed by a small
//! recursive-descent parser and evaluated over JSON contexts.
//!
//! Why: the runner must decide `if:` conditions and substitute templates the
//! way GitHub does (loose equality, `&&`/`||` returning operands, the status
//! functions), so a generated workflow that works here works there. Errors
//! are strings naming the expression; nothing here panics on any input.

use std::path::Path;

use serde_json::{Map, Value};

/// The outcome so far, for `success()`, `failure()` and `cancelled()`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Status {
    pub success: bool,
    pub failure: bool,
    pub cancelled: bool,
}

/// What an expression can see.
pub(crate) struct Scope<'a> {
    /// `github`, `env`, `matrix`, `steps`, `needs`, ... by name.
    pub contexts: &'a Map<String, Value>,
    pub status: Status,
    /// The root of `hashFiles` patterns (None: hashFiles is an error).
    pub workspace: Option<&'a Path>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Func {
    Contains,
    StartsWith,
    EndsWith,
    Format,
    Join,
    ToJson,
    FromJson,
    HashFiles,
    Success,
    Failure,
    Always,
    Cancelled,
}

impl Func {
    fn by_name(name: &str) -> Option<Func> {
        let all = [
            ("contains", Func::Contains),
            ("startswith", Func::StartsWith),
            ("endswith", Func::EndsWith),
            ("format", Func::Format),
            ("join", Func::Join),
            ("tojson", Func::ToJson),
            ("fromjson", Func::FromJson),
            ("hashfiles", Func::HashFiles),
            ("success", Func::Success),
            ("failure", Func::Failure),
            ("always", Func::Always),
            ("cancelled", Func::Cancelled),
        ];
        let lower = name.to_ascii_lowercase();
        all.iter().find(|(n, _)| *n == lower).map(|(_, f)| *f)
    }

    /// (minimum, maximum) number of arguments.
    fn arity(self) -> (usize, usize) {
        match self {
            Func::Contains | Func::StartsWith | Func::EndsWith => (2, 2),
            Func::Format => (1, usize::MAX),
            Func::Join => (1, 2),
            Func::ToJson | Func::FromJson => (1, 1),
            Func::HashFiles => (1, usize::MAX),
            Func::Success | Func::Failure | Func::Always | Func::Cancelled => (0, 0),
        }
    }

    fn is_status(self) -> bool {
        matches!(
            self,
            Func::Success | Func::Failure | Func::Always | Func::Cancelled
        )
    }
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    Lit(Value),
    Ctx(String),
    Prop(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    Star(Box<Expr>),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
}

impl Expr {
    /// Whether a status function appears anywhere (an `if:` without one
    /// means `success() && (...)`).
    pub(crate) fn has_status_function(&self) -> bool {
        match self {
            Expr::Lit(_) | Expr::Ctx(_) => false,
            Expr::Prop(e, _) | Expr::Star(e) | Expr::Not(e) => e.has_status_function(),
            Expr::Index(a, b) | Expr::And(a, b) | Expr::Or(a, b) | Expr::Cmp(_, a, b) => {
                a.has_status_function() || b.has_status_function()
            }
            Expr::Call(f, args) => f.is_status() || args.iter().any(Expr::has_status_function),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Str(String),
    Num(f64),
    Ident(String),
    Dot,
    LBracket,
    RBracket,
    LParen,
    RParen,
    Comma,
    Not,
    Cmp(CmpOp),
    And,
    Or,
    Star,
}

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let (tok, next) = lex_one(&chars, i)?;
        toks.push(tok);
        i = next;
    }
    Ok(toks)
}

fn lex_one(chars: &[char], i: usize) -> Result<(Tok, usize), String> {
    let c = chars[i];
    let next = chars.get(i + 1).copied();
    let two = |t: Tok| Ok((t, i + 2));
    let one = |t: Tok| Ok((t, i + 1));
    match (c, next) {
        ('=', Some('=')) => two(Tok::Cmp(CmpOp::Eq)),
        ('!', Some('=')) => two(Tok::Cmp(CmpOp::Ne)),
        ('<', Some('=')) => two(Tok::Cmp(CmpOp::Le)),
        ('>', Some('=')) => two(Tok::Cmp(CmpOp::Ge)),
        ('&', Some('&')) => two(Tok::And),
        ('|', Some('|')) => two(Tok::Or),
        ('<', _) => one(Tok::Cmp(CmpOp::Lt)),
        ('>', _) => one(Tok::Cmp(CmpOp::Gt)),
        ('!', _) => one(Tok::Not),
        ('.', _) => one(Tok::Dot),
        ('[', _) => one(Tok::LBracket),
        (']', _) => one(Tok::RBracket),
        ('(', _) => one(Tok::LParen),
        (')', _) => one(Tok::RParen),
        (',', _) => one(Tok::Comma),
        ('*', _) => one(Tok::Star),
        ('\'', _) => lex_string(chars, i),
        _ if c.is_ascii_digit() || (c == '-' && next.is_some_and(|n| n.is_ascii_digit())) => {
            lex_number(chars, i)
        }
        _ if c.is_alphabetic() || c == '_' => {
            let end = scan(chars, i, |ch, _| {
                ch.is_alphanumeric() || ch == '_' || ch == '-'
            });
            Ok((Tok::Ident(chars[i..end].iter().collect()), end))
        }
        _ => Err(format!("unexpected character `{c}` at position {i}")),
    }
}

/// The end of the run of characters from `start` accepted by `ok(char, previous)`.
fn scan(chars: &[char], start: usize, ok: impl Fn(char, char) -> bool) -> usize {
    let mut end = start + 1;
    while end < chars.len() && ok(chars[end], chars[end - 1]) {
        end += 1;
    }
    end
}

fn lex_string(chars: &[char], start: usize) -> Result<(Tok, usize), String> {
    let mut out = String::new();
    let mut i = start + 1;
    while i < chars.len() {
        if chars[i] == '\'' {
            if chars.get(i + 1) == Some(&'\'') {
                out.push('\'');
                i += 2;
                continue;
            }
            return Ok((Tok::Str(out), i + 1));
        }
        out.push(chars[i]);
        i += 1;
    }
    Err(format!("unterminated string starting at position {start}"))
}

fn lex_number(chars: &[char], start: usize) -> Result<(Tok, usize), String> {
    let end = scan(chars, start, |c, prev| {
        c.is_ascii_alphanumeric()
            || c == '.'
            || ((c == '+' || c == '-') && matches!(prev, 'e' | 'E'))
    });
    let text: String = chars[start..end].iter().collect();
    parse_number(&text)
        .map(|n| (Tok::Num(n), end))
        .ok_or_else(|| format!("invalid number `{text}` at position {start}"))
}

fn parse_number(text: &str) -> Option<f64> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let value = if let Some(hex) = body.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()? as f64
    } else if body
        .chars()
        .all(|c| c.is_ascii_digit() || "eE.+-".contains(c))
    {
        body.parse::<f64>().ok()?
    } else {
        return None;
    };
    Some(if neg { -value } else { value })
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

/// Parses one expression (the text between `${{` and `}}`).
pub(crate) fn parse(src: &str) -> Result<Expr, String> {
    let toks = lex(src).map_err(|e| format!("syntax error in expression `{src}`: {e}"))?;
    let mut p = Parser { toks, pos: 0 };
    let expr = p
        .or()
        .and_then(|e| match p.peek() {
            None => Ok(e),
            Some(t) => Err(format!("unexpected {t:?} after the expression")),
        })
        .map_err(|e| format!("syntax error in expression `{src}`: {e}"))?;
    Ok(expr)
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn bump(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn expect(&mut self, want: Tok) -> Result<(), String> {
        match self.bump() {
            Some(t) if t == want => Ok(()),
            Some(t) => Err(format!("expected {want:?}, found {t:?}")),
            None => Err(format!("expected {want:?}, found the end")),
        }
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut left = self.and()?;
        while self.peek() == Some(&Tok::Or) {
            self.pos += 1;
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut left = self.equality()?;
        while self.peek() == Some(&Tok::And) {
            self.pos += 1;
            left = Expr::And(Box::new(left), Box::new(self.equality()?));
        }
        Ok(left)
    }

    fn equality(&mut self) -> Result<Expr, String> {
        self.binary(&[CmpOp::Eq, CmpOp::Ne], Parser::relation)
    }

    fn relation(&mut self) -> Result<Expr, String> {
        self.binary(&[CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge], Parser::unary)
    }

    fn binary(
        &mut self,
        ops: &[CmpOp],
        next: fn(&mut Parser) -> Result<Expr, String>,
    ) -> Result<Expr, String> {
        let mut left = next(self)?;
        while let Some(Tok::Cmp(op)) = self.peek() {
            let op = *op;
            if !ops.contains(&op) {
                break;
            }
            self.pos += 1;
            left = Expr::Cmp(op, Box::new(left), Box::new(next(self)?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        if self.peek() == Some(&Tok::Not) {
            self.pos += 1;
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        self.postfix()
    }

    fn postfix(&mut self) -> Result<Expr, String> {
        let mut e = self.primary()?;
        loop {
            match self.peek() {
                Some(Tok::Dot) => {
                    self.pos += 1;
                    e = match self.bump() {
                        Some(Tok::Star) => Expr::Star(Box::new(e)),
                        Some(Tok::Ident(name)) => Expr::Prop(Box::new(e), name),
                        other => return Err(format!("expected a property name, found {other:?}")),
                    };
                }
                Some(Tok::LBracket) => {
                    self.pos += 1;
                    e = if self.peek() == Some(&Tok::Star) {
                        self.pos += 1;
                        Expr::Star(Box::new(e))
                    } else {
                        Expr::Index(Box::new(e), Box::new(self.or()?))
                    };
                    self.expect(Tok::RBracket)?;
                }
                _ => return Ok(e),
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, String> {
        match self.bump() {
            Some(Tok::Str(s)) => Ok(Expr::Lit(Value::String(s))),
            Some(Tok::Num(n)) => Ok(Expr::Lit(number(n))),
            Some(Tok::LParen) => {
                let e = self.or()?;
                self.expect(Tok::RParen)?;
                Ok(e)
            }
            Some(Tok::Ident(name)) => self.identifier(name),
            Some(t) => Err(format!("unexpected {t:?}")),
            None => Err("unexpected end of expression".to_string()),
        }
    }

    fn identifier(&mut self, name: String) -> Result<Expr, String> {
        if self.peek() == Some(&Tok::LParen) {
            self.pos += 1;
            return self.call(&name);
        }
        Ok(match name.as_str() {
            "true" => Expr::Lit(Value::Bool(true)),
            "false" => Expr::Lit(Value::Bool(false)),
            "null" => Expr::Lit(Value::Null),
            _ => Expr::Ctx(name),
        })
    }

    fn call(&mut self, name: &str) -> Result<Expr, String> {
        let func = Func::by_name(name).ok_or_else(|| format!("unknown function `{name}`"))?;
        let mut args = Vec::new();
        if self.peek() != Some(&Tok::RParen) {
            loop {
                args.push(self.or()?);
                if self.peek() == Some(&Tok::Comma) {
                    self.pos += 1;
                } else {
                    break;
                }
            }
        }
        self.expect(Tok::RParen)?;
        let (min, max) = func.arity();
        if args.len() < min || args.len() > max {
            return Err(format!(
                "`{name}` takes {} argument(s), got {}",
                if min == max {
                    min.to_string()
                } else {
                    format!("at least {min}")
                },
                args.len()
            ));
        }
        Ok(Expr::Call(func, args))
    }
}

/// A JSON number for `n` (an integer when it is one, as GitHub prints it).
pub(crate) fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

fn to_number(v: &Value) -> f64 {
    match v {
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) if s.trim().is_empty() => 0.0,
        Value::String(s) => parse_number(s.trim()).unwrap_or(f64::NAN),
        Value::Array(_) | Value::Object(_) => f64::NAN,
    }
}

/// The text of a value where a string is needed (templates, `format`).
pub(crate) fn to_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => (f as i64).to_string(),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(_) | Value::Object(_) => to_json(v),
    }
}

fn to_json(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn loose_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::String(x), Value::String(y)) => x.to_lowercase() == y.to_lowercase(),
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => a == b,
        _ => to_number(a) == to_number(b),
    }
}

fn compare(op: CmpOp, a: &Value, b: &Value) -> bool {
    use std::cmp::Ordering;
    let ord = match (a, b) {
        (Value::String(x), Value::String(y)) => Some(x.to_lowercase().cmp(&y.to_lowercase())),
        _ => to_number(a).partial_cmp(&to_number(b)),
    };
    match (op, ord) {
        (CmpOp::Eq, _) => loose_eq(a, b),
        (CmpOp::Ne, _) => !loose_eq(a, b),
        (_, None) => false,
        (CmpOp::Lt, Some(o)) => o == Ordering::Less,
        (CmpOp::Le, Some(o)) => o != Ordering::Greater,
        (CmpOp::Gt, Some(o)) => o == Ordering::Greater,
        (CmpOp::Ge, Some(o)) => o != Ordering::Less,
    }
}

/// A property of an object, matched case-insensitively as GitHub does.
pub(crate) fn get_prop<'v>(obj: &'v Value, name: &str) -> Option<&'v Value> {
    let map = obj.as_object()?;
    map.get(name).or_else(|| {
        map.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

/// A value, and whether it is the array a `.*` filter produced (properties
/// of such an array apply to each element).
type Evaluated = (Value, bool);

impl Scope<'_> {
    /// Evaluates a parsed expression.
    pub(crate) fn eval(&self, e: &Expr) -> Result<Value, String> {
        self.eval_inner(e).map(|(v, _)| v)
    }

    fn eval_inner(&self, e: &Expr) -> Result<Evaluated, String> {
        Ok(match e {
            Expr::Lit(v) => (v.clone(), false),
            Expr::Ctx(name) => {
                let root = Value::Object(self.contexts.clone());
                (get_prop(&root, name).cloned().unwrap_or(Value::Null), false)
            }
            Expr::Prop(base, name) => self.property(base, &Value::String(name.clone()))?,
            Expr::Index(base, key) => {
                let key = self.eval(key)?;
                self.property(base, &key)?
            }
            Expr::Star(base) => (star(self.eval_inner(base)?), true),
            Expr::Not(inner) => (Value::Bool(!truthy(&self.eval(inner)?)), false),
            Expr::And(a, b) => {
                let left = self.eval(a)?;
                (if truthy(&left) { self.eval(b)? } else { left }, false)
            }
            Expr::Or(a, b) => {
                let left = self.eval(a)?;
                (if truthy(&left) { left } else { self.eval(b)? }, false)
            }
            Expr::Cmp(op, a, b) => (
                Value::Bool(compare(*op, &self.eval(a)?, &self.eval(b)?)),
                false,
            ),
            Expr::Call(f, args) => (self.call(*f, args)?, false),
        })
    }

    fn property(&self, base: &Expr, key: &Value) -> Result<Evaluated, String> {
        let (value, filtered) = self.eval_inner(base)?;
        if filtered {
            let items = value.as_array().cloned().unwrap_or_default();
            let picked = items.iter().filter_map(|item| index(item, key)).collect();
            return Ok((Value::Array(picked), true));
        }
        Ok((index(&value, key).unwrap_or(Value::Null), false))
    }

    fn call(&self, f: Func, args: &[Expr]) -> Result<Value, String> {
        if f.is_status() {
            let s = self.status;
            return Ok(Value::Bool(match f {
                Func::Success => s.success,
                Func::Failure => s.failure,
                Func::Cancelled => s.cancelled,
                _ => true,
            }));
        }
        let values = args
            .iter()
            .map(|a| self.eval(a))
            .collect::<Result<Vec<_>, _>>()?;
        match f {
            Func::HashFiles => self.hash_files(&values),
            _ => pure_call(f, &values),
        }
    }

    fn hash_files(&self, args: &[Value]) -> Result<Value, String> {
        let root = self
            .workspace
            .ok_or("hashFiles is only available in steps")?;
        let patterns: Vec<String> = args.iter().map(to_text).collect();
        super::glob::hash_files(root, &patterns).map(Value::String)
    }
}

fn index(value: &Value, key: &Value) -> Option<Value> {
    match (value, key) {
        (Value::Array(items), Value::Number(n)) => {
            let i = n.as_f64().filter(|f| *f >= 0.0)? as usize;
            items.get(i).cloned()
        }
        (Value::Object(_), _) => get_prop(value, &to_text(key)).cloned(),
        _ => None,
    }
}

fn star((value, filtered): Evaluated) -> Value {
    let items: Vec<Value> = match value {
        Value::Array(items) if filtered => items
            .into_iter()
            .flat_map(|i| match i {
                Value::Array(inner) => inner,
                Value::Object(m) => m.into_iter().map(|(_, v)| v).collect(),
                _ => Vec::new(),
            })
            .collect(),
        Value::Array(items) => items,
        Value::Object(m) => m.into_iter().map(|(_, v)| v).collect(),
        _ => Vec::new(),
    };
    Value::Array(items)
}

fn pure_call(f: Func, args: &[Value]) -> Result<Value, String> {
    let text = |i: usize| args.get(i).map(to_text).unwrap_or_default();
    Ok(match f {
        Func::Contains => Value::Bool(match &args[0] {
            Value::Array(items) => items.iter().any(|i| loose_eq(i, &args[1])),
            other => to_text(other)
                .to_lowercase()
                .contains(&text(1).to_lowercase()),
        }),
        Func::StartsWith => {
            Value::Bool(text(0).to_lowercase().starts_with(&text(1).to_lowercase()))
        }
        Func::EndsWith => Value::Bool(text(0).to_lowercase().ends_with(&text(1).to_lowercase())),
        Func::Format => Value::String(format_fn(&text(0), &args[1..])?),
        Func::Join => {
            let sep = if args.len() > 1 {
                text(1)
            } else {
                ",".to_string()
            };
            Value::String(match &args[0] {
                Value::Array(items) => items.iter().map(to_text).collect::<Vec<_>>().join(&sep),
                other => to_text(other),
            })
        }
        Func::ToJson => Value::String(to_json(&args[0])),
        Func::FromJson => serde_json::from_str(&text(0))
            .map_err(|e| format!("fromJSON: invalid JSON `{}`: {e}", text(0)))?,
        _ => return Err(format!("function {f:?} cannot be called here")),
    })
}

fn format_fn(template: &str, args: &[Value]) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let digits: String = chars.by_ref().take_while(|c| *c != '}').collect();
                let i: usize = digits.parse().map_err(|_| {
                    format!("format: invalid placeholder `{{{digits}` in `{template}`")
                })?;
                let arg = args.get(i).ok_or_else(|| {
                    format!(
                        "format: `{template}` uses {{{i}}} but has {} argument(s)",
                        args.len()
                    )
                })?;
                out.push_str(&to_text(arg));
            }
            '}' => return Err(format!("format: unmatched `}}` in `{template}`")),
            _ => out.push(c),
        }
    }
    Ok(out)
}

/// One piece of a template: literal text or an expression's source.
enum Piece<'t> {
    Text(&'t str),
    Expr(&'t str),
}

fn split_template(text: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        pieces.push(Piece::Text(&rest[..start]));
        let body = &rest[start + 3..];
        let end = closing(body).ok_or_else(|| format!("unclosed `${{{{` in `{}`", text.trim()))?;
        pieces.push(Piece::Expr(&body[..end]));
        rest = &body[end + 2..];
    }
    pieces.push(Piece::Text(rest));
    Ok(pieces)
}

/// The byte offset of the `}}` closing an expression (outside string literals).
fn closing(body: &str) -> Option<usize> {
    let bytes = body.as_bytes();
    let mut in_string = false;
    for i in 0..bytes.len() {
        match bytes[i] {
            b'\'' => in_string = !in_string,
            b'}' if !in_string && bytes.get(i + 1) == Some(&b'}') => return Some(i),
            _ => {}
        }
    }
    None
}

impl Scope<'_> {
    /// Replaces every `${{ expr }}` in `text` by the expression's text.
    pub(crate) fn substitute(&self, text: &str) -> Result<String, String> {
        let mut out = String::new();
        for piece in split_template(text)? {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Expr(src) => out.push_str(&to_text(&self.eval(&parse(src)?)?)),
            }
        }
        Ok(out)
    }

    /// A YAML value with its templates evaluated: a string that is exactly
    /// one `${{ }}` keeps the expression's type; other strings are
    /// substituted; arrays and objects are evaluated member by member.
    pub(crate) fn eval_value(&self, v: &Value) -> Result<Value, String> {
        Ok(match v {
            Value::String(s) => match single_expression(s) {
                Some(src) => self.eval(&parse(src)?)?,
                None => Value::String(self.substitute(s)?),
            },
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|i| self.eval_value(i))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(m) => {
                let mut out = Map::new();
                for (k, v) in m {
                    out.insert(k.clone(), self.eval_value(v)?);
                }
                Value::Object(out)
            }
            other => other.clone(),
        })
    }

    /// An `if:` condition (bare or wrapped in `${{ }}`); without a status
    /// function it means `success() && (condition)`.
    pub(crate) fn condition(&self, raw: &Value) -> Result<bool, String> {
        let src = match raw {
            Value::Null => "success()".to_string(),
            Value::String(s) => s.trim().to_string(),
            other => to_text(other),
        };
        let inner = match single_expression(&src) {
            Some(inner) => inner.to_string(),
            None if src.contains("${{") => {
                return Ok(truthy(&Value::String(self.substitute(&src)?)))
            }
            None => src.clone(),
        };
        let expr = parse(&inner).map_err(|e| format!("in condition `{src}`: {e}"))?;
        let expr = if expr.has_status_function() {
            expr
        } else {
            Expr::And(
                Box::new(Expr::Call(Func::Success, Vec::new())),
                Box::new(expr),
            )
        };
        self.eval(&expr)
            .map(|v| truthy(&v))
            .map_err(|e| format!("in condition `{src}`: {e}"))
    }
}

/// The source of `s` when `s` is exactly one `${{ ... }}`.
fn single_expression(s: &str) -> Option<&str> {
    let t = s.trim();
    let body = t.strip_prefix("${{")?;
    let end = closing(body)?;
    (end + 2 == body.len()).then(|| &body[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scope_eval(src: &str, contexts: &Value) -> Result<Value, String> {
        let map = contexts.as_object().cloned().unwrap_or_default();
        let scope = Scope {
            contexts: &map,
            status: Status {
                success: true,
                ..Status::default()
            },
            workspace: None,
        };
        scope.eval(&parse(src)?)
    }

    #[test]
    fn literals_and_operators() {
        let ctx = json!({"matrix": {"os": "Linux", "n": 3}, "inputs": {"x": ""}});
        let cases = [
            ("'it''s'", json!("it's")),
            ("1 == 1.0", json!(true)),
            ("'ABC' == 'abc'", json!(true)),
            ("'1' == 1", json!(true)),
            ("null == 0", json!(true)),
            ("matrix.os == 'linux' && matrix.n > 2", json!(true)),
            ("inputs.x || 'default'", json!("default")),
            ("matrix['os']", json!("Linux")),
            ("!matrix.missing", json!(true)),
            ("0x10 == 16", json!(true)),
            ("-2 < 1", json!(true)),
            ("(1 == 2) || (2 == 2)", json!(true)),
            ("'b' > 'A'", json!(true)),
        ];
        for (src, want) in cases {
            assert_eq!(scope_eval(src, &ctx).unwrap(), want, "{src}");
        }
    }

    #[test]
    fn functions() {
        let ctx = json!({"needs": {"a": {"result": "success"}, "b": {"result": "failure"}}});
        let cases = [
            ("contains(fromJSON('[\"a\",\"b\"]'), 'B')", json!(true)),
            ("contains('Hello', 'ell')", json!(true)),
            ("startsWith('refs/heads/main', 'refs/heads/')", json!(true)),
            ("endsWith('a.whl', '.WHL')", json!(true)),
            ("format('{0}-{1}{{x}}', 'a', 2)", json!("a-2{x}")),
            ("join(fromJSON('[1,2]'), '+')", json!("1+2")),
            ("toJSON(1)", json!("1")),
            ("contains(needs.*.result, 'failure')", json!(true)),
            ("join(needs.*.result)", json!("success,failure")),
        ];
        for (src, want) in cases {
            assert_eq!(scope_eval(src, &ctx).unwrap(), want, "{src}");
        }
    }

    #[test]
    fn errors_name_the_expression() {
        for src in [
            "foo(",
            "bar()",
            "a ==",
            "'open",
            "1 2",
            "contains(1)",
            "a.",
            "#",
        ] {
            let err = scope_eval(src, &json!({})).unwrap_err();
            assert!(!err.is_empty(), "{src}");
        }
        assert!(parse("nope()").unwrap_err().contains("nope"));
    }

    #[test]
    fn templates_and_conditions() {
        let map = json!({"matrix": {"v": "3.12"}, "steps": {}})
            .as_object()
            .cloned()
            .unwrap();
        let scope = Scope {
            contexts: &map,
            status: Status {
                success: false,
                failure: true,
                cancelled: false,
            },
            workspace: None,
        };
        assert_eq!(
            scope.substitute("py${{ matrix.v }}-${{ '}}' }}").unwrap(),
            "py3.12-}}"
        );
        assert!(!scope.condition(&json!("matrix.v == '3.12'")).unwrap());
        assert!(scope.condition(&json!("${{ always() }}")).unwrap());
        assert!(scope.condition(&json!("failure()")).unwrap());
        assert_eq!(scope.eval_value(&json!("${{ 3 }}")).unwrap(), json!(3));
        assert!(scope.substitute("${{ x").is_err());
    }

    proptest::proptest! {
        #[test]
        fn random_input_never_panics(src in "\\PC{0,40}") {
            let map = Map::new();
            let scope = Scope { contexts: &map, status: Status::default(), workspace: None };
            let _ = parse(&src).map(|e| scope.eval(&e));
            let _ = scope.substitute(&src);
            let _ = scope.condition(&Value::String(src.clone()));
        }

        #[test]
        fn expression_like_input_never_panics(
            src in "[a-z.()'!=<>&|,*\\[\\] 0-9x-]{0,30}"
        ) {
            let map = Map::new();
            let scope = Scope { contexts: &map, status: Status::default(), workspace: None };
            let _ = parse(&src).map(|e| scope.eval(&e));
        }
    }
}
