//! `lockstep release publish --github-release` against the loopback GitHub
//! (lockstep-sandbox's `FakeGithub`: release by tag, create release, asset
//! uploads on a separate `upload_url`, 422 `already_exists`).

use crate::common::*;
use lockstep_testkit::github::FakeGithub;

const TOKEN: &str = "ghp_release_token_never_printed";

/// `release publish` of the wheelhouse with its GitHub Release, as JSON.
const PUBLISH_JSON: [&str; 5] = [
    "wh",
    "--tag",
    "demo-3.14.0rc1",
    "--github-release",
    "--json",
];

fn publish(
    p: &Project,
    github: &FakeGithub,
    args: &[&str],
    token: bool,
    code: i32,
) -> std::process::Output {
    publish_to(p, &github.url(), args, token, code)
}

/// [`publish`] with `GITHUB_API_URL` = `api`.
fn publish_to(
    p: &Project,
    api: &str,
    args: &[&str],
    token: bool,
    code: i32,
) -> std::process::Output {
    let mut all = vec!["release", "publish"];
    all.extend_from_slice(args);
    let mut cmd = p.cmd(&all);
    cmd.env("GITHUB_API_URL", api)
        .env("GITHUB_REPOSITORY", "o/r");
    if token {
        cmd.env("GITHUB_TOKEN", TOKEN);
    }
    let out = expect(&mut cmd, code);
    assert!(!stdout(&out).contains(TOKEN) && !stderr(&out).contains(TOKEN));
    out
}

/// A Python project with `[release]` whose wheelhouse `wh` holds
/// 3.14.0rc1's release variant, built.
fn built_project() -> Project {
    let p = Project::new();
    lockstep_sandbox::packages::create(
        &p.path(),
        "3.14.0",
        "\n[release]\nname = \"demo\"\nversion-base = \"3.14.0\"\n",
    )
    .expect("fixture");
    p.run(
        &[
            "pkg",
            "build",
            "--variant",
            "release",
            "--version",
            "3.14.0rc1",
            "--out",
            "wh",
        ],
        0,
    );
    p
}

/// How many entries `publish --json`'s `github_release.KEY` lists (`None`
/// when it is not a list).
fn listed(report: &serde_json::Value, key: &str) -> Option<usize> {
    report["github_release"][key].as_array().map(Vec::len)
}

#[test]
fn publish_creates_and_completes_the_github_release_with_checksums() {
    let p = built_project();
    let github = FakeGithub::start("o/r", TOKEN).expect("loopback GitHub");
    let index_files = p.path().join("release/index/files/3.14.0rc1");

    // Checked before anything is published: a tag name git could not
    // hold, one markup would break, a tag the repository lacks (GitHub
    // would tag the default branch).
    for bad in ["", "a b", "../../x", "<script>", "v1\n", "demo-9.9.9"] {
        let out = publish(
            &p,
            &github,
            &["wh", "--tag", bad, "--github-release"],
            true,
            2,
        );
        let err = stderr(&out);
        assert!(
            err.contains("--tag") || err.contains("no tag"),
            "{bad:?}: {err}"
        );
        assert!(
            err.contains("nothing was published") || err.contains("Nothing was published"),
            "{err}"
        );
        if bad == "demo-9.9.9" {
            continue; // without a GitHub Release, a warning (docs/release.md)
        }
        let out = publish(&p, &github, &["wh", "--tag", bad], true, 2);
        assert!(
            stderr(&out).contains("is not a tag name"),
            "{}",
            stderr(&out)
        );
    }
    assert!(!index_files.exists());
    assert!(github.requests().is_empty());
    git(&p.path(), &["tag", "demo-3.14.0rc1"]);

    // No token, no tag.
    let out = publish(
        &p,
        &github,
        &["wh", "--tag", "demo-3.14.0rc1", "--github-release"],
        false,
        2,
    );
    assert!(stderr(&out).contains("needs a token"), "{}", stderr(&out));
    let out = publish(&p, &github, &["wh", "--github-release"], true, 2);
    assert!(stderr(&out).contains("needs --tag"), "{}", stderr(&out));
    assert!(!index_files.exists());
    assert!(github.requests().is_empty());

    let out = publish(&p, &github, &PUBLISH_JSON, true, 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let g = &report["github_release"];
    assert_eq!(g["created"], true, "{report}");
    assert_eq!(listed(&report, "uploaded"), Some(3), "{report}");
    {
        let releases = github.releases();
        let release = releases
            .iter()
            .find(|r| r.tag == "demo-3.14.0rc1")
            .expect("the release");
        let assets = &release.assets;
        assert!(release.prerelease, "no channel recorded: a prerelease");
        let sums = String::from_utf8(assets["SHA256SUMS"].clone()).expect("text");
        for (name, bytes) in assets.iter().filter(|(n, _)| n.ends_with(".whl")) {
            let on_disk = std::fs::read(index_files.join(name)).expect("stored wheel");
            assert_eq!(&on_disk, bytes, "{name}");
            assert!(
                sums.contains(&format!("{}  {name}\n", sha256_of(&index_files.join(name)))),
                "{sums}"
            );
        }
        assert!(
            github.requests().iter().all(|r| r.authorised),
            "every request carried the token"
        );
    }

    // A rerun uploads nothing again.
    let out = publish(&p, &github, &PUBLISH_JSON, true, 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["github_release"]["created"], false, "{report}");
    assert_eq!(listed(&report, "uploaded"), Some(0));
    assert_eq!(listed(&report, "already_there"), Some(3));

    // A server that echoes the token in every field: it is printed nowhere
    // (`publish` checks stdout and stderr) and stored nowhere.
    github.echo_token();
    let out = publish(&p, &github, &PUBLISH_JSON, true, 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let url = report["github_release"]["url"].as_str().unwrap_or_default();
    assert!(url.contains("<token>") && !url.contains(TOKEN), "{report}");
    for file in walk(&p.path().join("release")) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
            "{} holds the token",
            file.display()
        );
    }
}

