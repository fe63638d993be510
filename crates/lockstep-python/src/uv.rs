//! uv, found (or installed) once and then the only way lockstep creates
//! venvs, installs into them, builds wheels and publishes them.
//!
//! Every Python step of lockstep (IREE toolchains, wheel builds, exact
//! venvs, release validation and uploads) goes through [`Uv`]: it is fast,
//! installs offline from a lock file and checks hashes. [`find_uv`] runs
//! the uv the user named (`[tools] uv`, `$LOCKSTEP_UV`), else lockstep's own
//! pinned uv under `$LOCKSTEP_TOOLCHAINS/uv/`, installing it on first use;
//! it never writes outside that directory (no `pip install --user`).
//!
//! Each method is one uv command run under the layer's policy
//! ([`crate::policy`]): `--no-config` always (a project's or the user's
//! `uv.toml` never steers an install), no index from the environment (an
//! index is used only when the caller passes one), none of lockstep's
//! secrets, a timeout per kind of operation ([`Timeouts`], overridden by
//! `$LOCKSTEP_UV_TIMEOUT`), and a log that a failure names.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::events::Sink;
use lockstep_core::Error;

use crate::environment::Venv;
use crate::policy::{self, Child, Policy, Ran};

pub use crate::policy::{tail, ENV_TIMEOUT};

/// How long each kind of uv command may take before it is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// `uv venv`, `uv python find`, `uv pip check`, `--version` probes: 5 min.
    pub quick: Duration,
    /// `uv pip install` / `sync` (an IREE toolchain is ~500 MB), pip
    /// installing uv: 30 min.
    pub install: Duration,
    /// `uv publish` of one file: 30 min.
    pub publish: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            quick: Duration::from_secs(5 * 60),
            install: Duration::from_secs(30 * 60),
            publish: Duration::from_secs(30 * 60),
        }
    }
}

impl Timeouts {
    /// The same limit for everything.
    pub fn all(limit: Duration) -> Timeouts {
        Timeouts {
            quick: limit,
            install: limit,
            publish: limit,
        }
    }

    /// `$LOCKSTEP_UV_TIMEOUT` (seconds, for everything) when set, else the defaults.
    pub fn from_env() -> Result<Timeouts, Error> {
        match std::env::var(ENV_TIMEOUT) {
            Ok(text) if !text.trim().is_empty() => match text.trim().parse::<u64>() {
                Ok(secs) if secs > 0 => Ok(Timeouts::all(Duration::from_secs(secs))),
                _ => Err(Error::usage(format!(
                    "${ENV_TIMEOUT} = `{}` is not a number of seconds",
                    lockstep_core::error::printable(&text)
                ))
                .hint(format!(
                    "set {ENV_TIMEOUT}=3600, or unset it for the defaults"
                ))),
            },
            _ => Ok(Timeouts::default()),
        }
    }
}

/// How to run uv, and the policy its children run under.
#[derive(Debug, Clone)]
pub struct Uv {
    argv: Vec<String>,
    timeouts: Timeouts,
    policy: Policy,
    logs: PathBuf,
}

/// A venv to create.
#[derive(Debug, Clone, Default)]
pub struct NewVenv<'a> {
    /// The interpreter, found by [`crate::pythons::find`] (the one search
    /// every `--python` goes through: PATH, pyenv, asdf, mise, uv's
    /// installs, `[tools] python`); `None` = uv's default.
    pub python: Option<&'a Path>,
    /// Nothing from the network (no Python download either).
    pub offline: bool,
    /// With pip in it (`--seed`), for tools that call pip themselves.
    pub seed: bool,
}

