//! One `--with` command: an external tool (an argv, no shell unless asked) or
//! a `builtin.module(...)` pass pipeline run with `iree-opt`, and the identity
//! that cache keys use.

use std::path::{Path, PathBuf};

use lockstep_core::Error;

/// A preprocessing step.
#[derive(Debug, Clone)]
pub enum Step {
    /// An external tool: executable on stdin, replacement on stdout.
    Tool {
        /// As given (argv[0] unresolved), for messages.
        argv: Vec<String>,
        /// argv[0] resolved: absolute, relative to the working directory, or from PATH.
        program: PathBuf,
        /// The content hash of the resolved program and of every argument
        /// naming an existing file (a script given to an interpreter).
        identity: String,
    },
    /// A pass pipeline `builtin.module(PASSES)`: PASSES run anchored on the
    /// `hal.executable`, as the compiler runs them.
    Pipeline {
        /// The whole `builtin.module(...)` text.
        pipeline: String,
        /// What is inside `builtin.module(...)`.
        inner: String,
    },
}

impl Step {
    /// Parses a `--with` value. `shell` runs it with `sh -c`.
    pub fn parse(text: &str, shell: bool, cwd: &Path) -> Result<Step, Error> {
        // As the compiler does: a value wrapped in double quotes is unwrapped
        // (the only way to pass spaces through a pass pipeline option).
        let trimmed = text.trim();
        let text = trimmed
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .unwrap_or(trimmed);
        if text.starts_with("builtin.module") && !shell {
            let inner = text
                .strip_prefix("builtin.module(")
                .and_then(|t| t.strip_suffix(')'))
                .ok_or_else(|| {
                    Error::usage(format!("invalid pass pipeline `{text}`"))
                        .cause("expected `builtin.module(PASSES)` with balanced parentheses")
                        .hint("write e.g. --with 'builtin.module(canonicalize)'")
                })?;
            return Ok(Step::Pipeline {
                pipeline: text.to_string(),
                inner: inner.to_string(),
            });
        }
        let argv = if shell {
            vec!["sh".to_string(), "-c".to_string(), text.to_string()]
        } else {
            lockstep_core::config::shell_words(text).map_err(|e| {
                Error::usage(format!("invalid --with command `{text}`"))
                    .cause(e)
                    .hint("quote the words like a POSIX shell would, or use --with-shell")
            })?
        };
        Step::tool(argv, cwd)
    }

    /// A tool step from an argv (the `--wrap` form).
    pub fn tool(argv: Vec<String>, cwd: &Path) -> Result<Step, Error> {
        let Some(first) = argv.first() else {
            return Err(Error::usage("empty --with command").hint("name a tool to run"));
        };
        let program = resolve_program(first, cwd)?;
        let mut identity = file_identity(&program);
        for arg in &argv[1..] {
            let p = cwd.join(arg);
            if !arg.is_empty() && p.is_file() {
                identity.push('\0');
                identity.push_str(&file_identity(&p));
            }
        }
        Ok(Step::Tool {
            argv,
            program,
            identity,
        })
    }

    /// The step with the contents of `inputs` (files the tool reads: a C
    /// source it compiles, a tuning table; `--with-input`) in its identity,
    /// so an edited input is a new cache key. Pipelines read no files.
    pub fn reading(self, inputs: &[PathBuf]) -> Step {
        match self {
            Step::Tool {
                argv,
                program,
                mut identity,
            } => {
                for input in inputs {
                    identity.push_str("\0input:");
                    identity.push_str(&input.display().to_string());
                    identity.push('=');
                    identity.push_str(&file_identity(input));
                }
                Step::Tool {
                    argv,
                    program,
                    identity,
                }
            }
            pipeline => pipeline,
        }
    }

    /// How messages show it.
    pub fn display(&self) -> String {
        match self {
            Step::Tool { argv, .. } => argv
                .iter()
                .map(|w| lockstep_core::process::quote(w))
                .collect::<Vec<_>>()
                .join(" "),
            Step::Pipeline { pipeline, .. } => pipeline.clone(),
        }
    }

    /// What the cache key covers besides the input: the form of the entry
    /// (`raw` tool output for `--wrap`, or the checked op text of the direct
    /// form, which may have been normalised with iree-opt), the command, and
    /// the identity of what runs it (`iree_opt_identity`: pipelines, and the
    /// normalising of the op form).
    pub fn key_material(&self, raw: bool, iree_opt_identity: &str) -> String {
        let form = if raw { "raw" } else { "op" };
        match self {
            Step::Tool { argv, identity, .. } => {
                let iree_opt = if raw { "" } else { iree_opt_identity };
                format!("tool\0{form}\0{}\0{identity}\0{iree_opt}", argv.join("\0"))
            }
            Step::Pipeline { pipeline, .. } => {
                format!("pipeline\0{form}\0{pipeline}\0{iree_opt_identity}")
            }
        }
    }

