//! Files lockstep commits into a downstream repository that more than one
//! engine reads: the integrate writes them, releases check them.

/// The stable-release gate: present (committed) while the project is not ok
/// for a stable release, one reason per line (`lockstep integrate mark
/// --unstable REASON`); `release promote` refuses a candidate whose source
/// commit holds it.
pub const UNSTABLE_MARK: &str = ".lockstep/unstable";

/// The reasons of a mark file's text: its non-empty lines, trimmed.
pub fn reasons(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| crate::error::printable_line(l).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn reasons_are_the_non_empty_lines() {
        assert_eq!(
            super::reasons("# header\n\nreverts abc\n  tests disabled  \n"),
            vec!["reverts abc", "tests disabled"]
        );
    }
}
