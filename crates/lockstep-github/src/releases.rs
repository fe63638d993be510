//! GitHub Releases: find a tag's release, create one, upload its assets
//! (`lockstep release publish --github-release`).
//!
//! The asset upload goes to the `upload_url` GitHub returns (an RFC 6570
//! template on a separate uploads host: followed, never built), and the
//! token goes there only when that host is the API's own or GitHub's
//! uploads host for api.github.com: a tampered answer cannot send the token
//! elsewhere. An asset name GitHub already has (422 `already_exists`) is
//! reported as there, never replaced.

use lockstep_core::Error;
use lockstep_http::{parse_url, HttpError, StatusClass, Url, UrlRules};
use serde::{Deserialize, Serialize};

use crate::client::{parse, Client, MAX_JSON_BYTES};
use crate::repo::Repo;

/// A release as the API describes it (the fields lockstep reads).
#[derive(Debug, Clone, Deserialize)]
pub struct Release {
    pub id: u64,
    #[serde(default)]
    pub tag_name: String,
    #[serde(default)]
    pub prerelease: bool,
    #[serde(default)]
    pub draft: bool,
    pub upload_url: String,
    #[serde(default)]
    pub html_url: Option<String>,
    #[serde(default)]
    pub assets: Vec<Asset>,
}

/// One asset of a release.
#[derive(Debug, Clone, Deserialize)]
pub struct Asset {
    #[serde(default)]
    pub id: u64,
    pub name: String,
    #[serde(default)]
    pub size: u64,
    /// `sha256:HEX`, where GitHub reports it.
    #[serde(default)]
    pub digest: Option<String>,
}

/// At most this many pages of 100 releases are listed (10,000 releases).
const MAX_RELEASE_PAGES: u32 = 100;

/// What a new release says.
#[derive(Debug, Clone, Serialize)]
pub struct NewRelease {
    pub tag_name: String,
    /// The commit a missing tag is created at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_commitish: Option<String>,
    pub name: String,
    pub body: String,
    pub draft: bool,
    pub prerelease: bool,
}

/// What an asset upload did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssetUpload {
    Sent,
    /// GitHub has an asset of that name already.
    AlreadyThere,
}

impl Client {
    /// The release of `tag`, if there is one.
    pub fn release_for_tag(&self, repo: &Repo, tag: &str) -> Result<Option<Release>, Error> {
        let what = format!("the release of tag {tag} in {repo}");
        let path = format!("/repos/{repo}/releases/tags/{}", encode_segment(tag));
        match self.api_request(&path).fetch(MAX_JSON_BYTES) {
            Ok(fetched) => parse(&fetched.body, &what, &self.scrubber()).map(Some),
            Err(HttpError::Status(s)) if s.class() == StatusClass::NotFound => Ok(None),
            Err(e) => Err(self.error(e, &what)),
        }
    }

    /// Every release of `repo`, newest first as GitHub lists them (pages
    /// of 100).
    pub fn list_releases(&self, repo: &Repo) -> Result<Vec<Release>, Error> {
        let what = format!("the releases of {repo}");
        let mut all = Vec::new();
        for page in 1..=MAX_RELEASE_PAGES {
            let request = self
                .api_request(&format!("/repos/{repo}/releases"))
                .query("per_page", "100")
                .query("page", &page.to_string());
            let answer: Vec<Release> = self.get_json(request, &what)?;
            let short = answer.len() < 100;
            // A release created or deleted between two pages shifts the
            // pages: the same release may be listed twice. Once is enough.
            for release in answer {
                if !all.iter().any(|r: &Release| r.id == release.id) {
                    all.push(release);
                }
            }
            if short {
                return Ok(all);
            }
        }
        Err(Error::failed(format!(
            "{repo} has more than {} releases: more than lockstep lists",
            MAX_RELEASE_PAGES * 100
        ))
        .hint("prune old snapshots ([release] keep)"))
    }

    /// The bytes of `asset` (at most `max_bytes`): the API's asset URL with
    /// `Accept: application/octet-stream`, whose redirect to storage is
    /// followed without the token.
    pub fn download_asset(
        &self,
        repo: &Repo,
        asset: &Asset,
        max_bytes: u64,
    ) -> Result<Vec<u8>, Error> {
        let what = format!(
            "asset {} of {repo}",
            lockstep_core::error::printable_line(&asset.name)
        );
        self.api_request(&format!("/repos/{repo}/releases/assets/{}", asset.id))
            .header("Accept", "application/octet-stream")
            .redirects(lockstep_http::Redirects::AnyOriginCredentialsFirstOnly)
            .deadline(crate::client::DOWNLOAD_TIMEOUT)
            .fetch(max_bytes)
            .map(|f| f.body)
            .map_err(|e| self.error(e, &what))
    }

