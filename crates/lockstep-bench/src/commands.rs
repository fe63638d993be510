//! Commands files: one MIOpenDriver-style command per line.
//!
//! Rules (those of the BOO driver, plus the prefixes other sources write):
//! - blank lines and lines whose first non-blank character is `#` are skipped;
//! - a line is split like a POSIX shell (quotes, backslashes, a trailing
//!   `# comment`), or at tabs when the file is a `.tsv`;
//! - a leading repeat count (`3 convbfp16 ...`, as in MIOpen command summaries)
//!   and a leading driver path (`./bin/MIOpenDriver`, any word ending in
//!   `MIOpenDriver`) are stripped, in that order;
//! - a line that cannot be split (unbalanced quotes) or holds nothing but a
//!   prefix is kept as an error entry with its line number, so that a batch can
//!   report it as a failed row and carry on.

use serde::{Deserialize, Serialize};

use crate::miopen::{parse_argv, BenchCommand, ParseError};

/// One non-blank, non-comment line of a commands file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// 1-based line number in the file.
    pub number: usize,
    /// The line as written, without surrounding whitespace.
    pub text: String,
    /// The command words, starting at the command (`convbfp16`, `gemm`, ...).
    /// Empty when `error` is set.
    pub argv: Vec<String>,
    /// The leading repeat count, when the line had one.
    pub repeat: Option<u64>,
    /// Why the line could not be turned into words.
    pub error: Option<String>,
}

impl Line {
    /// True when the line was split into a command.
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }

    /// Parses the line's command. A line that could not be split gives its
    /// split error; the caller adds the line number (`line 3: ...`).
    pub fn parse(&self) -> Result<BenchCommand, ParseError> {
        match &self.error {
            Some(reason) => Err(ParseError {
                reason: reason.clone(),
            }),
            None => parse_argv(&self.argv),
        }
    }
}

/// Reads a commands file. `is_tsv` selects tab-separated fields (the file name
/// ends in `.tsv`) instead of shell-like splitting.
pub fn parse_file(text: &str, is_tsv: bool) -> Vec<Line> {
    let mut lines = Vec::new();
    // Editors on some systems start files with a byte-order mark.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (index, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let number = index + 1;
        let line = match split_command(trimmed, is_tsv) {
            Ok((repeat, argv)) => Line {
                number,
                text: trimmed.to_string(),
                argv,
                repeat,
                error: None,
            },
            Err(error) => Line {
                number,
                text: trimmed.to_string(),
                argv: Vec::new(),
                repeat: None,
                error: Some(error),
            },
        };
        lines.push(line);
    }
    lines
}

/// Splits one command line into words and strips the leading repeat count and
/// driver path. Returns the repeat count (if any) and the command words.
pub fn split_command(text: &str, is_tsv: bool) -> Result<(Option<u64>, Vec<String>), String> {
    let words = if is_tsv {
        text.split('\t')
            .map(str::trim)
            .filter(|field| !field.is_empty())
            .map(str::to_string)
            .collect()
    } else {
        lockstep_core::config::shell_words(text)?
    };
    if words.is_empty() {
        return Err("the line holds no command".to_string());
    }
    let (repeat, argv) = strip_prefixes(words);
    if argv.is_empty() {
        return Err(
            "the line holds no command after its repeat count or driver path: \
             expected a command such as `convbfp16 -n 16 ...`"
                .to_string(),
        );
    }
    Ok((repeat, argv))
}

/// Strips a leading repeat count and then a leading word ending in
/// `MIOpenDriver` from already split words (the single-command form of
/// `lockstep bench` gets its words from the shell).
pub fn strip_prefixes(words: Vec<String>) -> (Option<u64>, Vec<String>) {
    let mut rest = words.as_slice();
    let mut repeat = None;
    if let Some(first) = rest.first() {
        if !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(count) = first.parse::<u64>() {
                repeat = Some(count);
                rest = &rest[1..];
            }
        }
    }
    if let Some(first) = rest.first() {
        if is_driver_path(first) {
            rest = &rest[1..];
        }
    }
    (repeat, rest.to_vec())
}

