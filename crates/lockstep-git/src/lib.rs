//! Typed operations over the `git` command line.
//!
//! lockstep drives git through the CLI users already trust (their config, hooks
//! and credentials), never through a reimplementation. Each function here runs
//! one git command with an argv vector, parses porcelain or `-z` output, and
//! returns errors that name the repository, the command and git's own message.
//! Failures a caller decides on (outside a repository, no such ref, a
//! conflict, a ref taken) are [`GitError`] variants, told apart by exit
//! status and by asking git, never by reading its words.
//!
//! This crate knows nothing about integrates, submodule policies or the store:
//! it only wraps git.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use lockstep_core::process;
use lockstep_core::Error;

pub mod auth;
mod error;
pub mod parse;
pub use auth::RemoteAuth;
pub use error::GitError;
pub use parse::{Commit, CommitDetail, Dirty, Merge, Oid, TreeEntry};
use parse::{DETAIL_FORMAT, LOG_FORMAT};

/// The name of lockstep's directory inside a repository's git dir
/// ([`Repo::state_dir`]).
pub const STATE_DIR: &str = "lockstep";

/// Environment variables that would redirect git away from `-C <dir>`. Git
/// exports them to hooks, so lockstep run from a hook would otherwise act on
/// the hook's repository instead of the one it names (say, the superproject
/// instead of its submodule).
const REPO_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
];

/// The error for a git that cannot be started. Only a missing program is
/// about installing git: an argument git cannot be given (a NUL byte from a
/// configuration value, say) is the input's fault and says so.
pub fn spawn_error(e: std::io::Error) -> Error {
    GitError::Spawn(e).into()
}

/// Refuses an argument or environment value git cannot be given (the OS
/// takes no NUL inside one), naming it, before anything is spawned: such a
/// value comes from lockstep.toml or the command line, not from a missing
/// git.
fn check_args<'s>(values: impl IntoIterator<Item = &'s str>) -> Result<(), GitError> {
    match values.into_iter().find(|v| v.contains('\0')) {
        None => Ok(()),
        Some(bad) => Err(GitError::Nul(bad.to_string())),
    }
}

/// What git said on stderr, or its exit status when it said nothing.
fn said(stderr: &str, code: i32) -> String {
    match stderr.trim() {
        "" => format!("exit status {code}"),
        said => said.to_string(),
    }
}

/// The longest file name the file systems git writes refs to accept, less
/// git's `.lock` suffix: a longer branch name component would fail when
/// `git branch` creates its file.
const MAX_REF_COMPONENT: usize = 255 - ".lock".len();

/// Why `name` cannot be an integrate branch, or `None` when it can: what
/// `git check-ref-format --branch` refuses, plus names git accepts but
/// that mean something else to it (`@`, `HEAD`, `@{...}`, an option, a
/// full ref name that would become `refs/heads/refs/...`).
pub fn branch_name_problem(name: &str) -> Option<String> {
    let problem = if name.is_empty() {
        "it is empty"
    } else if name == "@" || name == "HEAD" {
        "git reads it as the current commit"
    } else if name.contains("@{") {
        "`@{` is git's reflog syntax"
    } else if name.starts_with('-') {
        "it starts with `-` (git would read it as an option)"
    } else if name.starts_with("refs/") {
        "it is a full ref name; give the branch name without `refs/heads/`"
    } else if is_special_ref_spelling(name) {
        "git reads a name spelled like FETCH_HEAD, ORIG_HEAD or MERGE_HEAD (capitals, `_` and `-` only) as its own special ref in .git, not as this branch"
    } else if name.contains('\0') {
        "it contains a NUL character"
    } else if name.split('/').any(|c| c.len() > MAX_REF_COMPONENT) {
        "a part between `/` is longer than 250 bytes, more than a file name can hold"
    } else if ref_name_ok(&format!("refs/heads/{name}")) {
        return None;
    } else {
        "`git check-ref-format --branch` refuses it"
    };
    Some(problem.to_string())
}

/// Whether `name` is spelled like one of git's special refs at the top of
/// its directory (`FETCH_HEAD`, `ORIG_HEAD`, `MERGE_HEAD`, `AUTO_MERGE`
/// ...): one level of capitals, `_` and `-`, which `git rev-parse` looks up
/// in `.git/` before `refs/heads/`.
pub fn is_special_ref_spelling(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'_' || b == b'-')
}

/// Whether `full` (a whole ref name: `refs/heads/...`, `refs/tags/...`) is
/// one `git check-ref-format` accepts. Checked in process by gitoxide's
/// validator (its rules are git's; `tests::ref_names_are_checked_as_git_checks_them`
/// holds it to git itself): a command reading its configuration checks a
/// few names, and a git process each cost more than the rest of
/// `integrate status` before its walk.
pub fn ref_name_ok(full: &str) -> bool {
    gix_validate::reference::name(full.as_bytes().into()).is_ok()
}

/// A git repository (a work tree, or a bare repository).
#[derive(Debug, Clone)]
pub struct Repo {
    dir: PathBuf,
}

/// Output of a git command that may legitimately fail.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The longest a git command may run: a fetch of a large upstream over a
/// slow link takes long, a git that hangs (a lock, a stalled connection)
/// must not hold lockstep forever. Its whole process group is killed then.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(2 * 3600);

