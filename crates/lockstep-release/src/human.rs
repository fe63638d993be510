//! The human form of what `lockstep release` returns (printed without
//! `--json`): the release engine's results say how they read, the binary
//! only prints them.

use std::path::Path;

use lockstep_core::words::count;

use crate::bump::Bumped;
use crate::cut::Cut;
use crate::index::{IndexReport, SIMPLE};
use crate::promote::Promoted;
use crate::prune::Pruned;
use crate::publication::PublishReport;

/// A commit or source as messages show it: its first 12 characters.
fn short(sha: &str) -> &str {
    &sha[..12.min(sha.len())]
}

/// `release bump`.
pub fn bumped(b: &Bumped) -> String {
    match &b.commit {
        Some(commit) => format!(
            "bumped {} to {} ({})\n",
            b.changed.join(" "),
            b.to,
            short(commit)
        ),
        None => format!("already at {}: nothing to commit\n", b.to),
    }
}

/// `release cut` of the release `name`.
pub fn cut(made: &Cut, name: &str) -> String {
    if made.skipped {
        return format!(
            "nothing to cut: {} is already {name} {} (tag {})\n",
            short(&made.source),
            made.version,
            made.tag
        );
    }
    let how = if made.reused { "reused" } else { "tagged" };
    format!(
        "{name} {} ({how} {} on {})\n",
        made.version,
        made.tag,
        short(&made.source)
    )
}

/// `release publish` into the store at `index`.
pub fn published(report: &PublishReport, index: &Path) -> String {
    let p = &report.published;
    let mut text = format!(
        "published {} {}: {} added; index: {}, {} in {}\n",
        p.packages.join(" "),
        p.version,
        count(p.added.len(), "file", "files"),
        count(p.index.projects, "project", "projects"),
        count(p.index.files, "file", "files"),
        index.display()
    );
    text.push_str(&format!(
        "validated: installed from a staged index, {} ran with --help{}\n",
        count(p.scripts_checked.len(), "console script", "console scripts"),
        p.smoke
            .as_deref()
            .map(|s| format!(", the [release] smoke `{s}` passed"))
            .unwrap_or_else(|| ", no [release] smoke configured".to_string())
    ));
    if let Some(g) = &report.github_release {
        text.push_str(&format!(
            "GitHub Release {} of {}{}: {} uploaded, {} already there{}\n",
            g.tag,
            g.repository,
            if g.created { " (created)" } else { "" },
            count(g.uploaded.len(), "asset", "assets"),
            g.already_there.len(),
            g.url
                .as_deref()
                .map(|u| format!(" ({u})"))
                .unwrap_or_default()
        ));
    }
    text
}

/// `release index` of the store at `index`.
pub fn indexed(report: &IndexReport, index: &Path) -> String {
    format!(
        "{}: {}, {}, {} ({} yanked)\n",
        index.join(SIMPLE).display(),
        count(report.projects, "project", "projects"),
        count(report.versions, "version", "versions"),
        count(report.files, "file", "files"),
        report.yanked
    )
}

/// `release promote`.
pub fn promoted(p: &Promoted) -> String {
    format!("promoted {} to {}: {}\n", p.from, p.to, p.wheels.join(" "))
}

/// `release promote` with what it shipped.
pub fn shipped(s: &crate::final_release::Shipped) -> String {
    use crate::final_release::RefOutcome;
    let mut text = promoted(&s.promoted);
    let said = |o: Option<RefOutcome>| match o {
        Some(RefOutcome::Created) => "created",
        Some(RefOutcome::AlreadyThere) => "already there",
        None => "not made",
    };
    if let Some(tag) = &s.tag {
        text.push_str(&format!("tag {tag}: {}\n", said(s.tag_outcome)));
    }
    if let Some(g) = &s.github_release {
        text.push_str(&format!(
            "GitHub Release {}: {} uploaded, {} already there\n",
            g.tag,
            g.uploaded.len(),
            g.already_there.len()
        ));
    }
    if let Some(branch) = &s.branch {
        text.push_str(&format!(
            "release branch {branch}: {}\n",
            said(s.branch_outcome)
        ));
    }
    if let Some(out) = &s.out {
        text.push_str(&format!("final files copied to {}\n", out.display()));
    }
    text
}

/// `release prune` (`--dry-run`, `--yank`).
pub fn pruned(p: &Pruned, dry_run: bool, yank: bool) -> String {
    let verb = match (dry_run, yank) {
        (true, true) => "would yank",
        (true, false) => "would remove",
        (false, true) => "yanked",
        (false, false) => "removed",
    };
    let list = if yank { &p.yanked } else { &p.removed };
    let mut text = format!(
        "{verb} {}{}{}; kept {}\n",
        count(list.len(), "version", "versions"),
        if list.is_empty() { "" } else { ": " },
        list.join(" "),
        p.kept
    );
    if !p.referenced.is_empty() {
        text.push_str(&format!(
            "kept because a branch names them: {}\n",
            p.referenced.join(" ")
        ));
    }
    if !p.releases_deleted.is_empty() {
        text.push_str(&format!(
            "deleted their GitHub Releases: {}\n",
            p.releases_deleted.join(" ")
        ));
    }
    for left in &p.releases_left {
        text.push_str(&format!(
            "left the GitHub Release of {} alone ({}): {}\n",
            lockstep_core::error::printable_line(&left.tag),
            left.version,
            lockstep_core::error::printable_line(&left.why)
        ));
    }
    text
}

/// `release sync --from-github` into the store at `index`.
pub fn synced(s: &crate::sync::Synced, index: &Path) -> String {
    let mut text = format!(
        "{} from {}: {} restored, {} already in the store; index: {}, {} in {}\n",
        count(s.releases, "GitHub Release", "GitHub Releases"),
        s.repository,
        count(s.restored.len(), "version", "versions"),
        count(s.already_there.len(), "version", "versions"),
        count(s.index.projects, "project", "projects"),
        count(s.index.files, "file", "files"),
        index.join(SIMPLE).display()
    );
    if !s.not_lockstep.is_empty() {
        text.push_str(&format!(
            "left alone (no release.json): {}\n",
            s.not_lockstep.join(" ")
        ));
    }
    text
}

/// `release upload`.
pub fn uploaded(r: &crate::upload::UploadReport) -> String {
    let sent = r.files.iter().filter(|f| f.uploaded).count();
    format!(
        "{} to {}: {sent} uploaded, {} already there\n",
        count(r.files.len(), "file", "files"),
        r.url,
        r.files.len() - sent
    )
}
