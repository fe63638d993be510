//! Uploading wheels (`lockstep release promote --upload URL`) with `uv
//! publish`, which speaks the standard upload API (what twine speaks to
//! PyPI, pypiserver and devpi), through lockstep-python's layer (its
//! timeout, log and environment policy).
//!
//! Credentials come from `$TWINE_USERNAME` / `$TWINE_PASSWORD` (else uv's
//! own `$UV_PUBLISH_USERNAME` / `$UV_PUBLISH_PASSWORD` / `$UV_PUBLISH_TOKEN`), handed to `uv
//! publish` in its variables, never on a command line and never printed (a
//! password without a user name is an API token, user `__token__`; no
//! credentials at all is an anonymous upload). A file the server already
//! has (409, or 400 "File already exists" as PyPI answers) is skipped with a
//! note, as `twine --skip-existing`; every other refusal (PyPI's 400 for a
//! `linux_x86_64` wheel among them) is an error with the server's message.

use std::path::Path;

use lockstep_core::Error;
use lockstep_python::sdist::SdistName;
use lockstep_python::uv::{Credentials, Uploaded, Uv};
use lockstep_python::wheel::WheelName;

pub use lockstep_core::error::without_userinfo;

/// Refuses an upload URL that is not http(s), and plain `http://` to
/// anything but this machine when a credential would travel with the upload
/// (`$TWINE_PASSWORD` and the other variables, `user:password@` in the URL,
/// a trusted-publishing token): checked before anything is promoted or sent.
pub fn check_url(url: &str) -> Result<(), Error> {
    check_url_for(url, &credentials(false))
}

fn check_url_for(url: &str, credentials: &Credentials) -> Result<(), Error> {
    use lockstep_http::{PlainHttp, UrlRules};
    let sends_secret = credentials.trusted
        || credentials.password.is_some()
        || credentials.username.is_some()
        || lockstep_http::Url::parse(url.trim())
            .is_ok_and(|u| !u.username().is_empty() || u.password().is_some());
    let rules = UrlRules {
        userinfo: true,
        plain_http: match sends_secret {
            true => PlainHttp::LoopbackOnly,
            false => PlainHttp::Anywhere,
        },
    };
    lockstep_http::parse_url(url, rules).map(drop).map_err(|why| {
        let bare = without_userinfo(url);
        let shown = lockstep_core::error::printable(&bare);
        let err = Error::usage(format!("--upload `{shown}` is refused")).cause(why.to_string());
        match why {
            lockstep_http::UrlError::PlainHttpNotLoopback(_) => err.hint(
                "the upload carries credentials: use the server's https:// URL (plain http is only for a server on this machine); nothing was uploaded",
            ),
            _ => err.hint("give the index's upload URL, e.g. https://upload.pypi.org/legacy/; nothing was uploaded"),
        }
    })
}

/// Uploads `wheel` (a wheel or an sdist) to the upload endpoint `url` with `uv`.
pub fn upload(uv: &Uv, url: &str, wheel: &Path) -> Result<Uploaded, Error> {
    let file_name = lockstep_core::fs::file_name(wheel);
    if WheelName::parse(&file_name).is_none() && SdistName::parse(&file_name).is_none() {
        return Err(Error::usage(format!(
            "{file_name} is not a wheel or an sdist"
        )));
    }
    let credentials = credentials(false);
    check_url_for(url, &credentials)?;
    uv.publish(url, wheel, &credentials)
}

/// Every wheel and sdist directly in `dir` (in name order) to `url`:
/// `lockstep release upload`. With `trusted` and no credentials in the
/// environment, PyPI's trusted publishing (a GitHub job with `id-token:
/// write`); credentials, when set, win (a token to a private index).
pub fn upload_dir(
    uv: &Uv,
    url: &str,
    dir: &Path,
    trusted: bool,
    sink: &dyn lockstep_core::events::Sink,
) -> Result<UploadReport, Error> {
    let credentials = credentials(trusted);
    check_url_for(url, &credentials)?;
    if !dir.is_dir() {
        return Err(
            Error::usage(format!("{} is not a directory", dir.display()))
                .hint("give the directory `release promote --copy-to DIR` wrote"),
        );
    }
    let mut files: Vec<std::path::PathBuf> = fs_err::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = lockstep_core::fs::file_name(p);
            WheelName::parse(&name).is_some() || SdistName::parse(&name).is_some()
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(
            Error::usage(format!("{} holds no wheel or sdist", dir.display()))
                .hint("give the directory `release promote --copy-to DIR` wrote"),
        );
    }
    let mut done = Vec::new();
    for file in files {
        let name = lockstep_core::fs::file_name(&file);
        sink.note(format!("uploading {name} to {}", without_userinfo(url)));
        let sent = uv.publish(url, &file, &credentials)?;
        if sent == Uploaded::AlreadyThere {
            sink.note(format!(
                "{name} is on the server already: skipped (released files are immutable)"
            ));
        }
        done.push(UploadedFile {
            file: name,
            uploaded: sent == Uploaded::Sent,
        });
    }
    Ok(UploadReport {
        url: without_userinfo(url),
        files: done,
    })
}

/// `release upload --json`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct UploadReport {
    pub url: String,
    pub files: Vec<UploadedFile>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct UploadedFile {
    pub file: String,
    /// False: the server had it already (skipped).
    pub uploaded: bool,
}

/// `$TWINE_USERNAME` / `$TWINE_PASSWORD`, else uv's own variables
/// (`$UV_PUBLISH_TOKEN` counts as a password); trusted publishing only when
/// asked for and none is set.
fn credentials(trusted: bool) -> Credentials {
    let var = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty()))
    };
    let username = var(&["TWINE_USERNAME", "UV_PUBLISH_USERNAME"]);
    let password = var(&["TWINE_PASSWORD", "UV_PUBLISH_PASSWORD", "UV_PUBLISH_TOKEN"]);
    Credentials {
        trusted: trusted && username.is_none() && password.is_none(),
        username,
        password,
    }
}
