use super::*;

const BZL: &str = r#"load("//third_party:repo.bzl", "tf_http_archive")

def repo(name):
    """Imports LLVM."""
    LLVM_COMMIT = "0123456789abcdef0123456789abcdef01234567"
    LLVM_SHA256 = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

    tf_http_archive(
        name = name,
        sha256 = LLVM_SHA256,
        strip_prefix = "llvm-project-{commit}".format(commit = LLVM_COMMIT),
    )
"#;

fn bzl_pin() -> Pin {
    Pin::from_spec(
        &PinSpec {
            file: "third_party/llvm/workspace.bzl".into(),
            pattern: Some(r#"LLVM_COMMIT = "([0-9a-f]{40})""#.into()),
            sha256: Some(ArchiveSpec {
                pattern: r#"LLVM_SHA256 = "([0-9a-f]{64})""#.into(),
                archive: "https://github.com/llvm/llvm-project/archive/{commit}.tar.gz".into(),
            }),
        },
        "[integrate] pin",
    )
    .unwrap()
}

#[test]
fn a_pattern_pin_is_read_and_rewritten_keeping_every_other_byte() {
    let pin = bzl_pin();
    assert_eq!(
        pin.parse(BZL).unwrap(),
        "0123456789abcdef0123456789abcdef01234567"
    );
    let commit = "f".repeat(40);
    let sum = "b".repeat(64);
    let new = pin.render(BZL, &commit, Some(&sum)).unwrap();
    let expected = BZL
        .replace("0123456789abcdef0123456789abcdef01234567", &commit)
        .replace(&"a".repeat(64), &sum);
    assert_eq!(new, expected);
    assert_eq!(pin.parse(&new).unwrap(), commit);
    assert_eq!(
        pin.archive_url(&commit).unwrap(),
        format!("https://github.com/llvm/llvm-project/archive/{commit}.tar.gz")
    );
}

#[test]
fn zero_or_two_matches_are_errors_naming_the_file() {
    let pin = bzl_pin();
    let none = pin.parse("nothing here").unwrap_err();
    assert!(
        none.message
            .contains("does not match third_party/llvm/workspace.bzl"),
        "{}",
        none.message
    );
    let twice = format!("{BZL}\n    LLVM_COMMIT = \"{}\"\n", "1".repeat(40));
    let err = pin.parse(&twice).unwrap_err();
    assert!(err.message.contains("more than once"), "{}", err.message);
    // Both places are named by line, so the reader can see which to drop.
    let last = twice.lines().count();
    let first = twice
        .lines()
        .position(|l| l.contains("LLVM_COMMIT = \""))
        .unwrap()
        + 1;
    assert!(
        err.message.contains(&format!("(lines {first} and {last})")),
        "{}",
        err.message
    );
    let err = pin
        .render(&twice, &"2".repeat(40), Some(&"3".repeat(64)))
        .unwrap_err();
    assert!(err.message.contains("more than once"), "{}", err.message);
}

#[test]
fn bad_specs_are_refused_before_anything_is_read() {
    let spec = |pattern: Option<&str>, archive: Option<(&str, &str)>| PinSpec {
        file: "w.bzl".into(),
        pattern: pattern.map(String::from),
        sha256: archive.map(|(p, a)| ArchiveSpec {
            pattern: p.into(),
            archive: a.into(),
        }),
    };
    let refused = |s: PinSpec| Pin::from_spec(&s, "[integrate] pin").unwrap_err().message;
    assert!(refused(spec(Some("no group"), None)).contains("has no group"));
    assert!(refused(spec(Some("(unclosed"), None)).contains("not a regular expression"));
    assert!(refused(spec(None, Some(("(x)", "https://h/{commit}")))).contains("needs `pattern`"));
    assert!(
        refused(spec(Some("(x)"), Some(("(y)", "https://h/a.tar.gz")))).contains("no {commit}")
    );
    assert!(refused(spec(
        Some("(x)"),
        Some(("(y)", "http://example.com/{commit}"))
    ))
    .contains("not a URL lockstep downloads"));
    let mut outside = spec(None, None);
    outside.file = "../x".into();
    assert!(refused(outside).contains("without `.` or `..`"));
}

#[test]
fn a_pin_file_is_one_line() {
    let pin = Pin::file("llvm.version", "[release] pin-files").unwrap();
    assert_eq!(pin.describe(), "the pin file llvm.version");
    assert_eq!(
        pin.parse(&format!("{}\n", "A".repeat(40))).unwrap(),
        "a".repeat(40)
    );
    assert!(pin.parse("xyz").is_err());
    assert_eq!(
        pin.render("old", &"c".repeat(40), None).unwrap(),
        format!("{}\n", "c".repeat(40))
    );
}

#[test]
fn a_checksum_group_that_is_not_a_checksum_is_refused_before_the_write() {
    let with_sum_pattern = |sum_pattern: &str| {
        Pin::from_spec(
            &PinSpec {
                file: "third_party/llvm/workspace.bzl".into(),
                pattern: Some(r#"LLVM_COMMIT = "([0-9a-f]{40})""#.into()),
                sha256: Some(ArchiveSpec {
                    pattern: sum_pattern.into(),
                    archive: "https://h/{commit}.tar.gz".into(),
                }),
            },
            "[integrate] pin",
        )
        .unwrap()
    };
    let (commit, sum) = ("f".repeat(40), "b".repeat(64));
    for (pattern, said) in [
        // The name, not the value.
        ("sha256 = (LLVM_SHA256)", "not a checksum"),
        // Part of the value.
        (r#"LLVM_SHA256 = "([0-9a-f]{8})"#, "not a checksum"),
        // More than the value.
        (r#"LLVM_SHA256 = ("[0-9a-f]{64}")"#, "not a checksum"),
    ] {
        let err = with_sum_pattern(pattern)
            .render(BZL, &commit, Some(&sum))
            .unwrap_err();
        assert_eq!(err.exit_code(), 2, "{pattern}");
        assert!(err.message.contains(said), "{pattern}: {}", err.render());
    }
    // A checksum that is not one (a damaged remembered value) is never written.
    let err = bzl_pin().render(BZL, &commit, Some("xyz")).unwrap_err();
    assert!(err.message.contains("not 64 hex digits"), "{}", err.message);
    // Nor is a commit that is not one.
    assert!(bzl_pin().render(BZL, "main", Some(&sum)).is_err());

    // A pattern that would not find the written value again (letters only,
    // and the new commit has digits): refused before the write.
    let letters = Pin::from_spec(
        &PinSpec {
            file: "p.txt".into(),
            pattern: Some("C=([a-f]{40})".into()),
            sha256: None,
        },
        "[integrate] pin",
    )
    .unwrap();
    let text = format!("C={}\n", "a".repeat(40));
    assert!(letters.render(&text, &"b".repeat(40), None).is_ok());
    let err = letters
        .render(&text, "0123456789abcdef0123456789abcdef01234567", None)
        .unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(
        err.message.contains("would not read back"),
        "{}",
        err.render()
    );

    // The file on disk is untouched by a refused write.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("third_party/llvm");
    std::fs::create_dir_all(&path).unwrap();
    std::fs::write(path.join("workspace.bzl"), BZL).unwrap();
    struct Fixed;
    impl Checksums for Fixed {
        fn sha256(&self, _: &str) -> Result<String, Error> {
            Ok("c".repeat(64))
        }
    }
    let err = with_sum_pattern("sha256 = (LLVM_SHA256)")
        .write(dir.path(), &commit, &Fixed)
        .unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert_eq!(
        std::fs::read_to_string(path.join("workspace.bzl")).unwrap(),
        BZL
    );
}

#[test]
fn a_pin_file_lockstep_cannot_read_is_named_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let pin = Pin::file("llvm.version", "[integrate] pin-file").unwrap();
    std::fs::write(
        dir.path().join("llvm.version"),
        vec![b'a'; (MAX_PIN_FILE + 1) as usize],
    )
    .unwrap();
    let err = pin.read_worktree(dir.path()).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(
        err.message.contains("larger than 4194304 bytes"),
        "{}",
        err.render()
    );
    std::fs::remove_file(dir.path().join("llvm.version")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("llvm.version")).unwrap();
    let err = pin.read_worktree(dir.path()).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(
        err.message.contains("symbolic link out of the repository"),
        "{}",
        err.render()
    );
}

struct Refused;
impl Checksums for Refused {
    fn sha256(&self, url: &str) -> Result<String, Error> {
        Err(Error::failed(format!("downloading {url} failed")))
    }
}

#[test]
fn a_failed_download_leaves_the_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("third_party/llvm");
    std::fs::create_dir_all(&path).unwrap();
    std::fs::write(path.join("workspace.bzl"), BZL).unwrap();
    let err = bzl_pin()
        .write(dir.path(), &"e".repeat(40), &Refused)
        .unwrap_err();
    assert!(err.message.contains("archive/eeee"), "{}", err.message);
    assert_eq!(
        std::fs::read_to_string(path.join("workspace.bzl")).unwrap(),
        BZL
    );
}

proptest::proptest! {
    /// Whatever the file and the patterns, reading and rendering never
    /// panic, and a render that succeeds reads back as the commit written.
    #[test]
    fn any_text_and_pattern_reads_without_panic(
        text in "\\PC{0,300}",
        pattern in "[a-zA-Z_ =\"()\\[\\]{}0-9*+?|.\\\\-]{0,40}",
    ) {
        let spec = PinSpec { file: "f".into(), pattern: Some(pattern), sha256: None };
        if let Ok(pin) = Pin::from_spec(&spec, "pin") {
            let _ = pin.parse(&text);
            let commit = "d".repeat(40);
            if let Ok(new) = pin.render(&text, &commit, None) {
                if pin.parse(&text).is_ok() {
                    // Rendering replaced the one match: the rest is kept.
                    proptest::prop_assert!(new.len() + 40 >= text.len());
                }
            }
        }
    }
}

mod pin_files {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_pin_text_never_panics(text in "(?s).{0,100}") {
            if let Ok(rev) = parse_pin_file("p", &text) {
                prop_assert_eq!(rev.len(), 40);
            }
        }
    }

    #[test]
    fn pins_are_one_full_revision() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(parse_pin_file("p", &format!("{sha}\n")).unwrap(), sha);
        for bad in [
            "",
            "abc",
            &format!("{sha}\n{sha}\n"),
            &format!("{sha}x"),
            "main\n",
        ] {
            assert!(parse_pin_file("p", bad).is_err(), "{bad}");
        }
    }
}
