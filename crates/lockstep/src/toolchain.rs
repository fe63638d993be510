//! `lockstep toolchain ...`: dispatch and printing.

use std::path::Path;

use lockstep_core::config::Loaded;
use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_iree::toolchain::{self, Request, SetFrom, Toolchain};

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
            let version = iree.unwrap_or_else(|| loaded.config.toolchain.iree.clone());
            let set_manifest = manifest.or_else(|| configured_manifest(loaded));
            let installed = match (&set_manifest, &wheels) {
                (Some(m), _) => toolchain::install_set(SetFrom::Manifest(m), &version, rep)?,
                (None, Some(d)) => toolchain::install_set(SetFrom::Wheels(d), &version, rep)?,
                (None, None) => toolchain::install(&version, rep)?,
            };
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

/// Environment variable naming the manifest of a built set the toolchain comes from.
pub const ENV_IREE_MANIFEST: &str = "LOCKSTEP_IREE_MANIFEST";

/// `$LOCKSTEP_IREE_MANIFEST` (non-empty), else `[toolchain] manifest`.
fn configured_manifest(loaded: &Loaded) -> Option<std::path::PathBuf> {
    std::env::var_os(ENV_IREE_MANIFEST)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            loaded
                .config
                .toolchain
                .manifest
                .as_ref()
                .map(|p| loaded.root.join(p))
        })
}

/// The IREE tools a command uses: `--iree-bin` (`flag`), else
/// `$LOCKSTEP_IREE_BIN`, else `[toolchain] iree-bin` (relative to
/// lockstep.toml), else the set of `$LOCKSTEP_IREE_MANIFEST` or
/// `[toolchain] manifest`, else the provisioned `[toolchain] iree` version.
pub fn resolve(flag: Option<&Path>, loaded: &Loaded, sink: &dyn Sink) -> Result<Toolchain, Error> {
    let config_bin = loaded
        .config
        .toolchain
        .iree_bin
        .as_ref()
        .map(|p| loaded.root.join(p));
    let env_bin = std::env::var_os(toolchain::ENV_IREE_BIN).is_some_and(|v| !v.is_empty());
    if flag.is_none() && !env_bin && config_bin.is_none() {
        if let Some(manifest) = configured_manifest(loaded) {
            return toolchain::resolve_set(
                SetFrom::Manifest(&manifest),
                &loaded.config.toolchain.iree,
                sink,
            );
        }
    }
    toolchain::resolve(
        &Request {
            flag,
            config_bin: config_bin.as_deref(),
            version: &loaded.config.toolchain.iree,
        },
        sink,
    )
}