/// What to install into a venv.
#[derive(Debug, Clone, Copy)]
pub enum Install<'a> {
    /// Exactly the wheels of a PEP 751 manifest: offline, no dependency
    /// resolution, uv checks each wheel's hash.
    Manifest(&'a Path),
    /// Requirements from this index (such as a staged release index); with
    /// `dependencies`, what this index does not have comes from that one
    /// (`--index URL --default-index DEPENDENCIES`: uv takes each name from
    /// the first index that has it, so a name of the set is never taken from
    /// the dependency index), else from this index only (`--index-url`).
    Index {
        url: &'a str,
        dependencies: Option<&'a str>,
        requirements: &'a [String],
    },
    /// Pinned requirements from PyPI (`name==version`).
    Pypi(&'a [String]),
    /// A set's declared dependencies (and a test suite's requirements)
    /// from `index` alone (`None`: uv's default index, PyPI unless
    /// `UV_DEFAULT_INDEX` says otherwise), under `constraints` (the set's
    /// own packages pinned to what is installed: the index never replaces
    /// them).
    Dependencies {
        index: Option<&'a str>,
        requirements: &'a [String],
        constraints: &'a Path,
    },
}

/// A requirement a venv does not meet (`uv pip check`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Unmet {
    /// The installed package that requires it.
    pub package: String,
    /// The requirement (`packaging>=20`).
    pub requirement: String,
    /// The version installed instead, when one is.
    pub installed: Option<String>,
}

impl Unmet {
    /// `needy requires packaging>=20 (not installed)`.
    pub fn describe(&self) -> String {
        match &self.installed {
            Some(v) => format!(
                "{} requires {}, but {v} is installed",
                self.package, self.requirement
            ),
            None => format!(
                "{} requires {}, which is not installed",
                self.package, self.requirement
            ),
        }
    }
}

/// One `uv build --wheel` (or `--sdist`).
#[derive(Debug, Clone)]
pub struct Build<'a> {
    /// Build the source distribution instead of the wheel.
    pub sdist: bool,
    /// The interpreter to build for.
    pub python: &'a Path,
    /// The package's source directory.
    pub package: &'a Path,
    pub out_dir: &'a Path,
    pub cwd: &'a Path,
    /// Set for the build (a variant's `env`).
    pub env: &'a [(String, String)],
    pub timeout: Duration,
    /// Kept: the build's log.
    pub log: &'a Path,
}

/// Upload credentials (given to `uv publish` in its own variables, never
/// on its command line).
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    pub username: Option<String>,
    pub password: Option<String>,
    /// No credentials: PyPI's trusted publishing (`--trusted-publishing
    /// always`), the job's OIDC request variables handed to uv.
    pub trusted: bool,
}

impl Credentials {
    /// What a server may echo of these credentials (and of a URL's own
    /// `user:password@`): hidden from uv's log, its output and every error.
    pub fn scrubber(&self, url: &str) -> lockstep_core::scrub::Scrubber {
        let mut scrubber = lockstep_core::scrub::Scrubber::new();
        if let Some(password) = &self.password {
            let user = self.username.as_deref().unwrap_or("__token__");
            scrubber.add_basic(user, password);
        }
        scrubber.add_url_text_secrets(url);
        scrubber
    }
}

impl Uv {
    /// A uv started by these words (`["uv"]`, `["python3", "-m", "uv"]`, a
    /// path), with the default timeouts and logs under
    /// `$LOCKSTEP_HOME/logs/python`.
    pub fn new(argv: Vec<String>) -> Uv {
        Uv {
            argv,
            timeouts: Timeouts::default(),
            policy: Policy::default(),
            logs: lockstep_core::paths::home().join("logs").join("python"),
        }
    }

    /// The words that start uv (`uv`, or `python3 -m uv`).
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// The timeouts in force.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// This uv with other timeouts.
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Uv {
        self.timeouts = timeouts;
        self
    }

    /// Where the logs of its commands go.
    pub fn logs_dir(&self) -> PathBuf {
        self.logs.clone()
    }

    /// This uv writing the logs of its commands into `dir` (a command that
    /// succeeds leaves no log; one that fails leaves the log its error names).
    pub fn logs_in(mut self, dir: &Path) -> Uv {
        self.logs = dir.to_path_buf();
        self
    }

    /// The policy its children run under.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// `uv SUBCOMMAND --no-config REST...`.
    fn uv(&self, subcommand: &[&str], rest: Vec<String>) -> Vec<String> {
        let mut argv = self.argv.clone();
        argv.extend(subcommand.iter().map(|a| a.to_string()));
        argv.push("--no-config".into());
        argv.extend(rest);
        argv
    }

