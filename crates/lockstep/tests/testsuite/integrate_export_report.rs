// Test code starts its fixtures' processes directly; product code goes
// through lockstep_core::process (clippy.toml).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Output;
use std::sync::mpsc;
use std::time::Duration;

use crate::common::{
    assert_schema, current_branch, expect_code, git, is_ancestor, is_clean, spec, text, with_break,
    write_executable, Env,
};
use lockstep_sandbox::SandboxSpec;

// ---------------------------------------------------------------------------
// Helpers.

fn patched(commits: usize) -> SandboxSpec {
    SandboxSpec {
        patches: true,
        ..spec(commits)
    }
}

/// The submodule commit recorded in the superproject's HEAD.
fn pinned(env: &Env) -> String {
    git(
        env.sp(),
        &["rev-parse", &format!("HEAD:{}", env.sb.submodule_path)],
    )
}

/// Tip of `branch` in the fork (the submodule's `origin`), if it exists.
fn fork_tip(env: &Env, branch: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(&env.sb.fork)
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("refs/heads/{branch}^{{commit}}"))
        .output()
        .expect("git");
    out.status
        .success()
        .then(|| text(&out.stdout).trim().to_string())
}

/// Branches of the fork whose name starts with `sm-`.
fn fork_export_branches(env: &Env) -> Vec<String> {
    git(
        &env.sb.fork,
        &["for-each-ref", "--format=%(refname:short)", "refs/heads/"],
    )
    .lines()
    .filter(|l| l.starts_with("sm-"))
    .map(str::to_string)
    .collect()
}

/// A sandbox whose loop halted at the API break (exit 3).
fn halted(spec: &SandboxSpec) -> Env {
    let env = Env::new(spec);
    env.start();
    env.ok(&["integrate", "loop"], 3);
    env
}

/// Commits everything staged and unstaged in the superproject.
fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(
        dir,
        &[
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "commit",
            "-q",
            "-m",
            message,
        ],
    );
}

/// Rewrites `[integrate] smoke` in the superproject's lockstep.toml.
fn set_smoke(env: &Env, argv0: &str) {
    let path = env.sp().join("lockstep.toml");
    let toml = std::fs::read_to_string(&path).expect("lockstep.toml");
    assert!(
        toml.contains("smoke = [\"./build_tools/smoke.sh\"]"),
        "{toml}"
    );
    let toml = toml.replace(
        "smoke = [\"./build_tools/smoke.sh\"]",
        &format!("smoke = [\"{argv0}\"]"),
    );
    std::fs::write(&path, toml).expect("write lockstep.toml");
}

/// Lines of `text` between the line starting with `start` and the next line
/// starting with "```" after it.
fn fenced_after<'a>(text: &'a str, start: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|l| !l.starts_with(start));
    assert!(lines.next().is_some(), "no `{start}` in:\n{text}");
    let mut lines = lines.skip_while(|l| !l.starts_with("```"));
    assert!(
        lines.next().is_some(),
        "no fence after `{start}` in:\n{text}"
    );
    lines.take_while(|l| !l.starts_with("```")).collect()
}

// ---------------------------------------------------------------------------
// A one-shot HTTP server.

/// One request as the test server saw it.
struct Request {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Serves exactly one request on 127.0.0.1 (any free port) and answers it with
/// `response`; returns the port and a receiver for the request.
fn serve_once(response: String) -> (u16, mpsc::Receiver<Request>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut request_line = String::new();
        reader.read_line(&mut request_line).expect("request line");
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("header");
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                break;
            }
            if let Some((n, v)) = line.split_once(':') {
                headers.push((n.trim().to_string(), v.trim().to_string()));
            }
        }
        let len: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; len];
        reader.read_exact(&mut body).expect("body");
        let mut stream = stream;
        let _ = stream.write_all(response.as_bytes());
        let _ = stream.flush();
        let _ = tx.send(Request {
            request_line: request_line.trim_end().to_string(),
            headers,
            body,
        });
    });
    (port, rx)
}

const NO_CONTENT: &str = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";

