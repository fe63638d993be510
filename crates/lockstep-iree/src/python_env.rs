//! The IREE compiler of a Python environment: what the `lockstep_kernels`
//! Python package compiles with (the `iree-base-compiler` its wheel
//! requires), identified exactly as the provisioned toolchain is, so a kernel
//! `lockstep bench` compiled with the same IREE wheels is a cache hit from
//! Python and the other way round.
//!
//! Why a module of its own: a Python process launching a kernel must not pay
//! for `iree-compile --version` (about 0.2 s: it loads the whole compiler
//! library) on every start. The version output is remembered in a small file
//! keyed by the compiler binary's and library's path, size, mtime and inode;
//! any change to either runs it again. The identity itself is recomputed
//! from the wheels' RECORD files every time (cheap: no file is hashed).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use lockstep_core::Error;
use serde::{Deserialize, Serialize};

use crate::toolchain::{
    compiler_lib_near, compiler_version_line, identity, is_executable, user_dir_content,
    version_output, Source, Toolchain, IDENTITY_VERSION,
};

/// The remembered `--version` output of one compiler.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Memo {
    files: Vec<FileStamp>,
    output: String,
}

/// What identifies one file's version without reading it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct FileStamp {
    path: PathBuf,
    size: u64,
    mtime_ns: i128,
    inode: u64,
}

fn file_stamp(path: &Path) -> Option<FileStamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(FileStamp {
        path: path.to_path_buf(),
        size: meta.len(),
        mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        inode: meta.ino(),
    })
}

/// The toolchain whose compiler is `compile` (the native `iree-compile` of a
/// pip-installed `iree-base-compiler`, or one in `$LOCKSTEP_IREE_BIN`),
/// remembering its version output under `memo_dir` when one is given (a
/// memo that cannot be written is only a slower next start).
pub fn toolchain_of_compiler(compile: &Path, memo_dir: Option<&Path>) -> Result<Toolchain, Error> {
    if !is_executable(compile) {
        return Err(Error::usage(format!(
            "no executable iree-compile at {}",
            compile.display()
        ))
        .hint(Source::Python.fix_hint()));
    }
    let real = std::fs::canonicalize(compile).unwrap_or_else(|_| compile.to_path_buf());
    let stamps: Option<Vec<FileStamp>> = std::iter::once(real.clone())
        .chain(compiler_lib_near(compile))
        .map(|p| file_stamp(&p))
        .collect();
    let memo_path = memo_dir.map(|dir| {
        let name = lockstep_core::hash::sha256_bytes(real.as_os_str().as_encoded_bytes());
        dir.join(format!("iree-compile-{}.json", &name[..16]))
    });
    let remembered = match (&memo_path, &stamps) {
        (Some(path), Some(stamps)) => read_memo(path, stamps),
        _ => None,
    };
    let output = match remembered {
        Some(output) => output,
        None => {
            let output = version_output(compile)?;
            if let (Some(path), Some(files)) = (&memo_path, stamps) {
                write_memo(
                    path,
                    &Memo {
                        files,
                        output: output.clone(),
                    },
                );
            }
            output
        }
    };
    let bin = compile
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    Ok(Toolchain {
        bin,
        source: Source::Python,
        packages: Vec::new(),
        compiler_version: compiler_version_line(&output),
        identity: identity(&output, &user_dir_content(compile)?),
        identity_version: IDENTITY_VERSION,
    })
}

fn read_memo(path: &Path, stamps: &[FileStamp]) -> Option<String> {
    // A memo is a few hundred bytes; anything large is not ours.
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > 64 * 1024 {
        return None;
    }
    let memo: Memo = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    (memo.files == stamps).then_some(memo.output)
}

fn write_memo(path: &Path, memo: &Memo) {
    let Ok(text) = serde_json::to_vec(memo) else {
        return;
    };
    if let Err(e) = lockstep_core::fs::write_atomic(path, &text) {
        tracing::debug!("cannot remember the compiler's version: {}", e.render());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A fake compiler that counts how often it is asked its version.
    fn fake_compiler(dir: &Path) -> PathBuf {
        let path = dir.join("iree-compile");
        let count = dir.join("count");
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\necho x >> {}\necho 'IREE compiler version 9.9.9 @ abc'\n",
                count.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn runs(dir: &Path) -> usize {
        std::fs::read_to_string(dir.join("count"))
            .unwrap_or_default()
            .lines()
            .count()
    }

    #[test]
    fn the_version_is_remembered_across_processes_until_the_binary_changes() {
        let dir = tempfile::tempdir().unwrap();
        let memo = dir.path().join("memo");
        std::fs::create_dir(&memo).unwrap();
        let compile = fake_compiler(dir.path());
        let first = toolchain_of_compiler(&compile, Some(&memo)).unwrap();
        assert_eq!(first.compiler_version, "IREE compiler version 9.9.9 @ abc");
        assert_eq!(first.source, Source::Python);
        // The per-process memo is bypassed by reading the file directly.
        let stamps = vec![file_stamp(&std::fs::canonicalize(&compile).unwrap()).unwrap()];
        let memo_file = std::fs::read_dir(&memo).unwrap().next().unwrap().unwrap();
        assert!(read_memo(&memo_file.path(), &stamps).is_some());
        assert_eq!(runs(dir.path()), 1);
        // A changed binary (another size) is asked again.
        let text = std::fs::read_to_string(&compile).unwrap();
        std::fs::write(&compile, format!("{text}# changed\n")).unwrap();
        let stamps = vec![file_stamp(&std::fs::canonicalize(&compile).unwrap()).unwrap()];
        assert!(read_memo(&memo_file.path(), &stamps).is_none());
        // A corrupt memo is only a miss.
        std::fs::write(memo_file.path(), b"{not json").unwrap();
        assert!(read_memo(&memo_file.path(), &stamps).is_none());
    }

    #[test]
    fn a_missing_compiler_says_how_to_install_one() {
        let dir = tempfile::tempdir().unwrap();
        let err = toolchain_of_compiler(&dir.path().join("iree-compile"), None).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.render().contains("pip install iree-base-compiler"));
    }
}
