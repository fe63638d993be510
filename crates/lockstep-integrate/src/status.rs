//! Where the integrate stands: the pin, the carried patches (with their reasons
//! and whether upstream already has them), the pending affecting commits and
//! any halt.
//!
//! Cost matters here: on a big upstream, `status` is one path-limited `git log`
//! plus patch-id work limited to the files the carried patches touch.

use std::collections::HashMap;

use lockstep_core::pool::joined;
use lockstep_core::Error;
use lockstep_git::{Commit, Oid};
use serde::{Deserialize, Serialize};

use crate::halt::Halt;
use crate::Integrate;

/// A carried patch: a commit in `merge_base..current`.
#[derive(Debug, Clone, Serialize)]
pub struct Patch {
    pub sha: Oid,
    pub subject: String,
    /// Why it is carried: a `Lockstep-Reason:` trailer, else the first body line.
    pub reason: Option<String>,
    /// True when a pending upstream commit makes the same change (same patch-id).
    pub upstreamed: bool,
    pub upstreamed_by: Option<Oid>,
    /// The commit this patch reverts, when it is a revert.
    pub reverts: Option<String>,
    /// A pending upstream commit that reverts the same commit.
    pub reverted_upstream_by: Option<Oid>,
}

/// The state `integrate status` shows.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub superproject: String,
    pub branch: Option<String>,
    /// Submodule commit recorded in the superproject's HEAD.
    pub pin: Oid,
    /// Submodule HEAD (differs from `pin` when the user changed it by hand).
    pub current: Oid,
    /// Upstream commit the current head is based on.
    pub merge_base: Oid,
    pub upstream_ref: String,
    pub upstream_head: Oid,
    /// False when upstream was never fetched and `--fetch` was not given:
    /// `upstream_head` and `merge_base` are then the submodule's HEAD,
    /// nothing is pending, and `fetch_plan` says what `--fetch` would do.
    pub upstream_fetched: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetch_plan: Option<String>,
    /// No carried patches.
    pub clean: bool,
    pub patches: Vec<Patch>,
    /// Affecting commits not yet taken, oldest first.
    pub pending: Vec<Commit>,
    pub halted: Option<HaltSummary>,
    /// Why the project is not ok for a stable release (the committed
    /// `.lockstep/unstable` reasons, then each carried revert); empty: ok.
    #[serde(default)]
    pub not_stable: Vec<String>,
    /// `[[integrate.follow]]`: each follower's upstream pin against the
    /// integrate's (`merge_base`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub followers: Vec<crate::follow::Follower>,
}

/// The halt as `status --json` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct HaltSummary {
    pub commit: Oid,
    pub kind: String,
    pub report: String,
}

impl From<&Halt> for HaltSummary {
    fn from(h: &Halt) -> Self {
        HaltSummary {
            commit: h.culprit.sha.clone(),
            kind: h.kind.as_str().to_string(),
            report: h.report_path.clone(),
        }
    }
}

