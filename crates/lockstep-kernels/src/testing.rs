//! Test support shared by the modules that compile and run generated kernels
//! with the real IREE tools: the tools (provisioned on first use, never
//! skipped), compiling MLIR text for the host CPU and running a compiled
//! signature on given inputs.

use std::path::{Path, PathBuf};

/// The IREE toolchain, resolved as every lockstep command resolves it.
pub fn toolchain() -> &'static lockstep_iree::Toolchain {
    static TOOLCHAIN: std::sync::OnceLock<lockstep_iree::Toolchain> = std::sync::OnceLock::new();
    TOOLCHAIN.get_or_init(|| {
        let request = lockstep_iree::toolchain::Request {
            flag: None,
            config_bin: None,
            version: lockstep_iree::config::DEFAULT_IREE_VERSION,
        };
        lockstep_iree::toolchain::resolve(&request, &lockstep_core::events::NullSink)
            .unwrap_or_else(|e| panic!("cannot provision the IREE tools: {}", e.render()))
    })
}

/// The directory of the IREE tools.
pub fn iree_bin() -> PathBuf {
    toolchain().bin.clone()
}

/// Compiles `text` (from stdin) for the host CPU into `vmfb`; panics with the
/// compiler's output and `what` on failure.
pub fn compile(text: &str, vmfb: &Path, what: &str) {
    let mut cmd = lockstep_core::process::command(iree_bin().join("iree-compile"));
    cmd.arg("-")
        .args(lockstep_iree::HOST_CPU_FLAGS)
        .arg("-o")
        .arg(vmfb);
    let out =
        lockstep_core::process::capture(&mut cmd, Some(text.as_bytes()), None, Default::default())
            .expect("starting iree-compile");
    assert!(
        out.exit == lockstep_core::process::Exit::Code(0),
        "{what}: iree-compile failed:\n{}\n--- module ---\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles `text` and runs `sig`'s function once on `inputs` (one vector per
/// operand of `sig.inputs`, encoded in the operand's type) with
/// iree-run-module; returns every output of `sig.outputs`, decoded.
pub fn execute(
    sig: &crate::signature::OpSignature,
    text: &str,
    inputs: &[Vec<f64>],
) -> Vec<Vec<f64>> {
    use crate::tensor_data::{decode, encode};
    let name = &sig.func_name;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let vmfb = dir.path().join("module.vmfb");
    compile(text, &vmfb, name);
    let files: Vec<PathBuf> = sig
        .inputs
        .iter()
        .zip(inputs)
        .enumerate()
        .map(|(a, (operand, values))| {
            let path = dir.path().join(format!("in{a}.bin"));
            std::fs::write(&path, encode(values, operand.elem)).expect("writing an input");
            path
        })
        .collect();
    let outs: Vec<PathBuf> = (0..sig.outputs.len())
        .map(|i| dir.path().join(format!("out{i}.bin")))
        .collect();
    // The iree-run-module command bench's verification runs (lockstep-bench
    // tests that exact command on the same kernels).
    let inputs: Vec<String> = sig
        .inputs
        .iter()
        .zip(&files)
        .map(|(operand, file)| {
            let dims: Vec<String> = operand.shape.iter().map(u64::to_string).collect();
            format!(
                "{}x{}=@{}",
                dims.join("x"),
                operand.elem.mlir(),
                file.display()
            )
        })
        .collect();
    let argv = toolchain()
        .run_module(&lockstep_iree::RunModule {
            module: &vmfb,
            device: Some("local-task"),
            function: Some(name),
            flags: &[],
            inputs: &inputs,
            outputs: &outs,
        })
        .expect("the iree-run-module command")
        .argv;
    let mut cmd = lockstep_core::process::command(&argv[0]);
    cmd.args(&argv[1..]);
    let run = lockstep_core::process::capture(&mut cmd, None, None, Default::default())
        .expect("starting iree-run-module");
    assert!(
        run.exit == lockstep_core::process::Exit::Code(0),
        "{name}: iree-run-module failed:\n{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    sig.outputs
        .iter()
        .zip(&outs)
        .map(|(operand, path)| {
            let bytes = std::fs::read(path).expect("reading an output");
            decode(&bytes, operand.elem).unwrap_or_else(|e| panic!("{name}: {e}"))
        })
        .collect()
}

/// The one signature of a command line with one direction (panics otherwise).
pub fn sig(line: &str) -> crate::OpSignature {
    let words: Vec<&str> = line.split_whitespace().collect();
    let op = crate::parse_argv(&words)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .op;
    let mut all = crate::signatures(&op);
    assert_eq!(all.len(), 1, "{line}: expected one direction");
    all.remove(0)
}