fn webhook_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}/api/webhooks/123/SECRET-TOKEN")
}

/// Runs `lockstep <extra> integrate report --post` with the webhook URL set.
fn post(env: &Env, port: u16, extra: &[&str]) -> Output {
    let mut args: Vec<&str> = extra.to_vec();
    args.extend(["integrate", "report", "--post"]);
    env.cmd(&args)
        .env("LOCKSTEP_WEBHOOK_URL", webhook_url(port))
        .output()
        .expect("run lockstep")
}

/// Neither output of lockstep may reveal the webhook URL or any part of it.
fn assert_url_hidden(port: u16, stdout: &str, stderr: &str, baseline_report: &str) {
    let url = webhook_url(port);
    for (name, out) in [("stdout", stdout), ("stderr", stderr)] {
        for needle in [
            url.as_str(),
            "SECRET-TOKEN",
            "/api/webhooks/123",
            "127.0.0.1",
            &format!(":{port}"),
        ] {
            assert!(!out.contains(needle), "{name} reveals `{needle}`:\n{out}");
        }
    }
    assert!(
        !stderr.contains(&port.to_string()),
        "stderr reveals the port {port}:\n{stderr}"
    );
    // stdout is the report itself, which knows nothing of the webhook.
    assert_eq!(stdout, baseline_report, "stdout differs from the report");
}

/// A multipart/form-data part.
struct Part {
    name: String,
    filename: Option<String>,
    data: Vec<u8>,
}

fn disposition_param(headers: &str, key: &str) -> Option<String> {
    let line = headers
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("content-disposition:"))?;
    let pat = format!("{key}=\"");
    let start = line
        .split(';')
        .map(str::trim)
        .find(|p| p.starts_with(&pat))?;
    Some(start[pat.len()..start.len() - 1].to_string())
}

fn multipart(content_type: &str, body: &[u8]) -> Vec<Part> {
    let boundary = content_type
        .split(';')
        .map(str::trim)
        .find_map(|p| p.strip_prefix("boundary="))
        .unwrap_or_else(|| panic!("no boundary in {content_type}"))
        .trim_matches('"')
        .to_string();
    let body = text(body);
    let delimiter = format!("--{boundary}");
    let mut parts = Vec::new();
    let mut chunks = body.split(&delimiter);
    assert_eq!(chunks.next(), Some(""), "body starts with the boundary");
    for chunk in chunks {
        if chunk.starts_with("--") {
            break; // closing delimiter
        }
        let chunk = chunk.strip_prefix("\r\n").expect("CRLF after boundary");
        let (headers, data) = chunk.split_once("\r\n\r\n").expect("part headers");
        let data = data.strip_suffix("\r\n").expect("CRLF before boundary");
        parts.push(Part {
            name: disposition_param(headers, "name").expect("part name"),
            filename: disposition_param(headers, "filename"),
            data: data.as_bytes().to_vec(),
        });
    }
    parts
}

fn subject_of(env: &Env, sha: &str) -> String {
    git(&env.sb.upstream, &["log", "-1", "--format=%s", sha])
}

fn author_of(env: &Env, sha: &str) -> String {
    git(&env.sb.upstream, &["log", "-1", "--format=%an", sha])
}

// ---------------------------------------------------------------------------
// Export.

