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

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::miopen::{parse_argv, BenchCommand, ParseError};

/// One command line as raw text (a commands-file line, or the words of the
/// single-command form joined): split like a shell, its repeat count and
/// driver path stripped, parsed. The error names the line and why.
/// Panic-free on any input: the entry point for fuzzing MIOpen lines.
pub fn parse_line(text: &str) -> Result<BenchCommand, String> {
    let text = text.trim();
    split_command(text, false)
        .map_err(|reason| ParseError { reason })
        .and_then(|(_, argv)| parse_argv(&argv))
        .map_err(|e| format!("`{text}`: {}", e.reason))
}

/// Every command of a commands file given as raw bytes (`origin` is its
/// path: a `.tsv` splits at tabs), with its 1-based line number; a line's
/// error reads `ORIGIN:LINE: reason`. A file that is not UTF-8 is an error
/// naming it. Panic-free on any input: the entry point for fuzzing
/// commands files.
#[allow(clippy::type_complexity)]
pub fn parse_commands(
    bytes: &[u8],
    origin: &Path,
) -> Result<Vec<(usize, Result<BenchCommand, String>)>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        format!(
            "{}: not UTF-8 text (byte {}): a commands file holds one MIOpenDriver command per line",
            origin.display(),
            e.valid_up_to()
        )
    })?;
    let is_tsv = origin.extension().is_some_and(|e| e == "tsv");
    Ok(parse_file(text, is_tsv)
        .into_iter()
        .map(|line| {
            let parsed = line
                .parse()
                .map_err(|e| format!("{}:{}: {}", origin.display(), line.number, e.reason));
            (line.number, parsed)
        })
        .collect())
}

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

    #[test]
    fn entry_points_name_the_line() {
        let err = parse_line("  conv -u 0 ").unwrap_err();
        assert!(err.starts_with("`conv -u 0`: "), "{err}");
        assert!(err.contains("-u/--conv_stride_h"), "{err}");
        assert!(parse_line("7 ./MIOpenDriver gemm -m 4").is_ok());
        let origin = Path::new("batch.txt");
        let parsed = parse_commands(b"# c\nconv -n 1\n\ngemm -u 2\n", origin).unwrap();
        assert_eq!(parsed.len(), 2);
        assert!(parsed[0].1.is_ok());
        assert_eq!(parsed[1].0, 4);
        let err = parsed[1].1.as_ref().unwrap_err();
        assert!(
            err.starts_with("batch.txt:4: bad value for -u/--transA"),
            "{err}"
        );
        let err = parse_commands(b"conv\xff\n", origin).unwrap_err();
        assert!(err.contains("batch.txt: not UTF-8"), "{err}");
        let tsv = parse_commands(b"conv\t-n\t2\n", Path::new("b.tsv")).unwrap();
        assert!(tsv[0].1.is_ok());
    }
}

/// Property tests of the two text entry points: whatever the text, no
/// panic, and every error names its line.
#[cfg(test)]
pub(crate) mod props {
    use super::*;
    use crate::miopen::{COMMON_FLAGS, CONV_FLAGS, GEMM_FLAGS, LAYERNORM_FLAGS};
    use proptest::prelude::*;

    /// Valid lines of every op and form, the seeds the mutations start from.
    pub(crate) const VALID: &[&str] = &[
        "convbfp16 -n 16 -c 96 -H 48 -W 32 -k 288 -y 1 -x 1 -F 1",
        "conv -n 2 -c 4 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 2 -F 2",
        "convfp16 -m trans -n 1 -c 4 -H 5 -W 5 -k 8 -y 3 -x 3 -u 2 -v 2 -p 1 -q 1 -Y 1 -g 2 -F 0",
        "conv -_ 3 -n 1 -c 4 -! 5 -H 6 -W 7 -k 4 -@ 3 -y 3 -x 3 -# 2 -$ 1 -F 4 -I NDHWC -f NDHWC -O NDHWC",
        "conv -_ 1 -n 2 -c 4 -W 10 -k 6 -x 3 -v 2 -q 1 -g 2 -F 1 -I NWC -f NWC -O NWC",
        "convint8 -n 1 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -b 1 -F 1 -z same",
        "gemm -m 64 -k 32 -n 16 -u 1 -v 0 -F 2",
        "gemmfp16 --a_h 64 --a_w 32 --b_w 16 --transB 1 --forw 3 -i 5 -t 0 -V 1",
        "layernormbfp16 -X 32x4x16x16 -e 1e-6 -m 1 -o 3 -F 3",
        "layernorm -X 2x8 -o 1 -F 2",
    ];

