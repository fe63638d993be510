//! `lockstep toolchain ...`: dispatch and printing.

use std::path::Path;

use lockstep_core::config::Loaded;
use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_iree::toolchain::{self, Request, Toolchain};

use lockstep_report::Reporters;

use crate::cli;

pub fn run(cmd: cli::Toolchain, loaded: &Loaded, rep: &Reporters) -> Result<i32, Error> {
    let out = rep.out();
    match cmd {
        cli::Toolchain::Install { iree, json } => {
            let version = iree.unwrap_or_else(|| loaded.config.toolchain.iree.clone());
            let installed = toolchain::install(&version, rep)?;
            if json {
                out.line(crate::output::json_document(&installed)?);
            } else {
                let packages: Vec<String> = installed
                    .packages
                    .iter()
                    .map(|(name, version)| format!("{name} {version}"))
                    .collect();
                let dir = installed.bin.parent().unwrap_or(&installed.bin);
                out.line(format!("{} in {}", packages.join(", "), dir.display()));
                out.line(format!(
                    "iree-compile reports {}",
                    installed.compiler_stamp()
                ));
            }
            Ok(0)
        }
        cli::Toolchain::Path { iree_bin } => {
            let resolved = resolve(iree_bin.as_deref(), loaded, rep)?;
            out.line(resolved.bin.display());
            Ok(0)
        }
    }
}

/// The IREE tools a command uses: `--iree-bin` (`flag`), else
/// `$LOCKSTEP_IREE_BIN`, else `[toolchain] iree-bin` (relative to
/// lockstep.toml), else the provisioned `[toolchain] iree` version.
pub fn resolve(flag: Option<&Path>, loaded: &Loaded, sink: &dyn Sink) -> Result<Toolchain, Error> {
    let config_bin = loaded
        .config
        .toolchain
        .iree_bin
        .as_ref()
        .map(|p| loaded.root.join(p));
    toolchain::resolve(
        &Request {
            flag,
            config_bin: config_bin.as_deref(),
            version: &loaded.config.toolchain.iree,
        },
        sink,
    )
}
