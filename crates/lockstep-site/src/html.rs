//! The HTML around every page: escaping, the shared style sheet (light and
//! dark), the navigation, and links that leave the site.
//!
//! Every string that comes from the history (test names, commit subjects,
//! reasons, paths) goes through [`esc`]; links built from it go through
//! [`safe_href`] so a `javascript:` URL in a document never becomes a link.

use std::fmt::Write as _;

/// `text` escaped for HTML text and attribute values (double-quoted).
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in HTML text, and the
            // invisible format characters (bidi overrides, zero-width
            // marks) would reorder or hide what a reader sees: the same
            // rule as the terminal's (lockstep_core::error::hides_text).
            c if lockstep_core::error::hides_text(c) && c != '\n' && c != '\t' => {
                out.push('\u{fffd}')
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` cut to `max` characters (with an ellipsis), then escaped.
pub fn esc_short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return esc(text);
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    esc(&format!("{cut}…"))
}

/// The first 10 characters of a commit (or `-`).
pub fn short(commit: Option<&str>) -> String {
    match commit {
        Some(c) if !c.is_empty() => esc(&c.chars().take(10).collect::<String>()),
        _ => "-".to_string(),
    }
}

/// `url` when it is an http(s) URL, escaped for an `href`; else `None`.
pub fn safe_href(url: &str) -> Option<String> {
    let lower = url.trim().to_ascii_lowercase();
    (lower.starts_with("https://") || lower.starts_with("http://")).then(|| esc(url.trim()))
}

/// `segment` percent-encoded for one path segment of a URL.
pub fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'!') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A number with a few significant digits.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 0.1 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The pages, in navigation order: file name and title.
pub const PAGES: [(&str, &str); 6] = [
    ("index.html", "Overview"),
    ("tests.html", "Tests"),
    ("bench.html", "Benchmarks"),
    ("integrate.html", "Integrate"),
    ("releases.html", "Releases"),
    ("speed.html", "Speed"),
];

const STYLE: &str = r#"
:root { color-scheme: light dark;
  --bg: #ffffff; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --panel: #f6f8fa;
  --pass: #2da44e; --fail: #cf222e; --flaky: #bf8700; --xfail: #8c959f; --xpass: #8250df;
  --skip: #eaeef2; --accent: #0969da; --band: rgba(9,105,218,0.13); --golden: #bf8700; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #8d96a0; --line: #30363d; --panel: #161b22;
    --pass: #3fb950; --fail: #f85149; --flaky: #d29922; --xfail: #6e7681; --xpass: #a371f7;
    --skip: #21262d; --accent: #4493f8; --band: rgba(68,147,248,0.2); --golden: #d29922; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
header { background: var(--panel); border-bottom: 1px solid var(--line); padding: 0.6rem 1.2rem; }
nav a { margin-right: 1.1rem; color: var(--accent); text-decoration: none; font-weight: 600; }
nav a[aria-current=page] { color: var(--fg); border-bottom: 2px solid var(--accent); }
main { padding: 0.5rem 1.2rem 2rem; max-width: 1200px; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; } h3 { font-size: 1rem; margin-bottom: 0.3rem; }
a { color: var(--accent); }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; }
table { border-collapse: collapse; margin: 0.5rem 0; }
th, td { border: 1px solid var(--line); padding: 0.2rem 0.5rem; text-align: left; vertical-align: top; }
th { background: var(--panel); }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.nowrap { white-space: nowrap; }
tr.bad td { background: color-mix(in srgb, var(--fail) 14%, transparent); }
.muted { color: var(--muted); }
.warn { border-left: 4px solid var(--flaky); background: var(--panel); padding: 0.4rem 0.8rem; }
.badge { display: inline-block; padding: 0 0.4rem; border-radius: 0.6rem; font-size: 0.85em; font-weight: 600; color: #fff; }
.b-pass { background: var(--pass); } .b-fail { background: var(--fail); } .b-flaky { background: var(--flaky); }
.b-xfail { background: var(--xfail); } .b-xpass { background: var(--xpass); } .b-skip { background: var(--xfail); }
figure.chart { margin: 0.6rem 0 1.2rem; }
figure.chart figcaption { font-weight: 600; margin-bottom: 0.2rem; overflow-wrap: anywhere; }
svg { background: var(--bg); max-width: 100%; height: auto; }
svg text { fill: var(--fg); font: 11px system-ui, sans-serif; }
svg .axis { stroke: var(--muted); stroke-width: 1; }
svg .grid { stroke: var(--line); stroke-width: 1; }
svg .line { fill: none; stroke: var(--accent); stroke-width: 1.5; }
svg .golden { fill: none; stroke: var(--golden); stroke-width: 1.5; stroke-dasharray: 5 3; }
svg .band { fill: var(--band); stroke: none; }
svg .pt { fill: var(--accent); }
svg .pt.regression, svg .pt.halted, svg .pt.over { fill: var(--fail); stroke: var(--fail); stroke-width: 2; }
svg .pt.improvement, svg .pt.at_head { fill: var(--pass); }
svg .pt.steps_exhausted { fill: var(--flaky); }
svg .c-pass { fill: var(--pass); } svg .c-fail { fill: var(--fail); } svg .c-flaky { fill: var(--flaky); }
svg .c-xfail { fill: var(--xfail); } svg .c-xpass { fill: var(--xpass); } svg .c-skip { fill: var(--skip); }
svg .pt:hover, svg rect[data-point]:hover { stroke: var(--fg); stroke-width: 2; }
.legend span { margin-right: 1rem; }
.grid2 { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 0 1.5rem; }
footer { color: var(--muted); padding: 1rem 1.2rem; border-top: 1px solid var(--line); font-size: 0.85em; }
"#;

/// A whole page: `current` is its file name (marked in the navigation).
pub fn page(current: &str, title: &str, body: &str, footer: &str) -> String {
    let mut html = String::with_capacity(body.len() + 4096);
    html.push_str("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    html.push_str("<meta name=\"color-scheme\" content=\"light dark\">\n");
    let _ = writeln!(html, "<title>lockstep report: {}</title>", esc(title));
    // No favicon request: the page loads nothing.
    html.push_str("<link rel=\"icon\" href=\"data:,\">\n<style>");
    html.push_str(STYLE);
    html.push_str("</style>\n</head>\n<body>\n<header><nav aria-label=\"report pages\">");
    for (file, name) in PAGES {
        let current = if file == current {
            " aria-current=\"page\""
        } else {
            ""
        };
        let _ = write!(html, "<a href=\"{file}\"{current}>{name}</a>");
    }
    html.push_str("</nav></header>\n<main>\n");
    let _ = writeln!(html, "<h1>{}</h1>", esc(title));
    html.push_str(body);
    html.push_str("</main>\n<footer>");
    html.push_str(footer);
    html.push_str(
        " · <a href=\"index.html\">back to the overview</a></footer>\n</body>\n</html>\n",
    );
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_would_reorder_or_hide_what_a_reader_sees_is_replaced() {
        assert_eq!(
            esc("a<b>\u{202e}c\u{200b}d\u{1b}[2J\te\n"),
            "a&lt;b&gt;\u{fffd}c\u{fffd}d\u{fffd}[2J\te\n"
        );
    }
}