    fn run(
        &self,
        what: &str,
        argv: Vec<String>,
        cwd: &Path,
        timeout: Duration,
    ) -> Result<Ran, Error> {
        policy::run(
            &self.policy,
            &self.logs,
            Child {
                what: what.to_string(),
                argv,
                cwd,
                env: vec![("NO_COLOR".into(), "1".into())],
                remove: &[],
                timeout,
                log: None,
                capture_stdout: false,
                scrub: None,
            },
        )
    }

    /// Creates the venv `dir` (relocatable: it may be built in a staging
    /// directory and moved into place).
    pub fn create_venv(&self, dir: &Path, how: &NewVenv<'_>) -> Result<Venv, Error> {
        let mut rest: Vec<String> = ["--quiet", "--relocatable", "--no-project"]
            .map(String::from)
            .to_vec();
        if how.offline {
            rest.extend(["--offline", "--no-python-downloads"].map(String::from));
        }
        if how.seed {
            rest.push("--seed".into());
        }
        if let Some(python) = how.python {
            rest.extend([
                "--python".to_string(),
                python.to_string_lossy().into_owned(),
            ]);
        }
        rest.push(dir.to_string_lossy().into_owned());
        let cwd = parent_dir(dir);
        let argv = self.uv(&["venv"], rest);
        self.run("uv venv", argv, &cwd, self.timeouts.quick)?
            .require_success()
            .map_err(|e| e.context("cannot create the venv"))?;
        Ok(self.venv(dir))
    }

    /// The existing venv `dir`, whose programs run under this uv's policy.
    pub fn venv(&self, dir: &Path) -> Venv {
        Venv::new(dir, self.policy.clone(), self.logs.clone())
    }

    /// `uv pip install` into `venv`.
    pub fn install(&self, venv: &Venv, what: Install<'_>) -> Result<(), Error> {
        let mut rest: Vec<String> = vec!["--quiet".into(), "--python".into()];
        rest.push(venv.python().to_string_lossy().into_owned());
        match what {
            Install::Manifest(manifest) => {
                rest.extend(
                    [
                        "--offline",
                        "--no-deps",
                        "--preview-features",
                        "pylock",
                        "-r",
                    ]
                    .map(String::from),
                );
                rest.push(manifest.to_string_lossy().into_owned());
            }
            Install::Index {
                url,
                dependencies,
                requirements,
            } => {
                match dependencies {
                    Some(deps) => rest.extend([
                        "--index".to_string(),
                        url.to_string(),
                        "--default-index".to_string(),
                        deps.to_string(),
                    ]),
                    None => rest.extend(["--index-url".to_string(), url.to_string()]),
                }
                rest.extend(requirements.iter().cloned());
            }
            Install::Pypi(requirements) => rest.extend(requirements.iter().cloned()),
            Install::Dependencies {
                index,
                requirements,
                constraints,
            } => {
                if let Some(index) = index {
                    rest.extend(["--index-url".to_string(), index.to_string()]);
                }
                rest.extend([
                    "--constraint".to_string(),
                    constraints.to_string_lossy().into_owned(),
                ]);
                rest.extend(requirements.iter().cloned());
            }
        }
        let argv = self.uv(&["pip", "install"], rest);
        self.run(
            "uv pip install",
            argv,
            &parent_dir(venv.dir()),
            self.timeouts.install,
        )?
        .require_success()
        .map(drop)
    }

    /// `uv pip sync --offline MANIFEST`: `venv` holds exactly the manifest's
    /// wheels afterwards.
    pub fn sync(&self, venv: &Venv, manifest: &Path) -> Result<(), Error> {
        let mut rest: Vec<String> = [
            "--quiet",
            "--offline",
            "--preview-features",
            "pylock",
            "--python",
        ]
        .map(String::from)
        .to_vec();
        rest.push(venv.python().to_string_lossy().into_owned());
        rest.push(manifest.to_string_lossy().into_owned());
        let argv = self.uv(&["pip", "sync"], rest);
        self.run(
            "uv pip sync",
            argv,
            &parent_dir(venv.dir()),
            self.timeouts.install,
        )?
        .require_success()
        .map(drop)
    }

