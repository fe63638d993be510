//! Artifacts between jobs of a run (upload-artifact / download-artifact v4
//! rules) and GitHub Pages (upload-pages-artifact's tar, deploy-pages'
//! permission and environment checks), stored under `runs/<id>/artifacts/`.
//!
//! Why: jobs here share no directory, so whatever one job needs from
//! another must travel as an artifact, with the layout the real actions
//! give it (paths relative to the least common ancestor of the search
//! paths; hidden files left out unless asked; one upload per name).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::context::{note, JobRun, StepIo};
use super::glob::{self, copy_tree, is_glob, walk_files};
use super::inputs::{flag, input, ActionResult};

static SEQUENCE: AtomicU64 = AtomicU64::new(1);

fn artifacts_dir(job: &JobRun) -> PathBuf {
    job.run.run_dir.join("artifacts")
}

fn check_name(name: &str) -> Result<(), String> {
    let bad = name.is_empty()
        || name.starts_with('.')
        || name.contains(['/', '\\', ':', '"', '<', '>', '|', '*', '?']);
    if bad {
        return Err(format!("invalid artifact name `{name}`"));
    }
    Ok(())
}

/// `actions/upload-artifact`.
pub(crate) fn upload(job: &JobRun, io: &StepIo, with: &BTreeMap<String, String>) -> ActionResult {
    let name = input(with, "name").unwrap_or("artifact");
    check_name(name)?;
    let patterns: Vec<&str> = with
        .get("path")
        .map(|p| p.lines().map(str::trim).filter(|l| !l.is_empty()).collect())
        .unwrap_or_default();
    if patterns.is_empty() {
        return Err("input `path` is required".into());
    }
    let mode = input(with, "if-no-files-found").unwrap_or("warn");
    if !["warn", "error", "ignore"].contains(&mode) {
        return Err(format!(
            "if-no-files-found: `{mode}` is not one of warn, error, ignore"
        ));
    }
    let (files, root) = search(job, &patterns, flag(with, "include-hidden-files"))?;
    if files.is_empty() {
        return no_files(io, mode, &patterns);
    }
    let items: Vec<(PathBuf, PathBuf)> = files
        .iter()
        .map(|f| (f.clone(), f.strip_prefix(&root).unwrap_or(f).to_path_buf()))
        .collect();
    let id = publish(job, name, &items, flag(with, "overwrite"))?;
    note(
        &io.log,
        &format!(
            "uploaded {} file(s) as artifact `{name}` (root {})",
            items.len(),
            root.display()
        ),
    );
    let url = format!(
        "{}/{}/actions/runs/{}/artifacts/{id}",
        job.run.cfg.server_url, job.run.cfg.repository, job.run.cfg.run_id
    );
    Ok((
        true,
        vec![
            ("artifact-id".into(), id.to_string()),
            ("artifact-url".into(), url),
        ],
    ))
}

/// if-no-files-found: `error` fails the step, `warn` says so, `ignore` not.
fn no_files(io: &StepIo, mode: &str, patterns: &[&str]) -> ActionResult {
    let message = format!(
        "No files were found with the provided path: {}. No artifacts will be uploaded.",
        patterns.join(", ")
    );
    match mode {
        "error" => Err(message),
        "warn" => {
            note(&io.log, &format!("warning: {message}"));
            Ok((true, Vec::new()))
        }
        _ => Ok((true, Vec::new())),
    }
}

/// Stores `items` (source, path inside the artifact) as artifact `name`;
/// the artifact's id.
fn publish(
    job: &JobRun,
    name: &str,
    items: &[(PathBuf, PathBuf)],
    overwrite: bool,
) -> Result<u64, String> {
    let dest = artifacts_dir(job).join(name);
    if dest.exists() && !overwrite {
        return Err(format!(
            "an artifact named `{name}` was already uploaded in this run (upload-artifact v4 refuses a second upload: use another name or overwrite: true)"
        ));
    }
    let id = SEQUENCE.fetch_add(1, Ordering::SeqCst);
    let tmp = artifacts_dir(job).join(format!(".tmp-{name}-{id}"));
    if let Err(e) = fill(&tmp, items) {
        let _ = fs_err::remove_dir_all(&tmp);
        return Err(e);
    }
    if overwrite && dest.exists() {
        fs_err::remove_dir_all(&dest).map_err(|e| e.to_string())?;
    }
    fs_err::rename(&tmp, &dest).map_err(|e| {
        let _ = fs_err::remove_dir_all(&tmp);
        format!("artifact `{name}` was uploaded twice at once: {e}")
    })?;
    Ok(id)
}

