//! Fuzz targets over trees lockstep reads but did not write: a bundle
//! directory (`bench --from-bundle`, `test --from-bundle`) and a repository
//! `lockstep init` surveys. The input is a small program, one operation a
//! line, that builds the tree in a temporary directory:
//!
//! ```text
//! file PATH TEXT        a regular file (TEXT to the end of the line)
//! fifo PATH             a FIFO (nothing ever writes to it)
//! link PATH TARGET      a symbolic link (see below for the targets)
//! dir PATH              a directory
//! deep N                N nested directories under `deep/`, a file at the bottom
//! sparse PATH BYTES     a sparse file of that size (at most 2 MiB)
//! rm PATH               removes a file, link or FIFO made before
//! kernel FUNC MLIR      (bench bundles) a sealed kernel-cache entry of that MLIR
//! listing               takes the `{FILES}` listing now (later lines tamper)
//! manifest JSON         bundle.json, written last, `{FILES}` and `{KERNELS}` filled
//! pin PATH              (init) `--pin PATH`
//! ```
//!
//! In a PATH, `{KEY}` is the key of the last `kernel` line's entry.
//! PATH and TEXT take escapes (`\n`, `\r`, `\t`, `\e`, `\0`, `\s` for a
//! space, `\\`, `\xHH`, `\u{HHHH}`), so names hold control characters,
//! newlines and TOML. Whatever the input, the tree stays inside its
//! temporary directory: a PATH is relative with no `..` and never goes
//! through a link, `.git` is never written, and a link's TARGET is relative
//! without `..` (so no chain of links leaves the tree), one of a few fixed
//! files outside it (`/dev/zero`, `/dev/urandom`, `/dev/null`, `/dev/full`,
//! `/proc/self/status`, `/proc/version`), or `@outside`, `@outside-fifo`,
//! `@outside-dir` (a file, a FIFO and a directory beside the tree).
//!
//! - `bench-bundle`, `test-bundle`: `lockstep_bench::bundle::load` /
//!   `lockstep_suite::bundle::load`, then the test bundle's configuration
//!   (`bundle::config`, parsed with the binary's sections). Ok, or a
//!   refusal naming the bundle; an accepted bundle holds no FIFO, device,
//!   kernel file or link to one, wherever it sits.
//! - `init-repo`: `lockstep_init::survey` and `render` over a repository
//!   (a `.git` made by hand, the files untracked: git lists those too).
//!   The rendered file has no control or bidi character but its newlines,
//!   loads with the binary's sections, and holds exactly the settings the
//!   survey found (no table or key a name smuggled in); a refusal names the
//!   path (or `.gitmodules`, or `--pin`).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::contract::Outcome;

/// The most operations one input runs.
const MAX_OPS: usize = 200;
/// The deepest `deep` tree.
const MAX_DEEP: usize = 300;
/// The largest sparse file.
const MAX_SPARSE: u64 = 2 << 20;

/// One line of the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    File(Vec<u8>, Vec<u8>),
    Fifo(Vec<u8>),
    Link(Vec<u8>, Vec<u8>),
    Dir(Vec<u8>),
    Deep(usize),
    Sparse(Vec<u8>, u64),
    Rm(Vec<u8>),
    Kernel(Vec<u8>, Vec<u8>),
    Listing,
    Manifest(Vec<u8>),
    Pin(Vec<u8>),
}

/// The input as operations (lines that are none are left out).
pub fn program(input: &[u8]) -> Vec<Op> {
    input
        .split(|b| *b == b'\n')
        .filter_map(op)
        .take(MAX_OPS)
        .collect()
}

fn split_word(line: &[u8]) -> (&[u8], &[u8]) {
    match line.iter().position(|b| *b == b' ') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => (line, &[]),
    }
}

fn number(text: &[u8]) -> Option<u64> {
    std::str::from_utf8(text).ok()?.trim().parse().ok()
}