/// Computes the status. `fetch` fetches upstream first.
/// Without `fetch` it changes nothing: an upstream never fetched is
/// reported with what `--fetch` would do (add a remote, fetch).
///
/// The git work runs side by side: the upstream head and the commit checked
/// out are resolved at once, then the path-limited walk of the pending
/// commits (what takes time on a big upstream) starts at once: upstream's
/// commits that the checkout has not (`HEAD..upstream`, which is
/// `merge-base..upstream` for a checkout sharing history with upstream),
/// while the merge base, the superproject's branch, pin and stable mark,
/// and the carried patches are read. The walk's answer is remembered for
/// its range (upstream head, checkout, tracked paths): between two fetches
/// a range does not change, so the statuses a release engineer runs all
/// day read it instead of walking again. A first status after a fetch
/// costs about the walk itself, later ones less than the walk
/// (`scripts/bench-integrate --status-only`, and on a real project
/// `--status-real`).
pub fn status(ig: &Integrate, fetch: bool) -> Result<Status, Error> {
    if fetch {
        ig.fetch_upstream()?;
    }
    let (sup, sub, cfg, pin) = (&ig.superproject, &ig.sub, &ig.cfg, ig.pin_of());
    lockstep_core::pool::side_by_side(|s| {
        let checked_out = s.spawn(|| pin.checked_out(sup));
        let upstream_head = match ig.fetched_upstream_head()? {
            Some(head) => head,
            None if !fetch => return crate::status::unfetched_status(ig),
            None => ig.upstream_head()?,
        };
        let current = joined(checked_out, "the checkout read")?;
        let remembered = remembered_walk(ig, &current, &upstream_head)?;
        let walk = match remembered {
            Some(_) => None,
            None => {
                let (checkout, head) = (current.clone(), upstream_head.clone());
                Some(s.spawn(move || walk_in(sub, cfg, &checkout, &head)))
            }
        };
        let branch = s.spawn(|| sup.current_branch());
        let pinned = s.spawn(|| pin.read_at(sup, "HEAD"));
        let unstable = s.spawn(|| crate::mark::unstable_reasons_in(sup));
        let merge_base = crate::status::merge_base_memo(ig, &current, &upstream_head)?
            .ok_or_else(|| no_shared_history(ig, &current))?;
        let patches = match merge_base != current {
            true => crate::status::patches(ig, &merge_base, &current, &upstream_head)?,
            false => Vec::new(),
        };
        let halted = crate::halt::halt(ig)?.as_ref().map(HaltSummary::from);
        let followers = crate::follow::followers(ig, &merge_base)?;
        let mut not_stable = joined(unstable, "the stable mark read")?;
        not_stable.extend(revert_reasons(&patches));
        let walked = match (remembered, walk) {
            (Some(commits), _) => commits,
            (None, Some(walk)) => {
                let commits = joined(walk, "the pending walk")?;
                remember_walk(ig, &current, &upstream_head, &commits)?;
                commits
            }
            (None, None) => Vec::new(),
        };
        Ok(Status {
            superproject: sup.dir().display().to_string(),
            branch: joined(branch, "the branch read")?,
            clean: patches.is_empty(),
            pin: joined(pinned, "the pin read")?,
            current,
            merge_base,
            upstream_ref: ig.upstream_ref(),
            upstream_head: upstream_head.clone(),
            upstream_fetched: true,
            fetch_plan: None,
            patches,
            pending: unskipped(cfg, walked),
            halted,
            not_stable,
            followers,
        })
    })
}

/// The error for a checkout that shares no history with upstream.
fn no_shared_history(ig: &Integrate, current: &str) -> Error {
    Error::failed(format!(
        "the upstream commit checked out ({current}, in {}) shares no history with {}",
        ig.pin_of().history_name(),
        ig.upstream_ref()
    ))
    .hint("check [integrate] upstream-url / upstream-remote point at the right repository")
}

/// The status of a submodule whose upstream was never fetched.
fn unfetched_status(ig: &Integrate) -> Result<Status, Error> {
    let current = ig.checked_out()?;
    Ok(Status {
        superproject: ig.superproject.dir().display().to_string(),
        branch: ig.superproject.current_branch()?,
        clean: true,
        pin: ig.pin()?,
        merge_base: current.clone(),
        upstream_head: current.clone(),
        current,
        upstream_ref: ig.upstream_ref(),
        upstream_fetched: false,
        fetch_plan: Some(ig.fetch_plan()?),
        patches: Vec::new(),
        pending: Vec::new(),
        halted: crate::halt::halt(ig)?.as_ref().map(HaltSummary::from),
        not_stable: crate::mark::unstable_reasons(ig)?,
        followers: Vec::new(),
    })
}

