//! Where a command's output files go, and the one function that writes them.
//!
//! An output named by a flag (`--json`, `--csv`, `--junit`, `--summary`,
//! `--events`, `-o` ...) is written according to what the path is, found
//! with `stat` alone (a FIFO is opened once, to write it):
//!
//! - `-`: standard output;
//! - a regular file, or nothing yet: replaced whole through a temporary name
//!   beside it and a rename, so a reader never sees half of it (an existing
//!   file keeps its permissions);
//! - a symbolic link: its target is written the same way (the link stays);
//! - a FIFO or a character device (`/dev/null`, `/dev/stdout`): written in
//!   place, as a stream: never replaced by a regular file;
//! - a directory, a block device or a socket: a usage error.
//!
//! Missing parent directories are an error that names them: an output flag
//! never creates directories (directories lockstep manages, like `--out DIR`
//! or a cache, are created by their owners). [`check_all`] runs these checks
//! for every output of a command line before any work, and refuses an output
//! that is also one of the command's inputs, or two outputs that are the
//! same file.

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// How many symbolic links an output path may go through (Linux's limit).
const MAX_LINKS: usize = 40;

/// An output named by a flag (`--json FILE`, `--events FILE`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `-`: standard output.
    Stdout,
    Path(PathBuf),
}

impl Target {
    /// `-` is standard output; anything else a path (relative to the
    /// process's working directory).
    pub fn parse(path: &Path) -> Target {
        if path.as_os_str() == "-" {
            Target::Stdout
        } else {
            Target::Path(path.to_path_buf())
        }
    }

    pub fn is_stdout(&self) -> bool {
        *self == Target::Stdout
    }

    /// How messages name it.
    pub fn describe(&self) -> String {
        match self {
            Target::Stdout => "standard output".to_string(),
            Target::Path(p) => p.display().to_string(),
        }
    }
}

/// What writing an output does, decided from its path's file type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    /// Standard output.
    Stdout,
    /// A FIFO or character device, written in place.
    Stream(PathBuf),
    /// A regular file (or none yet) at this path, after following links:
    /// replaced through a temporary file and a rename.
    File(PathBuf),
}

/// Where `target` would be written, or a usage error saying why it cannot be
/// (`flag` names the option in the message). Uses `stat` only.
pub fn resolve(flag: &str, target: &Target) -> Result<Dest> {
    let named = match target {
        Target::Stdout => return Ok(Dest::Stdout),
        Target::Path(p) => p,
    };
    if named.as_os_str().is_empty() {
        return Err(
            Error::usage(format!("{flag} was given an empty path")).hint(format!(
                "give {flag} a file path, or `-` for standard output"
            )),
        );
    }
    let path = follow_links(flag, named)?;
    match std::fs::metadata(&path) {
        Ok(meta) => dest_for_existing(flag, named, path, &meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            check_parent(flag, named, &path)?;
            Ok(Dest::File(path))
        }
        Err(e) => {
            Err(Error::usage(format!("cannot use {flag} {}", named.display())).cause(e.to_string()))
        }
    }
}

/// `named` with every symbolic link in its last component followed (a link
/// to a missing file resolves to that file's path, which is then created).
fn follow_links(flag: &str, named: &Path) -> Result<PathBuf> {
    let mut path = named.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&path).map_err(|e| {
                    Error::usage(format!("cannot read the link {flag} {}", path.display()))
                        .cause(e.to_string())
                })?;
                path = match path.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(Error::usage(format!(
        "{flag} {} goes through too many symbolic links",
        named.display()
    ))
    .hint("point it at a file, not at a loop of links"))
}

fn dest_for_existing(
    flag: &str,
    named: &Path,
    path: PathBuf,
    meta: &std::fs::Metadata,
) -> Result<Dest> {
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(Dest::File(path));
    }
    if kind.is_fifo() || kind.is_char_device() {
        return Ok(Dest::Stream(path));
    }
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(Error::usage(format!("{flag} {} is {what}", named.display()))
        .hint(format!(
            "give {flag} a file path (a new or regular file, a FIFO, /dev/null), or `-` for standard output"
        )))
}

