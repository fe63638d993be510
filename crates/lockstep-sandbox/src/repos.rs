//! A throw-away but realistic set of git repositories for exercising integrates.
//!
//! `lockstep demo`, the integration tests and the benchmark all need the same
//! thing: an "llvm-project" upstream with a long pending history, a fork the
//! superproject's submodule points at (carrying local patches), and a
//! superproject that pins the submodule and has a smoke test whose verdict is
//! known in advance. [`create`] builds all of that in one directory and returns
//! a [`Sandbox`] describing the ground truth (which commits affect the tracked
//! path, where the API breaks are, which upstream commit conflicts with a carried
//! patch, which one lands a carried patch), so callers can check lockstep's
//! answers against it instead of against another run of lockstep.
//!
//! Speed matters because benchmarks ask for tens of thousands of commits: the
//! upstream history is streamed through a single `git fast-import` process (as
//! are the carried patches and the superproject's commits), never one `git
//! commit` per commit. Every commit has a fixed author, committer and date, so
//! the same [`SandboxSpec`] always yields the same object names, and nothing
//! depends on the user's global git identity.
//!
//! Layout under the sandbox root:
//!
//! - `upstream.git`: bare "llvm-project" upstream, branch `main`.
//! - `fork.git`: bare fork, the submodule's `origin`: `main` = the base,
//!   `carried` = the pin (base plus carried patches).
//! - `super-origin.git`: bare origin of the superproject, branch `main`.
//! - `super`: a clone of `super-origin.git` with the submodule
//!   `third_party/llvm-project` initialised and checked out (detached) at the pin.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use lockstep_core::Error;
use lockstep_git::Repo;

/// What to build. See [`SandboxSpec::demo`] for a typical value.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxSpec {
    /// Upstream commits after the pinned base commit (the pending range).
    pub commits: usize,
    /// Fraction of those commits that touch the tracked path `mlir/` (the rest
    /// touch `llvm/` or `docs/`).
    pub affecting_ratio: f64,
    /// API breaks: positions as fractions (0..1) of the *affecting* commits in
    /// the pending range. Each break is an affecting commit that increments the
    /// integer in `mlir/include/API_VERSION`.
    pub breaks: Vec<f64>,
    /// Whether the pin carries local patches (three commits on top of the base).
    pub patches: bool,
    /// Position (fraction of affecting commits) of an upstream commit that
    /// conflicts with the carried patch "conflict" (only when `patches`).
    pub conflict_at: Option<f64>,
    /// Position (fraction of affecting commits) of an upstream commit that lands
    /// exactly the change of the carried patch "upstreamed" (only when `patches`).
    pub upstreams_patch_at: Option<f64>,
    /// Number of commits touching `mlir/docs/` whose subject starts with
    /// `[Docs]` (skipped by the default skip-subjects). They count towards
    /// `affecting_ratio` but are not in [`Sandbox::affecting`].
    pub docs_commits: usize,
    /// Upstream carries `mlir/tools/mini-opt`, the tool the superproject's
    /// lit suite (`suites/lit`) tests: one upstream commit changes how it
    /// prints its count (one lit test trivially broken), a later one
    /// prefixes every name with its dialect (three broken at once).
    pub lit_changes: bool,
    /// Seed of the generator choosing positions, files and authors.
    pub seed: u64,
}

impl SandboxSpec {
    /// The sandbox `lockstep demo` uses: 320 pending commits, 60% touching
    /// `mlir/`, two API breaks, carried patches with one conflict and one
    /// upstreamed patch, five `[Docs]` commits.
    pub fn demo() -> Self {
        SandboxSpec {
            commits: 320,
            affecting_ratio: 0.6,
            breaks: vec![0.3, 0.7],
            patches: true,
            conflict_at: Some(0.5),
            upstreams_patch_at: Some(0.2),
            docs_commits: 5,
            lit_changes: true,
            seed: 1,
        }
    }
}

/// A built sandbox and its ground truth. Paths are absolute.
#[derive(Clone)]
pub struct Sandbox {
    pub root: PathBuf,
    /// Bare repository `root/upstream.git` ("llvm-project" upstream), branch `main`.
    pub upstream: PathBuf,
    /// Bare repository `root/fork.git`: the submodule's `origin` (export
    /// target); branch `main` = base, branch `carried` = pin.
    pub fork: PathBuf,
    /// Bare repository `root/super-origin.git`: the superproject's origin, branch `main`.
    pub super_origin: PathBuf,
    /// Work tree `root/super`: clone of `super_origin`, submodule initialised.
    pub superproject: PathBuf,
    /// `third_party/llvm-project`.
    pub submodule_path: String,
    /// Upstream commit the pin is based on.
    pub base: String,
    /// The commit the superproject pins (base plus carried patches, or base).
    pub pin: String,
    /// Upstream `main` head.
    pub head: String,
    /// Commits in `base..head` touching `mlir/` whose subject does not start
    /// with `[Docs]`, oldest first.
    pub affecting: Vec<String>,
    /// The API-break commits, oldest first.
    pub breaks: Vec<String>,
    /// Upstream commit that conflicts with the carried patch on `Conflict.cpp`.
    pub conflict_commit: Option<String>,
    /// Upstream commit that lands exactly the carried patch on `Upstreamed.cpp`.
    pub upstreamed_commit: Option<String>,
    /// With [`SandboxSpec::lit_changes`]: the upstream commit that changes
    /// `mini-opt --count` (breaks one lit test) and the one that prefixes
    /// names (breaks three).
    pub tool_format_commit: Option<String>,
    pub tool_names_commit: Option<String>,
    /// Subjects of the carried patches, oldest first (empty without patches).
    pub patch_subjects: Vec<String>,
    /// Every commit of `base..head`, oldest first (affecting or not).
    pub pending: Vec<String>,
    /// API level (content of `mlir/include/API_VERSION`) of every known commit.
    levels: HashMap<String, u32>,
}

impl fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sandbox")
            .field("root", &self.root)
            .field("upstream", &self.upstream)
            .field("fork", &self.fork)
            .field("super_origin", &self.super_origin)
            .field("superproject", &self.superproject)
            .field("submodule_path", &self.submodule_path)
            .field("base", &self.base)
            .field("pin", &self.pin)
            .field("head", &self.head)
            .field(
                "affecting",
                &format_args!("[{} commits]", self.affecting.len()),
            )
            .field("breaks", &self.breaks)
            .field("conflict_commit", &self.conflict_commit)
            .field("upstreamed_commit", &self.upstreamed_commit)
            .field("patch_subjects", &self.patch_subjects)
            .field("pending", &format_args!("[{} commits]", self.pending.len()))
            .finish()
    }
}

/// The API level the superproject must declare (in `API_LEVEL`) to pass smoke
/// with the submodule at `upstream_commit`: 1 plus the number of API breaks
/// that are ancestors of (or equal to) it.
///
/// Accepts full object names or unique abbreviations (at least 4 hex digits) of
/// upstream commits, the base's ancestors and the carried patches; `None` for
/// anything else (including ref names).
pub fn api_level_at(sandbox: &Sandbox, upstream_commit: &str) -> Option<u32> {
    let key = upstream_commit.trim().to_ascii_lowercase();
    if let Some(level) = sandbox.levels.get(&key) {
        return Some(*level);
    }
    if key.len() < 4 || key.len() >= 40 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut found = None;
    for (sha, level) in &sandbox.levels {
        if sha.starts_with(&key) {
            if found.is_some() {
                return None; // ambiguous
            }
            found = Some(*level);
        }
    }
    found
}

/// Submodule path inside the superproject.
pub const SUBMODULE_PATH: &str = "third_party/llvm-project";

const DEV_NAME: &str = "Sandbox Dev";
const DEV_EMAIL: &str = "dev@example.com";

/// 2025-12-01T00:00:00Z: first commit of the history before the base.
const HISTORY_START: i64 = 1_764_547_200;
/// 2025-12-31T12:00:00Z: the base commit.
const BASE_DATE: i64 = 1_767_182_400;
/// 2026-01-01T00:00:00Z: first pending commit; then one every 10 minutes.
const PENDING_START: i64 = 1_767_225_600;
const PENDING_STEP: i64 = 600;

/// Lines kept by a file that commits keep appending to (older ones roll off),
/// so blobs stay small however long the history is.
const WINDOW: usize = 12;