#[test]
fn export_creates_then_splices_and_never_forces() {
    let env = Env::new(&patched(40));
    env.start();
    let branch = current_branch(&env);
    assert!(branch.starts_with("integrates/llvm-"), "{branch}");
    let export_branch = format!("sm-super-{branch}");
    assert!(fork_export_branches(&env).is_empty());

    // An advance without export leaves the fork alone.
    let out = env.ok(&["integrate", "next", "--no-export"], 0);
    assert!(!out.contains("export:"), "{out}");
    let head1 = pinned(&env);
    assert_ne!(
        head1, env.sb.affecting[0],
        "patched pin is not pure upstream"
    );
    assert!(is_ancestor(
        env.sp().join(&env.sb.submodule_path).as_path(),
        &env.sb.affecting[0],
        &head1
    ));
    assert_eq!(fork_tip(&env, &export_branch), None);

    // The first export creates the branch with a plain push of the head.
    let out = env.ok(&["integrate", "export"], 0);
    assert!(out.contains("pushed"), "{out}");
    assert!(out.contains(&export_branch), "{out}");
    let tip1 = fork_tip(&env, &export_branch).expect("export branch created");
    assert_eq!(tip1, head1);
    assert_eq!(fork_export_branches(&env), vec![export_branch.clone()]);

    // Exporting again changes nothing.
    let out = env.ok(&["integrate", "export"], 0);
    assert!(out.contains("already on"), "{out}");
    assert_eq!(
        fork_tip(&env, &export_branch).as_deref(),
        Some(tip1.as_str())
    );

    // `next` exports by itself: a splice commit on top of the old tip.
    let mut tips = vec![tip1.clone()];
    let mut heads = vec![head1.clone()];
    for _ in 0..2 {
        let out = env.ok(&["integrate", "next"], 0);
        assert!(out.contains("export: spliced onto"), "{out}");
        let head = pinned(&env);
        let old_tip = tips.last().expect("tip").clone();
        let tip = fork_tip(&env, &export_branch).expect("export branch");
        assert_ne!(tip, old_tip);
        assert_ne!(tip, head, "the tip is a splice, not the head");

        let parents: Vec<String> = git(&env.sb.fork, &["rev-list", "--parents", "-n", "1", &tip])
            .split_whitespace()
            .skip(1)
            .map(str::to_string)
            .collect();
        assert_eq!(
            parents,
            vec![head.clone(), old_tip.clone()],
            "splice parents"
        );
        assert_eq!(
            git(&env.sb.fork, &["rev-parse", &format!("{tip}^{{tree}}")]),
            git(&env.sb.fork, &["rev-parse", &format!("{head}^{{tree}}")]),
            "splice has the head's tree"
        );
        let message = git(&env.sb.fork, &["log", "-1", "--format=%B", &tip]);
        assert!(message.starts_with("Splice submodule rebase"), "{message}");
        for earlier in heads.iter().chain(tips.iter()) {
            assert!(
                is_ancestor(&env.sb.fork, earlier, &tip),
                "{earlier} is no longer reachable from the export branch"
            );
        }
        // Fast-forward only: every previous tip is an ancestor of the new one.
        assert!(is_ancestor(&env.sb.fork, &old_tip, &tip));
        tips.push(tip);
        heads.push(head);
    }

    let out = env.ok(&["integrate", "export"], 0);
    assert!(out.contains("already on"), "{out}");
    assert_eq!(
        fork_tip(&env, &export_branch).as_deref(),
        tips.last().map(String::as_str)
    );
    assert_eq!(fork_export_branches(&env), vec![export_branch]);
    assert!(is_clean(env.sp()));
}

#[test]
fn export_of_a_clean_pin_does_nothing() {
    let env = Env::new(&spec(40));
    env.start();
    let out = env.ok(&["integrate", "export"], 0);
    assert!(out.contains("nothing to export (pure upstream)"), "{out}");
    let out = env.ok(&["integrate", "next"], 0);
    assert!(!out.contains("spliced") && !out.contains("pushed"), "{out}");
    assert_eq!(pinned(&env), env.sb.affecting[0]);
    let out = env.ok(&["integrate", "export"], 0);
    assert!(out.contains("nothing to export (pure upstream)"), "{out}");
    assert!(fork_export_branches(&env).is_empty());
}

// ---------------------------------------------------------------------------
// Report.

#[test]
fn report_without_halt_exits_1() {
    let env = Env::new(&spec(40));
    let out = env.run(&["integrate", "report"]);
    let (stdout, stderr) = expect_code(&out, 1, "integrate report");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("no halt"), "{stderr}");

    env.start();
    let out = env.run(&["integrate", "report", "--json"]);
    let (_, stderr) = expect_code(&out, 1, "integrate report --json");
    assert!(stderr.contains("no halt"), "{stderr}");
}

