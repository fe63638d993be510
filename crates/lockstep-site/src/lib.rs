//! The report site: a static HTML site generated from the results history
//! (`lockstep report site`), to read on a laptop or publish with Pages.
//!
//! It owns turning an already loaded history (lockstep-history's
//! [`Loaded`]) and an optional release store into six pages
//! (`index.html`, `tests.html`, `bench.html`, `integrate.html`,
//! `releases.html`, `speed.html`) with hand-written SVG charts. It must not read or
//! change the history's files itself (lockstep-history does), decide
//! regressions (lockstep-stats does, through lockstep-history's analysis)
//! or print anything (the binary does, from the returned [`SiteReport`]).
//!
//! Why a site of plain files: it is published by copying (Pages, an
//! artifact), opens from disk, and loads nothing from the network (no
//! script, font or style from elsewhere; light and dark through
//! `prefers-color-scheme`). Pages are bounded whatever the history's size
//! (the last commits, the worst tests, the last points per chart), and the
//! site is written beside `out` and renamed into place, so a reader never
//! sees half a site and a failed run leaves the previous one.

pub mod html;
pub mod pages;
pub mod svg;

use std::path::{Path, PathBuf};

use lockstep_core::fs::StagedDir;
use lockstep_core::words::count;
use lockstep_core::Error;
use lockstep_history::analysis::{self, Release};
use lockstep_history::Loaded;
use lockstep_stats::Rule;

use crate::pages::Model;

/// The file that marks a directory as a site this crate wrote (and may
/// replace).
pub const MARKER: &str = ".lockstep-site";

/// Commits (heatmap columns) shown on the tests page.
pub const HEATMAP_COMMITS: usize = 60;
/// Tests (heatmap rows) shown: those that went wrong most often.
pub const HEATMAP_ROWS: usize = 100;
/// Points per chart: the last runs.
pub const CHART_POINTS: usize = 60;

/// The largest `release.json` read.
const MAX_RELEASE_BYTES: u64 = 16 << 20;

/// What [`site`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteReport {
    /// The site's directory.
    pub out: PathBuf,
    /// Every page written: file name and size in bytes.
    pub pages: Vec<(String, u64)>,
    /// Runs read.
    pub runs: usize,
    /// Files that were not read (history files skipped by the loader,
    /// release records that could not be read): also listed on the
    /// overview page.
    pub warnings: Vec<String>,
    /// Kernels with a regression in their charted runs (the last
    /// [`CHART_POINTS`]): a run slower than the one before it.
    pub regressions: usize,
    /// Tests that passed and failed on one commit and toolchain.
    pub flaky_tests: usize,
    /// Releases listed on the releases page (none without a store).
    pub releases: usize,
    /// True when a previous site at `out` was replaced.
    pub replaced: bool,
}

impl SiteReport {
    /// The largest page: name and bytes.
    pub fn largest_page(&self) -> Option<(&str, u64)> {
        self.pages
            .iter()
            .max_by_key(|(_, size)| *size)
            .map(|(name, size)| (name.as_str(), *size))
    }

    /// The line `lockstep report site` prints: where the site is, its
    /// pages, its runs and what it found.
    pub fn summary(&self) -> String {
        let largest = self
            .largest_page()
            .map(|(name, bytes)| format!(", largest page {name} {} kB", bytes / 1000))
            .unwrap_or_default();
        format!(
            "wrote {} ({} from {}{largest}; {}, {})",
            self.out.join("index.html").display(),
            count(self.pages.len(), "page", "pages"),
            count(self.runs, "run", "runs"),
            count(self.regressions, "regression", "regressions"),
            count(self.flaky_tests, "flaky test", "flaky tests")
        )
    }
}

