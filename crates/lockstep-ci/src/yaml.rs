//! A small YAML writer for the workflows lockstep generates.
//!
//! Workflows are built as a tree of [`Node`]s and printed in one fixed
//! style (two-space indents, block lists, `|` blocks for scripts, a blank
//! line between jobs), so the same input always gives the same bytes and a
//! `--check` diff shows only real changes. A general YAML library would
//! reorder or restyle; this writer only needs to get scalars right: anything
//! that YAML could read as something other than the string it is (`3.10`,
//! `on`, `yes`, `: `, a leading `*`) is single-quoted.

/// A YAML value.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Str(String),
    Int(i64),
    Bool(bool),
    /// `key:` with nothing after it (`pull_request:`).
    Null,
    /// A block list.
    Seq(Vec<Node>),
    /// A list of scalars on one line: `[1, 2]`.
    Flow(Vec<Node>),
    /// A mapping, in the order given.
    Map(Vec<(String, Node)>),
    /// A mapping with a blank line between its entries (top level, jobs).
    Spaced(Vec<(String, Node)>),
    /// A literal block (`|`): a script.
    Block(String),
    /// A string with a comment after it on its line (`uses: a/b@SHA # v1.2.3`).
    Commented(String, String),
}

/// `Node::Str` from anything string-like.
pub fn s(text: impl Into<String>) -> Node {
    Node::Str(text.into())
}

/// A mapping from `(key, value)` pairs.
pub fn map<const N: usize>(entries: [(&str, Node); N]) -> Node {
    Node::Map(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// Prints `node` (a mapping) as a document.
pub fn render(node: &Node) -> String {
    let mut out = String::new();
    match node {
        Node::Map(entries) => render_map(entries, 0, false, &mut out),
        Node::Spaced(entries) => render_map(entries, 0, true, &mut out),
        other => {
            out.push_str(&scalar(other, false));
            out.push('\n');
        }
    }
    out
}

fn pad(indent: usize) -> String {
    " ".repeat(indent)
}

fn render_map(entries: &[(String, Node)], indent: usize, spaced: bool, out: &mut String) {
    for (i, (key, value)) in entries.iter().enumerate() {
        if spaced && i > 0 {
            out.push('\n');
        }
        out.push_str(&pad(indent));
        // `on` is how every workflow spells its triggers (GitHub reads the
        // key as the string); any other key is quoted like a value.
        if key == "on" {
            out.push_str(key);
        } else {
            out.push_str(&quote(key, false));
        }
        out.push(':');
        render_value(value, indent, out);
    }
}

/// The rest of a `key:` line and what goes under it.
fn render_value(value: &Node, indent: usize, out: &mut String) {
    match value {
        Node::Null => out.push('\n'),
        Node::Map(entries) | Node::Spaced(entries) if entries.is_empty() => out.push_str(" {}\n"),
        Node::Map(entries) => {
            out.push('\n');
            render_map(entries, indent + 2, false, out);
        }
        Node::Spaced(entries) => {
            out.push('\n');
            render_map(entries, indent + 2, true, out);
        }
        Node::Seq(items) if items.is_empty() => out.push_str(" []\n"),
        Node::Seq(items) => {
            out.push('\n');
            render_seq(items, indent + 2, out);
        }
        Node::Block(text) => {
            out.push_str(" |\n");
            for line in text.trim_end_matches('\n').lines() {
                if !line.is_empty() {
                    out.push_str(&pad(indent + 2));
                    out.push_str(line);
                }
                out.push('\n');
            }
        }
        Node::Commented(text, comment) => {
            out.push(' ');
            out.push_str(&quote(text, false));
            out.push_str(" # ");
            out.push_str(comment);
            out.push('\n');
        }
        other => {
            out.push(' ');
            out.push_str(&scalar(other, false));
            out.push('\n');
        }
    }
}

fn render_seq(items: &[Node], indent: usize, out: &mut String) {
    for item in items {
        match item {
            Node::Map(entries) | Node::Spaced(entries) if !entries.is_empty() => {
                // The first entry goes on the dash's line, the rest under it.
                let mut nested = String::new();
                render_map(entries, indent + 2, false, &mut nested);
                out.push_str(&pad(indent));
                out.push_str("- ");
                out.push_str(&nested[indent + 2..]);
            }
            Node::Seq(_) | Node::Block(_) | Node::Map(_) | Node::Spaced(_) => {
                out.push_str(&pad(indent));
                out.push('-');
                render_value(item, indent, out);
            }
            other => {
                out.push_str(&pad(indent));
                out.push_str("- ");
                out.push_str(&scalar(other, false));
                out.push('\n');
            }
        }
    }
}

/// A scalar (or a flow list of scalars) as it appears after `key: `.
fn scalar(node: &Node, in_flow: bool) -> String {
    match node {
        Node::Str(text) | Node::Commented(text, _) => quote(text, in_flow),
        Node::Int(n) => n.to_string(),
        Node::Bool(b) => b.to_string(),
        Node::Null => "null".into(),
        Node::Flow(items) => {
            let inner: Vec<String> = items.iter().map(|i| scalar(i, true)).collect();
            format!("[{}]", inner.join(", "))
        }
        // Nested collections are never put in flow style.
        Node::Seq(_) | Node::Map(_) | Node::Spaced(_) | Node::Block(_) => "null".into(),
    }
}

/// `text` as a plain scalar when YAML reads it back as this same string,
/// else single-quoted.
pub fn quote(text: &str, in_flow: bool) -> String {
    if is_plain(text, in_flow) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "''"))
    }
}