/// What is kept of a git command's output: all of stdout (lockstep reads
/// it), the first and last MiB of stderr (progress and hook output).
const GIT_BOUNDS: process::Bounds = process::Bounds {
    max_stdout: None,
    max_stderr: Some(2 << 20),
};

impl Repo {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Repo { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A git command run in this repository, for callers that must stream
    /// its input or output themselves; stdin is null unless they change it.
    /// Start it with `lockstep_core::process::spawn_group` and wait with
    /// `wait_group` and a timeout.
    pub fn command(&self, args: &[&str]) -> Command {
        // git runs hooks and filters: lockstep's tokens stay home
        // (`process::command` takes them out). A job's GIT_CONFIG_* is
        // git's own configuration, so git alone gets it back, by name.
        let mut cmd = process::command("git");
        cmd.arg("-C").arg(&self.dir).args(args);
        for var in REPO_ENV {
            cmd.env_remove(var);
        }
        for var in process::git_config_vars() {
            if let Some(value) = std::env::var_os(&var) {
                cmd.env(var, value);
            }
        }
        cmd.env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", "true");
        cmd
    }

    /// Runs git and returns its output whatever the exit status.
    pub fn try_git(&self, args: &[&str]) -> Result<Output, Error> {
        self.try_git_env(args, &[], None)
    }

    /// Runs git with extra environment and optional stdin.
    pub fn try_git_env(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        input: Option<&[u8]>,
    ) -> Result<Output, Error> {
        Ok(self.run(args, env, input)?)
    }