const AUTHORS: &[(&str, &str)] = &[
    ("Alice Chen", "alice.chen@example.org"),
    ("Bogdan Petrescu", "bogdan.petrescu@example.net"),
    ("Chiara Rossi", "chiara.rossi@example.com"),
    ("Dmitri Volkov", "dvolkov@example.org"),
    ("Emeka Okafor", "emeka.okafor@example.com"),
    ("Fatima Al-Sayed", "fatima.alsayed@example.net"),
    ("Grace Kim", "grace.kim@example.org"),
    ("Hiroshi Tanaka", "htanaka@example.com"),
    ("Ingrid Larsen", "ingrid.larsen@example.net"),
    ("Jorge Mendez", "jorge.mendez@example.org"),
];

const PATCH_AUTHOR: (&str, &str) = ("Priya Raman", "priya.raman@downstream.example.com");

const TARGETS: &[&str] = &[
    "X86",
    "AArch64",
    "RISCV",
    "AMDGPU",
    "ARM",
    "PowerPC",
    "WebAssembly",
    "SystemZ",
    "Mips",
    "NVPTX",
];
const MLIR_PASSES: usize = 20;
const TOP_DOCS: &[&str] = &[
    "GettingStarted.rst",
    "ReleaseNotes.rst",
    "CodingStandards.rst",
    "LangRef.rst",
];
const MLIR_DOCS: &[&str] = &["Passes.md", "Tutorial.md", "Rationale.md"];

const VERBS: &[&str] = &[
    "Tweak",
    "Fix",
    "Simplify",
    "Refactor",
    "Improve",
    "Handle",
    "Clean up",
    "Speed up",
    "Generalize",
    "Harden",
];
const NOUNS: &[&str] = &[
    "lowering",
    "folding",
    "canonicalization",
    "verifier",
    "pattern matching",
    "type conversion",
    "cost model",
    "instruction selection",
    "constant propagation",
    "register allocation hints",
];
const BREAK_SUBJECTS: &[&str] = &[
    "[mlir] Rename OpBuilder::create API (breaking)",
    "[mlir] Remove deprecated Operation::getAttrs overload (breaking)",
    "[mlir] Change TypeConverter callback signature (breaking)",
    "[mlir] Make PassManager::run return LogicalResult (breaking)",
];

const API_VERSION: &str = "mlir/include/API_VERSION";
/// The tool the superproject's lit suite tests ([`SandboxSpec::lit_changes`]).
pub const TOOL: &str = "mlir/tools/mini-opt";
const LEGACY: &str = "mlir/lib/Legacy.cpp";
const CONFLICT: &str = "mlir/lib/Conflict.cpp";
const UPSTREAMED: &str = "mlir/lib/Upstreamed.cpp";

const PATCH_REVERT_SUBJECT: &str = "Revert \"[mlir] Drop legacy pass registration\"";
const PATCH_CONFLICT_SUBJECT: &str = "[mlir] Local fix in Conflict.cpp";
const UPSTREAMED_SUBJECT: &str = "[mlir] Fix off-by-one in Upstreamed.cpp";

/// Where a sandbox's repositories go (absolute, under `root`).
pub struct Layout {
    pub root: PathBuf,
    pub upstream: PathBuf,
    pub fork: PathBuf,
    pub super_origin: PathBuf,
    pub superproject: PathBuf,
}

impl Layout {
    /// The layout in `dir` (created if missing), which must not already
    /// hold any of the repositories.
    pub fn new(dir: &Path) -> Result<Layout, Error> {
        fs::create_dir_all(dir).map_err(|e| {
            Error::from(e).context(format!("cannot create sandbox directory {}", dir.display()))
        })?;
        let root = fs::canonicalize(dir)
            .map_err(|e| Error::from(e).context(format!("cannot resolve {}", dir.display())))?;
        let layout = Layout {
            upstream: root.join("upstream.git"),
            fork: root.join("fork.git"),
            super_origin: root.join("super-origin.git"),
            superproject: root.join("super"),
            root,
        };
        for path in [
            &layout.upstream,
            &layout.fork,
            &layout.super_origin,
            &layout.superproject,
        ] {
            if path.exists() {
                return Err(Error::usage(format!(
                    "cannot create a sandbox in {}: {} already exists",
                    layout.root.display(),
                    path.display()
                ))
                .hint("pass an empty or new directory"));
            }
        }
        Ok(layout)
    }
}

/// Builds the sandbox in `dir` (created if missing; it must not already hold
/// `upstream.git`, `fork.git`, `super-origin.git` or `super`).
pub fn create(dir: &Path, spec: &SandboxSpec) -> Result<Sandbox, Error> {
    let plan = Plan::new(spec)?;
    let Layout {
        root,
        upstream,
        fork,
        super_origin,
        superproject,
    } = Layout::new(dir)?;

    // Upstream: history before the base, the base, the pending range.
    init_bare(&upstream)?;
    let marks = fast_import(&upstream, &root.join(".sandbox-upstream.marks"), |w| {
        write_upstream(w, spec, &plan)
    })?;
    let mark = |m: usize| -> Result<String, Error> {
        marks
            .get(&m)
            .cloned()
            .ok_or_else(|| Error::failed(format!("git fast-import did not report mark :{m}")))
    };
    let history: Vec<String> = (1..=HISTORY_COMMITS).map(&mark).collect::<Result<_, _>>()?;
    let base = mark(BASE_MARK)?;
    let pending: Vec<String> = (0..spec.commits)
        .map(|i| mark(BASE_MARK + 1 + i))
        .collect::<Result<_, _>>()?;
    let head = pending.last().cloned().unwrap_or_else(|| base.clone());

    // Fork: upstream up to the base, plus the carried patches on `carried`.
    init_bare(&fork)?;
    let fork_arg = path_arg(&fork)?;
    git(
        &upstream,
        &[
            "push",
            "--quiet",
            fork_arg,
            &format!("{base}:refs/heads/main"),
        ],
    )?;
    let mut patch_shas = Vec::new();
    let mut patch_subjects = Vec::new();
    if spec.patches {
        let patches = carried_patches();
        let marks = fast_import(&fork, &root.join(".sandbox-fork.marks"), |w| {
            write_patches(w, &base, &patches)
        })?;
        for (i, patch) in patches.iter().enumerate() {
            let sha = marks.get(&(i + 1)).cloned().ok_or_else(|| {
                Error::failed(format!("git fast-import did not report mark :{}", i + 1))
            })?;
            patch_shas.push(sha);
            patch_subjects.push(patch.subject.to_string());
        }
    } else {
        git(&fork, &["update-ref", "refs/heads/carried", &base])?;
    }
    let pin = patch_shas.last().cloned().unwrap_or_else(|| base.clone());

    // Superproject origin, then the work tree clone with the submodule.
    init_bare(&super_origin)?;
    fast_import(&super_origin, &root.join(".sandbox-super.marks"), |w| {
        write_superproject(w, &pin, &upstream, &fork, spec.lit_changes)
    })?;
    let submodule = clone_superproject(&root, &super_origin, &superproject)?;
    let checked_out = git(&submodule, &["rev-parse", "HEAD"])?;
    if checked_out.trim() != pin {
        return Err(
            Error::failed("sandbox submodule is not checked out at the pin")
                .cause(format!("expected {pin}, found {}", checked_out.trim())),
        );
    }

    // Ground truth.
    let pick = |i: usize| pending[i].clone();
    let affecting = plan.affecting.iter().map(|&i| pick(i)).collect();
    let breaks = plan.breaks.iter().map(|&i| pick(i)).collect();
    let conflict_commit = plan.conflict.map(pick);
    let upstreamed_commit = plan.upstreamed.map(pick);
    let tool_format_commit = plan.tool_format.map(pick);
    let tool_names_commit = plan.tool_names.map(pick);
    let mut levels = HashMap::new();
    for sha in history.iter().chain([&base]).chain(patch_shas.iter()) {
        levels.insert(sha.clone(), 1);
    }
    let mut level = 1;
    let mut next_break = plan.breaks.iter().peekable();
    for (i, sha) in pending.iter().enumerate() {
        if next_break.peek() == Some(&&i) {
            level += 1;
            next_break.next();
        }
        levels.insert(sha.clone(), level);
    }

    Ok(Sandbox {
        root,
        upstream,
        fork,
        super_origin,
        superproject,
        submodule_path: SUBMODULE_PATH.to_string(),
        base,
        pin,
        head,
        affecting,
        breaks,
        conflict_commit,
        upstreamed_commit,
        tool_format_commit,
        tool_names_commit,
        patch_subjects,
        pending,
        levels,
    })
}

