//! `lockstep integrate publish` and `loop --publish` against real git
//! remotes and a loopback GitHub (lockstep-sandbox's `github`): the branch
//! is pushed (never forced), one draft pull request is opened and then
//! updated, a halt calls for help once, and every bad answer is named
//! without the token, leaving the integrate resumable.

use crate::common::*;
use lockstep_sandbox::{api_level_at, SandboxSpec};
use lockstep_testkit::github::{CheckRuns, FakeGithub};

const TOKEN: &str = "ghp_integrate_token_never_printed";
const REPO: &str = "acme/super";

/// `extra` appended to the superproject's lockstep.toml, committed and
/// pushed to origin/main (where `integrate start` branches from).
fn configure(env: &Env, extra: &str) {
    let path = env.sp().join("lockstep.toml");
    let text = std::fs::read_to_string(&path).expect("lockstep.toml");
    std::fs::write(&path, format!("{text}{extra}")).expect("write");
    commit_as_tester(env.sp(), "Configure publishing", true);
    git(env.sp(), &["push", "-q", "origin", "HEAD:main"]);
    git(env.sp(), &["fetch", "-q", "origin"]);
}

fn github_config(repository: &str) -> String {
    format!("\n[integrate.github]\nrepository = \"{repository}\"\n\n[integrate.notify]\nkind = \"json\"\n")
}

/// A sandbox with one API break, configured for `gh`, integrate started.
fn publishing(commits: usize) -> (Env, FakeGithub) {
    let env = Env::new(&with_break(commits));
    configure(&env, &github_config(REPO));
    env.start();
    let gh = FakeGithub::start(REPO, TOKEN).expect("loopback GitHub");
    (env, gh)
}

/// Runs lockstep with the API, token and webhook pointed at `gh`.
fn run(env: &Env, gh: &FakeGithub, args: &[&str], code: i32) -> (String, String) {
    let out = env
        .cmd(args)
        .env("GITHUB_API_URL", gh.url())
        .env("GITHUB_TOKEN", TOKEN)
        .env("LOCKSTEP_WEBHOOK_URL", gh.webhook_url())
        .output()
        .expect("run lockstep");
    let (stdout, stderr) = expect_code(&out, code, &format!("lockstep {args:?}"));
    assert!(
        !stdout.contains(TOKEN) && !stderr.contains(TOKEN),
        "the token leaked:\n{stdout}\n{stderr}"
    );
    (stdout, stderr)
}

/// The tip of `branch` on the superproject's origin.
fn origin_tip(env: &Env, branch: &str) -> Option<String> {
    let out = git(
        &env.sb.super_origin,
        &[
            "for-each-ref",
            "--format=%(objectname)",
            &format!("refs/heads/{branch}"),
        ],
    );
    let tip = out.trim();
    (!tip.is_empty()).then(|| tip.to_string())
}

/// The break fixed, the checks green: `integrate loop --publish --ready`
/// to upstream's head, its JSON.
fn fixed_and_green(env: &Env, gh: &FakeGithub, culprit: &str) -> serde_json::Value {
    fix_break(env, culprit);
    gh.set_ci(std::sync::Arc::new(|_: &str| "success".to_string()), 0);
    let (out, _) = run(
        env,
        gh,
        &["integrate", "loop", "--publish", "--ready", "--json"],
        0,
    );
    serde_json::from_str(&out).expect("loop JSON")
}

fn fix_break(env: &Env, culprit: &str) {
    env.ok(&["integrate", "next", "--to", culprit], 0);
    let level = api_level_at(&env.sb, culprit).expect("level");
    std::fs::write(env.sp().join("API_LEVEL"), format!("{level}\n")).expect("API_LEVEL");
    git(
        env.sp(),
        &["commit", "-qam", &format!("Fix for API level {level}")],
    );
}

