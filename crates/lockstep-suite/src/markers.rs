//! Marker expressions for `lockstep test -m EXPR`, in the style of pytest's `-m`.
//!
//! Tests carry markers (from their suite, their own `markers` list and their
//! target); `-m` selects tests with a boolean expression over those markers, such
//! as `presubmit and not (gpu or slow)`. The expression is parsed once, up front,
//! so that a typo is a usage error with the column it happened at rather than a
//! silently empty selection.
//!
//! Grammar (precedence `not` > `and` > `or`, all left-associative):
//!
//! ```text
//! expr    := and_expr ("or" and_expr)*
//! and_expr:= not_expr ("and" not_expr)*
//! not_expr:= "not" not_expr | primary
//! primary := "(" expr ")" | NAME
//! NAME    := [A-Za-z0-9_.-]+   (except the keywords and / or / not)
//! ```
//!
//! A name matches when the test carries exactly that marker (case-sensitive).

use std::fmt;
use std::str::FromStr;

use lockstep_core::Error;

/// A parsed marker expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerExpr {
    root: Node,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Marker(String),
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
}

impl MarkerExpr {
    /// Parses `a and not (b or c)`; identifiers are [A-Za-z0-9_.-]+ ; keywords and/or/not; parentheses; precedence not > and > or.
    /// Errors are usage errors naming the position and what was expected (e.g. "expected a marker name at column 9 in `a and (b`").
    ///
    /// Columns are 1-based and count characters. An empty expression is an
    /// error: callers that treat "no `-m`" as "select everything" should not call
    /// this at all.
    pub fn parse(text: &str) -> Result<MarkerExpr, Error> {
        let tokens = tokenize(text)?;
        let mut parser = Parser {
            text,
            tokens,
            pos: 0,
            depth: 0,
        };
        let root = parser.expr()?;
        let token = parser.peek();
        match token.kind {
            TokenKind::End => Ok(MarkerExpr { root }),
            TokenKind::Close => Err(Error::usage(format!(
                "unmatched `)` at column {} in `{text}`",
                token.column
            ))
            .hint(HINT)),
            other => Err(syntax_error(
                text,
                "`and`, `or` or the end of the expression",
                token.column,
                &other,
            )),
        }
    }

    /// The marker name, when the whole expression is one name.
    pub fn single_marker(&self) -> Option<&str> {
        match &self.root {
            Node::Marker(name) => Some(name),
            _ => None,
        }
    }

    /// Whether a test carrying `markers` is selected by this expression.
    pub fn matches(&self, markers: &[String]) -> bool {
        self.root.eval(markers)
    }

    /// Every marker name the expression mentions, in order of appearance
    /// (duplicates kept). Useful to warn about names no test carries.
    pub fn names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.root.collect_names(&mut out);
        out
    }
}

impl FromStr for MarkerExpr {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        MarkerExpr::parse(text)
    }
}

/// Prints the expression fully parenthesised, e.g. `(a and (not b))`.
impl fmt::Display for MarkerExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.root)
    }
}

impl Node {
    fn eval(&self, markers: &[String]) -> bool {
        match self {
            Node::Marker(name) => markers.iter().any(|m| m == name),
            Node::Not(inner) => !inner.eval(markers),
            Node::And(a, b) => a.eval(markers) && b.eval(markers),
            Node::Or(a, b) => a.eval(markers) || b.eval(markers),
        }
    }

    fn collect_names<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Node::Marker(name) => out.push(name),
            Node::Not(inner) => inner.collect_names(out),
            Node::And(a, b) | Node::Or(a, b) => {
                a.collect_names(out);
                b.collect_names(out);
            }
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Marker(name) => write!(f, "{name}"),
            Node::Not(inner) => write!(f, "(not {inner})"),
            Node::And(a, b) => write!(f, "({a} and {b})"),
            Node::Or(a, b) => write!(f, "({a} or {b})"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum TokenKind {
    Name(String),
    And,
    Or,
    Not,
    Open,
    Close,
    End,
}

impl fmt::Display for TokenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenKind::Name(name) => write!(f, "`{name}`"),
            TokenKind::And => write!(f, "`and`"),
            TokenKind::Or => write!(f, "`or`"),
            TokenKind::Not => write!(f, "`not`"),
            TokenKind::Open => write!(f, "`(`"),
            TokenKind::Close => write!(f, "`)`"),
            TokenKind::End => write!(f, "the end of the expression"),
        }
    }
}

