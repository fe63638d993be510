//! `lockstep-release.yml`: the nightly release as one workflow run.
//!
//! bump the pins (when `[release] pin-files` are set) -> cut a version ->
//! build every cell at that commit and version -> test the built wheels on
//! every target -> publish to the release index and create the GitHub
//! Release -> deploy the index to GitHub Pages.
//!
//! One run, joined by `needs:`, rather than workflows that trigger each
//! other through pushed tags: pushes made with the job's token start no
//! workflow, and a chain of runs cannot say "nothing is published when a
//! test shard fails" the way one dependency graph does. A day with no new
//! commit cuts nothing (`release cut --if-new-commit`) and every later job
//! is skipped. Permissions are per job: `contents: write` only where tags,
//! pushes and releases happen, `pages: write` and `id-token: write` only in
//! the deploy job. The release store (the index's files) carries over from
//! run to run in the GitHub Actions cache; every file also stays attached
//! to its GitHub Release.

use crate::actions;
use crate::plan::Plan;
use crate::stages::ReleaseStage;
use crate::workflow::{
    build_job, checkout_at, document, install_lockstep, manifest_name, needs_node, runs_on,
    setup_python, setup_pythons, step, summary_job, test_job, test_job_id, uses, wheels_artifact,
    with, workspace_path, Source, GIT_AUTH, WHEELHOUSE,
};
use crate::yaml::{map, s, Node};

/// The workflow's file name.
pub const FILE: &str = "lockstep-release.yml";

/// The expression every job after `cut` runs under.
const WHEN_CUT: &str = "needs.cut.outputs.cut == 'true'";

/// A scheduled run, or a manual one without `promote`.
const WHEN_NOT_PROMOTING: &str = "inputs.promote == '' || inputs.promote == null";

/// A manual run asked to promote.
const WHEN_PROMOTING: &str = "inputs.promote != '' && inputs.promote != null";

/// The artifact the promote job hands to the PyPI job.
pub const FINAL_ARTIFACT: &str = "final-dist";

/// Reads `release promote --json` into the step's outputs and the summary.
const PROMOTE_OUTPUTS: &str = r###"python3 - "$RUNNER_TEMP/promote.json" <<'EOF'
import json
import os
import sys

done = json.load(open(sys.argv[1], encoding="utf-8"))
with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as out:
    out.write(f"version={done['to']}\n")
    out.write(f"tag={done.get('tag', '')}\n")
with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as summary:
    summary.write(f"Promoted {done['from']} to {done['to']} (tag {done.get('tag')}, branch {done.get('branch')})\n")
EOF
"###;

/// Reads `release cut --json` (in `$RUNNER_TEMP/cut.json`) into the step's
/// outputs and the run's summary.
const CUT_OUTPUTS: &str = r###"python3 - "$RUNNER_TEMP/cut.json" <<'EOF'
import json
import os
import sys

cut = json.load(open(sys.argv[1], encoding="utf-8"))
made = not cut.get("skipped", False)
with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as out:
    out.write(f"cut={'true' if made else 'false'}\n")
    out.write(f"version={cut['version']}\n")
    out.write(f"tag={cut['tag']}\n")
    out.write(f"sha={cut['source']}\n")
with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as summary:
    if made:
        summary.write(f"Cut {cut['version']} (tag {cut['tag']}, commit {cut['source']})\n")
    else:
        summary.write(f"Nothing to cut: {cut['source']} is already {cut['version']}\n")
EOF
"###;

/// The whole workflow.
pub fn workflow(plan: &Plan, stage: &ReleaseStage) -> Node {
    let source = Source {
        needs: &["cut"],
        commit: Some("${{ needs.cut.outputs.sha }}"),
        version: Some("${{ needs.cut.outputs.version }}"),
        when: Some(WHEN_CUT),
    };
    let mut jobs = vec![
        ("cut".to_string(), cut_job(plan, stage)),
        ("build".to_string(), build_job(plan, &source)),
    ];
    let mut tested = vec!["cut".to_string(), "build".to_string()];
    for target in &plan.targets {
        let id = test_job_id(&target.name);
        jobs.push((id.clone(), test_job(plan, target, &source)));
        tested.push(id);
    }
    jobs.push(("publish".to_string(), publish_job(plan, stage, &tested)));
    jobs.push(("promote".to_string(), promote_job(plan, stage)));
    if stage.pypi {
        jobs.push(("pypi".to_string(), pypi_job(plan)));
    }
    if stage.pages {
        jobs.push(("deploy".to_string(), deploy_job(plan)));
    }
    let needs: Vec<Node> = jobs.iter().map(|(id, _)| s(id.clone())).collect();
    jobs.push((
        "summary".to_string(),
        summary_job(plan, "lockstep release", needs),
    ));
    let top = vec![
        ("name".to_string(), s("lockstep release")),
        ("on".to_string(), triggers(stage)),
        // Nothing by default: every job says what it needs.
        ("permissions".to_string(), Node::Map(Vec::new())),
        (
            "concurrency".to_string(),
            map([
                ("group", s("lockstep-release")),
                ("cancel-in-progress", Node::Bool(false)),
            ]),
        ),
    ];
    document(plan, top, jobs)
}