#[test]
fn halt_report_names_the_culprit_and_the_errors() {
    let env = halted(&with_break(40));
    let culprit = env.sb.breaks[0].clone();
    let subject = subject_of(&env, &culprit);
    let author = author_of(&env, &culprit);

    let report = env.ok(&["integrate", "report"], 0);
    assert!(report.contains(&culprit), "{report}");
    assert!(report.contains(&subject), "{report}");
    assert!(report.contains(&author), "{report}");
    assert!(
        report.contains(&format!(
            "https://github.com/llvm/llvm-project/commit/{culprit}"
        )),
        "{report}"
    );
    assert!(report.contains("kind: smoke"), "{report}");
    let errors = fenced_after(&report, "## Errors");
    assert!(
        errors.iter().any(|l| l.starts_with("FAILED: ")),
        "{errors:?}"
    );
    assert!(errors.contains(&"FAILED: src/main.cpp.o"), "{errors:?}");
    assert!(
        errors
            .iter()
            .any(|l| l.contains(" error: ") && l.contains("no member named 'create'")),
        "{errors:?}"
    );
    let log = report
        .lines()
        .find_map(|l| l.strip_prefix("Full log: "))
        .unwrap_or_else(|| panic!("no full log in:\n{report}"));
    let log_text = std::fs::read_to_string(log).expect("full log exists");
    assert!(log_text.contains("FAILED: src/main.cpp.o"), "{log_text}");
    assert!(report.contains("## Reproduce"), "{report}");
    let repro = fenced_after(&report, "## Reproduce");
    assert!(
        repro.iter().any(|l| l.contains("./build_tools/smoke.sh")),
        "{repro:?}"
    );
    // The last good commit is the tracked commit just before the break.
    let last_good = report
        .lines()
        .find_map(|l| l.strip_prefix("- last good: "))
        .expect("last good line");
    let last_good = &last_good[..40];
    let b0 = env
        .sb
        .affecting
        .iter()
        .position(|c| *c == culprit)
        .expect("the break is a tracked commit");
    assert!(b0 > 0, "the break is not the first tracked commit");
    assert_eq!(last_good, env.sb.affecting[b0 - 1]);
    assert!(is_ancestor(&env.sb.upstream, last_good, &culprit));

    // JSON.
    let json: serde_json::Value =
        serde_json::from_str(&env.ok(&["integrate", "report", "--json"], 0)).expect("json");
    assert_eq!(json["culprit"]["sha"], culprit.as_str(), "{json}");
    assert_eq!(json["kind"], "smoke", "{json}");

    // Status points at the same halt and its report file.
    let status = env.status();
    let halt = &status["halted"];
    assert_eq!(halt["commit"], culprit.as_str(), "{status}");
    assert_eq!(halt["kind"], "smoke", "{status}");
    let path = halt["report"].as_str().expect("report path");
    assert!(Path::new(path).is_file(), "{path}");
    assert!(
        path.contains("/.git/lockstep/reports/"),
        "reports live under .git/lockstep/reports: {path}"
    );
    let saved = std::fs::read_to_string(path).expect("report file");
    assert!(saved.contains(&culprit), "{saved}");
    assert!(is_clean(env.sp()));
}

#[test]
fn error_summary_is_limited_to_max_error_lines() {
    let env = Env::new(&with_break(40));
    env.start();
    let script = env.sp().join("build_tools/noisy.sh");
    write_executable(
        &script,
        "#!/usr/bin/env bash\n\
         # Passes when the sandbox smoke passes; otherwise prints 30 errors.\n\
         if ./build_tools/smoke.sh >/dev/null 2>&1; then exit 0; fi\n\
         for i in $(seq 1 30); do echo \"FAILED: x$i\"; echo \"  noise $i\"; done\n\
         exit 1\n",
    );
    set_smoke(&env, "./build_tools/noisy.sh");
    commit_all(env.sp(), "Use the noisy smoke");
    assert!(is_clean(env.sp()));

    env.ok(&["integrate", "loop"], 3);
    let report = env.ok(&["integrate", "report"], 0);
    assert!(report.contains(&env.sb.breaks[0]), "{report}");
    assert!(report.contains("## Errors (30 matching lines)"), "{report}");
    let errors = fenced_after(&report, "## Errors");
    let want: Vec<String> = (1..=20)
        .map(|i| format!("FAILED: x{i}"))
        .chain(["... and 10 more".to_string()])
        .collect();
    assert_eq!(errors, want, "{report}");

    let json: serde_json::Value =
        serde_json::from_str(&env.ok(&["integrate", "report", "--json"], 0)).expect("json");
    assert_eq!(json["culprit"]["sha"], env.sb.breaks[0].as_str());
}