/// `release sync --from-github` against the loopback GitHub.
fn sync(p: &Project, github: &FakeGithub, code: i32) -> std::process::Output {
    let mut cmd = p.cmd(&["release", "sync", "--from-github", "--json"]);
    cmd.env("GITHUB_API_URL", github.url())
        .env("GITHUB_REPOSITORY", "o/r")
        .env("GITHUB_TOKEN", TOKEN);
    expect(&mut cmd, code)
}

#[test]
fn hosted_on_github_releases_the_index_links_assets_and_sync_rebuilds_an_evicted_store() {
    let p = Project::new();
    lockstep_sandbox::packages::create(
        &p.path(),
        "3.14.0",
        "\n[release]\nname = \"demo\"\nversion-base = \"3.14.0\"\nhosting = \"github-releases\"\nkeep = { snapshots = 2 }\n",
    )
    .expect("fixture");
    let github = FakeGithub::start("o/r", TOKEN).expect("loopback GitHub");
    let index = p.path().join("release/index");
    let versions = ["3.14.0rc1", "3.14.0rc2", "3.14.0rc3"];
    for v in versions {
        let out = format!("wh-{v}");
        p.run(
            &[
                "pkg",
                "build",
                "--variant",
                "release",
                "--version",
                v,
                "--out",
                &out,
            ],
            0,
        );
        git(&p.path(), &["tag", &format!("demo-{v}")]);
    }

    // Hosted on GitHub, a publish without its Release is refused first.
    let out = publish(
        &p,
        &github,
        &["wh-3.14.0rc1", "--tag", "demo-3.14.0rc1"],
        true,
        2,
    );
    assert!(
        stderr(&out).contains("needs --github-release"),
        "{}",
        stderr(&out)
    );
    assert!(!index.join("files").exists());

    for v in versions {
        let tag = format!("demo-{v}");
        let house = format!("wh-{v}");
        publish(
            &p,
            &github,
            &[&house, "--tag", &tag, "--github-release"],
            true,
            0,
        );
        // The store keeps the record and the core metadata, not the files.
        let kept: Vec<String> = std::fs::read_dir(index.join("files").join(v))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            kept.iter()
                .all(|n| n == "release.json" || n.ends_with(".metadata")),
            "{kept:?}"
        );
        let release = github
            .releases()
            .into_iter()
            .find(|r| r.tag == tag)
            .expect("release");
        let assets: Vec<&String> = release.assets.keys().collect();
        assert!(
            assets.iter().any(|n| n.ends_with(".whl.metadata")),
            "{assets:?}"
        );
        assert!(release.assets.contains_key("release.json"), "{assets:?}");
    }
    let page = std::fs::read_to_string(index.join("simple/demo-pure/index.html")).unwrap();
    assert!(
        page.contains(&format!("href=\"{}/o/r/releases/download/demo-3.14.0rc1/demo_pure-3.14.0rc1-py3-none-any.whl#sha256=", github.url())),
        "{page}"
    );
    assert!(page.contains("data-core-metadata=\"sha256="), "{page}");
    let json_page = std::fs::read_to_string(index.join("simple/demo-pure/index.json")).unwrap();

    // pip installs from the pages, the files coming from the Release (and
    // the core metadata beside them).
    let served = Served::start(&p);
    let venv = p.root().join("pip-venv");
    let python = bare_venv("python3", &venv);
    expect(
        pip_into(&python)
            .args(["install", "--quiet"])
            .args([
                "--index-url",
                &served.url(),
                "demo-cext==3.14.0rc3",
                "demo-pure==3.14.0rc3",
            ])
            .env_remove("PIP_FIND_LINKS")
            .env("NO_PROXY", "127.0.0.1,localhost"),
        0,
    );
    let log = served.stop();
    assert!(log.contains("GET /simple/demo-cext/"), "{log}");
    let downloads: Vec<String> = github
        .requests()
        .into_iter()
        .filter(|r| r.target.contains("/releases/download/demo-3.14.0rc3/"))
        .map(|r| r.target)
        .collect();
    assert!(
        downloads.iter().any(|t| t.ends_with(".whl")),
        "{downloads:?}"
    );

    // The Actions cache evicted: the store comes back from the Releases.
    std::fs::remove_dir_all(&index).unwrap();
    let out = sync(&p, &github, 0);
    let synced: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(synced["restored"], serde_json::json!(versions), "{synced}");
    assert_eq!(
        std::fs::read_to_string(index.join("simple/demo-pure/index.html")).unwrap(),
        page
    );
    let json_again = std::fs::read_to_string(index.join("simple/demo-pure/index.json")).unwrap();
    assert_eq!(json_again, json_page);
    let out = sync(&p, &github, 0);
    let synced: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        synced["already_there"],
        serde_json::json!(versions),
        "{synced}"
    );

    // Retention: the oldest snapshot leaves the store, the index and GitHub.
    let mut cmd = p.cmd(&["release", "prune", "--json"]);
    cmd.env("GITHUB_API_URL", github.url())
        .env("GITHUB_REPOSITORY", "o/r")
        .env("GITHUB_TOKEN", TOKEN);
    let pruned: serde_json::Value =
        serde_json::from_slice(&expect(&mut cmd, 0).stdout).expect("JSON");
    assert_eq!(
        pruned["removed"],
        serde_json::json!(["3.14.0rc1"]),
        "{pruned}"
    );
    assert_eq!(
        pruned["releases_deleted"],
        serde_json::json!(["demo-3.14.0rc1"]),
        "{pruned}"
    );
    assert!(github.releases().iter().all(|r| r.tag != "demo-3.14.0rc1"));
    let page = std::fs::read_to_string(index.join("simple/demo-pure/index.html")).unwrap();
    assert!(
        !page.contains("3.14.0rc1") && page.contains("3.14.0rc3"),
        "{page}"
    );
    let synced: serde_json::Value =
        serde_json::from_slice(&sync(&p, &github, 0).stdout).expect("JSON");
    assert_eq!(
        synced["already_there"],
        serde_json::json!(versions[1..]),
        "{synced}"
    );

    // The store and the Releases disagree: a record whose files differ
    // from its Release's, then a hosted version no Release holds.
    let record_path = index.join("files/3.14.0rc3/release.json");
    let original = std::fs::read_to_string(&record_path).unwrap();
    let mut record: serde_json::Value = serde_json::from_str(&original).unwrap();
    record["files"][0]["sha256"] = serde_json::json!("0".repeat(64));
    std::fs::write(&record_path, record.to_string()).unwrap();
    let err = stderr(&sync(&p, &github, 1));
    assert!(
        err.contains("the store and the GitHub Release disagree about 3.14.0rc3"),
        "{err}"
    );
    std::fs::write(&record_path, &original).unwrap();
    let orphan = index.join("files/3.14.0rc9");
    std::fs::create_dir_all(&orphan).unwrap();
    let mut record: serde_json::Value = serde_json::from_str(&original).unwrap();
    record["version"] = serde_json::json!("3.14.0rc9");
    std::fs::write(orphan.join("release.json"), record.to_string()).unwrap();
    let err = stderr(&sync(&p, &github, 1));
    assert!(
        err.contains("the store lists 3.14.0rc9, hosted on GitHub, but no GitHub Release holds it"),
        "{err}"
    );
    std::fs::remove_dir_all(&orphan).unwrap();

    // A Release whose wheel a person deleted: named, the store unchanged.
    assert!(github.delete_asset("demo-3.14.0rc2", "demo_pure-3.14.0rc2-py3-none-any.whl"));
    std::fs::remove_dir_all(index.join("files/3.14.0rc2")).unwrap();
    let before = walk(&index);
    let err = stderr(&sync(&p, &github, 1));
    assert!(
        err.contains(
            "the GitHub Release demo-3.14.0rc2 lacks demo_pure-3.14.0rc2-py3-none-any.whl"
        ),
        "{err}"
    );
    assert!(err.contains("nothing was changed"), "{err}");
    assert!(!index.join("files/3.14.0rc2").exists());
    assert_eq!(walk(&index), before);
}

