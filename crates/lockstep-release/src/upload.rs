//! Uploading wheels with the standard upload API (what twine speaks to PyPI,
//! pypiserver and devpi): one `multipart/form-data` POST per file with
//! `:action=file_upload`, the name, version and sha256, and the file.
//!
//! Credentials come from `$TWINE_USERNAME` / `$TWINE_PASSWORD` (never
//! printed). A file the server already has answers 400 or 409: reported,
//! never retried under another name.

use std::path::Path;
use std::time::Duration;

use lockstep_core::Error;
use lockstep_python::wheel::WheelName;

pub use lockstep_core::error::without_userinfo;

/// Refuses an upload URL that is not http(s).
pub fn check_url(url: &str) -> Result<(), Error> {
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(Error::usage(format!(
            "--upload `{}` is not an http(s) URL",
            without_userinfo(url)
        )));
    }
    Ok(())
}

/// Uploads `wheel` to `url`.
pub fn upload(url: &str, wheel: &Path, sha256: &str) -> Result<(), Error> {
    check_url(url)?;
    let file_name = wheel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = WheelName::parse(&file_name)
        .ok_or_else(|| Error::usage(format!("{file_name} is not a wheel")))?;
    let bytes = fs_err::read(wheel)?;
    let boundary = format!(
        "lockstep-{:016x}{:016x}",
        rand::random::<u64>(),
        rand::random::<u64>()
    );
    let mut body = Vec::with_capacity(bytes.len() + 2048);
    let fields = [
        (":action", "file_upload"),
        ("protocol_version", "1"),
        ("metadata_version", "2.1"),
        ("name", name.name.as_str()),
        ("version", name.version.as_str()),
        ("filetype", "bdist_wheel"),
        ("pyversion", name.python.as_str()),
        ("sha256_digest", sha256),
    ];
    for (key, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{key}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"content\"; filename=\"{file_name}\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes(),
    );
    body.extend_from_slice(&bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());

    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(30))
        .timeout(Duration::from_secs(600))
        .redirects(0)
        .user_agent(concat!("lockstep/", env!("CARGO_PKG_VERSION")))
        .build();
    let mut request = agent.post(url).set(
        "Content-Type",
        &format!("multipart/form-data; boundary={boundary}"),
    );
    let user = std::env::var("TWINE_USERNAME")
        .ok()
        .filter(|v| !v.is_empty());
    let password = std::env::var("TWINE_PASSWORD")
        .ok()
        .filter(|v| !v.is_empty());
    if user.is_some() || password.is_some() {
        let token = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!(
                "{}:{}",
                user.unwrap_or_else(|| "__token__".into()),
                password.unwrap_or_default()
            ),
        );
        request = request.set("Authorization", &format!("Basic {token}"));
    }
    match request.send_bytes(&body) {
        Ok(r) if (200..300).contains(&r.status()) => Ok(()),
        Ok(r) => Err(Error::failed(format!(
            "uploading {file_name}: the server answered HTTP {}",
            r.status()
        ))),
        Err(ureq::Error::Status(code, r)) => {
            let said: String = r
                .into_string()
                .unwrap_or_default()
                .chars()
                .take(300)
                .collect();
            let hint = match code {
                400 | 409 => "the server has this file already (released files are immutable)",
                401 | 403 => "check $TWINE_USERNAME and $TWINE_PASSWORD",
                _ => "check --upload",
            };
            Err(Error::failed(format!("uploading {file_name}: HTTP {code}"))
                .cause(said.trim().to_string())
                .hint(hint))
        }
        Err(ureq::Error::Transport(t)) => Err(Error::failed(format!(
            "uploading {file_name}: cannot reach the server"
        ))
        .cause(t.kind().to_string())
        .hint("check --upload and the network")),
    }
}
