//! The batch a `lockstep bench` command line asks for: the single MIOpen
//! command (invalid: a usage error, nothing runs), the lines of a commands
//! file (an invalid line becomes a failed row, the batch goes on) or the
//! embedded default set; and the checks that must pass before anything is
//! compiled (extra flags after `--commands-file`, `--splat-input-value`).

use std::path::Path;

use lockstep_core::events::Sink;
use lockstep_core::Error;

use lockstep_kernels::miopen::{parse_argv, BenchCommand, ElemType};
use lockstep_kernels::{commands, defaults, signatures};

/// The largest commands file read: far beyond any real batch (a million
/// lines), small enough that `/dev/zero` or a wrong file fails at once.
pub const MAX_COMMANDS_FILE_BYTES: u64 = 64 << 20;

/// One command of the batch.
#[derive(Debug, Clone)]
pub struct Job {
    /// Line number in the commands file.
    pub line: Option<usize>,
    /// The command words without a driver prefix, joined.
    pub arguments: String,
    /// The parsed command or why it was rejected.
    pub parsed: Result<BenchCommand, String>,
    /// The line's leading repeat count (recorded in the rows, not acted on).
    pub repeat: Option<u64>,
}

/// The jobs of `words` (the MIOpen command, or with `commands_file` the
/// extra flags for every line); the embedded defaults when both are empty.
pub fn jobs(
    commands_file: Option<&Path>,
    words: &[String],
    sink: &dyn Sink,
) -> Result<Vec<Job>, Error> {
    if commands_file.is_some() {
        check_extra_flags(words)?;
    } else if let Some(word) = words.first().filter(|w| w.starts_with('-')) {
        return Err(misplaced_option(word));
    }
    let Some(path) = commands_file else {
        if words.is_empty() {
            return Ok(from_text(defaults::COMMANDS, false, &[], None, sink));
        }
        let (_, argv) = commands::strip_prefixes(words.to_vec());
        let arguments = shell_join(&argv);
        let parsed = parse_argv(&argv).map_err(|e| e.into_usage_error(&arguments))?;
        return Ok(vec![Job {
            line: None,
            arguments,
            parsed: Ok(parsed),
            repeat: None,
        }]);
    };
    let text =
        lockstep_core::fs::read_input_text("--commands-file", path, MAX_COMMANDS_FILE_BYTES)?;
    let is_tsv = path.extension().is_some_and(|e| e == "tsv");
    Ok(from_text(&text, is_tsv, words, Some(path), sink))
}

/// The jobs of a bundle's commands file, read as a file of a tree lockstep
/// did not write (never blocking: a FIFO or a device there is refused).
pub fn bundled(path: &Path, sink: &dyn Sink) -> Result<Vec<Job>, Error> {
    let text = lockstep_core::fs::read_tree_text("the bundle file", path, MAX_COMMANDS_FILE_BYTES)?;
    Ok(from_text(&text, false, &[], Some(path), sink))
}

/// The jobs of the lines of a commands file's `text` (`extra`: flags for
/// every line; `origin`: the file, for the warning when it has none).
fn from_text(
    text: &str,
    is_tsv: bool,
    extra: &[String],
    origin: Option<&Path>,
    sink: &dyn Sink,
) -> Vec<Job> {
    let lines = commands::parse_file(text, is_tsv);
    if lines.is_empty() {
        if let Some(path) = origin {
            sink.warn(format!(
                "{} has no commands (only blank lines and # comments)",
                path.display()
            ));
        }
    }
    lines
        .into_iter()
        .map(|line| {
            if !line.is_ok() {
                let reason = line.error.clone().unwrap_or_default();
                return Job {
                    line: Some(line.number),
                    arguments: line.text,
                    parsed: Err(reason),
                    repeat: line.repeat,
                };
            }
            let argv: Vec<String> = line.argv.iter().chain(extra).cloned().collect();
            Job {
                line: Some(line.number),
                arguments: shell_join(&argv),
                parsed: parse_argv(&argv).map_err(|e| e.reason),
                repeat: line.repeat,
            }
        })
        .collect()
}

/// The error for a lockstep option found where the MIOpen command should
/// start: a mistyped option, or a short option with its value attached.
fn misplaced_option(word: &str) -> Error {
    Error::usage(format!("`{word}` is not an option of lockstep bench")).hint(
        "lockstep's options go before the MIOpen command word and take their value as the \
         next word or after `=` (`-j 4`, `--jobs=4`); see `lockstep bench --help`",
    )
}

/// The words after `--commands-file FILE` go on every line, so each must be
/// a flag some MIOpen command knows: a mistyped lockstep option there would
/// otherwise fail every line.
fn check_extra_flags(extra: &[String]) -> Result<(), Error> {
    if extra.is_empty() {
        return Ok(());
    }
    let failures: Vec<String> = ["conv", "gemm", "layernorm"]
        .iter()
        .filter_map(|word| {
            let argv: Vec<String> = std::iter::once(word.to_string())
                .chain(extra.iter().cloned())
                .collect();
            parse_argv(&argv).err().map(|e| e.reason)
        })
        .filter(|reason| reason.contains("unknown flag"))
        .collect();
    if failures.len() < 3 {
        return Ok(());
    }
    Err(Error::usage(format!(
        "`{}` after --commands-file is not a MIOpen flag",
        extra.join(" ")
    ))
    .cause(failures[0].clone())
    .hint(
        "lockstep's options go before --commands-file's extra flags; the words after \
         `--` are MIOpen flags added to every line (e.g. `--commands-file cmds.txt -- -i 20`)",
    ))
}

/// `--splat-input-value` must be a number every input can hold: a finite
/// number, and an integer within int8's range when a kernel has int8 inputs.
pub fn check_splat(value: &str, jobs: &[Job]) -> Result<(), Error> {
    let bad = |why: &str| {
        Error::usage(format!("invalid --splat-input-value `{value}`: {why}"))
            .hint("give a number, e.g. --splat-input-value 1 (an integer for convint8)")
    };
    let number: f64 = value
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| bad("not a finite number"))?;
    let int8_inputs = jobs
        .iter()
        .filter_map(|job| job.parsed.as_ref().ok())
        .flat_map(|command| signatures(&command.op))
        .any(|sig| sig.inputs.iter().any(|o| o.elem == ElemType::I8));
    if int8_inputs && !(number.fract() == 0.0 && (-128.0..=127.0).contains(&number)) {
        return Err(bad("int8 inputs need an integer from -128 to 127"));
    }
    Ok(())
}

/// The words joined so that splitting them again gives the same words: a
/// word with blanks or quotes is quoted; MIOpen's `-!`, `-$` ... stay as
/// MIOpen writes them.
fn shell_join(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty() && !w.contains(|c: char| c.is_whitespace() || "'\"\\".contains(c)) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