#[test]
fn a_final_is_promoted_tagged_released_and_branched_from_a_hosted_candidate() {
    let p = Project::new();
    lockstep_sandbox::packages::create(
        &p.path(),
        "3.14.0",
        "\n[release]\nname = \"demo\"\nversion-base = \"3.14.0\"\nhosting = \"github-releases\"\n",
    )
    .expect("fixture");
    let github = FakeGithub::start("o/r", TOKEN).expect("loopback GitHub");
    let origin = p.root().join("origin.git");
    git(
        p.root(),
        &["init", "-q", "--bare", origin.to_str().unwrap()],
    );
    git(
        &p.path(),
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    git(&p.path(), &["push", "-q", "origin", "HEAD:refs/heads/main"]);
    let head = git(&p.path(), &["rev-parse", "HEAD"]).trim().to_string();
    let index = p.path().join("release/index");
    for v in ["3.14.0rc1", "3.14.0rc2"] {
        let out = format!("wh-{v}");
        p.run(
            &[
                "pkg",
                "build",
                "--variant",
                "release",
                "--version",
                v,
                "--out",
                &out,
            ],
            0,
        );
        git(&p.path(), &["tag", &format!("demo-{v}")]);
        publish(
            &p,
            &github,
            &[&out, "--tag", &format!("demo-{v}"), "--github-release"],
            true,
            0,
        );
    }
    let promote = |args: &[&str], code: i32| {
        let mut all = vec!["release", "promote"];
        all.extend_from_slice(args);
        let mut cmd = p.cmd(&all);
        cmd.env("GITHUB_API_URL", github.url())
            .env("GITHUB_REPOSITORY", "o/r")
            .env("GITHUB_TOKEN", TOKEN);
        expect(&mut cmd, code)
    };

    // Refused before anything: unknown, yanked, hosted without a Release.
    let err = stderr(&promote(&["3.14.0rc9", "--github-release"], 2));
    assert!(
        err.contains("3.14.0rc9 is not a published version"),
        "{err}"
    );
    p.run(
        &["release", "yank", "3.14.0rc2", "--reason", "broken runtime"],
        0,
    );
    let err = stderr(&promote(&["3.14.0rc2", "--github-release"], 2));
    assert!(err.contains("3.14.0rc2 is yanked: broken runtime"), "{err}");
    let err = stderr(&promote(&["3.14.0rc1"], 2));
    assert!(err.contains("promote needs --github-release"), "{err}");
    assert!(!index.join("files/3.14.0").exists());

    let args = [
        "3.14.0rc1",
        "--github-release",
        "--release-branch",
        "--copy-to",
        "final",
        "--json",
    ];
    let shipped: serde_json::Value =
        serde_json::from_slice(&promote(&args, 0).stdout).expect("JSON");
    assert_eq!(shipped["to"], "3.14.0", "{shipped}");
    assert_eq!(shipped["tag"], "v3.14.0");
    assert_eq!(shipped["tag_outcome"], "created");
    assert_eq!(shipped["branch"], "release/3.14");
    assert_eq!(shipped["branch_outcome"], "created");
    // The tag and the branch at the candidate's commit, on origin.
    let tag_at = git(&origin, &["rev-parse", "v3.14.0^{commit}"]);
    assert_eq!(tag_at.trim(), head);
    assert_eq!(git(&origin, &["rev-parse", "release/3.14"]).trim(), head);
    // A GitHub Release that is not a prerelease, with the final files.
    let release = github
        .releases()
        .into_iter()
        .find(|r| r.tag == "v3.14.0")
        .expect("the final's Release");
    assert!(!release.prerelease);
    let finals: Vec<String> = std::fs::read_dir(p.path().join("final"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        finals.iter().any(|f| f.starts_with("demo_pure-3.14.0-")),
        "{finals:?}"
    );
    for file in &finals {
        assert!(
            release.assets.contains_key(file),
            "{file} not on the Release"
        );
    }
    // The index links the final's assets; the store keeps records only.
    let page = std::fs::read_to_string(index.join("simple/demo-pure/index.html")).unwrap();
    assert!(
        page.contains("/releases/download/v3.14.0/demo_pure-3.14.0-py3-none-any.whl#sha256="),
        "{page}"
    );
    for v in ["3.14.0", "3.14.0rc1"] {
        let kept: Vec<String> = std::fs::read_dir(index.join("files").join(v))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            kept.iter()
                .all(|n| n == "release.json" || n.ends_with(".metadata")),
            "{v}: {kept:?}"
        );
    }

    // A rerun completes nothing new and moves nothing.
    let again: serde_json::Value = serde_json::from_slice(&promote(&args, 0).stdout).expect("JSON");
    assert_eq!(again["tag_outcome"], "already-there", "{again}");
    assert_eq!(again["branch_outcome"], "already-there");
    assert_eq!(listed(&again, "uploaded"), Some(0), "{again}");

    // A final tag already at another commit is refused before anything is
    // written.
    write(&p.path().join("NOTES.md"), "later\n");
    commit_as_tester(&p.path(), "Later", true);
    git(&p.path(), &["tag", "v3.14.5"]);
    git(&p.path(), &["push", "-q", "origin", "v3.14.5"]);
    let err = stderr(&promote(
        &["3.14.0rc1", "--to", "3.14.5", "--github-release"],
        2,
    ));
    assert!(err.contains("tag v3.14.5 exists on `origin` at"), "{err}");
    assert!(!index.join("files/3.14.5").exists());
}

/// Every file under `dir` with its sha256 (a link as `-> TARGET`): what a
/// failed command must leave exactly as it was. The store's lock file says
/// who held the lock last, not what the store holds: left out.
fn snapshot(dir: &std::path::Path) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let kind = entry.file_type().unwrap();
            if rel == ".lock" {
                continue;
            }
            if kind.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(rel, format!("-> {}", target.display()));
            } else if kind.is_dir() {
                out.insert(format!("{rel}/"), String::new());
                pending.push(path);
            } else {
                out.insert(rel, sha256_of(&path));
            }
        }
    }
    out
}

