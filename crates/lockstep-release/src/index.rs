//! The static package index: `simple/` (PEP 503 HTML and PEP 691 JSON,
//! with PEP 592 yanks, PEP 658/714 core metadata, PEP 700 versions, sizes
//! and upload times) and `links.html` (a flat page for `pip -f`), written
//! from the store.
//!
//! pip and uv install from it over `file://`, from any static host, or
//! through `lockstep release serve`. `simple/` is built whole beside the
//! old one and swapped in with two renames, so a reader sees the old index
//! or the new one, never half of one; `links.html` is replaced atomically.

use std::collections::BTreeMap;
use std::path::Path;

use lockstep_core::Error;
use serde::Serialize;
use serde_json::json;

use crate::store::{self, Release, StoredFile};

pub use crate::store::SIMPLE;
pub const LINKS: &str = "links.html";
/// The PEP 691 media types.
pub const JSON_TYPE: &str = "application/vnd.pypi.simple.v1+json";
pub const HTML_TYPE: &str = "application/vnd.pypi.simple.v1+html";

/// What the index holds.
#[derive(Debug, Clone, Serialize)]
pub struct IndexReport {
    pub projects: usize,
    pub versions: usize,
    pub files: usize,
    pub yanked: usize,
}

/// One file as the index lists it.
struct Listed<'a> {
    file: &'a StoredFile,
    version: &'a str,
    yanked: Option<&'a str>,
    /// The release's files are hosted there, not under `files/`.
    hosted: Option<&'a str>,
}

/// Refuses a store without an index (nothing to serve).
pub fn require(index: &Path) -> Result<(), Error> {
    if index.join(SIMPLE).is_dir() {
        return Ok(());
    }
    Err(
        Error::usage(format!("{} has no index yet", index.display()))
            .hint("run `lockstep release publish` or `lockstep release index` first"),
    )
}

/// A base URL file links may start with: http(s) or file, nothing that
/// could break out of an HTML attribute.
pub fn check_base_url(url: &str) -> Result<(), Error> {
    let scheme_ok = ["https://", "http://", "file://"]
        .iter()
        .any(|s| url.starts_with(s));
    if !scheme_ok
        || url
            .chars()
            .any(|c| c.is_whitespace() || c == '"' || c.is_control())
    {
        return Err(Error::usage(format!(
            "--base-url `{}` is not an http(s) or file URL",
            lockstep_core::error::printable(url)
        ))
        .hint("give the URL the index directory is served at, e.g. https://example.com/index"));
    }
    Ok(())
}

/// Regenerates `simple/` and `links.html` under `index` from the store
/// (`release index`, and the validation index of a publish). `base_url`
/// makes file links absolute (`URL/files/...`); by default they are
/// relative, so the directory can be served from anywhere.
pub fn write_index(index: &Path, base_url: Option<&str>) -> Result<IndexReport, Error> {
    let releases = store::releases(index)?;
    let staged = stage_index(index, &releases, base_url)?;
    let report = staged.report();
    let simple = index.join(SIMPLE);
    let old = lockstep_core::fs::temp_name(&simple);
    let had_old = simple.is_dir();
    if had_old {
        fs_err::rename(&simple, &old)?;
    }
    if let Err(e) = fs_err::rename(staged.simple(), &simple) {
        if had_old {
            let _ = std::fs::rename(&old, &simple);
        }
        return Err(e.into());
    }
    if had_old {
        let _ = std::fs::remove_dir_all(&old);
    }
    fs_err::rename(staged.links(), index.join(LINKS))?;
    Ok(report)
}

/// An index built beside the live one (`simple/` in a staging directory,
/// `links.html` in a temporary file), not yet swapped in; dropped, it
/// leaves nothing.
pub struct StagedIndex {
    simple: lockstep_core::fs::StagedDir,
    links: tempfile::TempPath,
    report: IndexReport,
}

impl StagedIndex {
    /// The staged `simple/`.
    pub fn simple(&self) -> &Path {
        self.simple.path()
    }

    /// The staged `links.html`.
    pub fn links(&self) -> &Path {
        &self.links
    }

    /// What the index holds.
    pub fn report(&self) -> IndexReport {
        self.report.clone()
    }
}

/// The index of `releases` (the store as it is or will be), staged under
/// `index`.
pub fn stage_index(
    index: &Path,
    releases: &BTreeMap<String, Release>,
    base_url: Option<&str>,
) -> Result<StagedIndex, Error> {
    let mut projects: BTreeMap<&str, Vec<Listed>> = BTreeMap::new();
    for (dir, release) in releases {
        for file in &release.files {
            projects
                .entry(file.project.as_str())
                .or_default()
                .push(Listed {
                    file,
                    version: dir.as_str(),
                    yanked: release.yanked.as_deref(),
                    hosted: release.hosted.as_deref(),
                });
        }
    }
    fs_err::create_dir_all(index)?;
    let simple = lockstep_core::fs::StagedDir::beside(&index.join(SIMPLE))?;
    write_simple(simple.path(), &projects, base_url)?;
    let links_page = links_page(&projects, base_url, "");
    let links_path = lockstep_core::fs::temp_name(&index.join(LINKS));
    fs_err::write(&links_path, links_page.as_bytes())?;
    let links = tempfile::TempPath::try_from_path(&links_path).map_err(|e| {
        let _ = std::fs::remove_file(&links_path);
        Error::failed(format!("cannot stage {}", links_path.display())).cause(e.to_string())
    })?;
    let report = IndexReport {
        projects: projects.len(),
        versions: releases.len(),
        files: projects.values().map(Vec::len).sum(),
        yanked: releases
            .values()
            .filter(|r| r.yanked.is_some())
            .map(|r| r.files.len())
            .sum(),
    };
    Ok(StagedIndex {
        simple,
        links,
        report,
    })
}

