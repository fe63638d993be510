//! Command-line definitions. Every flag is documented where it is defined.
//!
//! Which outputs a command has is said here once, by heading: every flag
//! under [`OUTPUT`] is an output (a bare flag such as a query's `--json`
//! writes standard output; a FILE may be `-`), every flag under [`INPUT`]
//! names a file the command reads. [`crate::outputs`] derives each command
//! line's output specification from these headings, so no table has to
//! agree with them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// The help heading of output flags.
pub const OUTPUT: &str = "Output";
/// The help heading of flags naming files a command reads.
pub const INPUT: &str = "Input";
/// The help heading of the options every command takes.
const GLOBAL: &str = "Global options";

/// Release engineering for compiler projects that track a fast-moving upstream.
#[derive(Debug, Parser)]
#[command(
    name = "lockstep",
    version,
    about = "Release engineering for compiler projects that track a fast-moving upstream"
)]
pub struct Cli {
    /// Path of lockstep.toml (default: found by walking up from the current directory).
    #[arg(long, global = true, value_name = "PATH", help_heading = GLOBAL)]
    pub config: Option<PathBuf>,

    /// More log output on stderr (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, help_heading = GLOBAL)]
    pub verbose: u8,

    /// No progress on stderr: only warnings, errors and results.
    #[arg(short, long, global = true, help_heading = GLOBAL)]
    pub quiet: bool,

