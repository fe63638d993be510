//! The GitHub REST API calls lockstep makes, and nothing else: workflow runs
//! and their artifacts ([`client`]), releases and their assets ([`releases`]), pull requests ([`pulls`]), check runs ([`checks`]), repository names ([`repo`]) and the safe
//! extraction of the zip files artifacts come in ([`extract`]).
//!
//! GitHub Actions is the engine that runs lockstep across machines; this
//! crate is how a developer's machine (or a later job) gets back what a run
//! built. The base URL comes from `$GITHUB_API_URL` like the Actions runner
//! sets it, so tests point it at a loopback server. The token is sent to the
//! API host only: the artifact download redirects to a storage host with a
//! signed URL, which lockstep-http follows without the `Authorization`
//! header, and neither the token nor the signed query string ever reaches a
//! message (lockstep-http scrubs both from whatever the servers say).

pub mod checks;
pub mod client;
pub mod extract;
pub mod pulls;
pub mod releases;
pub mod repo;

pub use client::{Artifact, Client, Run, Token};
pub use extract::{extract_zip, MAX_ENTRIES};
pub use repo::{repo_from_remote_url, Repo};
