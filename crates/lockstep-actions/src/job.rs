//! One job (one matrix cell) on its own "machine": fresh workspace, HOME
//! and RUNNER_TEMP under `runs/<id>/jobs/<job>-<cell>/`, the steps in order
//! with GitHub's environment, `if:` and `continue-on-error` rules, file
//! commands, timeouts that kill the step's process group, `outputs:`
//! evaluated after the steps, and the post phase (cache saves).
//!
//! Why: the separation between jobs is what makes artifacts and caches
//! necessary in a real workflow; sharing a directory here would hide a
//! missing upload or download.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lockstep_core::process::Exit;
use serde_json::{json, Map, Value};

use super::actions;
use super::context::{note, CellSpec, Dirs, JobRun, Post, StepIo};
use super::expr::{self, Scope, Status};
use super::files::FileCommands;
use super::matrix::matrix_map;
use super::{Conclusion, JobReport, Run, StepReport};

/// How long steps that run after a job timeout may take.
const CANCEL_GRACE: Duration = Duration::from_secs(300);

/// A zero duration (for jobs that never ran).
const NO_TIME: Duration = Duration::ZERO;

/// The keys a step may have.
const STEP_KEYS: &[&str] = &[
    "id",
    "if",
    "name",
    "uses",
    "run",
    "shell",
    "with",
    "env",
    "continue-on-error",
    "timeout-minutes",
    "working-directory",
];

/// The contexts a job-level `if:`, `strategy.matrix` and `name:` see.
pub(crate) fn job_level_contexts(
    run: &Run,
    job_id: &str,
    needs: &Map<String, Value>,
) -> Map<String, Value> {
    let cfg = run.cfg;
    let mut secrets: Map<String, Value> = cfg
        .secrets
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    secrets.insert("GITHUB_TOKEN".into(), Value::String(cfg.token.clone()));
    let vars: Map<String, Value> = cfg
        .vars
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let mut m = Map::new();
    m.insert("github".into(), github_context(run, job_id, None));
    m.insert("inputs".into(), Value::Object(run.inputs.clone()));
    m.insert("vars".into(), Value::Object(vars));
    m.insert("secrets".into(), Value::Object(secrets));
    m.insert("needs".into(), Value::Object(needs.clone()));
    m
}

fn ref_name(git_ref: &str) -> &str {
    ["refs/heads/", "refs/tags/", "refs/"]
        .iter()
        .find_map(|p| git_ref.strip_prefix(p))
        .unwrap_or(git_ref)
}

fn github_context(run: &Run, job_id: &str, workspace: Option<&Path>) -> Value {
    let cfg = run.cfg;
    let owner = cfg.repository.split('/').next().unwrap_or_default();
    let event_inputs: Map<String, Value> = run
        .inputs
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(expr::to_text(v))))
        .collect();
    let mut event = json!({
        "ref": cfg.git_ref, "after": cfg.sha,
        "repository": {"full_name": cfg.repository, "owner": {"login": owner}},
    });
    if cfg.event_name == "workflow_dispatch" {
        event["inputs"] = Value::Object(event_inputs);
    }
    json!({
        "sha": cfg.sha, "ref": cfg.git_ref, "ref_name": ref_name(&cfg.git_ref),
        "ref_type": if cfg.git_ref.starts_with("refs/tags/") { "tag" } else { "branch" },
        "repository": cfg.repository, "repository_owner": owner,
        "run_id": cfg.run_id.to_string(), "run_number": cfg.run_id.to_string(), "run_attempt": "1",
        "workspace": workspace.map(|w| w.display().to_string()).unwrap_or_default(),
        "event_name": cfg.event_name, "event": event,
        "server_url": cfg.server_url, "api_url": cfg.api_url, "token": cfg.token,
        "job": job_id, "workflow": run.workflow_name, "actor": "lockstep-runner",
        "head_ref": "", "base_ref": "", "action": "", "action_path": "",
    })
}