// ---------------------------------------------------------------------------
// Planning: which pending commit is what.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Ordinary change under `mlir/lib/`.
    Mlir,
    /// `[Docs]` change under `mlir/docs/`.
    MlirDocs,
    /// Change under `llvm/lib/`.
    Llvm,
    /// Change under top-level `docs/`.
    TopDocs,
    /// Rewrites `API_VERSION` to this level.
    Break(u32),
    /// Changes line 5 of `Conflict.cpp` (against the carried patch).
    Conflict,
    /// Lands the carried patch on `Upstreamed.cpp`.
    Upstreamed,
    /// `mini-opt --count` prints `op count: N` (was `ops: N`).
    ToolFormat,
    /// `mini-opt` prints `found DIALECT.NAME` (was `found NAME`).
    ToolNames,
}

/// Pending commits by index into the pending range.
#[derive(Debug)]
struct Plan {
    kinds: Vec<Kind>,
    affecting: Vec<usize>,
    breaks: Vec<usize>,
    conflict: Option<usize>,
    upstreamed: Option<usize>,
    tool_format: Option<usize>,
    tool_names: Option<usize>,
}

impl Plan {
    fn new(spec: &SandboxSpec) -> Result<Plan, Error> {
        let bad = |what: String| Err(Error::usage(format!("invalid sandbox spec: {what}")));
        let n = spec.commits;
        if !(0.0..=1.0).contains(&spec.affecting_ratio) {
            return bad(format!(
                "affecting_ratio {} is not within 0..=1",
                spec.affecting_ratio
            ));
        }
        let positions = spec
            .breaks
            .iter()
            .chain(spec.conflict_at.iter())
            .chain(spec.upstreams_patch_at.iter());
        for p in positions {
            if !(0.0..=1.0).contains(p) {
                return bad(format!("position {p} is not a fraction within 0..=1"));
            }
        }
        let n_mlir = ((n as f64) * spec.affecting_ratio).round() as usize;
        let n_mlir = n_mlir.min(n);
        if spec.docs_commits > n_mlir {
            return bad(format!(
                "{} [Docs] commits but only {n_mlir} commits touch mlir/",
                spec.docs_commits
            ));
        }
        let n_aff = n_mlir - spec.docs_commits;
        let conflict_at = spec.conflict_at.filter(|_| spec.patches);
        let upstreams_at = spec.upstreams_patch_at.filter(|_| spec.patches);
        let special = spec.breaks.len()
            + conflict_at.iter().count()
            + upstreams_at.iter().count()
            + if spec.lit_changes { 2 } else { 0 };
        if special > n_aff {
            return bad(format!(
                "{special} special commits (breaks, conflict, upstreamed) but only {n_aff} affecting commits"
            ));
        }

        let mut rng = SplitMix64(spec.seed);
        // The head is an untracked commit unless every commit touches mlir/.
        let slots = if n_mlir < n { n - 1 } else { n };
        let mut mlir = choose(&mut rng, slots, n_mlir);
        mlir.sort_unstable();
        let mut docs: Vec<usize> = choose(&mut rng, n_mlir, spec.docs_commits)
            .into_iter()
            .map(|k| mlir[k])
            .collect();
        docs.sort_unstable();
        let docs_set: HashSet<usize> = docs.iter().copied().collect();
        let affecting: Vec<usize> = mlir
            .iter()
            .copied()
            .filter(|i| !docs_set.contains(i))
            .collect();

        let mut kinds: Vec<Kind> = (0..n)
            .map(|_| {
                if rng.below(100) < 85 {
                    Kind::Llvm
                } else {
                    Kind::TopDocs
                }
            })
            .collect();
        for &i in &affecting {
            kinds[i] = Kind::Mlir;
        }
        for &i in &docs {
            kinds[i] = Kind::MlirDocs;
        }

        // Specials index into `affecting`; each takes the nearest free slot.
        let mut taken = vec![false; n_aff];
        let mut place = |p: f64| -> usize {
            let want = ((p * n_aff as f64).floor() as usize).min(n_aff - 1);
            let slot = (want..n_aff)
                .chain((0..want).rev())
                .find(|&k| !taken[k])
                .unwrap_or(want);
            taken[slot] = true;
            affecting[slot]
        };
        let mut breaks: Vec<usize> = spec.breaks.iter().map(|&p| place(p)).collect();
        let conflict = conflict_at.map(&mut place);
        let upstreamed = upstreams_at.map(&mut place);
        // Placed after the others: their positions never move.
        let tool_format = spec.lit_changes.then(|| place(0.45));
        let tool_names = spec.lit_changes.then(|| place(0.85));
        breaks.sort_unstable();
        for (k, &i) in breaks.iter().enumerate() {
            kinds[i] = Kind::Break(k as u32 + 2);
        }
        if let Some(i) = conflict {
            kinds[i] = Kind::Conflict;
        }
        if let Some(i) = upstreamed {
            kinds[i] = Kind::Upstreamed;
        }
        if let Some(i) = tool_format {
            kinds[i] = Kind::ToolFormat;
        }
        if let Some(i) = tool_names {
            kinds[i] = Kind::ToolNames;
        }
        Ok(Plan {
            kinds,
            affecting,
            breaks,
            conflict,
            upstreamed,
            tool_format,
            tool_names,
        })
    }
}

/// `k` distinct values of `0..n`, in random order (partial Fisher-Yates).
fn choose(rng: &mut SplitMix64, n: usize, k: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..n).collect();
    for i in 0..k.min(n) {
        let j = i + rng.below((n - i) as u64) as usize;
        all.swap(i, j);
    }
    all.truncate(k.min(n));
    all
}

/// splitmix64: tiny, fast, deterministic across platforms.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

// ---------------------------------------------------------------------------
// File contents.

/// A file that commits append lines to; only the last [`WINDOW`] appended
/// lines are kept.
struct Rolling {
    header: String,
    lines: VecDeque<String>,
    footer: String,
}

impl Rolling {
    fn new(header: String, initial: Vec<String>, footer: &str) -> Self {
        Rolling {
            header,
            lines: initial.into(),
            footer: footer.to_string(),
        }
    }

    fn append(&mut self, line: String) {
        if self.lines.len() >= WINDOW {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    fn render(&self) -> String {
        let mut out = self.header.clone();
        for line in &self.lines {
            out.push_str(line);
            out.push('\n');
        }
        out.push_str(&self.footer);
        out
    }
}

fn pass_path(i: usize) -> String {
    format!("mlir/lib/Pass{i}.cpp")
}

fn llvm_path(i: usize) -> String {
    let target = TARGETS[i / 2];
    let unit = if i.is_multiple_of(2) {
        "ISelLowering"
    } else {
        "InstrInfo"
    };
    format!("llvm/lib/Target/{target}/{target}{unit}.cpp")
}

fn cpp_file(path: &str) -> Rolling {
    let name = path.rsplit('/').next().unwrap_or(path);
    let namespace = if path.starts_with("mlir/") {
        "mlir"
    } else {
        "llvm"
    };
    let header = format!(
        "//===- {name} {:-<w$}*- C++ -*-===//\n//\n// Part of the sandbox llvm-project, generated by lockstep.\n//\n//===----------------------------------------------------------------------===//\n\nnamespace {namespace} {{\n\n",
        "",
        w = 60usize.saturating_sub(name.len())
    );
    let initial = (1..=3)
        .map(|k| format!("int initial_{k}() {{ return {k}; }}"))
        .collect();
    Rolling::new(header, initial, &format!("\n}} // namespace {namespace}\n"))
}

fn doc_file(path: &str) -> Rolling {
    let name = path.rsplit('/').next().unwrap_or(path);
    let title = name.split('.').next().unwrap_or(name);
    let underline = if path.ends_with(".rst") {
        format!("{}\n", "=".repeat(title.len()))
    } else {
        String::new()
    };
    let heading = if path.ends_with(".md") {
        format!("# {title}\n")
    } else {
        format!("{title}\n{underline}")
    };
    let header = format!("{heading}\nThis page belongs to the lockstep sandbox.\n\n");
    Rolling::new(header, vec!["- Initial notes.".to_string()], "")
}

fn numbered(prefix: &str, change: Option<(usize, &str)>) -> String {
    (1..=10)
        .map(|k| match change {
            Some((line, text)) if line == k => format!("{text}\n"),
            _ => format!("int {prefix}_line_{k}() {{ return {k}; }}\n"),
        })
        .collect()
}

fn conflict_base() -> String {
    numbered("conflict", None)
}
fn conflict_upstream() -> String {
    numbered(
        "conflict",
        Some((5, "int conflict_line_5() { return 50; } // fixed upstream")),
    )
}
fn conflict_patched() -> String {
    numbered(
        "conflict",
        Some((5, "int conflict_line_5() { return 5 + 1; } // local fix")),
    )
}
fn upstreamed_base() -> String {
    numbered("upstreamed", None)
}
fn upstreamed_fixed() -> String {
    numbered(
        "upstreamed",
        Some((
            3,
            "int upstreamed_line_3() { return 3 - 1; } // off-by-one fixed",
        )),
    )
}

fn legacy(with_registration: bool) -> String {
    let mut out = String::from("//===- Legacy.cpp - Pass registration -------------------------*- C++ -*-===//\n\nnamespace mlir {\n\nvoid registerAllPasses() {\n  registerCanonicalizerPass();\n  registerCSEPass();\n");
    if with_registration {
        out.push_str("  // Legacy registration, kept for out-of-tree users.\n  registerLegacyPassPipeline(\"legacy-pipeline\");\n  registerLegacyPassPipeline(\"legacy-lowering\");\n");
    }
    out.push_str("}\n\n} // namespace mlir\n");
    out
}

// ---------------------------------------------------------------------------
// fast-import streams.

/// Commits before the base (the base is not a root commit).
const HISTORY_COMMITS: usize = 5;
const BASE_MARK: usize = HISTORY_COMMITS + 1;

pub enum Mode {
    File,
    Exec,
    /// A submodule entry; the data is the commit's object name (which need
    /// not exist in the repository).
    Gitlink,
}

pub struct FileChange<'a> {
    pub mode: Mode,
    pub path: &'a str,
    pub data: &'a str,
}

pub struct CommitInfo<'a> {
    pub branch: &'a str,
    pub mark: usize,
    pub author: (&'a str, &'a str),
    pub time: i64,
    pub message: &'a str,
    pub from: Option<&'a str>,
}

