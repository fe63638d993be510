//! Command-line definitions. Every flag is documented where it is defined.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Release engineering for compiler projects that track a fast-moving upstream.
#[derive(Debug, Parser)]
#[command(name = "lockstep", version, about)]
pub struct Cli {
    /// Path of lockstep.toml (default: found by walking up from the current directory).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// More log output on stderr (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Step an upstream pin (a git submodule with carried patches) forward.
    #[command(subcommand)]
    Integrate(Integrate),
    /// Build a sandbox and run the main jobs on it, end to end.
    Demo(DemoArgs),
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Build the sandbox here instead of a temporary directory (kept afterwards).
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
        /// Print the outcome as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the pin, carried patches, pending affecting commits and any halt.
    Status {
        /// Print a JSON object instead of text (fields documented in docs/integrate.md).
        #[arg(long)]
        json: bool,
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
        /// Print the outcome as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Smoke-test and advance until upstream head or a halt (exit 3 at a halt).
    Loop {
        /// `gallop` (search, logarithmic smokes) or `each` (one smoke per affecting commit).
        #[arg(long)]
        strategy: Option<lockstep_core::config::Strategy>,
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
        /// Print the outcome as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Publish the pinned patched head (splice commits, fast-forward only, never forced).
    Export {
        /// Print the outcome as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show the halt report (exit 1 when there is no halt); --post sends it.
    Report {
        /// Send it to the webhook configured in [integrate.notify].
        #[arg(long)]
        post: bool,
        /// Print the halt as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Find the first bad commit with CMD (git bisect run exit codes), patches replayed.
    Bisect {
        #[arg(long, value_name = "REV")]
        good: String,
        #[arg(long, value_name = "REV")]
        bad: String,
        /// Bisect the superproject's integrate branch (submodule updated at each step).
        #[arg(long)]
        superproject: bool,
        /// Seconds before a step counts as bad (default: none).
        #[arg(long, value_name = "SECS")]
        timeout: Option<u64>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
        /// The command, after `--`.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Undo the last unfinished step (or, with --all, return to before `start`).
    Abort {
        #[arg(long)]
        all: bool,
        /// Print what was undone as JSON.
        #[arg(long)]
        json: bool,
    },
}