    /// `uv pip check`: every requirement (environment markers evaluated for
    /// the venv's Python) an installed package declares and the venv does
    /// not meet; empty when it imports.
    pub fn check(&self, venv: &Venv) -> Result<Vec<Unmet>, Error> {
        let mut rest: Vec<String> = vec!["--offline".into(), "--python".into()];
        rest.push(venv.python().to_string_lossy().into_owned());
        let argv = self.uv(&["pip", "check"], rest);
        let ran = self.run(
            "uv pip check",
            argv,
            &parent_dir(venv.dir()),
            self.timeouts.quick,
        )?;
        if ran.success() {
            return Ok(Vec::new());
        }
        let unmet = parse_check(&ran.output());
        if unmet.is_empty() {
            return Err(ran
                .require_success()
                .err()
                .unwrap_or_else(|| Error::failed("uv pip check failed")));
        }
        let _ = std::fs::remove_file(&ran.log);
        Ok(unmet)
    }

    /// The interpreter of Python `version` (`3.11`) installed on this
    /// machine (`uv python find`, never a download); the error carries uv's words.
    pub fn find_python(&self, version: &str, cwd: &Path) -> Result<PathBuf, Error> {
        let rest: Vec<String> = ["--no-python-downloads", "--system", version]
            .map(String::from)
            .to_vec();
        let argv = self.uv(&["python", "find"], rest);
        let ran = policy::run(
            &self.policy,
            &self.logs,
            Child {
                what: "uv python find".into(),
                argv,
                cwd,
                env: vec![("NO_COLOR".into(), "1".into())],
                remove: &[],
                timeout: self.timeouts.quick,
                log: None,
                capture_stdout: true,
                scrub: None,
            },
        )?;
        let path = ran.stdout().trim().to_string();
        let ran = ran.require_success()?;
        if path.is_empty() {
            return Err(Error::failed("uv python find printed no interpreter")
                .cause(format!("log: {}", ran.log.display())));
        }
        Ok(PathBuf::from(path))
    }

    /// `uv build --wheel` of one package for one interpreter (isolated
    /// build). Its build requirements come from uv's cache when it holds
    /// them (`--offline`: a rebuild asks no index, about half a second per
    /// cell), else from the index: a first try that fails because a
    /// requirement is not cached is run again online. How it ended is the
    /// caller's to judge; the log is kept.
    pub fn build(&self, build: &Build<'_>) -> Result<Ran, Error> {
        let ran = self.build_once(build, true)?;
        if ran.success() || !ran.output().contains("the network was disabled") {
            return Ok(ran);
        }
        tracing::debug!("build requirements not all cached: building online");
        self.build_once(build, false)
    }

    fn build_once(&self, build: &Build<'_>, offline: bool) -> Result<Ran, Error> {
        let kind = if build.sdist { "--sdist" } else { "--wheel" };
        let mut rest: Vec<String> = [kind, "--no-python-downloads", "--python"]
            .map(String::from)
            .to_vec();
        if offline {
            rest.insert(0, "--offline".into());
        }
        rest.push(build.python.to_string_lossy().into_owned());
        rest.push("--out-dir".into());
        rest.push(build.out_dir.to_string_lossy().into_owned());
        rest.push(build.package.to_string_lossy().into_owned());
        let argv = self.uv(&["build"], rest);
        let mut env: Vec<(String, String)> = build.env.to_vec();
        env.push(("NO_COLOR".into(), "1".into()));
        policy::run(
            &self.policy,
            &self.logs,
            Child {
                what: "uv build".into(),
                argv,
                cwd: build.cwd,
                env,
                // The Actions runtime's token and URLs are lockstep secrets
                // (lockstep_core::process::SECRET_VARS): no build backend
                // (nor build dependency) gets them.
                remove: &[],
                timeout: build.timeout,
                log: Some(build.log),
                capture_stdout: false,
                scrub: None,
            },
        )
    }

