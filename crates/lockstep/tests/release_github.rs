//! `lockstep release publish --github-release` against the loopback GitHub
//! (lockstep-sandbox's `FakeGithub`: release by tag, create release, asset
//! uploads on a separate `upload_url`, 422 `already_exists`).

mod common;

use common::*;
use lockstep_sandbox::github::FakeGithub;

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
    let mut all = vec!["release", "publish"];
    all.extend_from_slice(args);
    let mut cmd = p.cmd(&all);
    cmd.env("GITHUB_API_URL", github.url())
        .env("GITHUB_REPOSITORY", "o/r");
    if token {
        cmd.env("GITHUB_TOKEN", TOKEN);
    }
    let out = expect(&mut cmd, code);
    assert!(!stdout(&out).contains(TOKEN) && !stderr(&out).contains(TOKEN));
    out
}

#[test]
fn publish_creates_and_completes_the_github_release_with_checksums() {
    let p = Project::new();
    lockstep_sandbox::packages::create(
        &p.path(),
        "3.14.0",
        "\n[release]\nname = \"demo\"\nversion-base = \"3.14.0\"\n",
    )
    .expect("fixture");
    let github = FakeGithub::start("o/r", TOKEN).expect("loopback GitHub");
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
    assert_eq!(g["uploaded"].as_array().map(Vec::len), Some(3), "{report}");
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
    assert_eq!(
        report["github_release"]["uploaded"]
            .as_array()
            .map(Vec::len),
        Some(0)
    );
    assert_eq!(
        report["github_release"]["already_there"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );

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
