//! Parsers of the git output lockstep reads (`log -z` records, `status
//! --porcelain -z`, `ls-tree -z`, `merge-tree -z`, `patch-id`, `ls-remote`)
//! and the values they yield.
//!
//! They are pure functions over text so that they can be tested, and
//! fuzzed, without a repository: git's output is trusted to be well formed,
//! but a git of another version, a hook printing to stdout or a lossy UTF-8
//! conversion must give a clean error or a skipped record, never a panic.

use lockstep_core::Error;

/// A full 40-hex object name.
pub type Oid = String;

/// One commit as `git log` describes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Commit {
    pub sha: Oid,
    pub subject: String,
    pub author: String,
    /// Author date, strict ISO 8601.
    pub date: String,
}

/// A commit's metadata needed to recreate it elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitDetail {
    pub sha: Oid,
    pub parents: Vec<Oid>,
    pub tree: Oid,
    pub author_name: String,
    pub author_email: String,
    /// Raw author date (`%ad` with `--date=raw`).
    pub author_date: String,
    /// Raw committer date.
    pub committer_date: String,
    pub subject: String,
    /// Whole message (subject, blank line, body).
    pub message: String,
}

/// Result of a three-way merge computed without touching any work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merge {
    Clean { tree: Oid },
    Conflict { files: Vec<String> },
}

/// A path that `git status` reports as changed or untracked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirty {
    pub code: String,
    pub path: String,
}

/// One entry of `git ls-tree`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    pub mode: String,
    /// `blob`, `tree` or `commit` (a gitlink: a submodule).
    pub kind: String,
    pub oid: Oid,
    pub path: String,
}

/// `git log` format of a [`Commit`], fields separated by US (0x1f).
pub const LOG_FORMAT: &str = "--format=%H%x1f%s%x1f%an%x1f%aI";

/// `git log` format of a [`CommitDetail`], fields separated by US (0x1f).
pub const DETAIL_FORMAT: &str = "--format=%H%x1f%P%x1f%T%x1f%an%x1f%ae%x1f%ad%x1f%cd%x1f%s%x1f%B";

/// Commits of `git log -z` in [`LOG_FORMAT`]; records without the four
/// fields are skipped.
pub fn parse_log(text: &str) -> Vec<Commit> {
    text.split('\0')
        .filter(|rec| !rec.trim().is_empty())
        .filter_map(parse_commit_record)
        .collect()
}

fn parse_commit_record(rec: &str) -> Option<Commit> {
    let rec = rec.trim_start_matches('\n');
    let mut f = rec.splitn(4, '\x1f');
    Some(Commit {
        sha: f.next()?.to_string(),
        subject: f.next()?.to_string(),
        author: f.next()?.to_string(),
        date: f.next()?.trim_end().to_string(),
    })
}

/// Every record of `git log -z --date=raw` in [`DETAIL_FORMAT`]; an error
/// naming `what` (the revisions asked for) when one is not of that form.
pub fn parse_commit_details(text: &str, what: &str) -> Result<Vec<CommitDetail>, Error> {
    text.split('\0')
        .filter(|rec| !rec.is_empty())
        .map(|rec| {
            parse_detail(rec).ok_or_else(|| {
                Error::failed(format!("cannot parse `git log` of {what}")).cause(format!(
                    "a record has fewer than 9 fields: {:?}",
                    preview(rec)
                ))
            })
        })
        .collect()
}

/// One record of [`DETAIL_FORMAT`].
fn parse_detail(record: &str) -> Option<CommitDetail> {
    let mut f = record.splitn(9, '\x1f');
    let mut next = || f.next();
    let (sha, parents, tree) = (next()?, next()?, next()?);
    let (author_name, author_email, author_date) = (next()?, next()?, next()?);
    let (committer_date, subject, message) = (next()?, next()?, next()?);
    Some(CommitDetail {
        sha: sha.trim().to_string(),
        parents: parents.split_whitespace().map(str::to_string).collect(),
        tree: tree.to_string(),
        author_name: author_name.to_string(),
        author_email: author_email.to_string(),
        author_date: author_date.to_string(),
        committer_date: committer_date.to_string(),
        subject: subject.to_string(),
        message: message.trim_end_matches('\n').to_string() + "\n",
    })
}

/// Entries of `git status --porcelain=v1 -z`: `XY path`, a rename or copy
/// followed by its source (skipped). Records too short to hold a code and
/// a path are skipped.
pub fn parse_status(text: &str) -> Vec<Dirty> {
    let mut entries = Vec::new();
    let mut records = text.split('\0').filter(|r| !r.is_empty());
    while let Some(rec) = records.next() {
        let (Some(code), Some(path)) = (rec.get(..2), rec.get(3..)) else {
            continue;
        };
        if path.is_empty() {
            continue;
        }
        if code.starts_with('R') || code.starts_with('C') {
            records.next();
        }
        entries.push(Dirty {
            code: code.to_string(),
            path: path.to_string(),
        });
    }
    entries
}