    /// `uv publish` of `file` to the upload endpoint `url` (no trusted
    /// publishing: the credentials are the ones given; none = an anonymous
    /// upload, which uv makes as user `anonymous` without a password). A
    /// server that has the file already (409, or 400 saying "already
    /// exists", as PyPI does) is [`Uploaded::AlreadyThere`], as `twine
    /// --skip-existing`; any other refusal is an error naming the file, the
    /// server's HTTP status and its message.
    pub fn publish(
        &self,
        url: &str,
        file: &Path,
        credentials: &Credentials,
    ) -> Result<Uploaded, Error> {
        let name = lockstep_core::fs::file_name(file);
        let rest: Vec<String> = vec![
            "--no-progress".into(),
            "--trusted-publishing".into(),
            if credentials.trusted {
                "always"
            } else {
                "never"
            }
            .into(),
            "--publish-url".into(),
            url.to_string(),
            file.to_string_lossy().into_owned(),
        ];
        let argv = self.uv(&["publish"], rest);
        let mut env = vec![("NO_COLOR".to_string(), "1".to_string())];
        if credentials.trusted {
            // The one child that may ask GitHub for the job's OIDC token.
            for var in [
                "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
                "ACTIONS_ID_TOKEN_REQUEST_URL",
            ] {
                if let Ok(value) = std::env::var(var) {
                    env.push((var.to_string(), value));
                }
            }
        } else {
            let user = match (&credentials.username, &credentials.password) {
                (Some(user), _) => user.clone(),
                (None, Some(_)) => "__token__".into(),
                (None, None) => "anonymous".into(),
            };
            env.push(("UV_PUBLISH_USERNAME".into(), user));
            if let Some(password) = &credentials.password {
                env.push(("UV_PUBLISH_PASSWORD".into(), password.clone()));
            }
        }
        let scrub = credentials.scrubber(url);
        let quoted = scrub.clone();
        let ran = policy::run(
            &self.policy,
            &self.logs,
            Child {
                what: format!("uv publish {name}"),
                argv,
                cwd: &parent_dir(file),
                env,
                remove: &[],
                timeout: self.timeouts.publish,
                log: None,
                capture_stdout: false,
                scrub: Some(scrub),
            },
        )?;
        if ran.success() {
            return Ok(Uploaded::Sent);
        }
        let output = ran.output();
        let status = http_status(&output);
        let log = ran.log.clone();
        if status.is_some_and(|code| file_exists(code, &output)) {
            return Ok(Uploaded::AlreadyThere);
        }
        let err = match status {
            Some(code) => Error::failed(format!("uploading {name}: HTTP {code}"))
                .cause(server_said_scrubbed(&output, &quoted))
                .cause(format!("log: {}", log.display()))
                .hint(match code {
                    401 | 403 => "check $TWINE_USERNAME and $TWINE_PASSWORD",
                    400 | 422 => "the server refused the file itself (the message above says why: a platform tag such as linux_x86_64 that PyPI refuses, bad metadata ...)",
                    _ => "check --upload",
                }),
            None => ran
                .require_success()
                .err()
                .unwrap_or_else(|| Error::failed("uv publish failed"))
                .context(format!("uploading {name} failed"))
                .hint("check --upload, the network and the credentials ($TWINE_USERNAME, $TWINE_PASSWORD)"),
        };
        Err(err)
    }
}

/// What an upload did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uploaded {
    Sent,
    /// The server has this file already (released files are immutable).
    AlreadyThere,
}

/// Whether the server's refusal says it has the file already: 409, or a
/// 400 whose message says so (PyPI: "400 File already exists").
pub fn file_exists(status: u16, output: &str) -> bool {
    let said = output.to_lowercase();
    status == 409 || (status == 400 && said.contains("already exist"))
}

/// The directory a path sits in (its own, when it has no parent).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The HTTP status a failed upload reports (`status code 409`).
fn http_status(output: &str) -> Option<u16> {
    let lower = output.to_lowercase();
    let at = lower.find("status code ")? + "status code ".len();
    lower[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|d| d.parse().ok())
}

/// The status line of a refused upload and the first lines of what the
/// server said, HTML tags and common entities taken out.
/// [`server_said`], scrubbed again once tags and entities are gone: a
/// secret split by a tag (`FUZZ<b>-S3CRET</b>-PW`) passes the log's
/// scrubbing and reads whole after them (found by fuzzing).
fn server_said_scrubbed(output: &str, scrub: &lockstep_core::scrub::Scrubber) -> String {
    scrub.apply(&server_said(output))
}