    /// Where the assets of `release` (a Release of `repo`) download from,
    /// `https://HOST/OWNER/REPO/releases/download/TAG/`, derived from its
    /// `html_url` only when that is exactly the Release's page on this
    /// GitHub: https (plain http only for a GitHub on this machine), the web
    /// host of the API (github.com for api.github.com; the same host and port
    /// for GitHub Enterprise), no `user:password@`, query or fragment, and
    /// the path `/OWNER/REPO/releases/tag/TAG` of this repository and tag.
    /// Anything else is an error naming the Release: a server's URL is
    /// data, never a link lockstep publishes as it is.
    pub fn release_download_base(&self, repo: &Repo, release: &Release) -> Result<String, Error> {
        let page = release.html_url.as_deref().unwrap_or_default();
        let refuse = |why: &str| {
            Error::failed(format!(
                "GitHub's page of the Release {} is not where lockstep links downloads (html_url `{}`)",
                lockstep_core::error::printable_line(&release.tag_name),
                lockstep_core::error::printable_line(page)
            ))
            .cause(why.to_string())
            .hint("check $GITHUB_API_URL and the repository; nothing was published to the index")
        };
        let url = parse_url(page, UrlRules::CREDENTIALED).map_err(|e| refuse(&e.to_string()))?;
        let api = self.api_url();
        let same_host = if api.host_str() == Some("api.github.com") {
            url.scheme() == "https" && url.host_str() == Some("github.com") && url.port().is_none()
        } else {
            url.scheme() == api.scheme()
                && url.host_str() == api.host_str()
                && url.port_or_known_default() == api.port_or_known_default()
        };
        if !same_host {
            return Err(refuse("it is not on the web host of $GITHUB_API_URL"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(refuse("it carries a query or fragment"));
        }
        let tag = encode_segment(&release.tag_name);
        let segments: Vec<&str> = url.path().trim_end_matches('/').split('/').collect();
        let shaped = matches!(
            segments.as_slice(),
            ["", owner, name, "releases", "tag", at]
                if owner.eq_ignore_ascii_case(&repo.owner)
                    && name.eq_ignore_ascii_case(&repo.name)
                    && *at == tag
        );
        if !shaped || release.tag_name.is_empty() {
            return Err(refuse(&format!(
                "its path is not /{repo}/releases/tag/{tag}"
            )));
        }
        let origin = url.origin().ascii_serialization();
        Ok(format!(
            "{origin}/{}/{}/releases/download/{tag}/",
            segments[1], segments[2]
        ))
    }

    /// Deletes `release` (its tag stays).
    pub fn delete_release(&self, repo: &Repo, release: &Release) -> Result<(), Error> {
        let what = format!("release {} of {repo}", release.tag_name);
        let url = self.endpoint(&format!("/repos/{repo}/releases/{}", release.id));
        self.authorised(self.http().request("DELETE", &url))
            .call()
            .map(drop)
            .map_err(|e| self.error(e, &what))
    }

    /// Creates a release (`POST /repos/{o}/{r}/releases`).
    pub fn create_release(&self, repo: &Repo, new: &NewRelease) -> Result<Release, Error> {
        let what = format!("a release for tag {} in {repo}", new.tag_name);
        self.post_json(&format!("/repos/{repo}/releases"), new, &what)
    }

    /// Uploads `bytes` as the asset `name` of `release`.
    pub fn upload_asset(
        &self,
        release: &Release,
        name: &str,
        content_type: &str,
        bytes: &[u8],
    ) -> Result<AssetUpload, Error> {
        let what = format!("asset {name}");
        let mut url = self.upload_target(&release.upload_url)?;
        url.query_pairs_mut().append_pair("name", name);
        match self
            .authorised(self.http().post(&url))
            .deadline(crate::client::DOWNLOAD_TIMEOUT)
            .send(content_type, bytes)
        {
            Ok(_) => Ok(AssetUpload::Sent),
            Err(HttpError::Status(s))
                if s.class() == StatusClass::Unprocessable
                    && s.has_error_code("already_exists") =>
            {
                Ok(AssetUpload::AlreadyThere)
            }
            Err(e) => Err(self.error(e, &what)),
        }
    }

    /// The upload URL without its `{?name,label}` template, checked: the
    /// token goes only to the API's own host or, for api.github.com,
    /// uploads.github.com.
    fn upload_target(&self, template: &str) -> Result<Url, Error> {
        let bare = template.split('{').next().unwrap_or_default();
        let url = parse_url(bare, UrlRules::CREDENTIALED).map_err(|why| {
            Error::failed(
                "GitHub's upload_url for the release is not a URL lockstep sends the token to",
            )
            .cause(why.to_string())
        })?;
        let api = self.api_url();
        let host = url.host_str().unwrap_or_default();
        let github_uploads = api.host_str() == Some("api.github.com")
            && url.scheme() == "https"
            && host == "uploads.github.com"
            && url.port().is_none();
        let trusted = lockstep_http::same_origin(&url, api) || github_uploads;
        if !trusted {
            return Err(Error::failed(format!(
                "GitHub's upload_url names the host `{}`, not the API's: the token is not sent there",
                lockstep_core::error::printable_line(host)
            )));
        }
        Ok(url)
    }
}

/// A tag as one URL path segment (`/` and everything unusual escaped).
pub fn encode_segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_become_one_path_segment() {
        assert_eq!(encode_segment("demo-1.0rc1"), "demo-1.0rc1");
        assert_eq!(encode_segment("a/b c"), "a%2Fb%20c");
    }

    #[test]
    fn upload_urls_go_only_to_trusted_hosts() {
        let github = Client::new("https://api.github.com", None).expect("client");
        let ok = github
            .upload_target("https://uploads.github.com/repos/o/r/releases/1/assets{?name,label}")
            .expect("uploads host");
        assert_eq!(ok.path(), "/repos/o/r/releases/1/assets");
        assert!(github
            .upload_target("https://evil.example/assets{?name,label}")
            .is_err());
        let local = Client::new("http://127.0.0.1:9", None).expect("client");
        assert!(local
            .upload_target("http://127.0.0.1:9/uploads/1/assets{?name}")
            .is_ok());
        assert!(local.upload_target("http://uploads.github.com/x").is_err());
    }
}