    pub fn is_pipeline(&self) -> bool {
        matches!(self, Step::Pipeline { .. })
    }
}

/// `dir/name`, `/abs/name` and `name` on PATH, as a shell would.
pub fn resolve_program(name: &str, cwd: &Path) -> Result<PathBuf, Error> {
    if name.contains('/') {
        let p = cwd.join(name);
        if is_executable(&p) {
            return Ok(p);
        }
        return Err(Error::usage(format!("tool `{name}` is not an executable file"))
            .cause(format!("looked for {}", p.display()))
            .hint("check the path (relative paths are relative to the current directory) and that the file is executable (chmod +x)"));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let dir = if dir.as_os_str().is_empty() {
            cwd.to_path_buf()
        } else {
            cwd.join(dir)
        };
        let p = dir.join(name);
        if is_executable(&p) {
            return Ok(p);
        }
    }
    Err(Error::usage(format!("tool `{name}` not found on PATH"))
        .cause(format!("PATH={}", path.to_string_lossy()))
        .hint(format!(
            "give a path to it (e.g. ./{name} or /abs/path/{name}), or add its directory to PATH"
        )))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The sha256 of the file's content (following symlinks), remembered per
/// file version so a large tool is hashed once: the same tool installed
/// elsewhere keys the same entries, an edited one new entries. A file that
/// cannot be read is identified by its path alone.
pub fn file_identity(p: &Path) -> String {
    match lockstep_core::hash::sha256_file_memo(p, &lockstep_core::paths::file_hashes()) {
        Ok(sha256) => format!("sha256:{sha256}"),
        Err(_) => format!("path:{}", p.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_identified_by_content_not_place() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a/tool.sh");
        let b = dir.path().join("b/tool.sh");
        for p in [&a, &b] {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "#!/bin/sh\ncat\n").unwrap();
        }
        assert_eq!(file_identity(&a), file_identity(&b));
        std::fs::write(&b, "#!/bin/sh\ncat -u\n").unwrap();
        assert_ne!(file_identity(&a), file_identity(&b), "an edited tool");
    }

    #[test]
    fn declared_inputs_join_a_tools_identity() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("kernel.c");
        std::fs::write(&input, "int f(void) { return 1; }\n").unwrap();
        let cwd = std::env::current_dir().unwrap();
        let key = |step: Step| step.key_material(false, "iree");
        let plain = key(Step::parse("cat", false, &cwd).unwrap());
        let first = key(Step::parse("cat", false, &cwd)
            .unwrap()
            .reading(std::slice::from_ref(&input)));
        assert_ne!(plain, first);
        std::fs::write(&input, "int f(void) { return 2; }\n").unwrap();
        let second = key(Step::parse("cat", false, &cwd)
            .unwrap()
            .reading(std::slice::from_ref(&input)));
        assert_ne!(first, second, "an edited input is a new key");
    }

    #[test]
    fn parses_tools_and_pipelines() {
        let cwd = std::env::current_dir().unwrap();
        match Step::parse("cat -u", false, &cwd).unwrap() {
            Step::Tool { argv, program, .. } => {
                assert_eq!(argv, ["cat", "-u"]);
                assert!(program.is_absolute() && program.ends_with("cat"));
            }
            other => panic!("{other:?}"),
        }
        match Step::parse("\"builtin.module(canonicalize)\"", false, &cwd).unwrap() {
            Step::Pipeline { inner, .. } => assert_eq!(inner, "canonicalize"),
            other => panic!("{other:?}"),
        }
        assert!(Step::parse("builtin.module(canonicalize", false, &cwd).is_err());
        let err = Step::parse("no-such-tool-anywhere", false, &cwd).unwrap_err();
        assert!(err.message.contains("not found on PATH"), "{err:?}");
        assert!(Step::parse("/bin/cat", false, &cwd).is_ok());
        match Step::parse("cat | cat", true, &cwd).unwrap() {
            Step::Tool { argv, .. } => assert_eq!(argv, ["sh", "-c", "cat | cat"]),
            other => panic!("{other:?}"),
        }
    }
}