fn cell_name(spec: &CellSpec) -> String {
    format!("{}-{}", spec.job_id, spec.index)
}

/// The report of a job that did not run (skipped, or failed before any
/// step with `message` in its log).
pub(crate) fn not_run(
    run: &Run,
    id: &str,
    def: &Map<String, Value>,
    result: Conclusion,
    message: Option<&str>,
) -> JobReport {
    let dir = run.run_dir.join("jobs").join(format!("{id}-0"));
    let mut steps = Vec::new();
    if let Some(message) = message {
        let log = run
            .run_dir
            .join("logs")
            .join(format!("{id}-0"))
            .join("job.log");
        note(&log, message);
        steps.push(StepReport {
            name: "Set up job".into(),
            outcome: Conclusion::Failure,
            log,
        });
    }
    JobReport {
        id: id.to_string(),
        name: def
            .get("name")
            .map(expr::to_text)
            .unwrap_or_else(|| id.to_string()),
        matrix: BTreeMap::new(),
        result,
        outputs: BTreeMap::new(),
        duration: NO_TIME,
        steps,
        workspace: dir.join("workspace"),
        home: dir.join("home"),
        summary: String::new(),
        container: container_image(def),
    }
}

/// The report of a cell that fail-fast cancelled before it started.
pub(crate) fn cancelled(spec: CellSpec) -> JobReport {
    JobReport {
        id: spec.job_id.clone(),
        name: default_name(&spec),
        matrix: matrix_map(&spec.matrix),
        result: Conclusion::Cancelled,
        outputs: BTreeMap::new(),
        duration: NO_TIME,
        steps: Vec::new(),
        workspace: PathBuf::new(),
        home: PathBuf::new(),
        summary: String::new(),
        container: container_image(&spec.def),
    }
}

fn default_name(spec: &CellSpec) -> String {
    if !spec.has_matrix {
        return spec.job_id.clone();
    }
    let values: Vec<String> = spec.matrix.values().map(expr::to_text).collect();
    format!("{} ({})", spec.job_id, values.join(", "))
}

fn container_image(def: &Map<String, Value>) -> Option<String> {
    match def.get("container")? {
        Value::String(s) => Some(s.clone()),
        other => other.get("image").map(expr::to_text),
    }
}

/// Runs one cell to the end.
pub(crate) fn run_cell(run: &Run, spec: CellSpec) -> JobReport {
    let start = Instant::now();
    tracing::debug!(job = %spec.job_id, cell = spec.index, "starting");
    let mut job = match JobRun::new(run, spec) {
        Ok(job) => job,
        Err(failed) => {
            let (spec, message) = *failed;
            let mut r = not_run(
                run,
                &spec.job_id,
                &spec.def,
                Conclusion::Failure,
                Some(&message),
            );
            r.matrix = matrix_map(&spec.matrix);
            return r;
        }
    };
    let name = job.evaluate_name();
    job.run_steps();
    let outputs = job.evaluate_outputs();
    job.run_posts();
    let result = if job.failed || job.timed_out {
        Conclusion::Failure
    } else {
        Conclusion::Success
    };
    tracing::debug!(job = %job.spec.job_id, cell = job.spec.index, %result, "finished");
    JobReport {
        id: job.spec.job_id.clone(),
        name,
        matrix: matrix_map(&job.spec.matrix),
        result,
        outputs,
        duration: start.elapsed(),
        steps: std::mem::take(&mut job.reports),
        workspace: job.dirs.workspace.clone(),
        home: job.dirs.home.clone(),
        summary: std::mem::take(&mut job.summary),
        container: container_image(&job.spec.def),
    }
}

