//! The order of jobs: `needs` checked up front (unknown ids, cycles), a job
//! started when its needs are done, its `if:` evaluated with their results
//! and outputs, its matrix expanded into cells that run on at most
//! `max_parallel` threads, fail-fast cancelling pending cells.
//!
//! Why: job ordering, skipping and the `needs` context are what a generated
//! workflow's structure means; they must behave as on GitHub.

use std::collections::{BTreeSet, VecDeque};
use std::sync::mpsc;

use serde_json::{Map, Value};

use super::context::CellSpec;
use super::expr::{self, Scope, Status};
use super::job;
use super::matrix::{self, Cell};
use super::{Conclusion, JobReport, Run, RunnerError};

enum State {
    Waiting,
    Running { pending: usize },
    Done,
}

struct JobState {
    id: String,
    def: Map<String, Value>,
    needs: Vec<String>,
    state: State,
    fail_fast: bool,
    cells: Vec<JobReport>,
    /// Outputs merged in finishing order (the last cell to set one wins).
    outputs: Map<String, Value>,
}

struct Unit {
    job: usize,
    spec: CellSpec,
}

/// Runs every job of the workflow; the reports in finishing order.
pub(crate) fn run_jobs(run: &Run) -> Result<Vec<JobReport>, RunnerError> {
    let mut jobs = job_states(run)?;
    let mut reports = Vec::new();
    let mut queue: VecDeque<Unit> = VecDeque::new();
    let limit = run.cfg.max_parallel.max(1);
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<(usize, JobReport)>();
        let mut running = 0;
        loop {
            activate(run, &mut jobs, &mut queue, &mut reports);
            while running < limit {
                let Some(unit) = queue.pop_front() else { break };
                let tx = tx.clone();
                running += 1;
                scope.spawn(move || {
                    let report = job::run_cell(run, unit.spec);
                    let _ = tx.send((unit.job, report));
                });
            }
            if running == 0 {
                break;
            }
            let Ok((index, report)) = rx.recv() else {
                break;
            };
            running -= 1;
            finish_cell(&mut jobs, index, report, &mut queue, &mut reports);
        }
    });
    Ok(reports)
}

/// Checks the jobs' `needs` (unknown ids, cycles) before anything runs.
pub(crate) fn validate(run: &Run) -> Result<(), RunnerError> {
    check_order(&job_states(run)?)
}

fn job_states(run: &Run) -> Result<Vec<JobState>, RunnerError> {
    let defs = run
        .workflow
        .get("jobs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for (id, def) in defs {
        let Value::Object(def) = def else {
            return Err(RunnerError::new(format!("job `{id}` is not a mapping")));
        };
        let needs = match def.get("needs") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items.iter().map(expr::to_text).collect(),
            Some(other) => return Err(RunnerError::new(format!("job `{id}`: bad needs {other}"))),
        };
        let fail_fast = def
            .get("strategy")
            .and_then(|s| s.get("fail-fast"))
            .map(|v| v != &Value::Bool(false) && v.as_str() != Some("false"))
            .unwrap_or(true);
        out.push(JobState {
            id,
            def,
            needs,
            state: State::Waiting,
            fail_fast,
            cells: Vec::new(),
            outputs: Map::new(),
        });
    }
    Ok(out)
}

/// Unknown needs and cycles are errors before anything runs.
fn check_order(jobs: &[JobState]) -> Result<(), RunnerError> {
    let ids: BTreeSet<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
    for j in jobs {
        if let Some(missing) = j.needs.iter().find(|n| !ids.contains(n.as_str())) {
            return Err(RunnerError::new(format!(
                "job `{}` needs unknown job `{missing}`",
                j.id
            )));
        }
    }
    let mut done: BTreeSet<&str> = BTreeSet::new();
    while done.len() < jobs.len() {
        let ready: Vec<&str> = jobs
            .iter()
            .filter(|j| !done.contains(j.id.as_str()))
            .filter(|j| j.needs.iter().all(|n| done.contains(n.as_str())))
            .map(|j| j.id.as_str())
            .collect();
        if ready.is_empty() {
            let left: Vec<&str> = jobs
                .iter()
                .map(|j| j.id.as_str())
                .filter(|id| !done.contains(id))
                .collect();
            return Err(
                RunnerError::new("the jobs' needs form a cycle").cause(format!("among {left:?}"))
            );
        }
        done.extend(ready);
    }
    Ok(())
}

