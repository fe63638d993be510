//! `lockstep toolchain ...`: printing (lockstep-iree resolves and provisions).

use lockstep_core::Error;
use lockstep_iree::toolchain::{self, InstallRequest};

use crate::cli;
use crate::context::Ctx;

pub fn run(cmd: cli::Toolchain, ctx: &Ctx) -> Result<i32, Error> {
    match cmd {
        cli::Toolchain::Install {
            iree,
            json: _,
            manifest,
            wheels,
        } => {
            let request = InstallRequest {
                iree,
                manifest: manifest.map(|m| ctx.cwd.join(m)),
                wheels: wheels.map(|w| ctx.cwd.join(w)),
            };
            let installed =
                toolchain::install_requested(&request, &ctx.section()?, ctx.root()?, ctx.sink())?;
            ctx.result(&installed, |out| {
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
            })?;
            Ok(0)
        }
        cli::Toolchain::Path { iree_bin } => {
            let resolved = ctx.toolchain(iree_bin.as_deref())?;
            ctx.out().line(resolved.bin.display());
            Ok(0)
        }
    }
}
