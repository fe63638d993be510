//! The lockstep.toml text of a [`Survey`]: every setting found written as
//! a real setting (even where it equals a default, so the file says what
//! lockstep will do), each with a comment saying where it came from, and
//! what was not found as commented-out lines to fill in.

use std::fmt::Write as _;

use lockstep_core::Error;

use crate::survey::{FoundPin, Survey};

/// TOML's form of a string: the TOML serializer's (quoted and escaped, a
/// literal string where that reads better), never quotes formatted here.
fn quoted(text: &str) -> String {
    lockstep_core::config::toml_string(text)
}

/// A comment line: `# ` and `text`, where a character that would end the
/// comment or hide text ([`lockstep_core::error::hides_text`]: a newline,
/// CR, ESC, a bidi control) is spelled out instead. The survey refuses
/// names holding one before anything is rendered; this keeps the file one
/// comment per line whatever it is handed.
fn comment(out: &mut String, text: &str) {
    let _ = writeln!(out, "# {}", lockstep_core::error::spelled(text));
}

/// The whole file; `iree` is the IREE release `[toolchain] iree` pins (the
/// caller's default: lockstep-iree's). A survey holding a name with a
/// control character or a bidi control is refused
/// ([`crate::survey::check_names`], exit 2), so the text holds none but
/// its newlines: it reads the same in an editor, printed by `init
/// --dry-run` (whose terminal escaping then has nothing to escape) and
/// written by `init`, byte for byte.
pub fn render(survey: &Survey, iree: &str) -> Result<String, Error> {
    crate::survey::check_names(survey)?;
    if iree.chars().any(lockstep_core::error::hides_text) {
        return Err(Error::usage(format!(
            "the IREE release `{}` holds a control character",
            lockstep_core::error::spelled(iree)
        )));
    }
    let text = render_checked(survey, iree)?;
    if let Some(c) = text
        .chars()
        .find(|&c| c != '\n' && lockstep_core::error::hides_text(c))
    {
        return Err(Error::failed(format!(
            "lockstep init made a file holding U+{:04X} (a bug: please report it)",
            u32::from(c)
        ))
        .hint("nothing was written"));
    }
    Ok(text)
}

fn render_checked(survey: &Survey, iree: &str) -> Result<String, Error> {
    let mut out = String::new();
    out.push_str(
        "# lockstep.toml, written by `lockstep init` from what this repository holds.\n\
         # Each setting says where it came from; check them, then see\n\
         # docs/getting-started.md for the first integrate, test run, build and workflow.\n",
    );
    for note in &survey.notes {
        comment(&mut out, &format!("note: {note}"));
    }
    integrate(&mut out, survey.pin.as_ref())?;
    toolchain(&mut out, iree);
    test(&mut out, survey);
    packages(&mut out, survey);
    release(&mut out, survey);
    Ok(out)
}

/// `[release]`, commented: what releasing needs (a version base) is the
/// project's to say, so nothing is set; the defaults are shown where a
/// person will look for them, with the pin file a release records.
fn release(out: &mut String, survey: &Survey) {
    out.push_str(
        "\n# Releases (docs/release.md): snapshot versions, a PEP 503/691 index, promotion.\n\
         # Uncomment and set version-base to cut the first: `lockstep release cut`, then\n\
         # `release publish` and `release serve` (docs/getting-started.md). Shown: the defaults.\n\
         # [release]\n\
         # version-base = \"0.1.0\"              # the release being prepared (or version-file = \"...\")\n\
         # snapshot = \"{base}rc{date}{n:02}\"    # each snapshot's version\n\
         # tag = \"{name}-{version}\"             # its git tag\n\
         # index = \"release/index\"              # the release store and its static index\n\
         # hosting = \"pages\"                    # or \"github-releases\"\n",
    );
    if let Some(path) = survey.pin.as_ref().and_then(|p| p.pin_file.as_deref()) {
        let _ = writeln!(
            out,
            "# pin-files = {}            # revisions each release records",
            list(&[path.to_string()])
        );
    }
}

fn integrate(out: &mut String, pin: Option<&FoundPin>) -> Result<(), Error> {
    out.push_str("\n[integrate]\n");
    match pin {
        None => {
            out.push_str(
                "# No upstream pin found (no submodule or file that looks like an LLVM pin).\n\
                 # Name yours (docs/integrate.md):\n\
                 # submodule = \"third_party/llvm-project\"\n\
                 # pin-file = \"build_tools/llvm_version.txt\"\n\
                 # upstream-url = \"https://github.com/llvm/llvm-project.git\"\n",
            );
        }
        Some(found) => {
            comment(out, &found.why);
            // The pin's one configuration form, its values the serializer's.
            out.push_str(&found.pin()?.settings_toml());
            comment(out, &found.url_note);
            let _ = writeln!(out, "upstream-url = {}", quoted(&found.upstream_url));
        }
    }
    if pin.is_some() {
        out.push_str(
            "# The check each candidate pin must pass (exit 0 good, 125 skip, else bad):\n\
             # smoke = [\"cmake\", \"--build\", \"build\", \"--target\", \"check-all\"]\n",
        );
    }
    Ok(())
}

