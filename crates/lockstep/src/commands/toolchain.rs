//! `lockstep toolchain ...`: printing (lockstep-iree resolves and provisions).

use lockstep_core::Error;
use lockstep_iree::toolchain::{self, InstallRequest};
use lockstep_iree::Toolchain;

use crate::context::Ctx;
use lockstep_cmdline as cli;

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
            ctx.show(&installed, Toolchain::installed)
        }
        cli::Toolchain::Path { iree_bin } => {
            let resolved = ctx.toolchain(iree_bin.as_deref())?;
            ctx.out().line(resolved.bin.display());
            Ok(0)
        }
    }
}