/// Starts every waiting job whose needs are done (repeating: a skipped job
/// may let another start).
fn activate(
    run: &Run,
    jobs: &mut [JobState],
    queue: &mut VecDeque<Unit>,
    reports: &mut Vec<JobReport>,
) {
    loop {
        let ready = (0..jobs.len()).find(|&i| {
            matches!(jobs[i].state, State::Waiting)
                && jobs[i].needs.iter().all(|n| {
                    jobs.iter()
                        .any(|j| &j.id == n && matches!(j.state, State::Done))
                })
        });
        let Some(i) = ready else { return };
        let needs = needs_context(jobs, i);
        let status = job_status(jobs, i);
        match plan_job(run, &jobs[i], needs, status) {
            Ok(specs) if !specs.is_empty() => {
                jobs[i].state = State::Running {
                    pending: specs.len(),
                };
                queue.extend(specs.into_iter().map(|spec| Unit { job: i, spec }));
            }
            Ok(_) => {
                let report =
                    job::not_run(run, &jobs[i].id, &jobs[i].def, Conclusion::Skipped, None);
                record_done(&mut jobs[i], report, reports);
            }
            Err(message) => {
                let report = job::not_run(
                    run,
                    &jobs[i].id,
                    &jobs[i].def,
                    Conclusion::Failure,
                    Some(&message),
                );
                record_done(&mut jobs[i], report, reports);
            }
        }
    }
}

fn record_done(job: &mut JobState, report: JobReport, reports: &mut Vec<JobReport>) {
    job.cells.push(report.clone());
    job.state = State::Done;
    reports.push(report);
}

/// The keys of a job GitHub knows; the emulation refuses the ones it
/// does not honour (rather than ignoring them).
const JOB_KEYS: &[&str] = &[
    "name",
    "needs",
    "runs-on",
    "permissions",
    "environment",
    "concurrency",
    "outputs",
    "env",
    "defaults",
    "if",
    "steps",
    "timeout-minutes",
    "strategy",
    "container",
    "services",
];

fn check_job_keys(id: &str, def: &Map<String, Value>) -> Result<(), String> {
    let refused = |what: &str| {
        Err(format!(
            "job `{id}`: {what} is not emulated by the lockstep workflow runner"
        ))
    };
    if def.contains_key("uses") {
        return refused("calling a reusable workflow (`uses:`)");
    }
    if def.contains_key("continue-on-error") {
        return refused("job-level `continue-on-error`");
    }
    match def.keys().find(|k| !JOB_KEYS.contains(&k.as_str())) {
        Some(k) => Err(format!("job `{id}` has an unknown key `{k}`")),
        None => Ok(()),
    }
}

/// The cells to run for a job (none: skipped by its `if:`).
fn plan_job(
    run: &Run,
    job: &JobState,
    needs: Map<String, Value>,
    status: Status,
) -> Result<Vec<CellSpec>, String> {
    check_job_keys(&job.id, &job.def)?;
    let contexts = job::job_level_contexts(run, &job.id, &needs);
    let scope = Scope {
        contexts: &contexts,
        status,
        workspace: None,
    };
    let condition = job.def.get("if").cloned().unwrap_or(Value::Null);
    if !scope
        .condition(&condition)
        .map_err(|e| format!("job `{}` if: {e}", job.id))?
    {
        return Ok(Vec::new());
    }
    let raw = job
        .def
        .get("strategy")
        .and_then(|s| s.get("matrix"))
        .cloned()
        .unwrap_or(Value::Null);
    let evaluated = scope
        .eval_value(&raw)
        .map_err(|e| format!("job `{}` strategy.matrix: {e}", job.id))?;
    let cells: Vec<Cell> =
        matrix::expand(&evaluated).map_err(|e| format!("job `{}`: {e}", job.id))?;
    let total = cells.len();
    Ok(cells
        .into_iter()
        .enumerate()
        .map(|(index, cell)| CellSpec {
            job_id: job.id.clone(),
            def: job.def.clone(),
            index,
            total,
            matrix: cell,
            has_matrix: !raw.is_null(),
            fail_fast: job.fail_fast,
            needs: needs.clone(),
        })
        .collect())
}