impl<'r> JobRun<'r> {
    fn new(run: &'r Run<'r>, spec: CellSpec) -> Result<Self, Box<(CellSpec, String)>> {
        let root = run.run_dir.join("jobs").join(cell_name(&spec));
        let dirs = Dirs {
            workspace: root.join("workspace"),
            home: root.join("home"),
            temp: root.join("temp"),
            logs: run.run_dir.join("logs").join(cell_name(&spec)),
        };
        let made = [
            &dirs.workspace,
            &dirs.home.join(".lockstep"),
            &dirs.temp,
            &dirs.logs,
        ]
        .iter()
        .try_for_each(fs_err::create_dir_all);
        if let Err(e) = made {
            return Err(Box::new((
                spec,
                format!("cannot create the job's directories: {e}"),
            )));
        }
        let minutes = spec
            .def
            .get("timeout-minutes")
            .and_then(|v| expr::to_text(v).parse::<f64>().ok());
        let deadline = Instant::now() + minutes_to_duration(minutes.unwrap_or(360.0));
        let mut job = JobRun {
            run,
            contexts: Map::new(),
            spec,
            dirs,
            env_file: BTreeMap::new(),
            path_adds: Vec::new(),
            workflow_env: BTreeMap::new(),
            job_env: BTreeMap::new(),
            steps_ctx: Map::new(),
            failed: false,
            timed_out: false,
            deadline,
            posts: Vec::new(),
            summary: String::new(),
            reports: Vec::new(),
        };
        job.contexts = job.base_contexts();
        match job.evaluate_envs() {
            Ok(()) => Ok(job),
            Err(e) => Err(Box::new((job.spec, e))),
        }
    }

    fn base_contexts(&self) -> Map<String, Value> {
        let spec = &self.spec;
        let mut m = job_level_contexts(self.run, &spec.job_id, &spec.needs);
        m.insert(
            "github".into(),
            github_context(self.run, &spec.job_id, Some(&self.dirs.workspace)),
        );
        m.insert("matrix".into(), Value::Object(spec.matrix.clone()));
        m.insert(
            "strategy".into(),
            json!({"job-index": spec.index, "job-total": spec.total,
                   "fail-fast": spec.fail_fast, "max-parallel": self.run.cfg.max_parallel}),
        );
        m.insert(
            "runner".into(),
            json!({"os": "Linux", "arch": "X64", "name": "lockstep-runner",
                   "temp": self.dirs.temp.display().to_string(),
                   "tool_cache": self.dirs.temp.join("tool_cache").display().to_string(),
                   "debug": ""}),
        );
        m
    }

    /// The contexts a step sees, with `env` and the job's state so far.
    fn contexts(&self, step_env: &BTreeMap<String, String>) -> Map<String, Value> {
        let mut m = self.contexts.clone();
        let env: Map<String, Value> = self
            .env_file
            .iter()
            .chain(&self.workflow_env)
            .chain(&self.job_env)
            .chain(step_env)
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        m.insert("env".into(), Value::Object(env));
        m.insert("steps".into(), Value::Object(self.steps_ctx.clone()));
        let status = if self.failed { "failure" } else { "success" };
        m.insert("job".into(), json!({"status": status}));
        m
    }

    fn status(&self) -> Status {
        Status {
            success: !self.failed && !self.timed_out,
            failure: self.failed,
            cancelled: self.timed_out,
        }
    }

    /// Evaluates `raw` (a YAML value with templates) with the step contexts.
    fn eval_with(&self, step_env: &BTreeMap<String, String>, raw: &Value) -> Result<Value, String> {
        let contexts = self.contexts(step_env);
        let scope = Scope {
            contexts: &contexts,
            status: self.status(),
            workspace: Some(&self.dirs.workspace),
        };
        scope.eval_value(raw)
    }

    fn evaluate_envs(&mut self) -> Result<(), String> {
        let empty = BTreeMap::new();
        let wf = self.run.workflow.get("env").cloned().unwrap_or(Value::Null);
        self.workflow_env = env_map(
            &self
                .eval_with(&empty, &wf)
                .map_err(|e| format!("workflow env: {e}"))?,
        );
        let job = self.spec.def.get("env").cloned().unwrap_or(Value::Null);
        self.job_env = env_map(
            &self
                .eval_with(&empty, &job)
                .map_err(|e| format!("job env: {e}"))?,
        );
        Ok(())
    }

