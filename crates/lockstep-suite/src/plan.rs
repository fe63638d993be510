//! From sources to tests: every case crossed with its configs (iree-test-suites)
//! or targets (native suites and cases without configs), with the exact flags
//! of each step, then filtered by `-k`, `-m`, `--last-failed` and `--shard`.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use crate::config::TestConfig;
use lockstep_core::events::Sink;
use lockstep_core::Error;

use crate::markers::MarkerExpr;
use crate::model::Expect;
use crate::sources::{self, ExpectText, LayoutCase, NativeSuite, NativeTest, SuiteConfig};

/// A named set of flags tests run with.
#[derive(Debug, Clone)]
pub struct Target {
    pub name: String,
    pub compile_flags: Vec<String>,
    pub run_flags: Vec<String>,
    pub markers: Vec<String>,
    /// Why its tests cannot even compile here (the built-in `hip` with no
    /// AMD GPU to take the chip from): they are skipped, saying so.
    pub unavailable: Option<String>,
}

/// Compile flags for the host CPU with IREE's llvm-cpu backend.
pub fn cpu_compile_flags() -> Vec<String> {
    lockstep_iree::HOST_CPU_FLAGS
        .iter()
        .map(|f| f.to_string())
        .collect()
}

/// Refuses what serde accepts in `[test]` of lockstep.toml (`origin`) but
/// lockstep cannot use: a zero timeout (every process would be killed at
/// once), a target name that cannot be a file name and a line of output, a
/// target marker `-m` could never select.
pub fn check_test_config(config: &TestConfig, origin: &Path) -> Result<(), Error> {
    for (key, value) in [
        ("compile-timeout", config.compile_timeout),
        ("run-timeout", config.run_timeout),
    ] {
        if value.is_zero() {
            return Err(Error::usage(format!(
                "[test] {key} in {} is 0: every process would be stopped at once",
                origin.display()
            ))
            .hint(format!(
                "give a duration such as `{key} = \"10m\"`, or remove the key"
            )));
        }
    }
    for (name, target) in &config.targets {
        crate::names::check_name(name, "target", origin)?;
        for marker in &target.markers {
            let single = MarkerExpr::parse(marker)
                .ok()
                .is_some_and(|e| e.single_marker() == Some(marker.as_str()));
            if !single {
                return Err(Error::usage(format!(
                    "marker {marker:?} of [test.targets.{name}] in {} can never be selected with -m",
                    origin.display()
                ))
                .hint("markers are names of letters, digits, `_`, `.` and `-`, and not `and`, `or` or `not`"));
            }
        }
    }
    Ok(())
}

/// `markers` with each name once, in the order of first appearance (the
/// built-in `cpu` target's marker is also its name: `--list` showed
/// `[cpu, cpu]`).
fn distinct(markers: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    markers
        .into_iter()
        .filter(|m| seen.insert(m.clone()))
        .collect()
}

/// The built-in targets plus `[test.targets.NAME]` (which may redefine them).
pub fn targets(config: &TestConfig) -> BTreeMap<String, Target> {
    let mut all = BTreeMap::new();
    for (name, device) in [("cpu", "local-task"), ("cpu-sync", "local-sync")] {
        all.insert(
            name.to_string(),
            Target {
                name: name.into(),
                compile_flags: cpu_compile_flags(),
                run_flags: vec![format!("--device={device}")],
                markers: vec!["cpu".into()],
                unavailable: None,
            },
        );
    }
    for (name, t) in &config.targets {
        all.insert(
            name.clone(),
            Target {
                name: name.clone(),
                compile_flags: t.compile_flags.clone(),
                run_flags: t.run_flags.clone(),
                markers: t.markers.clone(),
                unavailable: None,
            },
        );
    }
    all
}

/// The names of the built-in GPU targets.
pub const GPU_TARGETS: [&str; 2] = ["cuda", "hip"];

/// The built-in GPU targets `cuda` and `hip` (unless `[test.targets]`
/// names them): the chip of this machine's GPU, else cuda's compiler
/// default and, for hip, a target whose tests are skipped saying why. On a
/// machine without the device their runs are skipped ([`crate::session`]).
pub fn gpu_target(name: &str) -> Option<Target> {
    use lockstep_iree::DriverTarget;
    let (compile_flags, unavailable) = match lockstep_iree::driver_target(name) {
        DriverTarget::Flags(flags) => (flags, None),
        DriverTarget::NeedsTarget(why) => (
            Vec::new(),
            Some(format!(
                "no `{name}` chip to compile for: {why}; name one in [test.targets.{name}] compile-flags \
                 (e.g. \"--iree-rocm-target=gfx942\")"
            )),
        ),
        DriverTarget::Unknown => return None,
    };
    Some(Target {
        name: name.into(),
        compile_flags,
        run_flags: vec![format!("--device={name}")],
        markers: vec!["gpu".into()],
        unavailable,
    })
}

