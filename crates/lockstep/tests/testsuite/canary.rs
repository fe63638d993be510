//! The secret rule end to end: a canary token (and a webhook URL, and the
//! git header a job could carry) is handed to lockstep while a loopback
//! GitHub echoes the token in every field it can. Then every output, event,
//! state database, history file, site page and the smoke's environment is
//! searched for them: none may hold one.

use std::path::{Path, PathBuf};

use crate::common::*;
use lockstep_testkit::github::FakeGithub;

const TOKEN: &str = "ghp_canary_tok3n_0123456789abcdef";
const HEADER: &str = "AUTHORIZATION: basic Y2FuYXJ5LWhlYWRlcg==";
const HOOK_SECRET: &str = "hook-canary-secret-9876";
const REPO: &str = "acme/super";

/// Every file under `dirs` that holds `needle` (bytes: databases too).
fn holding(dirs: &[&Path], needle: &str) -> Vec<PathBuf> {
    dirs.iter()
        .flat_map(|d| walk(d))
        .filter(|p| {
            std::fs::read(p).is_ok_and(|bytes| {
                bytes
                    .windows(needle.len())
                    .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
            })
        })
        .collect()
}

#[test]
fn no_secret_reaches_an_output_a_store_a_site_or_a_child() {
    let env = Env::new(&with_break(24));
    let scratch = env.dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let dump = scratch.join("smoke-env.txt");

    // The smoke (the project's code) writes down what it inherited.
    let smoke = env.sp().join("build_tools/smoke.sh");
    let text = std::fs::read_to_string(&smoke).unwrap();
    let text = text.replacen(
        "set -u\n",
        "set -u\nenv >> \"$LOCKSTEP_CANARY_DUMP\"; echo ---- >> \"$LOCKSTEP_CANARY_DUMP\"\n",
        1,
    );
    write_executable(&smoke, &text);
    let toml = env.sp().join("lockstep.toml");
    let config = std::fs::read_to_string(&toml).unwrap();
    write(
        &toml,
        &format!(
            "{config}\n[integrate.github]\nrepository = \"{REPO}\"\n\n[integrate.notify]\nkind = \"json\"\n"
        ),
    );
    commit_as_tester(env.sp(), "Canary smoke", true);
    git(env.sp(), &["push", "-q", "origin", "HEAD:main"]);
    git(env.sp(), &["fetch", "-q", "origin"]);
    env.start();

    let gh = FakeGithub::start(REPO, TOKEN).expect("loopback GitHub");
    gh.echo_token();
    let hook = format!("{}?k={HOOK_SECRET}", gh.webhook_url());
    let history = scratch.join("history");
    let events = scratch.join("events.jsonl");
    let site = scratch.join("site");
    let run = |args: &[&str]| {
        let out = env
            .cmd(args)
            .env("GITHUB_API_URL", gh.url())
            .env("GITHUB_TOKEN", TOKEN)
            .env("GH_TOKEN", TOKEN)
            .env("TWINE_PASSWORD", TOKEN)
            .env("LOCKSTEP_WEBHOOK_URL", &hook)
            .env("GIT_CONFIG_COUNT", "1")
            .env(
                "GIT_CONFIG_KEY_0",
                "http.https://github.invalid/.extraheader",
            )
            .env("GIT_CONFIG_VALUE_0", HEADER)
            .env("LOCKSTEP_CANARY_DUMP", &dump)
            .output()
            .expect("run lockstep");
        let all = format!("{}{}", stdout(&out), stderr(&out));
        for secret in [TOKEN, HEADER, HOOK_SECRET] {
            assert!(
                !all.contains(secret),
                "lockstep {args:?} printed {secret}:\n{all}"
            );
        }
        out
    };

    let events_flag = events.to_string_lossy().into_owned();
    let history_flag = history.to_string_lossy().into_owned();
    let looped = run(&[
        "--events",
        &events_flag,
        "integrate",
        "loop",
        "--publish",
        "--record",
        &history_flag,
    ]);
    assert_eq!(looped.status.code(), Some(3), "{}", stderr(&looped));
    assert_eq!(gh.pulls().len(), 1);
    assert_eq!(gh.webhook_posts().len(), 1);
    for args in [
        &["integrate", "status"][..],
        &["integrate", "status", "--json"][..],
        &["integrate", "report"][..],
        &["history", "list", &history_flag][..],
        &["history", "list", &history_flag, "--json"][..],
    ] {
        run(args);
    }
    let site_flag = site.to_string_lossy().into_owned();
    let made = run(&[
        "report",
        "site",
        "--history",
        &history_flag,
        "--out",
        &site_flag,
    ]);
    assert_eq!(made.status.code(), Some(0), "{}", stderr(&made));

    // The smoke ran, without any of them.
    assert_inherited_none(&dump, "LOCKSTEP_CANARY_DUMP");
    // Nothing written holds them: the project (its .lockstep state), the
    // history, the events, the site.
    for secret in [TOKEN, HEADER, HOOK_SECRET] {
        let found = holding(&[env.sp(), &history, &site, &events], secret);
        assert!(found.is_empty(), "{secret} is in {found:?}");
    }
    // The site still links the pull request (without the echoed query).
    let pages = holding(&[&site], &format!("/{REPO}/pull/1"));
    assert!(!pages.is_empty(), "the site does not link the pull request");
}

