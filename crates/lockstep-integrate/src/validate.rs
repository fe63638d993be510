//! The `[integrate]` configuration checked before any repository is touched:
//! a submodule path that is a real path inside the superproject and one of
//! its submodules, and remote and branch names git will take as names (not
//! as options, not as other refs), and text that reaches git or a process
//! without NUL characters (the OS cannot pass one) or, where it becomes a
//! commit subject, line breaks. A bad value is a usage error naming the
//! key; nothing has been done.

use std::path::{Component, Path};

use crate::config::IntegrateConfig;
use lockstep_core::Error;
use lockstep_git::Repo;

/// Checks the names and paths of `cfg`.
pub fn config(cfg: &IntegrateConfig) -> Result<(), Error> {
    submodule_path(&cfg.submodule)?;
    if let Some(file) = &cfg.pin_file {
        submodule_path(file).map_err(|e| {
            Error::usage(
                e.message
                    .replace("[integrate] submodule", "[integrate] pin-file"),
            )
            .hint(
                "name the pin file by its path inside the superproject, e.g. llvm-project.version",
            )
        })?;
    }
    remote_name("upstream-remote", &cfg.upstream_remote)?;
    remote_name("export.remote", &cfg.export.remote)?;
    ref_part("upstream-branch", &cfg.upstream_branch)?;
    if cfg.base.is_empty() || cfg.base.starts_with('-') {
        return Err(bad(
            "base",
            &cfg.base,
            "it must name a commit, e.g. `origin/main`",
        ));
    }
    export_branch_template(&cfg.export.branch)?;
    texts(cfg)
}

/// Every other string that reaches git, a commit message or a process.
fn texts(cfg: &IntegrateConfig) -> Result<(), Error> {
    let mut values: Vec<(&str, &str)> = vec![
        ("base", &cfg.base),
        ("branch", &cfg.branch),
        ("export.branch", &cfg.export.branch),
    ];
    values.extend(cfg.upstream_url.as_deref().map(|u| ("upstream-url", u)));
    values.extend(cfg.commit_url.as_deref().map(|u| ("commit-url", u)));
    values.extend(cfg.smoke.iter().map(|a| ("smoke", a.as_str())));
    values.extend(cfg.track_paths.iter().map(|p| ("track-paths", p.as_str())));
    if let Some((key, value)) = values.into_iter().find(|(_, v)| v.contains('\0')) {
        return Err(bad(key, value, "it contains a NUL character"));
    }
    if cfg.upstream_name.trim().is_empty() || cfg.upstream_name.chars().any(char::is_control) {
        return Err(bad(
            "upstream-name",
            &cfg.upstream_name,
            "it names upstream in commit subjects: one line of text, e.g. `LLVM`",
        ));
    }
    if cfg
        .smoke
        .first()
        .is_some_and(|program| program.trim().is_empty())
    {
        return Err(bad("smoke", "", "the program (the first word) is empty"));
    }
    Ok(())
}

/// `[integrate.export] branch` with sample values must be a branch name.
fn export_branch_template(template: &str) -> Result<(), Error> {
    let sample = template
        .replace("{repo}", "repo")
        .replace("{branch}", "branch");
    if sample.is_empty() || sample.starts_with('-') || sample.contains('\0') {
        return Err(bad("export.branch", template, "it must be a branch name"));
    }
    ref_format("export.branch", template, &format!("refs/heads/{sample}"))
}

fn bad(key: &str, value: &str, why: &str) -> Error {
    Error::usage(format!(
        "[integrate] {key} = {value:?} in lockstep.toml is not valid: {why}"
    ))
    .hint("fix it in lockstep.toml (docs/integrate.md lists the keys); nothing was done")
}

/// A relative path below the superproject's top, without `.` or `..`.
fn submodule_path(path: &str) -> Result<(), Error> {
    let why = if path.trim().is_empty() {
        Some("it is empty")
    } else if Path::new(path).is_absolute() {
        Some("it must be relative to the superproject")
    } else if Path::new(path)
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        Some("it must be a path below the superproject, without `.` or `..`")
    } else if path.starts_with('-') {
        Some("it starts with `-`")
    } else {
        None
    };
    match why {
        Some(why) => Err(bad("submodule", path, why)),
        None => Ok(()),
    }
}