/// Where a program comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    File(PathBuf),
    Url { url: String, sha256: String },
}

/// How to compile a test's program.
#[derive(Debug, Clone)]
pub struct CompileSpec {
    pub source: Source,
    pub flags: Vec<String>,
    /// Directory the compile runs in (the case directory).
    pub cwd: PathBuf,
    /// Ask the compiler for dispatch statistics (benchmark goldens).
    pub statistics: bool,
}

/// How to run the compiled module (`--module=` is added by the runner).
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub cwd: PathBuf,
    pub flags: Vec<String>,
    /// Input files that must exist before running (reported on the test when missing).
    pub files: Vec<PathBuf>,
}

/// Benchmark step settings (native suites with `[test.benchmark]`).
#[derive(Debug, Clone)]
pub struct BenchSpec {
    pub goldens: sources::BenchmarkGoldens,
    /// Flags for iree-benchmark-module (device, function, inputs).
    pub flags: Vec<String>,
}

/// One test: a case on one config or target.
#[derive(Debug, Clone)]
pub struct Test {
    pub id: String,
    pub case: String,
    pub group: String,
    pub markers: Vec<String>,
    /// `None`: compile skipped (the test is skipped).
    pub compile: Option<CompileSpec>,
    /// `None`: run skipped (compile only).
    pub run: Option<RunSpec>,
    pub benchmark: Option<BenchSpec>,
    pub expect: Expect,
    /// Why the expectation (which list or setting).
    pub expect_reason: String,
    /// The config this test came from (for `--update-xfails`).
    pub config: Option<PathBuf>,
    /// A lit test: lit runs it (no compile or run step of lockstep's).
    pub lit: Option<crate::lit::LitCase>,
    /// Why the test is skipped though selected (its target's device is not
    /// on this machine): with `compile` set, only the run is skipped.
    pub skip_reason: Option<String>,
    /// A pytest test: pytest runs it (no compile or run step of lockstep's).
    pub pytest: Option<crate::pytest::PytestCase>,
    /// A torch_ops case: its inputs are generated, its outputs compared.
    pub torch: Option<TorchRun>,
    /// Parameter files handed to the run and benchmark as
    /// `--parameters=SCOPE=PATH` (native tests' `parameters`).
    pub parameters: Vec<(String, Source)>,
}

/// What a torch_ops test runs with.
#[derive(Debug, Clone)]
pub struct TorchRun {
    pub dir: PathBuf,
    /// The case, or why it cannot be read (the test fails with it).
    pub spec: Result<std::sync::Arc<crate::torch_ops::TorchSpec>, String>,
}

/// What to select.
#[derive(Debug, Default)]
pub struct Selection {
    pub configs: Vec<SuiteConfig>,
    pub targets: Vec<Target>,
    pub markers: Option<MarkerExpr>,
    pub keyword: Option<String>,
    /// (index, count), 1-based index.
    pub shard: Option<(usize, usize)>,
    pub only: Option<HashSet<String>>,
    pub skip_all_runs: bool,
    pub ignore_xfails: bool,
    /// Every target name there is (built in and `[test.targets.*]`), for
    /// checking the suites' per-test `[test.targets.NAME]`.
    pub known_targets: Vec<String>,
    /// lit, when the paths hold lit suites (lit lists their tests).
    pub lit: Option<crate::lit::LitProgram>,
    /// Where listing lit suites logs.
    pub work: PathBuf,
    /// The `[[test.pytest]]` suites of the run (pytest lists their tests).
    pub pytest: Vec<std::sync::Arc<crate::pytest::PytestSuite>>,
    /// Recorded seconds per test id: `--shard` balances by them when any
    /// selected test has one ([`shards`]).
    pub durations: Option<BTreeMap<String, f64>>,
}