fn op(line: &[u8]) -> Option<Op> {
    let (word, rest) = split_word(line);
    let (arg, text) = split_word(rest);
    Some(match word {
        b"file" => Op::File(unescape(arg), unescape(text)),
        b"fifo" => Op::Fifo(unescape(arg)),
        b"link" => Op::Link(unescape(arg), unescape(text)),
        b"dir" => Op::Dir(unescape(arg)),
        b"deep" => Op::Deep(number(arg)?.min(MAX_DEEP as u64) as usize),
        b"sparse" => Op::Sparse(unescape(arg), number(text)?.min(MAX_SPARSE)),
        b"rm" => Op::Rm(unescape(arg)),
        b"kernel" => Op::Kernel(arg.to_vec(), unescape(text)),
        b"listing" => Op::Listing,
        // JSON has its own escapes: the line as it is.
        b"manifest" => Op::Manifest(rest.to_vec()),
        b"pin" => Op::Pin(unescape(rest)),
        _ => return None,
    })
}

/// `\n`, `\r`, `\t`, `\e`, `\0`, `\s`, `\\`, `\xHH` and `\u{HHHH}`; any
/// other backslash stays.
pub fn unescape(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if b != b'\\' || i + 1 == text.len() {
            out.push(b);
            i += 1;
            continue;
        }
        let next = text[i + 1];
        let simple = match next {
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'e' => Some(0x1b),
            b'0' => Some(0),
            b's' => Some(b' '),
            b'\\' => Some(b'\\'),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            i += 2;
            continue;
        }
        let hex = |s: &[u8]| u32::from_str_radix(std::str::from_utf8(s).ok()?, 16).ok();
        if next == b'x' && i + 4 <= text.len() {
            if let Some(v) = hex(&text[i + 2..i + 4]) {
                out.push(v as u8);
                i += 4;
                continue;
            }
        }
        if next == b'u' && text.get(i + 2) == Some(&b'{') {
            if let Some(len) = text[i + 3..].iter().take(7).position(|b| *b == b'}') {
                if let Some(c) = hex(&text[i + 3..i + 3 + len]).and_then(char::from_u32) {
                    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                    i += 4 + len;
                    continue;
                }
            }
        }
        out.push(b);
        i += 1;
    }
    out
}

/// Files outside the tree a link may name.
const OUTSIDE_FILES: &[&str] = &[
    "/dev/zero",
    "/dev/urandom",
    "/dev/null",
    "/dev/full",
    "/proc/self/status",
    "/proc/version",
];

/// A tree built from a program in a temporary directory.
pub struct Tree {
    /// The tree (`TEMP/NAME`).
    pub root: PathBuf,
    /// The paths the program made (relative, as given).
    pub made: Vec<Vec<u8>>,
    /// `{KERNELS}`: what `kernel` lines made.
    pub kernels: Vec<serde_json::Value>,
    /// The `--pin` the program asks for.
    pub pin: Option<String>,
    temp: tempfile::TempDir,
}

/// What [`Tree::build`] does with a `kernel` line: a sealed entry under
/// the tree, and its `{KERNELS}` item.
pub type KernelWriter<'a> = &'a dyn Fn(&Path, &str, &str) -> Option<serde_json::Value>;

impl Tree {
    /// An empty tree `NAME` with a file, a FIFO and a directory beside it.
    pub fn new(name: &str) -> Option<Tree> {
        let temp = scratch()?;
        let root = temp.path().join(name);
        std::fs::create_dir(&root).ok()?;
        std::fs::write(temp.path().join("outside.txt"), "outside the tree\n").ok()?;
        nix::unistd::mkfifo(
            &temp.path().join("outside.fifo"),
            nix::sys::stat::Mode::S_IRWXU,
        )
        .ok()?;
        std::fs::create_dir(temp.path().join("outside-dir")).ok()?;
        std::fs::write(temp.path().join("outside-dir/x"), "outside\n").ok()?;
        Some(Tree {
            root,
            made: Vec::new(),
            kernels: Vec::new(),
            pin: None,
            temp,
        })
    }

