//! `lockstep toolchain ...`: dispatch and printing.

use lockstep_core::config::Loaded;
use lockstep_core::Error;
use lockstep_iree::toolchain::{self, Request};

use crate::cli;
use crate::output::Console;

pub fn run(cmd: cli::Toolchain, loaded: &Loaded) -> Result<i32, Error> {
    let console = Console::new();
    match cmd {
        cli::Toolchain::Install { iree, json } => {
            let version = iree.unwrap_or_else(|| loaded.config.toolchain.iree.clone());
            let installed = toolchain::install(&version, &console)?;
            if json {
                let text = serde_json::to_string_pretty(&installed).map_err(|e| {
                    Error::failed("cannot encode the toolchain as JSON").cause(e.to_string())
                })?;
                println!("{text}");
            } else {
                let packages: Vec<String> = installed
                    .packages
                    .iter()
                    .map(|(name, version)| format!("{name} {version}"))
                    .collect();
                let dir = installed.bin.parent().unwrap_or(&installed.bin);
                println!("{} in {}", packages.join(", "), dir.display());
                println!("iree-compile reports {}", installed.compiler_stamp());
            }
            Ok(0)
        }
        cli::Toolchain::Path { iree_bin } => {
            let config_bin = loaded
                .config
                .toolchain
                .iree_bin
                .as_ref()
                .map(|p| loaded.root.join(p));
            let request = Request {
                flag: iree_bin.as_deref(),
                config_bin: config_bin.as_deref(),
                version: &loaded.config.toolchain.iree,
            };
            let resolved = toolchain::resolve(&request, &console)?;
            println!("{}", resolved.bin.display());
            Ok(0)
        }
    }
}
