//! Random carried stacks over random upstream histories: the fixtures of
//! `integrate loop`'s replay property test and benchmark.
//!
//! [`lockstep_sandbox::repos`] builds one hand-made story (three carried patches, one
//! planted conflict). Real integrates break on stacks nobody planned: a
//! backport of an upstream commit whose lines upstream rewrites later, a
//! local edit next to lines upstream changes, a patch upstream lands and
//! then changes again, a carried revert upstream reverts too. [`create`]
//! builds such a stack from a [`StackSpec`] ([`random_spec`] draws one from
//! a seed), over an upstream of small numbered files whose random edits may
//! also touch the patches' lines. It returns where every planted commit is,
//! so a test can tell a right halt from a wrong one.
//!
//! The layout is [`lockstep_sandbox::repos`]' (`upstream.git`, `fork.git`,
//! `super-origin.git`, `super` with the submodule at
//! [`lockstep_sandbox::repos::SUBMODULE_PATH`]), and so is the speed: each repository
//! is streamed through one `git fast-import`. The smoke fails while a file
//! under the submodule's `mlir/` holds a planted break `BROKEN_<n>` that the
//! superproject's `ACCEPTED_BREAKS` does not list (a person's fix for break
//! `n` is adding `BROKEN_<n>` to it); half the breaks are fixed upstream a
//! few commits later.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use lockstep_core::Error;

use lockstep_sandbox::repos::{
    clone_superproject, fast_import, file, git, init_bare, path_arg, try_git, write_commit,
    CommitInfo, FileChange, Mode, SplitMix64, SUBMODULE_PATH,
};

/// Numbered source files under the tracked path.
const UNITS: usize = 4;
/// Lines per file: room for patches to sit apart or next to each other.
const LINES: usize = 24;
/// Commits before the base (the ones a carried revert may revert).
const HISTORY: usize = 4;

/// One carried patch and what upstream later does to its lines. Positions
/// are fractions (0..1) of the pending range.
#[derive(Debug, Clone, PartialEq)]
pub enum Carried {
    /// A cherry-pick of the pending upstream commit at `at`; upstream
    /// rewrites the same line again at `rewritten`.
    Backport { at: f64, rewritten: Option<f64> },
    /// A local change to one line; upstream changes the line `offset` lines
    /// away (0: the same line) at `changed`.
    LocalEdit { changed: Option<f64>, offset: i32 },
    /// A local change upstream lands exactly at `landed`, then changes
    /// again at `changed`.
    Upstreamed { landed: f64, changed: Option<f64> },
    /// A revert of a commit before the base; upstream reverts the same
    /// commit at `reverted`, or relands it at `relanded`.
    Revert {
        reverted: Option<f64>,
        relanded: Option<f64>,
    },
    /// A new file of the downstream's own (always applies).
    NewFile,
}

impl Carried {
    /// The kind's name, for messages and benchmark tallies.
    pub fn kind(&self) -> &'static str {
        match self {
            Carried::Backport { .. } => "backport",
            Carried::LocalEdit { .. } => "local-edit",
            Carried::Upstreamed { .. } => "upstreamed",
            Carried::Revert { .. } => "revert",
            Carried::NewFile => "new-file",
        }
    }
}

/// What to build.
#[derive(Debug, Clone, PartialEq)]
pub struct StackSpec {
    /// Upstream commits after the base (the pending range).
    pub commits: usize,
    /// The carried patches, oldest first.
    pub carried: Vec<Carried>,
    /// Positions (fractions of the pending range) of commits that break the
    /// smoke (until a later edit rewrites their line).
    pub breaks: Vec<f64>,
    /// Whether random upstream edits may touch the patches' lines and their
    /// neighbours (unplanned conflicts); false keeps them apart.
    pub interfere: bool,
    /// Seed of the random edits (files, lines, authors).
    pub seed: u64,
}

