//! The emulated GitHub-hosted actions, matched by `owner/repo` whatever
//! the ref (tag or SHA pin): checkout (a real clone of the configured
//! repository, which stays `origin`), setup-python (the configured
//! interpreter, version checked), cache, upload/download-artifact,
//! github-script (under node), upload-pages-artifact and deploy-pages.
//!
//! Why: these are the only things the runner mocks. Every other `uses:`
//! (docker://, local ./ actions, any other repository) fails the step with
//! a message naming it, and so does an input an emulation does not honour:
//! a workflow must never "pass" here by something being silently ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lockstep_core::process::{self, Exit};

use super::artifacts;
use super::cache;
use super::context::{note, JobRun, StepIo};
use super::inputs::{input, ActionResult};

const EMULATED: &str =
    "actions/checkout, actions/setup-python, actions/cache (and /restore, /save), \
actions/upload-artifact, actions/download-artifact, actions/github-script, \
actions/upload-pages-artifact, actions/deploy-pages";

/// Runs the action `uses` with its evaluated `with:` inputs.
pub(crate) fn run(
    job: &mut JobRun,
    io: &StepIo,
    uses: &str,
    with: &BTreeMap<String, String>,
) -> ActionResult {
    let (repo, sub) = parse_uses(uses)?;
    note(
        &io.log,
        &format!("##[group]Run {uses} (emulated)\n{with:?}\n##[endgroup]"),
    );
    check_inputs(&repo, with)?;
    match (repo.as_str(), sub.as_str()) {
        ("actions/checkout", "") => checkout(job, io, with),
        ("actions/setup-python", "") => setup_python(job, io, with),
        ("actions/cache", "" | "restore" | "save") => cache::action(job, io, &sub, with),
        ("actions/upload-artifact", "") => artifacts::upload(job, io, with),
        ("actions/download-artifact", "") => artifacts::download(job, io, with),
        ("actions/github-script", "") => github_script(job, io, with),
        ("actions/upload-pages-artifact", "") => artifacts::upload_pages(job, io, with),
        ("actions/deploy-pages", "") => artifacts::deploy_pages(job, io, with),
        _ => Err(not_emulated(uses)),
    }
}

fn not_emulated(uses: &str) -> String {
    format!(
        "action `{uses}` is not emulated by the lockstep workflow runner (emulated: {EMULATED})"
    )
}

/// `owner/repo` (lowercase) and the path inside the repository.
fn parse_uses(uses: &str) -> Result<(String, String), String> {
    let uses = uses.trim();
    if uses.starts_with("docker://") || uses.starts_with("./") || uses.starts_with("../") {
        return Err(not_emulated(uses));
    }
    let Some((path, _ref)) = uses.split_once('@') else {
        return Err(format!(
            "`uses: {uses}` has no `@ref`: {}",
            not_emulated(uses)
        ));
    };
    let mut parts = path.splitn(3, '/');
    let owner = parts.next().unwrap_or_default();
    let name = parts.next().ok_or_else(|| not_emulated(uses))?;
    let sub = parts.next().unwrap_or_default().trim_end_matches('/');
    Ok((
        format!("{owner}/{name}").to_ascii_lowercase(),
        sub.to_string(),
    ))
}