/// A project hosted on GitHub Releases with `versions` built and tagged
/// (not published).
fn hosted_project(versions: &[&str], keep: &str) -> Project {
    let p = Project::new();
    lockstep_sandbox::packages::create(
        &p.path(),
        "3.14.0",
        &format!("\n[release]\nname = \"demo\"\nversion-base = \"3.14.0\"\nhosting = \"github-releases\"\n{keep}"),
    )
    .expect("fixture");
    for v in versions {
        let out = format!("wh-{v}");
        p.run(
            &[
                "pkg",
                "build",
                "--variant",
                "release",
                "--version",
                v,
                "--out",
                &out,
            ],
            0,
        );
        git(&p.path(), &["tag", &format!("demo-{v}")]);
    }
    p
}

#[test]
fn a_tag_names_one_version_and_prune_deletes_only_releases_that_prove_they_are_its() {
    let versions = ["3.14.0rc1", "3.14.0rc2", "3.14.0rc3"];
    let p = hosted_project(&versions, "keep = { snapshots = 2 }\n");
    let github = FakeGithub::start("o/r", TOKEN).expect("loopback GitHub");
    let index = p.path().join("release/index");
    for v in &versions[..2] {
        let (house, tag) = (format!("wh-{v}"), format!("demo-{v}"));
        publish(
            &p,
            &github,
            &[&house, "--tag", &tag, "--github-release"],
            true,
            0,
        );
    }
    // A second version on a tag that names one already: refused before
    // anything (a prune of one would delete the other's files).
    let before = snapshot(&index);
    let requests = github.requests().len();
    let out = publish(
        &p,
        &github,
        &[
            "wh-3.14.0rc3",
            "--tag",
            "demo-3.14.0rc1",
            "--github-release",
        ],
        true,
        2,
    );
    let err = stderr(&out);
    assert!(
        err.contains(
            "tag demo-3.14.0rc1 already names 3.14.0rc1 in the release store, not 3.14.0rc3"
        ),
        "{err}"
    );
    assert_eq!(snapshot(&index), before);
    assert_eq!(github.requests().len(), requests, "nothing sent to GitHub");
    publish(
        &p,
        &github,
        &[
            "wh-3.14.0rc3",
            "--tag",
            "demo-3.14.0rc3",
            "--github-release",
        ],
        true,
        0,
    );

    // A store record whose tag names another version's Release (edited, or
    // synced from a Release that lied in an earlier lockstep): the pruned
    // version leaves the store, but the Release it names is not its own and
    // stays, named.
    let record_path = index.join("files/3.14.0rc1/release.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record_path).unwrap()).unwrap();
    record["tag"] = serde_json::json!("demo-3.14.0rc3");
    std::fs::write(&record_path, record.to_string()).unwrap();
    let mut cmd = p.cmd(&["release", "prune", "--json"]);
    cmd.env("GITHUB_API_URL", github.url())
        .env("GITHUB_REPOSITORY", "o/r")
        .env("GITHUB_TOKEN", TOKEN);
    let pruned: serde_json::Value =
        serde_json::from_slice(&expect(&mut cmd, 0).stdout).expect("JSON");
    assert_eq!(
        pruned["removed"],
        serde_json::json!(["3.14.0rc1"]),
        "{pruned}"
    );
    assert!(pruned.get("releases_deleted").is_none(), "{pruned}");
    assert_eq!(
        pruned["releases_left"][0]["tag"], "demo-3.14.0rc3",
        "{pruned}"
    );
    let why = pruned["releases_left"][0]["why"]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("its release.json names 3.14.0rc3"), "{why}");
    let tags: Vec<String> = github.releases().into_iter().map(|r| r.tag).collect();
    assert!(tags.contains(&"demo-3.14.0rc3".to_string()), "{tags:?}");
    assert!(tags.contains(&"demo-3.14.0rc1".to_string()), "{tags:?}");
}

