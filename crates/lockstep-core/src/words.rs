//! Counted nouns in human output: "1 patch", "2 patches", never "1 patches"
//! or "patch(es)". Every command prints counts that are often 0 or 1 (one
//! test, one job, one kernel), so the number picks the form here, in one
//! place; the caller names both forms because English plurals are not
//! regular enough to guess ("entry", "entries"; "index", "indexes").

/// `n` and the noun in the number it needs: `count(1, "patch", "patches")`
/// is "1 patch", `count(0, ...)` "0 patches".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The last `n` non-empty lines of `text`, each cut to 300 characters:
/// what an error quotes of a tool's log.
pub fn last_lines(text: &str, n: usize) -> Vec<String> {
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.chars().take(300).collect())
        .collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_every_other_number_plural() {
        assert_eq!(count(1, "patch", "patches"), "1 patch");
        assert_eq!(count(0, "patch", "patches"), "0 patches");
        assert_eq!(count(2, "commit", "commits"), "2 commits");
        assert_eq!(count(1, "test was", "tests were"), "1 test was");
        assert_eq!(count(12, "entry", "entries"), "12 entries");
    }
}
