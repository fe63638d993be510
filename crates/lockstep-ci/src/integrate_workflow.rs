//! `lockstep-integrate.yml`: the scheduled integrate that ends in a draft
//! pull request.
//!
//! `integrate start` then `integrate loop --publish`: the loop pushes the
//! integrate branch and opens (or updates) its draft pull request, and on a
//! halt calls for help (the PR body says what broke; the webhook is told
//! once). A halt exits 3, so the run is red: someone has to look. One run
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

use crate::plan::Plan;
use crate::stages::Fetch;
use crate::stages::IntegrateStage;
use crate::workflow::{checkout_at, document, install_lockstep, runs_on, setup_python, step, with};
use crate::yaml::{map, s, Node};

/// The workflow's file name.
pub const FILE: &str = "lockstep-integrate.yml";

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
    steps.push(step(
        "Integrate",
        vec![
            ("env", with(vec![("GITHUB_TOKEN", s(token))])),
            (
                "run",
                Node::Block("lockstep integrate start\nlockstep integrate loop --publish\n".into()),
            ),
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