/// A random stack of 1 to 4 patches over `commits` upstream commits, with
/// up to two breaks, drawn from `seed`.
pub fn random_spec(seed: u64, commits: usize) -> StackSpec {
    let mut rng = SplitMix64(seed ^ 0x5EED_0F57_AC4E_D001);
    let frac = |rng: &mut SplitMix64| rng.below(1000) as f64 / 1000.0;
    let maybe = |rng: &mut SplitMix64, percent: u64| {
        if rng.below(100) < percent {
            Some(frac(rng))
        } else {
            None
        }
    };
    let patches = 1 + rng.below(4) as usize;
    let carried = (0..patches)
        .map(|_| match rng.below(5) {
            0 => Carried::Backport {
                at: frac(&mut rng) * 0.5,
                rewritten: maybe(&mut rng, 60),
            },
            1 => Carried::LocalEdit {
                changed: maybe(&mut rng, 70),
                offset: rng.below(5) as i32 - 2,
            },
            2 => Carried::Upstreamed {
                landed: frac(&mut rng),
                changed: maybe(&mut rng, 40),
            },
            3 => Carried::Revert {
                reverted: maybe(&mut rng, 40),
                relanded: maybe(&mut rng, 20),
            },
            _ => Carried::NewFile,
        })
        .collect();
    let breaks = (0..rng.below(3)).map(|_| frac(&mut rng)).collect();
    StackSpec {
        commits,
        carried,
        breaks,
        interfere: rng.below(2) == 0,
        seed,
    }
}