    /// Stream every event as JSON Lines to FILE (`-`: stdout; human output then goes to stderr).
    #[arg(long, global = true, value_name = "FILE", help_heading = GLOBAL)]
    pub events: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

/// A query's `--json`: its result as a JSON document on stdout instead of
/// its human form (docs/output.md, docs/schemas).
#[derive(Debug, Args)]
pub struct Json {
    /// Print the result as a JSON document on stdout instead of text (docs/output.md).
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a first lockstep.toml from what the repository holds: the upstream pin, Python packages, test suites (docs/getting-started.md).
    Init(InitArgs),
    /// Step an upstream pin (a submodule with carried patches, a pin file, a pin inside a file) forward (docs/integrate.md).
    #[command(subcommand)]
    Integrate(Integrate),
    /// Build a sandbox and run the main jobs on it, end to end (README.md).
    Demo(DemoArgs),
    /// Provision the IREE toolchain (iree-base-compiler and iree-base-runtime from PyPI; docs/test.md).
    #[command(subcommand)]
    Toolchain(Toolchain),
    /// Compile and run regression tests with the real IREE tools (docs/test.md).
    Test(TestArgs),
    /// Manage lockstep's content-addressed caches (docs/cache.md).
    #[command(subcommand)]
    Cache(Cache),
    /// Run every hal.executable through tools and pass pipelines: bounded, cached, checked (docs/preprocess.md).
    Preprocess(PreprocessArgs),
    /// Compile and time MIOpenDriver-style kernels on a device: the CPU by default, GPUs by configuration (BOO's driver; docs/bench.md).
    #[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
    Bench(BenchArgs),
    /// Build Python packages once, install exactly those wheels, fetch and bisect them (docs/pkg.md).
    #[command(subcommand)]
    Pkg(Pkg),
    /// Generate and explain the pipeline's GitHub Actions workflows: package CI, release, integrate (docs/ci.md).
    #[command(subcommand)]
    Ci(Ci),
    /// Bump pins, cut versions and race-safe tags, publish to a static pip index, serve, promote, prune, yank (docs/release.md).
    #[command(subcommand)]
    Release(Release),
    /// Keep and read the results history: one JSON file per test, bench or integrate loop run (docs/history.md).
    #[command(subcommand)]
    History(History),
    /// Reports made from the results history: a static site of tests, benchmarks, integrates and releases (docs/report.md).
    #[command(subcommand)]
    Report(Report),
    /// List every tool lockstep would use (uv, Pythons, git, cmake, ninja, sccache, auditwheel, IREE), where each lives and its version, and the size of each directory lockstep writes; installs nothing (docs/pkg.md).
    Doctor {
        #[command(flatten)]
        json: Json,
    },
}

/// `lockstep init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The directory lockstep.toml goes in, inside a git repository (default: the current directory).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print the file on stdout and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The upstream pin to use when several are found: its path (a submodule, a pin file, or a file with the pin inside).
    #[arg(long, value_name = "PATH")]
    pub pin: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Report {
    /// Write a static site (HTML and SVG, no network) of the history: overview, tests, bench trends, integrates, releases.
    Site {
        /// The history directory (default: [history] dir).
        #[arg(long, value_name = "DIR", help_heading = INPUT)]
        history: Option<PathBuf>,
        /// The site's directory: created, or a previous site replaced whole (anything else is refused).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// A release store ([release] index) whose releases the site lists (default: [release] index when it exists).
        #[arg(long, value_name = "DIR", help_heading = INPUT)]
        releases: Option<PathBuf>,
        /// Where the release index is served (e.g. https://OWNER.github.io/REPO): the releases page links each file and project under this URL (default: names without links).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
    },
}

/// `--record DIR` / `--no-record` of the runners that record their runs
/// in the results history (`test`, `bench`, `integrate loop`).
#[derive(Debug, Args)]
pub struct Record {
    /// Also record this run in the results history DIR (created if missing; default [history] dir; docs/history.md).
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Do not record this run, even when lockstep.toml sets [history] dir.
    #[arg(long, conflicts_with = "record")]
    pub no_record: bool,
}

#[derive(Debug, Subcommand)]
pub enum History {
    /// Turn the --json results of earlier test, bench and integrate loop runs into history runs (a file already imported is left alone).
    Import {
        /// test-results.json, bench-results.json or integrate-loop.json files.
        #[arg(value_name = "RESULTS.json", required = true, help_heading = INPUT)]
        files: Vec<PathBuf>,
        /// The history directory (created if missing).
        #[arg(long, value_name = "DIR")]
        to: PathBuf,
        /// The commit the runs were made from (default: none recorded).
        #[arg(long, value_name = "SHA")]
        commit: Option<String>,
        /// The toolchain identity the runs used (default: a test result's own compiler identity).
        #[arg(long, value_name = "ID")]
        toolchain: Option<String>,
    },
    /// One line per run of the history, oldest first; files that are not runs are named and skipped.
    List {
        /// The history directory (default: [history] dir).
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
        #[command(flatten)]
        json: Json,
    },
}

#[derive(Debug, Subcommand)]
pub enum Pkg {
    /// Build every (package, python, variant) cell from the committed tree and write the wheelhouse with its PEP 751 manifest.
    Build(PkgBuildArgs),
    /// Create a venv holding exactly a manifest's wheels (offline, hashes checked).
    Venv(PkgVenvArgs),
    /// Write DIR/pylock.toml for the wheels in DIR (one version per package; e.g. wheels from `pip download`).
    Manifest {
        /// The directory of wheels.
        dir: PathBuf,
    },
    /// Download a GitHub Actions run's wheelhouse artifact and check it against its manifest.
    Fetch(PkgFetchArgs),
    /// Find the first bad commit by testing each commit's packages (git bisect run exit codes).
    Bisect(PkgBisectArgs),
}

#[derive(Debug, Args)]
pub struct PkgBuildArgs {
    /// Build for this interpreter (repeatable; default: [pkg] python).
    #[arg(long = "python", value_name = "VERSION")]
    pub pythons: Vec<String>,
    /// Build this variant (repeatable; default: every variant of the packages).
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Build only this package (repeatable; the manifest says the set is partial).
    #[arg(long = "package", value_name = "NAME")]
    pub packages: Vec<String>,
    /// The wheelhouse (default: [pkg] out, else wheelhouse/; created with its parents).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Stamp this version into every package (overrides [pkg.version] scheme).
    #[arg(long, value_name = "VERSION")]
    pub version: Option<String>,
    /// Cells built at once (default: [pkg] jobs, else every core).
    #[arg(short, long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Build this commit instead of HEAD.
    #[arg(long, value_name = "REV", default_value = "HEAD")]
    pub rev: String,
    #[command(flatten)]
    pub json: Json,
}

#[derive(Debug, Args)]
pub struct PkgVenvArgs {
    /// The venv to create (replaced only if lockstep made it).
    pub dir: PathBuf,
    /// The manifest (pylock.toml) whose wheels to install.
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub manifest: PathBuf,
    /// Use the variant's manifest beside FILE (pylock.<variant>.toml).
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// The interpreter (default: uv's default Python).
    #[arg(long, value_name = "VERSION")]
    pub python: Option<String>,
    /// Also install what the set's wheels require and the set lacks (numpy ...) from this index, recorded in the venv's record; the set's own packages still come only from the manifest.
    #[arg(long, value_name = "URL", help_heading = INPUT)]
    pub dependency_index: Option<String>,
    #[command(flatten)]
    pub json: Json,
}

#[derive(Debug, Args)]
pub struct PkgFetchArgs {
    /// The workflow run whose artifact to download.
    #[arg(
        long,
        value_name = "ID",
        conflicts_with = "latest_green",
        required_unless_present = "latest_green"
    )]
    pub run: Option<u64>,
    /// Instead of --run: the newest successful run on BRANCH.
    #[arg(long, value_name = "BRANCH")]
    pub latest_green: Option<String>,
    /// The repository (default: $GITHUB_REPOSITORY, else the origin remote).
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// The artifact's name (default: the only artifact whose name starts with `wheels-`).
    #[arg(long, value_name = "ARTIFACT")]
    pub name: Option<String>,
    /// Where to extract it (must not exist; default: wheelhouse/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Only runs of this workflow file (with --latest-green; default lockstep-pkgci.yml).
    #[arg(long, value_name = "FILE", requires = "latest_green")]
    pub workflow: Option<String>,
    #[command(flatten)]
    pub json: Json,
}