    /// The temporary directory the tree is in (beside it: the `@outside`
    /// files, and room for a command's own files).
    pub fn temp(&self) -> &Path {
        self.temp.path()
    }

    /// Runs `ops`: `kernel` lines first (into a tree nothing else touched
    /// yet), then the others in order, the manifest last. `kernel` lines
    /// are left out without a writer.
    pub fn build(&mut self, ops: &[Op], kernel: Option<KernelWriter<'_>>) {
        if let Some(write) = kernel {
            for op in ops {
                if let Op::Kernel(func, mlir) = op {
                    let func = String::from_utf8_lossy(func);
                    let ok = !func.is_empty()
                        && func.len() <= 64
                        && func.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                    if ok {
                        if let Some(k) = write(&self.root, &func, &String::from_utf8_lossy(mlir)) {
                            self.kernels.push(k);
                        }
                    }
                }
            }
        }
        let mut snapshot = None;
        let mut manifest = None;
        for op in ops {
            match op {
                Op::File(rel, text) => {
                    if let Some(path) = self.place(rel, true) {
                        let _ = std::fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .open(path)
                            .and_then(|mut f| f.write_all(text));
                    }
                }
                Op::Fifo(rel) => {
                    if let Some(path) = self.place(rel, true) {
                        let _ = nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU);
                    }
                }
                Op::Link(rel, target) => {
                    if let (Some(target), Some(path)) =
                        (self.link_target(target), self.place(rel, true))
                    {
                        let _ = std::os::unix::fs::symlink(target, path);
                    }
                }
                Op::Dir(rel) => {
                    if let Some(path) = self.place(rel, true) {
                        let _ = std::fs::create_dir(path);
                    }
                }
                Op::Deep(n) => {
                    let mut rel = b"deep".to_vec();
                    for _ in 0..*n {
                        rel.extend_from_slice(b"/d");
                    }
                    rel.extend_from_slice(b"/x");
                    if let Some(path) = self.place(&rel, true) {
                        let _ = std::fs::write(path, "deep\n");
                    }
                }
                Op::Sparse(rel, size) => {
                    if let Some(path) = self.place(rel, true) {
                        let _ = std::fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .open(path)
                            .and_then(|f| f.set_len(*size));
                    }
                }
                Op::Rm(rel) => {
                    if let Some(path) = self.place(rel, false) {
                        let _ = std::fs::remove_file(path);
                    }
                }
                Op::Kernel(..) => {}
                Op::Listing => snapshot = Some(listing(&self.root)),
                Op::Manifest(text) => manifest = Some(text.clone()),
                Op::Pin(pin) => self.pin = Some(String::from_utf8_lossy(pin).into_owned()),
            }
        }
        if let Some(text) = manifest {
            let files = snapshot.unwrap_or_else(|| listing(&self.root));
            let text = String::from_utf8_lossy(&text)
                .replace("{FILES}", &files.to_string())
                .replace(
                    "{KERNELS}",
                    &serde_json::Value::from(self.kernels.clone()).to_string(),
                );
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(self.root.join("bundle.json"))
                .and_then(|mut f| f.write_all(text.as_bytes()));
        }
    }

    /// Where `rel` goes inside the tree, its missing parents made (when
    /// `make`): None when it is not a plain relative path, names `.git`, or
    /// an existing parent is anything but a real directory (a link to one
    /// included: nothing is ever written through a link).
    fn place(&mut self, rel: &[u8], make: bool) -> Option<PathBuf> {
        let key = self
            .kernels
            .last()
            .and_then(|k| k.get("key")?.as_str().map(str::to_string));
        let expanded;
        let rel = match key {
            Some(key) if rel.windows(5).any(|w| w == b"{KEY}") => {
                expanded = String::from_utf8_lossy(rel)
                    .replace("{KEY}", &key)
                    .into_bytes();
                &expanded[..]
            }
            _ => rel,
        };
        if rel.is_empty() || rel.len() > 1024 || rel.contains(&0) {
            return None;
        }
        let path = Path::new(std::ffi::OsStr::from_bytes(rel));
        let parts: Vec<&std::ffi::OsStr> = path
            .components()
            .map(|c| match c {
                Component::Normal(p) => Some(p),
                _ => None,
            })
            .collect::<Option<_>>()?;
        if parts.is_empty()
            || parts.len() > MAX_DEEP + 4
            || parts[0].as_bytes().eq_ignore_ascii_case(b".git")
        {
            return None;
        }
        let mut at = self.root.clone();
        for part in &parts[..parts.len() - 1] {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_dir() => {}
                Ok(_) => return None,
                Err(_) if make => std::fs::create_dir(&at).ok()?,
                Err(_) => return None,
            }
        }
        at.push(parts[parts.len() - 1]);
        self.made.push(rel.to_vec());
        Some(at)
    }

    /// A link's target: relative without `..`, one of [`OUTSIDE_FILES`],
    /// or `@outside`, `@outside-fifo`, `@outside-dir`.
    fn link_target(&self, target: &[u8]) -> Option<PathBuf> {
        let beside = |name: &str| Some(self.temp.path().join(name));
        match target {
            b"@outside" => beside("outside.txt"),
            b"@outside-fifo" => beside("outside.fifo"),
            b"@outside-dir" => beside("outside-dir"),
            t if t.is_empty() || t.contains(&0) => None,
            t if t.starts_with(b"/") => OUTSIDE_FILES
                .iter()
                .find(|f| f.as_bytes() == t)
                .map(PathBuf::from),
            t => {
                let path = PathBuf::from(std::ffi::OsStr::from_bytes(t));
                path.components()
                    .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
                    .then_some(path)
            }
        }
    }
}