/// Where the pin is and what is pending, without annotating the carried
/// patches (what `next` and `loop` need; cheaper than [`crate::status::status`]).
pub fn position(ig: &Integrate) -> Result<Status, Error> {
    let upstream_head = ig.upstream_head()?;
    let pin = ig.pin()?;
    let current = ig.checked_out()?;
    let merge_base = crate::status::merge_base_memo(ig, &current, &upstream_head)?
        .ok_or_else(|| no_shared_history(ig, &current))?;
    let pending = crate::status::pending(ig, &merge_base, &upstream_head)?;
    Ok(Status {
        superproject: ig.superproject.dir().display().to_string(),
        branch: ig.superproject.current_branch()?,
        clean: merge_base == current,
        pin,
        current,
        merge_base,
        upstream_ref: ig.upstream_ref(),
        upstream_head,
        upstream_fetched: true,
        fetch_plan: None,
        patches: Vec::new(),
        pending,
        halted: None,
        not_stable: Vec::new(),
        followers: Vec::new(),
    })
}

/// Affecting commits in `base..head`, oldest first.
pub fn pending(ig: &Integrate, base: &str, head: &str) -> Result<Vec<Commit>, Error> {
    Ok(unskipped(&ig.cfg, walk_in(&ig.sub, &ig.cfg, base, head)?))
}

/// The commits of `base..head` touching the tracked paths, oldest first,
/// from the upstream history `sub` and the configuration alone (what a
/// thread of [`status`] can hold); `skip-subjects` not yet applied.
fn walk_in(
    sub: &lockstep_git::Repo,
    cfg: &crate::config::IntegrateConfig,
    base: &str,
    head: &str,
) -> Result<Vec<Commit>, Error> {
    let exclude = format!("^{base}");
    sub.log(&[head, &exclude], &cfg.track_paths)
}

/// `commits` without those `skip-subjects` leaves out.
fn unskipped(cfg: &crate::config::IntegrateConfig, commits: Vec<Commit>) -> Vec<Commit> {
    commits
        .into_iter()
        .filter(|c| !skipped_subject(cfg, &c.subject))
        .collect()
}

/// The last walk of [`status`], as the store keeps it: commits are
/// immutable, so `base..head` over the same paths lists the same commits
/// until one of the three changes.
#[derive(Debug, Serialize, Deserialize)]
struct RememberedWalk {
    base: Oid,
    head: Oid,
    paths: Vec<String>,
    commits: Vec<Commit>,
}

const WALK_RECORD: &str = "pending-walk";

/// The most commits a remembered walk holds (about 100 bytes each): a
/// longer range is walked each time rather than kept.
const MAX_REMEMBERED_COMMITS: usize = 200_000;

/// The walk of `base..head` remembered for the tracked paths, if it is. A
/// record that does not read (another lockstep's shape) is no memory: the
/// walk is made again and remembered anew, never an error.
fn remembered_walk(ig: &Integrate, base: &str, head: &str) -> Result<Option<Vec<Commit>>, Error> {
    let remembered = match ig.store.get::<RememberedWalk>(WALK_RECORD) {
        Ok(found) => found,
        Err(e) => {
            tracing::debug!(error = %e.message, "the remembered walk does not read; walking");
            None
        }
    };
    Ok(remembered
        .filter(|w| w.base == base && w.head == head && w.paths == ig.cfg.track_paths)
        .map(|w| w.commits))
}

/// Remembers the walk of `base..head` (only the last range is kept).
fn remember_walk(ig: &Integrate, base: &str, head: &str, commits: &[Commit]) -> Result<(), Error> {
    if commits.len() > MAX_REMEMBERED_COMMITS {
        return Ok(());
    }
    ig.store.set(
        WALK_RECORD,
        &RememberedWalk {
            base: base.to_string(),
            head: head.to_string(),
            paths: ig.cfg.track_paths.clone(),
            commits: commits.to_vec(),
        },
    )
}

/// Untracked upstream commits strictly between `good` and `bad`.
pub fn untracked_between(
    ig: &Integrate,
    good: &str,
    bad: &str,
) -> Result<(Vec<Commit>, usize), Error> {
    let exclude = format!("^{good}");
    let parent = format!("{bad}^");
    let between = ig.sub.log(&[&parent, &exclude], &[])?;
    let affecting: std::collections::HashSet<String> = crate::status::pending(ig, good, &parent)?
        .into_iter()
        .map(|c| c.sha)
        .collect();
    let untracked: Vec<Commit> = between
        .into_iter()
        .filter(|c| !affecting.contains(&c.sha))
        .collect();
    let total = untracked.len();
    Ok((untracked.into_iter().rev().take(50).collect(), total))
}