/// A change to a release record.
type Edit = Box<dyn Fn(&mut serde_json::Value)>;
/// A scripted answer: status, headers, body.
type Answer<'a> = (u16, Vec<(&'a str, &'a str)>, String);

#[test]
fn sync_refuses_every_record_it_cannot_prove_and_changes_nothing() {
    let p = hosted_project(&["3.14.0rc1"], "");
    let github = FakeGithub::start("o/r", TOKEN).expect("loopback GitHub");
    let index = p.path().join("release/index");
    publish(
        &p,
        &github,
        &[
            "wh-3.14.0rc1",
            "--tag",
            "demo-3.14.0rc1",
            "--github-release",
        ],
        true,
        0,
    );
    let good: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(index.join("files/3.14.0rc1/release.json")).unwrap(),
    )
    .unwrap();
    let wheel = good["files"][0]["filename"].as_str().unwrap().to_string();
    let wheel_bytes = github.releases()[0].assets[&wheel].clone();
    let base = format!("{}/o/r/releases/download/foreign/", github.url());
    let other_tag_base = base.replace("/foreign/", "/demo-3.14.0rc1/");
    // A Release of another tag whose release.json is lockstep's shape, each
    // time with one thing it cannot prove.
    let foreign = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut record = good.clone();
        record["version"] = serde_json::json!("3.14.0rc7");
        record["tag"] = serde_json::json!("foreign");
        record["hosted"] = serde_json::json!(base);
        edit(&mut record);
        record.to_string().into_bytes()
    };
    github.add_release(
        "foreign",
        true,
        vec![
            (wheel.clone(), wheel_bytes.clone()),
            ("release.json".into(), foreign(&|_| {})),
        ],
    );
    let before = snapshot(&index);
    let cases: Vec<(&str, Edit)> = vec![
        (
            "not a PEP 440 version in normal form",
            Box::new(|r| r["version"] = serde_json::json!("3.14.0rc7 ")),
        ),
        (
            "has a bad file entry",
            Box::new(|r| {
                r["files"][0]["filename"] =
                    serde_json::json!("../demo_pure-3.14.0rc7-py3-none-any.whl")
            }),
        ),
        (
            "has a bad file entry",
            Box::new(|r| {
                r["files"][0]["filename"] =
                    serde_json::json!("a/demo_pure-3.14.0rc7-py3-none-any.whl")
            }),
        ),
        (
            "names the tag `demo-3.14.0rc1`, not its own",
            Box::new(|r| r["tag"] = serde_json::json!("demo-3.14.0rc1")),
        ),
        (
            "not at this Release's downloads",
            Box::new(|r| r["hosted"] = serde_json::json!("javascript:alert(1)//")),
        ),
        (
            "not at this Release's downloads",
            Box::new(|r| r["hosted"] = serde_json::json!("data:text/html,<script>x</script>/")),
        ),
        (
            "not at this Release's downloads",
            Box::new(|r| r["hosted"] = serde_json::json!("file:///etc/")),
        ),
        (
            "not at this Release's downloads",
            Box::new(|r| {
                r["hosted"] = serde_json::json!(
                    "https://ghp_leaked_T0KEN@github.com/o/r/releases/download/foreign/"
                )
            }),
        ),
        (
            "not at this Release's downloads",
            Box::new(|r| {
                r["hosted"] =
                    serde_json::json!("https://evil.example/o/r/releases/download/foreign/")
            }),
        ),
        (
            "not at this Release's downloads",
            Box::new(move |r| r["hosted"] = serde_json::json!(other_tag_base.clone())),
        ),
        (
            "gives no download URL",
            Box::new(|r| r["hosted"] = serde_json::Value::Null),
        ),
    ];
    for (said, edit) in &cases {
        assert!(github.set_asset("foreign", "release.json", foreign(edit.as_ref())));
        let err = stderr(&sync(&p, &github, 1));
        assert!(err.contains("GitHub Release foreign"), "{said}: {err}");
        assert!(err.contains(said), "{said}: {err}");
        assert!(err.contains("othing was changed"), "{said}: {err}");
        assert!(
            !err.contains("ghp_leaked_T0KEN") || said.is_empty(),
            "{err}"
        );
        assert_eq!(snapshot(&index), before, "{said}");
    }
    // The same with the store evicted: nothing is created.
    std::fs::remove_dir_all(&index).unwrap();
    sync(&p, &github, 1);
    assert!(!index.exists());
    // Not lockstep's once its record is gone; each Release listed twice
    // (pages shifted while listing) is still one Release.
    assert!(github.delete_asset("foreign", "release.json"));
    github.list_each_release_twice();
    let synced: serde_json::Value =
        serde_json::from_slice(&sync(&p, &github, 0).stdout).expect("JSON");
    assert_eq!(
        synced["restored"],
        serde_json::json!(["3.14.0rc1"]),
        "{synced}"
    );
    assert_eq!(
        synced["not_lockstep"],
        serde_json::json!(["foreign"]),
        "{synced}"
    );
    for page in walk(&index.join("simple")) {
        let text = std::fs::read_to_string(&page).unwrap();
        for bad in ["javascript:", "data:", "file:", "evil.example", "T0KEN"] {
            assert!(!text.contains(bad), "{bad} in {}", page.display());
        }
    }
}