pub fn write_commit(
    w: &mut dyn Write,
    c: &CommitInfo<'_>,
    files: &[FileChange<'_>],
) -> io::Result<()> {
    let (name, email) = c.author;
    write!(w, "commit {}\nmark :{}\n", c.branch, c.mark)?;
    writeln!(w, "author {name} <{email}> {} +0000", c.time)?;
    writeln!(w, "committer {name} <{email}> {} +0000", c.time)?;
    write!(w, "data {}\n{}\n", c.message.len(), c.message)?;
    if let Some(from) = c.from {
        writeln!(w, "from {from}")?;
    }
    for f in files {
        match f.mode {
            Mode::File => write!(
                w,
                "M 100644 inline {}\ndata {}\n{}\n",
                f.path,
                f.data.len(),
                f.data
            )?,
            Mode::Exec => write!(
                w,
                "M 100755 inline {}\ndata {}\n{}\n",
                f.path,
                f.data.len(),
                f.data
            )?,
            Mode::Gitlink => writeln!(w, "M 160000 {} {}", f.data, f.path)?,
        }
    }
    writeln!(w)
}

pub fn file<'a>(path: &'a str, data: &'a str) -> FileChange<'a> {
    FileChange {
        mode: Mode::File,
        path,
        data,
    }
}

fn write_upstream(w: &mut dyn Write, spec: &SandboxSpec, plan: &Plan) -> io::Result<()> {
    const MAIN: &str = "refs/heads/main";
    let mut rng = SplitMix64(spec.seed ^ 0xA5A5_5A5A_0F0F_F0F0);
    let mut mlir_files: Vec<(String, Rolling)> = (0..MLIR_PASSES)
        .map(|i| (pass_path(i), cpp_file(&pass_path(i))))
        .collect();
    let mut llvm_files: Vec<(String, Rolling)> = (0..TARGETS.len() * 2)
        .map(|i| (llvm_path(i), cpp_file(&llvm_path(i))))
        .collect();
    let mut top_docs: Vec<(String, Rolling)> = TOP_DOCS
        .iter()
        .map(|d| {
            let p = format!("docs/{d}");
            let f = doc_file(&p);
            (p, f)
        })
        .collect();
    let mut mlir_docs: Vec<(String, Rolling)> = MLIR_DOCS
        .iter()
        .map(|d| {
            let p = format!("mlir/docs/{d}");
            let f = doc_file(&p);
            (p, f)
        })
        .collect();
    let cmake = |version: &str| {
        format!("cmake_minimum_required(VERSION 3.20)\nproject(LLVM VERSION {version} LANGUAGES C CXX)\nadd_subdirectory(lib)\n")
    };

    // History before the base.
    let day = 86_400;
    let readme = "# The LLVM Compiler Infrastructure (lockstep sandbox)\n\nA synthetic llvm-project history generated by `lockstep` for demos, tests and benchmarks.\n";
    let license = "Apache License v2.0 with LLVM Exceptions\n";
    let cmake_old = cmake("21.0.0");
    let llvm_initial: Vec<(String, String)> = llvm_files
        .iter()
        .map(|(p, f)| (p.clone(), f.render()))
        .collect();
    let mut files = vec![
        file("README.md", readme),
        file("LICENSE.TXT", license),
        file("llvm/CMakeLists.txt", &cmake_old),
    ];
    files.extend(llvm_initial.iter().map(|(p, d)| file(p, d)));
    let info = |mark: usize, author: usize, time: i64, message: &'static str| CommitInfo {
        branch: MAIN,
        mark,
        author: AUTHORS[author],
        time,
        message,
        from: None,
    };
    write_commit(w, &info(1, 0, HISTORY_START, "Initial commit\n"), &files)?;

    let mlir_initial: Vec<(String, String)> = mlir_files
        .iter()
        .map(|(p, f)| (p.clone(), f.render()))
        .collect();
    let docs_initial: Vec<(String, String)> = mlir_docs
        .iter()
        .map(|(p, f)| (p.clone(), f.render()))
        .collect();
    let (conflict, upstreamed, legacy_old) = (conflict_base(), upstreamed_base(), legacy(true));
    let tool_v0 = mini_opt(0);
    let mut files = vec![
        file(API_VERSION, "1\n"),
        file(CONFLICT, &conflict),
        file(UPSTREAMED, &upstreamed),
        file(LEGACY, &legacy_old),
    ];
    if spec.lit_changes {
        files.push(FileChange {
            mode: Mode::Exec,
            path: TOOL,
            data: &tool_v0,
        });
    }
    files.extend(mlir_initial.iter().map(|(p, d)| file(p, d)));
    files.extend(docs_initial.iter().map(|(p, d)| file(p, d)));
    write_commit(
        w,
        &info(2, 1, HISTORY_START + 3 * day, "[mlir] Import MLIR\n"),
        &files,
    )?;

    let top_initial: Vec<(String, String)> = top_docs
        .iter()
        .map(|(p, f)| (p.clone(), f.render()))
        .collect();
    let files: Vec<FileChange> = top_initial.iter().map(|(p, d)| file(p, d)).collect();
    write_commit(
        w,
        &info(
            3,
            2,
            HISTORY_START + 9 * day,
            "[docs] Add getting started guide and release notes\n",
        ),
        &files,
    )?;

    llvm_files[0]
        .1
        .append("int fold_redundant_moves() { return 0; }".to_string());
    let x86 = llvm_files[0].1.render();
    write_commit(
        w,
        &info(
            4,
            3,
            HISTORY_START + 17 * day,
            "[X86] Fold redundant register moves\n",
        ),
        &[file(&llvm_files[0].0, &x86)],
    )?;

    let legacy_new = legacy(false);
    write_commit(
        w,
        &info(
            5,
            4,
            HISTORY_START + 24 * day,
            "[mlir] Drop legacy pass registration\n\nThe legacy pipeline registration has been deprecated for two releases.\n",
        ),
        &[file(LEGACY, &legacy_new)],
    )?;

    let cmake_new = cmake("22.0.0");
    write_commit(
        w,
        &info(BASE_MARK, 5, BASE_DATE, "Bump version to 22.0.0git\n"),
        &[file("llvm/CMakeLists.txt", &cmake_new)],
    )?;

    // The pending range.
    let mut breaks_seen = 0usize;
    for (i, kind) in plan.kinds.iter().enumerate() {
        let number = i + 1;
        let author = *rng.pick(AUTHORS);
        let verb = *rng.pick(VERBS);
        let noun = *rng.pick(NOUNS);
        let pr = 150_000 + number;
        let (subject, path, data): (String, String, String) = match *kind {
            Kind::Mlir => {
                let k = rng.below(MLIR_PASSES as u64) as usize;
                let (path, f) = &mut mlir_files[k];
                f.append(format!(
                    "int {}_{number}() {{ return {number}; }}",
                    snake(verb, noun)
                ));
                (
                    format!("[mlir][Pass{k}] {verb} {noun} {number}"),
                    path.clone(),
                    f.render(),
                )
            }
            Kind::MlirDocs => {
                let (path, f) = rng_pick_mut(&mut rng, &mut mlir_docs);
                f.append(format!(
                    "- Note {number}: {verb} the description of {noun}."
                ));
                let name = path.rsplit('/').next().unwrap_or("");
                (
                    format!("[Docs] Clarify {noun} in {name} {number}"),
                    path.clone(),
                    f.render(),
                )
            }
            Kind::Llvm => {
                let k = rng.below(llvm_files.len() as u64) as usize;
                let (path, f) = &mut llvm_files[k];
                f.append(format!(
                    "int {}_{number}() {{ return {number}; }}",
                    snake(verb, noun)
                ));
                (
                    format!("[llvm][{}] {verb} {noun} {number}", TARGETS[k / 2]),
                    path.clone(),
                    f.render(),
                )
            }
            Kind::TopDocs => {
                let (path, f) = rng_pick_mut(&mut rng, &mut top_docs);
                f.append(format!("- Release note {number}: {verb} {noun}."));
                let name = path.rsplit('/').next().unwrap_or("");
                (
                    format!("[NFC] Fix typos in docs/{name} ({number})"),
                    path.clone(),
                    f.render(),
                )
            }
            Kind::Break(level) => {
                let subject = match BREAK_SUBJECTS.get(breaks_seen) {
                    Some(s) => s.to_string(),
                    None => format!(
                        "[mlir] Rename OpBuilder::create API, part {} (breaking)",
                        breaks_seen + 1
                    ),
                };
                breaks_seen += 1;
                (subject, API_VERSION.to_string(), format!("{level}\n"))
            }
            Kind::Conflict => (
                "[mlir] Return the corrected value from conflict_line_5".to_string(),
                CONFLICT.to_string(),
                conflict_upstream(),
            ),
            Kind::Upstreamed => (
                UPSTREAMED_SUBJECT.to_string(),
                UPSTREAMED.to_string(),
                upstreamed_fixed(),
            ),
            // The random draws an ordinary mlir/ commit makes, so the
            // commits after it are the same with or without the tool.
            Kind::ToolFormat => {
                let _ = rng.below(MLIR_PASSES as u64);
                (
                    "[mlir][mini-opt] Print the operation count as `op count: N`".to_string(),
                    TOOL.to_string(),
                    mini_opt(1),
                )
            }
            Kind::ToolNames => {
                let _ = rng.below(MLIR_PASSES as u64);
                (
                    "[mlir][mini-opt] Print operations with their dialect prefix".to_string(),
                    TOOL.to_string(),
                    mini_opt(2),
                )
            }
        };
        let message =
            format!("{subject}\n\nPull Request: https://github.com/llvm/llvm-project/pull/{pr}\n");
        let c = CommitInfo {
            branch: MAIN,
            mark: BASE_MARK + number,
            author,
            time: PENDING_START + (i as i64) * PENDING_STEP,
            message: &message,
            from: None,
        };
        let mode = if path == TOOL { Mode::Exec } else { Mode::File };
        let change = FileChange {
            mode,
            path: &path,
            data: &data,
        };
        write_commit(w, &c, &[change])?;
    }
    w.write_all(b"done\n")
}