/// A temporary directory, in memory where the machine has `/dev/shm` (a
/// tree per input: on a disk, making and removing them is most of the
/// time), else in the usual temporary directory.
fn scratch() -> Option<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("lockstep-fuzz-")
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .ok()
}

/// A bundle's `files` for the tree at `root` as it is now: every regular
/// file (or link to one in the tree) with its size and sha256, anything
/// else (a FIFO, a link to a device or to /proc) listed with a size and
/// digest that cannot match, so that the check reaches it.
fn listing(root: &Path) -> serde_json::Value {
    let mut files = BTreeMap::new();
    for (rel, path, kind) in entries(root) {
        if rel == "bundle.json" || lockstep_cache::is_lock_path(&rel) || kind == Kind::Dir {
            continue;
        }
        let regular = std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= MAX_SPARSE)
            && !std::fs::canonicalize(&path)
                .is_ok_and(|p| p.starts_with("/proc") || p.starts_with("/sys"));
        let record = match regular.then(|| std::fs::read(&path).ok()).flatten() {
            Some(bytes) => serde_json::json!({
                "size": bytes.len(),
                "sha256": lockstep_core::hash::sha256_bytes(&bytes),
            }),
            None => serde_json::json!({"size": 4096, "sha256": "0".repeat(64)}),
        };
        files.insert(rel, record);
    }
    serde_json::Value::Object(files.into_iter().collect())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Link,
    Other,
}

/// Every entry under `root` (links not followed), `/`-separated.
fn entries(root: &Path) -> Vec<(String, PathBuf, Kind)> {
    let mut out = Vec::new();
    let mut pending = vec![(root.to_path_buf(), String::new(), 0usize)];
    while let Some((dir, prefix, depth)) = pending.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            let rel = format!("{prefix}{}", entry.file_name().to_string_lossy());
            let path = entry.path();
            let kind = match entry.file_type() {
                Ok(t) if t.is_dir() => Kind::Dir,
                Ok(t) if t.is_file() => Kind::File,
                Ok(t) if t.is_symlink() => Kind::Link,
                _ => Kind::Other,
            };
            if kind == Kind::Dir && depth < MAX_DEEP + 8 && out.len() < 100_000 {
                pending.push((path.clone(), format!("{rel}/"), depth + 1));
            }
            out.push((rel, path, kind));
        }
    }
    out
}

