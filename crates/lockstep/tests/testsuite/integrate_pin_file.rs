//! `lockstep integrate` on a project that pins upstream by file
//! (`[integrate] pin-file`) instead of a submodule: status, loop (gallop
//! search to the exact breaking commit), one commit per advance that
//! rewrites the pin file, bisect and report, with a real upstream
//! repository and the bare clone lockstep keeps under `.git/lockstep/`.

use std::path::PathBuf;
use std::process::Command;

use crate::common::*;

struct PinProject {
    _tmp: tempfile::TempDir,
    sp: PathBuf,
    home: PathBuf,
    shas: Vec<String>,
}

impl PinProject {
    fn new(n: usize, breaks: usize) -> PinProject {
        let tmp = tempfile::tempdir().unwrap();
        let up = tmp.path().join("upstream");
        let shas = upstream_with_break(&up, n, breaks);
        let sp = tmp.path().join("project");
        std::fs::create_dir_all(&sp).unwrap();
        git(&sp, &["init", "-q", "-b", "main"]);
        write(&sp.join("llvm-project.version"), &format!("{}\n", shas[0]));
        let smoke = format!(
            "git --git-dir='{}/.git' show \"$(cat llvm-project.version)\":state.txt | grep -q fine",
            up.display()
        );
        write(
            &sp.join("lockstep.toml"),
            &format!(
                "[integrate]\npin-file = \"llvm-project.version\"\nupstream-url = \"{}\"\nupstream-branch = \"main\"\nupstream-name = \"LLVM\"\nbase = \"main\"\nsmoke = [\"sh\", \"-c\", {smoke:?}]\n",
                up.display()
            ),
        );
        git(&sp, &["add", "."]);
        commit_as_tester(&sp, "pin LLVM", false);
        let home = tmp.path().to_path_buf();
        PinProject {
            _tmp: tmp,
            sp,
            home,
            shas,
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockstep"));
        cmd.args(args).current_dir(&self.sp);
        isolate(&mut cmd, &self.home.join("home"), &self.home.join("cache"));
        cmd.env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@e");
        cmd.env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@e");
        cmd
    }

    fn json(&self, args: &[&str], code: i32) -> serde_json::Value {
        let out = expect(&mut self.cmd(args), code);
        serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)))
    }

    fn pin(&self) -> String {
        std::fs::read_to_string(self.sp.join("llvm-project.version"))
            .unwrap()
            .trim()
            .to_string()
    }
}