#[test]
fn release_bump_smoke_inherits_no_secret() {
    let tmp = tempfile::tempdir().unwrap();
    let upstream = tmp.path().join("upstream");
    std::fs::create_dir_all(&upstream).unwrap();
    git(&upstream, &["init", "-q", "-b", "main"]);
    let commit = |n: u32| {
        write(&upstream.join("f.txt"), &n.to_string());
        commit_as_tester(&upstream, &format!("u{n}"), true)
    };
    let first = commit(1);
    commit(2);
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    let dump = tmp.path().join("bump-env.txt");
    write(
        &work.join("lockstep.toml"),
        &format!(
            "[release]\nname = \"demo\"\nversion-base = \"1.0.0\"\npin-files = [\"up.version\"]\nupstream-url = \"{}\"\n\n[integrate]\nsmoke = [\"sh\", \"-c\", \"env > {}\"]\n\n[integrate.notify]\nurl-env = \"CANARY_HOOK\"\n",
            upstream.display(),
            dump.display()
        ),
    );
    write(&work.join("up.version"), &format!("{first}\n"));
    commit_as_tester(&work, "init", true);
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_lockstep"));
    cmd.args(["release", "bump", "--smoke"]).current_dir(&work);
    isolate(
        &mut cmd,
        &tmp.path().join("home"),
        &tmp.path().join("cache"),
    );
    let out = cmd
        .env("GITHUB_TOKEN", TOKEN)
        .env("GH_TOKEN", TOKEN)
        .env("TWINE_PASSWORD", TOKEN)
        .env("UV_PUBLISH_TOKEN", TOKEN)
        // The webhook variable lockstep.toml names (`url-env`), not the
        // default one: registered when the file is read.
        .env(
            "CANARY_HOOK",
            format!("https://hooks.example/{HOOK_SECRET}"),
        )
        .env("GIT_CONFIG_COUNT", "1")
        .env(
            "GIT_CONFIG_KEY_0",
            "http.https://github.invalid/.extraheader",
        )
        .env("GIT_CONFIG_VALUE_0", HEADER)
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@e")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_inherited_none(&dump, "PATH=");
}

/// The environment a child wrote to `dump` (it holds `expected`, so it
/// ran) holds none of the secrets.
fn assert_inherited_none(dump: &Path, expected: &str) {
    let seen = std::fs::read_to_string(dump).expect("the child ran");
    assert!(seen.contains(expected), "{seen}");
    for secret in [TOKEN, HEADER, HOOK_SECRET] {
        assert!(
            !seen.contains(secret),
            "the child inherited {secret}:\n{seen}"
        );
    }
}

/// A directory of the IREE tools, each a wrapper that appends the
/// environment it got to `dump` (a path written into the script: nothing
/// from the environment) and then runs the real tool.
fn spying_iree_bin(dir: &Path, dump: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for entry in std::fs::read_dir(iree_bin()).unwrap().flatten() {
        let real = std::fs::canonicalize(entry.path()).unwrap();
        write_executable(
            &dir.join(entry.file_name()),
            &format!(
                "#!/bin/sh\nenv >> '{}'\necho ---- >> '{}'\nexec '{}' \"$@\"\n",
                dump.display(),
                dump.display(),
                real.display()
            ),
        );
    }
    dir.to_path_buf()
}

#[test]
fn test_and_bench_hand_no_secret_to_the_iree_tools() {
    let p = Project::new();
    let dump = p.root().join("tools-env.txt");
    let tools = spying_iree_bin(&p.root().join("spy-bin"), &dump);
    let secrets = |cmd: &mut std::process::Command| {
        cmd.env("GITHUB_TOKEN", TOKEN)
            .env("GH_TOKEN", TOKEN)
            .env("GIT_CONFIG_COUNT", "1")
            .env(
                "GIT_CONFIG_KEY_0",
                "http.https://github.invalid/.extraheader",
            )
            .env("GIT_CONFIG_VALUE_0", HEADER);
    };
    // lockstep test: iree-compile and iree-run-module.
    p.add_suite(&[("add", "11 22 33 44")]);
    let mut test = p.cmd(&["test", "--iree-bin", tools.to_str().unwrap(), "s"]);
    secrets(&mut test);
    expect(&mut test, 0);
    assert_inherited_none(&dump, "PATH=");
    // lockstep bench: iree-compile, iree-benchmark-module and (verifying)
    // iree-run-module.
    std::fs::remove_file(&dump).unwrap();
    let mut bench = p.cmd(&[
        "bench",
        "--iree-bin",
        tools.to_str().unwrap(),
        "--verify",
        "--",
        "gemm",
        "-m",
        "4",
        "-k",
        "4",
        "-n",
        "4",
    ]);
    secrets(&mut bench);
    expect(&mut bench, 0);
    let seen = std::fs::read_to_string(&dump).unwrap();
    assert!(seen.matches("----").count() >= 2, "the tools ran:\n{seen}");
    assert_inherited_none(&dump, "PATH=");
}