/// `mlir/tools/mini-opt` at `version`: 0 prints `ops: N` and `found NAME`,
/// 1 prints `op count: N`, 2 also `found mini.NAME` (operations are the
/// `// op NAME` lines of its input).
fn mini_opt(version: u32) -> String {
    let count = if version >= 1 { "op count" } else { "ops" };
    let prefix = if version >= 2 { "mini." } else { "" };
    format!(
        "#!/bin/sh\n# mini-opt: the sandbox's tool under test (the superproject's suites/lit tests it).\ncase \"$1\" in\n  --version) echo \"mini-opt (lockstep sandbox)\" ;;\n  --count) echo \"{count}: $(grep -c '^// op ' \"$2\")\" ;;\n  *) sed -n 's|^// op \\(.*\\)$|found {prefix}\\1|p' \"$1\" ;;\nesac\n"
    )
}

/// The superproject's lit suite of `mini-opt` ([`SandboxSpec::lit_changes`]):
/// `count.mlir` breaks at the count format change, `add`, `mul` and `sub`
/// at the dialect prefix, `version.mlir` never.
pub const LIT_SUITE: &[(&str, &str)] = &[
    (
        "suites/lit/lit.cfg.py",
        "# The tests of mini-opt, the tool the pinned upstream builds.\nimport os\nimport lit.formats\n\nconfig.name = \"sandbox\"\nconfig.test_format = lit.formats.ShTest()\nconfig.suffixes = [\".mlir\"]\ntools = os.path.join(os.path.dirname(os.path.abspath(__file__)), \"..\", \"..\", \"third_party\", \"llvm-project\", \"mlir\", \"tools\")\nconfig.environment[\"PATH\"] = os.pathsep.join([tools, config.environment[\"PATH\"]])\n",
    ),
    (
        "suites/lit/count.mlir",
        "// RUN: mini-opt --count %s | FileCheck %s\n// CHECK: ops: 2\n// op add\n// op mul\n",
    ),
    (
        "suites/lit/add.mlir",
        "// RUN: mini-opt %s | FileCheck %s\n// CHECK: found add\n// op add\n",
    ),
    (
        "suites/lit/mul.mlir",
        "// RUN: mini-opt %s | FileCheck %s\n// CHECK: found mul\n// op mul\n",
    ),
    (
        "suites/lit/sub.mlir",
        "// RUN: mini-opt %s | FileCheck %s\n// CHECK: found sub\n// op sub\n",
    ),
    (
        "suites/lit/version.mlir",
        "// RUN: mini-opt --version | FileCheck %s\n// CHECK: mini-opt (lockstep sandbox)\n",
    ),
];

fn rng_pick_mut<'a, T>(rng: &mut SplitMix64, items: &'a mut [T]) -> &'a mut T {
    let k = rng.below(items.len() as u64) as usize;
    &mut items[k]
}

fn snake(verb: &str, noun: &str) -> String {
    format!("{verb}_{noun}")
        .to_ascii_lowercase()
        .replace(' ', "_")
}

struct Patch {
    subject: &'static str,
    message: &'static str,
    path: &'static str,
    data: String,
}

fn carried_patches() -> Vec<Patch> {
    vec![
        Patch {
            subject: PATCH_REVERT_SUBJECT,
            message: "Revert \"[mlir] Drop legacy pass registration\"\n\nLocal revert: downstream still registers passes the legacy way.\n",
            path: LEGACY,
            data: legacy(true),
        },
        Patch {
            subject: PATCH_CONFLICT_SUBJECT,
            message: "[mlir] Local fix in Conflict.cpp\n\nLockstep-Reason: needed until upstream fixes line 5\n",
            path: CONFLICT,
            data: conflict_patched(),
        },
        Patch {
            subject: UPSTREAMED_SUBJECT,
            message: "[mlir] Fix off-by-one in Upstreamed.cpp\n\nCherry-picked from upstream review D123.\n",
            path: UPSTREAMED,
            data: upstreamed_fixed(),
        },
    ]
}

fn write_patches(w: &mut dyn Write, base: &str, patches: &[Patch]) -> io::Result<()> {
    for (i, p) in patches.iter().enumerate() {
        let c = CommitInfo {
            branch: "refs/heads/carried",
            mark: i + 1,
            author: PATCH_AUTHOR,
            time: BASE_DATE + 3600 * (i as i64 + 1),
            message: p.message,
            from: if i == 0 { Some(base) } else { None },
        };
        write_commit(w, &c, &[file(p.path, &p.data)])?;
    }
    w.write_all(b"done\n")
}