    fn evaluate_name(&self) -> String {
        match self.spec.def.get("name") {
            Some(raw) => self
                .eval_with(&BTreeMap::new(), raw)
                .map(|v| expr::to_text(&v))
                .unwrap_or_else(|_| expr::to_text(raw)),
            None => default_name(&self.spec),
        }
    }

    fn run_steps(&mut self) {
        let steps = match self.spec.def.get("steps") {
            Some(Value::Array(steps)) => steps.clone(),
            _ => {
                self.fail_setup("the job has no `steps:` list");
                return;
            }
        };
        if self.spec.def.contains_key("services") {
            self.fail_setup("job `services:` are not emulated");
            return;
        }
        for (i, step) in steps.iter().enumerate() {
            let report = match step.as_object() {
                Some(step) => self.step(i + 1, step),
                None => {
                    let log = self.dirs.logs.join(format!("{}.log", i + 1));
                    note(&log, &format!("step {} is not a mapping: {step}", i + 1));
                    self.failed = true;
                    StepReport {
                        name: format!("step {}", i + 1),
                        outcome: Conclusion::Failure,
                        log,
                    }
                }
            };
            self.reports.push(report);
        }
    }

    fn fail_setup(&mut self, message: &str) {
        let log = self.dirs.logs.join("job.log");
        note(&log, message);
        self.failed = true;
        self.reports.push(StepReport {
            name: "Set up job".into(),
            outcome: Conclusion::Failure,
            log,
        });
    }

    fn step(&mut self, index: usize, step: &Map<String, Value>) -> StepReport {
        let log = self.dirs.logs.join(format!("{index}.log"));
        let name = self.step_name(step);
        let (outcome, outputs) = self.attempt(index, step, &log);
        let conclusion = match outcome {
            Conclusion::Failure if self.continue_on_error(step, &log) => Conclusion::Success,
            other => other,
        };
        if conclusion == Conclusion::Failure {
            self.failed = true;
        }
        if let Some(id) = step.get("id").map(expr::to_text) {
            self.steps_ctx.insert(
                id,
                json!({"outputs": outputs, "outcome": outcome.as_str(), "conclusion": conclusion.as_str()}),
            );
        }
        StepReport { name, outcome, log }
    }

    /// Decides whether the step runs, runs it: (outcome, outputs).
    fn attempt(
        &mut self,
        index: usize,
        step: &Map<String, Value>,
        log: &Path,
    ) -> (Conclusion, Map<String, Value>) {
        let contexts = self.contexts(&BTreeMap::new());
        let scope = Scope {
            contexts: &contexts,
            status: self.status(),
            workspace: Some(&self.dirs.workspace),
        };
        let condition = step.get("if").cloned().unwrap_or(Value::Null);
        match scope.condition(&condition) {
            Ok(false) => {
                note(
                    log,
                    &format!("skipped: `if: {}` is false", expr::to_text(&condition)),
                );
                return (Conclusion::Skipped, Map::new());
            }
            Err(e) => {
                note(log, &e);
                return (Conclusion::Failure, Map::new());
            }
            Ok(true) => {}
        }
        let mut outputs = BTreeMap::new();
        let ok = match self.execute(index, step, log, &mut outputs) {
            Ok(ok) => ok,
            Err(e) => {
                note(log, &format!("error: {e}"));
                false
            }
        };
        let outputs = outputs
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        (
            if ok {
                Conclusion::Success
            } else {
                Conclusion::Failure
            },
            outputs,
        )
    }

    fn step_name(&self, step: &Map<String, Value>) -> String {
        if let Some(raw) = step.get("name") {
            return self
                .eval_with(&BTreeMap::new(), raw)
                .map(|v| expr::to_text(&v))
                .unwrap_or_else(|_| expr::to_text(raw));
        }
        match (step.get("run"), step.get("uses")) {
            (Some(run), _) => format!(
                "Run {}",
                expr::to_text(run).lines().next().unwrap_or_default()
            ),
            (None, Some(uses)) => format!("Run {}", expr::to_text(uses)),
            _ => "step".to_string(),
        }
    }