fn server_said(output: &str) -> String {
    let mut lines = output
        .lines()
        .skip_while(|l| !l.to_lowercase().contains("status code"))
        .map(|l| {
            let mut text = String::new();
            let mut in_tag = false;
            for c in l.chars() {
                match c {
                    '<' => in_tag = true,
                    '>' => in_tag = false,
                    c if !in_tag => text.push(c),
                    _ => {}
                }
            }
            let text = text
                .replace("&#039;", "'")
                .replace("&#39;", "'")
                .replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&");
            let text = text.trim();
            let text = text.strip_prefix("cause: ").unwrap_or(text);
            text.strip_prefix("Caused by: ").unwrap_or(text).to_string()
        })
        .filter(|l| !l.is_empty() && !l.starts_with("hint:"));
    let first = lines.next().unwrap_or_default();
    let rest: Vec<String> = lines.filter(|l| l.len() > 3).take(3).collect();
    std::iter::once(first)
        .chain(rest)
        .collect::<Vec<_>>()
        .join("\n")
}

/// `uv pip check`'s findings: "The package `a` requires `b>=1`, but it's
/// not installed" / "..., but `0.9` is installed".
fn parse_check(output: &str) -> Vec<Unmet> {
    let mut found = Vec::new();
    for line in output.lines() {
        let Some(rest) = line.trim().strip_prefix("The package `") else {
            continue;
        };
        let Some((package, rest)) = rest.split_once("` requires `") else {
            continue;
        };
        let Some((requirement, rest)) = rest.split_once('`') else {
            continue;
        };
        let installed = rest
            .split_once("but `")
            .and_then(|(_, v)| v.split_once('`'))
            .map(|(v, _)| v.to_string());
        found.push(Unmet {
            package: package.to_string(),
            requirement: requirement.to_string(),
            installed,
        });
    }
    found
}

/// The uv lockstep installs for itself when the user names none.
pub const PINNED_UV: &str = "0.13.9";

/// sha256 of every Linux and macOS wheel of uv [`PINNED_UV`] on PyPI: pip
/// installs one of them or nothing (never an sdist, never another file).
const PINNED_UV_HASHES: &[&str] = &[
    "56ec37616c00220032fc7b8c9d0ef51367fd0d70d9cd6ddd841660f949f84fed",
    "c16ed11e013557536b3e60065f1b912f6407bd6518e041b961e23ef9e6b4fbf5",
    "66c512266d633bef48384a1f53003f41f2a8e7b36fe6e7fbfd3e0fd52d96fa63",
    "5435c5ce14a56431208ca0996416d310f1598e8c2c8ba707688985a16bb82dbe",
    "7ec1e1dd9b6cb335c301afdf877989df384227313981850755a59561f75e4ab8",
    "16963d19594e18d746a70c7fce82237bde4f2cac4cfcf0ca2b84796fe9d0c6e9",
    "db5c8df7145c21ffea9c0f74e38823bac3af60cbadf0e26b8633f08627b17bab",
    "c5dbdb7c8737cd183a9dce95b39cfd1f3d54ec2a27a1bb58f160293f9ba2c805",
    "a6e845f387e4ed55bb59342957a9179e24a631fcc7668bda3426ae1cef8ed4b9",
    "d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19",
    "ecb6028d79dc96fbeafffe5c8af62a7099487ebc05a701e76714eebcffd06375",
    "6d5114bba238adddacb32fb11904f2b3ff4e988f8e9ff0d8d3b5e9822cf836b8",
    "6b0c7b9f47a5d011939d61e324d3fe18a8bc155d8dd53add738709a92f290a7c",
    "a2ee66fe8b6608e1482ab1bde5799da04705c1cb40324c7f66054ecf46ae6e40",
    "2c45530751517d6c3bbc69a19473f6effe47cce047bede01ffd8af7ea7b36b25",
];

/// [`find_uv`] with the toolchains directory (`$LOCKSTEP_TOOLCHAINS`, made
/// absolute and created) as its root: what every command uses.
pub fn find_default(sink: &dyn Sink) -> Result<Uv, Error> {
    let root = lockstep_core::paths::toolchains_dir()?;
    find_uv(&root, &root, sink)
}

