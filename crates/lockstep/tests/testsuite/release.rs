//! `lockstep release`: tags raced by concurrent cuts against a real bare
//! remote; wheels built by `pkg build --version`, published into the store,
//! and installed by real pip and uv from the generated index over `file://`
//! and over HTTP from `release serve`; immutability, yanks, and the bad
//! inputs of the issue.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::common::*;

const RELEASE: &str =
    "\n[release]\nname = \"demo\"\nversion-base = \"3.14.0\"\ntag = \"snapshot-{version}\"\n";

/// A bare remote and a clone of it holding lockstep.toml with `config`.
fn remote_and_clone(config: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote.git");
    git(
        tmp.path(),
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            remote.to_str().unwrap(),
        ],
    );
    let work = tmp.path().join("work");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            remote.to_str().unwrap(),
            work.to_str().unwrap(),
        ],
    );
    write(&work.join("lockstep.toml"), config);
    git(&work, &["add", "."]);
    commit_as_tester(&work, "init", false);
    git(&work, &["push", "-q", "origin", "HEAD:main"]);
    (tmp, remote, work)
}

fn lockstep_in(dir: &Path, home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockstep"));
    cmd.args(args).current_dir(dir);
    isolate(&mut cmd, &home.join("home"), &home.join("cache"));
    cmd.env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@e");
    cmd.env_remove("GITHUB_RUN_ID")
        .env_remove("GITHUB_RUN_ATTEMPT");
    cmd
}