    fn continue_on_error(&self, step: &Map<String, Value>, log: &Path) -> bool {
        let Some(raw) = step.get("continue-on-error") else {
            return false;
        };
        match self.eval_with(&BTreeMap::new(), raw) {
            Ok(v) => expr::truthy(&v) && expr::to_text(&v) != "false",
            Err(e) => {
                note(log, &format!("continue-on-error: {e}"));
                false
            }
        }
    }

    /// Runs the step; file commands are applied whatever the outcome.
    fn execute(
        &mut self,
        index: usize,
        step: &Map<String, Value>,
        log: &Path,
        outputs: &mut BTreeMap<String, String>,
    ) -> Result<bool, String> {
        if let Some(k) = step.keys().find(|k| !STEP_KEYS.contains(&k.as_str())) {
            return Err(format!("the step has an unknown key `{k}`"));
        }
        let raw_env = step.get("env").cloned().unwrap_or(Value::Null);
        let step_env = env_map(
            &self
                .eval_with(&BTreeMap::new(), &raw_env)
                .map_err(|e| format!("step env: {e}"))?,
        );
        let files = FileCommands::create(
            &self.dirs.temp.join("_runner_file_commands"),
            &index.to_string(),
        )
        .map_err(|e| format!("cannot create the step's files: {e}"))?;
        let io = StepIo {
            index,
            log: log.to_path_buf(),
            env: self.process_env(&step_env, &files, step, index),
            files,
            timeout: self.step_timeout(step, &step_env)?,
        };
        let ran = match (step.get("run"), step.get("uses")) {
            (Some(script), None) => self.run_script(step, script, &step_env, &io),
            (None, Some(uses)) => {
                let with = self.with_inputs(step, &step_env)?;
                actions::run(self, &io, &expr::to_text(uses), &with).map(|(ok, outs)| {
                    outputs.extend(outs);
                    ok
                })
            }
            _ => Err("a step needs exactly one of `run:` and `uses:`".to_string()),
        };
        if !self.timed_out && Instant::now() >= self.deadline {
            self.timed_out = true;
            note(
                log,
                "##[error]The job's timeout-minutes was reached: the job is cancelled",
            );
        }
        let applied = self.apply_files(&io.files, outputs);
        let ok = ran?;
        applied?;
        Ok(ok)
    }

    fn apply_files(
        &mut self,
        files: &FileCommands,
        outputs: &mut BTreeMap<String, String>,
    ) -> Result<(), String> {
        let got = files.collect()?;
        self.env_file.extend(got.env);
        outputs.extend(got.outputs);
        self.path_adds.extend(got.paths);
        self.summary.push_str(&got.summary);
        Ok(())
    }