#[derive(Debug, Clone)]
struct Token {
    kind: TokenKind,
    /// 1-based character column of the token's first character.
    column: usize,
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

const HINT: &str = "marker expressions look like `presubmit and not (gpu or slow)`";

fn tokenize(text: &str) -> Result<Vec<Token>, Error> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' {
            tokens.push(Token {
                kind: TokenKind::Open,
                column,
            });
            i += 1;
        } else if c == ')' {
            tokens.push(Token {
                kind: TokenKind::Close,
                column,
            });
            i += 1;
        } else if is_name_char(c) {
            let start = i;
            while i < chars.len() && is_name_char(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let kind = match word.as_str() {
                "and" => TokenKind::And,
                "or" => TokenKind::Or,
                "not" => TokenKind::Not,
                _ => TokenKind::Name(word),
            };
            tokens.push(Token { kind, column });
        } else {
            return Err(Error::usage(format!(
                "unexpected character `{c}` at column {column} in `{text}`: marker names \
                 use only letters, digits, `_`, `.` and `-`"
            ))
            .hint(HINT));
        }
    }
    tokens.push(Token {
        kind: TokenKind::End,
        column: chars.len() + 1,
    });
    Ok(tokens)
}

fn syntax_error(text: &str, expected: &str, column: usize, found: &TokenKind) -> Error {
    Error::usage(format!(
        "expected {expected} at column {column} in `{text}` (found {found})"
    ))
    .hint(HINT)
}

