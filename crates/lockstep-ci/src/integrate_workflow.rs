//! `lockstep-integrate.yml`: the scheduled integrate that ends in a draft
//! pull request.
//!
//! `integrate continue` (the open integrate pull request's branch, fixups
//! pushed by people included, else a new integrate) then `integrate loop
//! --publish --ready`: the loop pushes the integrate branch and opens (or
//! updates) its draft pull request, marks it ready for review once the pin
//! is at upstream's head and its checks are green, and on a halt calls for
//! help (the PR body says what broke; the webhook is told once). lockstep's
//! state (the verdict of every smoke run) travels in the Actions cache,
//! keyed by the integrate branch. A halt exits 3, so the run is red: someone has to look. One run
//! at a time (`concurrency` with a fixed group, never cancelled mid-push).
//! Pushes made with the job's own token start no CI run on the pushed
//! branch; `[ci.integrate] token-secret` names a secret holding a token
//! whose pushes do (a GitHub App token or a fine-grained PAT). Only the
//! submodules the integrate needs are fetched, each with the history it
//! needs (`[ci.integrate] submodules`).
//!
//! The step exports no git credential: the loop runs the smoke (the
//! project's code), so the token is only in `GITHUB_TOKEN`, which lockstep
//! keeps from every child, and lockstep hands it to each `git push` in that
//! command's own environment (`lockstep_git::RemoteAuth`).

use crate::actions;
use crate::plan::Plan;
use crate::stages::Fetch;
use crate::stages::IntegrateStage;
use crate::workflow::{
    checkout_at, document, install_lockstep, runs_on, setup_python, step, uses, with,
};
use crate::yaml::{map, s, Node};

/// The workflow's file name.
pub const FILE: &str = "lockstep-integrate.yml";

/// lockstep's state database in the checkout (verdicts, records).
const STATE: &str = ".git/lockstep/state.db";

/// `integrate continue --dry-run` into the step's `branch` output.
const WHICH: &str = r###"lockstep integrate continue --dry-run --json > "$RUNNER_TEMP/which.json"
python3 - "$RUNNER_TEMP/which.json" <<'EOF'
import json
import os
import sys

which = json.load(open(sys.argv[1], encoding="utf-8"))
with open(os.environ["GITHUB_OUTPUT"], "a", encoding="utf-8") as out:
    out.write(f"branch={which['branch']}\n")
with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as summary:
    pull = which.get("pull")
    if pull:
        summary.write(f"Continuing {which['branch']} (pull request #{pull})\n")
    else:
        summary.write(f"Starting {which['branch']}: no integrate pull request is open\n")
EOF
"###;

/// Fetches the submodules the integrate needs, each with only the history
/// it needs (`[ci.integrate] submodules`): `actions/checkout` would fetch
/// every submodule with the superproject's whole history.
fn checkout_submodules(submodules: &[(String, Fetch)]) -> Node {
    let mut script = String::new();
    for (path, fetch) in submodules {
        let how = match fetch {
            Fetch::Full => String::new(),
            Fetch::Blobless => " --filter=blob:none".to_string(),
            Fetch::Depth(n) => format!(" --depth {n}"),
        };
        script.push_str(&format!("git submodule update --init{how} -- {path}\n"));
    }
    step(
        "Check out submodules",
        vec![("working-directory", s(".")), ("run", Node::Block(script))],
    )
}

/// The whole workflow.
pub fn workflow(plan: &Plan, stage: &IntegrateStage) -> Node {
    let token = match &stage.token_secret {
        Some(secret) => format!("${{{{ secrets.{secret} }}}}"),
        None => "${{ github.token }}".into(),
    };
    let mut steps = vec![checkout_at(plan, None, true)];
    if !stage.submodules.is_empty() {
        steps.push(checkout_submodules(&stage.submodules));
    }
    steps.push(setup_python(plan, &plan.test_python));
    steps.extend(install_lockstep(plan, &plan.build_runs_on));
    // Which integrate: the open pull request's branch, else a new one. Its
    // name keys the state cache (the verdicts of every smoke already run,
    // the halt posted), restored before anything writes the state.
    steps.push(step(
        "Find the open integrate",
        vec![
            ("id", s("which")),
            ("env", with(vec![("GITHUB_TOKEN", s(token.clone()))])),
            ("run", Node::Block(WHICH.into())),
        ],
    ));
    let key = "lockstep-integrate-state-${{ steps.which.outputs.branch }}-${{ github.run_id }}";
    steps.push(step(
        "Restore the integrate's state (verdicts)",
        vec![
            ("uses", uses(plan, actions::CACHE_RESTORE)),
            (
                "with",
                with(vec![
                    ("path", s(STATE)),
                    ("key", s(key)),
                    (
                        "restore-keys",
                        Node::Block(
                            "lockstep-integrate-state-${{ steps.which.outputs.branch }}-\nlockstep-integrate-state-\n"
                                .into(),
                        ),
                    ),
                ]),
            ),
        ],
    ));
    steps.push(step(
        "Integrate",
        vec![
            ("id", s("integrate")),
            ("env", with(vec![("GITHUB_TOKEN", s(token))])),
            (
                "run",
                Node::Block(
                    "lockstep integrate continue\nlockstep integrate loop --publish --ready\n"
                        .into(),
                ),
            ),
        ],
    ));
    steps.push(step(
        "Save the integrate's state",
        vec![
            // A halt is a red run whose verdicts are worth keeping; a
            // cancelled one may have stopped mid-write.
            (
                "if",
                s("always() && steps.integrate.outcome != 'cancelled'"),
            ),
            ("uses", uses(plan, actions::CACHE_SAVE)),
            ("with", with(vec![("path", s(STATE)), ("key", s(key))])),
        ],
    ));
    let job = Node::Map(vec![
        ("name".into(), s("integrate")),
        ("runs-on".into(), runs_on(&plan.build_runs_on)),
        (
            "timeout-minutes".into(),
            Node::Int(stage.timeout_minutes.into()),
        ),
        (
            "permissions".into(),
            map([
                (
                    "contents",
                    Node::Commented("write".into(), "push the integrate branch".into()),
                ),
                (
                    "pull-requests",
                    Node::Commented(
                        "write".into(),
                        "open or update its draft pull request".into(),
                    ),
                ),
            ]),
        ),
        ("steps".into(), Node::Seq(steps)),
    ]);
    let top = vec![
        ("name".to_string(), s("lockstep integrate")),
        (
            "on".to_string(),
            map([
                (
                    "schedule",
                    Node::Seq(vec![map([("cron", s(stage.schedule.clone()))])]),
                ),
                ("workflow_dispatch", Node::Null),
            ]),
        ),
        ("permissions".to_string(), Node::Map(Vec::new())),
        (
            "concurrency".to_string(),
            map([
                ("group", s("lockstep-integrate")),
                ("cancel-in-progress", Node::Bool(false)),
            ]),
        ),
    ];
    document(plan, top, vec![("integrate".to_string(), job)])
}