#[derive(Debug, Args)]
pub struct PkgBisectArgs {
    /// A commit whose packages pass.
    #[arg(long, value_name = "REV")]
    pub good: String,
    /// A commit whose packages fail.
    #[arg(long, value_name = "REV")]
    pub bad: String,
    /// The variant to test (default release).
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// The interpreter (default: the first of [pkg] python).
    #[arg(long, value_name = "VERSION")]
    pub python: Option<String>,
    /// Per CMD run (default 1h).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    #[command(flatten)]
    pub json: Json,
    /// The command: exit 0 good, 125 skip, 1-127 bad, anything else stops the bisection.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Ci {
    /// Write the GitHub Actions workflows of lockstep.toml (deterministic; --check compares instead).
    Generate {
        /// Where the workflows go (default: [ci] out, else .github/workflows).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Write nothing; exit 1 (showing the diff) when the files differ from what would be generated.
        #[arg(long)]
        check: bool,
    },
    /// Show the pipeline as a graph: workflows, triggers, jobs, needs, matrix sizes, artifacts, caches, permissions.
    Explain {
        #[command(flatten)]
        json: Json,
    },
}

#[derive(Debug, Subcommand)]
pub enum Release {
    /// Move every [release] pin file to upstream's head (or --to) in one commit, when it changed.
    Bump {
        /// A full revision, or a branch or tag name upstream has.
        #[arg(long, value_name = "REV")]
        to: Option<String>,
        /// Run [integrate] smoke on the new pins first; a failing bump is not committed.
        #[arg(long)]
        smoke: bool,
        #[command(flatten)]
        json: Json,
    },
    /// Allocate the next version and push its tag (unique and increasing, even when runs race).
    Cut {
        /// snapshot (default), candidate or final (the base version itself).
        #[arg(long, value_enum, default_value = "snapshot")]
        channel: ReleaseChannel,
        /// The remote that arbitrates tags.
        #[arg(long, default_value = "origin", value_name = "NAME")]
        remote: String,
        /// The run's identity (default: $GITHUB_RUN_ID-$GITHUB_RUN_ATTEMPT, else a fresh random id).
        #[arg(long, value_name = "ID")]
        run_id: Option<String>,
        /// The release being prepared, instead of [release] version-base / version-file.
        #[arg(long, value_name = "VERSION")]
        base: Option<String>,
        /// Cut nothing (exit 0, and say so) when HEAD already has a version of this tag template: a scheduled run with no new commit.
        #[arg(long)]
        if_new_commit: bool,
        #[command(flatten)]
        json: Json,
    },
    /// Validate wheelhouses (install from a staged index in each Python, run their scripts) and add them to the release store as one version.
    Publish {
        /// What `lockstep pkg build --version V --out DIR` wrote (or a variant's manifest in it, WH/pylock.asserts.toml); one per Python and variant, all published together or none.
        #[arg(required = true, num_args = 1..)]
        wheelhouse: Vec<PathBuf>,
        /// The manifest, with one wheelhouse (default: WHEELHOUSE/pylock.toml).
        #[arg(long, value_name = "FILE", help_heading = INPUT)]
        manifest: Option<PathBuf>,
        /// The tag the version was cut as (recorded in release.json).
        #[arg(long, value_name = "TAG")]
        tag: Option<String>,
        /// Also create or complete the GitHub Release of --tag: the files and a SHA256SUMS as assets ($GITHUB_TOKEN, $GITHUB_REPOSITORY or origin, $GITHUB_API_URL).
        #[arg(long)]
        github_release: bool,
        #[command(flatten)]
        json: Json,
    },
    /// Rebuild the store's records and the index from the repository's GitHub Releases ([release] hosting = "github-releases"): after an evicted cache, nothing is lost.
    Sync {
        /// Read the Releases of --repo (else $GITHUB_REPOSITORY, else origin's) through $GITHUB_API_URL with $GITHUB_TOKEN.
        #[arg(long, required = true)]
        from_github: bool,
        /// The repository whose Releases to read.
        #[arg(long, value_name = "OWNER/NAME")]
        repo: Option<String>,
        #[command(flatten)]
        json: Json,
    },
    /// Regenerate the static index (PEP 503 HTML + PEP 691 JSON + a find-links page) from the store.
    Index {
        /// Make file links absolute under this URL (default: relative links).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
    },
    /// Serve the index directory on 127.0.0.1 (PEP 691 content negotiation).
    Serve {
        /// 0 picks a free port.
        #[arg(long, default_value_t = 0, value_name = "N")]
        port: u16,
        /// Print each request (method and path) on stderr.
        #[arg(long)]
        access_log: bool,
    },
    /// Make final wheels of VERSION (rewritten name, dist-info, METADATA, RECORD; egg-info dropped) and index them.
    Promote {
        /// The published version to promote (a snapshot or candidate, e.g. 3.14.0rc2026112501).
        version: String,
        /// The final version (default: VERSION's release segment, 3.14.0rc2026112501 -> 3.14.0).
        #[arg(long, value_name = "FINAL")]
        to: Option<String>,
        /// Also rewrite text files that still hold the old version (listed either way).
        #[arg(long)]
        rewrite_stamps: bool,
        /// Then upload the final wheels with the standard upload API (twine's; $TWINE_USERNAME/$TWINE_PASSWORD).
        #[arg(long, value_name = "URL")]
        upload: Option<String>,
        /// Tag the final ([release] final-tag, default v{version}) at the candidate's source commit and push the tag.
        #[arg(long)]
        tag: bool,
        /// Create the final's GitHub Release (not a prerelease) with its files (implies --tag; $GITHUB_TOKEN).
        #[arg(long)]
        github_release: bool,
        /// Create the release branch ([release] branch, default release/{major}.{minor}) at the candidate's commit unless it exists.
        #[arg(long)]
        release_branch: bool,
        /// Copy the final files into DIR (for a job that uploads them).
        #[arg(long, value_name = "DIR")]
        copy_to: Option<PathBuf>,
        /// The remote the tag and branch are pushed to.
        #[arg(long, default_value = "origin", value_name = "NAME")]
        remote: String,
        #[command(flatten)]
        json: Json,
    },
    /// Upload every wheel and sdist in DIR (what `promote --copy-to` wrote) to a package index: PyPI's trusted publishing on GitHub Actions, or a token.
    Upload {
        /// The directory of files.
        dir: PathBuf,
        /// The upload endpoint.
        #[arg(
            long,
            value_name = "URL",
            default_value = "https://upload.pypi.org/legacy/"
        )]
        url: String,
        /// Without credentials in the environment ($TWINE_PASSWORD, $UV_PUBLISH_TOKEN), use trusted publishing (a job with id-token: write).
        #[arg(long)]
        trusted_publishing: bool,
        #[command(flatten)]
        json: Json,
    },
    /// Remove (or yank) snapshots by [release] keep; never a final, never one a branch's manifest or pin names.
    Prune {
        /// Yank instead of deleting.
        #[arg(long)]
        yank: bool,
        /// Say what would go; change nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        json: Json,
    },
    /// Mark every file of VERSION yanked (PEP 592) and regenerate the index.
    Yank {
        /// The published version to yank.
        version: String,
        /// Why (shown by installers that skip it).
        #[arg(long, value_name = "TEXT")]
        reason: String,
    },
}