/// Writes the report site of `history` (and of the release store at
/// `releases`, the `[release] index` directory) into the directory `out`,
/// linking release files under `base_url` when given.
///
/// `out` must not exist, be empty, or be a site written before (it holds
/// [`MARKER`]), which is replaced whole; anything else is refused with a
/// usage error naming it.
pub fn site(
    history: &Loaded,
    releases: Option<&Path>,
    out: &Path,
    base_url: Option<&str>,
) -> Result<SiteReport, Error> {
    let base_url = base_url.map(check_base_url).transpose()?;
    let existing = check_out(out)?;
    let (releases, release_warnings) = match releases {
        Some(dir) => {
            let (list, warnings) = read_releases(dir)?;
            (Some(list), warnings)
        }
        None => (None, Vec::new()),
    };
    let model = analyse(history, releases, release_warnings, base_url);
    let rendered: Vec<(&str, String)> = vec![
        ("index.html", pages::index(&model)),
        ("tests.html", pages::tests(&model)),
        ("bench.html", pages::bench(&model)),
        ("integrate.html", pages::integrate(&model)),
        ("releases.html", pages::releases(&model)),
        ("speed.html", pages::speed(&model)),
    ];
    let replaced = write_site(out, existing, &rendered)?;
    let regressions = model.bench.iter().filter(|s| s.regressions() > 0).count();
    let mut flaky: Vec<&str> = model.flaky.iter().map(|f| f.test.as_str()).collect();
    flaky.dedup();
    let warnings = history
        .skipped
        .iter()
        .map(|s| format!("{}: {}", s.path.display(), s.reason))
        .chain(model.release_warnings.iter().cloned())
        .collect();
    Ok(SiteReport {
        out: out.to_path_buf(),
        pages: rendered
            .iter()
            .map(|(name, html)| (name.to_string(), html.len() as u64))
            .collect(),
        runs: history.runs.len(),
        warnings,
        regressions,
        flaky_tests: flaky.len(),
        releases: model.releases.as_ref().map_or(0, Vec::len),
        replaced,
    })
}

fn analyse<'a>(
    history: &'a Loaded,
    releases: Option<Vec<Release>>,
    release_warnings: Vec<String>,
    base_url: Option<String>,
) -> Model<'a> {
    let runs = history.runs.as_slice();
    let rule = Rule::default();
    // The kernels' verdicts and the reading of the tests are independent:
    // two tasks on the worker pool (in turn if no thread can start).
    let tests_part = || {
        let tests = analysis::TestHistory::new(runs);
        (
            tests.latest_by_suite_target(),
            tests.flaky(),
            tests.heatmap(HEATMAP_COMMITS, HEATMAP_ROWS),
            tests.golden_series(CHART_POINTS, pages::MAX_GOLDEN_CHARTS),
        )
    };
    let bench_part = || analysis::bench_series(runs, &rule, CHART_POINTS);
    let halves = lockstep_core::pool::map_all("report analysis", 2, 2, |i| match i {
        0 => Half::Bench(bench_part()),
        _ => Half::Tests(Box::new(tests_part())),
    })
    .unwrap_or_else(|_| {
        vec![
            Half::Bench(bench_part()),
            Half::Tests(Box::new(tests_part())),
        ]
    });
    let (mut bench, mut tests) = (None, None);
    for half in halves {
        match half {
            Half::Bench(b) => bench = Some(b),
            Half::Tests(t) => tests = Some(*t),
        }
    }
    let bench = bench.unwrap_or_else(bench_part);
    let (latest, flaky, heatmap, (golden, golden_hidden)) = tests.unwrap_or_else(tests_part);
    Model {
        runs,
        skipped: &history.skipped,
        latest,
        flaky,
        heatmap,
        golden,
        golden_hidden,
        bench,
        threshold: rule.threshold,
        integrate: analysis::integrate_timeline(runs),
        releases,
        release_warnings,
        base_url,
        speed: lockstep_history::speed::speed_table(runs),
    }
}

/// One of the two analyses run side by side.
enum Half {
    Bench(Vec<analysis::BenchSeries>),
    #[allow(clippy::type_complexity)]
    Tests(
        Box<(
            Vec<analysis::SuiteLatest>,
            Vec<analysis::FlakyTest>,
            analysis::Heatmap,
            (Vec<analysis::GoldenSeries>, usize),
        )>,
    ),
}