/// The inputs each emulation accepts (the others would change behaviour
/// the emulation does not have).
fn known_inputs(repo: &str) -> &'static [&'static str] {
    match repo {
        "actions/checkout" => &[
            "repository",
            "ref",
            "token",
            "ssh-key",
            "ssh-known-hosts",
            "ssh-strict",
            "persist-credentials",
            "path",
            "clean",
            "fetch-depth",
            "fetch-tags",
            "show-progress",
            "lfs",
            "submodules",
            "set-safe-directory",
            "github-server-url",
        ],
        "actions/setup-python" => &[
            "python-version",
            "architecture",
            "check-latest",
            "token",
            "update-environment",
            "allow-prereleases",
            "freethreaded",
        ],
        "actions/cache" => &[
            "key",
            "path",
            "restore-keys",
            "lookup-only",
            "fail-on-cache-miss",
            "enableCrossOsArchive",
            "upload-chunk-size",
        ],
        "actions/upload-artifact" => &[
            "name",
            "path",
            "if-no-files-found",
            "retention-days",
            "compression-level",
            "overwrite",
            "include-hidden-files",
        ],
        "actions/download-artifact" => &[
            "name",
            "path",
            "pattern",
            "merge-multiple",
            "github-token",
            "repository",
            "run-id",
        ],
        "actions/github-script" => &[
            "script",
            "github-token",
            "debug",
            "user-agent",
            "previews",
            "result-encoding",
            "retries",
            "retry-exempt-status-codes",
            "base-url",
        ],
        "actions/upload-pages-artifact" => &["path", "name", "retention-days"],
        "actions/deploy-pages" => &[
            "token",
            "timeout",
            "error_count",
            "reporting_interval",
            "artifact_name",
            "preview",
        ],
        _ => &[],
    }
}

fn check_inputs(repo: &str, with: &BTreeMap<String, String>) -> Result<(), String> {
    let known = known_inputs(repo);
    if known.is_empty() {
        return Ok(());
    }
    match with.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "input `{k}` of {repo} is not supported by the emulation"
        )),
        None => Ok(()),
    }
}

/// What checkout fetches and checks out.
struct Target {
    refspecs: Vec<String>,
    /// `git checkout` arguments after `--force`.
    checkout: Vec<String>,
    /// The branch to give an upstream when `refs/remotes/origin/<it>` exists.
    branch: Option<String>,
}

fn checkout(job: &JobRun, io: &StepIo, with: &BTreeMap<String, String>) -> ActionResult {
    let cfg = job.run.cfg;
    if let Some(other) =
        input(with, "repository").filter(|r| !r.eq_ignore_ascii_case(&cfg.repository))
    {
        return Err(format!(
            "checkout of another repository ({other}) is not emulated"
        ));
    }
    if input(with, "lfs") == Some("true") {
        return Err("checkout with lfs: true is not emulated".into());
    }
    let depth: u64 = input(with, "fetch-depth")
        .unwrap_or("1")
        .parse()
        .map_err(|_| "fetch-depth must be a number".to_string())?;
    let origin =
        fs_err::canonicalize(&cfg.repo).map_err(|e| format!("the runner's repository: {e}"))?;
    let dest = job.resolve(input(with, "path").unwrap_or(""));
    fs_err::create_dir_all(&dest).map_err(|e| e.to_string())?;
    let git = |args: &[&str]| git_in(job, io, &dest, args);
    git(&["-c", "init.defaultBranch=main", "init", "-q"])?;
    git(&["remote", "add", "origin", &origin.display().to_string()])?;
    let target = target(job, io, &dest, input(with, "ref"))?;
    let fetch = fetch_args(depth, input(with, "fetch-tags") == Some("true"), &target);
    git(&fetch.iter().map(String::as_str).collect::<Vec<_>>())?;
    let mut co = vec!["checkout", "--force"];
    co.extend(target.checkout.iter().map(String::as_str));
    git(&co)?;
    if let Some(branch) = &target.branch {
        let upstream = format!("refs/remotes/origin/{branch}");
        if git(&["rev-parse", "--verify", "--quiet", &upstream]).is_ok() {
            let set = format!("--set-upstream-to=origin/{branch}");
            git(&["branch", "--quiet", &set, branch])?;
        }
    }
    submodules(job, io, &dest, input(with, "submodules"))?;
    let commit = capture(job, io, &dest, &["git", "rev-parse", "HEAD"])?;
    Ok((
        true,
        vec![
            ("commit".into(), commit.trim().to_string()),
            ("ref".into(), cfg.git_ref.clone()),
        ],
    ))
}

