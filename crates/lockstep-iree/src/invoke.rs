//! The one place lockstep builds and runs IREE tool command lines:
//! `iree-compile` (whole, or up to / from the executable-sources phase, with
//! or without scheduling statistics), `iree-run-module`, `iree-benchmark-module`
//! and `iree-opt`, all from one [`Toolchain`], run through lockstep-core's
//! process runner (own process group, timeout, output in a log whose first
//! line is the command as a shell would run it), with the parsers of what they
//! print ([`first_error`], [`crate::benchmark`], [`dispatch_count`]).
//!
//! `lockstep test`, `lockstep bench` and `lockstep preprocess` describe what
//! they want ([`Compile`], [`RunModule`], [`Benchmark`]); they never assemble
//! IREE flags themselves.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::process::{self, shell_command, Exit, Spec};
use lockstep_core::Error;

use crate::toolchain::Toolchain;

/// A compile.
#[derive(Debug, Clone)]
pub struct Compile<'a> {
    pub source: &'a Path,
    /// Target and user flags, in order.
    pub flags: &'a [String],
    pub output: &'a Path,
    /// Stop at, or start from, the executable-sources phase.
    pub phase: Option<Phase>,
    /// Dump the scheduling statistics (JSON) here.
    pub statistics: Option<&'a Path>,
}

/// Which side of the executable-sources phase a compile is on (for
/// preprocessing executables between the two halves).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// From a source program up to the executable-sources phase.
    ToExecutableSources,
    /// From the executable-sources phase to a vmfb.
    FromExecutableSources,
}

/// One call of a module's function with iree-run-module.
#[derive(Debug, Clone, Copy)]
pub struct RunModule<'a> {
    pub module: &'a Path,
    /// `--device=`.
    pub device: Option<&'a str>,
    /// `--function=`.
    pub function: Option<&'a str>,
    /// Extra flags (a test's flag file, a device's run flags), before the inputs.
    pub flags: &'a [String],
    /// `--input=` values (`4xf32=1 2 3 4`, `2x3xf16=@in0.bin`).
    pub inputs: &'a [String],
    /// Results written to these files (`--output=@FILE`).
    pub outputs: &'a [PathBuf],
}

/// How long iree-benchmark-module runs each repetition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MinTime {
    /// Exactly this many iterations (`Nx`).
    Iterations(u64),
    /// At least this many seconds.
    Seconds(f64),
}

/// A benchmark of one module with iree-benchmark-module.
#[derive(Debug, Clone)]
pub struct Benchmark<'a> {
    /// What to run (the same fields as a run).
    pub run: RunModule<'a>,
    pub repetitions: u64,
    pub min_time: MinTime,
    /// Write google-benchmark's JSON here too (it is always printed).
    pub json_out: Option<&'a Path>,
    /// `--task_topology_max_group_count` (the local-task device's workers).
    pub threads: Option<usize>,
}

/// A command line ready to run: the tool's path first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub argv: Vec<String>,
}

impl Toolchain {
    /// `iree-compile [FLAGS] [--compile-{to,from}=executable-sources] SOURCE
    /// [statistics flags] -o OUTPUT`.
    pub fn compile(&self, c: &Compile) -> Result<Invocation, Error> {
        let mut argv = vec![self.tool("iree-compile")?.display().to_string()];
        argv.push(c.source.display().to_string());
        argv.extend(c.flags.iter().cloned());
        match c.phase {
            Some(Phase::ToExecutableSources) => argv.push("--compile-to=executable-sources".into()),
            Some(Phase::FromExecutableSources) => {
                argv.push("--compile-from=executable-sources".into())
            }
            None => {}
        }
        if let Some(stats) = c.statistics {
            argv.push("--iree-scheduling-dump-statistics-format=json".into());
            argv.push(format!(
                "--iree-scheduling-dump-statistics-file={}",
                stats.display()
            ));
        }
        argv.push("-o".into());
        argv.push(c.output.display().to_string());
        Ok(Invocation { argv })
    }