fn fill(tmp: &Path, items: &[(PathBuf, PathBuf)]) -> Result<(), String> {
    fs_err::create_dir_all(tmp).map_err(|e| e.to_string())?;
    for (src, rel) in items {
        let inside = if rel.as_os_str().is_empty() || rel.is_absolute() {
            PathBuf::from(src.file_name().unwrap_or_default())
        } else {
            rel.clone()
        };
        copy_tree(src, &tmp.join(inside))
            .map_err(|e| format!("uploading {}: {e}", src.display()))?;
    }
    Ok(())
}

/// The files the patterns select, and the root their layout is relative to.
fn search(
    job: &JobRun,
    patterns: &[&str],
    hidden: bool,
) -> Result<(Vec<PathBuf>, PathBuf), String> {
    let excludes: Vec<String> = patterns
        .iter()
        .filter_map(|p| p.strip_prefix('!'))
        .map(|p| job.resolve(p).display().to_string())
        .collect();
    let mut roots = Vec::new();
    let mut files = Vec::new();
    for p in patterns.iter().filter(|p| !p.starts_with('!')) {
        let resolved = job.resolve(p);
        let root = search_root(&resolved);
        files.extend(
            matching(&resolved, &root, hidden).map_err(|e| format!("searching `{p}`: {e}"))?,
        );
        roots.push(root);
    }
    files.retain(|f| {
        !excludes
            .iter()
            .any(|x| glob::matches(x, &f.display().to_string()))
    });
    files.sort();
    files.dedup();
    roots.sort();
    roots.dedup();
    let kept: Vec<PathBuf> = roots
        .iter()
        .filter(|r| !roots.iter().any(|o| o != *r && r.starts_with(o)))
        .cloned()
        .collect();
    let root = if kept.len() > 1 {
        common_ancestor(&kept)
    } else if files.len() == 1 && kept.first() == files.first() {
        files[0].parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        kept.first().cloned().unwrap_or_default()
    };
    Ok((files, root))
}

/// The path up to its first component with a glob character.
fn search_root(pattern: &Path) -> PathBuf {
    let mut root = PathBuf::new();
    for c in pattern.components() {
        if is_glob(&c.as_os_str().to_string_lossy()) {
            break;
        }
        root.push(c);
    }
    root
}

fn hidden_name(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
}

fn matching(pattern: &Path, root: &Path, hidden: bool) -> std::io::Result<Vec<PathBuf>> {
    let meta = match fs_err::symlink_metadata(root) {
        Ok(m) => m,
        Err(_) => return Ok(Vec::new()),
    };
    if !hidden && hidden_name(root) {
        return Ok(Vec::new());
    }
    if !meta.is_dir() {
        return Ok(if pattern == root {
            vec![root.to_path_buf()]
        } else {
            Vec::new()
        });
    }
    let rest = pattern
        .strip_prefix(root)
        .map(|r| r.display().to_string())
        .unwrap_or_default();
    let all = walk_files(root, !hidden)?;
    Ok(all
        .into_iter()
        .filter(|rel| rest.is_empty() || glob::matches(&rest, rel) || prefix_match(&rest, rel))
        .map(|rel| root.join(rel))
        .collect())
}

/// A pattern that names a directory selects the files under it.
fn prefix_match(pattern: &str, rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    (1..parts.len()).any(|n| glob::matches(pattern, &parts[..n].join("/")))
}

fn common_ancestor(paths: &[PathBuf]) -> PathBuf {
    let mut iter = paths.iter();
    let Some(first) = iter.next() else {
        return PathBuf::new();
    };
    let mut common: Vec<Component> = first.components().collect();
    for p in iter {
        let n = common
            .iter()
            .zip(p.components())
            .take_while(|(a, b)| *a == b)
            .count();
        common.truncate(n);
    }
    common.iter().collect()
}

/// `actions/download-artifact`.
pub(crate) fn download(job: &JobRun, io: &StepIo, with: &BTreeMap<String, String>) -> ActionResult {
    if let Some(id) = input(with, "run-id").filter(|id| *id != job.run.cfg.run_id.to_string()) {
        return Err(format!(
            "downloading from another run ({id}) is not emulated"
        ));
    }
    let dest = job.resolve(input(with, "path").unwrap_or(""));
    let dir = artifacts_dir(job);
    if let Some(name) = input(with, "name") {
        let src = dir.join(name);
        if check_name(name).is_err() || !src.is_dir() {
            return Err(format!(
                "Unable to download artifact(s): Artifact not found for name: {name}"
            ));
        }
        copy_contents(&src, &dest)?;
        note(
            &io.log,
            &format!("downloaded artifact `{name}` to {}", dest.display()),
        );
        return Ok((
            true,
            vec![("download-path".into(), dest.display().to_string())],
        ));
    }
    let pattern = input(with, "pattern");
    let names = artifact_names(&dir)?;
    let chosen: Vec<&String> = names
        .iter()
        .filter(|n| pattern.is_none_or(|p| glob::match_segment(p, n)))
        .collect();
    let merge = flag(with, "merge-multiple");
    for name in &chosen {
        let target = if merge { dest.clone() } else { dest.join(name) };
        copy_contents(&dir.join(name), &target)?;
    }
    note(
        &io.log,
        &format!(
            "downloaded {} artifact(s) {chosen:?} to {}",
            chosen.len(),
            dest.display()
        ),
    );
    Ok((
        true,
        vec![("download-path".into(), dest.display().to_string())],
    ))
}

