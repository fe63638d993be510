//! `lockstep ci explain`: the pipeline as a graph a person can review
//! without reading YAML.
//!
//! It is read from the very documents `ci generate` writes (not from the
//! configuration), so what it shows is what GitHub will run: per workflow
//! its triggers (with the next scheduled runs) and top-level permissions;
//! per job what it needs, when it runs, how many jobs its matrix makes, its
//! runner and container, its permissions, the artifacts it uploads and
//! downloads, the caches it restores and the actions it uses.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::yaml::Node;

/// Every workflow of the pipeline.
#[derive(Debug, Clone, Serialize)]
pub struct Pipeline {
    pub workflows: Vec<WorkflowGraph>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkflowGraph {
    pub file: String,
    pub name: String,
    pub triggers: Vec<Trigger>,
    /// Top-level permissions (`{}`: none unless a job asks).
    pub permissions: BTreeMap<String, String>,
    pub jobs: Vec<JobGraph>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Trigger {
    pub event: String,
    /// The cron expression of a schedule, the branches of a push.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A schedule's next runs (UTC).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub next_runs: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct JobGraph {
    pub id: String,
    pub needs: Vec<String>,
    /// The job's `if:`.
    pub when: Option<String>,
    /// Jobs its matrix makes (1 without a matrix).
    pub jobs: usize,
    pub runs_on: String,
    pub container: Option<String>,
    pub timeout_minutes: Option<i64>,
    pub permissions: BTreeMap<String, String>,
    pub environment: Option<String>,
    pub uploads: Vec<String>,
    pub downloads: Vec<String>,
    /// Cache keys it restores.
    pub caches: Vec<String>,
    /// Actions it uses (`owner/repo@ref`).
    pub actions: Vec<String>,
    pub outputs: Vec<String>,
}

/// The graph of `workflows` (file name, document).
pub fn explain(workflows: &[(&str, Node)]) -> Pipeline {
    Pipeline {
        workflows: workflows
            .iter()
            .map(|(file, doc)| workflow_graph(file, doc))
            .collect(),
    }
}

fn workflow_graph(file: &str, doc: &Node) -> WorkflowGraph {
    let jobs = match get(doc, "jobs") {
        Some(Node::Map(jobs) | Node::Spaced(jobs)) => {
            jobs.iter().map(|(id, job)| job_graph(id, job)).collect()
        }
        _ => Vec::new(),
    };
    WorkflowGraph {
        file: file.to_string(),
        name: get(doc, "name").and_then(text).unwrap_or_default(),
        triggers: triggers(get(doc, "on")),
        permissions: string_map(get(doc, "permissions")),
        jobs,
    }
}

fn triggers(on: Option<&Node>) -> Vec<Trigger> {
    let Some(Node::Map(events)) = on else {
        return Vec::new();
    };
    events
        .iter()
        .map(|(event, value)| {
            let detail = match event.as_str() {
                "schedule" => items(value)
                    .iter()
                    .filter_map(|entry| get(entry, "cron").and_then(text))
                    .next(),
                "push" => get(value, "branches").map(|b| {
                    items(b)
                        .iter()
                        .filter_map(text)
                        .collect::<Vec<_>>()
                        .join(", ")
                }),
                _ => None,
            };
            let next_runs = match (event.as_str(), &detail) {
                ("schedule", Some(expr)) => crate::stages::next_runs(expr, 3),
                _ => Vec::new(),
            };
            Trigger {
                event: event.clone(),
                detail,
                next_runs,
            }
        })
        .collect()
}

fn job_graph(id: &str, job: &Node) -> JobGraph {
    let needs = match get(job, "needs") {
        Some(Node::Str(one)) => vec![one.clone()],
        Some(list) => items(list).iter().filter_map(text).collect(),
        None => Vec::new(),
    };
    let steps = get(job, "steps").map(items).unwrap_or_default();
    let mut graph = JobGraph {
        id: id.to_string(),
        needs,
        when: get(job, "if").and_then(text),
        jobs: matrix_size(get(job, "strategy").and_then(|s| get(s, "matrix"))),
        runs_on: match get(job, "runs-on") {
            Some(Node::Flow(labels)) => labels
                .iter()
                .filter_map(text)
                .collect::<Vec<_>>()
                .join(", "),
            Some(other) => text(other).unwrap_or_default(),
            None => String::new(),
        },
        container: get(job, "container")
            .and_then(|c| get(c, "image"))
            .and_then(text),
        timeout_minutes: match get(job, "timeout-minutes") {
            Some(Node::Int(n)) => Some(*n),
            _ => None,
        },
        permissions: string_map(get(job, "permissions")),
        environment: get(job, "environment")
            .and_then(|e| get(e, "name"))
            .and_then(text),
        uploads: Vec::new(),
        downloads: Vec::new(),
        caches: Vec::new(),
        actions: Vec::new(),
        outputs: match get(job, "outputs") {
            Some(Node::Map(entries)) => entries.iter().map(|(k, _)| k.clone()).collect(),
            _ => Vec::new(),
        },
    };
    for step in &steps {
        let Some(uses) = get(step, "uses").and_then(text) else {
            continue;
        };
        let inputs = get(step, "with");
        let input = |key: &str| inputs.and_then(|w| get(w, key)).and_then(text);
        let name = uses.split('@').next().unwrap_or_default();
        match name {
            "actions/upload-artifact" => graph.uploads.extend(input("name")),
            "actions/upload-pages-artifact" => graph
                .uploads
                .push(input("name").unwrap_or_else(|| "github-pages".into())),
            "actions/download-artifact" => graph.downloads.extend(input("name")),
            "actions/deploy-pages" => graph.downloads.push("github-pages".into()),
            "actions/cache" => graph.caches.extend(input("key")),
            _ => {}
        }
        if !graph.actions.contains(&uses) {
            graph.actions.push(uses);
        }
    }
    graph
}

/// Jobs a `strategy.matrix` makes: the product of its axes (the
/// generator writes no `include`/`exclude`).
fn matrix_size(matrix: Option<&Node>) -> usize {
    let Some(Node::Map(axes)) = matrix else {
        return 1;
    };
    axes.iter()
        .map(|(_, values)| match values {
            Node::Flow(v) | Node::Seq(v) => v.len(),
            _ => 1,
        })
        .product()
}

fn get<'a>(node: &'a Node, key: &str) -> Option<&'a Node> {
    match node {
        Node::Map(entries) | Node::Spaced(entries) => {
            entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
        }
        _ => None,
    }
}