/// A built stack sandbox and where its planted commits are.
#[derive(Debug, Clone)]
pub struct StackSandbox {
    pub root: PathBuf,
    pub upstream: PathBuf,
    pub fork: PathBuf,
    pub super_origin: PathBuf,
    pub superproject: PathBuf,
    pub submodule_path: String,
    /// Upstream commit the pin is based on.
    pub base: String,
    /// Base plus the carried patches.
    pub pin: String,
    pub head: String,
    /// Every commit of `base..head`, oldest first.
    pub pending: Vec<String>,
    /// The carried patches, oldest first: kind and subject.
    pub patches: Vec<(&'static str, String)>,
    /// The planted breaks, oldest first.
    pub breaks: Vec<String>,
}

/// One line of one file.
type Spot = (usize, usize);

/// What one upstream commit does.
#[derive(Debug, Clone)]
enum Change {
    /// Sets a line of a tracked unit file (`value` is the line's text).
    Set(Spot, String),
    /// Sets a line of the untracked file.
    Untracked(usize),
}

#[derive(Debug, Clone)]
struct UpstreamCommit {
    subject: String,
    /// Extra message lines (a revert's `This reverts commit X.`).
    body: String,
    change: Change,
}

/// A carried patch ready to write.
#[derive(Debug, Clone)]
struct Patch {
    kind: &'static str,
    message: String,
    /// `None`: a new file.
    set: Option<(Spot, String)>,
}

fn unit_path(unit: usize) -> String {
    format!("mlir/lib/Unit{unit}.cpp")
}

fn line_text(unit: usize, line: usize, value: &str) -> String {
    format!("int unit{unit}_line_{line}() {{ return {value}; }}")
}

fn render(lines: &[String]) -> String {
    let mut out = String::from("namespace mlir {\n");
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out.push_str("} // namespace mlir\n");
    out
}

/// Index of a position (fraction) in a range of `n`.
fn slot(p: f64, n: usize) -> usize {
    ((p.clamp(0.0, 1.0) * n as f64) as usize).min(n.saturating_sub(1))
}

/// The upstream and carried plan drawn from a spec.
struct Plan {
    /// History commits before the base (base last): what each sets.
    history: Vec<(Spot, String, String)>,
    pending: Vec<UpstreamCommit>,
    breaks: Vec<usize>,
    patches: Vec<Patch>,
    /// Reverts planted by patches: (pending index, history index).
    upstream_reverts: Vec<(usize, usize)>,
    /// Backports: (patch index, pending index picked).
    backports: Vec<(usize, usize)>,
    /// Carried reverts: (patch index, history index reverted).
    carried_reverts: Vec<(usize, usize)>,
}

impl Plan {
    fn new(spec: &StackSpec) -> Result<Plan, Error> {
        let n = spec.commits;
        if n == 0 {
            return Err(Error::usage(
                "a stack sandbox needs at least one pending commit",
            ));
        }
        for p in spec.breaks.iter() {
            if !(0.0..=1.0).contains(p) {
                return Err(Error::usage(format!(
                    "invalid stack spec: position {p} is not within 0..=1"
                )));
            }
        }
        let mut rng = SplitMix64(spec.seed);
        let mut value = 0usize;
        let mut fresh = |what: &str| {
            value += 1;
            format!("{value} /* {what} */")
        };
        // The history: each commit before the base sets one line.
        let history: Vec<(Spot, String, String)> = (0..HISTORY)
            .map(|h| {
                let spot = (h % UNITS, 2 + 5 * h);
                (
                    spot,
                    format!("[mlir] History change {}", h + 1),
                    fresh("history"),
                )
            })
            .collect();
        // Lines the patches own (apart from each other and from history).
        let mut owned: Vec<Spot> = Vec::new();
        let take_spot = |rng: &mut SplitMix64, owned: &mut Vec<Spot>| -> Spot {
            for _ in 0..200 {
                let spot = (
                    rng.below(UNITS as u64) as usize,
                    1 + rng.below((LINES - 2) as u64) as usize,
                );
                let near = |o: &Spot| o.0 == spot.0 && o.1.abs_diff(spot.1) < 5;
                if !owned.iter().any(near) && !history.iter().any(|(h, _, _)| near(h)) {
                    owned.push(spot);
                    return spot;
                }
            }
            let spot = (0, 1);
            owned.push(spot);
            spot
        };
        // Planted upstream commits by pending index (a later plant moves to
        // the next free index).
        let mut planted: Vec<Option<UpstreamCommit>> = vec![None; n];
        let plant = |planted: &mut Vec<Option<UpstreamCommit>>, at: usize, c: UpstreamCommit| {
            let free = (at..n).chain((0..at).rev()).find(|&i| planted[i].is_none());
            if let Some(i) = free {
                planted[i] = Some(c);
                Some(i)
            } else {
                None
            }
        };
        let set = |subject: String, spot: Spot, value: String| UpstreamCommit {
            subject,
            body: String::new(),
            change: Change::Set(spot, value),
        };
        let mut patches = Vec::new();
        let mut upstream_reverts = Vec::new();
        let mut backports = Vec::new();
        let mut carried_reverts = Vec::new();
        for (p, carried) in spec.carried.iter().enumerate() {
            let kind = carried.kind();
            match carried {
                Carried::Backport { at, rewritten } => {
                    let spot = take_spot(&mut rng, &mut owned);
                    let v = fresh("upstream fix");
                    let subject = format!("[mlir] Fix unit{} line {}", spot.0, spot.1);
                    let Some(k) = plant(
                        &mut planted,
                        slot(*at, n),
                        set(subject.clone(), spot, v.clone()),
                    ) else {
                        continue;
                    };
                    backports.push((patches.len(), k));
                    patches.push(Patch {
                        kind,
                        message: format!("[mlir] Backport: {subject}\n"),
                        set: Some((spot, v)),
                    });
                    if let Some(r) = rewritten {
                        let later = k + 1 + slot(*r, n.saturating_sub(k + 1).max(1));
                        if later < n {
                            let subject = format!("[mlir] Rework unit{} line {}", spot.0, spot.1);
                            plant(&mut planted, later, set(subject, spot, fresh("rework")));
                        }
                    }
                }
                Carried::LocalEdit { changed, offset } => {
                    let spot = take_spot(&mut rng, &mut owned);
                    patches.push(Patch {
                        kind,
                        message: format!("[mlir] Local change to unit{} line {}\n", spot.0, spot.1),
                        set: Some((spot, fresh("local"))),
                    });
                    if let Some(c) = changed {
                        let line =
                            (spot.1 as i64 + *offset as i64).clamp(0, LINES as i64 - 1) as usize;
                        let target = (spot.0, line);
                        let subject = format!("[mlir] Change unit{} line {line}", spot.0);
                        plant(
                            &mut planted,
                            slot(*c, n),
                            set(subject, target, fresh("upstream change")),
                        );
                    }
                }
                Carried::Upstreamed { landed, changed } => {
                    let spot = take_spot(&mut rng, &mut owned);
                    let v = fresh("local fix");
                    let subject = format!("[mlir] Local fix of unit{} line {}", spot.0, spot.1);
                    patches.push(Patch {
                        kind,
                        message: format!("{subject}\n"),
                        set: Some((spot, v.clone())),
                    });
                    if let Some(k) = plant(&mut planted, slot(*landed, n), set(subject, spot, v)) {
                        if let Some(c) = changed {
                            let later = k + 1 + slot(*c, n.saturating_sub(k + 1).max(1));
                            if later < n {
                                let subject =
                                    format!("[mlir] Rework unit{} line {}", spot.0, spot.1);
                                plant(&mut planted, later, set(subject, spot, fresh("rework")));
                            }
                        }
                    }
                }
                Carried::Revert { reverted, relanded } => {
                    // Each history commit is reverted by at most one patch.
                    let Some(h) =
                        (0..HISTORY).find(|h| !carried_reverts.iter().any(|(_, r)| r == h))
                    else {
                        patches.push(Patch {
                            kind: "new-file",
                            message: format!("[mlir] Add Local{p}.cpp\n"),
                            set: None,
                        });
                        continue;
                    };
                    carried_reverts.push((patches.len(), h));
                    let (spot, subject, _) = &history[h];
                    patches.push(Patch {
                        kind,
                        // The message's sha is filled in once the history exists.
                        message: format!("Revert \"{subject}\"\n"),
                        set: Some((*spot, "0 /* before */".to_string())),
                    });
                    if let Some(r) = reverted {
                        let c = UpstreamCommit {
                            subject: format!("Revert \"{subject}\""),
                            body: String::new(),
                            change: Change::Set(*spot, "0 /* before */".to_string()),
                        };
                        if let Some(i) = plant(&mut planted, slot(*r, n), c) {
                            upstream_reverts.push((i, h));
                        }
                    } else if let Some(r) = relanded {
                        let line = (spot.1 + 2).min(LINES - 1);
                        let c = set(
                            format!("Reland \"{subject}\" with a fix"),
                            (spot.0, line),
                            fresh("reland"),
                        );
                        plant(&mut planted, slot(*r, n), c);
                    }
                }
                Carried::NewFile => patches.push(Patch {
                    kind,
                    message: format!("[mlir] Add Local{p}.cpp\n"),
                    set: None,
                }),
            }
        }
        let mut breaks = Vec::new();
        for (id, b) in spec.breaks.iter().enumerate() {
            let spot = (
                rng.below(UNITS as u64) as usize,
                rng.below(LINES as u64) as usize,
            );
            let subject = format!("[mlir] Change the API of unit{} (breaking)", spot.0);
            let broken = set(subject, spot, format!("BROKEN_{id}"));
            let Some(i) = plant(&mut planted, slot(*b, n), broken) else {
                continue;
            };
            breaks.push(i);
            // Half the breaks are fixed forward a few commits later.
            if rng.below(2) == 0 {
                let fix = i + 1 + rng.below(8) as usize;
                if fix < n {
                    let subject = format!("[mlir] Fix the API of unit{} again", spot.0);
                    plant(&mut planted, fix, set(subject, spot, fresh("fixed")));
                }
            }
        }
        breaks.sort_unstable();
        let near_owned = |spot: Spot| {
            owned
                .iter()
                .chain(history.iter().map(|(h, _, _)| h))
                .any(|o| o.0 == spot.0 && o.1.abs_diff(spot.1) < 3)
        };
        let pending = planted
            .into_iter()
            .map(|c| match c {
                Some(c) => c,
                None if rng.below(100) < 30 => UpstreamCommit {
                    subject: "[llvm] Tweak the backend".into(),
                    body: String::new(),
                    change: Change::Untracked(rng.below(LINES as u64) as usize),
                },
                None => {
                    let mut spot;
                    let mut tries = 0;
                    loop {
                        spot = (
                            rng.below(UNITS as u64) as usize,
                            rng.below(LINES as u64) as usize,
                        );
                        tries += 1;
                        if spec.interfere || !near_owned(spot) || tries > 100 {
                            break;
                        }
                    }
                    let subject = format!("[mlir] Tweak unit{} line {}", spot.0, spot.1);
                    set(subject, spot, fresh("tweak"))
                }
            })
            .collect();
        Ok(Plan {
            history,
            pending,
            breaks,
            patches,
            upstream_reverts,
            backports,
            carried_reverts,
        })
    }
}

const DEV: (&str, &str) = ("Sandbox Dev", "dev@example.com");
const AUTHORS: &[(&str, &str)] = &[
    ("Alice Chen", "alice.chen@example.org"),
    ("Bogdan Petrescu", "bogdan.petrescu@example.net"),
    ("Chiara Rossi", "chiara.rossi@example.com"),
];
const PATCH_AUTHOR: (&str, &str) = ("Priya Raman", "priya.raman@downstream.example.com");
const START: i64 = 1_767_225_600;

/// The files' contents as a model: one vector of lines per unit, plus the
/// untracked file.
#[derive(Clone)]
struct Files {
    units: Vec<Vec<String>>,
    untracked: Vec<String>,
}

impl Files {
    fn initial() -> Files {
        Files {
            units: (0..UNITS)
                .map(|u| {
                    (0..LINES)
                        .map(|l| line_text(u, l, "0 /* before */"))
                        .collect()
                })
                .collect(),
            untracked: (0..LINES)
                .map(|l| format!("int backend_{l}() {{ return 0; }}"))
                .collect(),
        }
    }

