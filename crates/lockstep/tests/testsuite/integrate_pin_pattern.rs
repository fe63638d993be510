//! `lockstep integrate` on a project that pins upstream *inside* a larger
//! file, as TensorFlow, XLA and TFRT pin LLVM in
//! `third_party/llvm/workspace.bzl`: `LLVM_COMMIT = "..."` found by a
//! pattern, beside `LLVM_SHA256 = "..."`, the sha256 of the upstream's
//! source archive for that commit, downloaded from a loopback server.
//! Every advance is one commit rewriting both values and no other byte; the
//! smoke reads the file as the build does (and checks the checksum); a
//! download that fails is an error naming the URL, never a pin without its
//! checksum.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::common::*;
use lockstep_sandbox::github::{read_request, write_response};

const WORKSPACE: &str = "third_party/llvm/workspace.bzl";

/// The file around the pin: every byte of it must survive an advance.
fn workspace_bzl(commit: &str, sha256: &str) -> String {
    format!(
        r#"load("//third_party:repo.bzl", "tf_http_archive")

def repo(name):
    """Imports LLVM (a comment that mentions LLVM_COMMIT stays as it is)."""
    LLVM_COMMIT = "{commit}"
    LLVM_SHA256 = "{sha256}"

    tf_http_archive(
        name = name,
        sha256 = LLVM_SHA256,
        strip_prefix = "llvm-project-" + LLVM_COMMIT,
        urls = ["https://github.com/llvm/llvm-project/archive/{{commit}}.tar.gz".format(commit = LLVM_COMMIT)],
    )
"#
    )
}

/// What the loopback server serves as `commit`'s archive.
fn archive_bytes(commit: &str) -> Vec<u8> {
    format!("the source archive of llvm-project at {commit}\n").into_bytes()
}

fn sha256_hex(bytes: &[u8]) -> String {
    lockstep_core::hash::sha256_bytes(bytes)
}

/// A loopback archive host: `GET /archive/COMMIT.tar.gz`; answers 404
/// while `fail` is set; counts what it served.
struct ArchiveHost {
    url: String,
    served: Arc<AtomicUsize>,
    fail: Arc<AtomicBool>,
}

impl ArchiveHost {
    fn start() -> ArchiveHost {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let served = Arc::new(AtomicUsize::new(0));
        let fail = Arc::new(AtomicBool::new(false));
        let (count, failing) = (served.clone(), fail.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Ok(request) = read_request(&stream) else {
                    continue;
                };
                let commit = request
                    .target
                    .strip_prefix("/archive/")
                    .and_then(|t| t.strip_suffix(".tar.gz"))
                    .unwrap_or_default()
                    .to_string();
                if failing.load(Ordering::SeqCst) || commit.len() != 40 {
                    let _ = write_response(&mut stream, 404, &[], b"no such archive");
                    continue;
                }
                count.fetch_add(1, Ordering::SeqCst);
                let _ = write_response(&mut stream, 200, &[], &archive_bytes(&commit));
            }
        });
        ArchiveHost { url, served, fail }
    }
}

struct Project {
    _tmp: tempfile::TempDir,
    sp: PathBuf,
    home: PathBuf,
    shas: Vec<String>,
    host: ArchiveHost,
}

