//! `lockstep init`: lockstep-init's survey written as lockstep.toml (or
//! printed, `--dry-run`), checked first by the same loader every command
//! uses.

use lockstep_core::Error;

use crate::cli::InitArgs;
use crate::context::Ctx;

pub fn run(args: InitArgs, ctx: &Ctx) -> Result<i32, Error> {
    let dir = match &args.dir {
        Some(dir) => ctx.cwd.join(dir),
        None => ctx.cwd.clone(),
    };
    let path = lockstep_init::target(&dir)?;
    let survey = lockstep_init::survey(&dir, args.pin.as_deref())?;
    // A name with a control or bidi character is refused here (exit 2), so
    // the text holds nothing the terminal rule escapes: `--dry-run` prints
    // the bytes `init` writes.
    let text = lockstep_init::render(&survey, lockstep_iree::config::DEFAULT_IREE_VERSION)?;
    // What init writes, every command must accept.
    lockstep_core::config::parse(
        text.clone(),
        Some(path.clone()),
        dir.clone(),
        crate::config::SECTIONS,
    )
    .map_err(|e| {
        Error::failed(
            "lockstep init made a configuration lockstep refuses (a bug: please report it)",
        )
        .cause(e.to_string())
        .hint("nothing was written; `lockstep init --dry-run` prints what it made")
    })?;
    let out = ctx.out();
    if args.dry_run {
        out.print(&text);
        return Ok(0);
    }
    lockstep_init::write_new(&path, &text)?;
    out.print(&summary(&path, &survey));
    Ok(0)
}

/// What was written, in a few lines.
fn summary(path: &std::path::Path, survey: &lockstep_init::Survey) -> String {
    let count = lockstep_core::words::count;
    let mut lines = vec![format!("wrote {}", path.display())];
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
    lines.push(format!(
        "  tests: {}",
        if survey.test_paths.is_empty() {
            "none found".to_string()
        } else {
            survey.test_paths.join(", ")
        }
    ));
    lines.push("next: docs/getting-started.md (lockstep test, lockstep ci generate, lockstep integrate start)".into());
    lines.join("\n") + "\n"
}