fn check_base_url(url: &str) -> Result<String, Error> {
    let trimmed = url.trim().trim_end_matches('/');
    let lower = trimmed.to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://")) || trimmed.len() <= 8 {
        return Err(Error::usage(format!("--base-url `{}` is not an http(s) URL", url.escape_debug()))
            .hint("give the URL the release index is served at, e.g. --base-url https://OWNER.github.io/REPO"));
    }
    Ok(trimmed.to_string())
}

/// What is at `out` now.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Existing {
    Nothing,
    EmptyDir,
    PreviousSite,
}

fn check_out(out: &Path) -> Result<Existing, Error> {
    if out.file_name().is_none() {
        return Err(Error::usage(format!(
            "--out {} does not name a directory to create",
            out.display()
        ))
        .hint("name a new directory, e.g. --out site"));
    }
    let refuse = |why: &str| {
        Error::usage(format!("refusing to write the site into {}", out.display()))
            .cause(why.to_string())
            .hint("name a new or empty directory, or a site `lockstep report site` wrote before")
    };
    match std::fs::symlink_metadata(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Existing::Nothing),
        Err(e) => Err(Error::failed(format!("cannot read {}", out.display())).cause(e.to_string())),
        Ok(meta) if !meta.is_dir() => Err(refuse("it exists and is not a directory")),
        Ok(_) => {
            if out.join(MARKER).is_file() {
                return Ok(Existing::PreviousSite);
            }
            let mut entries = fs_err::read_dir(out).map_err(|e| {
                Error::failed(format!("cannot read {}", out.display())).cause(e.to_string())
            })?;
            if entries.next().is_some() {
                Err(refuse(&format!(
                    "it is not empty and holds no {MARKER} (not a site lockstep wrote)"
                )))
            } else {
                Ok(Existing::EmptyDir)
            }
        }
    }
}

/// Writes the pages into a directory staged beside `out` (lockstep-core's
/// [`StagedDir`]: what a killed run leaves is reclaimed next time), then
/// moves it into place (a previous site or an empty directory is replaced
/// whole: a reader never sees half of one). Returns whether a site was
/// replaced.
fn write_site(out: &Path, existing: Existing, pages: &[(&str, String)]) -> Result<bool, Error> {
    let staged = StagedDir::beside(out)
        .map_err(|e| e.context(format!("cannot write the site beside {}", out.display())))?;
    for (name, html) in pages {
        let path = staged.path().join(name);
        fs_err::write(&path, html).map_err(|e| {
            Error::failed(format!("cannot write {}", path.display())).cause(e.to_string())
        })?;
    }
    fs_err::write(
        staged.path().join(MARKER),
        "written by `lockstep report site`; the next run replaces this directory\n",
    )
    .map_err(|e| Error::failed("cannot write the site's marker").cause(e.to_string()))?;
    let installed = match existing {
        // Something that appeared since the check is not replaced.
        Existing::Nothing => staged.install_new(),
        Existing::EmptyDir | Existing::PreviousSite => staged.install(),
    };
    installed.map_err(|e| e.context(format!("cannot move the site into {}", out.display())))?;
    Ok(existing == Existing::PreviousSite)
}

/// The releases of the store at `dir` (`files/<version>/release.json`),
/// newest first, and a warning per record that could not be read.
pub fn read_releases(dir: &Path) -> Result<(Vec<Release>, Vec<String>), Error> {
    let meta = std::fs::metadata(dir).map_err(|e| {
        Error::usage(format!("cannot read the release store {}", dir.display()))
            .cause(e.to_string())
            .hint("name the `[release] index` directory (it holds files/<version>/release.json)")
    })?;
    if !meta.is_dir() {
        return Err(Error::usage(format!(
            "the release store {} is not a directory",
            dir.display()
        )));
    }
    let files = dir.join("files");
    let mut warnings = Vec::new();
    let entries = match std::fs::read_dir(&files) {
        Ok(entries) => entries,
        Err(_) => {
            warnings.push(format!(
                "{}: no files/ directory (not a release store?)",
                dir.display()
            ));
            return Ok((Vec::new(), warnings));
        }
    };
    let mut versions: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    versions.sort();
    let mut releases = Vec::new();
    for version in versions {
        let path = version.join("release.json");
        match read_release(&path) {
            Ok(release) => releases.push(release),
            Err(reason) => warnings.push(format!("{}: {reason}", path.display())),
        }
    }
    Ok((analysis::release_list(releases), warnings))
}