fn write_simple(
    dir: &Path,
    projects: &BTreeMap<&str, Vec<Listed>>,
    base_url: Option<&str>,
) -> Result<(), Error> {
    fs_err::create_dir_all(dir)?;
    let mut root_html = String::from("<!DOCTYPE html>\n<html>\n<head><meta name=\"pypi:repository-version\" content=\"1.1\"><title>Simple index</title></head>\n<body>\n");
    for name in projects.keys() {
        root_html.push_str(&format!("<a href=\"{name}/\">{name}</a>\n"));
    }
    root_html.push_str("</body>\n</html>\n");
    fs_err::write(dir.join("index.html"), root_html)?;
    let root_json = json!({
        "meta": {"api-version": "1.1"},
        "projects": projects.keys().map(|n| json!({"name": n})).collect::<Vec<_>>(),
    });
    fs_err::write(dir.join("index.json"), format!("{root_json}\n"))?;
    for (name, files) in projects {
        let project_dir = dir.join(name);
        fs_err::create_dir_all(&project_dir)?;
        let prefix = match base_url {
            Some(url) => format!("{}/", url.trim_end_matches('/')),
            None => "../../".to_string(),
        };
        fs_err::write(
            project_dir.join("index.html"),
            project_html(name, files, &prefix),
        )?;
        fs_err::write(
            project_dir.join("index.json"),
            project_json(name, files, &prefix),
        )?;
    }
    Ok(())
}

fn url_of(prefix: &str, listed: &Listed) -> String {
    if let Some(hosted) = listed.hosted {
        return format!("{hosted}{}", listed.file.filename);
    }
    format!(
        "{prefix}{}/{}/{}",
        store::FILES,
        listed.version,
        listed.file.filename
    )
}

fn project_html(name: &str, files: &[Listed], prefix: &str) -> String {
    let mut html = format!(
        "<!DOCTYPE html>\n<html>\n<head><meta name=\"pypi:repository-version\" content=\"1.1\"><title>Links for {name}</title></head>\n<body>\n<h1>Links for {name}</h1>\n"
    );
    let mut sorted: Vec<&Listed> = files.iter().collect();
    sorted.sort_by(|a, b| a.file.filename.cmp(&b.file.filename));
    for listed in sorted {
        html.push_str(&anchor(prefix, listed));
        html.push('\n');
    }
    html.push_str("</body>\n</html>\n");
    html
}

fn anchor(prefix: &str, listed: &Listed) -> String {
    let f = listed.file;
    let mut attrs = format!(
        "href=\"{}#sha256={}\"",
        escape(&url_of(prefix, listed)),
        f.sha256
    );
    if let Some(rp) = &f.requires_python {
        attrs.push_str(&format!(" data-requires-python=\"{}\"", escape(rp)));
    }
    if let Some(reason) = listed.yanked {
        attrs.push_str(&format!(" data-yanked=\"{}\"", escape(reason)));
    }
    if let Some(m) = &f.metadata_sha256 {
        attrs.push_str(&format!(
            " data-dist-info-metadata=\"sha256={m}\" data-core-metadata=\"sha256={m}\""
        ));
    }
    format!("<a {attrs}>{}</a><br/>", escape(&f.filename))
}

fn project_json(name: &str, files: &[Listed], prefix: &str) -> String {
    let mut versions: Vec<&str> = files.iter().map(|l| l.version).collect();
    // A total order: PEP 440 versions by precedence, then anything else by text.
    versions.sort_by_cached_key(|v| {
        let parsed = v.parse::<pep440_rs::Version>().ok();
        (parsed.is_none(), parsed, v.to_string())
    });
    versions.dedup();
    let mut sorted: Vec<&Listed> = files.iter().collect();
    sorted.sort_by(|a, b| a.file.filename.cmp(&b.file.filename));
    let files: Vec<serde_json::Value> = sorted
        .iter()
        .map(|l| {
            json!({
                "filename": l.file.filename,
                "url": url_of(prefix, l),
                "hashes": {"sha256": l.file.sha256},
                "requires-python": l.file.requires_python,
                "size": l.file.size,
                "upload-time": l.file.upload_time,
                "yanked": l.yanked.map_or(serde_json::Value::Bool(false), |r| json!(r)),
                // PEP 691/714: `false` when no metadata file is served (an sdist).
                "core-metadata": l.file.metadata_sha256.as_ref().map_or(json!(false), |m| json!({"sha256": m})),
                "dist-info-metadata": l.file.metadata_sha256.as_ref().map_or(json!(false), |m| json!({"sha256": m})),
            })
        })
        .collect();
    let doc =
        json!({"meta": {"api-version": "1.1"}, "name": name, "versions": versions, "files": files});
    format!("{doc}\n")
}

/// The flat `--find-links` page (links relative to the index directory).
fn links_page(projects: &BTreeMap<&str, Vec<Listed>>, base_url: Option<&str>, _: &str) -> String {
    let prefix = match base_url {
        Some(url) => format!("{}/", url.trim_end_matches('/')),
        None => String::new(),
    };
    let mut html = String::from(
        "<!DOCTYPE html>\n<html>\n<head><title>Release files</title></head>\n<body>\n",
    );
    for files in projects.values() {
        let mut sorted: Vec<&Listed> = files.iter().filter(|l| l.yanked.is_none()).collect();
        sorted.sort_by(|a, b| a.file.filename.cmp(&b.file.filename));
        for listed in sorted {
            html.push_str(&anchor(&prefix, listed));
            html.push('\n');
        }
    }
    html.push_str("</body>\n</html>\n");
    html
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