#[test]
fn loop_publish_opens_a_draft_calls_for_help_once_and_updates_it_at_head() {
    let (env, gh) = publishing(40);
    let branch = current_branch(&env);

    // The loop halts at the break: the branch is pushed, a draft pull
    // request asks for help, and the webhook hears of it once.
    let (out, _) = run(&env, &gh, &["integrate", "loop", "--publish", "--json"], 3);
    let looped: serde_json::Value = serde_json::from_str(&out).expect("loop JSON");
    assert_eq!(looped["end"]["result"], "halted", "{looped}");
    assert_eq!(looped["published"]["created"], true, "{looped}");
    assert_eq!(looped["published"]["needs_help"], true, "{looped}");
    assert_eq!(looped["called_for_help"], true, "{looped}");
    let culprit = looped["end"]["halt"]["culprit"]["sha"]
        .as_str()
        .expect("culprit")
        .to_string();
    let head = git(env.sp(), &["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(origin_tip(&env, &branch).as_deref(), Some(head.as_str()));
    let pulls = gh.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    let pull = &pulls[0];
    assert!(
        pull.draft && pull.head == branch && pull.base == "main",
        "{pull:?}"
    );
    assert!(
        pull.title.starts_with("[needs help] Integrate LLVM at "),
        "{}",
        pull.title
    );
    for needle in [
        "**Needs help:**",
        &culprit[..12],
        "## Carried patches (",
        "## Halt",
        "Smoke runs in this integrate: ",
        "## Carried reverts (1)",
    ] {
        assert!(
            pull.body.contains(needle),
            "no {needle:?} in:\n{}",
            pull.body
        );
    }
    assert_eq!(gh.webhook_posts().len(), 1);
    assert!(gh.webhook_posts()[0].contains(&culprit[..12]));
    let post: serde_json::Value = serde_json::from_str(&gh.webhook_posts()[0]).expect("JSON");
    assert_schema("webhook-json.json", &post);

    // A rerun halts at the same place: the pull request is updated, the
    // webhook is not posted to again.
    let (out, _) = run(&env, &gh, &["integrate", "loop", "--publish", "--json"], 3);
    let again: serde_json::Value = serde_json::from_str(&out).expect("loop JSON");
    assert_eq!(again["published"]["created"], false, "{again}");
    assert!(again.get("called_for_help").is_none(), "{again}");
    assert_eq!(gh.pulls().len(), 1);
    assert_eq!(gh.webhook_posts().len(), 1);
    assert!(gh
        .requests()
        .iter()
        .any(|r| r.method == "PATCH" && r.target == format!("/repos/{REPO}/pulls/1")));

    // Fixed, the loop reaches head; the pull request no longer asks for help.
    fix_break(&env, &culprit);
    let (out, _) = run(&env, &gh, &["integrate", "loop", "--publish", "--json"], 0);
    let done: serde_json::Value = serde_json::from_str(&out).expect("loop JSON");
    assert_eq!(done["end"]["result"], "at_head", "{done}");
    let pull = &gh.pulls()[0];
    assert!(
        pull.title.starts_with("Integrate LLVM at "),
        "{}",
        pull.title
    );
    assert!(!pull.body.contains("Needs help"), "{}", pull.body);
    let taken = format!("## Affecting commits taken ({})", env.sb.affecting.len());
    assert!(
        pull.body.contains(&taken),
        "no {taken:?} in:\n{}",
        pull.body
    );
    let head = git(env.sp(), &["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(origin_tip(&env, &branch).as_deref(), Some(head.as_str()));
    assert!(gh
        .requests()
        .iter()
        .all(|r| r.authorised || r.target.starts_with("/hooks/")));

    // `integrate publish` alone says where things are; its events and logs
    // never hold the token.
    let events = env.dir.path().join("events.jsonl");
    let (out, _) = run(
        &env,
        &gh,
        &[
            "--events",
            &events.to_string_lossy(),
            "integrate",
            "publish",
        ],
        0,
    );
    let written = std::fs::read_to_string(&events).expect("events");
    assert!(!written.is_empty() && !written.contains(TOKEN), "{written}");
    let state = env.sp().join(".git/lockstep");
    for file in walk(&env.dir.path().join("home"))
        .into_iter()
        .chain(walk(&state))
    {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap_or_default()).into_owned();
        assert!(!text.contains(TOKEN), "the token is in {}", file.display());
    }
    assert!(
        out.contains(&format!("origin {branch} is at"))
            && out.contains("updated draft pull request #1 of acme/super"),
        "{out}"
    );
}

#[test]
fn bad_tokens_repositories_and_answers_are_named_before_anything_is_pushed() {
    let (env, gh) = publishing(12);
    let branch = current_branch(&env);

    // No token: a usage error, nothing pushed.
    let out = env
        .cmd(&["integrate", "publish"])
        .env("GITHUB_API_URL", gh.url())
        .output()
        .expect("run");
    let (_, err) = expect_code(&out, 2, "publish without a token");
    assert!(
        err.contains("no GitHub token: $GITHUB_TOKEN is unset"),
        "{err}"
    );
    assert_eq!(origin_tip(&env, &branch), None);

    // A token the server refuses: named by its variable, never shown.
    let out = env
        .cmd(&["integrate", "publish"])
        .env("GITHUB_API_URL", gh.url())
        .env("GITHUB_TOKEN", "ghp_wrong_token_value")
        .output()
        .expect("run");
    let (_, err) = expect_code(&out, 1, "publish with a refused token");
    assert!(err.contains("GITHUB_TOKEN") && err.contains("401"), "{err}");
    assert!(!err.contains("ghp_wrong_token_value"), "{err}");
    assert_eq!(origin_tip(&env, &branch), None);

    // Garbage where JSON belongs, then a rate limit that clears: the
    // first is an error, the second is retried after Retry-After.
    gh.script(200, &[], "<html>not json</html>");
    let (_, err) = run(&env, &gh, &["integrate", "publish"], 1);
    assert!(err.contains("not what lockstep expects"), "{err}");
    assert_eq!(origin_tip(&env, &branch), None);
    gh.script(
        429,
        &[("Retry-After", "1")],
        "{\"message\": \"API rate limit exceeded\"}",
    );
    run(&env, &gh, &["integrate", "publish"], 0);
    assert_eq!(gh.pulls().len(), 1);
    assert!(origin_tip(&env, &branch).is_some());

    // Someone else pushed to the branch: the push is refused, their commit
    // is fetched and counted, nothing is forced.
    let other = env.dir.path().join("other");
    git(
        env.dir.path(),
        &[
            "clone",
            "-q",
            "-b",
            &branch,
            &env.sb.super_origin.to_string_lossy(),
            &other.to_string_lossy(),
        ],
    );
    std::fs::write(other.join("FIXUP"), "theirs\n").expect("write");
    commit_as_tester(&other, "Their fixup", true);
    git(&other, &["push", "-q", "origin", &branch]);
    let theirs = git(&other, &["rev-parse", "HEAD"]).trim().to_string();
    std::fs::write(env.sp().join("MINE"), "mine\n").expect("write");
    commit_as_tester(env.sp(), "My change", true);
    let (_, err) = run(&env, &gh, &["integrate", "publish"], 1);
    assert!(
        err.contains("refused the push") && err.contains("has 1 commit this branch lacks"),
        "{err}"
    );
    assert_eq!(origin_tip(&env, &branch).as_deref(), Some(theirs.as_str()));

    // Closed by a reviewer: reported, not reopened, nothing pushed.
    git(
        env.sp(),
        &["merge", "-q", "--no-edit", &format!("origin/{branch}")],
    );
    gh.close_pull(1);
    let (_, err) = run(&env, &gh, &["integrate", "publish"], 1);
    assert!(
        err.contains("pull request #1") && err.contains("was closed"),
        "{err}"
    );
    assert_eq!(origin_tip(&env, &branch).as_deref(), Some(theirs.as_str()));
    assert_eq!(gh.pulls().len(), 1);
}

#[test]
fn what_can_be_checked_is_checked_before_the_first_smoke() {
    let (env, gh) = publishing(12);
    let branch = current_branch(&env);
    let head = git(env.sp(), &["rev-parse", "HEAD"]);
    let log = env.dir.path().join("smokes.log");

    // A malformed webhook URL: exit 2 before the smoke, the push, the PR.
    for bad in [
        "not a url",
        "ftp://hooks.example/x",
        "http://user:pw@127.0.0.1:9/x",
    ] {
        let out = env
            .cmd(&["integrate", "loop", "--publish"])
            .env("GITHUB_API_URL", gh.url())
            .env("GITHUB_TOKEN", TOKEN)
            .env("LOCKSTEP_WEBHOOK_URL", bad)
            .env("LOCKSTEP_SANDBOX_SMOKE_LOG", &log)
            .output()
            .expect("run");
        let (_, err) = expect_code(&out, 2, &format!("loop with webhook {bad:?}"));
        assert!(err.contains("$LOCKSTEP_WEBHOOK_URL"), "{err}");
        assert!(!err.contains("pw@"), "{err}");
    }
    assert_eq!(smoke_count(&log), 0, "no smoke ran");
    assert_eq!(origin_tip(&env, &branch), None, "nothing pushed");
    assert!(gh.pulls().is_empty());
    assert_eq!(git(env.sp(), &["rev-parse", "HEAD"]), head);

    // A detached HEAD: loop and next refuse before the smoke and commit
    // nothing there.
    git(env.sp(), &["checkout", "-q", "--detach"]);
    for args in [&["integrate", "loop"][..], &["integrate", "next"][..]] {
        let out = env
            .cmd(args)
            .env("LOCKSTEP_SANDBOX_SMOKE_LOG", &log)
            .output()
            .expect("run");
        let (_, err) = expect_code(&out, 2, &format!("{args:?} on a detached HEAD"));
        assert!(err.contains("detached"), "{err}");
    }
    assert_eq!(smoke_count(&log), 0, "no smoke ran");
    assert_eq!(git(env.sp(), &["rev-parse", "HEAD"]), head);
}

#[test]
fn an_unknown_repository_or_the_base_branch_is_refused() {
    let env = Env::new(&SandboxSpec {
        breaks: vec![],
        ..spec(6)
    });
    configure(&env, &github_config("acme/nope"));
    env.start();
    let gh = FakeGithub::start(REPO, TOKEN).expect("loopback GitHub");
    let branch = current_branch(&env);
    let (_, err) = run(&env, &gh, &["integrate", "publish"], 1);
    assert!(err.contains("acme/nope") && err.contains("404"), "{err}");
    assert_eq!(origin_tip(&env, &branch), None);

    git(env.sp(), &["checkout", "-q", "main"]);
    let (_, err) = run(&env, &gh, &["integrate", "publish"], 2);
    assert!(err.contains("the base branch itself"), "{err}");

    // Bad [integrate.github] values are named before anything runs.
    let path = env.sp().join("lockstep.toml");
    let toml = std::fs::read_to_string(&path).expect("config");
    for (from, to, why) in [
        (
            "repository = \"acme/nope\"",
            "repository = \"not a repository\"",
            "github.repository = \"not a repository\" in lockstep.toml is not valid: it is not OWNER/NAME",
        ),
        (
            "repository = \"acme/nope\"",
            "repository = \"acme/nope\"\ntoken-env = \"BAD=NAME\"",
            "is not an environment variable name",
        ),
    ] {
        std::fs::write(&path, toml.replace(from, to)).expect("write");
        let (_, err) = run(&env, &gh, &["integrate", "status"], 2);
        assert!(err.contains(why), "{err}");
    }
    std::fs::write(&path, toml).expect("write");
}

/// A clone of the superproject's origin on `branch` (another person's
/// machine; no submodule checkout needed to commit a pin).
fn other_clone(env: &Env, branch: &str) -> std::path::PathBuf {
    let other = env.dir.path().join("other");
    git(
        env.dir.path(),
        &[
            "clone",
            "-q",
            "-b",
            branch,
            &env.sb.super_origin.to_string_lossy(),
            &other.to_string_lossy(),
        ],
    );
    other
}

#[test]
fn resume_takes_the_fixup_others_pushed_and_loops_on_to_head() {
    let (env, gh) = publishing(40);
    let branch = current_branch(&env);
    let (out, _) = run(&env, &gh, &["integrate", "loop", "--publish", "--json"], 3);
    let halted: serde_json::Value = serde_json::from_str(&out).expect("loop JSON");
    let halt = &halted["end"]["halt"];
    let culprit = halt["culprit"]["sha"]
        .as_str()
        .expect("culprit")
        .to_string();
    let patched = halt["probe_head"].as_str().expect("probe head").to_string();

    // Someone answers the call for help: they move the pin onto the
    // culprit (with the carried patches) and declare its API level.
    let other = other_clone(&env, &branch);
    let level = api_level_at(&env.sb, &culprit).expect("level");
    std::fs::write(other.join("API_LEVEL"), format!("{level}\n")).expect("write");
    git(
        &other,
        &[
            "update-index",
            "--cacheinfo",
            &format!("160000,{patched},{}", env.sb.submodule_path),
        ],
    );
    commit_as_tester(&other, "Fix for the API break", true);
    git(&other, &["push", "-q", "origin", &branch]);
    let fixup = git(&other, &["rev-parse", "HEAD"]).trim().to_string();

    // resume fast-forwards to their commit, follows the pin, and the loop
    // goes on to upstream head; the pull request stops asking for help.
    let (out, _) = run(
        &env,
        &gh,
        &["integrate", "resume", "--publish", "--json"],
        0,
    );
    let resumed: serde_json::Value = serde_json::from_str(&out).expect("resume JSON");
    assert_eq!(resumed["resumed"]["pulled"], 1, "{resumed}");
    assert_eq!(resumed["end"]["result"], "at_head", "{resumed}");
    assert!(is_ancestor(env.sp(), &fixup, "HEAD"));
    assert!(is_clean(env.sp()));
    assert_eq!(
        git(&env.sub(), &["rev-parse", "HEAD"]).trim(),
        git(
            env.sp(),
            &["rev-parse", &format!("HEAD:{}", env.sb.submodule_path)]
        )
        .trim(),
        "the submodule follows the pin"
    );
    let pull = &gh.pulls()[0];
    assert!(!pull.title.starts_with("[needs help]"), "{}", pull.title);
    assert_eq!(gh.webhook_posts().len(), 1, "one halt, one post");
}

#[test]
fn resume_stops_with_nothing_changed_on_divergence_or_a_conflicting_merge() {
    let (env, gh) = publishing(12);
    let branch = current_branch(&env);
    // Not pushed yet: nothing to bring in.
    let (out, err) = run(&env, &gh, &["integrate", "resume", "--no-loop"], 0);
    assert!(
        out.contains("is up to date with its remote") && err.contains("has no branch"),
        "{out}{err}"
    );
    run(&env, &gh, &["integrate", "publish"], 0);

    // Diverged: a commit here and one there.
    let other = other_clone(&env, &branch);
    std::fs::write(other.join("THEIRS"), "theirs\n").expect("write");
    commit_as_tester(&other, "Their commit", true);
    git(&other, &["push", "-q", "origin", &branch]);
    std::fs::write(env.sp().join("MINE"), "mine\n").expect("write");
    commit_as_tester(env.sp(), "My commit", true);
    let before = git(env.sp(), &["rev-parse", "HEAD"]).trim().to_string();
    let (_, err) = run(&env, &gh, &["integrate", "resume", "--no-loop"], 1);
    assert!(
        err.contains("have diverged: 1 commit here, 1 there"),
        "{err}"
    );
    assert_eq!(git(env.sp(), &["rev-parse", "HEAD"]).trim(), before);
    git(env.sp(), &["reset", "-q", "--hard", "HEAD^"]);
    let (out, _) = run(&env, &gh, &["integrate", "resume", "--no-loop"], 0);
    assert!(
        out.contains("fast-forwarded") && out.contains("by 1 commit "),
        "{out}"
    );

    // The base branch changed API_LEVEL one way, the integrate another:
    // --merge-main aborts the merge and names the file.
    std::fs::write(env.sp().join("API_LEVEL"), "41\n").expect("write");
    commit_as_tester(env.sp(), "Integrate's API level", true);
    let main = env.dir.path().join("main");
    git(
        env.dir.path(),
        &[
            "clone",
            "-q",
            &env.sb.super_origin.to_string_lossy(),
            &main.to_string_lossy(),
        ],
    );
    std::fs::write(main.join("API_LEVEL"), "42\n").expect("write");
    commit_as_tester(&main, "Main's API level", true);
    git(&main, &["push", "-q", "origin", "main"]);
    let before = git(env.sp(), &["rev-parse", "HEAD"]).trim().to_string();
    let (_, err) = run(
        &env,
        &gh,
        &["integrate", "resume", "--merge-main", "--no-loop"],
        1,
    );
    assert!(
        err.contains("conflicts") && err.contains("conflict: API_LEVEL"),
        "{err}"
    );
    assert_eq!(git(env.sp(), &["rev-parse", "HEAD"]).trim(), before);
    assert!(is_clean(env.sp()), "the merge was aborted");
    assert!(!env.sp().join(".git/MERGE_HEAD").exists());

    // Without the conflict the base branch is merged.
    git(env.sp(), &["reset", "-q", "--hard", "HEAD^"]);
    let (out, _) = run(
        &env,
        &gh,
        &["integrate", "resume", "--merge-main", "--no-loop", "--json"],
        0,
    );
    let resumed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(resumed["merged"].is_string(), "{resumed}");
    assert_eq!(
        std::fs::read_to_string(env.sp().join("API_LEVEL"))
            .expect("read")
            .trim(),
        "42"
    );
}

/// The loopback CI's verdict on a superproject commit pushed to origin:
/// what the sandbox's smoke says (the pinned API_VERSION, read from the
/// fork the patched head was pushed to, equals API_LEVEL).
fn ci_oracle(env: &Env) -> lockstep_testkit::github::Oracle {
    let origin = env.sb.super_origin.clone();
    let fork = env.sb.fork.clone();
    let path = env.sb.submodule_path.clone();
    std::sync::Arc::new(move |sha: &str| {
        let show = |dir: &std::path::Path, spec: String| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(["show", &spec])
                .output()
                .expect("git");
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        let pin = std::process::Command::new("git")
            .arg("-C")
            .arg(&origin)
            .args(["rev-parse", &format!("{sha}:{path}")])
            .output()
            .expect("git");
        let pin = String::from_utf8_lossy(&pin.stdout).trim().to_string();
        let have = show(&fork, format!("{pin}:mlir/include/API_VERSION"));
        let want = show(&origin, format!("{sha}:API_LEVEL"));
        if !have.is_empty() && have == want {
            "success".into()
        } else {
            "failure".into()
        }
    })
}

#[test]
fn bisect_ci_pushes_each_step_reads_its_checks_and_cleans_up() {
    let (env, gh) = publishing(40);
    gh.set_ci(ci_oracle(&env), 2);
    let brk = env.sb.breaks[0].clone();
    let head = env.sb.head.clone();
    let (out, _) = run(
        &env,
        &gh,
        &[
            "integrate",
            "bisect",
            "--ci",
            "--ci-poll",
            "0.05",
            "--good",
            &env.sb.base,
            "--bad",
            &head,
            "--json",
        ],
        0,
    );
    let found: serde_json::Value = serde_json::from_str(&out).expect("bisect JSON");
    assert_eq!(found["first_bad"]["sha"], brk.as_str(), "{found}");
    assert_eq!(found["mode"], "submodule (ci)", "{found}");
    let candidates = found["candidates"].as_u64().expect("candidates") as usize;
    let rounds = gh.ci_commits().len();
    assert!(
        rounds >= 1 && rounds <= ceil_log2(candidates) + 2,
        "{rounds} CI rounds for {candidates} candidates"
    );
    assert_eq!(found["runs"].as_u64(), Some(rounds as u64), "{found}");
    // Every temporary branch is gone from both remotes.
    for repo in [&env.sb.super_origin, &env.sb.fork] {
        let left = git(repo, &["for-each-ref", "refs/heads/lockstep-bisect/"]);
        assert!(left.trim().is_empty(), "left behind: {left}");
    }
    assert!(is_clean(env.sp()));

    // A rerun asks CI nothing it answered.
    let (out, _) = run(
        &env,
        &gh,
        &[
            "integrate",
            "bisect",
            "--ci",
            "--ci-poll",
            "0.05",
            "--good",
            &env.sb.base,
            "--bad",
            &head,
            "--json",
        ],
        0,
    );
    let again: serde_json::Value = serde_json::from_str(&out).expect("bisect JSON");
    assert_eq!(again["runs"], 0, "{again}");
    assert_eq!(gh.ci_commits().len(), rounds);

    // A CI that never finishes is a bounded wait, and the branches still go.
    gh.set_ci(ci_oracle(&env), usize::MAX);
    let (_, err) = run(
        &env,
        &gh,
        &[
            "integrate",
            "bisect",
            "--ci",
            "--ci-poll",
            "0.05",
            "--ci-timeout",
            "1",
            "--good",
            &env.sb.affecting[1],
            "--bad",
            &head,
        ],
        1,
    );
    assert!(err.contains("CI gave no verdict on"), "{err}");
    for repo in [&env.sb.super_origin, &env.sb.fork] {
        let left = git(repo, &["for-each-ref", "refs/heads/lockstep-bisect/"]);
        assert!(left.trim().is_empty(), "left behind: {left}");
    }
    let err = stderr(&env.run(&[
        "integrate",
        "bisect",
        "--good",
        "a",
        "--bad",
        "b",
        "--ci",
        "--",
        "x",
    ]));
    assert!(err.contains("cannot be used with"), "{err}");
    for poll in ["--ci-poll=-1", "--ci-poll=nan", "--ci-poll=1e9"] {
        let err = stderr(&env.run(&[
            "integrate",
            "bisect",
            "--ci",
            poll,
            "--good",
            "a",
            "--bad",
            "b",
        ]));
        assert!(
            err.contains("--ci-poll must be 0 to 3600 seconds"),
            "{poll}: {err}"
        );
    }
}

#[test]
fn continue_takes_up_the_open_pull_request_and_ready_waits_for_head_and_green_checks() {
    let (env, gh) = publishing(30);
    let branch = current_branch(&env);
    let (out, _) = run(&env, &gh, &["integrate", "loop", "--publish", "--json"], 3);
    let looped: serde_json::Value = serde_json::from_str(&out).expect("loop JSON");
    let culprit = looped["end"]["halt"]["culprit"]["sha"]
        .as_str()
        .expect("culprit")
        .to_string();

    // A person fixes the break on the branch and pushes; the next night's
    // runner has no local branch (a fresh checkout of main).
    fix_break(&env, &culprit);
    git(
        env.sp(),
        &["push", "-q", "origin", &format!("HEAD:refs/heads/{branch}")],
    );
    let fixed = git(env.sp(), &["rev-parse", "HEAD"]).trim().to_string();
    git(env.sp(), &["checkout", "-q", "main"]);
    git(env.sp(), &["branch", "-q", "-D", &branch]);

    let (out, _) = run(
        &env,
        &gh,
        &["integrate", "continue", "--dry-run", "--json"],
        0,
    );
    let which: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(which["branch"], branch.as_str(), "{which}");
    assert_eq!(which["action"], "resume");
    assert_eq!(which["pull"], 1);
    assert_eq!(current_branch(&env), "main", "a dry run changes nothing");
    let (out, _) = run(&env, &gh, &["integrate", "continue", "--json"], 0);
    let taken: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(taken["action"], "resume", "{taken}");
    assert_eq!(current_branch(&env), branch);
    assert_eq!(
        git(env.sp(), &["rev-parse", "HEAD"]).trim(),
        fixed,
        "the fixup is taken"
    );

    // On to upstream's head, the same pull request updated; red checks keep
    // it a draft and its body names them.
    gh.set_ci(std::sync::Arc::new(|_: &str| "failure".to_string()), 0);
    let (out, _) = run(
        &env,
        &gh,
        &["integrate", "loop", "--publish", "--ready", "--json"],
        0,
    );
    let looped: serde_json::Value = serde_json::from_str(&out).expect("loop JSON");
    assert_eq!(looped["published"]["created"], false, "{looped}");
    assert_eq!(
        looped["published"]["ready"]["state"], "checks-failing",
        "{looped}"
    );
    assert_eq!(gh.pulls().len(), 1);
    let pull = gh.pulls()[0].clone();
    assert!(pull.draft);
    assert!(
        pull.body.contains("checks fail: ci (failure)"),
        "{}",
        pull.body
    );
    assert!(gh.ready_marked().is_empty());

    // Green: ready for review, through GraphQL.
    gh.set_ci(std::sync::Arc::new(|_: &str| "success".to_string()), 0);
    let (out, _) = run(&env, &gh, &["integrate", "publish", "--ready", "--json"], 0);
    let published: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(published["ready"]["state"], "ready", "{published}");
    assert_eq!(gh.ready_marked(), vec![1]);
    assert!(!gh.pulls()[0].draft);
    assert!(gh.pulls()[0].body.contains("**Ready for review**"));
    assert!(gh
        .requests()
        .iter()
        .any(|r| r.target == "/graphql" && r.body.contains("markPullRequestReadyForReview")));

    // A person closes it: the next night (a fresh checkout of main) starts
    // a new integrate, on a name the remote does not have.
    gh.close_pull(1);
    git(env.sp(), &["checkout", "-q", "main"]);
    git(env.sp(), &["submodule", "update", "-q"]);
    let (out, _) = run(
        &env,
        &gh,
        &["integrate", "continue", "--dry-run", "--json"],
        0,
    );
    let which: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(which["action"], "start", "{which}");
    assert_eq!(which["branch"], format!("{branch}_1"), "{which}");
}

#[test]
fn continue_dry_run_fails_where_continue_would() {
    // Started, nothing published: no open pull request, so `continue`
    // would start a new integrate, which it refuses on an integrate
    // branch; the dry run says so too, instead of "start".
    let (env, gh) = publishing(6);
    let branch = current_branch(&env);
    let (_, real) = run(&env, &gh, &["integrate", "continue"], 2);
    assert!(real.contains("is on the integrate branch"), "{real}");
    let (out, dry) = run(
        &env,
        &gh,
        &["integrate", "continue", "--dry-run", "--json"],
        2,
    );
    assert!(out.is_empty(), "{out}");
    assert_eq!(
        dry.lines().next(),
        real.lines().next(),
        "the dry run fails as the run does:\n{dry}\n{real}"
    );
    assert_eq!(current_branch(&env), branch);

    // Back on main with uncommitted changes: both refuse, naming them.
    git(env.sp(), &["checkout", "-q", "main"]);
    write(&env.sp().join("notes.txt"), "mine\n");
    for args in [
        &["integrate", "continue", "--dry-run"][..],
        &["integrate", "continue"],
    ] {
        let (_, err) = run(&env, &gh, args, 2);
        assert!(err.contains("has uncommitted changes"), "{args:?}: {err}");
        assert!(err.contains("notes.txt"), "{args:?}: {err}");
    }
    std::fs::remove_file(env.sp().join("notes.txt")).unwrap();
    // Clean on main: the dry run says start, and changes nothing.
    let (out, _) = run(
        &env,
        &gh,
        &["integrate", "continue", "--dry-run", "--json"],
        0,
    );
    let which: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(which["action"], "start", "{which}");
    assert_eq!(current_branch(&env), "main");
}

/// `n` check runs that passed, named `check N`, with ids from 1.
fn green_runs(n: usize) -> Vec<serde_json::Value> {
    (1..=n)
        .map(|i| serde_json::json!({"id": i, "name": format!("check {i}"), "status": "completed", "conclusion": "success"}))
        .collect()
}

#[test]
fn ready_reads_every_page_of_check_runs_and_takes_no_graphql_answer_on_trust() {
    // No break: the loop reaches upstream's head; only the checks decide.
    let env = Env::new(&spec(8));
    configure(&env, &github_config(REPO));
    env.start();
    let gh = FakeGithub::start(REPO, TOKEN).expect("loopback GitHub");
    let (out, _) = run(&env, &gh, &["integrate", "loop", "--json"], 0);
    let looped: serde_json::Value = serde_json::from_str(&out).expect("loop JSON");
    assert_eq!(looped["end"]["result"], "at_head", "{looped}");
    let check_polls = |gh: &FakeGithub| {
        gh.requests()
            .iter()
            .filter(|r| r.target.contains("/check-runs"))
            .count()
    };

    // 250 runs over three pages: the one that fails is on the last page
    // and has no name.
    let mut runs = green_runs(249);
    runs.push(serde_json::json!({"id": 9001, "name": null, "status": "completed", "conclusion": "failure"}));
    gh.set_check_runs(Some(CheckRuns {
        runs: runs.clone(),
        ..CheckRuns::default()
    }));
    let (out, _) = run(&env, &gh, &["integrate", "publish", "--ready", "--json"], 0);
    let published: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(published["ready"]["state"], "checks-failing", "{published}");
    assert_eq!(
        published["ready"]["reason"], "(unnamed check run 9001) (failure)",
        "{published}"
    );
    assert_eq!(check_polls(&gh), 3, "every page read, by its Link");
    assert!(gh.ready_marked().is_empty());
    let pull = gh.pulls()[0].clone();
    assert!(pull.draft);
    assert!(
        pull.body
            .contains("checks fail: (unnamed check run 9001) (failure)"),
        "{}",
        pull.body
    );
    // A run with an absent name and no status yet: pending, not a failure
    // of the command.
    gh.set_check_runs(Some(CheckRuns {
        runs: vec![serde_json::json!({"id": 7})],
        ..CheckRuns::default()
    }));
    let (out, _) = run(&env, &gh, &["integrate", "publish", "--ready", "--json"], 0);
    let published: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(published["ready"]["state"], "checks-pending", "{published}");

    // Answers that say there are more runs than their pages link (or that
    // page without links) are errors, never a pass; nothing is pushed or
    // marked.
    let tip = origin_tip(&env, &current_branch(&env));
    for (listed, claimed, no_links, said) in [
        (150, Some(400), false, "GitHub listed 150 of the 400"),
        (150, None, true, "GitHub listed 100 of the 150"),
    ] {
        gh.set_check_runs(Some(CheckRuns {
            runs: green_runs(listed),
            claimed_total: claimed,
            no_links,
        }));
        let (_, err) = run(&env, &gh, &["integrate", "publish", "--ready"], 1);
        assert!(err.contains(said), "{said}: {err}");
        assert!(err.contains("check runs of"), "{err}");
        assert!(gh.ready_marked().is_empty());
        assert!(gh.pulls()[0].draft);
    }
    assert_eq!(origin_tip(&env, &current_branch(&env)), tip);

    // Every check green (over two pages), but GraphQL answers with no data,
    // or with errors: the command fails naming the operation, never
    // "marked ready".
    gh.set_check_runs(Some(CheckRuns {
        runs: green_runs(120),
        ..CheckRuns::default()
    }));
    for (answer, said) in [
        (serde_json::json!({"data": null}), "holds no data"),
        (
            serde_json::json!({"data": {"markPullRequestReadyForReview": null}, "errors": [{"message": "Resource not accessible by integration"}]}),
            "GitHub said: Resource not accessible by integration",
        ),
        (
            serde_json::json!({"data": {}}),
            "has no `markPullRequestReadyForReview`",
        ),
    ] {
        gh.set_graphql_answer(Some(answer.clone()));
        let (out, err) = run(&env, &gh, &["integrate", "publish", "--ready"], 1);
        assert!(err.contains(said), "{answer}: {err}");
        assert!(err.contains("ready for review"), "{err}");
        assert!(
            !out.contains("marked pull request") && !err.contains("marked pull request"),
            "{out}{err}"
        );
        assert!(gh.pulls()[0].draft);
    }
    // Answered for real: ready.
    gh.set_graphql_answer(None);
    let (out, _) = run(&env, &gh, &["integrate", "publish", "--ready", "--json"], 0);
    let published: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(published["ready"]["state"], "ready", "{published}");
    assert_eq!(gh.ready_marked(), vec![1]);
    assert!(!gh.pulls()[0].draft);
}

#[test]
fn final_checks_never_halt_and_keep_the_pull_request_a_draft_until_fixed() {
    iree_bin();
    let env = Env::new(&with_break(20));
    // A lit suite in the superproject, one test of it broken.
    let lit = env.sp().join("suites/lit");
    std::fs::create_dir_all(&lit).unwrap();
    write_lit_config(&lit);
    std::fs::write(
        lit.join("ok.mlir"),
        "// RUN: iree-opt %s | FileCheck %s\n// CHECK: func.func @ok\nfunc.func @ok() { return }\n",
    )
    .unwrap();
    std::fs::write(
        lit.join("broken.mlir"),
        "// RUN: iree-opt %s | FileCheck %s\n// CHECK: func.func @renamed\nfunc.func @old() { return }\n",
    )
    .unwrap();
    let gh = start_with_final_checks(&env);

    // The halt runs the final checks; they do not change the halt.
    let (out, _) = run(&env, &gh, &["integrate", "loop", "--publish", "--json"], 3);
    let looped: serde_json::Value = serde_json::from_str(&out).expect("loop JSON");
    assert_eq!(looped["end"]["result"], "halted", "{looped}");
    let checks = &looped["final_checks"]["checks"];
    assert_eq!(checks[0]["passed"], false, "{looped}");
    assert_eq!(
        checks[0]["failures"][0]["test"], "lit/broken.mlir [lit]",
        "{looped}"
    );
    let body = gh.pulls()[0].body.clone();
    assert!(body.contains("## To fix before landing (1)"), "{body}");
    assert!(body.contains("`lit/broken.mlir [lit]`"), "{body}");
    assert_eq!(
        body.matches("## To fix before landing").count(),
        1,
        "once: {body}"
    );
    // The halt report says it too.
    let (report, _) = run(&env, &gh, &["integrate", "report"], 0);
    assert!(report.contains("## To fix before landing (1)"), "{report}");

    // Past the break to upstream's head with green CI: still a draft while
    // a final check fails.
    let culprit = looped["end"]["halt"]["culprit"]["sha"]
        .as_str()
        .unwrap()
        .to_string();
    let looped = fixed_and_green(&env, &gh, &culprit);
    assert_eq!(looped["end"]["result"], "at_head", "{looped}");
    assert_eq!(
        looped["published"]["ready"]["state"], "final-checks-failing",
        "{looped}"
    );
    assert!(gh.pulls()[0].draft);

    // Fixed: every final check passes, and the pull request is ready.
    std::fs::write(
        lit.join("broken.mlir"),
        "// RUN: iree-opt %s | FileCheck %s\n// CHECK: func.func @renamed\nfunc.func @renamed() { return }\n",
    )
    .unwrap();
    commit_as_tester(env.sp(), "Fix the lit test", true);
    let (out, _) = run(
        &env,
        &gh,
        &["integrate", "loop", "--publish", "--ready", "--json"],
        0,
    );
    let looped: serde_json::Value = serde_json::from_str(&out).expect("loop JSON");
    assert_eq!(
        looped["final_checks"]["checks"][0]["passed"], true,
        "{looped}"
    );
    assert_eq!(looped["published"]["ready"]["state"], "ready", "{looped}");
    assert!(!gh.pulls()[0].draft);
    assert!(
        gh.pulls()[0].body.contains("Every final check passed"),
        "{}",
        gh.pulls()[0].body
    );
}

#[test]
fn bisect_test_names_the_advance_that_broke_a_failing_final_check_test() {
    iree_bin();
    let env = Env::new(&with_break(20));
    // A lit test of what the pinned upstream provides: its API version.
    let lit = env.sp().join("suites/lit");
    std::fs::create_dir_all(&lit).unwrap();
    write_lit_config(&lit);
    let version = env
        .sp()
        .join("third_party/llvm-project/mlir/include/API_VERSION");
    std::fs::write(
        lit.join("api.mlir"),
        format!(
            "// RUN: cat {} | FileCheck %s\n// CHECK: {{{{^1$}}}}\n",
            version.display()
        ),
    )
    .unwrap();
    let gh = start_with_final_checks(&env);

    // Halt at the break, fix it the way a person would, on to the head: the
    // lit test fails there, and the loop did not stop for it.
    let (out, _) = run(&env, &gh, &["integrate", "loop", "--json"], 3);
    let looped: serde_json::Value = serde_json::from_str(&out).expect("loop JSON");
    let culprit = looped["end"]["halt"]["culprit"]["sha"]
        .as_str()
        .unwrap()
        .to_string();
    fix_break(&env, &culprit);
    let broke = git(env.sp(), &["rev-parse", "HEAD~1"]).trim().to_string();
    let (out, _) = run(&env, &gh, &["integrate", "loop", "--json"], 0);
    let looped: serde_json::Value = serde_json::from_str(&out).expect("loop JSON");
    assert_eq!(
        looped["final_checks"]["checks"][0]["failures"][0]["test"], "lit/api.mlir [lit]",
        "{looped}"
    );

    // Which advance broke it: the one that took the culprit.
    let head = git(env.sp(), &["rev-parse", "HEAD"]).trim().to_string();
    let (out, _) = run(
        &env,
        &gh,
        &[
            "integrate",
            "bisect",
            "--test",
            "lit/api.mlir [lit]",
            "--json",
        ],
        0,
    );
    let found: serde_json::Value = serde_json::from_str(&out).expect("bisect JSON");
    assert_eq!(found["first_bad"]["sha"], broke.as_str(), "{found}");
    assert_eq!(
        git(env.sp(), &["rev-parse", "HEAD"]).trim(),
        head,
        "put back"
    );
    assert!(is_clean(env.sp()));

    // A test no check reported, and a check that does not exist.
    let (_, err) = run(&env, &gh, &["integrate", "bisect", "--check", "7"], 2);
    assert!(err.contains("--check 7 names no final check"), "{err}");
}

/// The upstream pin `commit` of the superproject has, at `rev`.
fn pin_at(env: &Env, rev: &str) -> String {
    git(
        env.sp(),
        &["rev-parse", &format!("{rev}:{}", env.sb.submodule_path)],
    )
    .trim()
    .to_string()
}

#[test]
fn the_fixtures_lit_suite_breaks_where_upstream_changes_its_tool_and_bisect_names_each() {
    iree_bin();
    let env = Env::new(&lockstep_sandbox::SandboxSpec {
        lit_changes: true,
        ..with_break(60)
    });
    let gh = start_with_final_checks(&env);

    // At the base every lit test passes.
    let base = stdout(&expect(
        std::process::Command::new(env!("CARGO_BIN_EXE_lockstep"))
            .args(["test", "suites/lit"])
            .current_dir(env.sp())
            .env("NO_PROXY", "127.0.0.1,localhost"),
        0,
    ));
    assert!(base.contains("5 tests: 5 pass"), "{base}");

    // Through the break to upstream's head: four to fix, batched.
    let (out, _) = run(&env, &gh, &["integrate", "loop", "--json"], 3);
    let looped: serde_json::Value = serde_json::from_str(&out).expect("loop JSON");
    let culprit = looped["end"]["halt"]["culprit"]["sha"]
        .as_str()
        .unwrap()
        .to_string();
    fix_break(&env, &culprit);
    let (out, _) = run(&env, &gh, &["integrate", "loop", "--json"], 0);
    let looped: serde_json::Value = serde_json::from_str(&out).expect("loop JSON");
    let mut failing: Vec<String> = looped["final_checks"]["checks"][0]["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["test"].as_str().unwrap().to_string())
        .collect();
    failing.sort();
    assert_eq!(
        failing,
        [
            "lit/add.mlir [lit]",
            "lit/count.mlir [lit]",
            "lit/mul.mlir [lit]",
            "lit/sub.mlir [lit]"
        ],
        "{looped}"
    );

    // Each bisect names the advance that took the upstream change.
    let sub = env.sp().join(&env.sb.submodule_path);
    for (test, change) in [
        (
            "lit/count.mlir [lit]",
            env.sb.tool_format_commit.clone().unwrap(),
        ),
        (
            "lit/add.mlir [lit]",
            env.sb.tool_names_commit.clone().unwrap(),
        ),
    ] {
        let (out, _) = run(
            &env,
            &gh,
            &["integrate", "bisect", "--test", test, "--json"],
            0,
        );
        let found: serde_json::Value = serde_json::from_str(&out).expect("bisect JSON");
        let advance = found["first_bad"]["sha"].as_str().unwrap().to_string();
        let pin = pin_at(&env, &advance);
        let before = pin_at(&env, &format!("{advance}^"));
        assert!(is_ancestor(&sub, &change, &pin), "{test}: {found}");
        assert!(!is_ancestor(&sub, &change, &before), "{test}: {found}");
    }
}

/// A minimal lit configuration in `dir`.
fn write_lit_config(dir: &std::path::Path) {
    std::fs::write(
        dir.join("lit.cfg.py"),
        "import lit.formats\nconfig.name = 'sp'\nconfig.test_format = lit.formats.ShTest()\nconfig.suffixes = ['.mlir']\n",
    )
    .unwrap();
}

/// `[integrate] final-checks = ["lockstep test suites/lit"]` and publishing
/// configured (committed, pushed), the integrate started; the loopback
/// GitHub.
fn start_with_final_checks(env: &Env) -> FakeGithub {
    let check = format!("{} test suites/lit", env!("CARGO_BIN_EXE_lockstep"));
    let config = env.sp().join("lockstep.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replacen(
            "[integrate]\n",
            &format!("[integrate]\nfinal-checks = [\"{check}\"]\n"),
            1,
        ),
    )
    .unwrap();
    configure(env, &github_config(REPO));
    env.start();
    FakeGithub::start(REPO, TOKEN).expect("loopback GitHub")
}

/// The same publishing against a GitHub Enterprise Server: `GITHUB_API_URL`
/// is `http://HOST/api/v3`, GraphQL is `/api/graphql` beside it, and every
/// exchange is held to Enterprise Server's own description (the server
/// answers 404 to an API path without its prefix, so a client that drops
/// it fails here).
#[test]
fn an_enterprise_server_gets_the_pull_request_checks_and_ready_mark_under_api_v3() {
    let env = Env::new(&with_break(40));
    configure(&env, &github_config(REPO));
    env.start();
    let gh = FakeGithub::start_enterprise(REPO, TOKEN).expect("loopback GitHub Enterprise");
    assert!(gh.url().ends_with("/api/v3"), "{}", gh.url());
    let (out, _) = run(&env, &gh, &["integrate", "loop", "--publish", "--json"], 3);
    let looped: serde_json::Value = serde_json::from_str(&out).expect("loop JSON");
    assert_eq!(looped["published"]["created"], true, "{looped}");
    let culprit = looped["end"]["halt"]["culprit"]["sha"]
        .as_str()
        .expect("culprit")
        .to_string();
    assert!(gh.pulls()[0].draft);
    let done = fixed_and_green(&env, &gh, &culprit);
    assert_eq!(done["published"]["ready"]["state"], "ready", "{done}");
    assert_eq!(gh.ready_marked(), vec![1]);
    let gaps = gh.enterprise_gaps(&[
        "ghes:pulls/create",
        "ghes:pulls/update",
        "ghes:pulls/list",
        "ghes:checks/list-for-ref",
        "graphql",
    ]);
    assert!(gaps.is_empty(), "{gaps:?}");
}