/// `release cut --channel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReleaseChannel {
    Snapshot,
    Candidate,
    Final,
}

#[derive(Debug, Subcommand)]
pub enum Toolchain {
    /// Install a pinned IREE version under $LOCKSTEP_TOOLCHAINS (idempotent).
    Install {
        /// Version of iree-base-compiler / iree-base-runtime (default: [toolchain] iree, else 3.13.0).
        #[arg(long, value_name = "VERSION")]
        iree: Option<String>,
        /// Install the IREE toolchain from the wheels of this manifest (pylock.toml) instead of PyPI.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["wheels", "iree"], help_heading = INPUT)]
        manifest: Option<PathBuf>,
        /// Install the IREE toolchain from the wheels in DIR (one version per package).
        #[arg(long, value_name = "DIR", conflicts_with = "iree", help_heading = INPUT)]
        wheels: Option<PathBuf>,
        #[command(flatten)]
        json: Json,
    },
    /// Print the directory holding every IREE tool lockstep uses (provisioning it if needed).
    Path {
        /// Use the tools in DIR instead (as every command accepts).
        #[arg(long, value_name = "DIR")]
        iree_bin: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum Cache {
    /// Show every cache area: its directory, entries and bytes, and files lockstep did not create.
    Info {
        #[command(flatten)]
        json: Json,
    },
    /// Remove cache entries of every area: the least recently used first beyond --max-size, and those unused for --older-than days.
    Prune {
        /// Keep the cache under this size (e.g. 500M, 2G).
        #[arg(long, value_name = "SIZE")]
        max_size: Option<String>,
        /// Remove entries not used for this many days.
        #[arg(long, value_name = "DAYS")]
        older_than: Option<u64>,
    },
}

#[derive(Debug, Args)]
pub struct TestArgs {
    /// Suite directories or files (default: [test] paths in lockstep.toml, else ./suites).
    #[arg(value_name = "PATH", help_heading = INPUT)]
    pub paths: Vec<PathBuf>,
    /// iree-test-suites config (JSON or JSON5); repeatable.
    #[arg(long = "suite-config", value_name = "FILE", help_heading = INPUT)]
    pub suite_configs: Vec<PathBuf>,
    /// Target to run native tests on (repeatable; default [test] default-targets, else cpu).
    #[arg(long = "target", value_name = "NAME")]
    pub targets: Vec<String>,
    /// Only tests whose markers match this expression (`and`, `or`, `not`, parentheses).
    #[arg(short = 'm', value_name = "EXPR")]
    pub markers: Option<String>,
    /// Only tests whose id (`<case> [<config or target>]`) contains this substring.
    #[arg(short = 'k', value_name = "SUBSTRING")]
    pub keyword: Option<String>,
    /// Worker processes (default: all cores).
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    pub jobs: Option<usize>,
    /// Run only shard I of N (1-based, a stable partition by test name).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// List the selected tests and exit.
    #[arg(long)]
    pub list: bool,
    /// Rerun only the tests that failed last time.
    #[arg(long)]
    pub last_failed: bool,
    /// Timeout in seconds for every compile and run (default 600 compile, 300 run).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Write a JUnit XML report (`-`: stdout).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub junit: Option<PathBuf>,
    /// Write the JSON results (`-`: stdout; docs/test.md, docs/schemas/test-results.json).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub json: Option<PathBuf>,
    /// Write a Markdown summary (`-`: stdout; also appended to $GITHUB_STEP_SUMMARY when set).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub summary: Option<PathBuf>,
    /// Compile everything again (and do not store the results in the cache).
    #[arg(long)]
    pub no_cache: bool,
    /// Treat the configs' expected-failure lists as empty.
    #[arg(long)]
    pub ignore_xfails: bool,
    /// Compile only.
    #[arg(long, visible_alias = "compile-only")]
    pub skip_all_runs: bool,
    /// Fetch again the files tests name by URL alone (torch_ops expected outputs), replacing the downloaded copies.
    #[arg(long)]
    pub refresh_downloads: bool,
    /// The wheelhouse manifest (pylock.toml) whose exact wheels [[test.pytest]] suites run against (default: the [pkg] wheelhouse's, when it exists; else the project's venv).
    #[arg(long, value_name = "FILE")]
    pub wheels: Option<PathBuf>,
    /// Rewrite the configs' expected-failure lists from this run's results.
    #[arg(long)]
    pub update_xfails: bool,
    /// Use the IREE tools in DIR (else $LOCKSTEP_IREE_BIN, [toolchain] iree-bin, the provisioned toolchain).
    #[arg(long, value_name = "DIR")]
    pub iree_bin: Option<PathBuf>,
    /// Compile only, and write a bundle to DIR (new or empty): the selected suites, their compiled modules and the compiler's identity, for `--from-bundle` on a machine with only the IREE runtime.
    #[arg(long, value_name = "DIR", conflicts_with = "from_bundle")]
    pub bundle: Option<PathBuf>,
    /// Run the tests the bundle in DIR holds (made by `--bundle`, with its selection; -k and -m narrow it): nothing is compiled; a bundle whose files do not match its bundle.json, whose modules are not under the keys its compiler gives, or for another IREE runtime, is refused.
    #[arg(long, value_name = "DIR")]
    pub from_bundle: Option<PathBuf>,
    #[command(flatten)]
    pub record: Record,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Build everything here instead of a new directory under the system's temporary directory (either is kept; the demo ends by naming it).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Integrate {
    /// Create a new integrate branch from `base` with a "Start ... integrate" commit.
    Start {
        /// Branch name (default: `[integrate] branch` with {date}, `_1`, `_2` ... if taken).
        #[arg(long)]
        branch: Option<String>,
        /// Do not fetch the superproject's base remote and upstream first.
        #[arg(long)]
        no_fetch: bool,
        #[command(flatten)]
        json: Json,
    },
    /// Show the pin, carried patches, pending affecting commits and any halt.
    Status {
        #[command(flatten)]
        json: Json,
        /// Fetch upstream first.
        #[arg(long)]
        fetch: bool,
    },
    /// Advance the pin to the next affecting commit (or --to REV) and commit it.
    Next {
        /// Advance to this upstream commit (any unambiguous abbreviation in the pending range).
        #[arg(long, value_name = "REV")]
        to: Option<String>,
        /// Do not export the patched head.
        #[arg(long)]
        no_export: bool,
        /// Print what would happen; change nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        json: Json,
    },
    /// Smoke-test and advance until upstream head or a halt (exit 3 at a halt).
    Loop {
        /// `gallop` (search, logarithmic smokes) or `each` (one smoke per affecting commit).
        #[arg(long)]
        strategy: Option<lockstep_integrate::config::Strategy>,
        /// Consider at most N pending commits in this run.
        #[arg(long, value_name = "N")]
        max_steps: Option<usize>,
        /// At upstream head, poll for new commits every SECS seconds instead of exiting.
        #[arg(long, value_name = "SECS")]
        wait: Option<u64>,
        /// Print the candidates that would be searched; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Do not export patched heads.
        #[arg(long)]
        no_export: bool,
        /// Do not fetch upstream first.
        #[arg(long)]
        no_fetch: bool,
        /// Then push the branch and open or update its draft pull request; on a halt, call for help (as `integrate publish`, plus the webhook once per halt).
        #[arg(long)]
        publish: bool,
        /// With --publish: mark the draft ready for review when the pin is at upstream's head and the pushed head's checks passed (as `integrate publish --ready`).
        #[arg(long, requires = "publish")]
        ready: bool,
        /// `halt` (default) or `revert`: carry a revert of a breaking commit when it applies and makes the smoke pass, then go on.
        #[arg(long, value_name = "WHAT")]
        on_break: Option<lockstep_integrate::search::OnBreak>,
        /// First move every [[integrate.follow]] to its branch head (one commit), so every smoke covers them.
        #[arg(long)]
        bump_followers: bool,
        #[command(flatten)]
        json: Json,
        #[command(flatten)]
        record: Record,
    },
    /// Push the integrate branch (never forced) and open or update its draft pull request ([integrate.github]).
    Publish {
        /// Mark the draft ready for review when the pin is at upstream's head, nothing is halted and the pushed head's check runs passed; else say why in its body.
        #[arg(long)]
        ready: bool,
        #[command(flatten)]
        json: Json,
    },
    /// Take up the open integrate (the newest open pull request of an [integrate] branch: its branch fetched and checked out), or start a new one when none is open.
    Continue {
        /// Only say which branch it would be; change nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        json: Json,
    },
    /// Bring in what others pushed to the integrate branch (fast-forward only), update the pin, then loop on.
    Resume {
        /// Also merge the base branch (a conflict aborts the merge: nothing changes).
        #[arg(long)]
        merge_main: bool,
        /// Only bring the branch up to date; do not run the loop.
        #[arg(long)]
        no_loop: bool,
        /// After the loop, publish (as `loop --publish`).
        #[arg(long)]
        publish: bool,
        /// `halt` (default) or `revert`, as for `loop`.
        #[arg(long, value_name = "WHAT")]
        on_break: Option<lockstep_integrate::search::OnBreak>,
        #[command(flatten)]
        json: Json,
    },
    /// Carry a revert of an upstream commit the pin includes, with a reason (dropped by itself when upstream reverts or relands it).
    Revert {
        /// The upstream commit to revert.
        #[arg(value_name = "COMMIT")]
        commit: String,
        /// Why it is carried (one line; recorded as a `Lockstep-Reason:` trailer).
        #[arg(long, value_name = "TEXT")]
        reason: String,
        /// Do not export the patched head.
        #[arg(long)]
        no_export: bool,
        #[command(flatten)]
        json: Json,
    },
    /// Mark the project as not ok for a stable release (or ok again): commits .lockstep/unstable, which `release promote` checks.
    #[command(group(clap::ArgGroup::new("mark").required(true).args(["unstable", "stable"])))]
    Mark {
        /// Add this reason (one line) to the mark.
        #[arg(long, value_name = "REASON")]
        unstable: Option<String>,
        /// Remove the mark.
        #[arg(long)]
        stable: bool,
        #[command(flatten)]
        json: Json,
    },
    /// Publish the pinned patched head (splice commits, fast-forward only, never forced).
    Export {
        #[command(flatten)]
        json: Json,
    },
    /// Show the halt report (exit 1 when there is no halt); --post sends it.
    Report {
        /// Send it to the webhook configured in [integrate.notify].
        #[arg(long)]
        post: bool,
        #[command(flatten)]
        json: Json,
    },
    /// Find the first bad commit with CMD (git bisect run exit codes), patches replayed.
    Bisect {
        /// A commit where CMD passes.
        #[arg(long, value_name = "REV", required_unless_present_any = ["test", "check"])]
        good: Option<String>,
        /// A commit where CMD fails.
        #[arg(long, value_name = "REV", required_unless_present_any = ["test", "check"])]
        bad: Option<String>,
        /// Find the advance of this integrate that broke this test, which a final check reports failing (its `lockstep test` run for that test alone at each advance).
        #[arg(long, value_name = "ID", conflicts_with_all = ["good", "bad", "ci", "check", "superproject"])]
        test: Option<String>,
        /// Find the advance of this integrate that broke this final check (its number, 1-based, or its command).
        #[arg(long, value_name = "N", conflicts_with_all = ["good", "bad", "ci", "superproject"])]
        check: Option<String>,
        /// Bisect the superproject's integrate branch (submodule updated at each step).
        #[arg(long)]
        superproject: bool,
        /// Seconds before a step counts as bad (default: none).
        #[arg(long, value_name = "SECS")]
        timeout: Option<u64>,
        /// Use CI as the oracle: push each step as a lockstep-bisect/* branch and read its check runs ([integrate.github]); no CMD.
        #[arg(long, conflicts_with = "timeout")]
        ci: bool,
        /// With --ci: the longest wait for one step's checks, in seconds (default 10800).
        #[arg(long, value_name = "SECS", requires = "ci")]
        ci_timeout: Option<u64>,
        /// With --ci: seconds between the first polls of the checks (then x1.5, at most 300; default 30).
        #[arg(long, value_name = "SECS", requires = "ci")]
        ci_poll: Option<f64>,
        #[command(flatten)]
        json: Json,
        /// The command, after `--`.
        #[arg(
            last = true,
            required_unless_present_any = ["ci", "test", "check"],
            conflicts_with_all = ["ci", "test", "check"],
            value_name = "CMD"
        )]
        command: Vec<String>,
    },
    /// Undo the last unfinished step (or, with --all, return to before `start`).
    Abort {
        /// Undo everything back to before `integrate start`.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        json: Json,
    },
    /// Move a damaged state database aside (kept) and rebuild the integrate record from git.
    Repair {
        /// Move the database aside even when it is readable.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        json: Json,
    },
}