fn read_release(path: &Path) -> Result<Release, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.len() > MAX_RELEASE_BYTES {
        return Err(format!(
            "{} bytes, more than a release record holds",
            meta.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("not JSON ({e})"))?;
    analysis::release_record(&value).ok_or_else(|| "no \"version\": not a release record".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_history::{Kind, Machine, RunRecord, Skipped, Source};
    use proptest::prelude::*;
    use serde_json::json;

    fn run(n: usize, kind: Kind, results: serde_json::Value) -> RunRecord {
        RunRecord {
            schema: 1,
            id: format!("r{n}"),
            kind,
            started: format!("2026-01-01T00:00:{n:02}Z"),
            finished: String::new(),
            source: Source {
                commit: Some(format!("{n:040x}")),
                branch: None,
                dirty: false,
            },
            pins: Default::default(),
            toolchain: None,
            machine: Machine::default(),
            results,
        }
    }

    fn history() -> Loaded {
        Loaded {
            runs: vec![
                run(
                    0,
                    Kind::Test,
                    json!({"tests": [{"id": "s/<script>alert(1)</script> [cpu]", "case": "s/x", "group": "cpu", "outcome": "fail"}]}),
                ),
                run(
                    1,
                    Kind::Integrate,
                    json!({"end": {"result": "halted", "halt": {"kind": "smoke", "link": "javascript:alert(1)",
                        "culprit": {"sha": "abc", "subject": "<b>bold</b>", "author": "a", "date": "d"}}}}),
                ),
                run(
                    2,
                    Kind::Speed,
                    json!({"schema": 1, "document": "lockstep-speed", "rows": [
                        {"command": "<script>alert(1)</script>", "work": "<b>bold</b>", "lockstep_s": 1.0,
                         "reference": "git log", "reference_s": 0.5, "ratio": 2.0, "target": "<= 1.1"}]}),
                ),
            ],
            skipped: vec![Skipped {
                path: "h/<bad>.json".into(),
                reason: "not JSON".into(),
            }],
        }
    }

    #[test]
    fn the_speed_page_shows_the_latest_table_and_marks_a_row_over_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("site");
        let mut loaded = history();
        loaded.runs.push(run(
            3,
            Kind::Speed,
            json!({"schema": 1, "document": "lockstep-speed", "rows": [
                {"command": "<script>alert(1)</script>", "work": "<b>bold</b>", "lockstep_s": 0.6,
                 "reference": "git log", "reference_s": 0.5, "ratio": 1.2, "target": "<= 1.1"},
                {"command": "lockstep test (warm)", "work": "40 cases", "lockstep_s": 0.02,
                 "reference": "lockstep cold", "reference_s": 6.4, "ratio": 0.003, "target": "<= 0.005"}]}),
        ));
        site(&loaded, None, &out, None).unwrap();
        let html = std::fs::read_to_string(out.join("speed.html")).unwrap();
        assert!(html.contains("The latest of 2 speed runs"), "{html}");
        assert!(html.contains("1 row over its target"), "{html}");
        // The first row's ratio now and the run before.
        assert!(
            html.contains("<td class=\"n\">1.20</td><td>&lt;= 1.1</td><td class=\"n\">2.00</td>"),
            "{html}"
        );
        assert!(html.contains("lockstep test (warm)"), "{html}");
        let empty = dir.path().join("empty");
        site(
            &Loaded {
                runs: vec![],
                skipped: vec![],
            },
            None,
            &empty,
            None,
        )
        .unwrap();
        let none = std::fs::read_to_string(empty.join("speed.html")).unwrap();
        assert!(none.contains("No speed runs in the history"), "{none}");
    }

    #[test]
    fn history_strings_are_escaped_and_scripts_never_linked() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("site");
        let report = site(&history(), None, &out, None).unwrap();
        assert_eq!(report.pages.len(), 6);
        assert_eq!(report.warnings.len(), 1);
        for (name, _) in &report.pages {
            let html = std::fs::read_to_string(out.join(name)).unwrap();
            assert!(!html.contains("<script>alert"), "{name}");
            assert!(!html.contains("<b>bold"), "{name}");
            assert!(!html.contains("href=\"javascript"), "{name}");
            assert!(!html.contains("<bad>"), "{name}");
        }
        let tests = std::fs::read_to_string(out.join("tests.html")).unwrap();
        assert!(tests.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    }

    #[test]
    fn a_previous_site_is_replaced_and_anything_else_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("site");
        let first = site(&history(), None, &out, None).unwrap();
        assert!(!first.replaced);
        std::fs::write(out.join("stale.html"), "old").unwrap();
        let second = site(&history(), None, &out, None).unwrap();
        assert!(second.replaced);
        assert!(!out.join("stale.html").exists());
        assert!(out.join(MARKER).is_file());
        // Nothing left beside it.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("site")]);

        let other = dir.path().join("docs");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("keep.md"), "mine").unwrap();
        let err = site(&history(), None, &other, None).unwrap_err();
        assert_eq!(err.kind, lockstep_core::ErrorKind::Usage);
        assert!(
            err.message.contains(&other.display().to_string()),
            "{}",
            err.message
        );
        assert_eq!(
            std::fs::read_to_string(other.join("keep.md")).unwrap(),
            "mine"
        );

        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(
            site(&history(), None, &file, None).unwrap_err().kind,
            lockstep_core::ErrorKind::Usage
        );

        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        site(&history(), None, &empty, None).unwrap();
        assert!(empty.join("index.html").is_file());
    }

    #[test]
    fn releases_link_under_the_base_url() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("index");
        std::fs::create_dir_all(store.join("files/1.0rc1")).unwrap();
        std::fs::create_dir_all(store.join("files/broken")).unwrap();
        std::fs::write(
            store.join("files/1.0rc1/release.json"),
            json!({"version": "1.0rc1", "pins": {"third_party/llvm-project": "0123456789abcdef"},
                   "files": [{"filename": "demo_pure-1.0rc1-py3-none-any.whl", "project": "demo-pure",
                              "sha256": "00", "size": 1, "upload_time": "2026-01-01T00:00:00Z"}]})
            .to_string(),
        )
        .unwrap();
        std::fs::write(store.join("files/broken/release.json"), "{").unwrap();
        let out = dir.path().join("site");
        let report = site(
            &history(),
            Some(&store),
            &out,
            Some("https://example.org/repo/"),
        )
        .unwrap();
        assert_eq!(report.warnings.len(), 2);
        let html = std::fs::read_to_string(out.join("releases.html")).unwrap();
        assert!(
            html.contains(
                "href=\"https://example.org/repo/files/1.0rc1/demo_pure-1.0rc1-py3-none-any.whl\""
            ),
            "{html}"
        );
        assert!(html.contains("href=\"https://example.org/repo/simple/demo-pure/\""));
        assert!(html.contains("third_party/llvm-project"));

        let err = site(&history(), Some(&store), &out, Some("javascript:x")).unwrap_err();
        assert_eq!(err.kind, lockstep_core::ErrorKind::Usage);
        let err = site(&history(), Some(&dir.path().join("missing")), &out, None).unwrap_err();
        assert_eq!(err.kind, lockstep_core::ErrorKind::Usage);
    }

    /// The text of every `<text class="xtick">` of the chart `data-chart`
    /// `chart` in `html`, per chart.
    fn x_ticks(html: &str, chart: &str) -> Vec<Vec<String>> {
        html.split(&format!("data-chart=\"{chart}\""))
            .skip(1)
            .map(|fig| {
                let fig = &fig[..fig.find("</figure>").unwrap_or(fig.len())];
                fig.split("<text class=\"xtick\"")
                    .skip(1)
                    .map(|t| t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()].to_string())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_project_at_its_start_reads_in_words() {
        let samples: Vec<f64> = (0..12).map(|i| 100.0 + i as f64).collect();
        let bench = json!({"rows": [{"arguments": "conv -n 1", "gflops": 1.5, "stats": {"times_us": samples}}]});
        let mut first = run(1, Kind::Bench, bench.clone());
        let mut second = run(2, Kind::Bench, bench);
        // Two runs of one commit, stamped as lockstep stamps them.
        second.source.commit = first.source.commit.clone();
        first.started = "2026-11-27T16:30:05.123Z".into();
        second.started = "2026-11-27T16:41:05.456Z".into();
        let published =
            json!({"pull": {"number": 1, "html_url": "https://github.com/acme/super/pull/1"}});
        let mut looped = run(
            3,
            Kind::Integrate,
            json!({"end": {"result": "at_head"}, "advances": ["a"], "smoke_runs": 2, "published": published}),
        );
        looped.started = "2026-11-27T16:50:00.5Z".into();
        let loaded = Loaded {
            runs: vec![
                first,
                second,
                looped,
                run(
                    4,
                    Kind::Integrate,
                    json!({"end": {"result": "steps_exhausted"}}),
                ),
            ],
            skipped: vec![],
        };
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("site");
        site(&loaded, None, &out, None).unwrap();
        let read = |page: &str| std::fs::read_to_string(out.join(page)).unwrap();

        let bench = read("bench.html");
        for ticks in x_ticks(&bench, "time")
            .into_iter()
            .chain(x_ticks(&bench, "gflops"))
        {
            assert_eq!(ticks.len(), 2, "{ticks:?}");
            assert_ne!(ticks[0], ticks[1], "two runs of one commit read alike");
            assert!(ticks[0].ends_with("2026-11-27 16:30"), "{ticks:?}");
            assert!(ticks[1].ends_with("2026-11-27 16:41"), "{ticks:?}");
        }
        assert!(
            bench.contains("2026-11-27 16:30 · run r1"),
            "the hover title"
        );
        assert!(!bench.contains("16:30:05.123"), "a raw timestamp");

        let integrate = read("integrate.html");
        assert!(
            integrate.contains(
                "<td class=\"pull\"><a href=\"https://github.com/acme/super/pull/1\">#1</a></td>"
            ),
            "{integrate}"
        );
        assert!(
            integrate.contains("<td class=\"pull\">-</td>"),
            "a loop that published nothing"
        );
        assert!(integrate.contains(">at upstream head<"), "{integrate}");
        assert!(integrate.contains(">steps exhausted<"), "{integrate}");
        assert!(!integrate.contains("at_head<") && !integrate.contains("at_head\n"));
        assert!(integrate.contains(">2026-11-27 16:50<"), "{integrate}");
    }

    #[test]
    fn ends_and_halts_read_in_words() {
        assert_eq!(pages::end_words("at_head"), "at upstream head");
        assert_eq!(pages::end_words("steps_exhausted"), "steps exhausted");
        assert_eq!(pages::end_words("some_new_end"), "some new end");
        assert_eq!(pages::halt_words("smoke"), "the smoke test failed");
        assert_eq!(pages::halt_words("conflict"), "a carried patch conflicts");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn any_strings_render_escaped(name in ".{0,40}", outcome in "(pass|fail|xpass|.{0,4})") {
            let dir = tempfile::tempdir().unwrap();
            let loaded = Loaded {
                runs: vec![
                    run(0, Kind::Test, json!({"tests": [{"id": name, "outcome": outcome}]})),
                    run(1, Kind::Test, json!({"tests": [{"id": name, "outcome": "fail"}]})),
                    run(2, Kind::Bench, json!({"rows": [{"arguments": name, "stats": {"times_us": [1.0, 2.0, 3.0]}}]})),
                ],
                skipped: vec![],
            };
            let out = dir.path().join("s");
            site(&loaded, None, &out, None).unwrap();
            for page in ["index.html", "tests.html", "bench.html"] {
                let html = std::fs::read_to_string(out.join(page)).unwrap();
                // Every `<` in the page starts a tag this crate wrote.
                for (i, _) in html.match_indices('<') {
                    let next = html[i + 1..].chars().next().unwrap_or(' ');
                    prop_assert!(next.is_ascii_alphabetic() || next == '/' || next == '!', "{page}: {}", &html[i..(i + 20).min(html.len())]);
                }
            }
        }
    }
}