fn needs_context(jobs: &[JobState], i: usize) -> Map<String, Value> {
    let mut out = Map::new();
    for need in &jobs[i].needs {
        if let Some(j) = jobs.iter().find(|j| &j.id == need) {
            let mut entry = Map::new();
            entry.insert(
                "result".into(),
                Value::String(aggregate(&j.cells).as_str().into()),
            );
            entry.insert("outputs".into(), Value::Object(j.outputs.clone()));
            out.insert(need.clone(), Value::Object(entry));
        }
    }
    out
}

/// success(): every direct need succeeded; failure()/cancelled(): some
/// ancestor failed / was cancelled.
fn job_status(jobs: &[JobState], i: usize) -> Status {
    let result_of = |id: &str| {
        jobs.iter()
            .find(|j| j.id == id)
            .map(|j| aggregate(&j.cells))
    };
    let success = jobs[i]
        .needs
        .iter()
        .all(|n| result_of(n) == Some(Conclusion::Success));
    let mut ancestors = BTreeSet::new();
    let mut stack: Vec<&String> = jobs[i].needs.iter().collect();
    while let Some(n) = stack.pop() {
        if ancestors.insert(n.clone()) {
            if let Some(j) = jobs.iter().find(|j| &j.id == n) {
                stack.extend(j.needs.iter());
            }
        }
    }
    let any = |c: Conclusion| ancestors.iter().any(|a| result_of(a) == Some(c));
    Status {
        success,
        failure: any(Conclusion::Failure),
        cancelled: any(Conclusion::Cancelled),
    }
}

/// A job's result from its cells: failure dominates, then cancelled.
fn aggregate(cells: &[JobReport]) -> Conclusion {
    let has = |c: Conclusion| cells.iter().any(|r| r.result == c);
    if has(Conclusion::Failure) {
        Conclusion::Failure
    } else if has(Conclusion::Cancelled) {
        Conclusion::Cancelled
    } else if cells.is_empty() || cells.iter().all(|r| r.result == Conclusion::Skipped) {
        Conclusion::Skipped
    } else {
        Conclusion::Success
    }
}

fn finish_cell(
    jobs: &mut [JobState],
    index: usize,
    report: JobReport,
    queue: &mut VecDeque<Unit>,
    reports: &mut Vec<JobReport>,
) {
    let job = &mut jobs[index];
    for (k, v) in &report.outputs {
        if !v.is_empty() {
            job.outputs.insert(k.clone(), Value::String(v.clone()));
        }
    }
    let failed = report.result == Conclusion::Failure;
    job.cells.push(report.clone());
    reports.push(report);
    let mut finished = 1;
    if failed && job.fail_fast {
        let (cancelled, kept): (Vec<Unit>, Vec<Unit>) =
            queue.drain(..).partition(|u| u.job == index);
        queue.extend(kept);
        for unit in cancelled {
            let r = job::cancelled(unit.spec);
            job.cells.push(r.clone());
            reports.push(r);
            finished += 1;
        }
    }
    if let State::Running { pending } = &mut job.state {
        *pending = pending.saturating_sub(finished);
        if *pending == 0 {
            job.state = State::Done;
        }
    }
}
