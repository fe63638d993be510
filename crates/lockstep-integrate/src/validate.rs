//! The `[integrate]` configuration checked before any repository is touched:
//! a submodule path that is a real path inside the superproject and one of
//! its submodules, and remote and branch names git will take as names (not
//! as options, not as other refs), and text that reaches git or a process
//! without NUL characters (the OS cannot pass one) or, where it becomes a
//! commit subject, line breaks. Every string is bounded ([`LIMITS`]: a
//! 100,000-byte branch name would reach git as an argument the OS refuses),
//! and templates may hold only their known placeholders ([`placeholders`]).
//! A bad value is a usage error naming the key; nothing has been done.

use std::path::{Component, Path};

use crate::config::IntegrateConfig;
use lockstep_core::Error;

/// The longest remote name (bytes).
pub const MAX_REMOTE: usize = 255;
/// The longest branch name, branch template or base (bytes; each `/` part of
/// a branch lockstep creates is also at most 250).
pub const MAX_REF: usize = 1024;
/// The longest path (the submodule, the pin file, one `track-paths` entry).
pub const MAX_PATH: usize = 4096;
/// The longest URL (`upstream-url`, `commit-url`).
pub const MAX_URL: usize = 2048;
/// The longest `upstream-name` (it is in every commit subject).
pub const MAX_UPSTREAM_NAME: usize = 200;
/// The longest text entry (`skip-subjects`, `report.error-patterns`,
/// `notify.url-env`).
pub const MAX_TEXT: usize = 1024;
/// The longest smoke argument (Linux takes at most 128 KiB per argument).
pub const MAX_ARG: usize = 64 << 10;
/// The most bytes of all smoke arguments, and of all `track-paths` (both
/// reach a process's argument list, which the OS bounds).
pub const MAX_ARGV: usize = 256 << 10;
/// The most entries of `track-paths`, `skip-subjects`, `error-patterns`.
pub const MAX_ENTRIES: usize = 1000;

/// Each kind of key and its bound, for the documentation and errors.
pub const LIMITS: [(&str, usize); 7] = [
    ("upstream-remote, export.remote", MAX_REMOTE),
    ("upstream-branch, base, branch, export.branch", MAX_REF),
    ("submodule, pin-file, each track-paths entry", MAX_PATH),
    ("upstream-url, commit-url", MAX_URL),
    ("upstream-name", MAX_UPSTREAM_NAME),
    (
        "skip-subjects, report.error-patterns entries, notify.url-env",
        MAX_TEXT,
    ),
    ("each smoke argument", MAX_ARG),
];

/// The placeholders of `[integrate] branch`.
pub const BRANCH_PLACEHOLDERS: &[&str] = &["{date}"];
/// The placeholders of `[integrate.export] branch`.
pub const EXPORT_PLACEHOLDERS: &[&str] = &["{repo}", "{branch}"];
/// The placeholders of `[integrate] commit-url`.
pub const COMMIT_URL_PLACEHOLDERS: &[&str] = &["{sha}"];