/// Entries of `git ls-tree -z` (`MODE TYPE OID\tPATH`); malformed records
/// are skipped.
pub fn parse_ls_tree(text: &str) -> Vec<TreeEntry> {
    text.split('\0')
        .filter_map(|entry| {
            let (meta, path) = entry.split_once('\t')?;
            let mut fields = meta.split_whitespace();
            let (mode, kind, oid) = (fields.next()?, fields.next()?, fields.next()?);
            if fields.next().is_some() {
                return None;
            }
            Some(TreeEntry {
                mode: mode.to_string(),
                kind: kind.to_string(),
                oid: oid.to_string(),
                path: path.to_string(),
            })
        })
        .collect()
}

/// The outcome of `git merge-tree --write-tree --name-only -z` from its
/// exit code and stdout: 0 is a clean merge (the tree first), 1 a conflict
/// (the conflicted files after the tree); anything else is `None`, a
/// failure the caller reports with git's message.
pub fn parse_merge_tree(code: i32, stdout: &str) -> Option<Merge> {
    let mut fields = stdout.split('\0');
    let tree = fields.next().unwrap_or("").trim().to_string();
    match code {
        0 => Some(Merge::Clean { tree }),
        1 => {
            let mut files: Vec<String> = fields
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            files.dedup();
            Some(Merge::Conflict { files })
        }
        _ => None,
    }
}

/// `(patch_id, commit)` pairs of `git patch-id --stable` output.
pub fn parse_patch_ids(text: &str) -> Vec<(String, Oid)> {
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(id, sha)| (id.to_string(), sha.trim().to_string()))
        .collect()
}

/// The commit `refname` points at in `git ls-remote` output.
pub fn parse_ls_remote(text: &str, refname: &str) -> Option<Oid> {
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .find(|(_, name)| *name == refname)
        .map(|(sha, _)| sha.to_string())
}

/// At most 80 characters of `text`, for error messages.
fn preview(text: &str) -> String {
    text.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn status_records_with_renames_and_short_garbage() {
        let text = "M  a.txt\0R  new\0old\0?? dir/x\0ab\0\u{e9}\u{e9}\0";
        let got = parse_status(text);
        assert_eq!(
            got.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(),
            ["a.txt", "new", "dir/x"]
        );
    }

    #[test]
    fn ls_tree_finds_gitlinks() {
        let text = "160000 commit abc\tthird_party/llvm\x00100644 blob def\tREADME\0junk\0";
        let got = parse_ls_tree(text);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].kind, "commit");
        assert_eq!(got[0].path, "third_party/llvm");
    }

    #[test]
    fn details_need_nine_fields() {
        let rec = "a\x1fp1 p2\x1ft\x1fn\x1fe\x1f1 +0000\x1f2 +0000\x1fsubj\x1fsubj\n\nbody\n";
        let got = parse_commit_details(rec, "x").unwrap();
        assert_eq!(got[0].parents, ["p1", "p2"]);
        let err = parse_commit_details("a\x1fb", "base..head").unwrap_err();
        assert!(err.message.contains("base..head"), "{}", err.message);
    }

    #[test]
    fn merge_tree_codes() {
        assert_eq!(
            parse_merge_tree(0, "t\n\0"),
            Some(Merge::Clean { tree: "t".into() })
        );
        assert_eq!(
            parse_merge_tree(1, "t\0a\0a\0b\0"),
            Some(Merge::Conflict {
                files: vec!["a".into(), "b".into()]
            })
        );
        assert_eq!(parse_merge_tree(128, ""), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// No git output, however mangled, panics a parser.
        #[test]
        fn parsers_never_panic(text in "(?s)[a-z0-9 \t\n\x1f\x00RC?M\u{e9}\u{1f600}]{0,300}", code in -2i32..3) {
            let _ = parse_log(&text);
            let _ = parse_commit_details(&text, "x");
            let _ = parse_status(&text);
            let _ = parse_ls_tree(&text);
            let _ = parse_merge_tree(code, &text);
            let _ = parse_patch_ids(&text);
            let _ = parse_ls_remote(&text, "refs/heads/main");
        }

        /// Arbitrary bytes decoded lossily, as git's output is.
        #[test]
        fn lossy_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = parse_log(&text);
            let _ = parse_commit_details(&text, "x");
            let _ = parse_status(&text);
            let _ = parse_ls_tree(&text);
            let _ = parse_merge_tree(1, &text);
            let _ = parse_patch_ids(&text);
            let _ = parse_ls_remote(&text, "refs/heads/main");
        }
    }
}