/// Why the project is not ok for a stable release: the mark's reasons,
/// then one per carried revert.
pub fn not_stable_because(ig: &Integrate, patches: &[Patch]) -> Result<Vec<String>, Error> {
    let mut all = crate::mark::unstable_reasons(ig)?;
    all.extend(revert_reasons(patches));
    Ok(all)
}

/// One reason per carried revert.
fn revert_reasons(patches: &[Patch]) -> Vec<String> {
    let mut all = Vec::new();
    for p in patches {
        if let Some(reverted) = &p.reverts {
            all.push(format!(
                "carries a revert of {}{}",
                crate::halt::short(reverted),
                p.reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ));
        }
    }
    all
}

fn skipped_subject(cfg: &crate::config::IntegrateConfig, subject: &str) -> bool {
    cfg.skip_subjects
        .iter()
        .any(|s| !s.is_empty() && subject.contains(s.as_str()))
}

/// The carried patches in `base..current`, annotated against `base..upstream`.
pub fn patches(
    ig: &Integrate,
    base: &str,
    current: &str,
    upstream: &str,
) -> Result<Vec<Patch>, Error> {
    let range = format!("{base}..{current}");
    let merges = ig.sub.rev_list(&["--merges", &range])?;
    if let Some(merge) = merges.first() {
        return Err(Error::usage(format!(
            "the carried patch stack {range} contains a merge commit {merge}"
        ))
        .hint("lockstep replays linear patch stacks; rebase the submodule's patches into a line"));
    }
    // A handful of git processes for the whole stack, not a few per patch.
    let details = ig.sub.commit_details(&["--reverse", &range])?;
    let shas: Vec<Oid> = details.iter().map(|d| d.sha.clone()).collect();
    let sha_refs: Vec<&str> = shas.iter().map(String::as_str).collect();
    let touched = ig.sub.changed_paths_of(&sha_refs)?;
    let ids: HashMap<Oid, String> = ig
        .sub
        .patch_ids_of(&sha_refs)?
        .into_iter()
        .map(|(id, sha)| (sha, id))
        .collect();
    let mut patches: Vec<Patch> = details
        .iter()
        .map(|detail| Patch {
            sha: detail.sha.clone(),
            subject: detail.subject.clone(),
            reason: reason(&detail.message),
            upstreamed: false,
            upstreamed_by: None,
            reverts: crate::reverts::reverted_by_patch(&detail.message),
            reverted_upstream_by: None,
        })
        .collect();
    let scan = crate::status::scan_upstream(ig, base, &shas, &touched, upstream)?;
    for patch in &mut patches {
        if let Some(id) = ids.get(&patch.sha) {
            if let Some(up) = scan.patch_ids.get(id) {
                patch.upstreamed = true;
                patch.upstreamed_by = Some(up.clone());
            }
        }
        if let Some(reverted) = &patch.reverts {
            patch.reverted_upstream_by = scan
                .reverts
                .iter()
                .find(|(target, _)| {
                    target.starts_with(reverted.as_str()) || reverted.starts_with(target.as_str())
                })
                .map(|(_, by)| by.clone());
        }
    }
    Ok(patches)
}

/// The reason a patch is carried: a `Lockstep-Reason:` trailer wins, else the
/// first non-empty body line (after the subject).
pub fn reason(message: &str) -> Option<String> {
    for line in message.lines() {
        if let Some(rest) = line.strip_prefix("Lockstep-Reason:") {
            let rest = rest.trim();
            if !rest.is_empty() {
                return Some(rest.to_string());
            }
        }
    }
    message
        .lines()
        .skip(1)
        .map(str::trim)
        .find(|l| !l.is_empty() && !is_trailer(l))
        .map(str::to_string)
}

fn is_trailer(line: &str) -> bool {
    static PREFIXES: [&str; 6] = [
        "Signed-off-by:",
        "Change-Id:",
        "Co-authored-by:",
        "Reviewed-by:",
        "Lockstep-",
        "(cherry picked from",
    ];
    PREFIXES.iter().any(|p| line.starts_with(p))
}