/// A remote name git accepts: not an option, and `refs/remotes/NAME/x`
/// a valid ref.
fn remote_name(key: &str, name: &str) -> Result<(), Error> {
    if name.is_empty() || name.starts_with('-') {
        return Err(bad(
            key,
            name,
            "a remote name cannot be empty or start with `-`",
        ));
    }
    ref_format(key, name, &format!("refs/remotes/{name}/x"))
}

/// A branch name as a part of a ref (`refs/heads/NAME`).
fn ref_part(key: &str, name: &str) -> Result<(), Error> {
    if name.is_empty() || name.starts_with('-') {
        return Err(bad(
            key,
            name,
            "a branch name cannot be empty or start with `-`",
        ));
    }
    ref_format(key, name, &format!("refs/heads/{name}"))
}

fn ref_format(key: &str, name: &str, full: &str) -> Result<(), Error> {
    if name.contains('\0') {
        return Err(bad(key, name, "it contains a NUL character"));
    }
    if lockstep_git::check_ref_format(&[full]) {
        Ok(())
    } else {
        Err(bad(key, name, "`git check-ref-format` refuses it"))
    }
}

/// The configured path must be a submodule (a gitlink) in the
/// superproject's HEAD; the error lists the submodules there are.
pub fn submodule(superproject: &Repo, path: &str) -> Result<(), Error> {
    if superproject.gitlink("HEAD", path)?.is_some() {
        return Ok(());
    }
    let found = superproject.submodule_paths("HEAD").unwrap_or_default();
    let listed = if found.is_empty() {
        "it has no submodules".to_string()
    } else {
        format!("its submodules: {}", found.join(", "))
    };
    Err(Error::usage(format!(
        "`{path}` ([integrate] submodule) is not a submodule of {} ({listed})",
        superproject.dir().display()
    ))
    .hint("set [integrate] submodule in lockstep.toml to the path of the pinned submodule"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_paths_and_names_are_refused_with_their_key() {
        for path in ["", ".", "..", "./x", "a/../b", "/abs", "-x", "  "] {
            let err = submodule_path(path).unwrap_err();
            assert!(
                err.message.contains("[integrate] submodule"),
                "{path:?}: {}",
                err.message
            );
        }
        submodule_path("third_party/llvm-project").unwrap();
        for name in ["", "-x", "a b", "a..b", "x.lock", "a:b"] {
            assert!(remote_name("upstream-remote", name).is_err(), "{name:?}");
        }
        remote_name("upstream-remote", "upstream").unwrap();
        ref_part("upstream-branch", "main").unwrap();
        assert!(ref_part("upstream-branch", "ma in").is_err());
    }

    #[test]
    fn text_that_git_or_a_commit_cannot_take_is_refused_with_its_key() {
        let ok = IntegrateConfig::default();
        config(&ok).unwrap();
        type Change = fn(&mut IntegrateConfig);
        let cases: Vec<(&str, Change)> = vec![
            ("upstream-url", |c| {
                c.upstream_url = Some("https://x\0y".into())
            }),
            ("commit-url", |c| c.commit_url = Some("\0".into())),
            ("smoke", |c| c.smoke = vec!["./smoke\0.sh".into()]),
            ("smoke", |c| c.smoke = vec!["".into()]),
            ("track-paths", |c| c.track_paths = vec!["ml\0ir".into()]),
            ("upstream-name", |c| c.upstream_name = "LL\nVM".into()),
            ("upstream-name", |c| c.upstream_name = " ".into()),
            ("export.branch", |c| c.export.branch = "sm {repo}".into()),
            ("export.branch", |c| c.export.branch = "-{branch}".into()),
            ("base", |c| c.base = "origin/\0main".into()),
        ];
        for (key, change) in cases {
            let mut cfg = IntegrateConfig::default();
            change(&mut cfg);
            let err = config(&cfg).unwrap_err();
            assert_eq!(err.kind, lockstep_core::ErrorKind::Usage);
            assert!(
                err.message.contains(&format!("[integrate] {key} =")),
                "{key}: {}",
                err.message
            );
        }
    }
}