/// Checks the names and paths of `cfg`.
pub fn config(cfg: &IntegrateConfig) -> Result<(), Error> {
    lengths(cfg)?;
    verdict_rules(&cfg.verdicts)?;
    followers(&cfg.follow)?;
    github(&cfg.github)?;
    placeholders("branch", &cfg.branch, BRANCH_PLACEHOLDERS)?;
    placeholders("export.branch", &cfg.export.branch, EXPORT_PLACEHOLDERS)?;
    if let Some(url) = &cfg.commit_url {
        placeholders("commit-url", url, COMMIT_URL_PLACEHOLDERS)?;
    }
    for path in &cfg.smoke_submodules {
        submodule_path(path).map_err(|e| {
            Error::usage(
                e.message
                    .replace("[integrate] submodule", "[integrate] smoke-submodules entry"),
            )
            .hint("name each submodule the smoke needs by its path in the superproject, e.g. third_party/stablehlo")
        })?;
    }
    // `submodule` / `pin-file` / `pin`: one of them, its path, its patterns
    // and its archive URL.
    cfg.pin()?;
    for path in &cfg.track_paths {
        track_path(path)?;
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
    values.extend(
        cfg.final_checks
            .iter()
            .map(|c| ("final-checks", c.as_str())),
    );
    values.extend(cfg.track_paths.iter().map(|p| ("track-paths", p.as_str())));
    if let Some((key, value)) = values.into_iter().find(|(_, v)| v.contains('\0')) {
        return Err(bad(key, value, "it contains a NUL character"));
    }
    if let Some(url) = cfg.upstream_url.as_deref().filter(|u| u.starts_with('-')) {
        return Err(bad(
            "upstream-url",
            url,
            "it starts with `-`: git would read it as an option, not a URL",
        ));
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
    // An empty command would pass (`sh -c ""` exits 0) without checking anything.
    if cfg.final_checks.iter().any(|c| c.trim().is_empty()) {
        return Err(bad("final-checks", "", "a check is an empty command"));
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
        "[integrate] {key} = {} in lockstep.toml is not valid: {why}",
        shown(value)
    ))
    .hint("fix it in lockstep.toml (docs/integrate.md lists the keys); nothing was done")
}

/// `value` quoted as in lockstep.toml, cut after 60 characters (with its
/// length) so that a huge value does not flood the error.
fn shown(value: &str) -> String {
    const SHOWN: usize = 60;
    match value.char_indices().nth(SHOWN) {
        None => format!("{value:?}"),
        Some((cut, _)) => format!("{:?}... ({} bytes)", &value[..cut], value.len()),
    }
}

/// Every string of `cfg` within its bound ([`LIMITS`]), and every list
/// within [`MAX_ENTRIES`] and, where it becomes arguments, [`MAX_ARGV`].
fn lengths(cfg: &IntegrateConfig) -> Result<(), Error> {
    let mut values: Vec<(&str, &str, usize)> = vec![
        ("upstream-remote", &cfg.upstream_remote, MAX_REMOTE),
        ("export.remote", &cfg.export.remote, MAX_REMOTE),
        ("upstream-branch", &cfg.upstream_branch, MAX_REF),
        ("base", &cfg.base, MAX_REF),
        ("branch", &cfg.branch, MAX_REF),
        ("export.branch", &cfg.export.branch, MAX_REF),
        ("upstream-name", &cfg.upstream_name, MAX_UPSTREAM_NAME),
        ("notify.url-env", &cfg.notify.url_env, MAX_TEXT),
    ];
    values.extend(cfg.submodule.as_deref().map(|v| ("submodule", v, MAX_PATH)));
    values.extend(cfg.pin_file.as_deref().map(|v| ("pin-file", v, MAX_PATH)));
    values.extend(
        cfg.pin
            .as_ref()
            .map(|p| ("pin.file", p.file.as_str(), MAX_PATH)),
    );
    values.extend(
        cfg.smoke_submodules
            .iter()
            .map(|v| ("smoke-submodules", v.as_str(), MAX_PATH)),
    );
    values.extend(
        cfg.upstream_url
            .as_deref()
            .map(|v| ("upstream-url", v, MAX_URL)),
    );
    values.extend(
        cfg.commit_url
            .as_deref()
            .map(|v| ("commit-url", v, MAX_URL)),
    );
    values.extend(
        cfg.track_paths
            .iter()
            .map(|v| ("track-paths", v.as_str(), MAX_PATH)),
    );
    values.extend(
        cfg.skip_subjects
            .iter()
            .map(|v| ("skip-subjects", v.as_str(), MAX_TEXT)),
    );
    values.extend(
        cfg.report
            .error_patterns
            .iter()
            .flatten()
            .map(|v| ("report.error-patterns", v.as_str(), MAX_TEXT)),
    );
    values.extend(cfg.smoke.iter().map(|v| ("smoke", v.as_str(), MAX_ARG)));
    values.extend(
        cfg.final_checks
            .iter()
            .map(|v| ("final-checks", v.as_str(), MAX_ARG)),
    );
    for (key, value, max) in values {
        if value.len() > max {
            return Err(bad(
                key,
                value,
                &format!(
                    "it is {} bytes long; at most {max} are allowed",
                    value.len()
                ),
            ));
        }
    }
    let lists: [(&str, &[String], bool); 6] = [
        ("track-paths", &cfg.track_paths, true),
        ("smoke-submodules", &cfg.smoke_submodules, false),
        ("skip-subjects", &cfg.skip_subjects, false),
        (
            "report.error-patterns",
            cfg.report.error_patterns.as_deref().unwrap_or_default(),
            false,
        ),
        ("smoke", &cfg.smoke, true),
        ("final-checks", &cfg.final_checks, false),
    ];
    for (key, list, argv) in lists {
        let total: usize = list.iter().map(|v| v.len() + 1).sum();
        let why = if list.len() > MAX_ENTRIES {
            format!(
                "it has {} entries; at most {MAX_ENTRIES} are allowed",
                list.len()
            )
        } else if argv && total > MAX_ARGV {
            format!("its entries are {total} bytes together; at most {MAX_ARGV} are allowed (they become a process's arguments)")
        } else {
            continue;
        };
        return Err(Error::usage(format!(
            "[integrate] {key} in lockstep.toml is not valid: {why}"
        ))
        .hint("fix it in lockstep.toml (docs/integrate.md lists the keys); nothing was done"));
    }
    Ok(())
}

/// Every `{...}` in the template `value` of `key` must be one of `known`
/// (a typo such as `{dat}` would otherwise stay in the name literally), and
/// no brace may stand alone.
pub fn placeholders(key: &str, value: &str, known: &[&str]) -> Result<(), Error> {
    let known_text = match known {
        [one] => format!("the known one is `{one}`"),
        _ => format!(
            "the known ones are {}",
            known
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(" and ")
        ),
    };
    let mut rest = value;
    while let Some(at) = rest.find(['{', '}']) {
        let tail = &rest[at..];
        if let Some(k) = known.iter().find(|k| tail.starts_with(**k)) {
            rest = &tail[k.len()..];
            continue;
        }
        let unknown = match tail.strip_prefix('{').and_then(|t| t.find('}')) {
            Some(end) => {
                let text = &tail[..end + 2];
                let text = match text.char_indices().nth(40) {
                    Some((cut, _)) => format!("{}...}}", &text[..cut]),
                    None => text.to_string(),
                };
                format!("`{}` is not a placeholder", text.escape_debug())
            }
            None => format!("a `{}` stands alone", &tail[..1]),
        };
        return Err(bad(key, value, &format!("{unknown}; {known_text}")));
    }
    Ok(())
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

/// A `track-paths` entry: a path inside the upstream repository (git reads
/// it as a pathspec), relative and without `..`; `.` is the whole tree.
fn track_path(path: &str) -> Result<(), Error> {
    let why = if path.trim().is_empty() {
        Some("an entry is empty")
    } else if path.starts_with('/') {
        Some("an entry must be relative to the upstream repository's top (`mlir/`, not `/mlir`)")
    } else if Path::new(path)
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        Some("an entry must stay inside the upstream repository (no `..`)")
    } else if path.starts_with('-') || path.starts_with(':') {
        Some("an entry starts with `-` or `:` (a git option or pathspec magic)")
    } else if path.chars().any(char::is_control) {
        Some("an entry holds a control character")
    } else {
        None
    };
    match why {
        Some(why) => Err(bad("track-paths", path, why)),
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
    if lockstep_git::ref_name_ok(full) {
        Ok(())
    } else {
        Err(bad(key, name, "`git check-ref-format` refuses it"))
    }
}

/// The most `[[integrate.verdicts]]` rules.
const MAX_VERDICT_RULES: usize = 100;

/// Each rule says what it matches (an exit code or an output substring of
/// at most 1,000 bytes), and there are at most 100.
fn verdict_rules(rules: &[crate::config::VerdictRule]) -> Result<(), Error> {
    if rules.len() > MAX_VERDICT_RULES {
        return Err(bad(
            "verdicts",
            &format!("{} rules", rules.len()),
            "more rules than lockstep reads (100)",
        ));
    }
    for (n, rule) in rules.iter().enumerate() {
        let key = format!("verdicts[{}]", n + 1);
        let name = rule.name.as_deref().unwrap_or("");
        if rule.exit.is_empty() && rule.output.is_none() {
            return Err(bad(
                &key,
                name,
                "it matches nothing: give `exit`, `output` or both",
            ));
        }
        if let Some(output) = &rule.output {
            if output.is_empty() || output.len() > 1000 {
                return Err(bad(
                    &format!("{key}.output"),
                    output,
                    "it must be 1 to 1000 bytes",
                ));
            }
        }
        if name.len() > 200 || name.contains(['\n', '\r']) {
            return Err(bad(
                &format!("{key}.name"),
                name,
                "it must be one line of at most 200 bytes",
            ));
        }
        if rule.exit.len() > 256 {
            return Err(bad(
                &format!("{key}.exit"),
                &format!("{} codes", rule.exit.len()),
                "it lists more than 256 codes",
            ));
        }
    }
    Ok(())
}

/// Each follower: a plain path, exactly one way to find its upstream pin,
/// a unique name, safe remote and branch names.
fn followers(follow: &[crate::config::FollowConfig]) -> Result<(), Error> {
    let mut names = std::collections::BTreeSet::new();
    for (n, f) in follow.iter().enumerate() {
        let key = format!("follow[{}]", n + 1);
        // The name reaches commit subjects, reports and pages: one plain
        // word-ish line, no markup.
        let plain = f
            .name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ' ' | '/' | '+'));
        if f.name.trim().is_empty() || f.name.len() > 100 || !plain || !names.insert(f.name.clone())
        {
            return Err(bad(
                &format!("{key}.name"),
                &f.name,
                "a name must be 1 to 100 characters (letters, digits, space, `-`, `_`, `.`, `/`, `+`) and unique",
            ));
        }
        submodule_path(&f.submodule).map_err(|_| {
            bad(
                &format!("{key}.submodule"),
                &f.submodule,
                "it must be a plain path below the superproject",
            )
        })?;
        match (&f.upstream_pin_file, &f.upstream_submodule, &f.upstream_pin) {
            (Some(p), None, None) | (None, Some(p), None) => submodule_path(p).map_err(|_| {
                let which = match f.upstream_pin_file {
                    Some(_) => "upstream-pin-file",
                    None => "upstream-submodule",
                };
                bad(
                    &format!("{key}.{which}"),
                    p,
                    "it must be a plain path inside the follower",
                )
            })?,
            (None, None, Some(_)) => {}
            _ => {
                return Err(bad(
                    &key,
                    &f.name,
                    "give exactly one of upstream-pin-file, upstream-submodule and upstream-pin",
                ))
            }
        }
        // Its patterns and paths, checked as every pin is.
        f.upstream_pin()?;
        if lockstep_git::branch_name_problem(&f.branch).is_some() {
            return Err(bad(
                &format!("{key}.branch"),
                &f.branch,
                "it is not a branch name git accepts",
            ));
        }
        if f.remote.is_empty() || f.remote.starts_with('-') || f.remote.len() > MAX_REMOTE {
            return Err(bad(
                &format!("{key}.remote"),
                &f.remote,
                "it is not a remote name git accepts",
            ));
        }
    }
    Ok(())
}

