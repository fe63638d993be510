//! The one output specification of a command line: the command's name
//! (`integrate loop`), every output flag given and every input file named
//! (the binary derives them from its clap definitions), and the rules every
//! command obeys the same way because they are checked here, before
//! anything runs: at most one output on standard output (`--events -`
//! beside a `--json` is a usage error naming both), no output may be
//! one of the inputs (`lockstep_core::output::check_all`), and none may be
//! inside a directory the command reads or writes whole, such as a bundle
//! (`lockstep_core::output::check_outside`).

use std::path::{Path, PathBuf};

use lockstep_core::output::Target;
use lockstep_core::Error;

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
#[derive(Debug, Clone, Default)]
pub struct Spec {
    /// The command's name in events: the subcommand path (`integrate loop`).
    pub command: String,
    pub outputs: Vec<Named>,
    pub inputs: Vec<Named>,
}

impl Spec {
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
            return Err(crate::stdout_conflict(first, second));
        }
        let mut inputs: Vec<(&str, &Path)> = self
            .inputs
            .iter()
            .filter_map(|i| i.path.as_deref().map(|p| (i.flag.as_str(), p)))
            .collect();
        inputs.extend_from_slice(also_read);
        self.check_read(&inputs)
    }

    /// Refuses an output that is one of `read` (files the command found
    /// it will read: suite files, sources, data).
    pub fn check_read(&self, read: &[(&str, &Path)]) -> Result<(), Error> {
        let outputs: Vec<(&str, &Path)> = self.output_files().collect();
        lockstep_core::output::check_all(&outputs, read).map(drop)
    }

    /// Refuses an output inside one of `trees` (flag, directory): the
    /// directories the command reads or writes whole, such as a bundle
    /// (`lockstep_core::output::check_outside`).
    pub fn check_trees(&self, trees: &[(&str, &Path)]) -> Result<(), Error> {
        let outputs: Vec<(&str, &Path)> = self.output_files().collect();
        lockstep_core::output::check_outside(&outputs, trees)
    }

    /// Every output that is a file (not standard output), as (flag, path).
    pub fn output_files(&self) -> impl Iterator<Item = (&str, &Path)> {
        self.outputs
            .iter()
            .filter_map(|o| o.path.as_deref().map(|p| (o.flag.as_str(), p)))
            .filter(|(_, p)| p.as_os_str() != "-")
    }
}