/// The `git fetch` arguments: the target's refspecs at `depth`, or every
/// branch and tag for full history (the event's commit is on one).
fn fetch_args(depth: u64, tags: bool, target: &Target) -> Vec<String> {
    let mut args: Vec<String> = [
        "-c",
        "protocol.version=2",
        "fetch",
        "--prune",
        "--no-recurse-submodules",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    // Fetching a commit by its name, as GitHub's servers allow.
    args.push("--upload-pack=git -c uploadpack.allowAnySHA1InWant=true upload-pack".into());
    if depth > 0 {
        args.push(format!("--depth={depth}"));
        if !tags {
            args.push("--no-tags".into());
        }
    }
    args.push("origin".into());
    if depth == 0 {
        args.push("+refs/heads/*:refs/remotes/origin/*".into());
        args.push("+refs/tags/*:refs/tags/*".into());
    } else {
        args.extend(target.refspecs.iter().cloned());
    }
    args
}

fn is_sha(text: &str) -> bool {
    text.len() == 40 && text.chars().all(|c| c.is_ascii_hexdigit())
}

/// The refspecs and checkout of the event's commit, or of `with.ref`.
fn target(job: &JobRun, io: &StepIo, dest: &Path, wanted: Option<&str>) -> Result<Target, String> {
    let cfg = job.run.cfg;
    let branch_target = |branch: &str, start: &str, spec: String| Target {
        refspecs: vec![spec],
        checkout: vec!["-B".into(), branch.to_string(), start.to_string()],
        branch: Some(branch.to_string()),
    };
    let detached = |spec: String, what: &str| Target {
        refspecs: vec![spec],
        checkout: vec!["--detach".into(), what.to_string()],
        branch: None,
    };
    let Some(wanted) = wanted else {
        return Ok(match cfg.git_ref.strip_prefix("refs/heads/") {
            Some(branch) => branch_target(
                branch,
                &cfg.sha,
                format!("+{}:refs/remotes/origin/{branch}", cfg.sha),
            ),
            None if cfg.git_ref.starts_with("refs/tags/") => {
                detached(format!("+{}:{}", cfg.sha, cfg.git_ref), &cfg.sha)
            }
            None => detached(cfg.sha.clone(), &cfg.sha),
        });
    };
    if is_sha(wanted) {
        return Ok(detached(wanted.to_string(), wanted));
    }
    let (kind, name) = match (
        wanted.strip_prefix("refs/heads/"),
        wanted.strip_prefix("refs/tags/"),
    ) {
        (Some(b), _) => ("branch", b.to_string()),
        (_, Some(t)) => ("tag", t.to_string()),
        _ => (ref_kind(job, io, dest, wanted)?, wanted.to_string()),
    };
    Ok(if kind == "branch" {
        let start = format!("refs/remotes/origin/{name}");
        branch_target(&name, &start, format!("+refs/heads/{name}:{start}"))
    } else {
        detached(
            format!("+refs/tags/{name}:refs/tags/{name}"),
            &format!("refs/tags/{name}"),
        )
    })
}

/// Whether `name` is a branch or a tag of origin.
fn ref_kind(job: &JobRun, io: &StepIo, dest: &Path, name: &str) -> Result<&'static str, String> {
    let heads = capture(
        job,
        io,
        dest,
        &["git", "ls-remote", "--heads", "origin", name],
    )?;
    if !heads.trim().is_empty() {
        return Ok("branch");
    }
    let tags = capture(
        job,
        io,
        dest,
        &["git", "ls-remote", "--tags", "origin", name],
    )?;
    if !tags.trim().is_empty() {
        return Ok("tag");
    }
    Err(format!(
        "ref `{name}` is neither a branch nor a tag of origin"
    ))
}

/// The test repositories' submodules are local paths, which git refuses to
/// clone from by default (GitHub's are https URLs): allowed for this clone.
const ALLOW_FILE: [&str; 2] = ["-c", "protocol.file.allow=always"];

fn submodules(job: &JobRun, io: &StepIo, dest: &Path, mode: Option<&str>) -> Result<(), String> {
    match mode {
        None | Some("false") => Ok(()),
        Some("true") => git_in(
            job,
            io,
            dest,
            &[&ALLOW_FILE[..], &["submodule", "update", "--init"]].concat(),
        ),
        Some("recursive") => git_in(
            job,
            io,
            dest,
            &[
                &ALLOW_FILE[..],
                &["submodule", "update", "--init", "--recursive"],
            ]
            .concat(),
        ),
        Some(other) => Err(format!(
            "submodules: `{other}` is not one of true, false, recursive"
        )),
    }
}