fn toolchain(out: &mut String, iree: &str) {
    out.push_str("\n[toolchain]\n");
    let _ = writeln!(
        out,
        "# The IREE release `lockstep test` and the test jobs install from PyPI (lockstep's default, pinned here)."
    );
    let _ = writeln!(out, "iree = {}", quoted(iree));
}

fn test(out: &mut String, survey: &Survey) {
    out.push_str("\n[test]\n");
    if survey.test_paths.is_empty() {
        out.push_str(
            "# No suites found (no *.suite.toml, no iree-test-suites cases). Add one\n\
             # (docs/test.md) and name its directory:\n\
             # paths = [\"suites\"]\n",
        );
    } else {
        let _ = writeln!(
            out,
            "# Directories with *.suite.toml files or iree-test-suites cases."
        );
        let _ = writeln!(out, "paths = {}", list(&survey.test_paths));
    }
    if !survey.suite_configs.is_empty() {
        let _ = writeln!(
            out,
            "# iree-test-suites configs (config_name and iree_compile_flags)."
        );
        let _ = writeln!(out, "suite-configs = {}", list(&survey.suite_configs));
    }
    for lit in &survey.lit_configs {
        let dir = lit.rsplit_once('/').map(|(d, _)| d).unwrap_or(".");
        comment(
            out,
            &format!(
                "Found a lit suite at {lit}: add {} to paths to run it with lit",
                quoted(dir)
            ),
        );
        comment(
            out,
            "(docs/test.md, \"lit suites\"; its config must load without a build's lit.site.cfg.py).",
        );
    }
    if !survey.pytest_paths.is_empty() {
        out.push_str(
            "
[[test.pytest]]
",
        );
        comment(
            out,
            "pytest tests found (test_*.py): run against the wheels `lockstep pkg build` makes, else the project's .venv",
        );
        comment(
            out,
            "(docs/test.md, \"pytest suites\"). Add what the tests import beyond your packages to requirements.",
        );
        out.push_str("name = \"pytest\"\n");
        let _ = writeln!(out, "paths = {}", list(&survey.pytest_paths));
        out.push_str("requirements = [\"pytest\"]\n");
    }
}

fn packages(out: &mut String, survey: &Survey) {
    if survey.packages.is_empty() {
        out.push_str(
            "\n# No Python packages found (no pyproject.toml or setup.py outside tests and\n\
             # examples). To build wheels (docs/pkg.md):\n\
             # [[pkg.package]]\n\
             # name = \"my-compiler\"\n\
             # source = \"python\"\n",
        );
        return;
    }
    for package in &survey.packages {
        out.push_str("\n[[pkg.package]]\n");
        comment(out, &format!("Named by {}.", package.named_by));
        let _ = writeln!(out, "name = {}", quoted(&package.name));
        let _ = writeln!(out, "source = {}", quoted(&package.source));
    }
}

