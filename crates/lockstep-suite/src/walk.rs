//! The directory walk under test discovery: every directory of a suite tree
//! once, whatever links the tree holds, in bounded time and memory.
//!
//! Suite trees are user input, and a tree can hold symbolic links: a loop
//! (`s/a -> .`), two links to one place, a link up to an ancestor (`-> ..`,
//! `-> /`), or a link into the kernel's pseudo filesystems (`/proc/self`
//! links to `/` and to every process). Following them naively never ends, or
//! lists every test many times. So the walk visits each directory once by
//! (device, inode), never follows a link to a directory that contains the
//! tree's root, never enters /proc, /sys and their kind, and stops with an
//! error past [`MAX_DEPTH`] levels, [`MAX_DIRS`] directories or
//! [`MAX_ENTRIES`] entries. Each link it does not follow is reported with a
//! warning naming it, so nothing is skipped silently.

use std::collections::HashSet;
use std::fs::FileType;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use lockstep_core::error::printable_line;
use lockstep_core::events::Sink;
use lockstep_core::Error;

/// The deepest directory searched below a root (iree-test-suites is a few
/// levels deep).
pub const MAX_DEPTH: usize = 64;
/// The most directories one walk visits (iree-test-suites has a few thousand).
pub const MAX_DIRS: usize = 50_000;
/// The most directory entries one walk reads.
pub const MAX_ENTRIES: usize = 1_000_000;

/// One entry of a directory: its path and what it is (links followed).
#[derive(Debug, Clone)]
pub struct Entry {
    pub path: PathBuf,
    /// A directory (itself or through a link): the walk may descend.
    pub is_dir: bool,
    /// A regular file (itself or through a link): the only kind of file
    /// discovery reads, since a FIFO would block and a device never ends.
    pub is_file: bool,
    /// The entry is a symbolic link.
    pub is_link: bool,
}

/// A walk of the directories under a root, depth first, entries sorted.
pub struct Walk<'a> {
    stack: Vec<(PathBuf, usize)>,
    seen: HashSet<(u64, u64)>,
    visited: usize,
    entries: usize,
    root: PathBuf,
    /// The root's canonical path: a link to it or to a directory above it
    /// leads back into the tree.
    root_real: Option<PathBuf>,
    sink: &'a dyn Sink,
}