/// A new file needs its directory: lockstep does not create the parents of
/// output files (a typo would otherwise scatter directories).
fn check_parent(flag: &str, named: &Path, path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if parent.is_dir() {
        return Ok(());
    }
    Err(Error::usage(format!(
        "the directory {} of {flag} {} does not exist",
        parent.display(),
        named.display()
    ))
    .hint("create it first: output options never create directories"))
}

/// Checks every output of a command line before any work: each must be
/// writable as described in the module docs, none may be one of `inputs`
/// (a file the command reads), and no two may be the same file. Pairs are
/// (flag, path). Inputs that do not exist are ignored here (their owners
/// report them).
pub fn check_all(outputs: &[(&str, &Path)], inputs: &[(&str, &Path)]) -> Result<Vec<Dest>> {
    let mut dests = Vec::with_capacity(outputs.len());
    let mut seen: Vec<(&str, &Path, FileId)> = Vec::new();
    for &(flag, path) in outputs {
        let dest = resolve(flag, &Target::parse(path))?;
        if let Dest::File(file) = &dest {
            let id = FileId::of(file);
            for &(input_flag, input) in inputs {
                if FileId::of(input).same(&id) {
                    return Err(Error::usage(format!(
                        "{flag} {} is also the input {input_flag} {}",
                        path.display(),
                        input.display()
                    ))
                    .hint(format!(
                        "write {flag} to another file: it would replace its input"
                    )));
                }
            }
            if let Some((other, other_path, _)) = seen.iter().find(|(_, _, seen)| seen.same(&id)) {
                return Err(Error::usage(format!(
                    "{flag} {} and {other} {} are the same file",
                    path.display(),
                    other_path.display()
                ))
                .hint("give each output its own file"));
            }
            seen.push((flag, path, id));
        }
        dests.push(dest);
    }
    Ok(dests)
}

/// Refuses an output file that is, or would be written, inside one of
/// `trees` (flag, directory): directories a command reads or writes whole
/// (a bundle holds exactly the files its manifest lists), where a file it
/// did not put there would replace one of them or be taken for part of it.
/// Both sides are resolved through links ([`crate::fs::real_path`]), so a
/// link to a file inside, or a path through a link to the directory, is
/// refused too. Outputs that cannot be written are left to [`check_all`].
pub fn check_outside(outputs: &[(&str, &Path)], trees: &[(&str, &Path)]) -> Result<()> {
    for &(flag, path) in outputs {
        let Ok(Dest::File(file)) = resolve(flag, &Target::parse(path)) else {
            continue;
        };
        let file = crate::fs::real_path(&file);
        for &(tree_flag, tree) in trees {
            if file.starts_with(crate::fs::real_path(tree)) {
                return Err(Error::usage(format!(
                    "{flag} {} is inside {tree_flag} {}",
                    path.display(),
                    tree.display()
                ))
                .cause(format!(
                    "{tree_flag} names a directory lockstep reads or writes whole: nothing else is written into it"
                ))
                .hint(format!("write {flag} outside {}", tree.display())));
            }
        }
    }
    Ok(())
}

/// What identifies a file: its (device, inode) when it exists, else its
/// absolute path (two outputs not yet created may still collide).
#[derive(Debug)]
enum FileId {
    Inode(u64, u64),
    Path(PathBuf),
}

impl FileId {
    fn of(path: &Path) -> FileId {
        match std::fs::metadata(path) {
            Ok(meta) => FileId::Inode(meta.dev(), meta.ino()),
            Err(_) => FileId::Path(absolute(path)),
        }
    }

    fn same(&self, other: &FileId) -> bool {
        match (self, other) {
            (FileId::Inode(d1, i1), FileId::Inode(d2, i2)) => d1 == d2 && i1 == i2,
            (FileId::Path(a), FileId::Path(b)) => a == b,
            _ => false,
        }
    }
}

/// `path` made absolute through its (existing) parent directory.
fn absolute(path: &Path) -> PathBuf {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(parent), path.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => path.to_path_buf(),
    }
}

/// Writes `bytes` to `target` (see the module docs). `flag` names the
/// option in error messages.
pub fn write_as(flag: &str, target: &Target, bytes: &[u8]) -> Result<()> {
    write_with(flag, target, |out| out.write_all(bytes))
}

