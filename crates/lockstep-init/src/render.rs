//! The lockstep.toml text of a [`Survey`]: every setting found written as
//! a real setting (even where it equals a default, so the file says what
//! lockstep will do), each with a comment saying where it came from, and
//! what was not found as commented-out lines to fill in.

use std::fmt::Write as _;

use crate::survey::{FoundPin, Survey};

/// The upstream URL a pin that looks like LLVM's is assumed to follow.
const LLVM_URL: &str = "https://github.com/llvm/llvm-project.git";

/// TOML's form of a string (quoted and escaped).
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// A literal string when the text allows one (patterns read better
/// without doubled backslashes), else a quoted one.
fn literal(text: &str) -> String {
    // A literal string holds no quote and no control character.
    if text.contains('\'') || text.chars().any(char::is_control) {
        quoted(text)
    } else {
        format!("'{text}'")
    }
}

/// The whole file; `iree` is the IREE release `[toolchain] iree` pins (the
/// caller's default: lockstep-iree's).
pub fn render(survey: &Survey, iree: &str) -> String {
    let mut out = String::new();
    out.push_str(
        "# lockstep.toml, written by `lockstep init` from what this repository holds.\n\
         # Each setting says where it came from; check them, then see\n\
         # docs/getting-started.md for the first integrate, test run, build and workflow.\n",
    );
    for note in &survey.notes {
        let _ = writeln!(out, "# note: {note}");
    }
    integrate(&mut out, survey.pin.as_ref());
    toolchain(&mut out, iree);
    test(&mut out, survey);
    packages(&mut out, survey);
    out
}

fn integrate(out: &mut String, pin: Option<&FoundPin>) {
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
        Some(FoundPin::Submodule { path, url }) => {
            let _ = writeln!(out, "# The submodule in .gitmodules that looks like LLVM.");
            let _ = writeln!(out, "submodule = {}", quoted(path));
            match url {
                Some(url) => {
                    let _ = writeln!(
                        out,
                        "# Its URL in .gitmodules; when that is your fork, put the upstream's here."
                    );
                    let _ = writeln!(out, "upstream-url = {}", quoted(url));
                }
                None => {
                    let _ = writeln!(out, "# .gitmodules gives no URL: the upstream's.");
                    let _ = writeln!(out, "upstream-url = {}", quoted(LLVM_URL));
                }
            }
        }
        Some(FoundPin::File { path }) => {
            let _ = writeln!(out, "# A file holding one 40-hex revision, named for LLVM.");
            let _ = writeln!(out, "pin-file = {}", quoted(path));
            let _ = writeln!(
                out,
                "# Guessed from the file's name: change it if you pin another upstream."
            );
            let _ = writeln!(out, "upstream-url = {}", quoted(LLVM_URL));
        }
        Some(FoundPin::Pattern {
            path,
            pattern,
            sha256_pattern,
        }) => {
            let _ = writeln!(
                out,
                "# The revision inside {path}{}.",
                if sha256_pattern.is_some() {
                    ", with the sha256 of LLVM's source archive beside it"
                } else {
                    ""
                }
            );
            let mut fields = vec![
                format!("file = {}", quoted(path)),
                format!("pattern = {}", literal(pattern)),
            ];
            if let Some(sum) = sha256_pattern {
                fields.push(format!(
                    "sha256 = {{ pattern = {}, archive = {} }}",
                    literal(sum),
                    quoted("https://github.com/llvm/llvm-project/archive/{commit}.tar.gz")
                ));
            }
            let _ = writeln!(out, "pin = {{ {} }}", fields.join(", "));
            let _ = writeln!(
                out,
                "# Guessed from the variable's name: change it if you pin another upstream."
            );
            let _ = writeln!(out, "upstream-url = {}", quoted(LLVM_URL));
        }
    }
    if pin.is_some() {
        out.push_str(
            "# The check each candidate pin must pass (exit 0 good, 125 skip, else bad):\n\
             # smoke = [\"cmake\", \"--build\", \"build\", \"--target\", \"check-all\"]\n",
        );
    }
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
        let _ = writeln!(out, "paths = [{}]", list(&survey.test_paths));
    }
    if !survey.suite_configs.is_empty() {
        let _ = writeln!(
            out,
            "# iree-test-suites configs (config_name and iree_compile_flags)."
        );
        let _ = writeln!(out, "suite-configs = [{}]", list(&survey.suite_configs));
    }
    for lit in &survey.lit_configs {
        let dir = lit.rsplit_once('/').map(|(d, _)| d).unwrap_or(".");
        let _ = writeln!(
            out,
            "# Found a lit suite at {lit}: add \"{dir}\" to paths to run it with lit\n             # (docs/test.md, \"lit suites\"; its config must load without a build's lit.site.cfg.py)."
        );
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
        let _ = writeln!(out, "# Named by {}.", package.named_by);
        let _ = writeln!(out, "name = {}", quoted(&package.name));
        let _ = writeln!(out, "source = {}", quoted(&package.source));
    }
}

fn list(items: &[String]) -> String {
    items
        .iter()
        .map(|i| quoted(i))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::survey::FoundPackage;

    fn parsed(text: &str) -> toml::Table {
        toml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn an_empty_survey_says_what_to_fill_in() {
        let text = render(&Survey::default(), "3.13.0");
        let table = parsed(&text);
        assert_eq!(table["toolchain"]["iree"].as_str(), Some("3.13.0"));
        assert!(table["integrate"].as_table().unwrap().is_empty());
        assert!(text.contains("# submodule = "));
        assert!(text.contains("# [[pkg.package]]"));
    }

    proptest::proptest! {
        /// Whatever the names and paths found (quotes, backslashes, newlines,
        /// any Unicode), the file parses and holds them unchanged.
        #[test]
        fn any_names_and_paths_round_trip(
            name in "\\PC{0,40}",
            source in "\\PC{0,40}",
            path in "\\PC{1,40}",
            pattern in "[^\\n]{1,40}",
            url in proptest::option::of("\\PC{0,40}"),
            test_path in "\\PC{0,40}",
        ) {
            let survey = Survey {
                pin: Some(FoundPin::Submodule { path: path.clone(), url: url.clone() }),
                packages: vec![FoundPackage { name: name.clone(), source: source.clone(), named_by: "x".into() }],
                test_paths: vec![test_path.clone()],
                ..Survey::default()
            };
            let table = parsed(&render(&survey, "3.13.0"));
            proptest::prop_assert_eq!(table["integrate"]["submodule"].as_str(), Some(path.as_str()));
            if let Some(url) = &url {
                proptest::prop_assert_eq!(table["integrate"]["upstream-url"].as_str(), Some(url.as_str()));
            }
            let package = &table["pkg"]["package"][0];
            proptest::prop_assert_eq!(package["name"].as_str(), Some(name.as_str()));
            proptest::prop_assert_eq!(package["source"].as_str(), Some(source.as_str()));
            proptest::prop_assert_eq!(table["test"]["paths"][0].as_str(), Some(test_path.as_str()));
            let with_pattern = Survey {
                pin: Some(FoundPin::Pattern { path: path.clone(), pattern: pattern.clone(), sha256_pattern: Some(pattern.clone()) }),
                ..Survey::default()
            };
            let table = parsed(&render(&with_pattern, "3.13.0"));
            proptest::prop_assert_eq!(table["integrate"]["pin"]["pattern"].as_str(), Some(pattern.as_str()));
            proptest::prop_assert_eq!(table["integrate"]["pin"]["sha256"]["pattern"].as_str(), Some(pattern.as_str()));
        }
    }
}