fn git_in(job: &JobRun, io: &StepIo, dir: &Path, args: &[&str]) -> Result<(), String> {
    let mut argv = vec!["git".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    note(&io.log, &format!("[command]{}", argv.join(" ")));
    match job.exec(io, argv, dir)? {
        Exit::Code(0) => Ok(()),
        other => Err(format!(
            "`git {}` failed: {}",
            args.join(" "),
            other.describe()
        )),
    }
}

/// Runs `argv` in `dir` and returns its stdout (stderr goes to the log).
fn capture(job: &JobRun, io: &StepIo, dir: &Path, argv: &[&str]) -> Result<String, String> {
    let out = job.dirs.temp.join(format!("capture-{}.out", io.index));
    let spec = process::Spec {
        argv: argv.iter().map(|a| a.to_string()).collect(),
        cwd: dir.to_path_buf(),
        env: io.env.clone(),
        timeout: io.timeout,
        log: io.log.with_extension("capture.log"),
        header: None,
    };
    let options = process::Options {
        stdout: Some(out.clone()),
        die_with_parent: true,
        ..Default::default()
    };
    let finished = process::run_with(&spec, &options, |_| {}).map_err(|e| e.render())?;
    let stderr = fs_err::read_to_string(&spec.log).unwrap_or_default();
    let _ = fs_err::remove_file(&spec.log);
    note(&io.log, stderr.trim_end());
    let text = fs_err::read_to_string(&out).map_err(|e| e.to_string())?;
    match finished.exit {
        Exit::Code(0) => Ok(text),
        other => Err(format!("`{}` failed: {}", argv.join(" "), other.describe())),
    }
}

fn setup_python(job: &JobRun, io: &StepIo, with: &BTreeMap<String, String>) -> ActionResult {
    if job.run.cfg.pythons.is_empty() {
        return Err(
            "setup-python: the runner was given no interpreter (RunnerConfig::pythons is empty)"
                .into(),
        );
    }
    let code = "import sys; print('%d.%d.%d' % sys.version_info[:3])";
    let mut known = Vec::new();
    for python in &job.run.cfg.pythons {
        let py = python.display().to_string();
        let version = capture(job, io, &job.dirs.workspace, &[&py, "-c", code])?
            .trim()
            .to_string();
        known.push((python.clone(), version));
    }
    // One version per line, as setup-python takes them; the last listed is
    // the default `python`.
    let wanted: Vec<&str> = input(with, "python-version")
        .map(|v| v.lines().map(str::trim).filter(|l| !l.is_empty()).collect())
        .unwrap_or_default();
    let chosen: Vec<(PathBuf, String)> = if wanted.is_empty() {
        known[..1].to_vec()
    } else {
        wanted
            .iter()
            .map(|w| {
                known
                    .iter()
                    .find(|(_, v)| version_matches(w, v))
                    .cloned()
                    .ok_or_else(|| {
                        format!(
                            "setup-python: python-version `{w}` was requested, but the runner has Python {}",
                            known.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>().join(", ")
                        )
                    })
            })
            .collect::<Result<_, _>>()?
    };
    let shims = job.dirs.temp.join(format!("setup-python-{}", io.index));
    fs_err::create_dir_all(&shims).map_err(|e| e.to_string())?;
    for (python, version) in &chosen {
        let minor: Vec<&str> = version.splitn(3, '.').take(2).collect();
        let name = format!("python{}", minor.join("."));
        let _ = std::fs::remove_file(shims.join(&name));
        std::os::unix::fs::symlink(python, shims.join(&name))
            .map_err(|e| format!("python shim: {e}"))?;
    }
    let (default, version) = chosen.last().cloned().unwrap_or_default();
    for name in ["python", "python3"] {
        std::os::unix::fs::symlink(&default, shims.join(name))
            .map_err(|e| format!("python shim: {e}"))?;
    }
    // A later GITHUB_PATH line comes first on PATH: the last version's
    // directory before the others, the shims before all.
    let mut path_lines: Vec<String> = chosen
        .iter()
        .map(|(python, _)| {
            let dir = python.parent().map(Path::to_path_buf).unwrap_or_default();
            dir.display().to_string()
        })
        .collect();
    path_lines.push(shims.display().to_string());
    let mut path_file = fs_err::read_to_string(&io.files.path).unwrap_or_default();
    for line in &path_lines {
        path_file.push_str(&format!("{line}\n"));
    }
    fs_err::write(&io.files.path, path_file).map_err(|e| e.to_string())?;
    let dir = default.parent().map(Path::to_path_buf).unwrap_or_default();
    let location = dir.parent().unwrap_or(&dir).display().to_string();
    fs_err::write(
        &io.files.env,
        format!(
            "pythonLocation={location}\nPython_ROOT_DIR={location}\nPython3_ROOT_DIR={location}\n"
        ),
    )
    .map_err(|e| e.to_string())?;
    let py = default.display().to_string();
    note(
        &io.log,
        &format!(
            "Python {} (default {version} from {py})",
            chosen
                .iter()
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    Ok((
        true,
        vec![
            ("python-version".into(), version),
            ("python-path".into(), py),
        ],
    ))
}

/// `3.12` matches 3.12.x, `3.12.1` only itself, `3.x` any 3.
fn version_matches(wanted: &str, actual: &str) -> bool {
    let wanted = wanted.trim().trim_end_matches(".x");
    actual == wanted || actual.starts_with(&format!("{wanted}."))
}

fn github_script(job: &JobRun, io: &StepIo, with: &BTreeMap<String, String>) -> ActionResult {
    let script = with
        .get("script")
        .filter(|s| !s.trim().is_empty())
        .ok_or("input `script` is required")?;
    let encoding = input(with, "result-encoding").unwrap_or("json");
    if !["json", "string"].contains(&encoding) {
        return Err(format!(
            "result-encoding: `{encoding}` is not json or string"
        ));
    }
    let payload = serde_json::json!({"inputs": job.run.inputs, "ref": job.run.cfg.git_ref, "after": job.run.cfg.sha});
    let js = include_str!("github_script.js")
        .replace("__PAYLOAD__", &payload.to_string())
        .replace(
            "__ENCODING__",
            &serde_json::Value::from(encoding).to_string(),
        )
        .replace(
            "__SCRIPT__",
            &serde_json::Value::from(script.as_str()).to_string(),
        );
    let file = job
        .dirs
        .temp
        .join(format!("github-script-{}.cjs", io.index));
    fs_err::write(&file, js).map_err(|e| e.to_string())?;
    let mut env = io.env.clone();
    env.extend(with.iter().map(|(k, v)| {
        (
            format!("INPUT_{}", k.replace(' ', "_").to_ascii_uppercase()),
            v.clone(),
        )
    }));
    let script_io = StepIo { env, ..io.clone() };
    let exit = job.exec(
        &script_io,
        vec!["node".into(), file.display().to_string()],
        &job.dirs.workspace,
    )?;
    Ok((exit == Exit::Code(0), Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uses_is_matched_by_owner_and_repo() {
        let sha = "actions/checkout@0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            parse_uses(sha).unwrap(),
            ("actions/checkout".into(), String::new())
        );
        assert_eq!(
            parse_uses("Actions/Cache/restore@v4").unwrap(),
            ("actions/cache".into(), "restore".into())
        );
        assert!(parse_uses("docker://alpine")
            .unwrap_err()
            .contains("not emulated"));
        assert!(parse_uses("./local").unwrap_err().contains("./local"));
        assert!(parse_uses("actions/checkout").is_err());
    }

    #[test]
    fn python_versions() {
        assert!(version_matches("3.12", "3.12.4"));
        assert!(version_matches("3.x", "3.11.7"));
        assert!(version_matches("3.11.7", "3.11.7"));
        assert!(!version_matches("3.1", "3.12.4"));
        assert!(!version_matches("3.13", "3.12.4"));
    }
}