#[derive(Debug, Args)]
pub struct PreprocessArgs {
    /// A module at the executable-sources phase, or a source program (compiled to that phase first).
    #[arg(value_name = "INPUT", required_unless_present = "wrap", help_heading = INPUT)]
    pub input: Option<PathBuf>,
    /// Where to write the preprocessed module (`-` for stdout).
    #[arg(
        short = 'o',
        long,
        value_name = "OUTPUT",
        required_unless_present = "wrap",
        help_heading = OUTPUT
    )]
    pub output: Option<PathBuf>,
    /// A tool (`"tool args"`, run as an argv) or a pass pipeline (`builtin.module(...)`); repeatable, run in order.
    #[arg(long = "with", value_name = "CMD")]
    pub with: Vec<String>,
    /// Run the --with tool commands with `sh -c` (pipes, redirections).
    #[arg(long)]
    pub with_shell: bool,
    /// At most N tool processes at once, machine-wide (default: all cores).
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    pub jobs: Option<usize>,
    /// Run every tool again (and do not store results in the cache).
    #[arg(long)]
    pub no_cache: bool,
    /// Only executables whose symbol matches this regular expression get the commands.
    #[arg(long, value_name = "REGEX")]
    pub only: Option<String>,
    /// Only variants whose target (`#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {... triple ...}>`, aliases resolved) matches get the commands; the others are kept byte for byte.
    #[arg(long, value_name = "REGEX")]
    pub only_target: Option<String>,
    /// A file the tools read (a C source, a table; a glob is allowed; repeatable): its contents join the cache key.
    #[arg(long = "with-input", value_name = "PATH")]
    pub with_inputs: Vec<String>,
    /// Run a pass pipeline with one iree-opt per executable instead of one over all of them.
    #[arg(long)]
    pub no_batch: bool,
    /// Kill a tool process that runs longer than SECS seconds (fractions allowed).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Keep every executable's inputs and outputs in DIR.
    #[arg(long, value_name = "DIR")]
    pub keep_temps: Option<PathBuf>,
    /// Continue with iree-compile --compile-from=executable-sources to this vmfb.
    #[arg(long, value_name = "OUT.vmfb", help_heading = OUTPUT)]
    pub compile: Option<PathBuf>,
    /// Wrapper form for --iree-hal-preprocess-executables-with=: one executable on stdin through `-- CMD ARGS...`.
    #[arg(long, help_heading = OUTPUT)]
    pub wrap: bool,
    /// Write the results as JSON (`-`: stdout; docs/preprocess.md, docs/schemas/preprocess-results.json).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub json: Option<PathBuf>,
    /// Use the IREE tools in DIR (else $LOCKSTEP_IREE_BIN, [toolchain] iree-bin, the provisioned toolchain).
    #[arg(long, value_name = "DIR")]
    pub iree_bin: Option<PathBuf>,
    /// After `--`: iree-compile flags (direct form) or the tool's argv (--wrap).
    #[arg(last = true, value_name = "ARGS")]
    pub rest: Vec<String>,
}