impl<'a> Walk<'a> {
    /// A walk from the directory `root`; an error when the root is on a
    /// kernel pseudo filesystem or cannot be read.
    pub fn new(root: &Path, sink: &'a dyn Sink) -> Result<Walk<'a>, Error> {
        let meta = std::fs::metadata(root).map_err(|e| {
            Error::usage(format!("cannot search {}: {e}", shown(root)))
                .hint("pass suite directories or *.suite.toml files")
        })?;
        if let Some(fs) = pseudo_filesystem(root) {
            return Err(Error::usage(format!(
                "{} is on the kernel's {fs} filesystem, which holds no suites: not searched",
                shown(root)
            ))
            .hint("point lockstep test (or [test] paths) at a directory of suites"));
        }
        Ok(Walk {
            stack: vec![(root.to_path_buf(), 0)],
            seen: HashSet::from([(meta.dev(), meta.ino())]),
            visited: 0,
            entries: 0,
            root: root.to_path_buf(),
            root_real: std::fs::canonicalize(root).ok(),
            sink,
        })
    }

    /// Queues `entry` (a directory) unless following it would loop, repeat
    /// a directory or leave for a pseudo filesystem; says why when it skips.
    pub fn descend(&mut self, entry: &Entry, depth: usize) {
        let dir = &entry.path;
        let meta = match std::fs::metadata(dir) {
            Ok(meta) => meta,
            Err(e) => {
                self.sink
                    .warn(format!("skipped {}: cannot read it ({e})", shown(dir)));
                return;
            }
        };
        if let Some(fs) = pseudo_filesystem(dir) {
            self.sink.warn(format!(
                "skipped {}: it leads to the kernel's {fs} filesystem, which holds no suites",
                shown(dir)
            ));
            return;
        }
        if entry.is_link {
            if let Some(target) = self.ancestor_of_root(dir) {
                self.sink.warn(format!(
                    "skipped {}: it links to {}, which contains the suite tree (a symbolic link loop)",
                    shown(dir),
                    shown(&target)
                ));
                return;
            }
        }
        if !self.seen.insert((meta.dev(), meta.ino())) {
            self.sink.warn(format!(
                "skipped {}: it leads to a directory already searched (a symbolic link loop or a second link)",
                shown(dir)
            ));
            return;
        }
        self.stack.push((dir.clone(), depth.saturating_add(1)));
    }

    /// Where the link `dir` resolves to, when that is the root or above it.
    fn ancestor_of_root(&self, dir: &Path) -> Option<PathBuf> {
        let root_real = self.root_real.as_ref()?;
        let target = std::fs::canonicalize(dir).ok()?;
        root_real.starts_with(&target).then_some(target)
    }

    /// The next directory, its depth and its entries sorted by path; an
    /// error when the tree is deeper or larger than any suite tree.
    pub fn next_dir(&mut self) -> Result<Option<(PathBuf, usize, Vec<Entry>)>, Error> {
        let Some((dir, depth)) = self.stack.pop() else {
            return Ok(None);
        };
        self.visited = self.visited.saturating_add(1);
        if depth > MAX_DEPTH {
            return Err(self.too_big(format!(
                "{} is {depth} levels deep, more than {MAX_DEPTH}",
                shown(&dir)
            )));
        }
        if self.visited > MAX_DIRS {
            return Err(self.too_big(format!("it holds more than {MAX_DIRS} directories")));
        }
        let entries = self.read_entries(&dir)?;
        Ok(Some((dir, depth, entries)))
    }

    fn read_entries(&mut self, dir: &Path) -> Result<Vec<Entry>, Error> {
        let reader = match std::fs::read_dir(dir) {
            Ok(reader) => reader,
            Err(e) => {
                self.sink
                    .warn(format!("skipped {}: cannot list it ({e})", shown(dir)));
                return Ok(Vec::new());
            }
        };
        let mut entries = Vec::new();
        for item in reader {
            self.entries = self.entries.saturating_add(1);
            if self.entries > MAX_ENTRIES {
                return Err(self.too_big(format!("it holds more than {MAX_ENTRIES} entries")));
            }
            let Ok(item) = item else { continue };
            let Ok(kind) = item.file_type() else { continue };
            entries.push(entry(item.path(), kind));
        }
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(entries)
    }

    fn too_big(&self, why: String) -> Error {
        Error::usage(format!("{} is not a suite tree: {why}", shown(&self.root)))
            .hint("point lockstep test (or [test] paths) at the directory that holds the suites")
    }
}

/// `path` for a message: on one line, control characters escaped (a
/// directory name may hold any byte but `/`).
fn shown(path: &Path) -> String {
    printable_line(&path.display().to_string()).into_owned()
}

/// What `path` is, links followed (a dangling link is neither kind).
fn entry(path: PathBuf, kind: FileType) -> Entry {
    let (is_dir, is_file) = if kind.is_symlink() {
        match std::fs::metadata(&path) {
            Ok(meta) => (meta.is_dir(), meta.is_file()),
            Err(_) => (false, false),
        }
    } else {
        (kind.is_dir(), kind.is_file())
    };
    Entry {
        path,
        is_dir,
        is_file,
        is_link: kind.is_symlink(),
    }
}

/// The name of the kernel pseudo filesystem `path` is on, if it is on one:
/// those hold no suites and link back to `/` and to every process.
#[cfg(target_os = "linux")]
pub fn pseudo_filesystem(path: &Path) -> Option<&'static str> {
    use nix::sys::statfs::{self, statfs};
    let kind = statfs(path).ok()?.filesystem_type();
    [
        (statfs::PROC_SUPER_MAGIC, "proc"),
        (statfs::SYSFS_MAGIC, "sysfs"),
        (statfs::DEBUGFS_MAGIC, "debugfs"),
        (statfs::TRACEFS_MAGIC, "tracefs"),
        (statfs::SECURITYFS_MAGIC, "securityfs"),
        (statfs::SELINUX_MAGIC, "selinuxfs"),
        (statfs::CGROUP_SUPER_MAGIC, "cgroup"),
        (statfs::CGROUP2_SUPER_MAGIC, "cgroup2"),
        (statfs::BPF_FS_MAGIC, "bpf"),
        (statfs::DEVPTS_SUPER_MAGIC, "devpts"),
    ]
    .into_iter()
    .find(|(magic, _)| *magic == kind)
    .map(|(_, name)| name)
}