    fn with_inputs(
        &self,
        step: &Map<String, Value>,
        step_env: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, String> {
        let raw = step.get("with").cloned().unwrap_or(Value::Null);
        let value = self
            .eval_with(step_env, &raw)
            .map_err(|e| format!("with: {e}"))?;
        Ok(value
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), expr::to_text(v)))
                    .collect()
            })
            .unwrap_or_default())
    }

    fn step_timeout(
        &self,
        step: &Map<String, Value>,
        step_env: &BTreeMap<String, String>,
    ) -> Result<Option<Duration>, String> {
        // After a job timeout, the steps that still run (always(),
        // cancelled()) get the grace GitHub gives them.
        let left = match self.timed_out {
            true => CANCEL_GRACE,
            false => self.deadline.saturating_duration_since(Instant::now()),
        };
        let Some(raw) = step.get("timeout-minutes") else {
            return Ok(Some(left));
        };
        let value = self.eval_with(step_env, raw)?;
        let minutes = expr::to_text(&value).parse::<f64>().map_err(|_| {
            format!(
                "timeout-minutes: `{}` is not a number",
                expr::to_text(&value)
            )
        })?;
        Ok(Some(minutes_to_duration(minutes).min(left)))
    }

    fn run_script(
        &mut self,
        step: &Map<String, Value>,
        script: &Value,
        step_env: &BTreeMap<String, String>,
        io: &StepIo,
    ) -> Result<bool, String> {
        let shell = self.shell(step)?;
        let contexts = self.contexts(step_env);
        let scope = Scope {
            contexts: &contexts,
            status: self.status(),
            workspace: Some(&self.dirs.workspace),
        };
        let text = scope.substitute(&expr::to_text(script))?;
        let file = self.dirs.temp.join(format!("step_{}.sh", io.index));
        fs_err::write(&file, &text).map_err(|e| e.to_string())?;
        let cwd = self.working_directory(step, step_env)?;
        let mut argv: Vec<String> = shell.split_whitespace().map(String::from).collect();
        argv.push(file.display().to_string());
        note(
            &io.log,
            &format!(
                "##[group]Run {}\n{}\n##[endgroup]",
                text.lines().next().unwrap_or_default(),
                text.trim_end()
            ),
        );
        let exit = self.exec(io, argv, &cwd)?;
        if exit != Exit::Code(0) {
            note(
                &io.log,
                &format!("##[error]Process completed with {}.", exit.describe()),
            );
        }
        Ok(exit == Exit::Code(0))
    }

    /// The argv prefix of the step's shell: GitHub's `bash -e {0}` when none
    /// is named, `bash --noprofile --norc -eo pipefail {0}` for `bash`.
    fn shell(&self, step: &Map<String, Value>) -> Result<&'static str, String> {
        let named = step
            .get("shell")
            .or_else(|| defaults_run(&self.spec.def, "shell"))
            .or_else(|| defaults_run(&self.run.workflow, "shell"));
        match named.map(expr::to_text).as_deref() {
            None => Ok("bash -e"),
            Some("bash") => Ok("bash --noprofile --norc -eo pipefail"),
            Some(other) => Err(format!("shell `{other}` is not supported (only bash is)")),
        }
    }

    fn working_directory(
        &self,
        step: &Map<String, Value>,
        step_env: &BTreeMap<String, String>,
    ) -> Result<PathBuf, String> {
        let raw = step
            .get("working-directory")
            .or_else(|| defaults_run(&self.spec.def, "working-directory"))
            .or_else(|| defaults_run(&self.run.workflow, "working-directory"));
        let Some(raw) = raw else {
            return Ok(self.dirs.workspace.clone());
        };
        let dir = expr::to_text(&self.eval_with(step_env, raw)?);
        Ok(self.dirs.workspace.join(dir))
    }

    fn process_env(
        &self,
        step_env: &BTreeMap<String, String>,
        files: &FileCommands,
        step: &Map<String, Value>,
        index: usize,
    ) -> Vec<(String, String)> {
        let mut env: BTreeMap<String, String> = self.default_env(step, index);
        env.extend(files.vars());
        env.extend(self.run.cfg.env.clone());
        for layer in [&self.env_file, &self.workflow_env, &self.job_env, step_env] {
            env.extend(layer.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let base = env
            .get("PATH")
            .cloned()
            .or_else(|| std::env::var("PATH").ok())
            .unwrap_or_default();
        let mut parts: Vec<String> = self.path_adds.iter().rev().cloned().collect();
        parts.push(self.dirs.home.join(".cargo/bin").display().to_string());
        parts.push(base);
        env.insert("PATH".into(), parts.join(":"));
        env.into_iter().collect()
    }

    fn default_env(&self, step: &Map<String, Value>, index: usize) -> BTreeMap<String, String> {
        let cfg = self.run.cfg;
        let owner = cfg.repository.split('/').next().unwrap_or_default();
        let action = step
            .get("id")
            .map(expr::to_text)
            .unwrap_or_else(|| format!("__run_{index}"));
        let pairs: Vec<(&str, String)> = vec![
            ("CI", "true".into()),
            ("GITHUB_ACTIONS", "true".into()),
            (
                "GITHUB_WORKSPACE",
                self.dirs.workspace.display().to_string(),
            ),
            ("GITHUB_SHA", cfg.sha.clone()),
            ("GITHUB_REF", cfg.git_ref.clone()),
            ("GITHUB_REF_NAME", ref_name(&cfg.git_ref).to_string()),
            ("GITHUB_RUN_ID", cfg.run_id.to_string()),
            ("GITHUB_RUN_ATTEMPT", "1".into()),
            ("GITHUB_RUN_NUMBER", cfg.run_id.to_string()),
            ("GITHUB_REPOSITORY", cfg.repository.clone()),
            ("GITHUB_REPOSITORY_OWNER", owner.to_string()),
            ("GITHUB_EVENT_NAME", cfg.event_name.clone()),
            ("GITHUB_SERVER_URL", cfg.server_url.clone()),
            ("GITHUB_API_URL", cfg.api_url.clone()),
            ("GITHUB_JOB", self.spec.job_id.clone()),
            ("GITHUB_WORKFLOW", self.run.workflow_name.clone()),
            ("GITHUB_ACTION", action),
            ("GITHUB_ACTOR", "lockstep-runner".into()),
            ("RUNNER_OS", "Linux".into()),
            ("RUNNER_ARCH", "X64".into()),
            ("RUNNER_NAME", "lockstep-runner".into()),
            ("RUNNER_TEMP", self.dirs.temp.display().to_string()),
            ("HOME", self.dirs.home.display().to_string()),
            // The test repositories' submodules are local paths, which git
            // refuses to fetch from by default (GitHub's are https URLs).
            ("GIT_ALLOW_PROTOCOL", "file:https:http:ssh:git".into()),
            (
                "LOCKSTEP_HOME",
                self.dirs.home.join(".lockstep").display().to_string(),
            ),
        ];
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    fn evaluate_outputs(&mut self) -> BTreeMap<String, String> {
        let raw = self.spec.def.get("outputs").cloned().unwrap_or(Value::Null);
        match self.eval_with(&BTreeMap::new(), &raw) {
            Ok(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| (k.clone(), expr::to_text(v)))
                .collect(),
            Ok(_) => BTreeMap::new(),
            Err(e) => {
                let log = self.dirs.logs.join("outputs.log");
                note(&log, &format!("job outputs: {e}"));
                self.failed = true;
                self.reports.push(StepReport {
                    name: "Job outputs".into(),
                    outcome: Conclusion::Failure,
                    log,
                });
                BTreeMap::new()
            }
        }
    }

    /// The post phase: cache saves, last registered first, when the job
    /// succeeded.
    fn run_posts(&mut self) {
        let posts = std::mem::take(&mut self.posts);
        for (i, post) in posts.iter().rev().enumerate() {
            let log = self.dirs.logs.join(format!("post-{}.log", i + 1));
            let Post::SaveCache { step, key, paths } = post;
            let name = format!("Post {step}");
            if self.failed || self.timed_out {
                note(&log, "skipped: the job did not succeed, nothing is saved");
                self.reports.push(StepReport {
                    name,
                    outcome: Conclusion::Skipped,
                    log,
                });
                continue;
            }
            let message = super::cache::save(self, key, paths);
            note(&log, &message);
            self.reports.push(StepReport {
                name,
                outcome: Conclusion::Success,
                log,
            });
        }
    }
}

fn defaults_run<'m>(def: &'m Map<String, Value>, key: &str) -> Option<&'m Value> {
    def.get("defaults")?.get("run")?.get(key)
}

fn env_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), expr::to_text(v)))
                .collect()
        })
        .unwrap_or_default()
}

/// `timeout-minutes` (fractions allowed) as a duration, at most a year.
pub(crate) fn minutes_to_duration(minutes: f64) -> Duration {
    const YEAR: f64 = 365.0 * 24.0 * 3600.0;
    let secs = (minutes * 60.0).clamp(0.0, YEAR);
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::ZERO)
}