fn triggers(stage: &ReleaseStage) -> Node {
    map([
        ("schedule", Node::Seq(vec![map([("cron", s(stage.schedule.clone()))])])),
        (
            "workflow_dispatch",
            map([(
                "inputs",
                map([
                    (
                        "channel",
                        map([
                            ("description", s("What to cut")),
                            ("type", s("choice")),
                            (
                                "options",
                                Node::Seq(crate::stages::CHANNELS.iter().map(|c| s(*c)).collect()),
                            ),
                            ("default", s(stage.channel.clone())),
                        ]),
                    ),
                    (
                        "base-version",
                        map([
                            (
                                "description",
                                s("The release being prepared (X.Y.Z); empty: [release] version-base"),
                            ),
                            ("type", s("string")),
                            ("required", Node::Bool(false)),
                            ("default", s("")),
                        ]),
                    ),
                    (
                        "promote",
                        map([
                            (
                                "description",
                                s("Instead of a cut: promote this published candidate to a final (tag, GitHub Release, release branch, PyPI)"),
                            ),
                            ("type", s("string")),
                            ("required", Node::Bool(false)),
                            ("default", s("")),
                        ]),
                    ),
                    (
                        "final",
                        map([
                            (
                                "description",
                                s("The final version of a promote; empty: the candidate's X.Y.Z"),
                            ),
                            ("type", s("string")),
                            ("required", Node::Bool(false)),
                            ("default", s("")),
                        ]),
                    ),
                ]),
            )]),
        ),
    ])
}

/// Bumps the pins (when configured) and cuts the version; its outputs say
/// whether anything was cut, and which commit, version and tag.
fn cut_job(plan: &Plan, stage: &ReleaseStage) -> Node {
    let mut steps = vec![
        checkout_at(plan, None, true),
        setup_python(plan, &plan.test_python),
    ];
    steps.extend(install_lockstep(plan, &plan.build_runs_on));
    if stage.bumps_pins {
        // The bump runs the smoke (the project's code): no credential in
        // its step. The push that follows is a step of its own.
        steps.push(step(
            "Bump the pins",
            vec![("run", Node::Block("lockstep release bump --smoke\n".into()))],
        ));
        steps.push(step(
            "Push the bumped pins",
            vec![
                (
                    "env",
                    with(vec![
                        ("GITHUB_TOKEN", s("${{ github.token }}")),
                        ("BRANCH", s("${{ github.ref_name }}")),
                    ]),
                ),
                (
                    "run",
                    Node::Block(format!(
                        "{GIT_AUTH}git push origin \"HEAD:refs/heads/$BRANCH\"\n"
                    )),
                ),
            ],
        ));
    }
    steps.push(step(
        "Cut the version",
        vec![
            ("id", s("cut")),
            (
                "env",
                with(vec![
                    ("GITHUB_TOKEN", s("${{ github.token }}")),
                    (
                        "CHANNEL",
                        s(format!("${{{{ inputs.channel || '{}' }}}}", stage.channel)),
                    ),
                    ("BASE", s("${{ inputs.base-version }}")),
                ]),
            ),
            (
                "run",
                Node::Block(format!(
                    "args=(--channel \"$CHANNEL\" --if-new-commit --json)\nif [ -n \"$BASE\" ]; then args+=(--base \"$BASE\"); fi\nlockstep release cut \"${{args[@]}}\" > \"$RUNNER_TEMP/cut.json\"\n{CUT_OUTPUTS}"
                )),
            ),
        ],
    ));
    Node::Map(vec![
        (
            "name".into(),
            s(if stage.bumps_pins {
                "bump and cut"
            } else {
                "cut"
            }),
        ),
        // A manual run that promotes cuts nothing.
        ("if".into(), s(WHEN_NOT_PROMOTING)),
        ("runs-on".into(), runs_on(&plan.build_runs_on)),
        (
            "timeout-minutes".into(),
            Node::Int(stage.timeout_minutes.into()),
        ),
        (
            "permissions".into(),
            contents_write("push the bumped pins and the version's tag"),
        ),
        (
            "outputs".into(),
            map([
                ("cut", s("${{ steps.cut.outputs.cut }}")),
                ("version", s("${{ steps.cut.outputs.version }}")),
                ("tag", s("${{ steps.cut.outputs.tag }}")),
                ("sha", s("${{ steps.cut.outputs.sha }}")),
            ]),
        ),
        ("steps".into(), Node::Seq(steps)),
    ])
}