#[cfg(not(target_os = "linux"))]
pub fn pseudo_filesystem(_path: &Path) -> Option<&'static str> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_core::events::NullSink;
    use std::os::unix::fs::symlink;

    fn dirs_of(root: &Path) -> Result<Vec<PathBuf>, Error> {
        let mut walk = Walk::new(root, &NullSink)?;
        let mut out = Vec::new();
        while let Some((dir, depth, entries)) = walk.next_dir()? {
            out.push(dir);
            for e in entries.iter().filter(|e| e.is_dir) {
                walk.descend(e, depth);
            }
        }
        Ok(out)
    }

    #[test]
    fn loops_and_second_links_are_visited_once() -> Result<(), Box<dyn std::error::Error>> {
        let tmp = tempfile::tempdir()?;
        let s = tmp.path().join("s");
        std::fs::create_dir_all(s.join("real/deeper"))?;
        symlink(".", s.join("a"))?;
        symlink(".", s.join("b"))?;
        symlink("..", s.join("real/up"))?;
        symlink("/", s.join("slash"))?;
        symlink("real", s.join("again"))?;
        symlink("missing", s.join("dangling"))?;
        let found = dirs_of(&s)?;
        assert_eq!(found.len(), 3, "{found:?}");
        Ok(())
    }

    #[test]
    fn proc_is_refused_as_a_root_and_skipped_below() -> Result<(), Box<dyn std::error::Error>> {
        let err = match Walk::new(Path::new("/proc/self"), &NullSink) {
            Ok(_) => return Err("/proc/self was accepted".into()),
            Err(err) => err,
        };
        assert!(err.message.contains("proc filesystem"), "{}", err.message);
        let tmp = tempfile::tempdir()?;
        symlink("/proc/self", tmp.path().join("p"))?;
        symlink("/sys", tmp.path().join("q"))?;
        assert_eq!(dirs_of(tmp.path())?.len(), 1);
        Ok(())
    }

    #[test]
    fn too_deep_a_tree_is_an_error_naming_it() -> Result<(), Box<dyn std::error::Error>> {
        let tmp = tempfile::tempdir()?;
        let mut deep = tmp.path().to_path_buf();
        for _ in 0..=MAX_DEPTH + 1 {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep)?;
        let err = match dirs_of(tmp.path()) {
            Ok(found) => return Err(format!("walked {} dirs", found.len()).into()),
            Err(err) => err,
        };
        assert!(err.message.contains("levels deep"), "{}", err.message);
        assert!(err.message.contains(&tmp.path().display().to_string()));
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Random trees of directories and links (to siblings, `.`, `..`,
        /// `/`, each other): the walk ends and searches no directory twice.
        #[test]
        fn any_tree_of_links_is_walked_once(
            dirs in proptest::collection::vec(0usize..8, 1..8),
            links in proptest::collection::vec((0usize..8, 0usize..11), 0..10),
        ) {
            let tmp = tempfile::tempdir().map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            // Directory k is d0/d1/.../dk-style: parent chosen by `dirs`.
            let mut paths = vec![tmp.path().join("r")];
            for parent in &dirs {
                let parent = paths[parent % paths.len()].clone();
                let next = parent.join(format!("d{}", paths.len()));
                paths.push(next);
            }
            for p in &paths {
                std::fs::create_dir_all(p).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            }
            for (n, (from, to)) in links.iter().enumerate() {
                let from = &paths[from % paths.len()];
                let target = match to {
                    8 => PathBuf::from("."),
                    9 => PathBuf::from(".."),
                    10 => PathBuf::from("/"),
                    k => paths[k % paths.len()].clone(),
                };
                let _ = symlink(target, from.join(format!("l{n}")));
            }
            let found = dirs_of(&paths[0]).map_err(|e| proptest::test_runner::TestCaseError::fail(e.render()))?;
            let mut ids = HashSet::new();
            for dir in &found {
                let meta = std::fs::metadata(dir).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
                proptest::prop_assert!(ids.insert((meta.dev(), meta.ino())), "{} twice", dir.display());
            }
            proptest::prop_assert!(found.len() <= paths.len());
        }
    }
}
