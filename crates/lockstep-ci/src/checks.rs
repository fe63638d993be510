//! Checks of single values that reach YAML (timeouts, names, free text,
//! paths inside the repository), shared by the plan and the pipeline's
//! stages: each failure is a usage error naming the key.

use std::path::{Component, Path};

use lockstep_core::Error;

/// GitHub's limit on a job's `timeout-minutes` (self-hosted runners: 72 hours).
pub const MAX_TIMEOUT_MINUTES: u32 = 4320;

pub(crate) fn timeout(key: &str, minutes: u32) -> Result<u32, Error> {
    if (1..=MAX_TIMEOUT_MINUTES).contains(&minutes) {
        Ok(minutes)
    } else {
        Err(Error::usage(format!("{key} = {minutes} is out of range"))
            .hint(format!("use 1 to {MAX_TIMEOUT_MINUTES} minutes")))
    }
}

/// A name that becomes part of a job id or an artifact name.
pub(crate) fn check_name(
    key: &str,
    name: &str,
    allowed: impl Fn(char) -> bool,
) -> Result<(), Error> {
    if name.is_empty() || name.len() > 64 || !name.chars().all(allowed) {
        return Err(Error::usage(format!(
            "{key} `{}` cannot name a CI job or artifact",
            name.escape_debug()
        ))
        .hint("use letters, digits, `-` and `_` (and `.` in Python versions), at most 64"));
    }
    Ok(())
}

/// Free text that goes into YAML as a quoted scalar: one line, bounded.
pub(crate) fn check_text(key: &str, text: &str) -> Result<(), Error> {
    if text.trim().is_empty() || text.len() > 200 || text.chars().any(char::is_control) {
        return Err(
            Error::usage(format!("{key} has a bad entry `{}`", text.escape_debug()))
                .hint("use one line of at most 200 characters"),
        );
    }
    Ok(())
}

/// A path inside the repository, relative, with `/` separators.
pub(crate) fn inside(key: &str, path: &Path) -> Result<String, Error> {
    let ok = !path.as_os_str().is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    let text = path.to_string_lossy();
    if !ok || text.chars().any(char::is_control) {
        return Err(Error::usage(format!(
            "{key}: `{}` is not a path inside the repository",
            text.escape_debug()
        ))
        .hint("CI jobs see only the checkout: use a relative path without `..`"));
    }
    Ok(relative_slash(path, Path::new("")))
}

/// `path` relative to `base` with `/` separators (`""` when equal).
pub(crate) fn relative_slash(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .map(|rel| {
            rel.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .unwrap_or_default()
}