/// Deepest nesting of `not` and parentheses accepted, so that a pathological
/// expression is an error instead of a stack overflow.
const MAX_DEPTH: usize = 200;

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Token {
        // The token list always ends with `End`, and `pos` never moves past it.
        self.tokens
            .get(self.pos)
            .or_else(|| self.tokens.last())
            .cloned()
            .unwrap_or(Token {
                kind: TokenKind::End,
                column: 1,
            })
    }

    fn advance(&mut self) {
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
    }

    fn expr(&mut self) -> Result<Node, Error> {
        let mut left = self.and_expr()?;
        while self.peek().kind == TokenKind::Or {
            self.advance();
            let right = self.and_expr()?;
            left = Node::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and_expr(&mut self) -> Result<Node, Error> {
        let mut left = self.not_expr()?;
        while self.peek().kind == TokenKind::And {
            self.advance();
            let right = self.not_expr()?;
            left = Node::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn not_expr(&mut self) -> Result<Node, Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::usage(format!(
                "the marker expression nests `not` and parentheses more than {MAX_DEPTH} deep \
                 (at column {})",
                self.peek().column
            )));
        }
        let node = if self.peek().kind == TokenKind::Not {
            self.advance();
            self.not_expr().map(|inner| Node::Not(Box::new(inner)))
        } else {
            self.primary()
        };
        self.depth -= 1;
        node
    }

    fn primary(&mut self) -> Result<Node, Error> {
        let token = self.peek();
        match token.kind {
            TokenKind::Name(name) => {
                self.advance();
                Ok(Node::Marker(name))
            }
            TokenKind::Open => {
                self.advance();
                let inner = self.expr()?;
                let close = self.peek();
                if close.kind != TokenKind::Close {
                    return Err(Error::usage(format!(
                        "expected `)` at column {} in `{}` to close the `(` at column {} \
                         (found {})",
                        close.column, self.text, token.column, close.kind
                    ))
                    .hint(HINT));
                }
                self.advance();
                Ok(inner)
            }
            other => Err(syntax_error(
                self.text,
                "a marker name",
                token.column,
                &other,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_core::ErrorKind;

    fn m(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn parse(text: &str) -> MarkerExpr {
        match MarkerExpr::parse(text) {
            Ok(expr) => expr,
            Err(err) => panic!("parse `{text}` failed: {}", err.render()),
        }
    }

    fn error(text: &str) -> String {
        match MarkerExpr::parse(text) {
            Ok(expr) => panic!("`{text}` parsed as {expr}, expected an error"),
            Err(err) => {
                assert_eq!(err.kind, ErrorKind::Usage, "{}", err.render());
                err.message
            }
        }
    }

    #[test]
    fn single_name() {
        let e = parse("gpu");
        assert!(e.matches(&m(&["gpu"])));
        assert!(!e.matches(&m(&["cpu"])));
        assert!(!e.matches(&[]));
        assert_eq!(e.names(), vec!["gpu"]);
    }

    #[test]
    fn names_allow_dots_dashes_digits_underscores() {
        let e = parse("iree-3.13_rc1");
        assert!(e.matches(&m(&["iree-3.13_rc1"])));
        assert!(!e.matches(&m(&["iree"])));
        // Matching is exact and case-sensitive.
        assert!(!parse("GPU").matches(&m(&["gpu"])));
    }

    #[test]
    fn and_binds_tighter_than_or() {
        let e = parse("a or b and c");
        assert_eq!(e.to_string(), "(a or (b and c))");
        assert!(e.matches(&m(&["a"])));
        assert!(!e.matches(&m(&["b"])));
        assert!(e.matches(&m(&["b", "c"])));

        let e = parse("a and b or c");
        assert_eq!(e.to_string(), "((a and b) or c)");
        assert!(e.matches(&m(&["c"])));
        assert!(!e.matches(&m(&["a"])));
    }

    #[test]
    fn not_binds_tightest() {
        let e = parse("not a and b");
        assert_eq!(e.to_string(), "((not a) and b)");
        assert!(e.matches(&m(&["b"])));
        assert!(!e.matches(&m(&["a", "b"])));
        assert!(!e.matches(&[]));

        let e = parse("not a or b");
        assert_eq!(e.to_string(), "((not a) or b)");
        assert!(e.matches(&[]));
        assert!(e.matches(&m(&["a", "b"])));
        assert!(!e.matches(&m(&["a"])));
    }

    #[test]
    fn double_not() {
        let e = parse("not not a");
        assert!(e.matches(&m(&["a"])));
        assert!(!e.matches(&[]));
    }

    #[test]
    fn parentheses_override_precedence() {
        let e = parse("(a or b) and c");
        assert_eq!(e.to_string(), "((a or b) and c)");
        assert!(!e.matches(&m(&["a"])));
        assert!(e.matches(&m(&["a", "c"])));
        assert!(e.matches(&m(&["b", "c"])));

        let e = parse("a and not (b or c)");
        assert!(e.matches(&m(&["a"])));
        assert!(!e.matches(&m(&["a", "b"])));
        assert!(!e.matches(&m(&["a", "c"])));
        assert!(!e.matches(&m(&["b"])));

        let e = parse("((a))");
        assert!(e.matches(&m(&["a"])));
    }

    #[test]
    fn whitespace_is_free() {
        let e = parse("  a\tand(not b)  ");
        assert!(e.matches(&m(&["a"])));
        assert!(!e.matches(&m(&["a", "b"])));
    }

    #[test]
    fn left_associative_chains() {
        let e = parse("a or b or c");
        assert_eq!(e.to_string(), "((a or b) or c)");
        assert!(e.matches(&m(&["c"])));
        let e = parse("a and b and c");
        assert!(!e.matches(&m(&["a", "b"])));
        assert!(e.matches(&m(&["a", "b", "c"])));
    }

    #[test]
    fn from_str_works() {
        let e: MarkerExpr = match "a and b".parse() {
            Ok(e) => e,
            Err(err) => panic!("{}", err.render()),
        };
        assert!(e.matches(&m(&["b", "a"])));
    }

    #[test]
    fn error_unclosed_paren() {
        let msg = error("a and (b");
        assert_eq!(
            msg,
            "expected `)` at column 9 in `a and (b` to close the `(` at column 7 \
             (found the end of the expression)"
        );
    }

    #[test]
    fn error_missing_operand() {
        let msg = error("a and (");
        assert!(
            msg.starts_with("expected a marker name at column 8 in `a and (`"),
            "{msg}"
        );
        let msg = error("a and");
        assert!(
            msg.starts_with("expected a marker name at column 6 in `a and`"),
            "{msg}"
        );
        assert!(msg.contains("the end of the expression"), "{msg}");
        let msg = error("not");
        assert!(msg.contains("expected a marker name at column 4"), "{msg}");
        let msg = error("or b");
        assert!(msg.contains("expected a marker name at column 1"), "{msg}");
        assert!(msg.contains("found `or`"), "{msg}");
        let msg = error("a and and b");
        assert!(msg.contains("column 7"), "{msg}");
    }

    #[test]
    fn error_empty() {
        let msg = error("");
        assert!(msg.contains("expected a marker name at column 1"), "{msg}");
        let msg = error("   ");
        assert!(msg.contains("column 4"), "{msg}");
        let msg = error("()");
        assert!(msg.contains("expected a marker name at column 2"), "{msg}");
    }

    #[test]
    fn error_trailing_tokens() {
        let msg = error("a b");
        assert!(msg.contains("expected `and`, `or`"), "{msg}");
        assert!(msg.contains("column 3"), "{msg}");
        assert!(msg.contains("found `b`"), "{msg}");
        let msg = error("a)");
        assert!(
            msg.starts_with("unmatched `)` at column 2 in `a)`"),
            "{msg}"
        );
        let msg = error("(a))");
        assert!(msg.contains("column 4"), "{msg}");
    }

    #[test]
    fn error_bad_character() {
        let msg = error("a && b");
        assert!(
            msg.contains("unexpected character `&` at column 3"),
            "{msg}"
        );
        let msg = error("gpu, cpu");
        assert!(msg.contains("`,` at column 4"), "{msg}");
        // Columns count characters, not bytes.
        let msg = error("é and !");
        assert!(msg.contains("`é` at column 1"), "{msg}");
        let msg = error("ab and ü");
        assert!(msg.contains("column 8"), "{msg}");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = format!("{}a{}", "(".repeat(10_000), ")".repeat(10_000));
        let msg = error(&text);
        assert!(msg.contains("more than 200 deep"), "{msg}");
        let text = "not ".repeat(10_000) + "a";
        error(&text);
        // Moderate nesting is fine.
        let text = format!("{}a{}", "(".repeat(50), ")".repeat(50));
        assert!(parse(&text).matches(&m(&["a"])));
    }

    #[test]
    fn errors_carry_a_hint() {
        let err = match MarkerExpr::parse("a and") {
            Ok(_) => panic!("expected an error"),
            Err(err) => err,
        };
        assert!(err.hint.is_some());
        assert_eq!(err.exit_code(), 2);
    }

    /// Words and symbols of the grammar, and a few that are not in it.
    fn token() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just("and".to_string()),
            Just("or".to_string()),
            Just("not".to_string()),
            Just("(".to_string()),
            Just(")".to_string()),
            Just(" ".to_string()),
            Just("\u{1b}".to_string()),
            "[a-z0-9_.-]{1,6}",
            "\\PC",
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        #[test]
        fn any_text_parses_or_is_a_usage_error(text in "\\PC{0,200}") {
            if let Err(err) = MarkerExpr::parse(&text) {
                proptest::prop_assert_eq!(err.kind, ErrorKind::Usage);
                proptest::prop_assert!(err.hint.is_some());
                let escaped = !err.render().contains('\u{1b}');
                proptest::prop_assert!(escaped, "raw escape in {}", err.message);
            }
        }

        #[test]
        fn token_soup_parses_or_says_where(tokens in proptest::collection::vec(token(), 0..40)) {
            let text = tokens.join(" ");
            match MarkerExpr::parse(&text) {
                // What it prints reads back as the same expression.
                Ok(expr) => {
                    let again = MarkerExpr::parse(&expr.to_string());
                    proptest::prop_assert!(again.is_ok_and(|e| e.to_string() == expr.to_string()));
                }
                Err(err) => proptest::prop_assert!(err.message.contains("column"), "{}", err.message),
            }
        }
    }
}