/// `lockstep bench compare ...`: what bench does besides timing kernels.
#[derive(Debug, Subcommand)]
pub enum BenchAction {
    /// Which kernels got slower between two runs: ratio of medians, bootstrap interval, Mann-Whitney p; exit 1 on a regression.
    Compare(BenchCompareArgs),
    /// The first commit whose packages made a kernel slower: each commit built (wheel cache), installed in a venv, its IREE tools timing the kernels, measured again until the statistics decide.
    Bisect(Box<BenchBisectArgs>),
}

#[derive(Debug, Args)]
pub struct BenchBisectArgs {
    /// A commit whose kernels are fast.
    #[arg(long, value_name = "REV")]
    pub good: String,
    /// A commit whose kernels are slower (checked first: no regression, nothing to bisect).
    #[arg(long, value_name = "REV")]
    pub bad: String,
    /// Measurements of a commit before an undecided one is skipped.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub max_repeats: u32,
    /// The noise band: a change within it is never a regression (`5%` or `0.05`).
    #[arg(long, value_name = "PERCENT", default_value = "5%")]
    pub threshold: String,
    /// The package variant to build (default release).
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// The interpreter (default: the first of [pkg] python).
    #[arg(long, value_name = "VERSION")]
    pub python: Option<String>,
    /// GOOD and BAD are superproject commits of an integrate branch: BAD must be on the current branch.
    #[arg(long)]
    pub superproject: bool,
    /// One kernel per line (`#` comments), instead of KERNEL arguments.
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub commands_file: Option<PathBuf>,
    /// Device: local-task (default), local-sync, or a [bench.devices.NAME] of lockstep.toml.
    #[arg(long, value_name = "D")]
    pub device: Option<String>,
    /// Extra iree-compile flag (repeatable).
    #[arg(long = "compile-flag", value_name = "F", allow_hyphen_values = true)]
    pub compile_flags: Vec<String>,
    /// Kill a compile or timed run after SECS seconds (default [bench] timeout, else 600).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// CPU worker threads of the timed runtime (local-task).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub json: Json,
    /// MIOpenDriver command lines, one per argument (e.g. 'conv -n 1 -c 16 -H 32 -W 32 -k 16 -y 3 -x 3').
    #[arg(last = true, value_name = "KERNEL")]
    pub kernels: Vec<String>,
}