#[test]
fn concurrent_cuts_get_distinct_increasing_versions_and_a_rerun_reuses_its_tag() {
    let (tmp, remote, _work) = remote_and_clone(RELEASE);
    let clones: Vec<PathBuf> = (0..6)
        .map(|i| {
            let dir = tmp.path().join(format!("c{i}"));
            git(
                tmp.path(),
                &[
                    "clone",
                    "-q",
                    remote.to_str().unwrap(),
                    dir.to_str().unwrap(),
                ],
            );
            dir
        })
        .collect();
    let children: Vec<Child> = clones
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            lockstep_in(
                dir,
                tmp.path(),
                &["release", "cut", "--json", "--run-id", &format!("run-{i}")],
            )
            .env("LOCKSTEP_RELEASE_TODAY", "20261125")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let mut versions = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_schema("release-cut.json", &doc);
        assert_eq!(doc["reused"], false);
        versions.push(doc["version"].as_str().unwrap().to_string());
    }
    versions.sort();
    let expected: Vec<String> = (1..=6).map(|n| format!("3.14.0rc202611250{n}")).collect();
    assert_eq!(versions, expected, "six racers, six versions");
    // The remote holds six annotated tags, each naming its run and source.
    let tags = git(&remote, &["tag", "-n20", "-l", "snapshot-*"]);
    for i in 0..6 {
        assert!(tags.contains(&format!("run: run-{i}")), "{tags}");
    }
    // A rerun of run-3 (same commit, same run) reuses its tag.
    let out = expect(
        lockstep_in(
            &clones[3],
            tmp.path(),
            &["release", "cut", "--json", "--run-id", "run-3"],
        )
        .env("LOCKSTEP_RELEASE_TODAY", "20261125"),
        0,
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["reused"], true);
    assert_eq!(
        git(&remote, &["tag", "-l", "snapshot-*"]).lines().count(),
        6
    );
    // The next day starts at 01 again, above every version of the day before.
    let out = expect(
        lockstep_in(
            &clones[0],
            tmp.path(),
            &["release", "cut", "--json", "--run-id", "next-day"],
        )
        .env("LOCKSTEP_RELEASE_TODAY", "20261126"),
        0,
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["version"], "3.14.0rc2026112601");

    // A scheduled run with no new commit cuts nothing and says which
    // version the commit already is; a new commit is cut.
    let scheduled = |run: &str, extra: &[&str]| {
        let mut args = vec!["release", "cut", "--if-new-commit", "--run-id", run];
        args.extend_from_slice(extra);
        let mut cmd = lockstep_in(&clones[0], tmp.path(), &args);
        cmd.env("LOCKSTEP_RELEASE_TODAY", "20261126");
        cmd
    };
    let out = expect(&mut scheduled("nightly-1", &[]), 0);
    assert!(
        stdout(&out).contains("nothing to cut: ") && stdout(&out).contains("3.14.0rc2026112601"),
        "{}",
        stdout(&out)
    );
    let out = expect(&mut scheduled("nightly-1", &["--json"]), 0);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_schema("release-cut.json", &doc);
    assert_eq!(doc["skipped"], true);
    assert_eq!(doc["tag"], "snapshot-3.14.0rc2026112601");
    assert_eq!(
        git(&remote, &["tag", "-l", "snapshot-*"]).lines().count(),
        7
    );
    write(&clones[0].join("NEWS"), "a new commit\n");
    git(&clones[0], &["add", "NEWS"]);
    commit_as_tester(&clones[0], "news", false);
    let out = expect(&mut scheduled("nightly-2", &["--json"]), 0);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["skipped"], false);
    assert_eq!(doc["version"], "3.14.0rc2026112602");
    // --base overrides [release] version-base (a workflow_dispatch input),
    // and is checked like it.
    write(&clones[0].join("NEWS"), "another\n");
    git(&clones[0], &["add", "NEWS"]);
    commit_as_tester(&clones[0], "more news", false);
    let out = expect(
        &mut scheduled("nightly-3", &["--json", "--base", "3.15.0"]),
        0,
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["version"], "3.15.0rc2026112601");
    let out = expect(&mut scheduled("nightly-4", &["--base", "3.15.0rc1"]), 2);
    assert!(
        stderr(&out).contains("--base: `3.15.0rc1` is not a plain release version"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_cut_inputs_are_clear_errors_and_leave_no_tag() {
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let config = format!("{RELEASE}pin-files = [\"llvm-project.version\"]\n");
    let (tmp, remote, work) = remote_and_clone(&config);
    let home = tmp.path();
    // The pin file is missing, then not one revision.
    let err = stderr(&expect(
        &mut lockstep_in(&work, home, &["release", "cut"]),
        1,
    ));
    assert!(
        err.contains("cannot read the pin file llvm-project.version"),
        "{err}"
    );
    write(&work.join("llvm-project.version"), "main\n");
    git(&work, &["add", "."]);
    commit_as_tester(&work, "pin", false);
    let err = stderr(&expect(
        &mut lockstep_in(&work, home, &["release", "cut"]),
        2,
    ));
    assert!(err.contains("does not hold one revision"), "{err}");
    write(&work.join("llvm-project.version"), &format!("{sha}\n"));
    // A change to a tracked file: refused (untracked files never count).
    write(&work.join("untracked.txt"), "x");
    let err = stderr(&expect(
        &mut lockstep_in(&work, home, &["release", "cut"]),
        2,
    ));
    assert!(err.contains("uncommitted changes"), "{err}");
    git(&work, &["add", "llvm-project.version"]);
    commit_as_tester(&work, "pin", false);
    git(&work, &["push", "-q", "origin", "HEAD:main"]);

    // A remote that refuses tags (a protected ref): exit 1 with its words, no tag anywhere.
    let hook = remote.join("hooks/pre-receive");
    write_executable(
        &hook,
        "#!/bin/sh\necho 'tags are protected here' >&2\nexit 1\n",
    );
    let err = stderr(&expect(
        &mut lockstep_in(&work, home, &["release", "cut"]),
        1,
    ));
    assert!(err.contains("refused tag snapshot-3.14.0rc"), "{err}");
    assert!(err.contains("tags are protected here"), "{err}");
    assert_eq!(git(&work, &["tag", "-l"]).trim(), "");
    std::fs::remove_file(&hook).unwrap();

    // Works now, and the tag records the pin.
    let out = expect(
        &mut lockstep_in(&work, home, &["release", "cut", "--json"]),
        0,
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["pins"]["llvm-project.version"], sha);
    let tag = doc["tag"].as_str().unwrap();
    assert!(git(&remote, &["cat-file", "-p", tag])
        .contains(&format!("pin llvm-project.version: {sha}")));

    // Templates that would not give unique, increasing PEP 440 versions.
    for (template, expected) in [
        ("{base}rc{date}.{n}", "unpadded counter"),
        ("{base}-nightly{n:02}", "does not give PEP 440 versions"),
        ("{base}rc{date}", "exactly one {n}"),
    ] {
        write(
            &work.join("lockstep.toml"),
            &format!("{config}snapshot = \"{template}\"\n"),
        );
        let err = stderr(&expect(
            &mut lockstep_in(&work, home, &["release", "cut"]),
            2,
        ));
        assert!(err.contains(expected), "{template}: {err}");
    }
}

/// The fixture packages at `version`, built into `wheelhouse` (release variant).
fn built(p: &Project, version: &str) -> PathBuf {
    let out = format!("wh-{version}");
    p.run(
        &[
            "pkg",
            "build",
            "--variant",
            "release",
            "--version",
            version,
            "--out",
            &out,
        ],
        0,
    );
    p.path().join(out)
}

fn fixture() -> Project {
    let p = Project::new();
    lockstep_sandbox::packages::create(&p.path(), "3.14.0", RELEASE).expect("fixture");
    p
}

fn pip_install(python: &Path, index: &str, reqs: &[&str]) -> std::process::Output {
    output(
        pip_into(python)
            .args(["install", "--quiet", "--no-cache-dir", "--index-url", index])
            .args(reqs)
            .env_remove("PIP_FIND_LINKS"),
    )
}

fn installed(python: &Path, package: &str) -> String {
    let out = output(Command::new(python).args([
        "-c",
        &format!("from importlib.metadata import version; print(version('{package}'))"),
    ]));
    stdout(&out).trim().to_string()
}

fn http_get(url: &str, accept: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.to_string(), body.to_string())
}

#[test]
fn published_sets_install_with_pip_and_uv_from_the_index_and_yanks_are_skipped() {
    let p = fixture();
    let v1 = "3.14.0rc2026112501";
    let v2 = "3.14.0rc2026112502";
    let house1 = built(&p, v1);
    let out = p.run(
        &[
            "release",
            "publish",
            house1.to_str().unwrap(),
            "--tag",
            "snapshot-x",
            "--json",
        ],
        0,
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["version"], v1);
    assert!(
        doc["scripts_checked"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "demo-pure"),
        "{doc}"
    );
    let index = p.path().join("release/index");
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(index.join(format!("files/{v1}/release.json"))).unwrap(),
    )
    .unwrap();
    assert_schema("release-record.json", &record);
    assert_eq!(record["tag"], "snapshot-x");
    assert_eq!(record["files"].as_array().unwrap().len(), 2);
    // Publishing the same bytes again changes nothing.
    let out = p.run(&["release", "publish", house1.to_str().unwrap()], 0);
    assert!(stdout(&out).contains("0 files added"), "{}", stdout(&out));

    // The index: hashes, requires-python, core metadata; pip installs the set over file://.
    let page = std::fs::read_to_string(index.join("simple/demo-pure/index.html")).unwrap();
    assert!(
        page.contains("#sha256=") && page.contains("data-core-metadata=\"sha256="),
        "{page}"
    );
    let file_url = format!("file://{}/", index.join("simple").display());
    let py = bare_venv("python3", &p.root().join("pipvenv"));
    let out = pip_install(
        &py,
        &file_url,
        &[&format!("demo-pure=={v1}"), &format!("demo-cext=={v1}")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(installed(&py, "demo-cext"), v1);

    // A second version; yanked, it is skipped unless pinned with ==.
    let house2 = built(&p, v2);
    p.run(&["release", "publish", house2.to_str().unwrap()], 0);
    p.run(&["release", "yank", v2, "--reason", "broken runtime"], 0);
    let page = std::fs::read_to_string(index.join("simple/demo-pure/index.html")).unwrap();
    assert!(page.contains("data-yanked=\"broken runtime\""), "{page}");
    let py2 = bare_venv("python3", &p.root().join("pipvenv2"));
    let out = pip_install(&py2, &file_url, &["--pre", "demo-pure"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        installed(&py2, "demo-pure"),
        v1,
        "the yanked version was chosen"
    );
    let out = pip_install(&py2, &file_url, &[&format!("demo-pure=={v2}")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(installed(&py2, "demo-pure"), v2);

    // Over HTTP: pip and uv from `release serve`, JSON by content negotiation.
    let server = Served::start(&p);
    let url = server.url();
    let (head, body) = http_get(
        &format!("{url}demo-pure/"),
        "application/vnd.pypi.simple.v1+json",
    );
    assert!(
        head.contains("application/vnd.pypi.simple.v1+json"),
        "{head}"
    );
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["versions"], serde_json::json!([v1, v2]));
    assert_eq!(json["files"][1]["yanked"], "broken runtime");
    let (head, body) = http_get(&format!("{url}demo-pure/"), "text/html");
    assert!(
        head.contains("text/html") && body.contains("<a href"),
        "{head}"
    );
    let py3 = bare_venv("python3", &p.root().join("pipvenv3"));
    let out = pip_install(
        &py3,
        &url,
        &[&format!("demo-pure=={v1}"), &format!("demo-cext=={v1}")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let uv_dir = p.root().join("uvvenv");
    // lockstep's own pinned uv: a fresh machine's python3 has no uv module.
    let uv = shared_uv();
    let run_uv = |args: &[&str]| {
        let out = output(Command::new(uv).args(args).env("UV_NO_CACHE", "1"));
        assert!(out.status.success(), "uv {args:?}: {}", stderr(&out));
        out
    };
    run_uv(&["venv", "--quiet", uv_dir.to_str().unwrap()]);
    let uv_py = uv_dir.join("bin/python");
    run_uv(&[
        "pip",
        "install",
        "--quiet",
        "--python",
        uv_py.to_str().unwrap(),
        "--index-url",
        &url,
        &format!("demo-cext=={v1}"),
    ]);
    assert_eq!(installed(&uv_py, "demo-cext"), v1);
    // A resolution reads only the .metadata files, never a wheel.
    write(
        &p.root().join("req.in"),
        &format!("demo-pure=={v1}\ndemo-cext=={v1}\n"),
    );
    run_uv(&[
        "pip",
        "compile",
        "--quiet",
        "--index-url",
        &url,
        p.root().join("req.in").to_str().unwrap(),
        "-o",
        p.root().join("req.txt").to_str().unwrap(),
    ]);
    let locked = std::fs::read_to_string(p.root().join("req.txt")).unwrap();
    assert!(locked.contains(&format!("demo-pure=={v1}")), "{locked}");
    let log = server.stop();
    assert!(log.contains(".whl.metadata"), "{log}");

    // Released files are immutable: other bytes under the same name are refused.
    let other = p.path().join("wh-other");
    std::fs::create_dir_all(&other).unwrap();
    for entry in std::fs::read_dir(&house1).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "whl") {
            std::fs::copy(&path, other.join(path.file_name().unwrap())).unwrap();
        }
    }
    // Same names, different bytes: a rebuilt wheel with an extra member.
    let pure = walk(&other)
        .into_iter()
        .find(|f| f.to_string_lossy().contains("demo_pure"))
        .unwrap();
    let out = output(Command::new("python3").args(["-c", "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1], 'a'); z.writestr('demo_pure/extra.txt', 'x'); z.close()"]).arg(&pure));
    assert!(out.status.success());
    p.run(&["pkg", "manifest", "wh-other"], 0);
    let err = stderr(&p.run(&["release", "publish", "wh-other"], 2));
    assert!(
        err.contains("already released with different bytes"),
        "{err}"
    );
}

#[test]
fn bad_sets_are_refused_before_anything_is_published() {
    let p = fixture();
    let v = "3.14.0rc2026112501";
    let house = built(&p, v);
    let index = p.path().join("release/index");

    // A wheel whose file name and METADATA disagree.
    let odd = p.path().join("wh-odd");
    std::fs::create_dir_all(&odd).unwrap();
    let pure = walk(&house)
        .into_iter()
        .find(|f| f.to_string_lossy().contains("demo_pure"))
        .unwrap();
    let renamed = pure
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace(v, "3.14.0rc2026112599");
    std::fs::copy(&pure, odd.join(&renamed)).unwrap();
    p.run(&["pkg", "manifest", "wh-odd"], 0);
    let err = stderr(&p.run(&["release", "publish", "wh-odd"], 2));
    assert!(err.contains("file name and METADATA disagree"), "{err}");

    // A wheel missing from the set (a manifest cell without its file).
    let missing = p.path().join("wh-missing");
    copy_dir(&house, &missing);
    let cext = walk(&missing)
        .into_iter()
        .find(|f| f.to_string_lossy().contains("demo_cext"))
        .unwrap();
    std::fs::remove_file(&cext).unwrap();
    let err = stderr(&p.run(&["release", "publish", "wh-missing"], 1));
    assert!(err.contains("demo_cext"), "{err}");

    // Validation fails (the smoke command): nothing is published.
    let config = std::fs::read_to_string(p.path().join("lockstep.toml")).unwrap();
    p.write(
        "lockstep.toml",
        &format!("{config}smoke = \"python -c 'import demo_pure; raise SystemExit(3)'\"\n"),
    );
    let err = stderr(&p.run(&["release", "publish", house.to_str().unwrap()], 1));
    assert!(err.contains("[release] smoke"), "{err}");
    assert!(!index.join("files").join(v).exists());
    assert!(!index.join("simple").exists());
}

#[test]
fn publish_runs_scripts_and_the_smoke_without_secrets_or_index_variables() {
    let p = fixture();
    let v = "3.14.0rc2026112503";
    let house = built(&p, v);
    let seen = p.root().join("seen.txt");
    let config = std::fs::read_to_string(p.path().join("lockstep.toml")).unwrap();
    p.write(
        "lockstep.toml",
        &format!(
            "{config}smoke = \"env | cut -d= -f1 > '{}'; python -c 'import demo_pure'\"\n\n[integrate.notify]\nurl-env = \"MY_HOOK\"\n",
            seen.display()
        ),
    );
    let dead = Path::new("http://127.0.0.1:9/simple/");
    let secret = Path::new("secret");
    let hidden = [
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "TWINE_USERNAME",
        "TWINE_PASSWORD",
        "UV_PUBLISH_TOKEN",
        "LOCKSTEP_WEBHOOK_URL",
        "MY_HOOK",
        "PYTHONPATH",
    ];
    let mut envs: Vec<(&str, &Path)> = hidden.iter().map(|k| (*k, secret)).collect();
    // An index in the environment would be a dead end: the install must not use it.
    envs.extend([
        ("UV_INDEX_URL", dead),
        ("PIP_INDEX_URL", dead),
        ("UV_EXTRA_INDEX_URL", dead),
    ]);
    let out = p.run_with(&["release", "publish", house.to_str().unwrap()], &envs, 0);
    // The output says which smoke ran (and passed).
    let said = stdout(&out);
    assert!(
        said.contains("the [release] smoke `env | cut -d= -f1") && said.contains("passed"),
        "{said}"
    );
    let names = std::fs::read_to_string(&seen).unwrap();
    let names: Vec<&str> = names.lines().collect();
    for var in hidden
        .iter()
        .chain(&["UV_INDEX_URL", "PIP_INDEX_URL", "UV_EXTRA_INDEX_URL"])
    {
        assert!(!names.contains(var), "the smoke saw {var}: {names:?}");
    }
    assert!(names.contains(&"VIRTUAL_ENV"), "{names:?}");
}

fn copy_dir(from: &Path, to: &Path) {
    for file in walk(from) {
        let dest = to.join(file.strip_prefix(from).unwrap());
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&file, &dest).unwrap();
    }
}

/// A venv with pip and `wheel` (whose `unpack` verifies RECORD).
fn wheel_tool(dir: &Path) -> PathBuf {
    let py = bare_venv("python3", dir);
    let out = output(pip_into(&py).args(["install", "--quiet", "wheel"]));
    assert!(out.status.success(), "pip install wheel: {}", stderr(&out));
    py
}

#[test]
fn promote_rewrites_the_wheels_deterministically_and_pip_sees_only_the_final() {
    let p = fixture();
    let rc = "3.14.0rc2026112501";
    let house = built(&p, rc);
    // What IREE's promoted wheels showed: a stamped version.py and a stray egg-info.
    let pure = walk(&house)
        .into_iter()
        .find(|f| f.to_string_lossy().contains("demo_pure"))
        .unwrap();
    let inject = format!(
        "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1], 'a')\nz.writestr('demo_pure/version.py', 'VERSION = \"{rc}\"\\n')\nz.writestr('demo_pure.egg-info/PKG-INFO', 'Version: {rc}\\n')\nz.writestr('demo_pure-{rc}.data/data/share/demo.txt', 'data')\nz.close()\n"
    );
    let out = output(Command::new("python3").args(["-c", &inject]).arg(&pure));
    assert!(out.status.success());
    p.run(&["pkg", "manifest", house.to_str().unwrap()], 0);
    p.run(&["release", "publish", house.to_str().unwrap()], 0);

    let out = p.run(&["release", "promote", rc, "--to", "3.14.0", "--json"], 0);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let stamped = doc["stamps"].to_string();
    assert!(stamped.contains("demo_pure/version.py"), "{doc}");
    assert!(
        doc["dropped"]
            .to_string()
            .contains("demo_pure.egg-info/PKG-INFO"),
        "{doc}"
    );
    assert!(
        stderr(&out).contains("still holds the old version"),
        "{}",
        stderr(&out)
    );

    // Deterministic: promoting again gives the same bytes (immutability would refuse others).
    let index = p.path().join("release/index");
    let finals: Vec<PathBuf> = walk(&index.join("files/3.14.0"))
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "whl"))
        .collect();
    assert_eq!(finals.len(), 2, "{finals:?}");
    let before: Vec<String> = finals.iter().map(|f| sha256_of(f)).collect();
    p.run(&["release", "promote", rc, "--to", "3.14.0"], 0);
    let after: Vec<String> = finals.iter().map(|f| sha256_of(f)).collect();
    assert_eq!(before, after);

    // `wheel unpack` verifies every RECORD hash; the dist-info is renamed, the egg-info gone.
    let py = wheel_tool(&p.root().join("wheeltool"));
    for wheel in &finals {
        let dest = p.root().join("unpacked");
        let out = output(
            Command::new(&py)
                .args(["-m", "wheel", "unpack", "-d"])
                .arg(&dest)
                .arg(wheel),
        );
        assert!(
            out.status.success(),
            "{}: {}",
            wheel.display(),
            stderr(&out)
        );
    }
    let unpacked = walk(&p.root().join("unpacked"));
    let names: Vec<String> = unpacked
        .iter()
        .map(|f| f.to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .any(|n| n.contains("demo_pure-3.14.0.dist-info/METADATA")),
        "{names:?}"
    );
    assert!(
        !names
            .iter()
            .any(|n| n.contains(".egg-info") || n.contains(&format!("{rc}.dist-info"))),
        "{names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n.contains("demo_pure-3.14.0.data/data/share/demo.txt")),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.contains(&format!("{rc}.data"))),
        "{names:?}"
    );

    // pip without --pre takes the final, and reports it once.
    let file_url = format!("file://{}/", index.join("simple").display());
    let venv = bare_venv("python3", &p.root().join("final"));
    let out = pip_install(&venv, &file_url, &["demo-pure", "demo-cext"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(installed(&venv, "demo-pure"), "3.14.0");
    let freeze = stdout(&output(pip_into(&venv).arg("freeze")));
    assert_eq!(freeze.matches("demo-pure").count(), 1, "{freeze}");
    assert!(freeze.contains("demo-pure==3.14.0"), "{freeze}");

    // --rewrite-stamps rewrites the stamp too (to another final: released files never change).
    let out = p.run(
        &[
            "release",
            "promote",
            rc,
            "--to",
            "3.14.1",
            "--rewrite-stamps",
        ],
        0,
    );
    assert!(stderr(&out).contains("rewrote"), "{}", stderr(&out));
    let venv2 = bare_venv("python3", &p.root().join("final2"));
    let out = pip_install(&venv2, &file_url, &["demo-pure==3.14.1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stamp =
        stdout(&output(Command::new(&venv2).args([
            "-c",
            "import demo_pure.version as v; print(v.VERSION)",
        ])));
    assert_eq!(stamp.trim(), "3.14.1");

    // Bad promotions.
    let err = stderr(&p.run(&["release", "promote", rc, "--to", "3.13.0"], 2));
    assert!(err.contains("does not sort above"), "{err}");
    let err = stderr(&p.run(&["release", "promote", "9.9.9rc1", "--to", "9.9.9"], 2));
    assert!(err.contains("is not a published version"), "{err}");
}

#[test]
fn bump_moves_the_pins_in_one_commit_and_a_failing_smoke_commits_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let upstream = tmp.path().join("upstream");
    std::fs::create_dir_all(&upstream).unwrap();
    git(&upstream, &["init", "-q", "-b", "main"]);
    let commit_upstream = |n: usize| {
        write(&upstream.join("f.txt"), &n.to_string());
        git(&upstream, &["add", "."]);
        git(
            &upstream,
            &[
                "-c",
                "user.name=u",
                "-c",
                "user.email=u@e",
                "commit",
                "-qm",
                &format!("u{n}"),
            ],
        );
        git(&upstream, &["rev-parse", "HEAD"]).trim().to_string()
    };
    let first = commit_upstream(1);
    let second = commit_upstream(2);

    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    let config = format!(
        "{RELEASE}pin-files = [\"llvm-project.version\"]\nupstream-url = \"{}\"\n\n[integrate]\nsmoke = [\"sh\", \"-c\", \"test \\\"$(cat llvm-project.version)\\\" != {second}\"]\n",
        upstream.display()
    );
    write(&work.join("lockstep.toml"), &config);
    write(&work.join("llvm-project.version"), &format!("{first}\n"));
    git(&work, &["add", "."]);
    commit_as_tester(&work, "init", false);
    let home = tmp.path();
    let head = |w: &Path| git(w, &["rev-parse", "HEAD"]).trim().to_string();

    // The smoke fails on the new head: nothing is committed, the pin is put back.
    let before = head(&work);
    let err = stderr(&expect(
        &mut lockstep_in(&work, home, &["release", "bump", "--smoke"]),
        1,
    ));
    assert!(err.contains("the bump is not committed"), "{err}");
    assert_eq!(head(&work), before);
    assert_eq!(
        std::fs::read_to_string(work.join("llvm-project.version")).unwrap(),
        format!("{first}\n")
    );
    assert!(is_clean(&work));

    // Without the smoke: one commit holding only the pin file.
    let out = expect(
        &mut lockstep_in(&work, home, &["release", "bump", "--json"]),
        0,
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["to"], second);
    assert_eq!(
        git(&work, &["log", "-1", "--format=%s"]).trim(),
        format!("Bump llvm-project to {second}")
    );
    assert_eq!(
        git(&work, &["show", "--name-only", "--format=", "HEAD"]).trim(),
        "llvm-project.version"
    );
    // Again: nothing changed, no commit.
    let bumped = head(&work);
    let out = expect(&mut lockstep_in(&work, home, &["release", "bump"]), 0);
    assert!(stdout(&out).contains("already at"), "{}", stdout(&out));
    assert_eq!(head(&work), bumped);
    // --to an earlier revision, with a passing smoke.
    expect(
        &mut lockstep_in(&work, home, &["release", "bump", "--to", &first, "--smoke"]),
        0,
    );
    assert_eq!(
        std::fs::read_to_string(work.join("llvm-project.version")).unwrap(),
        format!("{first}\n")
    );

    // Bad inputs.
    write(&work.join("llvm-project.version"), "not a revision\n");
    let err = stderr(&expect(
        &mut lockstep_in(&work, home, &["release", "bump"]),
        2,
    ));
    assert!(err.contains("uncommitted changes"), "{err}");
    git(&work, &["checkout", "--", "llvm-project.version"]);
    let err = stderr(&expect(
        &mut lockstep_in(&work, home, &["release", "bump", "--to", "no-such-branch"]),
        2,
    ));
    assert!(err.contains("has no no-such-branch"), "{err}");
}

/// A minimal valid wheel of `project` at `version` in `dir`.
fn synthetic_wheel(dir: &Path, project: &str, version: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let script = r#"
import sys, zipfile
d, project, version = sys.argv[1:4]
mod = project.replace('-', '_')
info = f"{mod}-{version}.dist-info"
with zipfile.ZipFile(f"{d}/{mod}-{version}-py3-none-any.whl", "w") as z:
    z.writestr(f"{mod}/__init__.py", "")
    z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n\n")
    z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr(f"{info}/RECORD", "")
"#;
    let out = output(
        Command::new("python3")
            .args(["-c", script])
            .arg(dir)
            .args([project, version]),
    );
    assert!(out.status.success());
}

#[test]
fn prune_keeps_the_newest_finals_and_whatever_a_branch_names() {
    let (_tmp, _remote, work) = remote_and_clone(&format!("{RELEASE}keep = {{ snapshots = 2 }}\n"));
    let home = work.parent().unwrap().to_path_buf();
    let index = work.join("release/index/files");
    let versions = [
        "3.14.0rc2026112101",
        "3.14.0rc2026112201",
        "3.14.0rc2026112301",
        "3.14.0rc2026112401",
        "3.14.0rc2026112501",
        "3.13.0",
    ];
    for v in versions {
        synthetic_wheel(&index.join(v), "demo-pure", v);
    }
    // A manifest on main pins the oldest snapshot.
    write(
        &work.join("deploy/pylock.toml"),
        "[[packages]]\nname = \"demo-pure\"\nversion = \"3.14.0rc2026112101\"\n",
    );
    git(&work, &["add", "deploy"]);
    commit_as_tester(&work, "pin a snapshot", false);
    git(&work, &["push", "-q", "origin", "HEAD:main"]);
    git(&work, &["fetch", "-q", "origin"]);
    expect(&mut lockstep_in(&work, &home, &["release", "index"]), 0);

    let out = expect(
        &mut lockstep_in(&work, &home, &["release", "prune", "--dry-run", "--json"]),
        0,
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        doc["removed"],
        serde_json::json!(["3.14.0rc2026112201", "3.14.0rc2026112301"])
    );
    assert_eq!(doc["referenced"], serde_json::json!(["3.14.0rc2026112101"]));
    assert!(
        index.join("3.14.0rc2026112201").exists(),
        "dry run removed something"
    );

    expect(
        &mut lockstep_in(&work, &home, &["release", "prune", "--yank"]),
        0,
    );
    let page =
        std::fs::read_to_string(work.join("release/index/simple/demo-pure/index.html")).unwrap();
    assert_eq!(page.matches("data-yanked").count(), 2, "{page}");

    expect(&mut lockstep_in(&work, &home, &["release", "prune"]), 0);
    let left: std::collections::BTreeSet<String> = std::fs::read_dir(&index)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let expected: std::collections::BTreeSet<String> = [
        "3.13.0",
        "3.14.0rc2026112101",
        "3.14.0rc2026112401",
        "3.14.0rc2026112501",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(left, expected);
    let page =
        std::fs::read_to_string(work.join("release/index/simple/demo-pure/index.html")).unwrap();
    assert!(!page.contains("3.14.0rc2026112201"), "{page}");

    // A local main ahead of a stale origin/main pins the next snapshot:
    // both are read, so it stays.
    write(
        &work.join("deploy/requirements.txt"),
        "demo-pure==3.14.0rc2026112401\n",
    );
    git(&work, &["add", "deploy"]);
    commit_as_tester(&work, "pin another snapshot, not pushed yet", false);
    write(
        &work.join("lockstep.toml"),
        &format!("{RELEASE}keep = {{ snapshots = 1 }}\n"),
    );
    let out = expect(
        &mut lockstep_in(&work, &home, &["release", "prune", "--json"]),
        0,
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        doc["referenced"],
        serde_json::json!(["3.14.0rc2026112101", "3.14.0rc2026112401"]),
        "{doc}"
    );
    assert!(index.join("3.14.0rc2026112401").exists());

    // A branch that cannot be checked keeps everything (fail closed).
    write(
        &work.join("lockstep.toml"),
        &format!("{RELEASE}keep = {{ snapshots = 1 }}\nbranches = [\"no-such-branch\"]\n"),
    );
    let err = stderr(&expect(
        &mut lockstep_in(&work, &home, &["release", "prune"]),
        2,
    ));
    assert!(
        err.contains("`no-such-branch` is not a branch here"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&index).unwrap().count(), 4);
}

/// pypiserver from PyPI in a venv beside the shared toolchains (made in
/// place; a marker written last says it is whole).

#[test]
fn promote_uploads_to_a_real_pypiserver_that_pip_installs_from() {
    let p = fixture();
    let rc = "3.14.0rc2026112501";
    let house = built(&p, rc);
    p.run(&["release", "publish", house.to_str().unwrap()], 0);
    let server = PypiServer::start(&p.root().join("pypiserver-packages"));
    let url = server.url();
    let out = p.run(
        &["release", "promote", rc, "--to", "3.14.0", "--upload", &url],
        0,
    );
    assert!(
        stderr(&out).contains("uploading demo_pure-3.14.0-py3-none-any.whl"),
        "{}",
        stderr(&out)
    );
    let venv = bare_venv("python3", &p.root().join("from-pypiserver"));
    let out = pip_install(
        &venv,
        &format!("{url}simple/"),
        &["demo-pure==3.14.0", "demo-cext==3.14.0"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(installed(&venv, "demo-cext"), "3.14.0");
    // The server has the files already: skipped as `--skip-existing`,
    // never renamed or sent under another name.
    let err = stderr(&p.run(
        &["release", "promote", rc, "--to", "3.14.0", "--upload", &url],
        0,
    ));
    assert!(
        err.contains("demo_pure-3.14.0-py3-none-any.whl is on the server already: skipped"),
        "{err}"
    );

    // The CI's upload job: what `promote --copy-to` wrote, with a token
    // (trusted publishing is asked for, and the token wins).
    p.run(
        &[
            "release",
            "promote",
            rc,
            "--to",
            "3.14.1",
            "--copy-to",
            "final",
        ],
        0,
    );
    let mut cmd = p.cmd(&[
        "release",
        "upload",
        "final",
        "--url",
        &url,
        "--trusted-publishing",
        "--json",
    ]);
    cmd.env("UV_PUBLISH_TOKEN", "pypi-loopback-token");
    let sent: serde_json::Value = serde_json::from_slice(&expect(&mut cmd, 0).stdout).unwrap();
    let sent = sent["files"].as_array().unwrap();
    assert!(
        sent.len() >= 2 && sent.iter().all(|f| f["uploaded"] == true),
        "{sent:?}"
    );
    let out = pip_install(&venv, &format!("{url}simple/"), &["demo-pure==3.14.1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(installed(&venv, "demo-pure"), "3.14.1");
    drop(server);

    // An index that refuses the upload: its status and words, exit 1.
    let refusing = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let refused_url = format!("http://{}/legacy/", refusing.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut stream in refusing.incoming().flatten() {
            let mut buf = [0u8; 65536];
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_millis(500)));
            while stream.read(&mut buf).map(|n| n > 0).unwrap_or(false) {}
            let body = "Invalid or non-existent authentication information.";
            let _ = write!(
                stream,
                "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let mut cmd = p.cmd(&["release", "upload", "final", "--url", &refused_url]);
    cmd.env("UV_PUBLISH_TOKEN", "pypi-wrong-token");
    let err = stderr(&expect(&mut cmd, 1));
    assert!(err.contains("HTTP 403"), "{err}");
    assert!(!err.contains("pypi-wrong-token"), "{err}");
}

#[test]
fn concurrent_publishes_all_land_in_the_index() {
    let (_tmp, _remote, work) = remote_and_clone(RELEASE);
    let home = work.parent().unwrap().to_path_buf();
    let versions = [
        "3.14.0rc2026112501",
        "3.14.0rc2026112502",
        "3.14.0rc2026112503",
    ];
    for v in versions {
        let house = work.join(format!("wh-{v}"));
        synthetic_wheel(&house, "demo-synth", v);
        expect(
            &mut lockstep_in(&work, &home, &["pkg", "manifest", house.to_str().unwrap()]),
            0,
        );
    }
    let children: Vec<std::process::Child> = versions
        .iter()
        .map(|v| {
            lockstep_in(&work, &home, &["release", "publish", &format!("wh-{v}")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let page =
        std::fs::read_to_string(work.join("release/index/simple/demo-synth/index.html")).unwrap();
    for v in versions {
        assert!(
            page.contains(&format!("demo_synth-{v}-py3-none-any.whl")),
            "{v} missing:\n{page}"
        );
    }
}

#[test]
fn bad_release_settings_and_flags_are_usage_errors_that_write_nothing() {
    let (_tmp, remote, work) = remote_and_clone(RELEASE);
    let home = work.parent().unwrap().to_path_buf();
    let run = |config: &str, args: &[&str], envs: &[(&str, &str)], expected: &str| {
        write(&work.join("lockstep.toml"), config);
        let mut cmd = lockstep_in(&work, &home, args);
        cmd.envs(envs.iter().copied());
        let err = stderr(&expect(&mut cmd, 2));
        assert!(err.contains(expected), "{args:?} with {config:?}: {err}");
    };
    let base = "[release]\nname = \"demo\"\n";
    let cut = &["release", "cut"][..];
    run(base, cut, &[], "has no version-base or version-file");
    run(
        &format!("{base}version-file = \"missing.json\"\n"),
        cut,
        &[],
        "missing.json",
    );
    write(&work.join("v.json"), "{\"other\": 1}");
    run(
        &format!("{base}version-file = \"v.json\"\n"),
        cut,
        &[],
        "has no \"package-version\"",
    );
    write(&work.join("v.txt"), "not a version\n");
    run(
        &format!("{base}version-file = \"v.txt\"\n"),
        cut,
        &[],
        "is not a PEP 440 version",
    );
    run(
        RELEASE.replace("snapshot-{version}", "snapshot").as_str(),
        cut,
        &[],
        "has no {version}",
    );
    run(
        RELEASE
            .replace("snapshot-{version}", "snap shot-{version}")
            .as_str(),
        cut,
        &[],
        "not a tag name git accepts",
    );
    run(
        RELEASE,
        &["release", "cut", "--run-id", "a b"],
        &[],
        "is not a plain identifier",
    );
    run(
        RELEASE,
        cut,
        &[("LOCKSTEP_RELEASE_TODAY", "2026")],
        "is not YYYYMMDD",
    );
    run(
        &format!("{RELEASE}pin-files = [\"../outside.version\"]\n"),
        cut,
        &[],
        "is not inside the repository",
    );
    run(
        &RELEASE.replace(
            "name = \"demo\"",
            &format!("name = \"{}\"", "n".repeat(300)),
        ),
        cut,
        &[],
        "[release] name has 300 characters",
    );
    run(
        &format!("{RELEASE}snapshot = \"{{base}}rc{{date}}{{n:02}}\\n\"\n"),
        cut,
        &[],
        "[release] snapshot = \"{base}rc{date}{n:02}\\n\" holds whitespace",
    );
    run(
        &RELEASE.replace("snapshot-{version}", "refs/tags/{version}"),
        cut,
        &[],
        "starts with refs/",
    );
    for base in ["1.0.0rc1", "1.0.post1", "1!2.0", "1.0+local"] {
        run(
            &RELEASE.replace("3.14.0", base),
            cut,
            &[],
            "is not a plain release version",
        );
    }
    let passwd = "root:x:0:0:root:/root:/bin/bash\n".repeat(20);
    write(&work.join("passwd"), &passwd);
    write(&home.join("cfg"), "");
    let out = {
        write(
            &work.join("lockstep.toml"),
            "[release]\nname = \"demo\"\nversion-file = \"passwd\"\n",
        );
        expect(&mut lockstep_in(&work, &home, cut), 2)
    };
    assert!(
        stderr(&out).len() < 400 && stderr(&out).contains("root:x:0:0:root:/root"),
        "the file is quoted on one short line: {}",
        stderr(&out)
    );
    std::fs::remove_file(work.join("passwd")).unwrap();
    write(&work.join("lockstep.toml"), RELEASE);
    git(&work, &["remote", "remove", "origin"]);
    run(RELEASE, cut, &[], "this repository has no remote `origin`");
    git(
        &work,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    assert_eq!(git(&remote, &["tag", "-l"]), "", "a tag was pushed");

    run(
        RELEASE,
        &["release", "index", "--base-url", "ftp://host/x"],
        &[],
        "is not an http(s) or file URL",
    );
    run(RELEASE, &["release", "serve"], &[], "has no index yet");
    run(
        RELEASE,
        &["release", "yank", "../x", "--reason", "r"],
        &[],
        "is not a PEP 440 version",
    );
    // A URL git would read as an option is refused where the file says it.
    run(
        &format!("{RELEASE}upstream-url = \"--upload-pack=touch /tmp/x\"\n"),
        &["release", "bump"],
        &[],
        "upstream-url `--upload-pack=touch /tmp/x` starts with `-`",
    );
    run(
        RELEASE,
        &["release", "promote", "1.0rc1", "--to", "1.0+local"],
        &[],
        "is a local version",
    );
    // The final's tag and branch templates, named by their keys.
    run(
        &format!("{RELEASE}final-tag = \"final\"\n"),
        &["release", "promote", "1.0rc1", "--tag"],
        &[],
        "[release] final-tag = \"final\" has no {version}",
    );
    run(
        &format!("{RELEASE}branch = \"rel/{{major}}..x\"\n"),
        &["release", "promote", "1.0rc1", "--release-branch"],
        &[],
        "[release] branch = \"rel/{major}..x\" gives `rel/1..x`, not a branch name",
    );
    run(
        RELEASE,
        &["release", "promote", "1.0rc1", "--to", "0.9"],
        &[],
        "does not sort above",
    );
    // bump refuses a dirty tree first: commit the configuration under test.
    let pinned = format!("{RELEASE}pin-files = [\"p.version\"]\n");
    write(&work.join("lockstep.toml"), &pinned);
    commit_as_tester(&work, "bump config", true);
    run(
        &pinned,
        &["release", "bump"],
        &[],
        "cannot read the pin file p.version",
    );
    write(
        &work.join("p.version"),
        "0123456789abcdef0123456789abcdef01234567\n",
    );
    commit_as_tester(&work, "pin", true);
    run(
        &pinned,
        &["release", "bump"],
        &[],
        "[release] upstream-url is unset",
    );
    run("[integrate]\npin-file = \"../p.version\"\nupstream-url = \"https://example.invalid/u.git\"\n", &["integrate", "status"], &[], "[integrate] pin-file");
    assert!(
        !work.join("release").exists(),
        "something was written to the store"
    );
}

#[test]
fn unsafe_wheels_are_refused_and_killed_runs_leave_nothing_behind() {
    let p = fixture();
    let house = built(&p, "3.14.0rc1");
    p.run(&["release", "publish", house.to_str().unwrap()], 0);
    let index = p.path().join("release/index");
    let files = index.join("files");

    // A version written as installers accept it is the stored one.
    let out = p.run(&["release", "yank", "3.14.0RC1", "--reason", "case"], 0);
    assert!(
        stdout(&out).contains("yanked 3.14.0RC1"),
        "{}",
        stdout(&out)
    );
    assert!(
        std::fs::read_to_string(files.join("3.14.0rc1/release.json"))
            .unwrap()
            .contains("case")
    );

    // What killed runs left: a prune stopped before the index was rewritten
    // (the index still offers that version: put back), one stopped after (gone
    // from the index: finished), an index swap's staging directory.
    std::fs::rename(
        files.join("3.14.0rc1"),
        files.join(".3.14.0rc1.pruned-99999999"),
    )
    .unwrap();
    std::fs::create_dir_all(files.join(".9.9.9.pruned-99999999")).unwrap();
    std::fs::create_dir_all(index.join(".simple.tmp-99999999-0/x")).unwrap();
    p.run(&["release", "index"], 0);
    assert!(files.join("3.14.0rc1/release.json").is_file(), "put back");
    assert!(!files.join(".9.9.9.pruned-99999999").exists(), "finished");
    assert!(!index.join(".simple.tmp-99999999-0").exists(), "reclaimed");

    // Wheels with a member outside the tree, absolute or a symlink.
    for (member, why) in [
        ("../evil.txt", "climbs out of the directory"),
        ("/etc/evil.txt", "has an absolute path"),
        ("LINK", "is a symlink"),
    ] {
        let house = built(&p, "3.14.0rc2");
        let pure = walk(&house)
            .into_iter()
            .find(|f| {
                f.to_string_lossy().contains("demo_pure") && f.to_string_lossy().ends_with(".whl")
            })
            .unwrap();
        let script = "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1], 'a')\nname = sys.argv[2]\nif name == 'LINK':\n    i = zipfile.ZipInfo('demo_pure/link')\n    i.external_attr = 0o120777 << 16\n    z.writestr(i, '/etc/passwd')\nelse:\n    z.writestr(name, 'x')\nz.close()\n";
        let out = output(
            Command::new("python3")
                .args(["-c", script])
                .arg(&pure)
                .arg(member),
        );
        assert!(out.status.success(), "{}", stderr(&out));
        std::fs::remove_file(house.join("pylock.toml")).unwrap();
        std::fs::remove_file(house.join("pylock.release.toml")).ok();
        p.run(&["pkg", "manifest", house.to_str().unwrap()], 0);
        let err = stderr(&p.run(&["release", "publish", house.to_str().unwrap()], 1));
        assert!(err.contains(why), "{member}: {err}");
        assert!(!files.join("3.14.0rc2").exists(), "{member}: published");
        std::fs::remove_dir_all(&house).unwrap();
    }
}

#[test]
fn promote_refuses_a_candidate_cut_from_a_commit_marked_not_stable() {
    let p = fixture();
    // What `lockstep integrate mark --unstable` commits.
    p.write(
        ".lockstep/unstable",
        "# Not ok for a stable release\ncarries a revert of 1a2b3c4d5e6f (breaks our lowering)\n",
    );
    commit_as_tester(
        &p.path(),
        "Mark the project as not ok for a stable release",
        true,
    );
    let rc = "3.14.0rc2026112501";
    let house = built(&p, rc);
    p.run(&["release", "publish", house.to_str().unwrap()], 0);
    let err = stderr(&p.run(&["release", "promote", rc, "--to", "3.14.0"], 2));
    assert!(
        err.contains("marked not ok for a stable release")
            && err.contains("carries a revert of 1a2b3c4d5e6f (breaks our lowering)"),
        "{err}"
    );
    assert!(!p.path().join("release/index/files/3.14.0").exists());

    // Cleared on a later commit, a new candidate promotes.
    git(&p.path(), &["rm", "-q", ".lockstep/unstable"]);
    commit_as_tester(
        &p.path(),
        "Mark the project as ok for a stable release",
        false,
    );
    let rc2 = "3.14.0rc2026112502";
    let house = built(&p, rc2);
    p.run(&["release", "publish", house.to_str().unwrap()], 0);
    p.run(&["release", "promote", rc2, "--to", "3.14.0"], 0);
}

/// The fixture built for `python` alone into its own wheelhouse, as a CI
/// build job per Python does.
fn built_for(p: &Project, version: &str, python: &str) -> PathBuf {
    let out = format!("wh-{version}-py{python}");
    p.run(
        &[
            "pkg",
            "build",
            "--variant",
            "release",
            "--python",
            python,
            "--version",
            version,
            "--out",
            &out,
        ],
        0,
    );
    p.path().join(out)
}

#[test]
fn two_pythons_publish_as_one_version_validated_in_each_python() {
    let p = fixture();
    let v = "3.14.0rc2026112701";
    let h311 = built_for(&p, v, "3.11");
    let h312 = built_for(&p, v, "3.12");
    let index = p.path().join("release/index");

    // Each Python's wheelhouse is validated in a venv of that Python: the
    // cp311 set alone publishes whatever uv's default interpreter is.
    let out = p.run(
        &[
            "release",
            "publish",
            h311.to_str().unwrap(),
            h312.to_str().unwrap(),
            "--json",
        ],
        0,
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["version"], v);
    let added: Vec<String> = doc["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    for tag in ["cp311-cp311", "cp312-cp312"] {
        assert!(
            added
                .iter()
                .any(|f| f.contains("demo_cext") && f.contains(tag)),
            "{added:?}"
        );
    }
    // The pure wheel built in both wheelhouses is one file.
    assert_eq!(
        added.iter().filter(|f| f.contains("demo_pure")).count(),
        1,
        "{added:?}"
    );
    for python in ["3.11", "3.12"] {
        let py = bare_venv(python_of(python), &p.root().join(format!("venv-{python}")));
        let file_url = format!("file://{}/", index.join("simple").display());
        let out = pip_install(&py, &file_url, &[&format!("demo-cext=={v}")]);
        assert!(out.status.success(), "{python}: {}", stderr(&out));
        assert_eq!(installed(&py, "demo-cext"), v);
    }

    // Wheelhouses at two versions, or a pure wheel whose bytes differ
    // between them, publish nothing.
    let w = "3.14.0rc2026112702";
    let other = built_for(&p, w, "3.12");
    let err = stderr(&p.run(
        &[
            "release",
            "publish",
            h311.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
        2,
    ));
    assert!(err.contains("not at one version"), "{err}");
    assert!(err.contains(v) && err.contains(w), "{err}");
    assert!(!index.join("files").join(w).exists());

    let odd = p.root().join("wh-odd-pure");
    copy_dir(&built_for(&p, w, "3.11"), &odd);
    let pure = walk(&odd)
        .into_iter()
        .find(|f| {
            f.to_string_lossy().contains("demo_pure") && f.extension().is_some_and(|e| e == "whl")
        })
        .unwrap();
    // Same name, other bytes (a comment in the zip), the manifest rewritten.
    let script = "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1], 'a')\nz.comment = b'rebuilt'\nz.close()\n";
    expect(Command::new("python3").args(["-c", script]).arg(&pure), 0);
    p.run(&["pkg", "manifest", odd.to_str().unwrap()], 0);
    let err = stderr(&p.run(
        &[
            "release",
            "publish",
            odd.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
        2,
    ));
    assert!(
        err.contains("in two wheelhouses with different bytes"),
        "{err}"
    );
    assert!(!index.join("files").join(w).exists());

    // --manifest names one wheelhouse's manifest.
    let err = stderr(&p.run(
        &[
            "release",
            "publish",
            h311.to_str().unwrap(),
            h312.to_str().unwrap(),
            "--manifest",
            "x/pylock.toml",
        ],
        2,
    ));
    assert!(
        err.contains("--manifest names the manifest of one wheelhouse"),
        "{err}"
    );
}

#[test]
fn an_index_that_would_outgrow_pages_is_refused_naming_the_setting() {
    let p = Project::new();
    lockstep_sandbox::packages::create(
        &p.path(),
        "3.14.0",
        &format!("{RELEASE}pages-limit-mb = 0\n"),
    )
    .expect("fixture");
    let v = "3.14.0rc2026112705";
    let house = built(&p, v);
    let err = stderr(&p.run(&["release", "publish", house.to_str().unwrap()], 2));
    assert!(
        err.contains("over [release] pages-limit-mb = 0")
            && err.contains("hosting = \"github-releases\""),
        "{err}"
    );
    assert!(!p.path().join("release/index/files").join(v).exists());
}

#[test]
fn wheels_for_a_python_the_machine_lacks_are_named_and_nothing_is_published() {
    let (_tmp, _remote, work) = remote_and_clone(RELEASE);
    let home = work.parent().unwrap().to_path_buf();
    let v = "3.14.0rc2026112709";
    let house = work.join("wh-future");
    std::fs::create_dir_all(&house).unwrap();
    let script = r#"
import sys, zipfile
d, version = sys.argv[1:3]
info = f"demo_future-{version}.dist-info"
with zipfile.ZipFile(f"{d}/demo_future-{version}-cp399-cp399-linux_x86_64.whl", "w") as z:
    z.writestr("demo_future/__init__.py", "")
    z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: demo-future\nVersion: {version}\n\n")
    z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp399-cp399-linux_x86_64\n")
    z.writestr(f"{info}/RECORD", "")
"#;
    expect(
        Command::new("python3")
            .args(["-c", script])
            .arg(&house)
            .arg(v),
        0,
    );
    expect(
        &mut lockstep_in(&work, &home, &["pkg", "manifest", house.to_str().unwrap()]),
        0,
    );
    let err = stderr(&expect(
        &mut lockstep_in(
            &work,
            &home,
            &["release", "publish", house.to_str().unwrap()],
        ),
        2,
    ));
    assert!(
        err.contains("the set's wheels are for Python 3.99, which this machine lacks"),
        "{err}"
    );
    assert!(
        err.contains("Python 3.99 is not installed where lockstep looks"),
        "{err}"
    );
    assert!(!work.join("release/index/files").join(v).exists());
}

/// Every file under `dir` with its sha256 (the store's lock file left out:
/// it says who held the lock last).
fn tree(dir: &Path) -> std::collections::BTreeMap<String, String> {
    walk(dir)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != ".lock"))
        .map(|p| {
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            (rel, sha256_of(&p))
        })
        .collect()
}

#[test]
fn promote_checks_copy_to_before_anything_and_never_writes_through_a_link() {
    let p = fixture();
    let house = built(&p, "3.14.0rc1");
    p.run(&["release", "publish", house.to_str().unwrap()], 0);
    let index = p.path().join("release/index");
    let before = tree(&index);
    let file = p.write("a-file", "keep\n");
    for (dir, said) in [
        ("/dev/null", "not a directory"),
        (file.to_str().unwrap(), "not a directory"),
        ("/proc/self", "under /proc, not a directory for files"),
        ("release/index/files", "inside the release store"),
    ] {
        let err = stderr(&p.run(&["release", "promote", "3.14.0rc1", "--copy-to", dir], 2));
        assert!(err.contains("--copy-to"), "{dir}: {err}");
        assert!(err.contains(said), "{dir}: {err}");
        assert!(err.contains("nothing was promoted"), "{dir}: {err}");
        assert_eq!(tree(&index), before, "{dir}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep\n");
    // A link already in DIR under a final file's name: refused, its target
    // untouched, the store as it was.
    let out = p.path().join("final");
    std::fs::create_dir_all(&out).unwrap();
    let victim = p.write("victim.txt", "victim\n");
    std::os::unix::fs::symlink(&victim, out.join("demo_pure-3.14.0-py3-none-any.whl")).unwrap();
    let err = stderr(&p.run(
        &["release", "promote", "3.14.0rc1", "--copy-to", "final"],
        2,
    ));
    assert!(err.contains("is a link, not this final's file"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "victim\n");
    assert_eq!(tree(&index), before);
    std::fs::remove_file(out.join("demo_pure-3.14.0-py3-none-any.whl")).unwrap();
    p.run(
        &["release", "promote", "3.14.0rc1", "--copy-to", "final"],
        0,
    );
    assert!(out.join("demo_pure-3.14.0-py3-none-any.whl").is_file());
    // A rerun finds the same files there and keeps them.
    p.run(
        &["release", "promote", "3.14.0rc1", "--copy-to", "final"],
        0,
    );
}

/// An upload endpoint that answers every request with `status` and a body
/// repeating the credentials it was sent (decoded), as careless servers
/// do. Returns its URL.
fn echoing_index(status: u16) -> String {
    use base64::Engine;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let Ok(request) = lockstep_sandbox::github::read_request(&stream) else {
                continue;
            };
            let auth = request
                .header("authorization")
                .unwrap_or("none")
                .to_string();
            let decoded = auth
                .strip_prefix("Basic ")
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let body = format!(
                "you sent {auth} (Basic {decoded}); token {}",
                decoded.split(':').nth(1).unwrap_or("")
            );
            let _ =
                lockstep_sandbox::github::write_response(&mut stream, status, &[], body.as_bytes());
        }
    });
    format!("http://127.0.0.1:{port}/legacy/")
}

#[test]
fn upload_credentials_never_travel_in_clear_nor_stay_in_output_or_logs() {
    let p = fixture();
    let dist = p.path().join("dist");
    synthetic_wheel(&dist, "demo-pure", "3.14.0");
    const PASSWORD: &str = "s3cret-Passw0rd";
    const TOKEN: &str = "pypi-AgEIcHlwaS5vcmcCJGZha2U";
    for (status, vars) in [
        (
            403,
            vec![("TWINE_USERNAME", "alice"), ("TWINE_PASSWORD", PASSWORD)],
        ),
        (400, vec![("UV_PUBLISH_TOKEN", TOKEN)]),
        (500, vec![("UV_PUBLISH_TOKEN", TOKEN)]),
    ] {
        let url = echoing_index(status);
        let mut cmd = p.cmd(&["release", "upload", "dist", "--url", &url]);
        for (k, v) in &vars {
            cmd.env(k, v);
        }
        let out = expect(&mut cmd, 1);
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert!(
            said.contains("you sent"),
            "{status}: the server's answer is shown: {said}"
        );
        for secret in [PASSWORD, TOKEN, "YWxpY2U6czNjcmV0LVBhc3N3MHJk"] {
            assert!(!said.contains(secret), "{status}: {secret} in {said}");
            for file in walk(&p.home()) {
                let bytes = std::fs::read(&file).unwrap_or_default();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains(secret),
                    "{status}: {secret} kept in {}",
                    file.display()
                );
            }
        }
    }
    // Plain http to another machine with credentials: refused before
    // anything (promote's --upload too, with the store untouched).
    for url in [
        "http://10.11.12.13/legacy/",
        "http://alice:pw@10.11.12.13/legacy/",
    ] {
        let mut cmd = p.cmd(&["release", "upload", "dist", "--url", url]);
        cmd.env("TWINE_PASSWORD", PASSWORD);
        let err = stderr(&expect(&mut cmd, 2));
        assert!(
            err.contains("plain http:// is only used to this machine"),
            "{err}"
        );
        assert!(!err.contains(PASSWORD) && !err.contains(":pw@"), "{err}");
    }
    let house = built(&p, "3.14.0rc1");
    p.run(&["release", "publish", house.to_str().unwrap()], 0);
    let index = p.path().join("release/index");
    let before = tree(&index);
    let mut cmd = p.cmd(&[
        "release",
        "promote",
        "3.14.0rc1",
        "--upload",
        "http://10.11.12.13/legacy/",
    ]);
    cmd.env("TWINE_PASSWORD", PASSWORD);
    let err = stderr(&expect(&mut cmd, 2));
    assert!(
        err.contains("plain http:// is only used to this machine"),
        "{err}"
    );
    assert_eq!(tree(&index), before);
}

#[test]
fn a_killed_store_write_is_rolled_back_by_the_next_writer() {
    let p = fixture();
    let house = built(&p, "3.14.0rc1");
    p.run(&["release", "publish", house.to_str().unwrap()], 0);
    let index = p.path().join("release/index");
    let before = tree(&index);
    // What a writer killed between two swaps leaves: rc1's directory moved
    // aside, a new one in its place, a new version added, the journal.
    let files = index.join("files");
    let dead = 99999999;
    std::fs::rename(
        files.join("3.14.0rc1"),
        files.join(format!(".3.14.0rc1.old-{dead}-0")),
    )
    .unwrap();
    std::fs::create_dir_all(files.join("3.14.0rc1")).unwrap();
    std::fs::write(files.join("3.14.0rc1/release.json"), "{}").unwrap();
    std::fs::create_dir_all(files.join("3.14.0rc9")).unwrap();
    std::fs::create_dir_all(files.join(format!(".3.14.0rc5.tmp-{dead}-3"))).unwrap();
    let journal = serde_json::json!([
        {"dest": "files/3.14.0rc1", "aside": format!("files/.3.14.0rc1.old-{dead}-0"), "had_old": true},
        {"dest": "files/3.14.0rc9", "aside": format!("files/.3.14.0rc9.old-{dead}-1"), "had_old": false},
        {"dest": "simple", "aside": format!(".simple.old-{dead}-2"), "had_old": true},
    ]);
    std::fs::write(files.join(format!(".txn-{dead}.json")), journal.to_string()).unwrap();
    p.run(
        &[
            "release",
            "yank",
            "3.14.0rc1",
            "--reason",
            "after the crash",
        ],
        0,
    );
    let after = tree(&index);
    assert!(
        !after.keys().any(|k| k.contains("rc9")
            || k.contains(".txn-")
            || k.contains(".tmp-")
            || k.contains(".old-")),
        "{after:?}"
    );
    let record = std::fs::read_to_string(files.join("3.14.0rc1/release.json")).unwrap();
    assert!(record.contains("after the crash"), "{record}");
    // Everything else is what the publish wrote.
    for (path, sha) in &before {
        if !path.ends_with("release.json") && !path.starts_with("simple") && path != "links.html" {
            assert_eq!(after.get(path), Some(sha), "{path}");
        }
    }
}

#[test]
fn bump_moves_a_pattern_pin_and_its_checksum_from_integrate_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let upstream = tmp.path().join("upstream");
    std::fs::create_dir_all(&upstream).unwrap();
    git(&upstream, &["init", "-q", "-b", "main"]);
    let mut shas = Vec::new();
    for n in 1..=2 {
        write(&upstream.join("f.txt"), &n.to_string());
        git(&upstream, &["add", "."]);
        commit_as_tester(&upstream, &format!("u{n}"), false);
        shas.push(git(&upstream, &["rev-parse", "HEAD"]).trim().to_string());
    }
    // The archive host: each commit's archive, its checksum what the file records.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let Ok(request) = lockstep_sandbox::github::read_request(&stream) else {
                continue;
            };
            let body = format!("archive of {}", request.target);
            let _ =
                lockstep_sandbox::github::write_response(&mut stream, 200, &[], body.as_bytes());
        }
    });
    let sum = |commit: &str| {
        lockstep_core::hash::sha256_bytes(format!("archive of /archive/{commit}.tar.gz").as_bytes())
    };
    let bzl = |commit: &str| {
        format!(
            "# LLVM, pinned by lockstep\ndef repo():\n    LLVM_COMMIT = \"{commit}\"\n    LLVM_SHA256 = \"{}\"\n    # keep this line\n",
            sum(commit)
        )
    };
    let work = tmp.path().join("work");
    std::fs::create_dir_all(work.join("third_party/llvm")).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    // No [release] pin-files and no [release] upstream-url: [integrate] names both.
    write(
        &work.join("lockstep.toml"),
        &format!(
            "{RELEASE}\n[integrate]\nupstream-url = \"{}\"\npin = {{ file = \"third_party/llvm/workspace.bzl\", pattern = 'LLVM_COMMIT = \"([0-9a-f]{{40}})\"', sha256 = {{ pattern = 'LLVM_SHA256 = \"([0-9a-f]{{64}})\"', archive = \"{host}/archive/{{commit}}.tar.gz\" }} }}\n",
            upstream.display()
        ),
    );
    write(&work.join("third_party/llvm/workspace.bzl"), &bzl(&shas[0]));
    git(&work, &["add", "."]);
    commit_as_tester(&work, "init", false);
    let out = expect(
        &mut lockstep_in(&work, tmp.path(), &["release", "bump", "--json"]),
        0,
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["to"], shas[1].as_str(), "{doc}");
    assert_eq!(
        doc["changed"],
        serde_json::json!(["third_party/llvm/workspace.bzl"])
    );
    // One commit, that file alone, every other byte kept, the checksum moved.
    assert_eq!(
        std::fs::read_to_string(work.join("third_party/llvm/workspace.bzl")).unwrap(),
        bzl(&shas[1])
    );
    let changed = git(&work, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(changed.trim(), "third_party/llvm/workspace.bzl");
    assert!(is_clean(&work));
    // release cut records the pin at the new commit.
    let cut_pins = git(&work, &["show", "HEAD:third_party/llvm/workspace.bzl"]);
    assert!(cut_pins.contains(&shas[1]));
}