/// An accepted bundle at `root` must hold nothing that could block or read
/// without end: every entry lockstep reads (all but lock files) is a
/// regular file, or a link to one outside the kernel's filesystems.
fn accepted_bundle(root: &Path) -> Outcome {
    for (rel, path, kind) in entries(root) {
        if lockstep_cache::is_lock_path(&rel) || kind == Kind::Dir || kind == Kind::File {
            continue;
        }
        let regular = kind == Kind::Link
            && std::fs::metadata(&path).is_ok_and(|m| m.is_file())
            && !std::fs::canonicalize(&path)
                .is_ok_and(|p| p.starts_with("/proc") || p.starts_with("/sys"));
        if !regular {
            return Outcome::Unnamed(format!(
                "accepted a bundle holding {rel:?}, which is not a regular file"
            ));
        }
    }
    Outcome::Accepted
}

/// A refusal about the bundle at `root`: its first line, which must name it.
fn bundle_refusal(root: &Path, err: &lockstep_core::Error, input: &[u8]) -> Outcome {
    let text = err.render();
    let first = crate::contract::kind_of_named(&text, input);
    // Bounded whatever the names in the bundle: a path is at most
    // PATH_MAX, a name from the manifest is shown cut.
    let longest = text.lines().map(str::len).max().unwrap_or(0);
    if longest > MAX_LINE {
        return Outcome::Unnamed(format!("a refusal with a line of {longest} bytes: {first}"));
    }
    match text.contains(&root.display().to_string()) {
        true => Outcome::Refused(first),
        false => Outcome::Unnamed(first),
    }
}

/// The longest line a bundle's refusal may have: two paths of PATH_MAX
/// (the bundle's own directory and a file in it) and the words around them.
const MAX_LINE: usize = 10_000;

/// The identity the fuzzed bench bundles' kernels are keyed with.
const KEY_IDENTITY: &str = "fuzz-key-identity";

/// A sealed kernel entry of `mlir` in the bench bundle at `root`, keyed as
/// a compiler of [`KEY_IDENTITY`] without flags would key it.
fn bench_kernel(root: &Path, func: &str, mlir: &str) -> Option<serde_json::Value> {
    let key = lockstep_bench::cache::key(KEY_IDENTITY, mlir, &[]);
    let (kernels, _) = lockstep_bench::bundle::areas(root);
    let slot = kernels.slot(&key, Some(func));
    let lock = slot.lock().ok()?;
    let mut stage = lock.stage();
    stage
        .write(lockstep_bench::cache::SOURCE, mlir.as_bytes())
        .ok()?;
    stage
        .write(lockstep_bench::cache::MODULE, b"not a module")
        .ok()?;
    stage.commit(serde_json::json!({})).ok()?;
    Some(serde_json::json!({
        "func_name": func,
        "key": key.as_str(),
        "inputs_sha256": [],
    }))
}

/// `bench --from-bundle`: the bundle the input builds, loaded.
pub fn bench_bundle(input: &[u8]) -> Outcome {
    let Some(mut tree) = Tree::new("bundle") else {
        return Outcome::Accepted;
    };
    tree.build(&program(input), Some(&bench_kernel));
    match lockstep_bench::bundle::load(&tree.root) {
        Ok(_) => accepted_bundle(&tree.root),
        Err(e) => bundle_refusal(&tree.root, &e, input),
    }
}