/// The default error lines: rustc's and scripts' `error:` at the start of a
/// line, CMake's `CMake Error`, a Python traceback's exception, beside
/// gcc's `file:line:col: error:` in the middle of one (the old default,
/// `" error: "`, found only the last: "Errors (0 matching lines)" for a log
/// of rustc or CMake errors).
#[test]
fn error_summary_finds_errors_at_the_start_of_a_line() {
    let env = Env::new(&with_break(40));
    env.start();
    let script = env.sp().join("build_tools/tools.sh");
    write_executable(
        &script,
        "#!/usr/bin/env bash\n\
         if ./build_tools/smoke.sh >/dev/null 2>&1; then exit 0; fi\n\
         echo 'Compiling sandbox v0.1.0'\n\
         echo 'error[E0425]: cannot find value `y` in this scope'\n\
         echo 'error: could not compile `sandbox` due to 1 previous error'\n\
         echo 'CMake Error at CMakeLists.txt:3 (find_package):'\n\
         echo 'Traceback (most recent call last):'\n\
         echo '  File x.py, line 1, in <module>'\n\
         echo 'ValueError: bad input'\n\
         exit 1\n",
    );
    set_smoke(&env, "./build_tools/tools.sh");
    commit_all(env.sp(), "Use a smoke that prints other tools' errors");
    env.ok(&["integrate", "loop"], 3);
    let report = env.ok(&["integrate", "report"], 0);
    assert!(report.contains("## Errors (5 matching lines)"), "{report}");
    let errors = fenced_after(&report, "## Errors");
    assert_eq!(
        errors,
        [
            "error[E0425]: cannot find value `y` in this scope",
            "error: could not compile `sandbox` due to 1 previous error",
            "CMake Error at CMakeLists.txt:3 (find_package):",
            "Traceback (most recent call last):",
            "ValueError: bad input",
        ],
        "{report}"
    );
}

// ---------------------------------------------------------------------------
// Webhooks.

/// Checks a Discord webhook request: multipart with `payload_json` naming the
/// culprit and `files[0]` = `errors.txt` holding the error summary.
fn check_discord_request(req: &Request, culprit: &str) {
    assert!(
        req.request_line
            .starts_with("POST /api/webhooks/123/SECRET-TOKEN "),
        "{}",
        req.request_line
    );
    let content_type = req.header("content-type").expect("content type");
    assert!(
        content_type.starts_with("multipart/form-data"),
        "{content_type}"
    );
    let parts = multipart(content_type, &req.body);
    let payload = parts
        .iter()
        .find(|p| p.name == "payload_json")
        .expect("payload_json part");
    let payload: serde_json::Value = serde_json::from_slice(&payload.data).expect("payload json");
    assert_schema("webhook-discord.json", &payload);
    let content = payload["content"].as_str().expect("content");
    assert!(content.contains(culprit), "{content}");
    assert!(content.chars().count() <= 2000, "{}", content.len());
    assert_eq!(payload["attachments"][0]["filename"], "errors.txt");
    assert_eq!(payload["attachments"][0]["id"], 0);
    let file = parts
        .iter()
        .find(|p| p.name == "files[0]")
        .expect("files[0] part");
    assert_eq!(file.filename.as_deref(), Some("errors.txt"));
    let errors = text(&file.data);
    assert!(errors.contains("FAILED: src/main.cpp.o"), "{errors}");
    assert!(errors.contains(" error: "), "{errors}");
}