/// Writes `target` with `fill`, which gets the open output (a temporary
/// file for a regular file; the stream itself otherwise). The one function
/// that writes every output a flag names.
pub fn write_with(
    flag: &str,
    target: &Target,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let written = match resolve(flag, target)? {
        Dest::Stdout => {
            let mut out = std::io::stdout().lock();
            fill(&mut out)
                .and_then(|()| out.flush())
                .map_err(Error::from)
        }
        Dest::Stream(path) => write_stream(&path, fill),
        Dest::File(path) => replace_file(&path, fill),
    };
    written.map_err(|e| e.context(format!("cannot write {flag} {}", target.describe())))
}

/// Copies the file `source` to `target` as [`write_with`] does (for outputs
/// a tool wrote into lockstep's own work directory first).
pub fn copy_as(flag: &str, target: &Target, source: &Path) -> Result<()> {
    let mut from = fs_err::File::open(source)?;
    write_with(flag, target, |out| std::io::copy(&mut from, out).map(drop))
}

/// Opens `target` for writing as it goes (the `--events` stream): a regular
/// file is created or truncated in place, a FIFO or device opened once.
pub fn open_stream(flag: &str, target: &Target) -> Result<Box<dyn Write + Send>> {
    let open = |path: &Path, create: bool| {
        std::fs::OpenOptions::new()
            .write(true)
            .create(create)
            .truncate(create)
            .open(path)
            .map_err(|e| {
                Error::usage(format!("cannot open {flag} {}", target.describe()))
                    .cause(e.to_string())
            })
    };
    Ok(match resolve(flag, target)? {
        Dest::Stdout => Box::new(std::io::stdout()),
        Dest::Stream(path) => Box::new(open(&path, false)?),
        Dest::File(path) => Box::new(std::io::BufWriter::new(open(&path, true)?)),
    })
}

fn write_stream(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let file = fs_err::OpenOptions::new().write(true).open(path)?;
    let mut out = std::io::BufWriter::new(file);
    fill(&mut out)?;
    out.flush()?;
    Ok(())
}