fn items(node: &Node) -> Vec<Node> {
    match node {
        Node::Seq(items) | Node::Flow(items) => items.clone(),
        _ => Vec::new(),
    }
}

fn text(node: &Node) -> Option<String> {
    match node {
        Node::Str(t) | Node::Commented(t, _) | Node::Block(t) => Some(t.clone()),
        Node::Int(n) => Some(n.to_string()),
        Node::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn string_map(node: Option<&Node>) -> BTreeMap<String, String> {
    match node {
        Some(Node::Map(entries)) => entries
            .iter()
            .filter_map(|(k, v)| text(v).map(|t| (k.clone(), t)))
            .collect(),
        _ => BTreeMap::new(),
    }
}

/// The graph as text: one block per workflow, one line per job with what
/// it needs, and indented lines for what it moves and may do.
pub fn render_text(pipeline: &Pipeline) -> String {
    let mut out = String::new();
    for wf in &pipeline.workflows {
        out.push_str(&format!("{}  ({})\n", wf.file, wf.name));
        for trigger in &wf.triggers {
            let mut line = format!("  on {}", trigger.event);
            if let Some(detail) = &trigger.detail {
                line.push_str(&format!(" `{detail}`"));
            }
            if !trigger.next_runs.is_empty() {
                line.push_str(&format!(" (next: {})", trigger.next_runs.join(", ")));
            }
            out.push_str(&line);
            out.push('\n');
        }
        out.push_str(&format!(
            "  permissions: {}\n",
            permissions(&wf.permissions)
        ));
        for job in &wf.jobs {
            out.push_str(&job_text(job));
        }
        out.push('\n');
    }
    out
}

fn permissions(map: &BTreeMap<String, String>) -> String {
    if map.is_empty() {
        return "none".into();
    }
    map.iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn job_text(job: &JobGraph) -> String {
    let count = match job.jobs {
        1 => "1 job".to_string(),
        n => format!("{n} jobs"),
    };
    let mut out = format!("  {:<14} {count}", job.id);
    if !job.needs.is_empty() {
        out.push_str(&format!(", needs {}", job.needs.join(", ")));
    }
    if let Some(when) = &job.when {
        out.push_str(&format!(", if {when}"));
    }
    out.push('\n');
    let pad = "      ";
    let mut runs = format!("{pad}on {}", job.runs_on);
    if let Some(image) = &job.container {
        runs.push_str(&format!(" in {image}"));
    }
    if let Some(minutes) = job.timeout_minutes {
        runs.push_str(&format!(", at most {minutes} min"));
    }
    out.push_str(&runs);
    out.push('\n');
    if !job.permissions.is_empty() {
        out.push_str(&format!(
            "{pad}permissions: {}\n",
            permissions(&job.permissions)
        ));
    }
    if let Some(env) = &job.environment {
        out.push_str(&format!("{pad}environment: {env}\n"));
    }
    for (what, list) in [
        ("uploads", &job.uploads),
        ("downloads", &job.downloads),
        ("caches", &job.caches),
        ("outputs", &job.outputs),
    ] {
        if !list.is_empty() {
            out.push_str(&format!("{pad}{what}: {}\n", list.join(", ")));
        }
    }
    out
}