    /// `iree-run-module --module=M [--device=D] [--function=F] FLAGS
    /// --input=... --output=@...`.
    pub fn run_module(&self, r: &RunModule) -> Result<Invocation, Error> {
        let mut argv = vec![self.tool("iree-run-module")?.display().to_string()];
        argv.extend(run_flags(r));
        argv.extend(
            r.outputs
                .iter()
                .map(|o| format!("--output=@{}", o.display())),
        );
        Ok(Invocation { argv })
    }

    /// `iree-benchmark-module` with the run's flags, the repetitions and
    /// JSON output.
    pub fn benchmark_module(&self, b: &Benchmark) -> Result<Invocation, Error> {
        let mut argv = vec![self.tool("iree-benchmark-module")?.display().to_string()];
        argv.extend(run_flags(&b.run));
        argv.push(format!("--benchmark_repetitions={}", b.repetitions.max(1)));
        argv.push(match b.min_time {
            MinTime::Iterations(n) => format!("--benchmark_min_time={}x", n.max(1)),
            MinTime::Seconds(s) => format!("--benchmark_min_time={s}s"),
        });
        argv.push("--benchmark_format=json".into());
        if let Some(out) = b.json_out {
            argv.push(format!("--benchmark_out={}", out.display()));
            argv.push("--benchmark_out_format=json".into());
        }
        if let Some(threads) = b.threads {
            argv.push(format!("--task_topology_max_group_count={threads}"));
        }
        Ok(Invocation { argv })
    }

    /// `iree-opt` running the pass pipeline `inner` on each `hal.executable`
    /// of its input (stdin to stdout), printing local-scope attributes and
    /// debug locations so its output can be spliced back.
    pub fn opt_pipeline(&self, inner: &str) -> Result<Invocation, Error> {
        let mut argv = vec![
            self.tool("iree-opt")?.display().to_string(),
            format!("--pass-pipeline=builtin.module(hal.executable({inner}))"),
        ];
        argv.extend(PRINT_SPLICEABLE.map(String::from));
        Ok(Invocation { argv })
    }

    /// `iree-opt` printing its input (stdin) back with every alias inlined:
    /// the normalisation of a tool's output whose aliases differ from the
    /// module's.
    pub fn opt_print(&self) -> Result<Invocation, Error> {
        let mut argv = vec![self.tool("iree-opt")?.display().to_string()];
        argv.extend(PRINT_SPLICEABLE.map(String::from));
        Ok(Invocation { argv })
    }

    /// `iree-opt FILE -o /dev/null`: does `file` parse and verify?
    pub fn opt_check(&self, file: &Path) -> Result<Invocation, Error> {
        Ok(Invocation {
            argv: vec![
                self.tool("iree-opt")?.display().to_string(),
                file.display().to_string(),
                "-o".into(),
                "/dev/null".into(),
            ],
        })
    }
}

/// How iree-opt prints text that is spliced into another module: aliases
/// inlined, debug locations kept.
const PRINT_SPLICEABLE: [&str; 2] = ["--mlir-print-local-scope", "--mlir-print-debuginfo"];

/// `--module`, `--device`, `--function`, the flags, then the inputs.
fn run_flags(r: &RunModule) -> Vec<String> {
    let mut flags = vec![format!("--module={}", r.module.display())];
    if let Some(device) = r.device {
        flags.push(format!("--device={device}"));
    }
    if let Some(function) = r.function {
        flags.push(format!("--function={function}"));
    }
    flags.extend(r.flags.iter().cloned());
    flags.extend(r.inputs.iter().map(|i| format!("--input={i}")));
    flags
}

/// Where and how long a tool may run.
#[derive(Debug, Clone)]
pub struct Limits<'a> {
    pub cwd: &'a Path,
    pub timeout: Duration,
    /// stdout and stderr go here, after a first line `$ COMMAND`.
    pub log: &'a Path,
}

/// How a tool run ended.
#[derive(Debug, Clone)]
pub struct Ran {
    pub exit: Exit,
    pub elapsed: Duration,
    pub log: PathBuf,
    /// The command as a shell in the working directory would run it.
    pub command: String,
    timeout: Duration,
}

impl Invocation {
    /// The command as a shell in `cwd` would run it.
    pub fn command(&self, cwd: &Path) -> String {
        shell_command(cwd, &self.argv)
    }

