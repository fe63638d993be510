//! manylinux repair of native wheels with auditwheel (and patchelf): a
//! wheel tagged `linux_*` (which PyPI refuses) is retagged to the lowest
//! manylinux policy it satisfies, or to `[pkg] manylinux`, grafting any
//! external libraries it needs; a wheel that cannot meet the requested
//! policy is an error naming what it needs. Pure wheels are left alone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::Error;
use lockstep_python::tools::BuildTools;
use lockstep_python::wheel::WheelName;

/// What `[pkg] manylinux` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The lowest policy the wheel satisfies.
    Lowest,
    /// `manylinux_MAJOR_MINOR`.
    Exactly(u32, u32),
    /// No repair.
    Off,
}

impl Policy {
    /// `[pkg] manylinux`: unset, `"off"`, or `"2_28"` (also `manylinux_2_28`).
    pub fn parse(value: Option<&str>) -> Result<Policy, Error> {
        let Some(value) = value else {
            return Ok(Policy::Lowest);
        };
        if value == "off" {
            return Ok(Policy::Off);
        }
        let bare = value.strip_prefix("manylinux_").unwrap_or(value);
        parse_glibc(bare)
            .map(|(a, b)| Policy::Exactly(a, b))
            .ok_or_else(|| {
                Error::usage(format!(
                    "[pkg] manylinux is `{}`: not a manylinux policy",
                    lockstep_core::error::printable_line(value)
                ))
                .hint("give the glibc version of the policy (\"2_28\" for manylinux_2_28), or \"off\"; leave it out for the lowest policy each wheel satisfies")
            })
    }
}