#[derive(Debug, Args)]
pub struct BenchCompareArgs {
    /// The baseline: a `bench --json` or `test --json` file (its benchmark steps), a history run file, or DIR@COMMIT / DIR@latest (every bench run of that commit in history DIR).
    #[arg(value_name = "BASE", help_heading = INPUT)]
    pub base: String,
    /// The candidate, in the same forms.
    #[arg(value_name = "NEW", help_heading = INPUT)]
    pub new: String,
    /// The noise band: a change within it is never a regression (`5%` or `0.05`).
    #[arg(long, value_name = "PERCENT", default_value = "5%")]
    pub threshold: String,
    /// Confidence of the bootstrap interval (0.5 to 0.999).
    #[arg(long, value_name = "LEVEL", default_value_t = 0.95)]
    pub confidence: f64,
    #[command(flatten)]
    pub json: Json,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub action: Option<BenchAction>,
    /// One command per line (`#` comments; a `.tsv` splits at tabs); extra MIOpen flags after `--` go on every line.
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub commands_file: Option<PathBuf>,
    /// Write the results as CSV (`-`: stdout).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub csv: Option<PathBuf>,
    /// Write the results as JSON (`-`: stdout; rows plus `compiled` and `cache_hits`, docs/schemas/bench-results.json).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub json: Option<PathBuf>,
    /// Verify every kernel against an f64 reference (as if each line had `-V 1`); a FAIL exits 1.
    #[arg(long)]
    pub verify: bool,
    /// Compile workers (default: all cores).
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    pub jobs: Option<usize>,
    /// Device: local-task (default), local-sync, cuda, hip (the GPU's chip detected), vulkan, or a [bench.devices.NAME] of lockstep.toml; one this machine lacks is skipped.
    #[arg(long, value_name = "D")]
    pub device: Option<String>,
    /// Extra iree-compile flag (repeatable).
    #[arg(long = "compile-flag", value_name = "F", allow_hyphen_values = true)]
    pub compile_flags: Vec<String>,
    /// Kill a compile or timed run after SECS seconds (default [bench] timeout, else 600).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// CPU worker threads of the timed runtime (local-task).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Fill every timed input with this value instead of the seeded inputs (verification always uses the seeded inputs).
    #[arg(long, value_name = "V", allow_hyphen_values = true)]
    pub splat_input_value: Option<String>,
    /// The most bytes one kernel's tensors may need (e.g. `8G`; default [bench] max-bytes, else half of the free memory or disk, whichever is less).
    #[arg(long, value_name = "SIZE")]
    pub max_bytes: Option<String>,
    /// Use the IREE tools in DIR (else $LOCKSTEP_IREE_BIN, [toolchain] iree-bin, the provisioned toolchain).
    #[arg(long, value_name = "DIR")]
    pub iree_bin: Option<PathBuf>,
    /// Compile every kernel (into the kernel cache) and run none: for a device this machine does not have.
    #[arg(long)]
    pub compile_only: bool,
    /// Compile only, and write a bundle to DIR (new or empty): the modules, references, input checksums and the compiler's identity, for `--from-bundle` on a machine with only the IREE runtime.
    #[arg(long, value_name = "DIR", conflicts_with = "from_bundle")]
    pub bundle: Option<PathBuf>,
    /// Run the bundle in DIR (made by `--bundle`): nothing is compiled; a bundle whose files do not match its bundle.json, made by another compiler than its keys say, or for another IREE runtime, is refused.
    #[arg(long, value_name = "DIR")]
    pub from_bundle: Option<PathBuf>,
    /// Time and verify every row again and record the new results (by default a row whose kernel, runtime, device, settings and machine are unchanged is answered from its record; compiled kernels still come from the kernel cache, which BOO_CACHE_ON=0 turns off).
    #[arg(long, conflicts_with_all = ["bundle", "from_bundle", "compile_only"])]
    pub no_cache: bool,
    #[command(flatten)]
    pub record: Record,
    /// The MIOpenDriver command (e.g. `convbfp16 -n 16 ...`); with --commands-file, extra flags for every line.
    #[arg(
        value_name = "MIOPEN COMMAND",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<String>,
}