/// Where the uv lockstep would run lives, without installing anything
/// (`lockstep doctor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UvLocation {
    /// Named by the user (`$LOCKSTEP_UV` or `[tools] uv`: `from`).
    User { path: PathBuf, from: &'static str },
    /// lockstep's own, installed under the toolchains directory.
    Own { path: PathBuf },
    /// Not installed yet: the first command that needs it installs it here.
    Missing { path: PathBuf },
}

/// The uv lockstep would run (see [`find_uv`]), found but not installed.
pub fn locate_uv(root: &Path) -> UvLocation {
    if let Some((path, from)) = crate::settings::user_uv() {
        return UvLocation::User { path, from };
    }
    let path = own_uv(root);
    if path.is_file() {
        UvLocation::Own { path }
    } else {
        UvLocation::Missing { path }
    }
}

/// The uv every Python step runs: the one the user named (`$LOCKSTEP_UV`,
/// else `[tools] uv`), which must answer `--version`; otherwise lockstep's
/// own uv [`PINNED_UV`] under `root` (the toolchains directory), installed
/// on first use into a venv of its own there (`python3 -m venv`, then pip
/// with the wheels' hashes pinned). A uv on PATH or importable by `python3`
/// is never used implicitly, and nothing is written outside `root`.
/// The timeouts come from `$LOCKSTEP_UV_TIMEOUT` when it is set.
pub fn find_uv(root: &Path, cwd: &Path, sink: &dyn Sink) -> Result<Uv, Error> {
    let timeouts = Timeouts::from_env()?;
    let make = |argv: Vec<String>| Uv::new(argv).with_timeouts(timeouts);
    let works = |argv: &[String]| {
        let uv = make(argv.to_vec());
        let mut probe = argv.to_vec();
        probe.push("--version".into());
        // A probe that fails is an answer, not a failure to report: no log.
        match uv.run("uv --version", probe, cwd, timeouts.quick) {
            Ok(ran) if ran.success() => true,
            Ok(ran) => {
                let _ = std::fs::remove_file(&ran.log);
                false
            }
            Err(_) => false,
        }
    };
    if let Some((path, from)) = crate::settings::user_uv() {
        let argv = vec![path.to_string_lossy().into_owned()];
        if works(&argv) {
            return Ok(make(argv));
        }
        return Err(Error::usage(format!(
            "{from} names {}, which does not run as uv (`{} --version` fails)",
            path.display(),
            path.display()
        ))
        .hint("point it at a uv executable, or unset it to use lockstep's own uv"));
    }
    let own = vec![own_uv(root).to_string_lossy().into_owned()];
    if works(&own) {
        return Ok(make(own));
    }
    sink.note(format!(
        "installing lockstep's own uv {PINNED_UV} into {} (once; from PyPI with pinned hashes)",
        own_uv_dir(root).display()
    ));
    // The helper only runs python3 and pip; its policy is the layer's.
    let helper = make(vec!["python3".to_string()]);
    match install_own_uv(&helper, root, cwd) {
        Ok(()) if works(&own) => Ok(make(own)),
        Ok(()) => Err(Error::failed(format!(
            "installed uv into {}, but `{} --version` fails",
            own_uv_dir(root).display(),
            own[0]
        ))),
        Err(err) => Err(err.context(format!("cannot install lockstep's uv {PINNED_UV}"))),
    }
    .map_err(|e| {
        e.hint("lockstep installs its uv with `python3 -m venv` and pip from PyPI: check that python3 (with venv) is on PATH and PyPI is reachable, or name a uv you have with [tools] uv = \"PATH\" (or $LOCKSTEP_UV)")
    })
}

/// `root/uv/VERSION`: lockstep's own uv, one directory per pinned version.
fn own_uv_dir(root: &Path) -> PathBuf {
    root.join("uv").join(PINNED_UV)
}

fn own_uv(root: &Path) -> PathBuf {
    own_uv_dir(root).join("bin").join("uv")
}