/// `test --from-bundle`: the bundle the input builds, loaded, and its
/// lockstep.toml read and parsed as the command loads it.
pub fn test_bundle(input: &[u8]) -> Outcome {
    let Some(mut tree) = Tree::new("bundle") else {
        return Outcome::Accepted;
    };
    tree.build(&program(input), None);
    if let Err(e) = lockstep_suite::bundle::load(&tree.root) {
        return bundle_refusal(&tree.root, &e, input);
    }
    if let Outcome::Unnamed(m) = accepted_bundle(&tree.root) {
        return Outcome::Unnamed(m);
    }
    let (path, text) = match lockstep_suite::bundle::config(&tree.root) {
        Ok(found) => found,
        Err(e) => return bundle_refusal(&tree.root, &e, input),
    };
    match lockstep_core::config::parse(
        text,
        Some(path.clone()),
        tree.root.clone(),
        crate::lockstep_config::SECTIONS,
    ) {
        Ok(_) => Outcome::Accepted,
        Err(e) => bundle_refusal(
            &tree.root,
            &lockstep_core::Error::usage(e.to_string()),
            input,
        ),
    }
}

/// The settings a survey should become, as a TOML table.
fn expected(survey: &lockstep_init::Survey, iree: &str) -> toml::Table {
    use toml::Value;
    let s = |t: &str| Value::String(t.to_string());
    let strings = |v: &[String]| Value::Array(v.iter().map(|t| s(t)).collect());
    let mut integrate = toml::Table::new();
    if let Some(found) = &survey.pin {
        if let Some(path) = &found.submodule {
            integrate.insert("submodule".into(), s(path));
        }
        if let Some(path) = &found.pin_file {
            integrate.insert("pin-file".into(), s(path));
        }
        if let Some(spec) = &found.pin {
            let mut pin = toml::Table::new();
            pin.insert("file".into(), s(&spec.file));
            if let Some(pattern) = &spec.pattern {
                pin.insert("pattern".into(), s(pattern));
            }
            if let Some(sum) = &spec.sha256 {
                let mut sha = toml::Table::new();
                sha.insert("pattern".into(), s(&sum.pattern));
                sha.insert("archive".into(), s(&sum.archive));
                pin.insert("sha256".into(), Value::Table(sha));
            }
            integrate.insert("pin".into(), Value::Table(pin));
        }
        integrate.insert("upstream-url".into(), s(&found.upstream_url));
    }
    let mut toolchain = toml::Table::new();
    toolchain.insert("iree".into(), s(iree));
    let mut test = toml::Table::new();
    if !survey.test_paths.is_empty() {
        test.insert("paths".into(), strings(&survey.test_paths));
    }
    if !survey.suite_configs.is_empty() {
        test.insert("suite-configs".into(), strings(&survey.suite_configs));
    }
    let mut top = toml::Table::new();
    top.insert("integrate".into(), Value::Table(integrate));
    top.insert("toolchain".into(), Value::Table(toolchain));
    top.insert("test".into(), Value::Table(test));
    if !survey.packages.is_empty() {
        let packages = survey
            .packages
            .iter()
            .map(|p| {
                let mut t = toml::Table::new();
                t.insert("name".into(), s(&p.name));
                t.insert("source".into(), s(&p.source));
                Value::Table(t)
            })
            .collect();
        let mut pkg = toml::Table::new();
        pkg.insert("package".into(), Value::Array(packages));
        top.insert("pkg".into(), Value::Table(pkg));
    }
    top
}

/// A `.git` made by hand (no git process): HEAD, objects and refs are
/// what git looks for; every file of the tree is untracked, which
/// `git ls-files --others` lists as init reads it.
fn init_git(root: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(root.join(".git/objects"))?;
    std::fs::create_dir_all(root.join(".git/refs/heads"))?;
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n")
}

/// Whether a refusal names one of the paths the program made (or one of
/// their parent directories), as written or as [`spelled`] spells it.
///
/// [`spelled`]: lockstep_core::error::spelled
fn names_a_path(text: &str, made: &[Vec<u8>]) -> bool {
    if text.contains(".gitmodules") || text.contains("--pin") {
        return true;
    }
    made.iter().any(|rel| {
        let rel = String::from_utf8_lossy(rel);
        let mut prefixes: Vec<&str> = rel.match_indices('/').map(|(i, _)| &rel[..i]).collect();
        prefixes.push(&rel);
        prefixes
            .iter()
            .any(|p| text.contains(*p) || text.contains(&lockstep_core::error::spelled(p)))
    })
}

