//! Names that come from input (test, suite, config and target names) and the
//! file names lockstep derives from them.
//!
//! A name ends up in three places: a line of output, a marker `-m` selects,
//! and a file name (run and benchmark logs). So a name from a suite file must
//! be printable on one line and usable in a path, and a file name derived
//! from any test id stays under the 255 bytes a file name may have: a long
//! id is shortened and given a hash of the whole (short ids stay readable).

use std::path::Path;

use lockstep_core::Error;

/// The longest test or suite name accepted in a suite file.
pub const MAX_NAME: usize = 128;

/// The longest file stem derived from an id (well under the 255 bytes of a
/// file name, leaving room for an extension).
const MAX_STEM: usize = 96;

/// Refuses a `what` name (test, suite, config) from `origin` that cannot be
/// a file name and a line of output: empty or blank, white space at either
/// end, control characters, `/`, `\` or `..`, longer than [`MAX_NAME`].
pub fn check_name(name: &str, what: &str, origin: &Path) -> Result<(), Error> {
    let Some(why) = name_problem(name) else {
        return Ok(());
    };
    Err(Error::usage(format!(
        "invalid {what} name {name:?} in {}: {why}",
        origin.display()
    ))
    .hint("use letters, digits, `_`, `-` and `.`"))
}

fn name_problem(name: &str) -> Option<String> {
    if name.trim().is_empty() {
        Some("it is empty".into())
    } else if name != name.trim() {
        Some("it starts or ends with white space".into())
    } else if name.chars().any(char::is_control) {
        Some("it contains a control character (a newline, a tab ...)".into())
    } else if name.contains('/') || name.contains('\\') || name == "." || name.contains("..") {
        Some("it contains `/`, `\\` or `..` (names are used in file names)".into())
    } else if name.len() > MAX_NAME {
        Some(format!(
            "it is {} bytes long; at most {MAX_NAME}",
            name.len()
        ))
    } else {
        None
    }
}

/// A file stem for `id`: letters, digits, `-` and `.` kept, anything else
/// `_`; an id longer than [`MAX_STEM`] keeps its start and gets 16 hex
/// digits of its sha256, so different long ids never share a file.
pub fn file_stem(id: &str) -> String {
    let plain: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if plain.len() <= MAX_STEM {
        return plain;
    }
    let digest = lockstep_core::hash::sha256_bytes(id.as_bytes());
    let hash = digest.get(..16).unwrap_or(&digest);
    // `plain` is ASCII, so any byte offset is a character boundary.
    let head = plain.get(..MAX_STEM - 17).unwrap_or_default();
    format!("{head}-{hash}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn short_ids_stay_readable() {
        assert_eq!(file_stem("s/add [cpu]"), "s_add__cpu_");
    }

    #[test]
    fn long_ids_are_hashed_and_stay_distinct() {
        let a = format!("{} [cpu]", "n".repeat(400));
        let b = format!("{} [cpu-sync]", "n".repeat(400));
        assert!(file_stem(&a).len() <= MAX_STEM);
        assert_ne!(file_stem(&a), file_stem(&b));
        assert!(file_stem(&a).starts_with("nnnn"));
    }

    #[test]
    fn bad_names_say_why_and_where() {
        let origin = Path::new("x.suite.toml");
        for (name, why) in [
            ("", "empty"),
            (" \t", "empty"),
            (" a", "white space"),
            ("a\u{1b}[31m", "control character"),
            ("a\nb", "control character"),
            ("../x", "`..`"),
            ("a/b", "`/`"),
        ] {
            let err = match check_name(name, "test", origin) {
                Ok(()) => panic!("{name:?} accepted"),
                Err(err) => err,
            };
            assert!(err.message.contains(why), "{name:?}: {}", err.message);
            assert!(err.message.contains("x.suite.toml"), "{}", err.message);
            assert!(!err.render().contains('\u{1b}'));
        }
        assert!(check_name("add-1.f32_x", "test", origin).is_ok());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn file_stems_are_short_safe_file_names(id in any::<String>()) {
            let stem = file_stem(&id);
            prop_assert!(stem.len() <= MAX_STEM);
            prop_assert!(!stem.contains('/') && !stem.contains('\0'));
        }

        #[test]
        fn check_name_never_panics(name in any::<String>()) {
            let _ = check_name(&name, "test", Path::new("p.suite.toml"));
        }
    }
}