/// `2_28` as (2, 28).
fn parse_glibc(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.split_once('_')?;
    let ok = |s: &str| !s.is_empty() && s.len() <= 4 && s.bytes().all(|b| b.is_ascii_digit());
    if !ok(major) || !ok(minor) {
        return None;
    }
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// A repaired wheel.
#[derive(Debug, Clone)]
pub struct Repaired {
    pub file: PathBuf,
    /// `manylinux_2_5_x86_64`.
    pub policy: String,
}

/// Whether `file_name` is a wheel auditwheel can repair (`linux_ARCH`).
pub fn needs_repair(file_name: &str) -> Option<String> {
    let wheel = WheelName::parse(file_name)?;
    wheel
        .platform
        .split('.')
        .find_map(|p| p.strip_prefix("linux_"))
        .map(String::from)
}

/// Repairs `wheel` into `out_dir` by `policy`; `Ok(None)` when there is
/// nothing to repair (pure, already manylinux, or `off`). The lowest policy
/// is auditwheel's own `--plat auto` (which grafts external libraries the
/// policy allows, so a wheel linking one still repairs); a requested policy
/// that cannot be met is explained with `auditwheel show`.
pub fn repair(
    tools: &BuildTools,
    wheel: &Path,
    policy: Policy,
    out_dir: &Path,
    timeout: Duration,
) -> Result<Option<Repaired>, String> {
    let name = lockstep_core::fs::file_name(wheel);
    let Some(arch) = needs_repair(&name) else {
        return Ok(None);
    };
    let plat = match policy {
        Policy::Off => return Ok(None),
        Policy::Lowest => "auto".to_string(),
        Policy::Exactly(a, b) => format!("manylinux_{a}_{b}_{arch}"),
    };
    let cwd = wheel.parent().unwrap_or(Path::new("."));
    let path = wheel.to_string_lossy().into_owned();
    fs_err::create_dir_all(out_dir).map_err(|e| e.to_string())?;
    let args: Vec<String> = vec![
        "repair".into(),
        "--plat".into(),
        plat.clone(),
        "-w".into(),
        out_dir.to_string_lossy().into_owned(),
        path.clone(),
    ];
    let ran = tools
        .run("auditwheel", &args, &[], cwd, timeout, false)
        .map_err(|e| e.render())?;
    if !ran.success() {
        let show = tools
            .run(
                "auditwheel",
                &["show".into(), path],
                &[],
                cwd,
                timeout,
                true,
            )
            .map(|r| format!("{}\n{}", r.stdout(), r.output()))
            .unwrap_or_default();
        let needed = lowest_policy(&show)
            .map(|(a, b)| {
                format!(" (auditwheel show: it is consistent with manylinux_{a}_{b} as built)")
            })
            .unwrap_or_default();
        return Err(format!(
            "{name} cannot be repaired to {plat}{needed}: {}\n{}\nbuild it on an older system (the manylinux image of the policy), or set [pkg] manylinux to a policy it meets",
            needs(&show),
            ran.tail(10)
        ));
    }
    let file = &lockstep_python::wheel::single_wheel_in(out_dir, "auditwheel repair")?;
    let file_name = lockstep_core::fs::file_name(file);
    let policy = policy_of(&file_name).ok_or_else(|| {
        format!("auditwheel repair wrote {file_name}, which names no manylinux policy")
    })?;
    Ok(Some(Repaired {
        file: file.clone(),
        policy,
    }))
}

/// The `manylinux_X_Y_ARCH` tag of a repaired wheel's name (the newest
/// spelling among its compressed platform tags).
pub fn policy_of(file_name: &str) -> Option<String> {
    let wheel = WheelName::parse(file_name)?;
    wheel
        .platform
        .split('.')
        .find(|p| {
            p.strip_prefix("manylinux_")
                .and_then(|rest| {
                    let mut parts = rest.splitn(3, '_');
                    let (a, b) = (parts.next()?, parts.next()?);
                    parse_glibc(&format!("{a}_{b}"))
                })
                .is_some()
        })
        .map(String::from)
}

/// The lowest policy from `auditwheel show`'s "consistent with the
/// following platform tag: "manylinux_2_5_x86_64"".
pub fn lowest_policy(report: &str) -> Option<(u32, u32)> {
    let flat = report.split_whitespace().collect::<Vec<_>>().join(" ");
    let after = flat.split("platform tag:").nth(1)?;
    let tag = after.trim().trim_start_matches('"');
    let rest = tag.strip_prefix("manylinux_")?;
    let mut parts = rest.splitn(3, '_');
    let major = parts.next()?;
    let minor = parts.next()?;
    parse_glibc(&format!("{major}_{minor}"))
}

/// The lines of `auditwheel show` that say which libraries and symbol
/// versions the wheel needs.
fn needs(report: &str) -> String {
    let flat = report.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.split_once("The wheel references") {
        Some((_, rest)) => {
            let text: String = format!("the wheel references{rest}")
                .chars()
                .take(800)
                .collect();
            lockstep_core::error::printable_line(&text).into_owned()
        }
        None => String::from("(auditwheel named no library)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn policies_parse_or_are_refused() {
        assert_eq!(Policy::parse(None).expect("unset"), Policy::Lowest);
        assert_eq!(Policy::parse(Some("off")).expect("off"), Policy::Off);
        assert_eq!(
            Policy::parse(Some("2_28")).expect("2_28"),
            Policy::Exactly(2, 28)
        );
        assert_eq!(
            Policy::parse(Some("manylinux_2_17")).expect("long form"),
            Policy::Exactly(2, 17)
        );
        for bad in ["", "2", "2_", "_2", "x_1", "2_28_x86_64", "99999_1"] {
            let err = Policy::parse(Some(bad)).expect_err(bad).render();
            assert!(err.contains("[pkg] manylinux"), "{err}");
        }
    }

    #[test]
    fn lowest_policy_is_read_from_auditwheel_show() {
        let text = "\ndemo-0.1-cp311-cp311-linux_x86_64.whl is consistent with\nthe following platform tag: \"manylinux_2_5_x86_64\".\n";
        assert_eq!(lowest_policy(text), Some((2, 5)));
        assert_eq!(lowest_policy("nothing"), None);
        assert!(needs_repair("a-1-cp311-cp311-linux_x86_64.whl").is_some());
        assert!(needs_repair("a-1-py3-none-any.whl").is_none());
        assert!(needs_repair("a-1-cp311-cp311-manylinux_2_28_x86_64.whl").is_none());
        assert_eq!(
            policy_of("a-1-cp311-cp311-manylinux1_x86_64.manylinux_2_5_x86_64.whl").as_deref(),
            Some("manylinux_2_5_x86_64")
        );
        assert_eq!(policy_of("a-1-cp311-cp311-linux_x86_64.whl"), None);
    }

    proptest! {
        #[test]
        fn any_report_is_read_without_panicking(text in ".{0,300}") {
            let _ = lowest_policy(&text);
            let _ = needs(&text);
            let _ = Policy::parse(Some(&text));
        }
    }
}
