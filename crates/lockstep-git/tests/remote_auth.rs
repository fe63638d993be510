//! The job's credential reaches the one git command that talks to the
//! remote, as a header, and no other command: a loopback HTTP server
//! records what git sends.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use lockstep_git::{RemoteAuth, Repo};

/// Serves 404 to every request and keeps each request's Authorization header.
fn recording_server() -> (String, Arc<Mutex<Vec<Option<String>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut auth = None;
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                if line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("authorization") {
                        auth = Some(value.trim().to_string());
                    }
                }
                line.clear();
            }
            record.lock().unwrap().push(auth);
            let mut stream = stream;
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    (base, seen)
}

fn repo() -> (tempfile::TempDir, Repo) {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Repo::new(dir.path());
    repo.git(&["init", "--quiet"]).expect("init");
    repo.git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@e",
        "commit",
        "--quiet",
        "--allow-empty",
        "-m",
        "one",
    ])
    .expect("commit");
    (dir, repo)
}

#[test]
fn the_header_goes_to_the_push_and_nowhere_else() {
    let (server, seen) = recording_server();
    let (_dir, repo) = repo();
    let url = format!("{server}/owner/repo.git");
    repo.git(&["remote", "add", "origin", &url])
        .expect("remote");

    let auth = RemoteAuth::for_server(&server, &url, "canary-token-1234").expect("on the server");
    let env = auth.env();
    let pushed = repo
        .try_git_env(&["push", "origin", "HEAD:refs/heads/x"], &env, None)
        .expect("git runs");
    assert_ne!(pushed.code, 0, "the server refuses everything");
    let with_header = seen.lock().unwrap().clone();
    use base64::Engine;
    let expected = format!(
        "basic {}",
        base64::engine::general_purpose::STANDARD.encode("x-access-token:canary-token-1234")
    );
    assert!(
        with_header
            .iter()
            .any(|h| h.as_deref() == Some(expected.as_str())),
        "{with_header:?}"
    );

    // The next command (no job credential in this test's environment)
    // sends nothing.
    seen.lock().unwrap().clear();
    let fetched = repo
        .try_git_remote("origin", &["fetch", "origin"])
        .expect("git runs");
    assert_ne!(fetched.code, 0);
    let without = seen.lock().unwrap().clone();
    assert!(!without.is_empty());
    assert!(without.iter().all(Option::is_none), "{without:?}");
}
