//! What `lockstep init` says it wrote, in a few lines.

use lockstep_core::words::count;

use crate::Made;

/// The file written, the pin, the packages and the tests it found, and
/// where to go next.
pub fn written(made: &Made) -> String {
    let survey = &made.survey;
    let mut lines = vec![format!("wrote {}", made.path.display())];
    lines.push(match &survey.pin {
        Some(pin) => format!("  upstream pin: {}", pin.describe()),
        None => "  upstream pin: none found (set [integrate] by hand: docs/integrate.md)".into(),
    });
    lines.push(format!(
        "  packages: {}",
        if survey.packages.is_empty() {
            "none found".to_string()
        } else {
            format!(
                "{} ({})",
                count(survey.packages.len(), "package", "packages"),
                survey
                    .packages
                    .iter()
                    .map(|p| format!("{} in {}", p.name, p.source))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    ));
    let mut tests = survey.test_paths.clone();
    if !survey.pytest_paths.is_empty() {
        tests.push(format!("pytest in {}", survey.pytest_paths.join(", ")));
    }
    lines.push(format!(
        "  tests: {}",
        if tests.is_empty() {
            "none found".to_string()
        } else {
            tests.join(", ")
        }
    ));
    lines.push("next: docs/getting-started.md (lockstep test, lockstep ci generate, lockstep integrate start)".into());
    lines.join("\n") + "\n"
}