fn not_found(body: &str) -> String {
    format!(
        "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A 404 body that echoes the webhook path, as some services do.
const NOT_FOUND_BODY: &str =
    "{\"message\": \"Unknown Webhook /api/webhooks/123/SECRET-TOKEN\", \"code\": 10015}";

#[test]
fn post_to_discord_sends_multipart_and_hides_the_url() {
    let env = halted(&with_break(40));
    let culprit = env.sb.breaks[0].clone();
    let baseline = env.ok(&["integrate", "report"], 0);

    let (port, rx) = serve_once(NO_CONTENT.to_string());
    let out = post(&env, port, &[]);
    let (stdout, stderr) = expect_code(&out, 0, "integrate report --post");
    let req = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the server got a request");
    assert_url_hidden(port, &stdout, &stderr, &baseline);
    assert!(stderr.contains("$LOCKSTEP_WEBHOOK_URL"), "{stderr}");
    check_discord_request(&req, &culprit);
}

#[test]
fn post_answered_404_fails_without_revealing_the_url() {
    let env = halted(&with_break(40));
    let baseline = env.ok(&["integrate", "report"], 0);
    let (port, rx) = serve_once(not_found(NOT_FOUND_BODY));
    let out = post(&env, port, &[]);
    let (stdout, stderr) = expect_code(&out, 1, "integrate report --post (404)");
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the server got a request");
    assert!(stderr.contains("404"), "{stderr}");
    assert!(stderr.contains("$LOCKSTEP_WEBHOOK_URL"), "{stderr}");
    assert_url_hidden(port, &stdout, &stderr, &baseline);
}

/// `-vv` turns on debug logging, including the HTTP stack's: the URL must
/// stay out of it all the same ("never appears in output, errors or logs").
#[test]
fn verbose_logging_never_reveals_the_webhook_url() {
    let env = halted(&with_break(40));
    let culprit = env.sb.breaks[0].clone();
    let baseline = env.ok(&["integrate", "report"], 0);

    let (port, rx) = serve_once(NO_CONTENT.to_string());
    let out = post(&env, port, &["-vv"]);
    let (stdout, stderr) = expect_code(&out, 0, "lockstep -vv integrate report --post");
    let req = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the server got a request");
    check_discord_request(&req, &culprit);
    assert_url_hidden(port, &stdout, &stderr, &baseline);

    let (port, rx) = serve_once(not_found(NOT_FOUND_BODY));
    let out = post(&env, port, &["-vv"]);
    let (stdout, stderr) = expect_code(&out, 1, "lockstep -vv integrate report --post (404)");
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the server got a request");
    assert!(stderr.contains("404"), "{stderr}");
    assert_url_hidden(port, &stdout, &stderr, &baseline);
}

#[test]
fn post_to_slack_sends_json_text() {
    let env = halted(&with_break(40));
    let culprit = env.sb.breaks[0].clone();
    let path = env.sp().join("lockstep.toml");
    let mut toml = std::fs::read_to_string(&path).expect("lockstep.toml");
    toml.push_str("\n[integrate.notify]\nkind = \"slack\"\n");
    std::fs::write(&path, toml).expect("write lockstep.toml");
    let baseline = env.ok(&["integrate", "report"], 0);

    let (port, rx) = serve_once(
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".to_string(),
    );
    let out = post(&env, port, &[]);
    let (stdout, stderr) = expect_code(&out, 0, "integrate report --post (slack)");
    let req = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the server got a request");
    assert_url_hidden(port, &stdout, &stderr, &baseline);
    assert!(
        req.request_line.starts_with("POST "),
        "{}",
        req.request_line
    );
    let content_type = req.header("content-type").expect("content type");
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let body: serde_json::Value = serde_json::from_slice(&req.body).expect("json body");
    assert_schema("webhook-slack.json", &body);
    let text = body["text"].as_str().expect("text key");
    assert!(text.contains(&culprit), "{text}");
    assert!(text.contains("```"), "{text}");
    assert!(text.contains("FAILED: src/main.cpp.o"), "{text}");
}