impl Project {
    fn new(n: usize, breaks: usize) -> Project {
        let tmp = tempfile::tempdir().unwrap();
        let up = tmp.path().join("upstream");
        let shas = upstream_with_break(&up, n, breaks);
        let host = ArchiveHost::start();
        let sp = tmp.path().join("project");
        std::fs::create_dir_all(sp.join("third_party/llvm")).unwrap();
        git(&sp, &["init", "-q", "-b", "main"]);
        write(
            &sp.join(WORKSPACE),
            &workspace_bzl(&shas[0], &sha256_hex(&archive_bytes(&shas[0]))),
        );
        // The smoke reads the file as the build does: the commit and the
        // checksum it must have.
        let smoke = format!(
            r#"c=$(sed -n 's/^    LLVM_COMMIT = "\([0-9a-f]*\)"$/\1/p' {WORKSPACE}); s=$(sed -n 's/^    LLVM_SHA256 = "\([0-9a-f]*\)"$/\1/p' {WORKSPACE}); [ "$s" = "$(printf 'the source archive of llvm-project at %s\n' "$c" | sha256sum | cut -d' ' -f1)" ] || exit 125; git --git-dir='{}/.git' show "$c":state.txt | grep -q fine"#,
            up.display()
        );
        write(
            &sp.join("lockstep.toml"),
            &format!(
                "[integrate]\nupstream-url = \"{}\"\nupstream-branch = \"main\"\nbase = \"main\"\nsmoke = [\"sh\", \"-c\", {smoke:?}]\npin = {{ file = \"{WORKSPACE}\", pattern = 'LLVM_COMMIT = \"([0-9a-f]{{40}})\"', sha256 = {{ pattern = 'LLVM_SHA256 = \"([0-9a-f]{{64}})\"', archive = \"{}/archive/{{commit}}.tar.gz\" }} }}\n",
                up.display(),
                host.url
            ),
        );
        git(&sp, &["add", "."]);
        commit_as_tester(&sp, "pin LLVM in workspace.bzl", false);
        Project {
            home: tmp.path().to_path_buf(),
            _tmp: tmp,
            sp,
            shas,
            host,
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockstep"));
        cmd.args(args).current_dir(&self.sp);
        isolate(&mut cmd, &self.home.join("home"), &self.home.join("cache"));
        for (k, v) in [
            ("GIT_AUTHOR_NAME", "t"),
            ("GIT_AUTHOR_EMAIL", "t@e"),
            ("GIT_COMMITTER_NAME", "t"),
            ("GIT_COMMITTER_EMAIL", "t@e"),
        ] {
            cmd.env(k, v);
        }
        cmd
    }

    fn workspace(&self) -> String {
        std::fs::read_to_string(self.sp.join(WORKSPACE)).unwrap()
    }
}

#[test]
fn loop_rewrites_the_commit_and_its_checksum_and_no_other_byte() {
    let p = Project::new(6, 4);
    let status = stdout(&expect(
        &mut p.cmd(&["integrate", "status", "--fetch", "--json"]),
        0,
    ));
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["pin"], p.shas[0].as_str());
    assert_eq!(status["pending"].as_array().unwrap().len(), 6);