#[test]
fn loop_advances_the_pin_file_commit_by_commit_and_halts_at_the_culprit() {
    let p = PinProject::new(12, 9);
    let status = p.json(&["integrate", "status", "--fetch", "--json"], 0);
    assert_eq!(status["pin"], p.shas[0].as_str());
    assert_eq!(status["upstream_head"], p.shas[12].as_str());
    assert_eq!(status["pending"].as_array().unwrap().len(), 12);
    assert_eq!(status["patches"].as_array().unwrap().len(), 0);
    assert!(p.sp.join(".git/lockstep/upstream.git").is_dir());

    // loop: advances to the last good commit, halts naming the culprit.
    let out = expect(&mut p.cmd(&["integrate", "loop", "--json"]), 3);
    let text = stdout(&out);
    assert!(
        text.contains(&p.shas[9]),
        "culprit not named:\n{text}\n{}",
        stderr(&out)
    );
    assert_eq!(p.pin(), p.shas[8], "the pin stops at the last good commit");
    assert!(is_clean(&p.sp), "the work tree is left clean");
    // The advance is one superproject commit changing only the pin file.
    let subjects = subjects(&p.sp);
    assert_eq!(subjects.len(), 2, "{subjects:?}");
    assert!(subjects[0].contains("LLVM"), "{subjects:?}");
    let changed = git(&p.sp, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(changed.trim(), "llvm-project.version");
    let halted = p.json(&["integrate", "status", "--json"], 0);
    assert_eq!(halted["halted"]["commit"], p.shas[9].as_str(), "{halted}");
    assert_eq!(halted["pending"].as_array().unwrap().len(), 4);

    // bisect over upstream commits with the pin file as the moving part.
    let out = expect(
        &mut p.cmd(&[
            "integrate", "bisect", "--good", &p.shas[0], "--bad", &p.shas[12], "--json", "--",
            "sh", "-c", &format!("git --git-dir='{}/.git' show \"$(cat llvm-project.version)\":state.txt | grep -q fine", p.home.join("upstream").display()),
        ]),
        0,
    );
    assert!(stdout(&out).contains(&p.shas[9]), "{}", stdout(&out));
    assert_eq!(p.pin(), p.shas[8], "bisect puts the pin file back");
    assert!(is_clean(&p.sp));

    // report works; its reproduce steps write the pin file (no submodule
    // commands), give the smoke the variables the loop gave it, and fail
    // as the loop's smoke did.
    expect(&mut p.cmd(&["integrate", "report", "--json"]), 0);
    let report = stdout(&expect(&mut p.cmd(&["integrate", "report"]), 0));
    let repro: Vec<&str> = report
        .split("## Reproduce")
        .nth(1)
        .and_then(|r| r.split("```").nth(1))
        .expect("reproduce block")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let culprit = &p.shas[9];
    assert_eq!(
        repro.get(1).copied(),
        Some(format!("printf '%s\\n' {culprit} > llvm-project.version   # the culprit").as_str()),
        "{report}"
    );
    assert!(
        repro[2].starts_with(&format!("LOCKSTEP_PROBE_COMMIT={culprit} "))
            && repro[2].contains("LOCKSTEP_PIN_FILE=llvm-project.version"),
        "{report}"
    );
    assert!(
        !report.contains("git submodule") && !report.contains("git -C"),
        "{report}"
    );
    let run = |lines: &[&str]| {
        std::process::Command::new("sh")
            .args(["-c", &lines.join("\n")])
            .status()
            .expect("sh")
    };
    assert!(
        !run(&repro[..3]).success(),
        "the reproduce steps fail as the smoke did"
    );
    assert!(run(&[repro[0], repro[3]]).success());
    assert_eq!(p.pin(), p.shas[8], "the last step puts the pin file back");
    let err = stderr(&expect(&mut p.cmd(&["integrate", "export"]), 2));
    assert!(
        err.contains("the pin file llvm-project.version carries no patches"),
        "{err}"
    );
}

#[test]
fn a_pin_file_edited_by_hand_is_never_overwritten() {
    let p = PinProject::new(4, 99);
    write(&p.sp.join("llvm-project.version"), "my own edit\n");
    let err = stderr(&expect(&mut p.cmd(&["integrate", "loop"]), 2));
    assert!(err.contains("uncommitted changes"), "{err}");
    assert_eq!(
        std::fs::read_to_string(p.sp.join("llvm-project.version")).unwrap(),
        "my own edit\n"
    );

    // A pin file that is not a revision at HEAD, and no upstream-url: usage errors.
    git(&p.sp, &["checkout", "--", "llvm-project.version"]);
    let config = std::fs::read_to_string(p.sp.join("lockstep.toml")).unwrap();
    let no_url: String = config
        .lines()
        .filter(|l| !l.starts_with("upstream-url"))
        .map(|l| format!("{l}\n"))
        .collect();
    write(&p.sp.join("lockstep.toml"), &no_url);
    let err = stderr(&expect(&mut p.cmd(&["integrate", "status"]), 2));
    assert!(err.contains("needs [integrate] upstream-url"), "{err}");
}

#[test]
fn a_pin_file_lockstep_will_not_read_is_named_not_blamed_on_uncommitted_changes() {
    let p = PinProject::new(3, 99);
    let file = p.sp.join("llvm-project.version");
    let committed = std::fs::read_to_string(&file).unwrap();
    let refused = |what: &str, said: &str| {
        for args in [&["integrate", "loop"][..], &["integrate", "start"]] {
            let err = stderr(&expect(&mut p.cmd(args), 2));
            assert!(err.contains(said), "{what}, {args:?}: {err}");
            assert!(!err.contains("uncommitted changes"), "{what}: {err}");
        }
    };

    // 5 MiB in the work tree: too large, by the stated bound.
    write(&file, &"0".repeat(5 << 20));
    refused("5 MiB", "is larger than 4194304 bytes");

    // A FIFO, and a link to one inside the tree: refused at once, never
    // waited on (nothing writes to it).
    std::fs::remove_file(&file).unwrap();
    nix::unistd::mkfifo(&file, nix::sys::stat::Mode::S_IRWXU).unwrap();
    refused("a FIFO", "is a FIFO, not a regular file");
    std::fs::remove_file(&file).unwrap();
    let fifo = p.sp.join("pin.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::os::unix::fs::symlink("pin.fifo", &file).unwrap();
    refused("a link to a FIFO", "is a FIFO (through a link)");
    std::fs::remove_file(&fifo).unwrap();

    // A link to /dev/zero: out of the repository.
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &file).unwrap();
    refused("/dev/zero", "symbolic link out of the repository");

    // Committed at 5 MiB: named at the revision, not parsed.
    std::fs::remove_file(&file).unwrap();
    write(&file, &format!("{committed}{}", "0".repeat(5 << 20)));
    commit_as_tester(&p.sp, "a huge pin file", true);
    let err = stderr(&expect(&mut p.cmd(&["integrate", "status"]), 2));
    assert!(
        err.contains("at HEAD is") && err.contains("larger than 4194304"),
        "{err}"
    );
}

#[test]
fn bidi_controls_in_commit_subjects_never_reach_the_terminal_raw() {
    let p = PinProject::new(2, 99);
    // An upstream commit whose subject reorders what a terminal shows after
    // it (U+202E), with isolates and marks besides; it breaks the smoke.
    let up = p.home.join("upstream");
    let subject = "Fix parser \u{202E}txt.exe\u{2066}x\u{2069}\u{200F}\u{061C}";
    write(&up.join("state.txt"), "broken 3\n");
    git(&up, &["add", "."]);
    git(
        &up,
        &[
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@e",
            "commit",
            "-qm",
            subject,
        ],
    );
    let raw = ['\u{202E}', '\u{2066}', '\u{2069}', '\u{200F}', '\u{061C}'];
    let shown = "Fix parser \\u{202e}txt.exe\\u{2066}x\\u{2069}\\u{200f}\\u{61c}";
    let clean = |what: &str, text: &str| {
        assert!(
            !text.contains(raw),
            "{what} holds a raw bidi control: {text:?}"
        );
        assert!(
            text.contains(shown),
            "{what} does not show the subject escaped: {text}"
        );
    };
    let out = expect(&mut p.cmd(&["integrate", "status", "--fetch"]), 0);
    clean("status", &stdout(&out));
    // The halt at it, and its report.
    let out = expect(&mut p.cmd(&["integrate", "loop"]), 3);
    clean("the halt", &format!("{}{}", stdout(&out), stderr(&out)));
    let out = expect(&mut p.cmd(&["integrate", "report"]), 0);
    clean("the report", &stdout(&out));
    // Machine output keeps the subject as it is (JSON is data).
    let status = p.json(&["integrate", "status", "--json"], 0);
    assert!(
        status.to_string().contains('\u{202E}') || status.to_string().contains("\\u202e"),
        "{status}"
    );
}

#[test]
fn release_bump_smoke_goes_through_the_integrate_engine_and_its_verdict_cache() {
    let p = PinProject::new(6, 6);
    let counter = p.home.join("smoke-runs");
    let config = std::fs::read_to_string(p.sp.join("lockstep.toml")).unwrap();
    // Count smoke runs: a cached verdict runs nothing.
    let counted = config.replace(
        "smoke = [\"sh\", \"-c\", \"",
        &format!(
            "smoke = [\"sh\", \"-c\", \"echo run >> '{}'; ",
            counter.display()
        ),
    );
    assert_ne!(counted, config);
    write(
        &p.sp.join("lockstep.toml"),
        &format!("{counted}\n[release]\nversion-base = \"1.0.0\"\npin-files = [\"llvm-project.version\"]\n"),
    );
    git(
        &p.sp,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-qam",
            "count smokes",
        ],
    );
    let runs = || {
        std::fs::read_to_string(&counter)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };

    // Upstream's head is broken: exit 1, nothing committed.
    let before = git(&p.sp, &["rev-parse", "HEAD"]);
    expect(&mut p.cmd(&["release", "bump", "--smoke"]), 1);
    assert_eq!(git(&p.sp, &["rev-parse", "HEAD"]), before);
    assert_eq!(p.pin(), p.shas[0]);
    assert!(is_clean(&p.sp));
    let after_first = runs();
    assert!(after_first >= 1);
    // Again: the verdict comes from the cache, no smoke runs.
    expect(&mut p.cmd(&["release", "bump", "--smoke"]), 1);
    assert_eq!(runs(), after_first, "the cached verdict was not used");

    // A good revision: one commit moving the pin file.
    expect(
        &mut p.cmd(&["release", "bump", "--smoke", "--to", &p.shas[5]]),
        0,
    );
    assert_eq!(p.pin(), p.shas[5]);
    assert_eq!(
        git(&p.sp, &["show", "--name-only", "--format=", "HEAD"]).trim(),
        "llvm-project.version"
    );
}