/// A TOML array of strings, as the serializer writes it.
fn list(items: &[String]) -> String {
    toml::Value::Array(items.iter().cloned().map(toml::Value::String).collect()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::survey::FoundPackage;
    use lockstep_core::error::hides_text;

    fn parsed(text: &str) -> toml::Table {
        toml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn an_empty_survey_says_what_to_fill_in() {
        let text = render(&Survey::default(), "3.13.0").unwrap();
        let table = parsed(&text);
        assert_eq!(table["toolchain"]["iree"].as_str(), Some("3.13.0"));
        assert!(table["integrate"].as_table().unwrap().is_empty());
        assert!(text.contains("# submodule = "));
        // [release] is shown, commented: nothing is set for it.
        assert!(text.contains("# [release]\n# version-base = "), "{text}");
        assert!(table.get("release").is_none());
        assert!(text.contains("# [[pkg.package]]"));
    }

    /// A directory named to write settings of its own (a newline, then a
    /// table) is refused, as is every other control or bidi character, in
    /// every field that reaches the file: values and comments alike.
    #[test]
    fn names_with_control_characters_are_refused_wherever_they_would_go() {
        let evil = "suites\n[[integrate.verdicts]]\nmatch = \"\"\nverdict = \"good\"";
        for name in [
            evil,
            "a\u{1b}[31mred",
            "cr\rhere",
            "c1\u{85}",
            "rtl\u{202e}txt.py",
            "ls\u{2028}x",
        ] {
            let surveys = [
                Survey {
                    test_paths: vec![name.into()],
                    ..Survey::default()
                },
                Survey {
                    suite_configs: vec![name.into()],
                    ..Survey::default()
                },
                Survey {
                    lit_configs: vec![format!("{name}/lit.cfg.py")],
                    ..Survey::default()
                },
                Survey {
                    pin: Some(FoundPin::file(name.into())),
                    ..Survey::default()
                },
                Survey {
                    pin: Some(FoundPin::submodule("llvm".into(), Some(name.into()))),
                    ..Survey::default()
                },
                Survey {
                    packages: vec![FoundPackage {
                        name: "p".into(),
                        source: name.into(),
                        named_by: "x".into(),
                    }],
                    ..Survey::default()
                },
            ];
            for survey in surveys {
                let err = render(&survey, "3.13.0").unwrap_err();
                assert_eq!(err.exit_code(), 2, "{}", err.render());
                assert!(
                    err.message.contains(&lockstep_core::error::spelled(name)),
                    "{}",
                    err.message
                );
                assert!(!err.message.chars().any(hides_text), "{:?}", err.message);
                assert!(err
                    .hint
                    .as_deref()
                    .unwrap_or_default()
                    .contains("nothing was written"));
            }
        }
    }

    /// A name in the survey: plain Unicode, or with one character that
    /// changes how text reads.
    fn name() -> impl proptest::strategy::Strategy<Value = String> {
        proptest::prop_oneof![
            4 => "\\PC{0,40}",
            1 => "\\PC{0,10}[\n\r\t\x00\x1b\x7f\u{85}\u{9b}\u{202e}\u{2066}\u{200f}\u{2028}]\\PC{0,10}",
        ]
    }

    proptest::proptest! {
        /// Whatever the names and paths found (quotes, backslashes, any
        /// Unicode), the file parses, holds them unchanged, and has nothing
        /// a terminal would escape (`init --dry-run` prints it as written);
        /// a name with a control or bidi character is refused (exit 2).
        #[test]
        fn any_names_and_paths_round_trip_or_are_refused(
            name in name(),
            source in name(),
            path in "\\PC{1,40}",
            pattern in "[^\\n]{1,40}",
            url in proptest::option::of(name()),
            test_path in name(),
            lit in name(),
        ) {
            let survey = Survey {
                pin: Some(FoundPin::submodule(path.clone(), url.clone())),
                packages: vec![FoundPackage { name: name.clone(), source: source.clone(), named_by: "x".into() }],
                test_paths: vec![test_path.clone()],
                lit_configs: vec![format!("{lit}/lit.cfg.py")],
                ..Survey::default()
            };
            let hidden = [&name, &source, &path, &test_path, &lit]
                .into_iter()
                .chain(url.as_ref())
                .any(|n| n.chars().any(hides_text));
            match render(&survey, "3.13.0") {
                // Refused: a name that hides text, or a pin lockstep would not
                // read back (a path starting with `-`, `..`, empty): init never
                // writes a file lockstep then refuses.
                Err(e) => proptest::prop_assert!(
                    e.exit_code() == 2 && (hidden || e.message.contains("[integrate]")),
                    "{}", e.render()
                ),
                Ok(text) => {
                    proptest::prop_assert!(!hidden);
                    proptest::prop_assert_eq!(lockstep_core::error::printable(&text), text.as_str());
                    let table = parsed(&text);
                    proptest::prop_assert_eq!(table["integrate"]["submodule"].as_str(), Some(path.as_str()));
                    if let Some(url) = &url {
                        proptest::prop_assert_eq!(table["integrate"]["upstream-url"].as_str(), Some(url.as_str()));
                    }
                    let package = &table["pkg"]["package"][0];
                    proptest::prop_assert_eq!(package["name"].as_str(), Some(name.as_str()));
                    proptest::prop_assert_eq!(package["source"].as_str(), Some(source.as_str()));
                    proptest::prop_assert_eq!(table["test"]["paths"][0].as_str(), Some(test_path.as_str()));
                    proptest::prop_assert_eq!(table["test"].as_table().map(|t| t.len()), Some(1));
                }
            }
            let with_pattern = Survey {
                pin: Some(FoundPin::pattern(path.clone(), pattern.clone(), Some(pattern.clone()))),
                ..Survey::default()
            };
            match render(&with_pattern, "3.13.0") {
                // Refused: a name that hides text, or a pattern the pin could
                // not read back (not a regular expression with a group).
                Err(e) => proptest::prop_assert!(
                    pattern.chars().chain(path.chars()).any(hides_text) || e.message.contains("pattern") || e.message.contains("[integrate] pin"),
                    "{}", e.render()
                ),
                Ok(text) => {
                    let table = parsed(&text);
                    proptest::prop_assert_eq!(table["integrate"]["pin"]["pattern"].as_str(), Some(pattern.as_str()));
                    proptest::prop_assert_eq!(table["integrate"]["pin"]["sha256"]["pattern"].as_str(), Some(pattern.as_str()));
                }
            }
        }
    }
}