    let out = expect(&mut p.cmd(&["integrate", "loop", "--json"]), 3);
    assert!(
        stdout(&out).contains(&p.shas[4]),
        "culprit not named:\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    // The pin stops at the last good commit, with that commit's checksum,
    // and the file is otherwise what it was.
    let good = &p.shas[3];
    assert_eq!(
        p.workspace(),
        workspace_bzl(good, &sha256_hex(&archive_bytes(good)))
    );
    assert!(is_clean(&p.sp));
    // Each advance is one commit changing only the workspace file.
    let changed = git(&p.sp, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(changed.trim(), WORKSPACE);
    // A commit probed twice is downloaded once (the checksum is remembered).
    let served = p.host.served.load(Ordering::SeqCst);
    assert!(served >= 2, "{served}");
    expect(&mut p.cmd(&["integrate", "status", "--json"]), 0);
    assert_eq!(p.host.served.load(Ordering::SeqCst), served);
}

#[test]
fn a_failed_download_is_an_error_naming_the_url_and_the_pin_is_not_touched() {
    let p = Project::new(3, 99);
    p.host.fail.store(true, Ordering::SeqCst);
    let before = p.workspace();
    let head = git(&p.sp, &["rev-parse", "HEAD"]);
    let out = expect(&mut p.cmd(&["integrate", "loop"]), 1);
    let err = stderr(&out);
    assert!(err.contains("cannot compute the pin's checksum"), "{err}");
    assert!(
        err.contains(&p.host.url.replace("http://", "")),
        "the URL is named: {err}"
    );
    assert_eq!(p.workspace(), before, "no pin without its checksum");
    assert_eq!(git(&p.sp, &["rev-parse", "HEAD"]), head);
    assert!(is_clean(&p.sp));
}

#[test]
fn a_pattern_that_does_not_match_once_is_refused_before_anything_moves() {
    let p = Project::new(2, 99);
    let config = std::fs::read_to_string(p.sp.join("lockstep.toml")).unwrap();
    write(
        &p.sp.join("lockstep.toml"),
        &config.replace("LLVM_COMMIT = ", "LLVM_REV = "),
    );
    let out = expect(&mut p.cmd(&["integrate", "status"]), 2);
    assert!(
        stderr(&out).contains("does not match third_party/llvm/workspace.bzl"),
        "{}",
        stderr(&out)
    );
    // A pattern without a group, and both pin and pin-file: usage errors.
    write(
        &p.sp.join("lockstep.toml"),
        &config.replace("([0-9a-f]{40})", "[0-9a-f]{40}"),
    );
    let out = expect(&mut p.cmd(&["integrate", "status"]), 2);
    assert!(stderr(&out).contains("has no group"), "{}", stderr(&out));
    write(
        &p.sp.join("lockstep.toml"),
        &config.replace("[integrate]\n", "[integrate]\npin-file = \"x.version\"\n"),
    );
    let out = expect(&mut p.cmd(&["integrate", "status"]), 2);
    assert!(
        stderr(&out)
            .contains("[integrate] in lockstep.toml sets pin and pin-file: one pin at a time"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_checksum_pattern_whose_group_is_not_a_checksum_leaves_the_tree_clean() {
    // The group matches the name `LLVM_SHA256` (in `sha256 = LLVM_SHA256,`),
    // or part of the checksum: refused before the file is written, exit 2,
    // and the tree as it was.
    for sum_pattern in ["sha256 = (LLVM_SHA256)", r#"LLVM_SHA256 = "([0-9a-f]{8})"#] {
        let p = Project::new(4, 99);
        let config = std::fs::read_to_string(p.sp.join("lockstep.toml")).unwrap();
        let old = r#"pattern = 'LLVM_SHA256 = "([0-9a-f]{64})"'"#;
        assert!(config.contains(old), "{config}");
        write(
            &p.sp.join("lockstep.toml"),
            &config.replace(old, &format!("pattern = '{sum_pattern}'")),
        );
        commit_as_tester(&p.sp, "a bad checksum pattern", true);
        let before = p.workspace();
        let head = git(&p.sp, &["rev-parse", "HEAD"]);
        let out = expect(&mut p.cmd(&["integrate", "loop"]), 2);
        let err = stderr(&out);
        assert!(
            err.contains("not a checksum (64 hex digits)"),
            "{sum_pattern}: {err}"
        );
        assert_eq!(p.workspace(), before, "{sum_pattern}");
        assert_eq!(git(&p.sp, &["rev-parse", "HEAD"]), head);
        assert_eq!(
            git(&p.sp, &["status", "--porcelain"]),
            "",
            "{sum_pattern}: the tree is clean"
        );
    }
}

#[test]
fn the_halt_report_reproduces_the_halt_and_rewrites_only_the_matched_values() {
    let p = Project::new(6, 4);
    expect(&mut p.cmd(&["integrate", "loop"]), 3);
    let pinned = p.workspace();
    let report = stdout(&expect(&mut p.cmd(&["integrate", "report"]), 0));
    let block: Vec<&str> = report
        .split("## Reproduce")
        .nth(1)
        .and_then(|r| r.split("```").nth(1))
        .expect("a reproduce block")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert!(
        !report.contains("git submodule") && !report.contains("git -C"),
        "{report}"
    );
    assert!(
        !block.iter().any(|l| l.contains("> third_party")),
        "never a whole-file write: {report}"
    );
    // Run as written, in a copy of the superproject: the smoke's verdict is
    // the halt's (exit 1, not the 125 of a file it cannot read), and the
    // file differs from the pinned one only in the commit and its checksum.
    let copy = p.home.join("copy");
    git(
        &p.home,
        &[
            "clone",
            "-q",
            p.sp.to_str().unwrap(),
            copy.to_str().unwrap(),
        ],
    );
    let culprit = &p.shas[4];
    let set_and_smoke = block[1..3].join("\n");
    let ran = Command::new("sh")
        .args(["-c", &set_and_smoke])
        .current_dir(&copy)
        .output()
        .expect("sh");
    assert_eq!(
        ran.status.code(),
        Some(1),
        "{}\n{}",
        stdout(&ran),
        stderr(&ran)
    );
    let culprit_sum = sha256_hex(&archive_bytes(culprit));
    let good = &p.shas[3];
    assert_eq!(
        std::fs::read_to_string(copy.join(WORKSPACE)).unwrap(),
        pinned
            .replace(good.as_str(), culprit)
            .replace(&sha256_hex(&archive_bytes(good)), &culprit_sum),
    );
    assert_eq!(
        std::fs::read_to_string(copy.join(WORKSPACE)).unwrap(),
        workspace_bzl(culprit, &culprit_sum)
    );
    // The last line puts the file back as the superproject pins it.
    let back = Command::new("sh")
        .args(["-c", block[3]])
        .current_dir(&copy)
        .status()
        .expect("sh");
    assert!(back.success());
    assert_eq!(
        std::fs::read_to_string(copy.join(WORKSPACE)).unwrap(),
        pinned
    );
}