/// The artifact the publish job hands to the deploy job.
pub const PAGES_ARTIFACT: &str = "github-pages";

/// Publishes every Python's wheelhouse of the default variant to the
/// release store (carried over in the Actions cache), creates the GitHub
/// Release, and uploads the index for Pages. Runs only when the cut and
/// every build and test job succeeded.
fn publish_job(plan: &Plan, stage: &ReleaseStage, needs: &[String]) -> Node {
    // Every Python the wheels are for: publish validates each Python's
    // wheelhouse in a venv of that Python.
    let mut steps = vec![
        checkout_at(plan, Some("${{ needs.cut.outputs.sha }}"), false),
        setup_pythons(plan, &plan.pythons),
    ];
    steps.extend(install_lockstep(plan, &plan.build_runs_on));
    // Every Python's wheelhouse of every variant that has names of its
    // own: one version, one index.
    let mut houses: Vec<String> = Vec::new();
    for variant in &plan.published_variants {
        for python in &plan.pythons {
            let dir = published_house(python, variant);
            steps.push(step(
                &format!("Download the py{python} {variant} wheelhouse"),
                vec![
                    ("uses", uses(plan, actions::DOWNLOAD_ARTIFACT)),
                    (
                        "with",
                        with(vec![
                            ("name", s(wheels_artifact(python, variant))),
                            ("path", s(workspace_path(plan, &dir))),
                        ]),
                    ),
                ],
            ));
            houses.push(match variant == &plan.variants[0] {
                true => dir,
                false => format!("{dir}/{}", manifest_name(variant)),
            });
        }
    }
    let index = workspace_path(plan, &stage.index);
    steps.extend(restore_store(plan, stage, &index));
    let github_release = if stage.github_release {
        " --github-release"
    } else {
        ""
    };
    // One command for every Python: all validated before anything is
    // published, so the store and the GitHub Release hold the whole version
    // or none of it.
    let script = format!(
        "lockstep release publish {} --tag \"$TAG\"{github_release}\n",
        houses.join(" ")
    );
    let mut env = vec![("TAG", s("${{ needs.cut.outputs.tag }}"))];
    if stage.github_release {
        env.push(("GITHUB_TOKEN", s("${{ github.token }}")));
    }
    steps.push(step(
        "Publish",
        vec![("env", with(env)), ("run", Node::Block(script))],
    ));
    if stage.prunes {
        // Prune keeps whatever a branch's manifests and pins name: the
        // checkout is one commit, so the branches are fetched first, in a
        // step of their own (the credential never reaches lockstep).
        let mut fetch = String::from(GIT_AUTH);
        for branch in &stage.branches {
            fetch.push_str(&format!(
                "git fetch --no-tags --depth=1 origin '+refs/heads/{branch}:refs/remotes/origin/{branch}'\n"
            ));
        }
        steps.push(step(
            "Fetch the release branches",
            vec![
                (
                    "env",
                    with(vec![("GITHUB_TOKEN", s("${{ github.token }}"))]),
                ),
                ("run", Node::Block(fetch)),
            ],
        ));
        let mut prune = vec![("run", Node::Block("lockstep release prune\n".into()))];
        if stage.hosted_on_github {
            // Deletes the pruned snapshots' Releases.
            prune.insert(
                0,
                (
                    "env",
                    with(vec![("GITHUB_TOKEN", s("${{ github.token }}"))]),
                ),
            );
        }
        steps.push(step("Prune old snapshots ([release] keep)", prune));
    }
    if stage.pages {
        steps.push(pages_upload(plan, index));
    }
    let contents = if stage.github_release {
        Node::Commented(
            "write".into(),
            "create the GitHub Release and attach its files".into(),
        )
    } else {
        s("read")
    };
    let needs: Vec<&str> = needs.iter().map(String::as_str).collect();
    Node::Map(vec![
        ("name".into(), s("publish ${{ needs.cut.outputs.version }}")),
        ("needs".into(), needs_node(&needs)),
        ("if".into(), s(WHEN_CUT)),
        ("runs-on".into(), runs_on(&plan.build_runs_on)),
        (
            "timeout-minutes".into(),
            Node::Int(stage.timeout_minutes.into()),
        ),
        ("permissions".into(), map([("contents", contents)])),
        ("steps".into(), Node::Seq(steps)),
    ])
}