fn is_plain(text: &str, in_flow: bool) -> bool {
    const RESERVED: [&str; 12] = [
        "true", "false", "yes", "no", "on", "off", "null", "y", "n", "~", "<<", "=",
    ];
    let Some(first) = text.chars().next() else {
        return false;
    };
    if text.trim() != text || RESERVED.contains(&text.to_ascii_lowercase().as_str()) {
        return false;
    }
    // A leading digit, sign or dot may make a number (`3.10`, `1e3`, `.5`);
    // other punctuation starts YAML syntax (`*alias`, `'`, `[`, `!tag` ...).
    let safe_start = first.is_ascii_alphabetic()
        || matches!(first, '_' | '/' | '$')
        || (first == '~' && text.len() > 1);
    if !safe_start {
        return false;
    }
    if text.contains(": ") || text.contains(" #") || text.ends_with(':') {
        return false;
    }
    let flow_special = |c: char| matches!(c, ',' | '[' | ']' | '{' | '}');
    text.chars()
        .all(|c| !c.is_control() && (!in_flow || !flow_special(c)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn prints_the_house_style() {
        let doc = Node::Spaced(vec![
            ("name".into(), s("pkgci")),
            (
                "on".into(),
                map([
                    ("pull_request", Node::Null),
                    ("push", map([("branches", Node::Flow(vec![s("main")]))])),
                ]),
            ),
            (
                "jobs".into(),
                Node::Spaced(vec![
                    (
                        "build".into(),
                        map([
                            ("runs-on", s("ubuntu-24.04")),
                            (
                                "strategy",
                                map([(
                                    "matrix",
                                    map([("python", Node::Flow(vec![s("3.10"), s("3.11")]))]),
                                )]),
                            ),
                            (
                                "steps",
                                Node::Seq(vec![
                                    map([
                                        ("uses", s("actions/checkout@v6")),
                                        ("with", map([("persist-credentials", Node::Bool(false))])),
                                    ]),
                                    map([("run", Node::Block("echo one\n\necho \"$X\"\n".into()))]),
                                ]),
                            ),
                        ]),
                    ),
                    (
                        "summary".into(),
                        map([("needs", Node::Seq(vec![s("build")]))]),
                    ),
                ]),
            ),
        ]);
        let expected = "name: pkgci

on:
  pull_request:
  push:
    branches: [main]

jobs:
  build:
    runs-on: ubuntu-24.04
    strategy:
      matrix:
        python: ['3.10', '3.11']
    steps:
      - uses: actions/checkout@v6
        with:
          persist-credentials: false
      - run: |
          echo one

          echo \"$X\"

  summary:
    needs:
      - build
";
        assert_eq!(render(&doc), expected);
    }

    #[test]
    fn quotes_what_yaml_would_misread() {
        for (text, quoted) in [
            ("3.10", "'3.10'"),
            ("on", "'on'"),
            ("No", "'No'"),
            ("a: b", "'a: b'"),
            ("'it'", "'''it'''"),
            ("*x", "'*x'"),
            ("", "''"),
            (" x", "' x'"),
            ("x #y", "'x #y'"),
        ] {
            assert_eq!(quote(text, false), quoted, "{text}");
        }
        for plain in [
            "ubuntu-24.04",
            "wheels-py${{ matrix.python }}",
            "${{ x == 'y' }}",
            "a/b@v6",
            "~/.cargo",
        ] {
            assert_eq!(quote(plain, false), plain);
        }
        assert_eq!(quote("a,b", true), "'a,b'");
    }

    proptest! {
        /// Whatever is quoted reads back as itself: the quoted form is
        /// either plain-safe or a single-quoted string with '' escapes.
        #[test]
        fn quoting_round_trips(text in "[ -~]{0,30}") {
            let q = quote(&text, false);
            if let Some(inner) = q.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
                prop_assert_eq!(inner.replace("''", "'"), text);
            } else {
                prop_assert_eq!(&q, &text);
                prop_assert!(is_plain(&text, false));
            }
        }
    }
}