    fn set(&mut self, (unit, line): Spot, value: &str) {
        self.units[unit][line] = line_text(unit, line, value);
    }
}

/// Builds the sandbox in `dir` (created if missing; it must not already hold
/// the repositories).
pub fn create(dir: &Path, spec: &StackSpec) -> Result<StackSandbox, Error> {
    let plan = Plan::new(spec)?;
    let lockstep_sandbox::repos::Layout {
        root,
        upstream,
        fork,
        super_origin,
        superproject,
    } = lockstep_sandbox::repos::Layout::new(dir)?;
    let mark_of = |marks: &std::collections::HashMap<usize, String>, m: usize| {
        marks
            .get(&m)
            .cloned()
            .ok_or_else(|| Error::failed(format!("git fast-import did not report mark :{m}")))
    };

    // 1. The history and the base (what carried reverts name).
    init_bare(&upstream)?;
    let mut files = Files::initial();
    let mut history_files = Vec::new();
    for (spot, _, value) in &plan.history {
        files.set(*spot, value);
        history_files.push(files.clone());
    }
    let marks = fast_import(&upstream, &root.join(".stack-history.marks"), |w| {
        write_history(w, &plan, &history_files)
    })?;
    let history: Vec<String> = (1..=HISTORY + 1)
        .map(|m| mark_of(&marks, m))
        .collect::<Result<_, _>>()?;
    let base = history[HISTORY].clone();
    let base_files = files.clone();

    // 2. The pending range.
    let mut pending_files = Vec::new();
    for c in &plan.pending {
        match &c.change {
            Change::Set(spot, value) => files.set(*spot, value),
            Change::Untracked(line) => {
                files.untracked[*line] = format!(
                    "int backend_{line}() {{ return {}; }}",
                    pending_files.len() + 1
                )
            }
        }
        pending_files.push(files.clone());
    }
    let marks = fast_import(&upstream, &root.join(".stack-pending.marks"), |w| {
        write_pending(w, &plan, &base, &history, &pending_files)
    })?;
    let pending: Vec<String> = (1..=plan.pending.len())
        .map(|m| mark_of(&marks, m))
        .collect::<Result<_, _>>()?;
    let head = pending.last().cloned().unwrap_or_else(|| base.clone());

    // 3. The fork: the base on `main`, the patches on `carried`.
    init_bare(&fork)?;
    git(
        &upstream,
        &[
            "push",
            "--quiet",
            path_arg(&fork)?,
            &format!("{base}:refs/heads/main"),
        ],
    )?;
    let mut patch_files = Vec::new();
    let mut files = base_files;
    for patch in &plan.patches {
        if let Some((spot, value)) = &patch.set {
            files.set(*spot, value);
        }
        patch_files.push(files.clone());
    }
    let messages: Vec<String> = plan
        .patches
        .iter()
        .enumerate()
        .map(|(p, patch)| {
            let mut message = patch.message.clone();
            if let Some((_, k)) = plan.backports.iter().find(|(i, _)| *i == p) {
                message.push_str(&format!("\n(cherry picked from commit {})\n", pending[*k]));
            }
            if let Some((_, h)) = plan.carried_reverts.iter().find(|(i, _)| *i == p) {
                message.push_str(&format!("\nThis reverts commit {}.\n", history[*h]));
            }
            message
        })
        .collect();
    let marks = fast_import(&fork, &root.join(".stack-fork.marks"), |w| {
        write_patches(w, &plan, &base, &messages, &patch_files)
    })?;
    let patch_shas: Vec<String> = (1..=plan.patches.len())
        .map(|m| mark_of(&marks, m))
        .collect::<Result<_, _>>()?;
    let pin = patch_shas.last().cloned().unwrap_or_else(|| base.clone());
    if patch_shas.is_empty() {
        git(&fork, &["update-ref", "refs/heads/carried", &base])?;
    }

    // 4. The superproject.
    init_bare(&super_origin)?;
    fast_import(&super_origin, &root.join(".stack-super.marks"), |w| {
        write_superproject(w, &pin, &upstream, &fork)
    })?;
    clone_superproject(&root, &super_origin, &superproject)?;

    Ok(StackSandbox {
        root,
        upstream,
        fork,
        super_origin,
        superproject,
        submodule_path: SUBMODULE_PATH.to_string(),
        base,
        pin,
        head,
        patches: plan
            .patches
            .iter()
            .map(|p| (p.kind, p.message.lines().next().unwrap_or("").to_string()))
            .collect(),
        breaks: plan.breaks.iter().map(|&i| pending[i].clone()).collect(),
        pending,
    })
}

/// How replaying a carried stack onto an upstream commit ended.
#[derive(Debug, Clone)]
pub struct Replayed {
    /// The patched head (the commit itself when nothing is carried).
    pub head: String,
    /// The first patch that did not apply: its subject and files.
    pub conflict: Option<(String, Vec<String>)>,
}

/// Replays the carried stack `base..current` of `repo` onto `onto` by the
/// rule docs/integrate.md states, written apart from lockstep's own replay
/// so tests can check it: each patch merged in turn (`git merge-tree`); one
/// whose change upstream already has is dropped; a carried revert whose
/// commit upstream reverted or relanded in `base..onto` is dropped. Stops at
/// the first patch that does not apply, or with `drop_conflicts` leaves it
/// out and goes on (a person's resolution of a conflict halt).
pub fn replay_by_hand(
    repo: &Path,
    base: &str,
    current: &str,
    onto: &str,
    drop_conflicts: bool,
) -> Result<Replayed, Error> {
    let list = git(
        repo,
        &["rev-list", "--reverse", &format!("{base}..{current}")],
    )?;
    let mut head = onto.to_string();
    for patch in list.split_whitespace() {
        let message = git(repo, &["log", "-1", "--format=%B", patch])?;
        if let Some(reverted) = message
            .lines()
            .find_map(|l| l.strip_prefix("This reverts commit "))
            .map(|s| s.trim().trim_end_matches('.').to_string())
        {
            let upstream = git(
                repo,
                &["log", "--format=%B%x00", &format!("{base}..{onto}")],
            )?;
            let caught_up = upstream.split('\0').any(|m| {
                m.contains(&format!("This reverts commit {reverted}"))
                    || m.to_lowercase().contains("reland")
            });
            if caught_up {
                continue;
            }
        }
        let parent = format!("{patch}^");
        let args = [
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--merge-base",
            &parent,
            &head,
            patch,
        ];
        let out = try_git(repo, &args, None)?;
        let mut lines = out.stdout.lines();
        let tree = lines.next().unwrap_or_default().to_string();
        match out.code {
            0 => {}
            1 if drop_conflicts => continue,
            1 => {
                let files = lines
                    .take_while(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect();
                let subject = git(repo, &["log", "-1", "--format=%s", patch])?;
                return Ok(Replayed {
                    head,
                    conflict: Some((subject.trim().to_string(), files)),
                });
            }
            _ => {
                return Err(
                    Error::failed(format!("`git merge-tree` failed in {}", repo.display()))
                        .cause(out.stderr.trim().to_string()),
                )
            }
        }
        let head_tree = git(repo, &["rev-parse", &format!("{head}^{{tree}}")])?;
        if tree != head_tree.trim() {
            head = git(repo, &["commit-tree", &tree, "-p", &head, "-m", &message])?
                .trim()
                .to_string();
        }
    }
    Ok(Replayed {
        head,
        conflict: None,
    })
}

/// Every file of `files` as fast-import changes.
fn tree_changes(files: &Files) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = files
        .units
        .iter()
        .enumerate()
        .map(|(u, lines)| (unit_path(u), render(lines)))
        .collect();
    out.push(("llvm/lib/Backend.cpp".into(), render(&files.untracked)));
    out
}

fn write_files(
    w: &mut dyn Write,
    info: &CommitInfo<'_>,
    changes: &[(String, String)],
) -> io::Result<()> {
    let files: Vec<FileChange> = changes.iter().map(|(p, d)| file(p, d)).collect();
    write_commit(w, info, &files)
}

fn write_history(w: &mut dyn Write, plan: &Plan, snapshots: &[Files]) -> io::Result<()> {
    let initial = tree_changes(&Files::initial());
    let info = CommitInfo {
        branch: "refs/heads/main",
        mark: 1,
        author: AUTHORS[0],
        time: START - 100 * 3600,
        message: "Initial commit\n",
        from: None,
    };
    write_files(w, &info, &initial)?;
    for (h, ((spot, subject, _), files)) in plan.history.iter().zip(snapshots).enumerate() {
        let message = format!("{subject}\n");
        let info = CommitInfo {
            branch: "refs/heads/main",
            mark: h + 2,
            author: AUTHORS[h % AUTHORS.len()],
            time: START - (50 - h as i64) * 3600,
            message: &message,
            from: None,
        };
        let path = unit_path(spot.0);
        let data = render(&files.units[spot.0]);
        write_commit(w, &info, &[file(&path, &data)])?;
    }
    w.write_all(b"done\n")
}

fn write_pending(
    w: &mut dyn Write,
    plan: &Plan,
    base: &str,
    history: &[String],
    snapshots: &[Files],
) -> io::Result<()> {
    for (i, (c, files)) in plan.pending.iter().zip(snapshots).enumerate() {
        let mut message = format!("{}\n", c.subject);
        message.push_str(&c.body);
        if let Some((_, h)) = plan.upstream_reverts.iter().find(|(at, _)| *at == i) {
            message.push_str(&format!("\nThis reverts commit {}.\n", history[*h]));
        }
        let info = CommitInfo {
            branch: "refs/heads/main",
            mark: i + 1,
            author: AUTHORS[i % AUTHORS.len()],
            time: START + 600 * i as i64,
            message: &message,
            from: (i == 0).then_some(base),
        };
        let (path, data) = match &c.change {
            Change::Set((unit, _), _) => (unit_path(*unit), render(&files.units[*unit])),
            Change::Untracked(_) => ("llvm/lib/Backend.cpp".to_string(), render(&files.untracked)),
        };
        write_commit(w, &info, &[file(&path, &data)])?;
    }
    w.write_all(b"done\n")
}

fn write_patches(
    w: &mut dyn Write,
    plan: &Plan,
    base: &str,
    messages: &[String],
    snapshots: &[Files],
) -> io::Result<()> {
    for (p, ((patch, message), files)) in
        plan.patches.iter().zip(messages).zip(snapshots).enumerate()
    {
        let info = CommitInfo {
            branch: "refs/heads/carried",
            mark: p + 1,
            author: PATCH_AUTHOR,
            time: START - 10 * 3600 + 60 * p as i64,
            message,
            from: (p == 0).then_some(base),
        };
        match &patch.set {
            Some(((unit, _), _)) => {
                let path = unit_path(*unit);
                let data = render(&files.units[*unit]);
                write_commit(w, &info, &[file(&path, &data)])?;
            }
            None => {
                let path = format!("mlir/lib/Local{p}.cpp");
                let data = format!("// Downstream-only code.\nint local_{p}() {{ return {p}; }}\n");
                write_commit(w, &info, &[file(&path, &data)])?;
            }
        }
    }
    w.write_all(b"done\n")
}

fn write_superproject(
    w: &mut dyn Write,
    pin: &str,
    upstream: &Path,
    fork: &Path,
) -> io::Result<()> {
    let (gitmodules, toml) = lockstep_sandbox::repos::superproject_config(fork, upstream, None);
    let message = format!("Add llvm-project at {}\n", &pin[..pin.len().min(12)]);
    let info = CommitInfo {
        branch: "refs/heads/main",
        mark: 1,
        author: DEV,
        time: START - 3600,
        message: &message,
        from: None,
    };
    let files = [
        file(
            "README.md",
            "# stacked\n\nA superproject carrying random patches.\n",
        ),
        FileChange {
            mode: Mode::Exec,
            path: "build_tools/smoke.sh",
            data: SMOKE_SH,
        },
        file(".gitmodules", &gitmodules),
        file("lockstep.toml", &toml),
        FileChange {
            mode: Mode::Gitlink,
            path: SUBMODULE_PATH,
            data: pin,
        },
    ];
    write_commit(w, &info, &files)?;
    w.write_all(b"done\n")
}

const SMOKE_SH: &str = r#"#!/usr/bin/env bash
# The stack sandbox's smoke: fails while the submodule's mlir/ holds a break
# (BROKEN_<n>) that ACCEPTED_BREAKS does not list.
set -u
cd "$(dirname "$0")/.." || exit 2
if [ -n "${LOCKSTEP_SANDBOX_SMOKE_LOG:-}" ]; then
  git -C third_party/llvm-project rev-parse HEAD >> "$LOCKSTEP_SANDBOX_SMOKE_LOG"
fi
status=0
for word in $(grep -rhoE 'BROKEN_[0-9]+' third_party/llvm-project/mlir | sort -u); do
  if ! grep -qx "$word" ACCEPTED_BREAKS 2>/dev/null; then
    echo "error: the API broke ($word)"
    status=1
  fi
done
[ "$status" = 0 ] && echo "smoke: ok"
exit "$status"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_random_stack_builds_and_pins_its_patches() {
        for seed in 0..6 {
            let tmp = tempfile::tempdir().expect("tmp");
            let spec = random_spec(seed, 40);
            let sb = create(tmp.path(), &spec).expect("sandbox");
            assert_eq!(sb.pending.len(), 40);
            let count = git(
                &sb.fork,
                &["rev-list", "--count", &format!("{}..{}", sb.base, sb.pin)],
            )
            .expect("rev-list");
            assert_eq!(count.trim(), sb.patches.len().to_string(), "{spec:?}");
            let sub = sb.superproject.join(&sb.submodule_path);
            let at = git(&sub, &["rev-parse", "HEAD"]).expect("rev-parse");
            assert_eq!(at.trim(), sb.pin);
        }
    }