/// The release store from the Actions cache (the newest entry), and from
/// the GitHub Releases when hosted there and the cache had none: the cache
/// is only a copy (evicted after 7 days unused, or over 10 GB), so no
/// snapshot drops out of the index.
fn restore_store(plan: &Plan, stage: &ReleaseStage, index: &str) -> Vec<Node> {
    let mut steps = vec![step(
        "Restore the release store",
        vec![
            ("id", s("store")),
            ("uses", uses(plan, actions::CACHE)),
            (
                "with",
                with(vec![
                    ("path", s(index)),
                    ("key", s("lockstep-release-store-${{ github.run_id }}")),
                    (
                        "restore-keys",
                        Node::Block("lockstep-release-store-\n".into()),
                    ),
                ]),
            ),
        ],
    )];
    if stage.hosted_on_github {
        steps.push(step(
            "Rebuild the release store from the GitHub Releases",
            vec![
                ("if", s("steps.store.outputs.cache-matched-key == ''")),
                (
                    "env",
                    with(vec![("GITHUB_TOKEN", s("${{ github.token }}"))]),
                ),
                (
                    "run",
                    Node::Block("lockstep release sync --from-github\n".into()),
                ),
            ],
        ));
    }
    steps
}

/// Promotes a published candidate to a final (a manual run with the
/// `promote` input): the store restored (and rebuilt from the Releases when
/// hosted there and the cache missed), `release promote` with the tag, the
/// GitHub Release and the release branch, the final files handed to the
/// PyPI job, the index to Pages.
fn promote_job(plan: &Plan, stage: &ReleaseStage) -> Node {
    let mut steps = vec![
        checkout_at(plan, None, true),
        setup_python(plan, &plan.test_python),
    ];
    steps.extend(install_lockstep(plan, &plan.build_runs_on));
    let index = workspace_path(plan, &stage.index);
    steps.extend(restore_store(plan, stage, &index));
    let github_release = if stage.github_release {
        " --github-release"
    } else {
        ""
    };
    steps.push(step(
        "Promote",
        vec![
            ("id", s("promote")),
            (
                "env",
                with(vec![
                    ("GITHUB_TOKEN", s("${{ github.token }}")),
                    ("VERSION", s("${{ inputs.promote }}")),
                    ("FINAL", s("${{ inputs.final }}")),
                ]),
            ),
            (
                "run",
                Node::Block(format!(
                    "args=(--tag{github_release} --release-branch --copy-to {FINAL_ARTIFACT} --json)\nif [ -n \"$FINAL\" ]; then args+=(--to \"$FINAL\"); fi\nlockstep release promote \"$VERSION\" \"${{args[@]}}\" > \"$RUNNER_TEMP/promote.json\"\n{PROMOTE_OUTPUTS}"
                )),
            ),
        ],
    ));
    steps.push(step(
        "Hand the final files to the PyPI job",
        vec![
            ("uses", uses(plan, actions::UPLOAD_ARTIFACT)),
            (
                "with",
                with(vec![
                    ("name", s(FINAL_ARTIFACT)),
                    ("path", s(workspace_path(plan, FINAL_ARTIFACT))),
                    ("if-no-files-found", s("error")),
                ]),
            ),
        ],
    ));
    if stage.pages {
        steps.push(pages_upload(plan, index));
    }
    Node::Map(vec![
        ("name".into(), s("promote ${{ inputs.promote }}")),
        ("if".into(), s(WHEN_PROMOTING)),
        ("runs-on".into(), runs_on(&plan.build_runs_on)),
        (
            "timeout-minutes".into(),
            Node::Int(stage.timeout_minutes.into()),
        ),
        (
            "permissions".into(),
            contents_write("push the final's tag and release branch, create its GitHub Release"),
        ),
        (
            "outputs".into(),
            map([
                ("version", s("${{ steps.promote.outputs.version }}")),
                ("tag", s("${{ steps.promote.outputs.tag }}")),
            ]),
        ),
        ("steps".into(), Node::Seq(steps)),
    ])
}

