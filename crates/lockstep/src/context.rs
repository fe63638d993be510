//! What every command handler gets: the reporters, the command line's output
//! specification, the configuration (loaded on first use: `demo` and
//! `preprocess --wrap` may run without one) and the one way to print a
//! result (its JSON document with `--json`, its human form otherwise).

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use lockstep_cache::Cache;
use lockstep_core::config::{Loaded, Section};
use lockstep_core::events::Sink;
use lockstep_core::output::Target;
use lockstep_core::Error;
use lockstep_iree::Toolchain;
use lockstep_reporters::spec::Spec;
use lockstep_reporters::{Out, Reporters};

pub struct Ctx<'a> {
    pub rep: &'a Reporters,
    pub spec: &'a Spec,
    pub cwd: PathBuf,
    config: Option<PathBuf>,
    loaded: OnceCell<Loaded>,
}

impl<'a> Ctx<'a> {
    pub fn new(rep: &'a Reporters, spec: &'a Spec, cwd: PathBuf, config: Option<PathBuf>) -> Self {
        Ctx {
            rep,
            spec,
            cwd,
            config,
            loaded: OnceCell::new(),
        }
    }

    /// lockstep.toml, loaded and checked on first use.
    pub fn loaded(&self) -> Result<&Loaded, Error> {
        if let Some(loaded) = self.loaded.get() {
            return Ok(loaded);
        }
        let loaded = crate::config::load(self.config.as_deref(), &self.cwd)?;
        // `[tools]` is the Python layer's, for every engine that reaches uv
        // or an interpreter: set once, here, where the file is read.
        let tools: lockstep_python::settings::ToolsConfig = loaded.section()?;
        lockstep_python::settings::configure(tools.resolved(&loaded.root));
        // The webhook variable the file names is a secret for every child
        // from here on (a table that does not parse is reported by the
        // command that reads it).
        if let Ok(integrate) = loaded.section::<lockstep_integrate::config::IntegrateConfig>() {
            lockstep_core::process::also_secret(&integrate.notify.url_env);
        }
        Ok(self.loaded.get_or_init(|| loaded))
    }

    /// Says which files the command found it will read (beyond those its
    /// flags name): an output that is one of them is refused (exit 2,
    /// nothing written, the `--events` file untouched); otherwise the event
    /// stream opens.
    pub fn inputs_read(&self, read: &[(&str, &Path)]) -> Result<(), Error> {
        self.refused(self.spec.check_read(read))?;
        self.rep.open_events()
    }

    /// `checked`, the `--events` file left untouched when it failed.
    fn refused(&self, checked: Result<(), Error>) -> Result<(), Error> {
        if checked.is_err() {
            self.rep.discard_events();
        }
        checked
    }

    /// Refuses an output inside one of `trees` (flag, directory), the
    /// directories the command reads or writes whole (a bundle): exit 2,
    /// nothing written, the `--events` file untouched.
    pub fn trees_kept(&self, trees: &[(&str, PathBuf)]) -> Result<(), Error> {
        let trees: Vec<(&str, &Path)> = trees.iter().map(|(f, d)| (*f, d.as_path())).collect();
        self.refused(self.spec.check_trees(&trees))
    }

    /// Refuses an output that is (or would be read as) a run of one of
    /// the history directories `dirs` the command reads: exit 2, nothing
    /// written, the `--events` file untouched.
    pub fn history_read(&self, dirs: &[(String, PathBuf)]) -> Result<(), Error> {
        let outputs: Vec<(&str, &Path)> = self.spec.output_files().collect();
        self.refused(lockstep_history::store::check_outputs(dirs, &outputs))
    }

    /// One table of lockstep.toml.
    pub fn section<S: Section>(&self) -> Result<S, Error> {
        self.loaded()?.section()
    }

    /// lockstep.toml's directory (relative paths in it are relative to it).
    pub fn root(&self) -> Result<&Path, Error> {
        Ok(&self.loaded()?.root)
    }

    pub fn sink(&self) -> &dyn Sink {
        self.rep
    }

    /// Where human output goes.
    pub fn out(&self) -> Out {
        self.rep.out()
    }

    /// The cache every command shares.
    pub fn cache(&self) -> Result<Cache, Error> {
        let bench: lockstep_bench::config::BenchConfig = self.section()?;
        Ok(bench.cache(self.root()?))
    }

    /// The IREE tools (lockstep-iree's precedence; `flag` is `--iree-bin`).
    pub fn toolchain(&self, flag: Option<&Path>) -> Result<Toolchain, Error> {
        lockstep_iree::toolchain::for_command(flag, &self.section()?, self.root()?, self.rep)
    }

    /// The IREE runtime tools of a command that compiles nothing
    /// (`lockstep_iree::toolchain::runtime_for_command`).
    pub fn runtime_toolchain(&self, flag: Option<&Path>) -> Result<Toolchain, Error> {
        lockstep_iree::toolchain::runtime_for_command(
            flag,
            &self.section()?,
            self.root()?,
            self.rep,
        )
    }

    /// Prints a command's result: with `--json`, `value` as the versioned
    /// JSON document on standard output; otherwise its human form.
    pub fn result<T: serde::Serialize>(
        &self,
        value: &T,
        human: impl FnOnce(Out),
    ) -> Result<(), Error> {
        if self.spec.has("--json") {
            lockstep_core::output::write_document("--json", &Target::Stdout, value)
        } else {
            human(self.out());
            Ok(())
        }
    }

    /// [`Ctx::result`] of a value whose human form is text (an engine's
    /// `human` function of it); the command's exit status is then 0.
    pub fn show<T: serde::Serialize>(
        &self,
        value: &T,
        text: impl FnOnce(&T) -> String,
    ) -> Result<i32, Error> {
        self.result(value, |out| out.print(&text(value)))?;
        Ok(0)
    }

    /// Writes `value` as the JSON document of the output `flag` (a
    /// runner's `--json FILE`), when that output was asked for.
    pub fn write_document<T: serde::Serialize>(&self, flag: &str, value: &T) -> Result<(), Error> {
        match self.spec.target(flag) {
            Some(target) => lockstep_core::output::write_document(flag, &target, value),
            None => Ok(()),
        }
    }

    /// Writes `bytes` to the output `flag` (`--csv`, `--junit` ...), when asked for.
    pub fn write_output(
        &self,
        flag: &str,
        bytes: impl FnOnce() -> Result<Vec<u8>, Error>,
    ) -> Result<(), Error> {
        match self.spec.target(flag) {
            Some(target) => lockstep_core::output::write_as(flag, &target, &bytes()?),
            None => Ok(()),
        }
    }
}
