//! Which lines of a build or test log report an error.
//!
//! A halt report, a failed test's console lines and a webhook's attachment
//! all show the few lines of a long log that say what went wrong. Tools put
//! them in different places: gcc and clang in the middle of a line
//! (`file.c:3:13: error: ...`), rustc and many scripts at its start
//! (`error[E0425]: ...`, `error: ...`), CMake as `CMake Error at ...`, ninja
//! as `FAILED: ...`, Python as a traceback ending in `ValueError: ...`,
//! pytest as `E   assert ...` and `FAILED test.py::name`. A substring such
//! as `" error: "` finds the first kind only, so the default recognizer is
//! a set of patterns, one per shape, each checked against the real output
//! of its tool (`tests/fixtures/errors/`).

use std::sync::LazyLock;

use regex::RegexSet;

/// The shapes of error lines, with the tools that print them.
const SHAPES: &[&str] = &[
    // gcc, clang, rustc, ld's collect2, ninja, clang's driver, scripts:
    // `file:1:2: error: `, `error[E0425]: `, `error: `, `fatal error: `,
    // `Error: ` at the start of a line or after a `:` or a space.
    r"(^|[\s:])(fatal )?[Ee]rror(\[[A-Z]?\d+\])?:(\s|$)",
    // ninja's failed edge, pytest's short summary, many CI scripts.
    r"^(FAILED|ERROR)([: ]|$)",
    // CMake's errors and its configure summary.
    r"^CMake Error",
    r"^-- Configuring incomplete, errors occurred",
    // ninja and make giving up.
    r"^ninja: build stopped",
    r"^g?make(\[\d+\])?: \*\*\* ",
    // The linker.
    r"undefined reference to ",
    // Python: the traceback's start and the exception that ends it
    // (`ValueError: bad`, `module.CustomError`), pytest's location line
    // (`test_x.py:5: AssertionError`) and its `E   ` lines.
    r"^Traceback \(most recent call last\):",
    r"^[A-Za-z_][\w.]*(Error|Exception)(: |$)",
    r":\d+: [\w.]*(Error|Exception)$",
    r"^E {2,}\S",
    // C's assert() and LLVM's assertions.
    r"Assertion .*failed",
];

static DEFAULT: LazyLock<Option<RegexSet>> = LazyLock::new(|| RegexSet::new(SHAPES).ok());

/// Whether `line` reports an error, by the default shapes.
pub fn is_error_line(line: &str) -> bool {
    DEFAULT.as_ref().is_some_and(|set| set.is_match(line))
}

/// How error lines are told apart: the default shapes, or the substrings a
/// user configured (each also matching at the start of a line when it
/// begins with a space, so `" error: "` finds `error: ...` too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorLines {
    Default,
    Substrings(Vec<String>),
}

impl ErrorLines {
    pub fn matches(&self, line: &str) -> bool {
        match self {
            ErrorLines::Default => is_error_line(line),
            ErrorLines::Substrings(patterns) => patterns.iter().any(|p| {
                line.contains(p.as_str())
                    || p.strip_prefix(' ')
                        .is_some_and(|rest| !rest.is_empty() && line.starts_with(rest))
            }),
        }
    }