/// Replaces the regular file `path` through a temporary file beside it,
/// keeping an existing file's permissions; nothing is left behind on error.
fn replace_file(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let keep_mode = std::fs::metadata(path).ok().map(|m| m.permissions().mode());
    let tmp = crate::fs::temp_name(path);
    let written = (|| -> Result<()> {
        let file = fs_err::File::create(&tmp)?;
        if let Some(mode) = keep_mode {
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        let mut out = std::io::BufWriter::new(file);
        fill(&mut out)?;
        out.into_inner()
            .map_err(std::io::IntoInnerError::into_error)?;
        fs_err::rename(&tmp, path)?;
        Ok(())
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The version of every JSON document lockstep writes: a query's `--json`,
/// a runner's `--json FILE`, and each line of `--events` (`"schema"`).
pub const SCHEMA: u32 = 1;

/// The one JSON document writer: `value` (an object without a `schema` key)
/// as pretty JSON with `"schema"` as its first key and a final newline,
/// serialized straight from the value (a status of 30,000 pending commits
/// is written without a copy).
pub fn document(value: &impl serde::Serialize) -> Result<String> {
    #[derive(serde::Serialize)]
    struct Document<'a, T: serde::Serialize> {
        schema: u32,
        #[serde(flatten)]
        value: &'a T,
    }
    let mut text = serde_json::to_string_pretty(&Document {
        schema: SCHEMA,
        value,
    })
    .map_err(|e| Error::failed("cannot encode the output as JSON").cause(e.to_string()))?;
    text.push('\n');
    Ok(text)
}

/// [`document`] written to the output `flag` names (`--json FILE`).
pub fn write_document(flag: &str, target: &Target, value: &impl serde::Serialize) -> Result<()> {
    write_as(flag, target, document(value)?.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &str) -> Target {
        Target::Path(PathBuf::from(s))
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_regular_file_is_replaced_and_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out.json");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_as("--out", &Target::Path(file.clone()), b"new").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"new");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert_eq!(names(dir.path()), ["out.json"]);
    }

    #[test]
    fn a_symlink_writes_its_target_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.csv");
        let link = dir.path().join("link.csv");
        std::fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink("real.csv", &link).unwrap();
        write_as("--out", &Target::Path(link.clone()), b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        // A dangling link creates its target.
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink("made.txt", &dangling).unwrap();
        write_as("--out", &Target::Path(dangling), b"x").unwrap();
        assert_eq!(std::fs::read(dir.path().join("made.txt")).unwrap(), b"x");
        // A loop is an error, not a hang.
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let err = write_as("--out", &Target::Path(a), b"x").unwrap_err();
        assert!(
            err.message.contains("too many symbolic links"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_device_is_written_in_place() {
        write_as("--out", &path("/dev/null"), b"x").unwrap();
        assert_eq!(
            resolve("--json", &path("/dev/null")).unwrap(),
            Dest::Stream("/dev/null".into())
        );
        let err = write_as("--out", &path("/dev/full"), b"x").unwrap_err();
        assert!(err.message.contains("/dev/full"), "{}", err.message);
    }

    #[test]
    fn a_fifo_is_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_as("--out", &Target::Path(fifo.clone()), b"streamed").unwrap();
        assert_eq!(reader.join().unwrap(), b"streamed");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }

    #[test]
    fn bad_outputs_are_usage_errors_that_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let err = resolve("--csv", &Target::Path(dir.path().to_path_buf())).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.message.contains("is a directory"), "{}", err.message);
        let missing = dir.path().join("no/such/out.json");
        let err = write_as("--json", &Target::Path(missing), b"x").unwrap_err();
        assert!(err.message.contains("no/such"), "{}", err.message);
        assert!(err.message.contains("does not exist"), "{}", err.message);
        assert!(names(dir.path()).is_empty(), "nothing created");
        let err = resolve("--json", &path("")).unwrap_err();
        assert!(err.message.contains("empty path"), "{}", err.message);
    }

    #[test]
    fn an_output_that_is_an_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("cmds.txt");
        std::fs::write(&input, "conv").unwrap();
        let err = check_all(&[("--csv", &input)], &[("--commands-file", &input)]).unwrap_err();
        assert!(err.message.contains("is also the input"), "{}", err.message);
        // Through a link too.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        assert!(check_all(&[("--csv", &link)], &[("--commands-file", &input)]).is_err());
        // Two outputs, one file (even before it exists).
        let out = dir.path().join("new.json");
        let rel = dir.path().join(".").join("new.json");
        let err = check_all(&[("--json", &out), ("--csv", &rel)], &[]).unwrap_err();
        assert!(err.message.contains("are the same file"), "{}", err.message);
        assert_eq!(std::fs::read(&input).unwrap(), b"conv");
        let ok = check_all(
            &[("--json", Path::new("-")), ("--csv", &out)],
            &[("--x", &input)],
        );
        assert_eq!(ok.unwrap().len(), 2);
    }

    #[test]
    fn an_output_inside_a_tree_read_whole_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("bundle");
        std::fs::create_dir_all(bundle.join("kernels")).unwrap();
        std::fs::write(bundle.join("bundle.json"), "{}").unwrap();
        let via = dir.path().join("via");
        std::os::unix::fs::symlink(&bundle, &via).unwrap();
        let to_manifest = dir.path().join("out.json");
        std::os::unix::fs::symlink(bundle.join("bundle.json"), &to_manifest).unwrap();
        let trees: [(&str, &Path); 1] = [("--from-bundle", &bundle)];
        for inside in [
            bundle.join("bundle.json"),
            bundle.join("kernels/new.json"),
            bundle.join("kernels/../new.json"),
            via.join("new.json"),
            to_manifest,
        ] {
            let err = check_outside(&[("--json", &inside)], &trees).unwrap_err();
            assert_eq!(err.exit_code(), 2);
            assert!(
                err.message.contains("--json") && err.message.contains("is inside --from-bundle"),
                "{inside:?}: {}",
                err.message
            );
        }
        assert_eq!(std::fs::read(bundle.join("bundle.json")).unwrap(), b"{}");
        let outside = [
            dir.path().join("results.json"),
            bundle.join("../results.json"),
            PathBuf::from("-"),
            PathBuf::from("/dev/null"),
        ];
        for out in &outside {
            check_outside(&[("--json", out)], &trees).unwrap();
        }
    }
}