fn write_superproject(
    w: &mut dyn Write,
    pin: &str,
    upstream: &Path,
    fork: &Path,
    lit: bool,
) -> io::Result<()> {
    let dev = (DEV_NAME, DEV_EMAIL);
    let readme = "# sandbox-compiler\n\nA small compiler project that pins llvm-project as a git submodule in\n`third_party/llvm-project`. Generated by `lockstep` as a sandbox: the\nsmoke test (`build_tools/smoke.sh`) passes when `API_LEVEL` matches the\nsubmodule's `mlir/include/API_VERSION`.\n";
    // `builder.create` sits at line 12, column 5: the smoke's error message points there.
    let main_cpp = r#"// sandbox-compiler driver.
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace {
struct FooOp;

void buildModule(OpBuilder &builder, Location loc) {
    // Needs the llvm-project API level declared in API_LEVEL.
    builder.create<FooOp>(loc);
}
} // namespace

int main() { return 0; }
"#;
    let mut files = vec![
        file("README.md", readme),
        file("API_LEVEL", "1\n"),
        file("src/main.cpp", main_cpp),
        FileChange {
            mode: Mode::Exec,
            path: "build_tools/smoke.sh",
            data: SMOKE_SH,
        },
        file(".gitignore", "build/\n"),
    ];
    if lit {
        files.extend(LIT_SUITE.iter().map(|(path, text)| file(path, text)));
    }
    let c = CommitInfo {
        branch: "refs/heads/main",
        mark: 1,
        author: dev,
        time: BASE_DATE + 5 * 3600,
        message: "Initial commit\n",
        from: None,
    };
    write_commit(w, &c, &files)?;

    let (gitmodules, toml) = superproject_config(
        fork,
        upstream,
        Some("https://github.com/llvm/llvm-project/commit/{sha}"),
    );
    let message = format!(
        "Add llvm-project submodule at {}\n",
        &pin[..pin.len().min(12)]
    );
    let c = CommitInfo {
        branch: "refs/heads/main",
        mark: 2,
        author: dev,
        time: BASE_DATE + 5 * 3600 + 600,
        message: &message,
        from: None,
    };
    let files = [
        file(".gitmodules", &gitmodules),
        file("lockstep.toml", &toml),
        FileChange {
            mode: Mode::Gitlink,
            path: SUBMODULE_PATH,
            data: pin,
        },
    ];
    write_commit(w, &c, &files)?;
    w.write_all(b"done\n")
}

/// The superproject's `.gitmodules` (the submodule from `fork`) and
/// `lockstep.toml` (integrating `upstream`'s `mlir/` with the sandbox smoke).
pub fn superproject_config(
    fork: &Path,
    upstream: &Path,
    commit_url: Option<&str>,
) -> (String, String) {
    let gitmodules = format!(
        "[submodule \"{SUBMODULE_PATH}\"]\n\tpath = {SUBMODULE_PATH}\n\turl = {}\n",
        fork.display()
    );
    let commit_url = commit_url
        .map(|u| format!("commit-url = {}\n", toml_string(u)))
        .unwrap_or_default();
    let toml = format!(
        r#"[integrate]
submodule = "{SUBMODULE_PATH}"
upstream-remote = "upstream"
upstream-url = {}
upstream-branch = "main"
base = "origin/main"
branch = "integrates/llvm-{{date}}"
track-paths = ["mlir"]
smoke = ["./build_tools/smoke.sh"]
smoke-timeout = "5m"
{commit_url}
[integrate.export]
remote = "origin"
"#,
        toml_string(&upstream.display().to_string())
    );
    (gitmodules, toml)
}

/// TOML's form of a string: the serializer's, never quotes formatted here.
fn toml_string(s: &str) -> String {
    lockstep_core::config::toml_string(s)
}

const SMOKE_SH: &str = r#"#!/usr/bin/env bash
# Smoke test of the lockstep sandbox: the project "builds" when the API level
# it declares (API_LEVEL) equals the one the pinned llvm-project provides
# (third_party/llvm-project/mlir/include/API_VERSION).
set -u
cd "$(dirname "$0")/.." || exit 2

if [ -n "${LOCKSTEP_SANDBOX_SMOKE_LOG:-}" ]; then
  echo "$(git -C third_party/llvm-project rev-parse HEAD)" >> "$LOCKSTEP_SANDBOX_SMOKE_LOG"
fi
if [ -n "${LOCKSTEP_SANDBOX_SMOKE_SLEEP:-}" ]; then
  sleep "$LOCKSTEP_SANDBOX_SMOKE_SLEEP"
fi

if ! have=$(cat third_party/llvm-project/mlir/include/API_VERSION 2>/dev/null); then
  echo "smoke: cannot read third_party/llvm-project/mlir/include/API_VERSION (is the submodule checked out?)"
  exit 1
fi
if ! want=$(cat API_LEVEL 2>/dev/null); then
  echo "smoke: cannot read API_LEVEL"
  exit 1
fi
if [ "$have" = "$want" ]; then
  echo "smoke: ok (API $have)"
  exit 0
fi
echo "[1/40] Building CXX object third_party/llvm-project/mlir/lib/IR/Builders.cpp.o"
echo "[2/40] Building CXX object third_party/llvm-project/mlir/lib/Pass/PassManager.cpp.o"
echo "[12/40] Building CXX object src/main.cpp.o"
echo "FAILED: src/main.cpp.o"
echo "src/main.cpp:12:5: error: no member named 'create' in 'OpBuilder' (API $have, project expects $want)"
echo "    builder.create<FooOp>(loc);"
echo "    ~~~~~~~ ^"
echo "1 error generated."
echo "ninja: build stopped: subcommand failed."
exit 1
"#;

/// Writes `files` (path relative to `dir`, text), creating directories.
pub fn write_files<P: AsRef<Path>, T: AsRef<str>>(
    dir: &Path,
    files: &[(P, T)],
) -> Result<(), Error> {
    for (name, text) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::write(&path, text.as_ref())?;
    }
    Ok(())
}

/// C++ source that takes real time to compile (compile-time tables built
/// by template recursion, `tables` of them, 400 entries each), defining
/// `long FUNCTION(long)`; `kTweak` (of type `tweak_type`) is the constant a
/// one-line change rewrites.
pub fn heavy_source(
    header: &str,
    function: &str,
    seed: usize,
    tables: usize,
    tweak_type: &str,
) -> String {
    let seeds: Vec<String> = (0..tables.max(1))
        .map(|k| (seed * 13 + k * 2 + 3).to_string())
        .collect();
    format!(
        r#"{header}#include <array>
#include <cstddef>
#include <utility>

static const {tweak_type} kTweak = 0;

namespace {{
template <std::size_t N, long S> struct Fold {{
  static constexpr long value = (Fold<N - 1, S>::value * 31 + N * S) % 1000003;
}};
template <long S> struct Fold<0, S> {{ static constexpr long value = S; }};

template <long S, std::size_t... I>
constexpr std::array<long, sizeof...(I)> table(std::index_sequence<I...>) {{
  return {{{{Fold<I, S>::value...}}}};
}}

template <long... S> long fold_all(long acc) {{
  ((acc = [&] {{
     for (long v : table<S>(std::make_index_sequence<400>{{}})) acc = (acc * 7 + v) % 1000003;
     return acc;
   }}()),
   ...);
  return acc;
}}
}} // namespace

long {function}(long x) {{ return fold_all<{seeds}>(x + kTweak); }}
"#,
        seeds = seeds.join(", ")
    )
}

/// Clones the superproject origin into `superproject` with the sandbox's
/// identity, and initialises its submodule (file transport allowed, as the
/// fork is a local path); returns the submodule's work tree.
pub fn clone_superproject(
    root: &Path,
    super_origin: &Path,
    superproject: &Path,
) -> Result<PathBuf, Error> {
    let super_arg = path_arg(super_origin)?;
    let clone_arg = path_arg(superproject)?;
    git(root, &["clone", "--quiet", super_arg, clone_arg])?;
    for (key, value) in [
        ("user.name", DEV_NAME),
        ("user.email", DEV_EMAIL),
        ("protocol.file.allow", "always"),
    ] {
        git(superproject, &["config", key, value])?;
    }
    git(
        superproject,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "--quiet",
            "update",
            "--init",
        ],
    )?;
    let submodule = superproject.join(SUBMODULE_PATH);
    for (key, value) in [
        ("user.name", DEV_NAME),
        ("user.email", DEV_EMAIL),
        ("protocol.file.allow", "always"),
    ] {
        git(&submodule, &["config", key, value])?;
    }
    Ok(submodule)
}

// ---------------------------------------------------------------------------
// Running git.

/// The sandbox's fixed identity, so object names never depend on the user's
/// global git config.
const DEV_ENV: &[(&str, &str)] = &[
    ("GIT_AUTHOR_NAME", DEV_NAME),
    ("GIT_AUTHOR_EMAIL", DEV_EMAIL),
    ("GIT_COMMITTER_NAME", DEV_NAME),
    ("GIT_COMMITTER_EMAIL", DEV_EMAIL),
];

