//! Counted nouns in human output: "1 patch", "2 patches", never "1 patches"
//! or "patch(es)".

/// `n` and the noun in the number it needs: `count(1, "patch", "patches")`
/// is "1 patch", `count(0, ...)` "0 patches".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_every_other_number_plural() {
        assert_eq!(count(1, "patch", "patches"), "1 patch");
        assert_eq!(count(0, "patch", "patches"), "0 patches");
        assert_eq!(count(2, "commit", "commits"), "2 commits");
    }
}