    /// Values that probe each numeric check: zero, negatives, the 32-bit
    /// edges and past them, non-numbers.
    const VALUES: &[&str] = &[
        "0",
        "1",
        "2",
        "3",
        "-1",
        "7",
        "1000000",
        "2147483647",
        "2147483648",
        "-2147483648",
        "-2147483649",
        "18446744073709551616",
        "99999999999999999999999",
        "1e30",
        "nan",
        "inf",
        "",
        " ",
        "abc",
        "0x10",
        "+5",
        "1.5",
        "NHWC",
        "NCDHW",
        "trans",
        "same",
        "2x3x4x5",
        "0x4",
        "1x2x3x4x5x6x7x8x9",
        "-0",
        "1e-300",
    ];

    /// Every flag of every table, short and long.
    fn flags() -> Vec<String> {
        [CONV_FLAGS, GEMM_FLAGS, LAYERNORM_FLAGS, COMMON_FLAGS]
            .iter()
            .flat_map(|t| t.iter())
            .flat_map(|s| [format!("-{}", s.short), format!("--{}", s.long)])
            .collect()
    }

    /// One edit of a line's words.
    #[derive(Debug, Clone)]
    pub(crate) enum Edit {
        /// Replace word `at` (mod len) with a probe value or random number.
        Value(usize, String),
        /// Insert a flag and a value at `at`.
        Flag(usize, usize, String),
        /// Drop word `at`.
        Drop(usize),
    }

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            proptest::sample::select(VALUES).prop_map(str::to_string),
            any::<i64>().prop_map(|v| v.to_string()),
            (1u64..=64).prop_map(|v| v.to_string()),
        ]
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            (any::<usize>(), value()).prop_map(|(at, v)| Edit::Value(at, v)),
            (any::<usize>(), any::<usize>(), value()).prop_map(|(at, f, v)| Edit::Flag(at, f, v)),
            any::<usize>().prop_map(Edit::Drop),
        ]
    }

    /// A valid line with a few edits applied.
    pub(crate) fn mutated_line() -> impl Strategy<Value = String> {
        (
            proptest::sample::select(VALID),
            proptest::collection::vec(edit(), 0..6),
        )
            .prop_map(|(line, edits)| {
                let flags = flags();
                let mut words: Vec<String> = line.split(' ').map(str::to_string).collect();
                for edit in edits {
                    let len = words.len().max(1);
                    match edit {
                        // The command word stays: values and flags change.
                        Edit::Value(at, v) => {
                            let at = 1 + at % len;
                            if at < words.len() {
                                words[at] = v;
                            }
                        }
                        Edit::Flag(at, f, v) => {
                            let at = (1 + at % len).min(words.len());
                            words.insert(at, v);
                            words.insert(at, flags[f % flags.len()].clone());
                        }
                        Edit::Drop(at) => {
                            if words.len() > 1 {
                                words.remove(1 + at % (words.len() - 1));
                            }
                        }
                    }
                }
                words
                    .iter()
                    .map(|w| {
                        if w.is_empty() || w.contains(' ') {
                            format!("'{w}'")
                        } else {
                            w.clone()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
    }

    /// Text made of the characters command lines are made of, and any.
    fn line_like() -> impl Strategy<Value = String> {
        prop_oneof!["[-a-zA-Z0-9_!@#$%^ '\"\\\t=x.]{0,80}", any::<String>(),]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_text_parses_or_names_the_line(text in line_like()) {
            if let Err(e) = parse_line(&text) {
                let prefix = format!("`{}`: ", text.trim());
                prop_assert!(e.starts_with(&prefix), "{e}");
                prop_assert!(e.len() > prefix.len(), "{e}");
            }
        }

        #[test]
        fn mutated_lines_parse_or_name_the_line(line in mutated_line()) {
            if let Err(e) = parse_line(&line) {
                prop_assert!(e.starts_with(&format!("`{line}`: ")), "{e}");
            }
        }

        #[test]
        fn any_commands_file_gives_each_line_or_its_error(
            lines in proptest::collection::vec(prop_oneof![mutated_line(), line_like()], 0..12),
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let origin = Path::new("fuzz.txt");
            let text = lines.join("\n");
            let parsed = parse_commands(text.as_bytes(), origin).unwrap();
            let mut last = 0;
            for (number, result) in &parsed {
                prop_assert!(*number > last && *number <= lines.len());
                last = *number;
                if let Err(e) = result {
                    prop_assert!(e.starts_with(&format!("fuzz.txt:{number}: ")), "{e}");
                }
            }
            for origin in [Path::new("raw.txt"), Path::new("raw.tsv")] {
                match parse_commands(&bytes, origin) {
                    Ok(parsed) => {
                        for (number, result) in parsed {
                            if let Err(e) = result {
                                let prefix = format!("{}:{number}: ", origin.display());
                                prop_assert!(e.starts_with(&prefix), "{e}");
                            }
                        }
                    }
                    Err(e) => {
                        let prefix = format!("{}: ", origin.display());
                        prop_assert!(e.starts_with(&prefix), "{e}");
                    }
                }
            }
        }
    }
}
