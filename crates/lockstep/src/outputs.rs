//! The one output specification of a command line, derived from clap's own
//! definitions: the command's name (`integrate loop`), every output flag
//! given (those under the [`OUTPUT`] heading, plus the global `--events`)
//! and every input file named (those under [`INPUT`], plus `--config`).
//! From it come the rules every command obeys the same way: at most one
//! output on standard output, `--events -` beside a `--json` is a usage
//! error naming both, and no output may be one of the inputs
//! (`lockstep_core::output::check_all`).

use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::ArgMatches;
use lockstep_core::output::Target;
use lockstep_core::Error;

use crate::cli::{INPUT, OUTPUT};

/// One flag of the command line that names an output or an input.
#[derive(Debug, Clone)]
pub struct Named {
    /// `--json`, `-o`, `PATH` ...
    pub flag: String,
    /// The file; `None` for a bare flag (a query's `--json`, `--wrap`),
    /// which writes standard output.
    pub path: Option<PathBuf>,
}

impl Named {
    /// Whether this output writes standard output.
    fn on_stdout(&self) -> bool {
        self.path.as_ref().is_none_or(|p| p.as_os_str() == "-")
    }

    /// How messages name it: `--json`, `--json -`.
    fn describe(&self) -> String {
        match &self.path {
            Some(p) if p.as_os_str() == "-" => format!("{} -", self.flag),
            _ => self.flag.clone(),
        }
    }
}

/// What a command line writes and reads.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The command's name in events: the subcommand path (`integrate loop`).
    pub command: String,
    pub outputs: Vec<Named>,
    pub inputs: Vec<Named>,
}

impl Spec {
    /// The specification of the parsed command line `matches` of `cli`.
    pub fn derive(cli: &clap::Command, matches: &ArgMatches) -> Spec {
        let mut spec = Spec {
            command: String::new(),
            outputs: Vec::new(),
            inputs: Vec::new(),
        };
        collect(cli, matches, &mut spec);
        let mut names = Vec::new();
        let (mut cmd, mut m) = (cli, matches);
        while let Some((name, sub)) = m.subcommand() {
            names.push(name.to_string());
            match cmd.find_subcommand(name) {
                Some(c) => cmd = c,
                None => break,
            }
            m = sub;
            collect(cmd, m, &mut spec);
        }
        spec.command = names.join(" ");
        spec
    }

    /// Whether the bare output `flag` (a query's `--json`) was given.
    pub fn has(&self, flag: &str) -> bool {
        self.outputs.iter().any(|o| o.flag == flag)
    }

    /// Where the output `flag` goes, when it was given with a file.
    pub fn target(&self, flag: &str) -> Option<Target> {
        self.outputs
            .iter()
            .find(|o| o.flag == flag)
            .and_then(|o| o.path.as_deref())
            .map(Target::parse)
    }

    /// The files the command line writes (every output given with a path
    /// other than `-`), absolute against `cwd`.
    pub fn output_files(&self, cwd: &Path) -> Vec<PathBuf> {
        self.outputs
            .iter()
            .filter_map(|o| o.path.as_deref())
            .filter(|p| p.as_os_str() != "-")
            .map(|p| cwd.join(p))
            .collect()
    }

    /// The outputs that write standard output, as messages name them.
    pub fn on_stdout(&self) -> Vec<String> {
        self.outputs
            .iter()
            .filter(|o| o.on_stdout())
            .map(Named::describe)
            .collect()
    }

    /// Checks the rules before anything runs: every output writable and
    /// none of the inputs (`also_read`: files the command reads that no
    /// flag names, such as the lockstep.toml in use), at most one output
    /// on standard output.
    pub fn check(&self, also_read: &[(&str, &Path)]) -> Result<(), Error> {
        let stdout = self.on_stdout();
        if let [first, second, ..] = stdout.as_slice() {
            // `--events -` comes first: name it, as docs/output.md promises.
            return Err(lockstep_report::stdout_conflict(first, second));
        }
        let outputs: Vec<(&str, &Path)> = self
            .outputs
            .iter()
            .filter_map(|o| o.path.as_deref().map(|p| (o.flag.as_str(), p)))
            .collect();
        let mut inputs: Vec<(&str, &Path)> = self
            .inputs
            .iter()
            .filter_map(|i| i.path.as_deref().map(|p| (i.flag.as_str(), p)))
            .collect();
        inputs.extend_from_slice(also_read);
        lockstep_core::output::check_all(&outputs, &inputs).map(drop)
    }
}

/// Adds the outputs and inputs `matches` gives among `cmd`'s own arguments.
fn collect(cmd: &clap::Command, matches: &ArgMatches, spec: &mut Spec) {
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        let kind = match arg.get_help_heading() {
            Some(OUTPUT) => &mut spec.outputs,
            Some(INPUT) => &mut spec.inputs,
            _ if id == "events" => &mut spec.outputs,
            _ if id == "config" => &mut spec.inputs,
            _ => continue,
        };
        if matches.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        // A global given after the subcommand shows in the parent's matches
        // too: count it once.
        let flag = flag_name(arg);
        if kind.iter().any(|n| n.flag == flag) && arg.is_global_set() {
            continue;
        }
        if !arg.get_action().takes_values() {
            kind.push(Named { flag, path: None });
            continue;
        }
        for raw in matches.get_raw(id).into_iter().flatten() {
            kind.push(Named {
                flag: flag.clone(),
                path: Some(PathBuf::from(raw)),
            });
        }
    }
}

/// `-o` (a short name wins: it is what people type), `--json`, or the
/// positional's value name (`PATH`).
fn flag_name(arg: &clap::Arg) -> String {
    if let Some(short) = arg.get_short() {
        return format!("-{short}");
    }
    if let Some(long) = arg.get_long() {
        return format!("--{long}");
    }
    arg.get_value_names()
        .and_then(|names| names.first())
        .map(|n| n.to_string())
        .unwrap_or_else(|| arg.get_id().to_string())
}