/// `[integrate.github]`: a variable name for the token, and a repository
/// of the form OWNER/NAME when one is given.
fn github(cfg: &crate::config::GithubConfig) -> Result<(), Error> {
    let var = &cfg.token_env;
    let name_ok = !var.is_empty()
        && var.len() <= 100
        && !var.as_bytes()[0].is_ascii_digit()
        && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !name_ok {
        return Err(bad(
            "github.token-env",
            var,
            "it is not an environment variable name (letters, digits and `_`)",
        ));
    }
    if let Some(repo) = &cfg.repository {
        if repo.parse::<lockstep_github::Repo>().is_err() {
            return Err(bad("github.repository", repo, "it is not OWNER/NAME"));
        }
    }
    Ok(())
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
            ("upstream-url", |c| {
                c.upstream_url = Some("--upload-pack=touch x".into())
            }),
            ("commit-url", |c| c.commit_url = Some("\0".into())),
            ("smoke", |c| c.smoke = vec!["./smoke\0.sh".into()]),
            ("smoke", |c| c.smoke = vec!["".into()]),
            ("final-checks", |c| c.final_checks = vec!["  ".into()]),
            ("final-checks", |c| c.final_checks = vec!["a\0b".into()]),
            ("track-paths", |c| c.track_paths = vec!["ml\0ir".into()]),
            ("upstream-name", |c| c.upstream_name = "LL\nVM".into()),
            ("upstream-name", |c| c.upstream_name = " ".into()),
            ("export.branch", |c| c.export.branch = "sm {repo}".into()),
            ("export.branch", |c| c.export.branch = "-{branch}".into()),
            ("base", |c| c.base = "origin/\0main".into()),
            ("branch", |c| c.branch = "integrates/llvm-{dat}".into()),
            ("branch", |c| {
                c.branch = "integrates/{date}-{unknown}".into()
            }),
            ("branch", |c| c.branch = "integrates/llvm-{date".into()),
            ("export.branch", |c| {
                c.export.branch = "sm-{repo}-{brnch}".into()
            }),
            ("commit-url", |c| {
                c.commit_url = Some("https://x/commit/{hash}".into())
            }),
            ("upstream-branch", |c| {
                c.upstream_branch = "x".repeat(100_000)
            }),
            ("upstream-remote", |c| c.upstream_remote = "r".repeat(256)),
            ("upstream-url", |c| {
                c.upstream_url = Some(format!("https://x/{}", "a".repeat(3000)))
            }),
            ("smoke", |c| c.smoke = vec!["x".repeat(70_000)]),
            ("final-checks", |c| {
                c.final_checks = vec!["x".repeat(70_000)]
            }),
            ("upstream-name", |c| c.upstream_name = "L".repeat(201)),
            ("track-paths", |c| c.track_paths = vec!["".into()]),
            ("track-paths", |c| c.track_paths = vec!["/".into()]),
            ("track-paths", |c| c.track_paths = vec!["../..".into()]),
            ("track-paths", |c| c.track_paths = vec![":(glob)**".into()]),
            ("track-paths", |c| c.track_paths = vec!["p".into(); 1001]),
            ("track-paths", |c| {
                c.track_paths = vec!["p".repeat(4000); 100]
            }),
        ];
        for (key, change) in cases {
            let mut cfg = IntegrateConfig::default();
            change(&mut cfg);
            let err = config(&cfg).unwrap_err();
            assert_eq!(err.kind, lockstep_core::ErrorKind::Usage);
            assert!(
                err.message.contains(&format!("[integrate] {key}")),
                "{key}: {}",
                err.message
            );
            assert!(err.message.len() < 400, "{key}: a short message");
        }
    }

    #[test]
    fn a_follower_field_is_blamed_by_its_own_key() {
        let follower =
            |name: &str, pin: Option<&str>, sub: Option<&str>| crate::config::FollowConfig {
                name: name.into(),
                submodule: "third_party/stablehlo".into(),
                upstream_pin_file: pin.map(String::from),
                upstream_submodule: sub.map(String::from),
                upstream_pin: None,
                remote: "origin".into(),
                branch: "main".into(),
            };
        followers(&[follower(
            "stablehlo",
            Some("build_tools/llvm_version.txt"),
            None,
        )])
        .unwrap();
        followers(&[follower("torch-mlir", None, Some("externals/llvm-project"))]).unwrap();
        for (f, key) in [
            (
                follower("x", None, Some("../x")),
                "follow[1].upstream-submodule",
            ),
            (
                follower("x", Some("/abs"), None),
                "follow[1].upstream-pin-file",
            ),
            (follower("a\nb", Some("p"), None), "follow[1].name"),
            (follower("<b>x</b>", Some("p"), None), "follow[1].name"),
            (follower(" ", Some("p"), None), "follow[1].name"),
        ] {
            let err = followers(&[f]).unwrap_err();
            assert!(
                err.message.contains(&format!("[integrate] {key} ")),
                "{key}: {}",
                err.message
            );
            assert!(!err.message.contains('\n'), "{}", err.message);
        }
        for path in ["mlir/", ".", "llvm/include/llvm/IR"] {
            track_path(path).unwrap();
        }
    }

    #[test]
    fn unknown_placeholders_are_named_with_the_known_ones() {
        let err = placeholders("branch", "x-{dat}", BRANCH_PLACEHOLDERS).unwrap_err();
        assert!(
            err.message
                .contains("`{dat}` is not a placeholder; the known one is `{date}`"),
            "{}",
            err.message
        );
        let err = placeholders("export.branch", "{repo}-}", EXPORT_PLACEHOLDERS).unwrap_err();
        assert!(
            err.message
                .contains("a `}` stands alone; the known ones are `{repo}` and `{branch}`"),
            "{}",
            err.message
        );
        placeholders(
            "export.branch",
            "sm-{repo}-{branch}{repo}",
            EXPORT_PLACEHOLDERS,
        )
        .unwrap();
        placeholders("branch", "plain", BRANCH_PLACEHOLDERS).unwrap();
    }

    proptest::proptest! {
        /// Any template: accepted exactly when putting sample values in
        /// for the known placeholders leaves no brace, and never a panic.
        #[test]
        fn placeholders_accept_exactly_the_known_ones(
            parts in proptest::collection::vec("(\\{repo\\}|\\{branch\\}|[a-z{}_/-]{1,3})", 0..8)
        ) {
            let template = parts.concat();
            let ok = placeholders("export.branch", &template, EXPORT_PLACEHOLDERS).is_ok();
            let filled = template.replace("{repo}", "R").replace("{branch}", "B");
            proptest::prop_assert_eq!(ok, !filled.contains(['{', '}']), "{}", template);
        }
    }
}