fn is_driver_path(word: &str) -> bool {
    word.ends_with("MIOpenDriver")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &Line) -> Vec<&str> {
        line.argv.iter().map(String::as_str).collect()
    }

    #[test]
    fn skips_blank_lines_and_comments_and_keeps_line_numbers() {
        let text = "\n# a comment\n   # indented comment\nconv -n 1\n\n  convfp16 -c 8  \n";
        let lines = parse_file(text, false);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].number, 4);
        assert_eq!(words(&lines[0]), ["conv", "-n", "1"]);
        assert_eq!(lines[1].number, 6);
        assert_eq!(lines[1].text, "convfp16 -c 8");
        assert_eq!(words(&lines[1]), ["convfp16", "-c", "8"]);
        assert!(lines.iter().all(Line::is_ok));
    }

    #[test]
    fn strips_driver_path_and_repeat_count() {
        let text = "./bin/MIOpenDriver convbfp16 -n 2\n\
                    /opt/rocm/bin/MIOpenDriver conv -n 3\n\
                    MIOpenDriver conv\n\
                    12 convbfp16 -n 4\n\
                    7 ./bin/MIOpenDriver conv -F 1\n";
        let lines = parse_file(text, false);
        assert_eq!(words(&lines[0]), ["convbfp16", "-n", "2"]);
        assert_eq!(lines[0].repeat, None);
        assert_eq!(words(&lines[1]), ["conv", "-n", "3"]);
        assert_eq!(words(&lines[2]), ["conv"]);
        assert_eq!(words(&lines[3]), ["convbfp16", "-n", "4"]);
        assert_eq!(lines[3].repeat, Some(12));
        assert_eq!(words(&lines[4]), ["conv", "-F", "1"]);
        assert_eq!(lines[4].repeat, Some(7));
    }

    #[test]
    fn splits_like_a_shell() {
        let lines = parse_file(
            "conv --in_layout 'NHWC' -n \"4\" -c 8 # trailing note",
            false,
        );
        assert_eq!(
            words(&lines[0]),
            ["conv", "--in_layout", "NHWC", "-n", "4", "-c", "8"]
        );
        // MIOpen's 3-D short flags survive shell splitting.
        let lines = parse_file("conv -_ 3 -! 8 -@ 3 -# 1 -$ 0 -^ 1 -% 0", false);
        assert_eq!(
            words(&lines[0]),
            ["conv", "-_", "3", "-!", "8", "-@", "3", "-#", "1", "-$", "0", "-^", "1", "-%", "0"]
        );
    }

    #[test]
    fn tsv_lines_split_at_tabs() {
        let text = "# header comment\n3\tconvbfp16\t-n\t16\t-c\t96 \n\nconv\t-m\ttrans\t\t-g\t2\n";
        let lines = parse_file(text, true);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].number, 2);
        assert_eq!(lines[0].repeat, Some(3));
        assert_eq!(words(&lines[0]), ["convbfp16", "-n", "16", "-c", "96"]);
        assert_eq!(words(&lines[1]), ["conv", "-m", "trans", "-g", "2"]);
        // No shell quoting in TSV: quotes stay in the field.
        let lines = parse_file("conv\t-I\t'NHWC'", true);
        assert_eq!(words(&lines[0]), ["conv", "-I", "'NHWC'"]);
    }

    #[test]
    fn unsplittable_lines_become_error_entries() {
        let text = "conv -n 1\nconv -I 'NHWC\n./bin/MIOpenDriver\n5\nconvfp16\n";
        let lines = parse_file(text, false);
        assert_eq!(lines.len(), 5);
        assert!(lines[0].is_ok());
        assert_eq!(lines[1].number, 2);
        assert!(lines[1]
            .error
            .as_deref()
            .unwrap()
            .contains("unbalanced quotes"));
        assert!(lines[1].argv.is_empty());
        assert_eq!(lines[2].number, 3);
        assert!(lines[2].error.as_deref().unwrap().contains("no command"));
        assert!(lines[3].error.as_deref().unwrap().contains("no command"));
        assert!(lines[4].is_ok());
    }

    #[test]
    fn a_batch_reports_each_bad_line_and_carries_on() {
        let text = "# batch\n\
                    convbfp16 -n 16 -c 96 -H 48 -W 32 -k 288 -y 1 -x 1 -F 1\n\
                    conv --bogus 1\n\
                    conv -I 'NHWC\n\
                    conv -H 2 -y 3\n\
                    gemm -m 8 -k 8 -n 8\n";
        let results: Vec<(usize, Result<BenchCommand, ParseError>)> = parse_file(text, false)
            .iter()
            .map(|line| (line.number, line.parse()))
            .collect();
        assert_eq!(results.len(), 5);
        assert!(results[0].1.is_ok());
        let failed: Vec<(usize, String)> = results
            .iter()
            .filter_map(|(n, r)| r.as_ref().err().map(|e| (*n, e.reason.clone())))
            .collect();
        assert_eq!(failed.len(), 3);
        assert_eq!(failed[0], (3, "unknown flag `--bogus`".to_string()));
        assert_eq!(failed[1].0, 4);
        assert!(failed[1].1.contains("unbalanced quotes"));
        assert_eq!(failed[2].0, 5);
        assert!(failed[2].1.contains("impossible shape"));
        assert!(results[4].1.is_ok());
    }

    #[test]
    fn strip_prefixes_on_shell_words() {
        let argv: Vec<String> = ["./MIOpenDriver", "conv", "-n", "1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (repeat, rest) = strip_prefixes(argv);
        assert_eq!(repeat, None);
        assert_eq!(rest, ["conv", "-n", "1"]);
        // A number not followed by anything is still treated as a count.
        assert_eq!(strip_prefixes(vec!["4".to_string()]), (Some(4), vec![]));
    }
}