fn artifact_names(dir: &Path) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = fs_err::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    Ok(names)
}

fn copy_contents(src: &Path, dest: &Path) -> Result<(), String> {
    fs_err::create_dir_all(dest).map_err(|e| e.to_string())?;
    for entry in fs_err::read_dir(src).map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        copy_tree(&entry.path(), &dest.join(entry.file_name())).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// `actions/upload-pages-artifact`: the site directory as `artifact.tar`
/// (symlinks stored as symlinks, `.git` and `.github` left out).
pub(crate) fn upload_pages(
    job: &JobRun,
    io: &StepIo,
    with: &BTreeMap<String, String>,
) -> ActionResult {
    let name = input(with, "name").unwrap_or("github-pages");
    check_name(name)?;
    let site = job.resolve(input(with, "path").unwrap_or("_site/"));
    if !site.is_dir() {
        return Err(format!(
            "the pages path {} is not a directory",
            site.display()
        ));
    }
    let tar_path = job.dirs.temp.join(format!("pages-{}.tar", io.index));
    write_tar(&site, &tar_path).map_err(|e| format!("tarring {}: {e}", site.display()))?;
    let id = publish(
        job,
        name,
        &[(tar_path, PathBuf::from("artifact.tar"))],
        false,
    )?;
    note(
        &io.log,
        &format!("uploaded {} as pages artifact `{name}`", site.display()),
    );
    Ok((true, vec![("artifact_id".into(), id.to_string())]))
}

fn write_tar(site: &Path, tar_path: &Path) -> std::io::Result<()> {
    let file = fs_err::File::create(tar_path)?;
    let mut builder = tar::Builder::new(file);
    builder.follow_symlinks(false);
    for rel in walk_files(site, false)? {
        if rel.split('/').any(|c| c == ".git" || c == ".github") {
            continue;
        }
        builder.append_path_with_name(site.join(&rel), &rel)?;
    }
    builder.into_inner()?.sync_all()
}

/// `actions/deploy-pages`: checks the job may deploy, extracts the site.
pub(crate) fn deploy_pages(
    job: &JobRun,
    io: &StepIo,
    with: &BTreeMap<String, String>,
) -> ActionResult {
    let missing = missing_pages_rights(&job.permissions(), job.environment());
    if !missing.is_empty() {
        return Err(format!(
            "deploy-pages cannot deploy: {}",
            missing.join("; ")
        ));
    }
    let name = input(with, "artifact_name").unwrap_or("github-pages");
    let tar_path = artifacts_dir(job).join(name).join("artifact.tar");
    if !tar_path.is_file() {
        return Err(format!(
            "no pages artifact `{name}` in this run (run upload-pages-artifact first)"
        ));
    }
    let site = job.run.run_dir.join("site");
    let _ = fs_err::remove_dir_all(&site);
    fs_err::create_dir_all(&site).map_err(|e| e.to_string())?;
    let file = fs_err::File::open(&tar_path).map_err(|e| e.to_string())?;
    tar::Archive::new(file)
        .unpack(&site)
        .map_err(|e| format!("extracting {}: {e}", tar_path.display()))?;
    note(
        &io.log,
        &format!("deployed to {} ({})", job.run.cfg.pages_url, site.display()),
    );
    Ok((
        true,
        vec![("page_url".into(), job.run.cfg.pages_url.clone())],
    ))
}

/// What the job lacks to deploy Pages: `pages: write`, `id-token: write`,
/// the `github-pages` environment.
fn missing_pages_rights(permissions: &Value, environment: Option<String>) -> Vec<String> {
    let mut missing = Vec::new();
    let all_write = permissions.as_str() == Some("write-all");
    for scope in ["pages", "id-token"] {
        let granted = all_write || permissions.get(scope).and_then(Value::as_str) == Some("write");
        if !granted {
            missing.push(format!("the job's permissions lack `{scope}: write`"));
        }
    }
    if environment.as_deref() != Some("github-pages") {
        missing.push(format!(
            "the job's environment is {} (it must be `github-pages`)",
            environment
                .map(|e| format!("`{e}`"))
                .unwrap_or_else(|| "not set".into())
        ));
    }
    missing
}