    #[test]
    fn a_backport_names_its_upstream_commit_and_upstream_rewrites_its_line() {
        let tmp = tempfile::tempdir().expect("tmp");
        let spec = StackSpec {
            commits: 30,
            carried: vec![Carried::Backport {
                at: 0.1,
                rewritten: Some(0.5),
            }],
            breaks: vec![],
            interfere: false,
            seed: 3,
        };
        let sb = create(tmp.path(), &spec).expect("sandbox");
        let message = git(&sb.fork, &["log", "-1", "--format=%B", &sb.pin]).expect("log");
        assert!(
            message.contains(&format!("cherry picked from commit {}", sb.pending[3])),
            "{message}"
        );
        // Replaying the backport from the base conflicts once upstream rewrote its line.
        let upstream = path_arg(&sb.upstream).expect("path");
        git(
            &sb.fork,
            &[
                "push",
                "--quiet",
                upstream,
                &format!("{}:refs/heads/pin", sb.pin),
            ],
        )
        .expect("push the pin upstream");
        let out = try_git(
            &sb.upstream,
            &[
                "merge-tree",
                "--write-tree",
                "--merge-base",
                &sb.base,
                &sb.head,
                &sb.pin,
            ],
            None,
        )
        .expect("merge-tree");
        assert_eq!(out.code, 1, "a conflict at head");
    }
}