/// Uploads the final files to PyPI: trusted publishing (the only job with
/// `id-token: write`, in the `pypi` environment, whose protection rules a
/// project sets), or a token in `secrets.LOCKSTEP_PYPI_TOKEN`; the endpoint
/// is `vars.LOCKSTEP_UPLOAD_URL`, PyPI's by default.
fn pypi_job(plan: &Plan) -> Node {
    let mut steps = vec![step(
        "Download the final files",
        vec![
            ("uses", uses(plan, actions::DOWNLOAD_ARTIFACT)),
            (
                "with",
                with(vec![
                    ("name", s(FINAL_ARTIFACT)),
                    ("path", s(FINAL_ARTIFACT)),
                ]),
            ),
        ],
    )];
    steps.push(setup_python(plan, &plan.test_python));
    steps.extend(install_lockstep(plan, &plan.build_runs_on));
    steps.push(step(
        "Upload to PyPI",
        vec![
            (
                "env",
                with(vec![
                    (
                        "UPLOAD_URL",
                        s("${{ vars.LOCKSTEP_UPLOAD_URL || 'https://upload.pypi.org/legacy/' }}"),
                    ),
                    ("UV_PUBLISH_TOKEN", s("${{ secrets.LOCKSTEP_PYPI_TOKEN }}")),
                ]),
            ),
            (
                "run",
                Node::Block(format!(
                    "lockstep release upload {FINAL_ARTIFACT} --url \"$UPLOAD_URL\" --trusted-publishing\n"
                )),
            ),
        ],
    ));
    Node::Map(vec![
        (
            "name".into(),
            s("upload ${{ needs.promote.outputs.version }} to PyPI"),
        ),
        ("needs".into(), s("promote")),
        ("runs-on".into(), runs_on(&plan.build_runs_on)),
        ("timeout-minutes".into(), Node::Int(30)),
        ("environment".into(), map([("name", s("pypi"))])),
        (
            "permissions".into(),
            map([(
                "id-token",
                Node::Commented(
                    "write".into(),
                    "PyPI's trusted publishing proves where the upload comes from (OIDC)".into(),
                ),
            )]),
        ),
        ("steps".into(), Node::Seq(steps)),
    ])
}

/// `permissions: contents: write`, saying why.
fn contents_write(why: &str) -> Node {
    map([("contents", Node::Commented("write".into(), why.into()))])
}

/// The step handing `index` to the deploy job.
fn pages_upload(plan: &Plan, index: String) -> Node {
    step(
        "Upload the index for Pages",
        vec![
            ("uses", uses(plan, actions::UPLOAD_PAGES_ARTIFACT)),
            ("with", with(vec![("path", s(index))])),
        ],
    )
}

/// Where the publish job puts one cell's wheelhouse.
fn published_house(python: &str, variant: &str) -> String {
    match variant == lockstep_pkg::config::DEFAULT_VARIANT {
        true => format!("{WHEELHOUSE}-py{python}"),
        false => format!("{WHEELHOUSE}-py{python}-{variant}"),
    }
}

/// Deploys the index the publish job uploaded: the only job that may write
/// Pages.
fn deploy_job(plan: &Plan) -> Node {
    Node::Map(vec![
        ("name".into(), s("deploy the index to Pages")),
        ("needs".into(), needs_node(&["publish", "promote"])),
        // Whichever of the two ran and succeeded uploaded the index.
        (
            "if".into(),
            s("${{ !cancelled() && (needs.publish.result == 'success' || needs.promote.result == 'success') }}"),
        ),
        ("runs-on".into(), runs_on(&plan.build_runs_on)),
        ("timeout-minutes".into(), Node::Int(10)),
        (
            "permissions".into(),
            map([
                (
                    "pages",
                    Node::Commented("write".into(), "deploy the index to GitHub Pages".into()),
                ),
                (
                    "id-token",
                    Node::Commented(
                        "write".into(),
                        "the deployment proves where it comes from (OIDC)".into(),
                    ),
                ),
            ]),
        ),
        (
            "environment".into(),
            map([
                ("name", s("github-pages")),
                ("url", s("${{ steps.deploy.outputs.page_url }}")),
            ]),
        ),
        (
            "steps".into(),
            Node::Seq(vec![step(
                "Deploy",
                vec![
                    ("id", s("deploy")),
                    ("uses", uses(plan, actions::DEPLOY_PAGES)),
                ],
            )]),
        ),
    ])
}