/// `lockstep init` over the repository the input builds.
pub fn init_repo(input: &[u8]) -> Outcome {
    let Some(mut tree) = Tree::new("repo") else {
        return Outcome::Accepted;
    };
    if init_git(&tree.root).is_err() {
        return Outcome::Accepted;
    }
    tree.build(&program(input), None);
    let refused = |e: &lockstep_core::Error| {
        let text = e.render();
        // The names the input chose (the pin asked for, the paths made)
        // out of the outcome's text, longest first.
        let mut names: Vec<String> = tree
            .made
            .iter()
            .map(|m| String::from_utf8_lossy(m).into_owned())
            .chain(tree.pin.clone())
            .flat_map(|n| [lockstep_core::error::spelled(&n), n])
            .filter(|n| !n.is_empty())
            .collect();
        names.sort_by_key(|n| std::cmp::Reverse(n.len()));
        let mut shown = text.lines().next().unwrap_or_default().to_string();
        for name in &names {
            shown = shown.replace(name.as_str(), " P ");
        }
        let first = crate::contract::kind_of_named(&shown, input);
        if text.contains("a bug") {
            return Outcome::Unnamed(first);
        }
        match names_a_path(&text, &tree.made) {
            true => Outcome::Refused(first),
            false => Outcome::Unnamed(first),
        }
    };
    let survey = match lockstep_init::survey(&tree.root, tree.pin.as_deref()) {
        Ok(survey) => survey,
        Err(e) => return refused(&e),
    };
    let iree = lockstep_iree::config::DEFAULT_IREE_VERSION;
    let text = match lockstep_init::render(&survey, iree) {
        Ok(text) => text,
        Err(e) => return refused(&e),
    };
    if let Some(c) = text
        .chars()
        .find(|&c| c != '\n' && lockstep_core::error::hides_text(c))
    {
        return Outcome::Unnamed(format!("rendered U+{:04X}", u32::from(c)));
    }
    let path = tree.root.join(lockstep_init::FILE);
    if let Err(e) = lockstep_core::config::parse(
        text.clone(),
        Some(path),
        tree.root.clone(),
        crate::lockstep_config::SECTIONS,
    ) {
        return Outcome::Unnamed(format!("init made a file lockstep refuses: {e}"));
    }
    let table: toml::Table = match toml::from_str(&text) {
        Ok(table) => table,
        Err(e) => return Outcome::Unnamed(format!("init made a file TOML refuses: {e}")),
    };
    if table != expected(&survey, iree) {
        return Outcome::Unnamed(format!(
            "init wrote settings the survey did not find: {table:?}"
        ));
    }
    Outcome::Accepted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_decode() {
        assert_eq!(
            unescape(br"a\nb\sc\e\x41\u{202e}\q\\"),
            "a\nb c\u{1b}A\u{202e}\\q\\".as_bytes()
        );
    }

    #[test]
    fn a_program_never_writes_outside_its_tree() {
        let mut tree = Tree::new("t").unwrap();
        let outside = tree.temp.path().to_path_buf();
        tree.build(
            &program(b"link up @outside-dir\nfile up/y escaped\nfile ../z escaped\nfile /tmp/z x\nlink l ../x\nlink m /etc/passwd\nfile .git/config x\nfile ok fine"),
            None,
        );
        assert!(!outside.join("outside-dir/y").exists());
        assert!(!outside.join("z").exists());
        assert!(tree
            .root
            .join("up")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(tree.root.join("l").symlink_metadata().is_err());
        assert!(tree.root.join("m").symlink_metadata().is_err());
        assert!(tree.root.join(".git").symlink_metadata().is_err());
        assert_eq!(
            std::fs::read_to_string(tree.root.join("ok")).unwrap(),
            "fine"
        );
    }
}
