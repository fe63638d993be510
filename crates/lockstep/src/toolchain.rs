//! `lockstep toolchain ...`: dispatch and printing (lockstep-iree resolves
//! and provisions).

use lockstep_core::config::Loaded;
use lockstep_core::Error;
use lockstep_iree::toolchain::{self, InstallRequest, Toolchain};
use lockstep_report::Reporters;

use crate::cli;

pub fn run(cmd: cli::Toolchain, loaded: &Loaded, rep: &Reporters) -> Result<i32, Error> {
    let out = rep.out();
    match cmd {
        cli::Toolchain::Install {
            iree,
            json,
            manifest,
            wheels,
        } => {
            let request = InstallRequest {
                iree,
                manifest,
                wheels,
            };
            let installed =
                toolchain::install_requested(&request, &loaded.section()?, &loaded.root, rep)?;
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

/// The IREE tools a command uses (lockstep-iree's precedence).
pub fn resolve(
    flag: Option<&std::path::Path>,
    loaded: &Loaded,
    rep: &Reporters,
) -> Result<Toolchain, Error> {
    toolchain::for_command(flag, &loaded.section()?, &loaded.root, rep)
}