/// `python3 -m venv` + `pip install uv==PINNED` (hashes required, wheels
/// only), built beside and moved into place (a concurrent install of
/// another IREE version may do the same).
fn install_own_uv(helper: &Uv, root: &Path, cwd: &Path) -> Result<(), Error> {
    let dest = own_uv_dir(root);
    if let Some(parent) = dest.parent() {
        fs_err::create_dir_all(parent)?;
    }
    let staged = lockstep_core::fs::StagedDir::beside(&dest)?;
    let argv = vec![
        "python3".to_string(),
        "-m".into(),
        "venv".into(),
        staged.path().to_string_lossy().into_owned(),
    ];
    helper
        .run("python3 -m venv", argv, cwd, helper.timeouts.quick)?
        .require_success()?;
    let requirements = staged.path().join("uv-requirements.txt");
    let mut text = format!("uv=={PINNED_UV}");
    for hash in PINNED_UV_HASHES {
        text.push_str(&format!(" \\\n    --hash=sha256:{hash}"));
    }
    text.push('\n');
    fs_err::write(&requirements, text)?;
    let argv: Vec<String> = vec![
        staged
            .path()
            .join("bin")
            .join("python")
            .to_string_lossy()
            .into_owned(),
        "-m".into(),
        "pip".into(),
        "install".into(),
        "--quiet".into(),
        "--disable-pip-version-check".into(),
        "--no-input".into(),
        "--no-cache-dir".into(),
        "--require-hashes".into(),
        "--only-binary".into(),
        ":all:".into(),
        "-r".into(),
        requirements.to_string_lossy().into_owned(),
    ];
    helper
        .run("pip install uv", argv, cwd, helper.timeouts.install)?
        .require_success()?;
    if staged.install_new().is_err() && !dest.join("bin").join("uv").is_file() {
        return Err(Error::failed(format!("cannot create {}", dest.display())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_secret_split_by_tags_is_scrubbed_from_what_the_server_said() {
        let mut scrub = lockstep_core::scrub::Scrubber::new();
        scrub.add_basic("alice", "fuzz-S3cret-pw");
        let output = "error: Upload failed with status code 400 Bad Request. Server says: you sent FUZZ<b>-S3CRET</b>-PW and fuzz-S3cret&#45;pw";
        let quoted = server_said_scrubbed(output, &scrub);
        assert!(
            !quoted.to_ascii_lowercase().contains("fuzz-s3cret-pw"),
            "{quoted}"
        );
    }

    #[test]
    fn only_a_file_the_server_has_counts_as_already_there() {
        assert!(file_exists(409, "Conflict"));
        assert!(file_exists(400, "error: Upload failed with status code 400 Bad Request. Server says: 400 File already exists ('a-1.whl')"));
        assert!(!file_exists(400, "Server says: 400 Binary wheel 'a-1-cp311-cp311-linux_x86_64.whl' has an unsupported platform tag 'linux_x86_64'."));
        assert!(!file_exists(403, "already exists"));
    }

    use super::*;

    #[test]
    fn pip_check_lines_parse() {
        let out = "Using Python 3.11.7 environment at: v\nChecked 2 packages in 1ms\nFound 2 incompatibilities\n\
                   The package `needy` requires `packaging>=20`, but it's not installed\n\
                   The package `a` requires `b<2`, but `2.1` is installed\n";
        assert_eq!(
            parse_check(out),
            vec![
                Unmet {
                    package: "needy".into(),
                    requirement: "packaging>=20".into(),
                    installed: None
                },
                Unmet {
                    package: "a".into(),
                    requirement: "b<2".into(),
                    installed: Some("2.1".into())
                }
            ]
        );
        assert_eq!(
            http_status("Caused by: Upload failed with status code 409 Conflict. Server says"),
            Some(409)
        );
        assert_eq!(http_status("connection refused"), None);
        let said = server_said(
            "Uploading x.whl\nerror: Failed to publish\n  cause: Server returned status code 409 Conflict. Server says:\n\
             <html>\n <pre>Package &#039;x.whl&#039; already exists!\n</pre></html>\n",
        );
        assert_eq!(
            said,
            "Server returned status code 409 Conflict. Server says:\nPackage 'x.whl' already exists!"
        );
    }

    #[test]
    fn tails_drop_prefixes_and_blank_lines() {
        assert_eq!(tail(b"a\n\nb\nc\n", 2), "b\nc");
        let uv = b"Using Python 3.11.7 environment at: venv\nerror: No solution found\n  cause: Because there is no version\n";
        assert_eq!(
            tail(uv, 15),
            "No solution found\nBecause there is no version"
        );
    }
}