    /// The error lines of `log`: at most `max` of them, then `... and N
    /// more`; and how many there were in all.
    pub fn summary(&self, log: &str, max: usize) -> (Vec<String>, usize) {
        let matching: Vec<&str> = log.lines().filter(|l| self.matches(l)).collect();
        let total = matching.len();
        let mut lines: Vec<String> = matching.into_iter().take(max).map(str::to_string).collect();
        if total > max {
            lines.push(format!("... and {} more", total - max));
        }
        (lines, total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error lines of a fixture of real tool output.
    fn found(name: &str) -> Vec<String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/errors")
            .join(name);
        let text = std::fs::read_to_string(&path).expect("fixture");
        ErrorLines::Default.summary(&text, 100).0
    }

    #[test]
    fn gcc_errors_in_the_middle_of_a_line_not_its_notes() {
        assert_eq!(
            found("gcc.log"),
            [
                "bad.c:3:13: error: ‘undefined_name’ undeclared (first use in this function)",
                "bad.c:4:22: error: expected ‘;’ before ‘return’",
            ]
        );
    }

    #[test]
    fn rustc_errors_at_the_start_of_a_line() {
        assert_eq!(
            found("rustc.log"),
            [
                "error[E0425]: cannot find value `y` in this scope",
                "error[E0308]: mismatched types",
                "error: aborting due to 2 previous errors",
            ]
        );
    }

    #[test]
    fn cmake_errors() {
        assert_eq!(
            found("cmake.log"),
            [
                "CMake Error at CMakeLists.txt:3 (find_package):",
                "-- Configuring incomplete, errors occurred!",
            ]
        );
    }

    #[test]
    fn ninja_failed_edges_and_the_compiler_under_them() {
        let lines = found("ninja.log");
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert!(lines[0].starts_with("FAILED: [code=1] CMakeFiles/bad.dir"));
        assert!(
            lines[1].ends_with("error: ‘undefined_name’ undeclared (first use in this function)")
        );
        assert_eq!(lines[3], "ninja: build stopped: subcommand failed.");
    }

    #[test]
    fn python_tracebacks_and_their_exception() {
        assert_eq!(
            found("python.log"),
            [
                "Traceback (most recent call last):",
                "FileNotFoundError: [Errno 2] No such file or directory: 'missing.json'",
            ]
        );
    }

    #[test]
    fn pytest_failures() {
        assert_eq!(
            found("pytest.log"),
            [
                "E       assert -1 == 3",
                "E        +  where -1 = add(1, 2)",
                "test_x.py:5: AssertionError",
                "E       ValueError: bad input: 42",
                "test_x.py:11: ValueError",
                "FAILED test_x.py::test_add - assert -1 == 3",
                "FAILED test_x.py::test_raises - ValueError: bad input: 42",
            ]
        );
    }

    #[test]
    fn make_and_the_linker() {
        assert_eq!(found("make.log"), ["make: *** [Makefile:2: all] Error 1"]);
        assert_eq!(
            found("ld.log"),
            [
                "ld.c:(.text+0xa): undefined reference to `f'",
                "collect2: error: ld returned 1 exit status",
            ]
        );
    }

    #[test]
    fn ordinary_lines_are_not_errors() {
        for line in [
            "-- Detecting C compiler ABI info - done",
            "[1/2] Building C object CMakeFiles/bad.dir/bad.c.o",
            "compiling with -Werror=format",
            "0 errors, 2 warnings",
            "bad.c:3:13: note: each undeclared identifier is reported only once",
            "warning: unused variable `x`",
            "test_x.py::test_ok PASSED",
            "the error_count is 0",
            "ErrorLines is a type",
        ] {
            assert!(!is_error_line(line), "{line}");
        }
    }

    #[test]
    fn configured_substrings_also_match_at_the_start_of_a_line() {
        let lines = ErrorLines::Substrings(vec![" error: ".into(), "FAILED: ".into()]);
        assert!(lines.matches("x.c:1:2: error: bad"));
        assert!(lines.matches("error: bad"));
        assert!(lines.matches("FAILED: x.o"));
        assert!(!lines.matches("errors: none"));
        assert!(!lines.matches("CMake Error at x"));
    }

    #[test]
    fn the_summary_is_bounded() {
        let log: String = (0..30).map(|i| format!("error: e{i}\nnoise\n")).collect();
        let (lines, total) = ErrorLines::Default.summary(&log, 20);
        assert_eq!(total, 30);
        assert_eq!(lines.len(), 21);
        assert_eq!(lines[20], "... and 10 more");
    }
}