    /// [`Repo::try_git_env`] with its error as a value to match on.
    pub fn run(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        input: Option<&[u8]>,
    ) -> Result<Output, GitError> {
        check_args(args.iter().copied())?;
        check_args(env.iter().map(|(_, v)| *v))?;
        let mut cmd = self.command(args);
        cmd.envs(env.iter().copied());
        tracing::debug!(repo = %self.dir.display(), "git {}", args.join(" "));
        let out = process::capture(&mut cmd, input, Some(GIT_TIMEOUT), GIT_BOUNDS)
            .map_err(GitError::Spawn)?;
        let code = match out.exit {
            process::Exit::Code(code) => code,
            process::Exit::TimedOut => {
                return Err(GitError::TimedOut {
                    command: args.join(" "),
                    dir: self.dir.clone(),
                })
            }
            process::Exit::Signal(_) => -1,
        };
        Ok(Output {
            code,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// [`Repo::run`]; a non-zero exit is [`GitError::Failed`].
    fn checked(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        input: Option<&[u8]>,
    ) -> Result<String, GitError> {
        let out = self.run(args, env, input)?;
        if out.code != 0 {
            return Err(self.failure(args, &out));
        }
        Ok(out.stdout)
    }

    /// Runs git; a non-zero exit is an error naming the command and git's message.
    pub fn git(&self, args: &[&str]) -> Result<String, Error> {
        self.git_env(args, &[], None)
    }

    pub fn git_env(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        input: Option<&[u8]>,
    ) -> Result<String, Error> {
        Ok(self.checked(args, env, input)?)
    }

    /// [`Repo::try_git`] for a command that talks to `remote` (a remote's
    /// name or a URL): it alone gets the job's credential for that remote
    /// ([`RemoteAuth::from_job`]), in its own environment.
    pub fn try_git_remote(&self, remote: &str, args: &[&str]) -> Result<Output, Error> {
        let url = if remote.contains("://") {
            Some(remote.to_string())
        } else {
            self.remote_url(remote)?
        };
        match url.as_deref().and_then(RemoteAuth::from_job) {
            Some(auth) => self.try_git_env(args, &auth.env(), None),
            None => self.try_git(args),
        }
    }

    /// [`Repo::try_git_remote`], an error when git fails.
    pub fn git_remote(&self, remote: &str, args: &[&str]) -> Result<String, Error> {
        let out = self.try_git_remote(remote, args)?;
        if out.code != 0 {
            return Err(self.failure(args, &out).into());
        }
        Ok(out.stdout)
    }

    fn failure(&self, args: &[&str], out: &Output) -> GitError {
        GitError::Failed {
            command: args.join(" "),
            dir: self.dir.clone(),
            code: out.code,
            stderr: out.stderr.trim().to_string(),
        }
    }

    /// A new bare repository at `path` (a remote for tags and exports).
    pub fn init_bare(path: &Path) -> Result<Repo, Error> {
        let parent = path.parent().unwrap_or(Path::new("."));
        Repo::new(parent).git(&["init", "--quiet", "--bare", &path.to_string_lossy()])?;
        Ok(Repo::new(path))
    }

    /// The top of the work tree containing `dir`; [`GitError::NotARepository`]
    /// when there is none (git that cannot run is not that).
    pub fn discover(dir: &Path) -> Result<Repo, GitError> {
        let top = Repo::rev_parse_in_tree(dir, &["--show-toplevel"])?;
        Ok(Repo::new(top.trim()))
    }

    /// [`Repo::discover`] and the repository's [`Repo::state_dir`], asked of
    /// git at once (one process where a command's start pays for each).
    pub fn discover_with_state_dir(dir: &Path) -> Result<(Repo, PathBuf), Error> {
        let args = [
            "--show-toplevel",
            "--path-format=absolute",
            "--git-common-dir",
        ];
        let out = Repo::rev_parse_in_tree(dir, &args)?;
        let mut lines = out.lines();
        match (lines.next(), lines.next()) {
            (Some(top), Some(common)) => Ok((
                Repo::new(top.trim()),
                PathBuf::from(common.trim()).join(STATE_DIR),
            )),
            _ => Err(Error::failed(format!(
                "`git rev-parse {}` in {} printed no top and common directory",
                args.join(" "),
                dir.display()
            ))),
        }
    }

    /// `git rev-parse ARGS` in `dir`, a failure being "not in a work tree".
    fn rev_parse_in_tree(dir: &Path, args: &[&str]) -> Result<String, GitError> {
        let args: Vec<&str> = std::iter::once("rev-parse")
            .chain(args.iter().copied())
            .collect();
        Repo::new(dir)
            .checked(&args, &[], None)
            .map_err(|e| match e {
                GitError::Failed {
                    command,
                    code,
                    stderr,
                    ..
                } => GitError::NotARepository {
                    dir: dir.to_path_buf(),
                    command,
                    git_said: said(&stderr, code),
                },
                e => e,
            })
    }

    /// The directory shared by all work trees (`.git` for a plain clone).
    pub fn common_dir(&self) -> Result<PathBuf, Error> {
        let out = self.git(&["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
        Ok(PathBuf::from(out.trim()))
    }

    /// lockstep's state directory for this repository: [`STATE_DIR`] in the
    /// git common dir, shared by every work tree of the repository (the
    /// integrate's store and journal, `lockstep test`'s history, bisect
    /// verdicts). The one place it is computed.
    pub fn state_dir(&self) -> Result<PathBuf, Error> {
        Ok(self.common_dir()?.join(STATE_DIR))
    }

    /// This work tree's own git dir (for a submodule: inside the superproject's `.git/modules`).
    pub fn git_dir(&self) -> Result<PathBuf, Error> {
        let out = self.git(&["rev-parse", "--path-format=absolute", "--git-dir"])?;
        Ok(PathBuf::from(out.trim()))
    }

    /// Resolves `rev` to a commit; `None` when it names nothing (or is ambiguous).
    pub fn resolve(&self, rev: &str) -> Result<Option<Oid>, Error> {
        Ok(self.resolved(rev)?)
    }

    fn resolved(&self, rev: &str) -> Result<Option<Oid>, GitError> {
        let spec = format!("{rev}^{{commit}}");
        let out = self.run(
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &spec,
            ],
            &[],
            None,
        )?;
        Ok(if out.code == 0 {
            Some(out.stdout.trim().to_string())
        } else {
            None
        })
    }

    /// Like [`Repo::resolve`], but [`GitError::NoSuchRef`] when the
    /// revision names no commit.
    pub fn must_resolve(&self, rev: &str) -> Result<Oid, GitError> {
        self.resolved(rev)?.ok_or_else(|| GitError::NoSuchRef {
            rev: rev.to_string(),
            dir: self.dir.clone(),
        })
    }

    /// The blob at `spec` (`rev:path`), `None` when there is none.
    pub fn resolve_blob(&self, spec: &str) -> Result<Option<Oid>, Error> {
        let out = self.try_git(&["rev-parse", "--verify", "--quiet", "--end-of-options", spec])?;
        Ok(if out.code == 0 {
            Some(out.stdout.trim().to_string())
        } else {
            None
        })
    }

    /// The size in bytes of the object at `spec` (`rev:path`): what a
    /// caller checks before reading a blob whole (`git show` has no bound).
    pub fn blob_size(&self, spec: &str) -> Result<u64, Error> {
        let out = self.git(&["cat-file", "-s", "--end-of-options", spec])?;
        out.trim().parse().map_err(|_| {
            Error::failed(format!("`git cat-file -s {spec}` printed no size"))
                .cause(out.trim().chars().take(80).collect::<String>())
        })
    }

    pub fn head(&self) -> Result<Oid, Error> {
        Ok(self.must_resolve("HEAD")?)
    }

    /// The checked-out branch (short name), `None` when HEAD is detached.
    pub fn current_branch(&self) -> Result<Option<String>, Error> {
        let out = self.try_git(&["symbolic-ref", "--quiet", "--short", "HEAD"])?;
        Ok(if out.code == 0 {
            Some(out.stdout.trim().to_string())
        } else {
            None
        })
    }

    pub fn branch_exists(&self, name: &str) -> Result<bool, Error> {
        Ok(self.resolve(&format!("refs/heads/{name}"))?.is_some())
    }

    /// Whether `ancestor` is an ancestor of (or equal to) `descendant`.
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool, Error> {
        let out = self.try_git(&["merge-base", "--is-ancestor", ancestor, descendant])?;
        match out.code {
            0 => Ok(true),
            1 => Ok(false),
            _ => Err(self
                .failure(&["merge-base", "--is-ancestor", ancestor, descendant], &out)
                .into()),
        }
    }

    pub fn merge_base(&self, a: &str, b: &str) -> Result<Option<Oid>, Error> {
        let out = self.try_git(&["merge-base", a, b])?;
        Ok(if out.code == 0 {
            Some(out.stdout.trim().to_string())
        } else {
            None
        })
    }

    /// `git rev-list` with the given arguments, one oid per line.
    pub fn rev_list(&self, args: &[&str]) -> Result<Vec<Oid>, Error> {
        let mut full = vec!["rev-list"];
        full.extend_from_slice(args);
        Ok(self.git(&full)?.lines().map(str::to_string).collect())
    }

    /// Commits of `range` (e.g. `["upstream/main", "^base"]`), oldest first,
    /// limited to commits touching `paths` when it is not empty.
    pub fn log(&self, range: &[&str], paths: &[String]) -> Result<Vec<Commit>, Error> {
        let mut args = vec!["log", "-z", "--reverse", LOG_FORMAT];
        args.extend_from_slice(range);
        args.push("--");
        args.extend(paths.iter().map(String::as_str));
        let out = self.git(&args)?;
        Ok(parse::parse_log(&out))
    }

    /// Metadata of one commit.
    pub fn commit(&self, rev: &str) -> Result<Commit, Error> {
        let out = self.git(&["log", "-1", "-z", LOG_FORMAT, rev, "--"])?;
        parse::parse_log(&out)
            .into_iter()
            .next()
            .ok_or_else(|| Error::failed(format!("cannot read commit {rev}")))
    }

    /// Everything needed to recreate `rev` on another base.
    pub fn commit_detail(&self, rev: &str) -> Result<CommitDetail, Error> {
        let out = self.git(&["log", "-1", "-z", "--date=raw", DETAIL_FORMAT, rev, "--"])?;
        parse::parse_commit_details(&out, rev)?
            .into_iter()
            .next()
            .ok_or_else(|| Error::failed(format!("cannot read commit {rev}")))
    }

    /// Details of every commit `revs` selects (`git log` revision arguments,
    /// e.g. `["--reverse", "base..head"]`), in log order, from one git process.
    pub fn commit_details(&self, revs: &[&str]) -> Result<Vec<CommitDetail>, Error> {
        let mut args = vec!["log", "-z", "--date=raw", DETAIL_FORMAT];
        args.extend_from_slice(revs);
        args.push("--");
        let out = self.git(&args)?;
        parse::parse_commit_details(&out, &revs.join(" "))
    }

    /// Paths changed by any of `shas` (each against its first parent), in the
    /// order first seen, from one git process.
    pub fn changed_paths_of(&self, shas: &[&str]) -> Result<Vec<String>, Error> {
        if shas.is_empty() {
            return Ok(Vec::new());
        }
        let input = shas.join("\n") + "\n";
        let out = self.git_env(
            &[
                "diff-tree",
                "--stdin",
                "--no-commit-id",
                "--name-only",
                "-r",
                "-z",
                "--root",
            ],
            &[],
            Some(input.as_bytes()),
        )?;
        let mut paths: Vec<String> = Vec::new();
        for path in out.split('\0').filter(|s| !s.is_empty()) {
            if !paths.iter().any(|p| p == path) {
                paths.push(path.to_string());
            }
        }
        Ok(paths)
    }

    /// The tree of a commit.
    pub fn tree_of(&self, rev: &str) -> Result<Oid, Error> {
        Ok(self
            .git(&["rev-parse", &format!("{rev}^{{tree}}")])?
            .trim()
            .to_string())
    }

    /// The paths of every gitlink (submodule entry) in `rev`'s tree.
    pub fn submodule_paths(&self, rev: &str) -> Result<Vec<String>, Error> {
        let out = self.git(&["ls-tree", "-r", "-z", rev])?;
        Ok(parse::parse_ls_tree(&out)
            .into_iter()
            .filter(|e| e.kind == "commit")
            .map(|e| e.path)
            .collect())
    }

    /// Every gitlink (submodule entry) of `rev`'s tree: its path and the
    /// commit it records, in tree order.
    pub fn gitlinks(&self, rev: &str) -> Result<Vec<(String, Oid)>, Error> {
        let out = self.git(&["ls-tree", "-r", "-z", rev])?;
        Ok(parse::parse_ls_tree(&out)
            .into_iter()
            .filter(|e| e.kind == "commit")
            .map(|e| (e.path, e.oid))
            .collect())
    }

    /// The entry at `path` of `rev`'s tree (its mode says a file, an
    /// executable, a symbolic link `120000`, a tree or a gitlink).
    pub fn tree_entry(&self, rev: &str, path: &str) -> Result<Option<TreeEntry>, Error> {
        let out = self.git(&["ls-tree", "-z", rev, "--", path])?;
        Ok(parse::parse_ls_tree(&out)
            .into_iter()
            .find(|e| e.path == path))
    }

    /// The commit a gitlink (submodule entry) at `path` points to in `rev`'s tree.
    pub fn gitlink(&self, rev: &str, path: &str) -> Result<Option<Oid>, Error> {
        let out = self.git(&["ls-tree", "-z", rev, "--", path])?;
        Ok(parse::parse_ls_tree(&out)
            .into_iter()
            .find(|e| e.path == path && e.kind == "commit")
            .map(|e| e.oid))
    }

    /// Changed and untracked paths (`git status --porcelain -z`), submodule
    /// changes included.
    pub fn dirty(&self) -> Result<Vec<Dirty>, Error> {
        let out = self.git(&[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--ignore-submodules=none",
        ])?;
        Ok(parse::parse_status(&out))
    }

    /// `-c user.name=... -c user.email=...` when git has no identity here (a
    /// CI machine may have none): lockstep's commits and tags are then made
    /// as `lockstep <lockstep@localhost>`; empty when git knows who commits.
    pub fn fallback_identity(&self) -> Result<Vec<&'static str>, GitError> {
        let known = self.run(&["var", "GIT_COMMITTER_IDENT"], &[], None)?.code == 0
            && self.run(&["var", "GIT_AUTHOR_IDENT"], &[], None)?.code == 0;
        Ok(if known {
            Vec::new()
        } else {
            vec![
                "-c",
                "user.name=lockstep",
                "-c",
                "user.email=lockstep@localhost",
            ]
        })
    }

    /// Refuses uncommitted changes to tracked files (untracked files never
    /// count), naming the first few.
    pub fn require_clean_tracked(&self) -> Result<(), Error> {
        let dirt: Vec<String> = self
            .dirty()?
            .into_iter()
            .filter(|d| d.code != "??")
            .map(|d| format!("{} {}", d.code, d.path))
            .collect();
        if dirt.is_empty() {
            return Ok(());
        }
        Err(
            Error::usage("the working tree has uncommitted changes to tracked files")
                .cause(dirt.iter().take(5).cloned().collect::<Vec<_>>().join("; "))
                .hint("commit or stash them: lockstep works from commits"),
        )
    }

    /// Stages `path` as a gitlink to `sha` without touching anything else.
    pub fn stage_gitlink(&self, path: &str, sha: &str) -> Result<(), Error> {
        self.git(&[
            "update-index",
            "--cacheinfo",
            &format!("160000,{sha},{path}"),
        ])?;
        Ok(())
    }

    /// Commits what is staged (hooks run); returns the new HEAD.
    pub fn commit_staged(&self, message: &str, allow_empty: bool) -> Result<Oid, Error> {
        let mut args = self.fallback_identity()?;
        args.extend(["commit", "-q", "-F", "-"]);
        if allow_empty {
            args.push("--allow-empty");
        }
        self.git_env(&args, &[], Some(message.as_bytes()))?;
        self.head()
    }

    /// Detaches HEAD at `rev`, updating the work tree (which must be clean).
    pub fn checkout_detached(&self, rev: &str) -> Result<(), Error> {
        self.git(&["checkout", "-q", "--detach", rev])?;
        Ok(())
    }

    /// Three-way merge of `theirs` onto `ours` with `base`, in the object store only.
    pub fn merge_tree(&self, base: &str, ours: &str, theirs: &str) -> Result<Merge, Error> {
        let merge_base = format!("--merge-base={base}");
        let args = [
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            "-z",
            &merge_base,
            ours,
            theirs,
        ];
        let out = self.try_git(&args)?;
        parse::parse_merge_tree(out.code, &out.stdout)
            .ok_or_else(|| self.failure(&args, &out).into())
    }

    /// Creates a commit object (no ref moves). Author from `author`, committer
    /// from the user's configuration.
    pub fn commit_tree(
        &self,
        tree: &str,
        parents: &[&str],
        message: &str,
        author: Option<(&str, &str, &str)>,
        committer_date: Option<&str>,
    ) -> Result<Oid, Error> {
        let mut args = vec!["commit-tree", tree];
        for p in parents {
            args.push("-p");
            args.push(p);
        }
        args.push("-F");
        args.push("-");
        let mut env: Vec<(&str, &str)> = match author {
            Some((name, email, date)) => vec![
                ("GIT_AUTHOR_NAME", name),
                ("GIT_AUTHOR_EMAIL", email),
                ("GIT_AUTHOR_DATE", date),
            ],
            None => vec![],
        };
        if let Some(date) = committer_date {
            env.push(("GIT_COMMITTER_DATE", date));
        }
        Ok(self
            .git_env(&args, &env, Some(message.as_bytes()))?
            .trim()
            .to_string())
    }

    /// Stable patch-id of one commit's change against its first parent, `None`
    /// for an empty change.
    pub fn patch_id(&self, rev: &str) -> Result<Option<String>, Error> {
        let diff = self.git(&[
            "diff-tree",
            "-p",
            "--no-color",
            "--full-index",
            "--root",
            rev,
        ])?;
        let out = self.git_env(&["patch-id", "--stable"], &[], Some(diff.as_bytes()))?;
        Ok(out.split_whitespace().next().map(str::to_string))
    }

    /// `(sha, full message)` of the commits in `range` touching `paths`, oldest first.
    pub fn messages(&self, range: &[&str], paths: &[String]) -> Result<Vec<(Oid, String)>, Error> {
        let mut args = vec!["log", "-z", "--reverse", "--no-merges", "--format=%H%x1f%B"];
        args.extend_from_slice(range);
        args.push("--");
        args.extend(paths.iter().map(String::as_str));
        let out = self.git(&args)?;
        Ok(out
            .split('\0')
            .filter_map(|rec| rec.split_once('\x1f'))
            .map(|(sha, msg)| (sha.trim().to_string(), msg.to_string()))
            .collect())
    }

    /// Stable patch-ids of the given commits: `(patch_id, sha)`.
    pub fn patch_ids_of(&self, shas: &[&str]) -> Result<Vec<(String, Oid)>, Error> {
        if shas.is_empty() {
            return Ok(Vec::new());
        }
        let input = shas.join("\n") + "\n";
        let diff = self.git_env(
            &[
                "diff-tree",
                "--stdin",
                "-p",
                "--no-color",
                "--full-index",
                "--root",
            ],
            &[],
            Some(input.as_bytes()),
        )?;
        let out = self.git_env(&["patch-id", "--stable"], &[], Some(diff.as_bytes()))?;
        Ok(parse::parse_patch_ids(&out))
    }

    /// Paths a commit changes relative to its first parent.
    pub fn changed_paths(&self, rev: &str) -> Result<Vec<String>, Error> {
        let out = self.git(&[
            "diff-tree",
            "--no-commit-id",
            "--name-only",
            "-r",
            "-z",
            "--root",
            rev,
        ])?;
        Ok(out
            .split('\0')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect())
    }

    pub fn remote_url(&self, name: &str) -> Result<Option<String>, Error> {
        let out = self.try_git(&["remote", "get-url", "--", name])?;
        Ok(if out.code == 0 {
            Some(out.stdout.trim().to_string())
        } else {
            None
        })
    }

    /// Makes `name` point at `url`, adding the remote (without tags) if
    /// missing. Here and in every call below that takes a remote's name or
    /// URL, `--` ends git's options: a value from input that starts with
    /// `-` is a name or URL to git, never an option.
    pub fn ensure_remote(&self, name: &str, url: &str) -> Result<(), Error> {
        match self.remote_url(name)? {
            Some(existing) if existing == url => Ok(()),
            Some(_) => {
                self.git(&["remote", "set-url", "--", name, url])?;
                Ok(())
            }
            None => {
                self.git(&["remote", "add", "--no-tags", "--", name, url])?;
                Ok(())
            }
        }
    }

    pub fn fetch(&self, remote: &str, refspecs: &[&str]) -> Result<(), Error> {
        let mut args = vec!["fetch", "--quiet", "--no-tags", "--", remote];
        args.extend_from_slice(refspecs);
        self.git(&args)
            .map_err(|e| e.hint(format!("check that remote `{remote}` is reachable")))?;
        Ok(())
    }

    /// The commit a remote branch points at, asked of the remote itself.
    pub fn ls_remote_branch(&self, remote: &str, branch: &str) -> Result<Option<Oid>, Error> {
        let refname = format!("refs/heads/{branch}");
        let out = self.git_remote(remote, &["ls-remote", "--", remote, &refname])?;
        Ok(parse::parse_ls_remote(&out, &refname))
    }

    /// Pushes `sha` to `refs/heads/<branch>` on `remote`. Never forced: a
    /// non-fast-forward is rejected by git and reported as an error.
    pub fn push(&self, remote: &str, sha: &str, branch: &str) -> Result<(), Error> {
        let spec = format!("{sha}:refs/heads/{branch}");
        self.git_remote(remote, &["push", "--quiet", "--", remote, &spec])?;
        Ok(())
    }

    /// `git merge ARGS` (lockstep's fallback identity where git has none);
    /// [`GitError::Conflict`] naming the unmerged paths when it stops at
    /// conflicts (the merge is left in progress: `git merge --abort`).
    pub fn merge(&self, args: &[&str]) -> Result<(), GitError> {
        self.may_conflict("merge", args)
    }

    /// `git cherry-pick ARGS`, as [`Repo::merge`] (`git cherry-pick --abort`).
    pub fn cherry_pick(&self, args: &[&str]) -> Result<(), GitError> {
        self.may_conflict("cherry-pick", args)
    }

    /// `git rebase ARGS`, as [`Repo::merge`] (`git rebase --abort`).
    pub fn rebase(&self, args: &[&str]) -> Result<(), GitError> {
        self.may_conflict("rebase", args)
    }

    /// Runs `git SUBCOMMAND ARGS`; a failure that left unmerged paths in
    /// the index is a conflict, any other [`GitError::Failed`].
    fn may_conflict(&self, subcommand: &str, args: &[&str]) -> Result<(), GitError> {
        let mut full = self.fallback_identity()?;
        full.push(subcommand);
        full.extend_from_slice(args);
        let out = self.run(&full, &[], None)?;
        if out.code == 0 {
            return Ok(());
        }
        let paths = self.unmerged_paths()?;
        if paths.is_empty() {
            return Err(self.failure(&full, &out));
        }
        Err(GitError::Conflict {
            command: full.join(" "),
            dir: self.dir.clone(),
            paths,
        })
    }

    /// The paths the index holds unmerged (conflicted), in index order.
    pub fn unmerged_paths(&self) -> Result<Vec<String>, GitError> {
        let out = self.checked(&["diff", "--name-only", "-z", "--diff-filter=U"], &[], None)?;
        Ok(out
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// Creates the annotated tag `name` at `commit` with `message`
    /// (lockstep's fallback identity where git has none);
    /// [`GitError::RefExists`] when the tag exists, or another process
    /// holds its lock while creating it.
    pub fn create_tag(&self, name: &str, commit: &str, message: &str) -> Result<(), GitError> {
        let mut args = self.fallback_identity()?;
        args.extend(["tag", "-a", "-F", "-", name, commit]);
        let out = self.run(&args, &[], Some(message.as_bytes()))?;
        if out.code == 0 {
            return Ok(());
        }
        let refname = format!("refs/tags/{name}");
        // The lock first: a writer holding it has created the ref by the
        // time the lock is gone.
        let lock = self.checked(
            &["rev-parse", "--git-path", &format!("{refname}.lock")],
            &[],
            None,
        )?;
        let locked = self.dir.join(lock.trim()).symlink_metadata().is_ok();
        if locked
            || self
                .run(&["rev-parse", "--verify", "--quiet", &refname], &[], None)?
                .code
                == 0
        {
            return Err(GitError::RefExists {
                name: refname,
                dir: self.dir.clone(),
                git_said: said(&out.stderr, out.code),
            });
        }
        Err(self.failure(&args, &out))
    }

    /// Whether a commit object is present locally.
    pub fn has_commit(&self, sha: &str) -> Result<bool, Error> {
        let out = self.try_git(&["cat-file", "-e", &format!("{sha}^{{commit}}")])?;
        Ok(out.code == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_in_an_argument_is_named_not_blamed_on_git() {
        let repo = Repo::new(std::env::temp_dir());
        let err = repo
            .try_git(&["remote", "add", "up\0stream", "x"])
            .unwrap_err();
        assert_eq!(err.kind, lockstep_core::ErrorKind::Usage);
        assert!(err.message.contains("up\\0stream"), "{}", err.message);
        assert!(!format!("{err:?}").contains("install git"), "{err:?}");
        let missing = spawn_error(std::io::Error::from(std::io::ErrorKind::NotFound));
        assert!(missing.hint.unwrap().contains("install git"));
    }

    /// What git itself says of a ref name (`git check-ref-format`, the
    /// oracle the in-process check is held to).
    fn git_accepts(full: &str) -> bool {
        let mut cmd = process::command("git");
        cmd.arg("check-ref-format").arg(full);
        process::capture(&mut cmd, None, Some(GIT_TIMEOUT), GIT_BOUNDS)
            .is_ok_and(|c| c.exit == process::Exit::Code(0))
    }

    #[test]
    fn ref_names_git_refuses_for_each_of_its_rules_are_refused() {
        for name in [
            "refs/heads/.hidden",
            "refs/heads/a.lock",
            "refs/heads/a..b",
            "refs/heads/a b",
            "refs/heads/a~1",
            "refs/heads/a^",
            "refs/heads/a:b",
            "refs/heads/a?",
            "refs/heads/a*",
            "refs/heads/a[b",
            "refs/heads/a//b",
            "refs/heads/a/",
            "refs/heads/a.",
            "refs/heads/a@{1}",
            "@",
            "refs/heads/a\\b",
            "refs/heads/a\x7f",
            "refs/heads/a\tb",
        ] {
            assert!(!ref_name_ok(name), "{name:?} passed");
            assert!(!git_accepts(name), "git accepts {name:?}");
        }
        for name in [
            "refs/heads/main",
            "refs/remotes/up-stream/x",
            "refs/tags/v1.0-rc.1",
            "refs/heads/integrates/llvm-2026-11-29",
            "refs/heads/caf\u{e9}",
        ] {
            assert!(ref_name_ok(name), "{name:?} refused");
            assert!(git_accepts(name), "git refuses {name:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// Names made of the characters git's rules are about: the in-process
        /// check and `git check-ref-format` always agree.
        #[test]
        fn ref_names_are_checked_as_git_checks_them(tail in "[a-z./@{}~^:?*\\[ \\-]{0,12}") {
            let full = format!("refs/heads/{tail}");
            proptest::prop_assert_eq!(ref_name_ok(&full), git_accepts(&full), "{:?}", full);
        }
    }

    #[test]
    fn a_remote_url_or_name_from_input_is_never_an_option() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repo::new(dir.path());
        repo.git(&["init", "-q"]).unwrap();
        // A URL that starts with `-` is stored as the URL it is.
        repo.ensure_remote("up", "-oProxyCommand=x").unwrap();
        assert_eq!(
            repo.remote_url("up").unwrap().as_deref(),
            Some("-oProxyCommand=x")
        );
        repo.ensure_remote("up", "--upload-pack=y").unwrap();
        assert_eq!(
            repo.remote_url("up").unwrap().as_deref(),
            Some("--upload-pack=y")
        );
        // A remote "named" like an option is looked up as a name.
        assert_eq!(repo.remote_url("-v").unwrap(), None);
        // Fetching "from" an option: git would run it as the upload-pack
        // of the default remote (a local repository here).
        let other = tempfile::tempdir().unwrap();
        Repo::new(other.path()).git(&["init", "-q"]).unwrap();
        repo.ensure_remote("origin", &other.path().display().to_string())
            .unwrap();
        let ran = dir.path().join("upload-pack-ran");
        let option = format!("--upload-pack=touch {}; false", ran.display());
        assert!(repo.fetch(&option, &[]).is_err());
        assert!(repo.ls_remote_branch(&option, "main").is_err());
        assert!(!ran.exists(), "git took a remote's name as an option");
    }

    const WHO: [(&str, &str); 4] = [
        ("GIT_AUTHOR_NAME", "t"),
        ("GIT_AUTHOR_EMAIL", "t@e"),
        ("GIT_COMMITTER_NAME", "t"),
        ("GIT_COMMITTER_EMAIL", "t@e"),
    ];

    /// A repository on `main` whose `f` is `base`, with branch `other`
    /// changing it to `theirs` and `main` to `ours`: the two conflict.
    fn conflicting() -> (tempfile::TempDir, Repo) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repo::new(dir.path());
        let git = |args: &[&str]| repo.git_env(args, &WHO, None).unwrap();
        git(&["init", "-q", "-b", "main"]);
        let write = |text: &str| std::fs::write(dir.path().join("f"), text).unwrap();
        write("base\n");
        git(&["add", "f"]);
        git(&["commit", "-q", "-m", "base"]);
        git(&["checkout", "-q", "-b", "other"]);
        write("theirs\n");
        git(&["commit", "-q", "-am", "theirs"]);
        git(&["checkout", "-q", "main"]);
        write("ours\n");
        git(&["commit", "-q", "-am", "ours"]);
        (dir, repo)
    }

    fn conflict_paths(result: Result<(), GitError>) -> Vec<String> {
        match result {
            Err(GitError::Conflict { paths, .. }) => paths,
            other => panic!("not a conflict: {other:?}"),
        }
    }

    #[test]
    fn outside_a_repository_is_its_own_variant_and_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = Repo::discover(dir.path()).unwrap_err();
        assert!(
            matches!(&err, GitError::NotARepository { dir: d, .. } if d == dir.path()),
            "{err:?}"
        );
        let shown = Error::from(err);
        assert_eq!(shown.kind, lockstep_core::ErrorKind::Usage);
        assert!(shown.message.contains("is not inside a git work tree"));
        assert!(shown.hint.unwrap().contains("--config"));
        // A missing directory is outside any repository too.
        let gone = dir.path().join("gone");
        assert!(matches!(
            Repo::discover(&gone),
            Err(GitError::NotARepository { .. })
        ));
        // Inside one, the top of its work tree.
        let (top, _repo) = conflicting();
        std::fs::create_dir(top.path().join("sub")).unwrap();
        let found = Repo::discover(&top.path().join("sub")).unwrap();
        assert_eq!(
            found.dir().canonicalize().unwrap(),
            top.path().canonicalize().unwrap()
        );
        // git that cannot be started is not "outside a repository".
        let missing = spawn_error(std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(missing.kind, lockstep_core::ErrorKind::Failed);
    }

    #[test]
    fn a_revision_naming_nothing_is_no_such_ref() {
        let (_dir, repo) = conflicting();
        assert!(repo.must_resolve("other").is_ok());
        for rev in ["no-such-branch", "refs/tags/v9", "0123456789abcdef0123"] {
            match repo.must_resolve(rev) {
                Err(GitError::NoSuchRef { rev: r, .. }) => assert_eq!(r, rev),
                other => panic!("{rev}: {other:?}"),
            }
        }
        let shown = Error::from(repo.must_resolve("nope").unwrap_err());
        assert_eq!(shown.kind, lockstep_core::ErrorKind::Usage);
        assert!(shown.message.contains("`nope` does not name a commit"));
    }

    #[test]
    fn merge_cherry_pick_and_rebase_conflicts_name_the_unmerged_paths() {
        let (_dir, repo) = conflicting();
        assert_eq!(conflict_paths(repo.merge(&["--no-edit", "other"])), ["f"]);
        repo.git(&["merge", "--abort"]).unwrap();
        assert_eq!(conflict_paths(repo.cherry_pick(&["other"])), ["f"]);
        repo.git(&["cherry-pick", "--abort"]).unwrap();
        assert_eq!(conflict_paths(repo.rebase(&["other"])), ["f"]);
        repo.git(&["rebase", "--abort"]).unwrap();
        // A failure without conflicts is not one.
        assert!(matches!(
            repo.merge(&["no-such-branch"]),
            Err(GitError::Failed { .. })
        ));
        // Clean ones succeed.
        repo.git_env(&["checkout", "-q", "-b", "side", "main~1"], &WHO, None)
            .unwrap();
        repo.merge(&["--no-edit", "--ff-only", "other"]).unwrap();
        let shown = Error::from(GitError::Conflict {
            command: "merge other".into(),
            dir: "/r".into(),
            paths: vec!["f".into()],
        });
        assert_eq!(shown.causes, ["conflict: f"]);
    }

    #[test]
    fn a_tag_that_exists_or_is_being_created_is_ref_exists() {
        let (dir, repo) = conflicting();
        repo.create_tag("v1", "main", "first\n").unwrap();
        assert_eq!(
            repo.git(&["cat-file", "-p", "refs/tags/v1"])
                .unwrap()
                .lines()
                .last(),
            Some("first")
        );
        assert!(matches!(
            repo.create_tag("v1", "other", "again\n"),
            Err(GitError::RefExists { .. })
        ));
        // Another process creating v2 holds its lock.
        let lock = dir.path().join(".git/refs/tags/v2.lock");
        std::fs::write(&lock, "").unwrap();
        match repo.create_tag("v2", "main", "second\n") {
            Err(GitError::RefExists { name, .. }) => assert_eq!(name, "refs/tags/v2"),
            other => panic!("{other:?}"),
        }
        std::fs::remove_file(&lock).unwrap();
        // Any other failure is not that.
        assert!(matches!(
            repo.create_tag("v3", "no-such-commit", "third\n"),
            Err(GitError::Failed { .. })
        ));
    }

    #[test]
    fn branch_names_git_would_misread_or_cannot_store() {
        for name in [
            "",
            "@",
            "HEAD",
            "a@{1}",
            "-x",
            "refs/heads/x",
            "a\0b",
            "a b",
            "x.lock",
            "FETCH_HEAD",
            "ORIG_HEAD",
            "AUTO_MERGE",
            "MY-BRANCH",
        ] {
            assert!(branch_name_problem(name).is_some(), "{name:?}");
        }
        let long = format!("integrates/{}", "x".repeat(251));
        assert!(branch_name_problem(&long).unwrap().contains("longer than"));
        assert_eq!(branch_name_problem("integrates/llvm-20261124"), None);
    }
}