/// Runs git in `dir` with the sandbox's identity; a non-zero exit is an
/// error naming the command and git's message. Through lockstep-git's door
/// (lockstep_core::process): its own process group, lockstep-git's
/// timeout, no lockstep secret in its environment.
pub fn git(dir: &Path, args: &[&str]) -> Result<String, Error> {
    Repo::new(dir).git_env(args, DEV_ENV, None)
}

/// [`git`] whatever the exit status (`merge-tree` answers 1 for a
/// conflict), with `input` on its stdin.
pub fn try_git(
    dir: &Path,
    args: &[&str],
    input: Option<&[u8]>,
) -> Result<lockstep_git::Output, Error> {
    Repo::new(dir).try_git_env(args, DEV_ENV, input)
}

pub fn path_arg(path: &Path) -> Result<&str, Error> {
    path.to_str().ok_or_else(|| {
        Error::usage(format!(
            "sandbox path {} is not valid UTF-8",
            path.display()
        ))
        .hint("create the sandbox under a directory with a UTF-8 name")
    })
}

pub fn init_bare(path: &Path) -> Result<(), Error> {
    let arg = path_arg(path)?;
    let parent = path.parent().unwrap_or(path);
    git(
        parent,
        &["init", "--quiet", "--bare", "--initial-branch=main", arg],
    )?;
    Ok(())
}