#[test]
fn a_failed_github_step_leaves_the_store_and_index_as_they_were() {
    let versions = ["3.14.0rc1", "3.14.0rc2"];
    let p = hosted_project(&versions, "");
    let github = FakeGithub::start("o/r", TOKEN).expect("loopback GitHub");
    let index = p.path().join("release/index");
    publish(
        &p,
        &github,
        &[
            "wh-3.14.0rc1",
            "--tag",
            "demo-3.14.0rc1",
            "--github-release",
        ],
        true,
        0,
    );
    let before = snapshot(&index);
    let rc2 = [
        "wh-3.14.0rc2",
        "--tag",
        "demo-3.14.0rc2",
        "--github-release",
    ];
    let elsewhere = serde_json::json!({
        "id": 77, "tag_name": "demo-3.14.0rc2", "draft": false, "prerelease": true,
        "html_url": "https://evil.example/o/r/releases/tag/demo-3.14.0rc2",
        "upload_url": format!("{}/uploads/repos/o/r/releases/77/assets{{?name,label}}", github.url()),
        "assets": [],
    })
    .to_string();
    let failures: Vec<(&str, Vec<Answer>)> = vec![
        (
            "HTTP 500",
            vec![(500, vec![], "{\"message\":\"boom\"}".into()); 6],
        ),
        (
            "401",
            vec![(401, vec![], "{\"message\":\"Bad credentials\"}".into())],
        ),
        ("not", vec![(200, vec![], "<html>not JSON</html>".into())]),
        (
            "redirect",
            vec![(302, vec![("Location", "http://192.0.2.1/x")], String::new())],
        ),
        ("web host", vec![(200, vec![], elsewhere.clone())]),
    ];
    for (said, answers) in &failures {
        for (status, headers, body) in answers {
            github.script(*status, headers, body);
        }
        let err = stderr(&publish(&p, &github, &rc2, true, 1));
        assert!(
            err.to_lowercase().contains(&said.to_lowercase()),
            "{said}: {err}"
        );
        assert_eq!(snapshot(&index), before, "{said}: the store changed");
        // What a failed run left scripted is not the next case's.
        github.clear_scripts();
    }
    publish(&p, &github, &rc2, true, 0);

    // A same-size asset with other bytes is not "already there", with or
    // without GitHub's digest.
    let release = github
        .releases()
        .into_iter()
        .find(|r| r.tag == "demo-3.14.0rc2")
        .unwrap();
    let sums = release.assets["SHA256SUMS"].clone();
    let mut other = sums.clone();
    other[0] = if other[0] == b'0' { b'1' } else { b'0' };
    for digests in [true, false] {
        if !digests {
            github.without_digests();
        }
        assert!(github.set_asset("demo-3.14.0rc2", "SHA256SUMS", other.clone()));
        let before = snapshot(&index);
        let err = stderr(&publish(&p, &github, &rc2, true, 1));
        assert!(
            err.contains("has an asset SHA256SUMS that is not the file published"),
            "{err}"
        );
        assert_eq!(snapshot(&index), before);
    }
    assert!(github.set_asset("demo-3.14.0rc2", "SHA256SUMS", sums));

    // promote: the candidate's files come from its Release, checked; a
    // tampered one, or a final whose Release holds something else, fails
    // with the store as it was and nothing fetched left behind.
    let origin = p.root().join("origin.git");
    git(
        p.root(),
        &["init", "-q", "--bare", origin.to_str().unwrap()],
    );
    git(
        &p.path(),
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    git(&p.path(), &["push", "-q", "origin", "HEAD:refs/heads/main"]);
    let promote = |code: i32| {
        let mut cmd = p.cmd(&["release", "promote", "3.14.0rc1", "--github-release"]);
        cmd.env("GITHUB_API_URL", github.url())
            .env("GITHUB_REPOSITORY", "o/r")
            .env("GITHUB_TOKEN", TOKEN);
        expect(&mut cmd, code)
    };
    let candidate = github
        .releases()
        .into_iter()
        .find(|r| r.tag == "demo-3.14.0rc1")
        .unwrap();
    let (name, bytes) = candidate
        .assets
        .iter()
        .find(|(n, _)| n.ends_with(".whl"))
        .map(|(n, b)| (n.clone(), b.clone()))
        .unwrap();
    let mut tampered = bytes.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    assert!(github.set_asset("demo-3.14.0rc1", &name, tampered));
    let before = snapshot(&index);
    let err = stderr(&promote(1));
    assert!(err.contains("is not the file 3.14.0rc1 lists"), "{err}");
    assert_eq!(snapshot(&index), before);
    assert!(github.set_asset("demo-3.14.0rc1", &name, bytes));
    github.add_release(
        "v3.14.0",
        false,
        vec![(
            "demo_pure-3.14.0-py3-none-any.whl".into(),
            b"not the final".to_vec(),
        )],
    );
    let err = stderr(&promote(1));
    assert!(
        err.contains(
            "has an asset demo_pure-3.14.0-py3-none-any.whl that is not the file published"
        ),
        "{err}"
    );
    assert_eq!(snapshot(&index), before);
}

/// `release publish --github-release` against a GitHub Enterprise Server
/// (`GITHUB_API_URL` = `http://HOST/api/v3`): the release made, each asset
/// uploaded where its `upload_url` says (`/api/uploads`), a second publish
/// finds them there; every exchange held to Enterprise Server's own
/// description. The same server without `/api/v3` answers 404: publishing
/// there fails (exit 1, the 404 named) and nothing is published.
#[test]
fn an_enterprise_server_gets_the_release_and_its_assets_under_api_v3() {
    let p = built_project();
    let github = FakeGithub::start_enterprise("o/r", TOKEN).expect("loopback GitHub Enterprise");
    assert!(github.url().ends_with("/api/v3"), "{}", github.url());
    git(&p.path(), &["tag", "demo-3.14.0rc1"]);
    // The web host's root is not the API: 404 there, nothing published.
    let origin = github.url().trim_end_matches("/api/v3").to_string();
    let out = publish_to(&p, &origin, &PUBLISH_JSON, true, 1);
    assert!(stderr(&out).contains("404"), "{}", stderr(&out));
    assert!(github.releases().is_empty() && github.requests().is_empty());
    assert!(!p.path().join("release/index/files/3.14.0rc1").exists());

    let out = publish(&p, &github, &PUBLISH_JSON, true, 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["github_release"]["created"], true, "{report}");
    assert_eq!(listed(&report, "uploaded"), Some(3), "{report}");
    let releases = github.releases();
    assert_eq!(releases.len(), 1);
    assert_eq!(
        releases[0].assets.len(),
        3,
        "{:?}",
        releases[0].assets.keys()
    );
    // A rerun finds every asset there (by its digest): nothing uploaded.
    let out = publish(&p, &github, &PUBLISH_JSON, true, 0);
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(again["github_release"]["created"], false, "{again}");
    assert_eq!(listed(&again, "already_there"), Some(3), "{again}");
    let gaps = github.enterprise_gaps(&[
        "ghes:repos/get-release-by-tag",
        "ghes:repos/create-release",
        "ghes:repos/upload-release-asset",
    ]);
    assert!(gaps.is_empty(), "{gaps:?}");
}