pub use crate::reverts::reverted_commit;

/// What upstream commits touching the carried patches' files contain: their
/// patch-ids and the commits they revert. Kept in the store and extended
/// incrementally as upstream moves, since the walk over a long pending range
/// is the expensive part of `status`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct UpstreamScan {
    pub base: Oid,
    pub patches: Vec<Oid>,
    /// The upstream commit scanned up to.
    pub upstream: Oid,
    pub patch_ids: HashMap<String, Oid>,
    /// (reverted commit, reverting upstream commit), oldest first.
    pub reverts: Vec<(String, Oid)>,
}

const SCAN_RECORD: &str = "upstream-scan";
const MERGE_BASE_RECORD: &str = "merge-base";

/// `git merge-base`, remembered for the last pair asked: commits are
/// immutable, and without a commit-graph the walk costs as much as the
/// pending list itself.
fn merge_base_memo(ig: &Integrate, current: &str, upstream: &str) -> Result<Option<Oid>, Error> {
    let key = (current.to_string(), upstream.to_string());
    if let Some((a, b, base)) = ig.store.get::<(String, String, Oid)>(MERGE_BASE_RECORD)? {
        if (a, b) == key {
            return Ok(Some(base));
        }
    }
    let base = ig.sub.merge_base(current, upstream)?;
    if let Some(b) = &base {
        ig.store.set(MERGE_BASE_RECORD, &(current, upstream, b))?;
    }
    Ok(base)
}

fn scan_upstream(
    ig: &Integrate,
    base: &str,
    patches: &[Oid],
    touched: &[String],
    upstream: &str,
) -> Result<UpstreamScan, Error> {
    let previous: Option<UpstreamScan> = ig.store.get(SCAN_RECORD)?;
    let reusable = previous.filter(|p| p.base == base && p.patches == patches);
    let mut scan = match reusable {
        Some(p) if p.upstream == upstream => return Ok(p),
        Some(p) if ig.sub.is_ancestor(&p.upstream, upstream)? => p,
        _ => UpstreamScan {
            base: base.to_string(),
            patches: patches.to_vec(),
            upstream: base.to_string(),
            ..UpstreamScan::default()
        },
    };
    if !touched.is_empty() {
        let exclude = format!("^{}", scan.upstream);
        let commits = ig.sub.messages(&[upstream, &exclude], touched)?;
        let shas: Vec<&str> = commits.iter().map(|(sha, _)| sha.as_str()).collect();
        for (id, sha) in ig.sub.patch_ids_of(&shas)? {
            scan.patch_ids.entry(id).or_insert(sha);
        }
        for (sha, message) in commits {
            if let Some(reverted) = reverted_commit(&message) {
                scan.reverts.push((reverted, sha));
            }
        }
    }
    scan.upstream = upstream.to_string();
    ig.store.set(SCAN_RECORD, &scan)?;
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_reason_trailer_wins_over_the_body() {
        let msg = "Fix x\n\nBecause y.\n\nLockstep-Reason: carried until z\n";
        assert_eq!(reason(msg).as_deref(), Some("carried until z"));
        assert_eq!(
            reason("Fix x\n\nBecause y.\n").as_deref(),
            Some("Because y.")
        );
        assert_eq!(reason("Fix x\n\nSigned-off-by: a\n"), None);
        assert_eq!(
            reverted_commit("Revert \"x\"\n\nThis reverts commit abcdef1234.\n").as_deref(),
            Some("abcdef1234")
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Commit messages of any text: the trailer parsers never panic, and
        /// what they return is text from the message.
        #[test]
        fn trailer_parsers_take_any_message(message in "(?s)(Lockstep-Reason:|This reverts commit |Signed-off-by:|[a-f0-9]{7}|.){0,40}") {
            if let Some(r) = reason(&message) {
                prop_assert!(message.contains(&r));
            }
            if let Some(sha) = reverted_commit(&message) {
                prop_assert!(message.contains(&sha));
            }
        }
    }
}