/// Writes the stream `write` makes and feeds it to `git fast-import` in the
/// bare repository `repo` ([`try_git`]: a process group and a timeout);
/// returns the marks it assigned (mark number -> object name).
pub fn fast_import(
    repo: &Path,
    marks_file: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<HashMap<usize, String>, Error> {
    let marks_arg = format!("--export-marks={}", path_arg(marks_file)?);
    let args = [
        "fast-import",
        "--quiet",
        "--done",
        "--date-format=raw",
        marks_arg.as_str(),
    ];
    let fail = || Error::failed(format!("`git fast-import` failed in {}", repo.display()));
    let mut stream = Vec::with_capacity(1 << 20);
    write(&mut stream).map_err(|e| fail().cause(format!("writing the stream: {e}")))?;
    let out = try_git(repo, &args, Some(&stream))?;
    if out.code != 0 {
        let mut err = fail();
        if !out.stderr.trim().is_empty() {
            err = err.cause(out.stderr.trim().to_string());
        }
        return Err(err.cause(format!("exit status {}", out.code)));
    }
    let text = fs::read_to_string(marks_file).map_err(|e| {
        Error::from(e).context(format!(
            "cannot read fast-import marks {}",
            marks_file.display()
        ))
    })?;
    let _ = fs::remove_file(marks_file);
    let mut marks = HashMap::new();
    for line in text.lines() {
        if let Some((mark, sha)) = line.strip_prefix(':').and_then(|l| l.split_once(' ')) {
            if let Ok(n) = mark.parse::<usize>() {
                marks.insert(n, sha.trim().to_string());
            }
        }
    }
    Ok(marks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Instant;

    fn lines(dir: &Path, args: &[&str]) -> Vec<String> {
        git(dir, args)
            .expect("git")
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn one(dir: &Path, args: &[&str]) -> String {
        git(dir, args).expect("git").trim().to_string()
    }

    fn smoke(sb: &Sandbox, log: Option<&Path>) -> (bool, String) {
        let mut cmd = Command::new("./build_tools/smoke.sh");
        cmd.current_dir(&sb.superproject);
        match log {
            Some(log) => cmd.env("LOCKSTEP_SANDBOX_SMOKE_LOG", log),
            None => cmd.env_remove("LOCKSTEP_SANDBOX_SMOKE_LOG"),
        };
        let out = cmd
            .env_remove("LOCKSTEP_SANDBOX_SMOKE_SLEEP")
            .output()
            .expect("run smoke");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    #[test]
    fn sandbox_demo_matches_its_spec() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = SandboxSpec::demo();
        let started = Instant::now();
        let sb = create(tmp.path(), &spec).expect("create sandbox");
        println!(
            "sandbox demo ({} commits) created in {:?}",
            spec.commits,
            started.elapsed()
        );
        let up = &sb.upstream;

        // Upstream history: the base has ancestors, then the pending range.
        assert_eq!(
            one(up, &["rev-list", "--count", "main"]),
            (spec.commits + BASE_MARK).to_string()
        );
        assert_eq!(one(up, &["rev-parse", "main"]), sb.head);
        assert_eq!(
            one(up, &["rev-list", "--count", &format!("{}..main", sb.base)]),
            spec.commits.to_string()
        );
        let range = format!("{}..{}", sb.base, sb.head);
        assert_eq!(lines(up, &["rev-list", "--reverse", &range]), sb.pending);

        // Affecting commits: exactly round(commits * ratio) touch mlir/, minus [Docs].
        let mlir = lines(
            up,
            &["log", "--reverse", "--format=%H %s", &range, "--", "mlir"],
        );
        assert_eq!(mlir.len(), 192);
        let docs: Vec<&String> = mlir
            .iter()
            .filter(|l| l[41..].starts_with("[Docs]"))
            .collect();
        assert_eq!(docs.len(), spec.docs_commits);
        let affecting: Vec<String> = mlir
            .iter()
            .filter(|l| !l[41..].starts_with("[Docs]"))
            .map(|l| l[..40].to_string())
            .collect();
        assert_eq!(affecting, sb.affecting);
        assert_eq!(sb.affecting.len(), 192 - spec.docs_commits);
        for sha in &docs {
            let paths = lines(
                up,
                &[
                    "diff-tree",
                    "--no-commit-id",
                    "--name-only",
                    "-r",
                    &sha[..40],
                ],
            );
            assert!(
                paths.iter().all(|p| p.starts_with("mlir/docs/")),
                "{paths:?}"
            );
        }
        let head_paths = lines(
            up,
            &["diff-tree", "--no-commit-id", "--name-only", "-r", &sb.head],
        );
        assert!(
            head_paths.iter().all(|p| p.starts_with("llvm/")),
            "head touches {head_paths:?}"
        );
        let subjects = lines(up, &["log", "--format=%s", &range]);
        assert!(!subjects
            .iter()
            .any(|s| s.contains("Apply clang-tidy fixes")));

        // Specials are distinct affecting commits, and the only ones touching their files.
        let conflict = sb.conflict_commit.clone().expect("conflict commit");
        let upstreamed = sb.upstreamed_commit.clone().expect("upstreamed commit");
        assert_eq!(sb.breaks.len(), 2);
        let mut specials: Vec<&String> = sb.breaks.iter().chain([&conflict, &upstreamed]).collect();
        assert!(specials.iter().all(|s| sb.affecting.contains(s)));
        specials.sort();
        specials.dedup();
        assert_eq!(specials.len(), 4);
        let pos = |sha: &String| {
            sb.affecting
                .iter()
                .position(|a| a == sha)
                .expect("in affecting")
        };
        assert!(pos(&sb.breaks[0]) < pos(&sb.breaks[1]));
        assert_eq!(
            pos(&sb.breaks[0]),
            (0.3 * sb.affecting.len() as f64) as usize
        );
        let touching =
            |path: &str| lines(up, &["log", "--reverse", "--format=%H", &range, "--", path]);
        assert_eq!(touching(API_VERSION), sb.breaks);
        assert_eq!(touching(CONFLICT), vec![conflict.clone()]);
        assert_eq!(touching(UPSTREAMED), vec![upstreamed.clone()]);
        assert!(touching(LEGACY).is_empty());
        assert_eq!(
            one(up, &["show", &format!("{}:{API_VERSION}", sb.head)]),
            "3"
        );

        // API levels.
        assert_eq!(api_level_at(&sb, &sb.base), Some(1));
        assert_eq!(api_level_at(&sb, &sb.pin), Some(1));
        assert_eq!(api_level_at(&sb, &sb.head), Some(3));
        assert_eq!(api_level_at(&sb, &sb.breaks[0]), Some(2));
        assert_eq!(api_level_at(&sb, &sb.breaks[0][..12]), Some(2));
        let before = one(up, &["rev-parse", &format!("{}~1", sb.breaks[0])]);
        assert_eq!(api_level_at(&sb, &before), Some(1));
        assert_eq!(api_level_at(&sb, "main"), None);
        for sha in &sb.pending {
            let want: u32 = one(up, &["show", &format!("{sha}:{API_VERSION}")])
                .parse()
                .expect("level");
            assert_eq!(api_level_at(&sb, sha), Some(want), "{sha}");
        }

        // Fork and carried patches.
        assert_eq!(one(&sb.fork, &["rev-parse", "main"]), sb.base);
        assert_eq!(one(&sb.fork, &["rev-parse", "carried"]), sb.pin);
        assert_eq!(
            one(
                &sb.fork,
                &["rev-list", "--count", &format!("{}..{}", sb.base, sb.pin)]
            ),
            "3"
        );
        assert_eq!(
            sb.patch_subjects,
            vec![
                PATCH_REVERT_SUBJECT.to_string(),
                PATCH_CONFLICT_SUBJECT.to_string(),
                UPSTREAMED_SUBJECT.to_string()
            ]
        );
        let trailer = one(
            &sb.fork,
            &[
                "log",
                "-1",
                "--format=%(trailers:key=Lockstep-Reason,valueonly)",
                "carried~1",
            ],
        );
        assert_eq!(trailer, "needed until upstream fixes line 5");
        assert!(
            try_git(
                up,
                &["cat-file", "-e", &format!("{}^{{commit}}", sb.pin)],
                None
            )
            .expect("git")
            .code
                != 0
        );

        // Superproject.
        let sp = &sb.superproject;
        assert_eq!(sb.submodule_path, "third_party/llvm-project");
        let sub = sp.join(&sb.submodule_path);
        assert_eq!(one(&sub, &["rev-parse", "HEAD"]), sb.pin);
        assert_eq!(
            one(&sub, &["remote", "get-url", "origin"]),
            sb.fork.display().to_string()
        );
        assert_eq!(one(&sub, &["config", "user.email"]), DEV_EMAIL);
        assert_eq!(one(sp, &["config", "protocol.file.allow"]), "always");
        assert_eq!(
            one(sp, &["status", "--porcelain", "--ignore-submodules=none"]),
            ""
        );
        assert_eq!(
            one(sp, &["ls-tree", "HEAD", &sb.submodule_path]),
            format!("160000 commit {}\t{}", sb.pin, sb.submodule_path)
        );
        assert!(one(sp, &["ls-files", "-s", "build_tools/smoke.sh"]).starts_with("100755 "));
        assert_eq!(
            one(sp, &["rev-parse", "origin/main"]),
            one(&sb.super_origin, &["rev-parse", "main"])
        );
        let toml_path = sp.join("lockstep.toml");
        let text = fs::read_to_string(&toml_path).expect("lockstep.toml");
        let config: toml::Table = text.parse().expect("lockstep.toml parses");
        let integrate = &config["integrate"];
        assert_eq!(
            integrate["upstream-url"].as_str(),
            Some(sb.upstream.to_str().expect("utf-8"))
        );
        assert_eq!(integrate["track-paths"].as_array().map(Vec::len), Some(1));
        assert_eq!(integrate["track-paths"][0].as_str(), Some("mlir"));

        // Smoke passes at the pin and logs the run.
        let log = tmp.path().join("smoke.log");
        let (ok, out) = smoke(&sb, Some(&log));
        assert!(ok, "{out}");
        assert_eq!(out.trim(), "smoke: ok (API 1)");
        assert_eq!(fs::read_to_string(&log).expect("smoke log").trim(), sb.pin);

        // With upstream fetched: smoke fails at the first break, passes just before it.
        let upstream = sb.upstream.to_str().expect("utf-8");
        git(&sub, &["fetch", "--quiet", upstream, "main"]).expect("fetch upstream");
        git(&sub, &["checkout", "--quiet", "--detach", &sb.breaks[0]]).expect("checkout");
        let (ok, out) = smoke(&sb, None);
        assert!(!ok);
        assert!(out.contains("FAILED: src/main.cpp.o"), "{out}");
        assert!(out.contains("src/main.cpp:12:5: error: no member named 'create' in 'OpBuilder' (API 2, project expects 1)"));
        git(&sub, &["checkout", "--quiet", "--detach", &before]).expect("checkout");
        assert!(smoke(&sb, None).0);

        // The conflict commit conflicts with the carried patch; the upstreamed one equals its patch.
        let merge = try_git(
            &sub,
            &[
                "merge-tree",
                "--write-tree",
                &format!("--merge-base={}~2", sb.pin),
                &conflict,
                &format!("{}~1", sb.pin),
            ],
            None,
        )
        .expect("merge-tree");
        assert_eq!(merge.code, 1, "{}", merge.stdout);
        let patch_id = |rev: &str| {
            let diff = git(&sub, &["diff-tree", "-p", "--full-index", rev]).expect("diff");
            let out =
                try_git(&sub, &["patch-id", "--stable"], Some(diff.as_bytes())).expect("patch-id");
            out.stdout
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string()
        };
        assert!(!patch_id(&upstreamed).is_empty());
        assert_eq!(patch_id(&upstreamed), patch_id(&sb.pin));
        git(&sub, &["checkout", "--quiet", "--detach", &sb.pin]).expect("checkout");
    }

    #[test]
    fn sandbox_is_deterministic_and_works_without_patches() {
        let spec = SandboxSpec {
            commits: 40,
            affecting_ratio: 0.5,
            breaks: vec![0.0, 0.0, 1.0],
            patches: false,
            conflict_at: Some(0.5),
            upstreams_patch_at: None,
            docs_commits: 0,
            lit_changes: false,
            seed: 7,
        };
        let a = tempfile::tempdir().expect("tempdir");
        let b = tempfile::tempdir().expect("tempdir");
        let x = create(a.path(), &spec).expect("create");
        let y = create(b.path(), &spec).expect("create");
        assert_eq!(x.head, y.head);
        assert_eq!(x.pin, x.base);
        assert!(
            x.patch_subjects.is_empty()
                && x.conflict_commit.is_none()
                && x.upstreamed_commit.is_none()
        );
        assert_eq!(x.affecting.len(), 20);
        assert_eq!(x.breaks.len(), 3);
        assert_eq!(x.breaks[0], x.affecting[0]);
        assert_eq!(x.breaks[1], x.affecting[1]);
        assert_eq!(x.breaks[2], x.affecting[19]);
        assert_eq!(api_level_at(&x, &x.head), Some(4));
        assert_eq!(one(&x.fork, &["rev-parse", "carried"]), x.base);
        assert_eq!(
            one(&x.superproject.join(SUBMODULE_PATH), &["rev-parse", "HEAD"]),
            x.base
        );
        assert!(smoke(&x, None).0);

        let other = create(
            tempfile::tempdir().expect("tempdir").path(),
            &SandboxSpec {
                seed: 8,
                ..spec.clone()
            },
        )
        .expect("create");
        assert_ne!(other.head, x.head);
        assert!(create(a.path(), &spec).is_err(), "refuses to overwrite");
    }

    #[test]
    fn sandbox_rejects_impossible_specs() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = SandboxSpec::demo();
        for spec in [
            SandboxSpec {
                commits: 3,
                ..base.clone()
            },
            SandboxSpec {
                affecting_ratio: 1.5,
                ..base.clone()
            },
            SandboxSpec {
                breaks: vec![2.0],
                ..base.clone()
            },
            SandboxSpec {
                docs_commits: 1000,
                ..base.clone()
            },
        ] {
            let err = create(&tmp.path().join("x"), &spec).expect_err("invalid spec");
            assert_eq!(err.kind, lockstep_core::ErrorKind::Usage, "{err}");
        }
        assert!(!tmp.path().join("x").exists());
    }

    #[test]
    fn sandbox_with_2000_commits_is_built() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = SandboxSpec {
            commits: 2000,
            ..SandboxSpec::demo()
        };
        let started = Instant::now();
        let sb = create(tmp.path(), &spec).expect("create");
        let took = started.elapsed();
        println!("sandbox with {} commits created in {took:?}", spec.commits);
        assert_eq!(sb.pending.len(), 2000);
        assert_eq!(sb.affecting.len(), 1200 - spec.docs_commits);
    }

    /// `cargo test -p lockstep-integrate sandbox_50000 -- --ignored --nocapture`
    #[test]
    #[ignore = "timing run: 50,000 commits"]
    fn sandbox_50000_commits_timing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let spec = SandboxSpec {
            commits: 50_000,
            docs_commits: 200,
            ..SandboxSpec::demo()
        };
        let started = Instant::now();
        let sb = create(tmp.path(), &spec).expect("create");
        let took = started.elapsed();
        println!("sandbox with {} commits created in {took:?}", spec.commits);
        assert_eq!(sb.pending.len(), 50_000);
        assert!(took.as_secs() < 120, "took {took:?}");
    }
}