/// A per-test `[test.targets.NAME]` must name a target that exists: a typo
/// would otherwise be ignored silently.
fn check_test_targets(suite: &NativeSuite, known: &[String]) -> Result<(), Error> {
    for test in &suite.tests {
        for name in test.targets.keys() {
            if known.iter().any(|k| k == name) {
                continue;
            }
            let closest = known
                .iter()
                .map(|k| (strsim_distance(k, name), k))
                .filter(|(d, _)| *d <= 3)
                .min()
                .map(|(_, k)| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            return Err(Error::usage(format!(
                "test `{}` in {} has settings for target `{name}`, which does not exist{closest}",
                test.name,
                suite.path.display()
            ))
            .hint(format!(
                "targets: {}; define others under [test.targets.NAME] in lockstep.toml",
                known.join(", ")
            )));
        }
    }
    Ok(())
}

/// Edit distance, for "did you mean"; names past 256 characters are never
/// close (and would make the quadratic distance slow).
fn strsim_distance(a: &str, b: &str) -> usize {
    const LONGEST: usize = 256;
    if a.len() > LONGEST || b.len() > LONGEST {
        return usize::MAX;
    }
    strsim::levenshtein(a, b)
}

/// Parses `I/N` (1 <= I <= N).
pub fn parse_shard(text: &str) -> Result<(usize, usize), Error> {
    let bad = || {
        Error::usage(format!("invalid --shard `{text}`"))
            .hint("write I/N with 1 <= I <= N, e.g. --shard 2/4")
    };
    let (i, n) = text.split_once('/').ok_or_else(bad)?;
    let (i, n): (usize, usize) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if i == 0 || n == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}

/// The shard a test belongs to: a stable hash of its id, so adding a test
/// never moves the others.
/// A `count` of 0 is taken as 1 (one shard holds everything).
pub fn shard_of(id: &str, count: usize) -> usize {
    // The digest's first 8 bytes, big-endian.
    let digest = lockstep_core::hash::sha256_bytes(id.as_bytes());
    let n = u64::from_str_radix(&digest[..16], 16).unwrap_or(0);
    let count = u64::try_from(count.max(1)).unwrap_or(u64::MAX);
    let index = n % count;
    usize::try_from(index).map_or(1, |i| i.saturating_add(1))
}

/// The selected tests, and the suite files they came from.
pub struct Planned {
    pub tests: Vec<Test>,
    pub suite_files: Vec<PathBuf>,
}

/// Builds the selected tests from `paths` (directories or suite files).
pub fn plan(paths: &[PathBuf], sel: &Selection, sink: &dyn Sink) -> Result<Planned, Error> {
    let mut tests = Vec::new();
    let mut suite_files = Vec::new();
    for root in paths {
        if !root.exists() {
            return Err(Error::usage(format!("{} does not exist", root.display()))
                .hint("pass suite directories or *.suite.toml files"));
        }
        for file in sources::find_suite_files(root, sink)? {
            let suite = NativeSuite::load(&file)?;
            suite_files.push(file.clone());
            check_test_targets(&suite, &sel.known_targets)?;
            for test in &suite.tests {
                for target in &sel.targets {
                    tests.push(native_test(&suite, test, target, sel));
                }
            }
        }
        let lit_suites = crate::lit::find_suites(root);
        for suite in &lit_suites {
            tests.extend(lit_tests(suite, sel)?);
            suite_files.extend(
                crate::lit::CONFIGS
                    .iter()
                    .map(|c| suite.join(c))
                    .filter(|c| c.is_file()),
            );
        }
        if root.is_dir() {
            // The same tree as above: its skipped links were reported there.
            for case in sources::find_layout_cases(root, &lockstep_core::events::NullSink)? {
                // A lit suite's files are lit's tests.
                if lit_suites.iter().any(|s| case.dir.starts_with(s)) {
                    continue;
                }
                if sel.configs.is_empty() {
                    for target in &sel.targets {
                        tests.push(layout_on_target(&case, target, sel));
                    }
                } else {
                    for config in &sel.configs {
                        tests.push(layout_on_config(&case, config, sel));
                    }
                }
            }
        }
    }
    let mut torch_names = HashSet::new();
    for root in paths.iter().filter(|r| r.is_dir()) {
        for case in crate::torch_ops::find_cases(root, &lockstep_core::events::NullSink)? {
            torch_names.insert(case.name.clone());
            if sel.configs.is_empty() {
                for target in &sel.targets {
                    tests.push(torch_on_target(&case, target, sel));
                }
            } else {
                for config in &sel.configs {
                    tests.push(torch_on_config(&case, config, sel));
                }
            }
        }
    }
    check_goldens(&sel.configs, &torch_names)?;
    for suite in &sel.pytest {
        tests.extend(pytest_tests(suite, sel));
    }
    let mut seen = HashSet::new();
    tests.retain(|t| seen.insert(t.id.clone()));
    tests.retain(|t| selected(t, sel));
    if let Some((i, n)) = sel.shard {
        let ids: Vec<&str> = tests.iter().map(|t| t.id.as_str()).collect();
        let assigned = shards(&ids, n, sel.durations.as_ref());
        let mut assigned = assigned.into_iter();
        tests.retain(|_| assigned.next() == Some(i));
    }
    Ok(Planned { tests, suite_files })
}

/// The tests of the lit suite `suite`, as lit lists them: id
/// `NAME/PATH [lit]` (NAME the suite directory's name), markers `lit` and
/// each `REQUIRES:` feature.
fn lit_tests(suite: &Path, sel: &Selection) -> Result<Vec<Test>, Error> {
    let program = sel.lit.as_ref().ok_or_else(|| {
        Error::failed(format!(
            "{} is a lit suite, but lit was not set up for this run",
            suite.display()
        ))
    })?;
    let name = lockstep_core::fs::file_name(suite);
    let work = sel.work.join("lit-list").join(&name);
    let cases = crate::lit::discover(program, suite, &work)?;
    Ok(cases
        .into_iter()
        .map(|case| {
            let mut markers = vec!["lit".to_string()];
            markers.extend(case.requires.iter().cloned());
            let path = format!("{name}/{}", case.path);
            let id = format!("{path} [lit]");
            Test {
                lit: Some(case),
                ..run_elsewhere(id, path, "lit".into(), markers)
            }
        })
        .collect())
}

/// A test another runner runs (lit, pytest): no compile or run step of
/// lockstep's; the caller sets which runner.
fn run_elsewhere(id: String, case: String, group: String, markers: Vec<String>) -> Test {
    Test {
        id,
        case,
        group,
        markers: distinct(markers),
        compile: None,
        run: None,
        benchmark: None,
        expect: Expect::Pass,
        expect_reason: String::new(),
        config: None,
        lit: None,
        pytest: None,
        skip_reason: None,
        torch: None,
        parameters: Vec::new(),
    }
}

/// The tests of a `[[test.pytest]]` suite, as pytest lists them: id
/// `NODEID [NAME]`, markers `pytest` and the test's own pytest marks; a
/// suite that cannot run is one test `NAME [NAME]` carrying why.
fn pytest_tests(suite: &std::sync::Arc<crate::pytest::PytestSuite>, sel: &Selection) -> Vec<Test> {
    let work = sel.work.join("pytest");
    crate::pytest::discover(suite, &work)
        .into_iter()
        .map(|(case, marks)| {
            let mut markers = vec!["pytest".to_string()];
            markers.extend(marks);
            let name = match case.nodeid.is_empty() {
                true => suite.name.clone(),
                false => case.nodeid.clone(),
            };
            Test {
                pytest: Some(case),
                ..run_elsewhere(
                    format!("{name} [{}]", suite.name),
                    name,
                    suite.name.clone(),
                    markers,
                )
            }
        })
        .collect()
}

fn selected(t: &Test, sel: &Selection) -> bool {
    if let Some(k) = &sel.keyword {
        if !t.id.contains(k.as_str()) {
            return false;
        }
    }
    if let Some(m) = &sel.markers {
        if !m.matches(&t.markers) {
            return false;
        }
    }
    if let Some(only) = &sel.only {
        if !only.contains(&t.id) {
            return false;
        }
    }
    true
}

/// The shard (1-based) of each of `ids`, out of `count`. With recorded
/// `durations` for any of them: longest first, each to the shard with the
/// least time so far (the lowest-numbered on a tie), a test without a
/// recorded time counted at the median of those with one; every shard
/// computes the same partition from the same data. Without: each id's
/// stable hash ([`shard_of`]), so adding a test never moves the others.
pub fn shards(ids: &[&str], count: usize, durations: Option<&BTreeMap<String, f64>>) -> Vec<usize> {
    let count = count.max(1);
    let known: Vec<f64> = durations
        .map(|d| {
            ids.iter()
                .filter_map(|id| d.get(*id).copied())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .collect()
        })
        .unwrap_or_default();
    let (Some(durations), false) = (durations, known.is_empty()) else {
        return ids.iter().map(|id| shard_of(id, count)).collect();
    };
    let mut sorted = known;
    sorted.sort_by(f64::total_cmp);
    let fill = sorted[sorted.len() / 2];
    let time = |id: &str| {
        durations
            .get(id)
            .copied()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .unwrap_or(fill)
    };
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by(|&a, &b| {
        time(ids[b])
            .total_cmp(&time(ids[a]))
            .then_with(|| ids[a].cmp(ids[b]))
    });
    let mut loads = vec![0.0f64; count];
    let mut assigned = vec![1; ids.len()];
    for i in order {
        let lightest = (0..count)
            .min_by(|&a, &b| loads[a].total_cmp(&loads[b]).then(a.cmp(&b)))
            .unwrap_or(0);
        loads[lightest] += time(ids[i]);
        assigned[i] = lightest + 1;
    }
    assigned
}

/// What a config's expected-failure lists say of the case `name` (both
/// iree-test-suites layouts read them the same way).
fn expectation(name: &str, config: &SuiteConfig, sel: &Selection) -> (Expect, String) {
    let listed = |list: &[String]| list.iter().any(|n| n == name);
    if sel.ignore_xfails {
        (Expect::Pass, String::new())
    } else if listed(&config.expected_compile_failures) {
        (
            Expect::CompileFail,
            format!(
                "listed in expected_compile_failures of {}",
                config.path.display()
            ),
        )
    } else if listed(&config.expected_run_failures) {
        (
            Expect::RunFail,
            format!(
                "listed in expected_run_failures of {}",
                config.path.display()
            ),
        )
    } else {
        (Expect::Pass, String::new())
    }
}

fn layout_on_config(case: &LayoutCase, config: &SuiteConfig, sel: &Selection) -> Test {
    let listed = |list: &[String]| list.iter().any(|n| n == &case.name);
    let (expect, expect_reason) = expectation(&case.name, config, sel);
    let compile = (!listed(&config.skip_compile_tests)).then(|| CompileSpec {
        source: Source::File(case.model.clone()),
        flags: config.iree_compile_flags.clone(),
        cwd: case.dir.clone(),
        statistics: false,
    });
    let run = (!listed(&config.skip_run_tests) && !sel.skip_all_runs)
        .then(|| layout_run(case, &config.iree_run_module_flags));
    Test {
        id: format!("{} [{}]", case.name, config.config_name),
        case: case.name.clone(),
        group: config.config_name.clone(),
        markers: vec![config.config_name.clone()],
        compile,
        run,
        benchmark: None,
        expect,
        expect_reason,
        config: Some(config.path.clone()),
        lit: None,
        pytest: None,
        skip_reason: None,
        torch: None,
        parameters: Vec::new(),
    }
}

fn layout_on_target(case: &LayoutCase, target: &Target, sel: &Selection) -> Test {
    let mut markers = target.markers.clone();
    markers.push(target.name.clone());
    let markers = distinct(markers);
    Test {
        id: format!("{} [{}]", case.name, target.name),
        case: case.name.clone(),
        group: target.name.clone(),
        markers,
        compile: target.unavailable.is_none().then(|| CompileSpec {
            source: Source::File(case.model.clone()),
            flags: target.compile_flags.clone(),
            cwd: case.dir.clone(),
            statistics: false,
        }),
        run: (!sel.skip_all_runs).then(|| layout_run(case, &target.run_flags)),
        benchmark: None,
        expect: Expect::Pass,
        expect_reason: String::new(),
        config: None,
        lit: None,
        pytest: None,
        skip_reason: target.unavailable.clone(),
        torch: None,
        parameters: Vec::new(),
    }
}

/// A golden time for a test no suite holds is a typo or a stale entry:
/// said before anything runs, naming the config and the test.
fn check_goldens(configs: &[SuiteConfig], torch_names: &HashSet<String>) -> Result<(), Error> {
    if torch_names.is_empty() {
        return Ok(());
    }
    for config in configs {
        if let Some(unknown) = config
            .golden_times_ms
            .keys()
            .find(|name| !torch_names.contains(*name))
        {
            let near = torch_names
                .iter()
                .min_by_key(|n| strsim_distance(n, unknown))
                .cloned()
                .unwrap_or_default();
            return Err(Error::usage(format!(
                "golden_times_ms in {} names `{}`, which is no torch_ops test of the suites given",
                config.path.display(),
                lockstep_core::error::printable_line(unknown)
            ))
            .hint(format!(
                "tests are named <Class>/<case>, e.g. `{near}`; remove the entry or fix its name"
            )));
        }
    }
    Ok(())
}

/// A torch_ops case on one iree-test-suites config.
fn torch_on_config(
    case: &crate::torch_ops::TorchCase,
    config: &SuiteConfig,
    sel: &Selection,
) -> Test {
    let listed = |list: &[String]| list.iter().any(|n| n == &case.name);
    let (expect, expect_reason) = expectation(&case.name, config, sel);
    let mut t = torch_test(
        case,
        &config.config_name,
        vec![config.config_name.clone()],
        &config.iree_compile_flags,
        (!listed(&config.skip_run_tests) && !sel.skip_all_runs)
            .then_some(config.iree_run_module_flags.as_slice()),
        Golden {
            time_ms: config.golden_times_ms.get(&case.name).copied(),
            factor: config.tolerance_factor.unwrap_or(1.1),
        },
    );
    if listed(&config.skip_compile_tests) {
        t.compile = None;
    }
    t.expect = expect;
    t.expect_reason = expect_reason;
    t.config = Some(config.path.clone());
    t
}

/// A torch_ops case on one of lockstep's targets (no config given).
fn torch_on_target(case: &crate::torch_ops::TorchCase, target: &Target, sel: &Selection) -> Test {
    let mut markers = target.markers.clone();
    markers.push(target.name.clone());
    let mut t = torch_test(
        case,
        &target.name,
        distinct(markers),
        &target.compile_flags,
        (!sel.skip_all_runs).then_some(target.run_flags.as_slice()),
        Golden {
            time_ms: None,
            factor: 1.1,
        },
    );
    if target.unavailable.is_some() {
        t.compile = None;
    }
    t.skip_reason = target.unavailable.clone();
    t
}

/// A benchmark case's golden time and the factor it may be exceeded by.
struct Golden {
    time_ms: Option<f64>,
    factor: f64,
}

fn torch_test(
    case: &crate::torch_ops::TorchCase,
    group: &str,
    mut markers: Vec<String>,
    compile_flags: &[String],
    run_flags: Option<&[String]>,
    golden: Golden,
) -> Test {
    use crate::torch_ops::Mode;
    markers.push("torch_ops".into());
    let program = match &case.spec {
        Ok(spec) => case.dir.join(&spec.program),
        Err(_) => case.dir.join("test.mlir"),
    };
    let mode = case.spec.as_ref().map(|s| s.mode).unwrap_or(Mode::Compare);
    let run = run_flags
        .filter(|_| mode == Mode::Compare)
        .map(|flags| RunSpec {
            cwd: case.dir.clone(),
            flags: flags.to_vec(),
            files: Vec::new(),
        });
    let benchmark = run_flags
        .filter(|_| mode == Mode::Benchmark)
        .map(|flags| BenchSpec {
            goldens: sources::BenchmarkGoldens {
                time_ms: golden.time_ms,
                tolerance: golden.factor,
                dispatch_count: None,
                vmfb_size: None,
                repetitions: 3,
                min_time_s: 0.05,
            },
            flags: flags.to_vec(),
        });
    if mode == Mode::Benchmark {
        markers.push("benchmark".into());
    }
    Test {
        id: format!("{} [{group}]", case.name),
        case: case.name.clone(),
        group: group.to_string(),
        markers: distinct(markers),
        compile: Some(CompileSpec {
            source: Source::File(program),
            flags: compile_flags.to_vec(),
            cwd: case.dir.clone(),
            statistics: false,
        }),
        run,
        benchmark,
        expect: Expect::Pass,
        expect_reason: String::new(),
        config: None,
        lit: None,
        pytest: None,
        skip_reason: None,
        torch: Some(TorchRun {
            dir: case.dir.clone(),
            spec: case.spec.clone(),
        }),
        parameters: Vec::new(),
    }
}

fn layout_run(case: &LayoutCase, flags: &[String]) -> RunSpec {
    let mut flags = flags.to_vec();
    flags.push("--flagfile=run_module_io_flags.txt".into());
    RunSpec {
        cwd: case.dir.clone(),
        flags,
        files: vec![case.dir.join("run_module_io_flags.txt")],
    }
}

fn native_test(suite: &NativeSuite, test: &NativeTest, target: &Target, sel: &Selection) -> Test {
    let dir = suite.dir();
    let over = test.targets.get(&target.name).cloned().unwrap_or_default();
    let source = match (&test.source, &test.url, &test.sha256) {
        (Some(path), _, _) => Source::File(dir.join(path)),
        (None, Some(url), Some(sha)) => Source::Url {
            url: url.clone(),
            sha256: sha.to_lowercase(),
        },
        _ => Source::File(dir.join(&test.name)),
    };
    let mut compile_flags = target.compile_flags.clone();
    compile_flags.extend(suite.suite.compile_flags.iter().cloned());
    compile_flags.extend(test.compile_flags.iter().cloned());
    compile_flags.extend(over.compile_flags.iter().cloned());
    let mut io = Vec::new();
    let mut files = Vec::new();
    io.push(format!("--function={}", test.function));
    for input in &test.inputs {
        let (arg, file) = resolve_value(input, &dir);
        io.push(format!("--input={arg}"));
        files.extend(file);
    }
    for output in &test.outputs {
        let (arg, file) = resolve_value(output, &dir);
        io.push(format!("--expected_output={arg}"));
        files.extend(file);
    }
    if let Some(tol) = test.tolerance {
        for ty in ["f16", "bf16", "f32", "f64"] {
            io.push(format!("--expected_{ty}_threshold={tol}"));
        }
    }
    let mut run_flags = target.run_flags.clone();
    run_flags.extend(test.run_flags.iter().cloned());
    run_flags.extend(over.run_flags.iter().cloned());
    let (expect, expect_reason) = match (over.expect, sel.ignore_xfails) {
        (Some(ExpectText::CompileFail), false) => (
            Expect::CompileFail,
            format!("expect = \"compile-fail\" for target {}", target.name),
        ),
        (Some(ExpectText::RunFail), false) => (
            Expect::RunFail,
            format!("expect = \"run-fail\" for target {}", target.name),
        ),
        _ => (Expect::Pass, String::new()),
    };
    let benchmark = test
        .benchmark
        .clone()
        .filter(|_| !sel.skip_all_runs)
        .map(|goldens| {
            let mut flags: Vec<String> = run_flags
                .iter()
                .filter(|f| f.starts_with("--device"))
                .cloned()
                .collect();
            flags.push(format!("--function={}", test.function));
            for input in &test.inputs {
                flags.push(format!("--input={}", resolve_value(input, &dir).0));
            }
            BenchSpec { goldens, flags }
        });
    let mut markers = suite.suite.markers.clone();
    markers.extend(test.markers.iter().cloned());
    markers.extend(target.markers.iter().cloned());
    markers.push(target.name.clone());
    markers.push(suite.name());
    let markers = distinct(markers);
    run_flags.extend(io);
    Test {
        id: format!("{}/{} [{}]", suite.name(), test.name, target.name),
        case: format!("{}/{}", suite.name(), test.name),
        group: target.name.clone(),
        markers,
        compile: target.unavailable.is_none().then(|| CompileSpec {
            source,
            flags: compile_flags,
            cwd: dir.clone(),
            // Whether or not this run benchmarks: a compile-only run (a
            // bundle) builds the module the benchmarking run will look up.
            statistics: test.benchmark.is_some(),
        }),
        run: (!sel.skip_all_runs).then(|| RunSpec {
            cwd: dir.clone(),
            flags: run_flags,
            files,
        }),
        benchmark,
        expect,
        expect_reason,
        config: None,
        lit: None,
        pytest: None,
        skip_reason: target.unavailable.clone(),
        torch: None,
        parameters: test
            .parameters
            .iter()
            .map(|p| {
                let source = match (&p.file, &p.url, &p.sha256) {
                    (None, Some(url), Some(sha)) => Source::Url {
                        url: url.clone(),
                        sha256: sha.to_lowercase(),
                    },
                    _ => Source::File(dir.join(p.file.as_deref().unwrap_or_default())),
                };
                (p.scope.clone(), source)
            })
            .collect(),
    }
}

/// `@file` -> `@/abs/file`; `TYPE=@file` -> `TYPE=@/abs/file`; anything else
/// (splats, inline values) unchanged. Returns the argument and the file it names.
fn resolve_value(value: &str, dir: &Path) -> (String, Option<PathBuf>) {
    let (prefix, path) = if let Some(rest) = value.strip_prefix('@') {
        ("", rest)
    } else if let Some((ty, rest)) = value.split_once("=@") {
        (ty, rest)
    } else {
        return (value.to_string(), None);
    };
    let file = dir.join(path);
    let arg = if prefix.is_empty() {
        format!("@{}", file.display())
    } else {
        format!("{prefix}=@{}", file.display())
    };
    (arg, Some(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_balance_by_recorded_durations() {
        // 40 tests of very different lengths, a few without a time.
        let ids: Vec<String> = (0..40).map(|i| format!("t{i:02}")).collect();
        let durations: BTreeMap<String, f64> = ids
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 13 != 5)
            .map(|(i, id)| (id.clone(), ((i * 37) % 29 + 1) as f64 * 0.7))
            .collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let assigned = shards(&refs, 4, Some(&durations));
        assert_eq!(
            assigned,
            shards(&refs, 4, Some(&durations)),
            "deterministic"
        );
        let mut sorted: Vec<f64> = durations.values().copied().collect();
        sorted.sort_by(f64::total_cmp);
        let fill = sorted[sorted.len() / 2];
        let mut loads = [0.0; 4];
        for (id, shard) in refs.iter().zip(&assigned) {
            loads[shard - 1] += durations.get(*id).copied().unwrap_or(fill);
        }
        let mean = loads.iter().sum::<f64>() / 4.0;
        for load in loads {
            assert!((load - mean).abs() <= 0.1 * mean, "{loads:?}");
        }
        // Without times: by name, as before.
        let by_name = shards(&refs, 4, None);
        assert!(refs
            .iter()
            .zip(&by_name)
            .all(|(id, s)| *s == shard_of(id, 4)));
        let empty = BTreeMap::new();
        assert_eq!(shards(&refs, 4, Some(&empty)), by_name);
    }

    #[test]
    fn shards_partition_stably() {
        let ids: Vec<String> = (0..200).map(|i| format!("case{i} [cpu]")).collect();
        let mut counts = [0usize; 4];
        for id in &ids {
            let s = shard_of(id, 4);
            assert_eq!(s, shard_of(id, 4));
            counts[s - 1] += 1;
        }
        assert!(counts.iter().all(|&c| c > 20), "{counts:?}");
        assert_eq!(parse_shard("2/4").unwrap(), (2, 4));
        assert!(
            parse_shard("5/4").is_err() && parse_shard("0/1").is_err() && parse_shard("x").is_err()
        );
    }

    #[test]
    fn values_resolve_relative_to_the_suite() {
        let dir = Path::new("/s");
        assert_eq!(resolve_value("@a.npy", dir).0, "@/s/a.npy");
        assert_eq!(resolve_value("2xf32=@a.bin", dir).0, "2xf32=@/s/a.bin");
        assert_eq!(resolve_value("2xf32=1", dir), ("2xf32=1".to_string(), None));
    }

    #[test]
    fn a_typo_in_a_per_test_target_names_the_closest() {
        let suite = NativeSuite::parse(
            "[[test]]\nname = \"t\"\nsource = \"a.mlir\"\n[test.targets.cpu-snyc]\n",
            Path::new("s/x.suite.toml"),
        );
        let suite = match suite {
            Ok(suite) => suite,
            Err(err) => panic!("{}", err.render()),
        };
        let known = vec!["cpu".to_string(), "cpu-sync".to_string()];
        let err = match check_test_targets(&suite, &known) {
            Ok(()) => panic!("a typo was accepted"),
            Err(err) => err,
        };
        assert!(
            err.message.contains("did you mean `cpu-sync`"),
            "{}",
            err.message
        );
        assert!(err.message.contains("s/x.suite.toml"), "{}", err.message);
        assert_eq!(strsim_distance("kitten", "sitting"), 3);
        assert_eq!(strsim_distance(&"a".repeat(300), "a"), usize::MAX);
    }

    #[test]
    fn zero_timeouts_and_bad_target_names_in_lockstep_toml_are_refused() {
        let origin = Path::new("/p/lockstep.toml");
        let mut config = TestConfig {
            compile_timeout: std::time::Duration::ZERO,
            ..TestConfig::default()
        };
        let err = check_test_config(&config, origin).err().map(|e| e.message);
        assert!(
            err.is_some_and(|m| m.contains("compile-timeout") && m.contains("/p/lockstep.toml"))
        );
        config.compile_timeout = std::time::Duration::from_secs(1);
        config.targets.insert("a\u{1b}b".into(), Default::default());
        let err = check_test_config(&config, origin).err().map(|e| e.render());
        assert!(err.is_some_and(|m| m.contains("invalid target name") && !m.contains('\u{1b}')));
        config.targets.clear();
        config.targets.insert(
            "gpu".into(),
            crate::config::TargetConfig {
                markers: vec!["or".into()],
                ..Default::default()
            },
        );
        let err = check_test_config(&config, origin).err().map(|e| e.message);
        assert!(err.is_some_and(|m| m.contains("can never be selected")));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        #[test]
        fn balanced_shards_never_panic(times in proptest::collection::vec(proptest::prelude::any::<f64>(), 0..20), count in 0usize..8) {
            let ids: Vec<String> = (0..times.len()).map(|i| format!("t{i}")).collect();
            let durations: BTreeMap<String, f64> = ids.iter().cloned().zip(times.iter().copied()).collect();
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            for shard in shards(&refs, count, Some(&durations)) {
                proptest::prop_assert!(shard >= 1 && shard <= count.max(1));
            }
        }

        #[test]
        fn shards_never_panic(text in "\\PC{0,20}", id in "\\PC{0,20}", count in proptest::prelude::any::<usize>()) {
            if let Ok((i, n)) = parse_shard(&text) {
                proptest::prop_assert!(1 <= i && i <= n);
            }
            let shard = shard_of(&id, count);
            proptest::prop_assert!(shard >= 1 && shard <= count.max(1));
        }
    }
}
