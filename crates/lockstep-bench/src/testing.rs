//! Test support shared by the modules that compile and run generated kernels
//! with the real IREE tools: the tools (provisioned on first use, never
//! skipped) and compiling MLIR text for the host CPU.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The IREE tools, resolved as every lockstep command resolves them.
pub fn iree_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let request = lockstep_iree::toolchain::Request {
            flag: None,
            config_bin: None,
            version: lockstep_core::config::DEFAULT_IREE_VERSION,
        };
        lockstep_iree::toolchain::resolve(&request, &lockstep_core::events::NullSink)
            .unwrap_or_else(|e| panic!("cannot provision the IREE tools: {}", e.render()))
            .bin
    })
    .clone()
}

/// Compiles `text` (from stdin) for the host CPU into `vmfb`; panics with the
/// compiler's output and `what` on failure.
pub fn compile(text: &str, vmfb: &Path, what: &str) {
    let mut child = Command::new(iree_bin().join("iree-compile"))
        .arg("-")
        .args(lockstep_iree::HOST_CPU_FLAGS)
        .arg("-o")
        .arg(vmfb)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting iree-compile");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("writing the module");
    let out = child.wait_with_output().expect("iree-compile");
    assert!(
        out.status.success(),
        "{what}: iree-compile failed:\n{}\n--- module ---\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
}