    /// The command line, each word quoted for a shell when it needs to be.
    pub fn words(&self) -> String {
        let words: Vec<String> = self.argv.iter().map(|w| process::quote(w)).collect();
        words.join(" ")
    }

    /// The tool's file name (`iree-compile`), for messages.
    pub fn tool_name(&self) -> String {
        self.argv
            .first()
            .and_then(|p| Path::new(p).file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Runs the tool to completion (an error only when it cannot start).
    pub fn run(&self, limits: &Limits) -> Result<Ran, Error> {
        let command = self.command(limits.cwd);
        let done = process::run(
            &Spec {
                argv: self.argv.clone(),
                cwd: limits.cwd.to_path_buf(),
                env: Vec::new(),
                timeout: Some(limits.timeout),
                log: limits.log.to_path_buf(),
                header: Some(format!("$ {command}\n")),
            },
            |_| {},
        )?;
        Ok(Ran {
            exit: done.exit,
            elapsed: done.elapsed,
            log: limits.log.to_path_buf(),
            command,
            timeout: limits.timeout,
        })
    }
}

impl Ran {
    pub fn success(&self) -> bool {
        self.exit == Exit::Code(0)
    }

    /// `exit status 1`, `killed by signal 11`, `timed out after 600s`.
    pub fn describe_exit(&self) -> String {
        match self.exit {
            Exit::TimedOut => format!("timed out after {}s", self.timeout.as_secs_f64()),
            other => other.describe(),
        }
    }

    /// What the tool printed, without the command line at the top.
    pub fn output(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        match text.split_once('\n') {
            Some((first, rest)) if first.starts_with("$ ") => rest.to_string(),
            _ => text,
        }
    }

    /// The last `n` lines of the log (command line included).
    pub fn tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// The line of the output that says what went wrong ([`first_error`]).
    pub fn first_error(&self) -> String {
        first_error(&self.output())
    }
}

/// The line of a tool's output that says what went wrong: the first that
/// reads like an error (`error:`, `ERROR`, `[FAILED]`, a mismatch, IREE's
/// status codes, an unknown flag), else the first non-blank one (tools print
/// the cause first and advice after); at most 300 characters.
pub fn first_error(output: &str) -> String {
    error_lines(output, 1)
        .first()
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| "no output".into())
}

/// What went wrong, as the console shows it under a failed step: up to
/// `max` lines of a tool's output from the first that reads like an error
/// ([`first_error`]'s rule) onwards (an MLIR diagnostic is its `error:` line,
/// the source line and the caret, then its notes), each at most 300
/// characters; blank lines and the log's `$ command` line left out.
pub fn error_lines(output: &str, max: usize) -> Vec<String> {
    let lines: Vec<&str> = output
        .lines()
        .filter(|l| !l.starts_with("$ ") && !l.trim().is_empty())
        .collect();
    let start = lines
        .iter()
        .position(|l| ERROR_MARKERS.iter().any(|m| l.contains(m)))
        .unwrap_or(0);
    lines[start..]
        .iter()
        .take(max)
        .map(|l| l.trim_end().chars().take(300).collect())
        .collect()
}

/// What a line that reports an error contains.
const ERROR_MARKERS: &[&str] = &[
    "error",
    "ERROR",
    "FAILED",
    "mismatch",
    "Unknown command line argument",
    "INVALID_ARGUMENT",
    "NOT_FOUND",
    "UNAVAILABLE",
    "INTERNAL",
    "RESOURCE_EXHAUSTED",
];

/// `["stream-aggregate"]["execution"]["dispatch-count"]` of the compiler's
/// scheduling statistics.
pub fn dispatch_count(statistics: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(statistics).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("stream-aggregate")?
        .get("execution")?
        .get("dispatch-count")?
        .as_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toolchain(dir: &Path) -> Toolchain {
        use std::os::unix::fs::PermissionsExt;
        for tool in [
            "iree-compile",
            "iree-run-module",
            "iree-benchmark-module",
            "iree-opt",
        ] {
            let path = dir.join(tool);
            std::fs::write(&path, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Toolchain {
            bin: dir.to_path_buf(),
            source: crate::toolchain::Source::Flag,
            packages: Vec::new(),
            compiler_version: String::new(),
            identity: String::new(),
            identity_version: 0,
        }
    }

    #[test]
    fn command_lines() {
        let dir = tempfile::tempdir().unwrap();
        let tc = toolchain(dir.path());
        let bin = |t: &str| dir.path().join(t).display().to_string();
        let flags = vec!["--iree-hal-target-device=local".to_string()];
        let c = tc
            .compile(&Compile {
                source: Path::new("a.mlir"),
                flags: &flags,
                output: Path::new("a.vmfb"),
                phase: Some(Phase::ToExecutableSources),
                statistics: Some(Path::new("s.json")),
            })
            .unwrap();
        assert_eq!(
            c.argv,
            [
                bin("iree-compile"),
                "a.mlir".into(),
                flags[0].clone(),
                "--compile-to=executable-sources".into(),
                "--iree-scheduling-dump-statistics-format=json".into(),
                "--iree-scheduling-dump-statistics-file=s.json".into(),
                "-o".into(),
                "a.vmfb".into(),
            ]
        );
        let inputs = vec!["4xf32=@in0.bin".to_string()];
        let outputs = vec![PathBuf::from("out0.bin")];
        let run = RunModule {
            module: Path::new("m.vmfb"),
            device: Some("local-task"),
            function: Some("main"),
            flags: &[],
            inputs: &inputs,
            outputs: &outputs,
        };
        assert_eq!(
            tc.run_module(&run).unwrap().argv[1..],
            [
                "--module=m.vmfb",
                "--device=local-task",
                "--function=main",
                "--input=4xf32=@in0.bin",
                "--output=@out0.bin"
            ]
        );
        let b = tc
            .benchmark_module(&Benchmark {
                run: RunModule {
                    outputs: &[],
                    ..run
                },
                repetitions: 11,
                min_time: MinTime::Iterations(1),
                json_out: Some(Path::new("b.json")),
                threads: Some(1),
            })
            .unwrap();
        assert_eq!(
            b.argv[5..],
            [
                "--benchmark_repetitions=11",
                "--benchmark_min_time=1x",
                "--benchmark_format=json",
                "--benchmark_out=b.json",
                "--benchmark_out_format=json",
                "--task_topology_max_group_count=1"
            ]
        );
        assert_eq!(b.tool_name(), "iree-benchmark-module");
    }

    #[test]
    fn runs_log_the_command_and_find_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("x.log");
        let inv = Invocation {
            argv: vec![
                "sh".into(),
                "-c".into(),
                "echo 'note: working'; echo 'error: it broke' >&2; exit 3".into(),
            ],
        };
        let ran = inv
            .run(&Limits {
                cwd: dir.path(),
                timeout: Duration::from_secs(30),
                log: &log,
            })
            .unwrap();
        assert!(!ran.success());
        assert_eq!(ran.describe_exit(), "exit status 3");
        assert_eq!(ran.first_error(), "error: it broke");
        assert!(std::fs::read_to_string(&log).unwrap().starts_with("$ "));
        assert!(!ran.output().contains("$ sh"));
        assert_eq!(first_error("\n  first\nsecond"), "first");
        assert_eq!(first_error(""), "no output");
    }

    #[test]
    fn error_lines_start_at_the_diagnostic_and_are_bounded() {
        let output = "$ iree-compile in.mlir\n\
            warning: something harmless\n\
            in.mlir:2:8: error: custom op 'linalg.add' is unknown\n\
            \n  %0 = linalg.add %a, %b\n       ^\n\
            in.mlir:1:1: note: see the function\nmore\nand more\nstill more\n";
        let lines = error_lines(output, 5);
        assert_eq!(
            lines,
            [
                "in.mlir:2:8: error: custom op 'linalg.add' is unknown",
                "  %0 = linalg.add %a, %b",
                "       ^",
                "in.mlir:1:1: note: see the function",
                "more",
            ]
        );
        assert_eq!(first_error(output), lines[0]);
        let long = format!("error: {}\n", "x".repeat(1000));
        assert_eq!(error_lines(&long, 3)[0].chars().count(), 300);
        assert!(error_lines("", 3).is_empty());
        // No line reads like an error: the output's first lines.
        assert_eq!(
            error_lines("$ cmd\nfirst\nsecond\nthird", 2),
            ["first", "second"]
        );
    }
}
