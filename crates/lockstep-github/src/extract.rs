//! Extracting an artifact's zip without trusting it.
//!
//! An artifact is whatever a workflow uploaded, and a zip can name
//! `../../.bashrc`, `/etc/x`, a symlink out of the tree, the same path twice,
//! a million entries or a few kilobytes that inflate to terabytes. Every
//! entry is checked before anything is written; bytes are counted as they
//! are inflated (not taken from the header, which can lie); everything goes
//! into a staging directory beside the destination, renamed into place only
//! when the whole archive extracted, so a refused archive leaves nothing.

use std::io::{Read, Write};
use std::path::Path;

use lockstep_core::Error;

/// The most entries an archive may hold.
pub use lockstep_core::archive::MAX_MEMBERS as MAX_ENTRIES;

/// Extracts `zip` into `dest` (which must not exist), refusing unsafe or
/// oversized archives with an error naming the entry; nothing is left at
/// `dest` unless every entry extracted.
pub fn extract_zip(zip: &Path, dest: &Path, max_bytes: u64) -> Result<(), Error> {
    if dest.symlink_metadata().is_ok() {
        return Err(Error::usage(format!("{} already exists", dest.display()))
            .hint("extract into a new directory"));
    }
    let file = fs_err::File::open(zip)?;
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| {
        Error::failed(format!("{} is not a zip archive", zip.display())).cause(e.to_string())
    })?;
    let entries = lockstep_core::archive::members(
        &mut archive,
        zip,
        "the artifact",
        "nothing was extracted; the artifact was not made by `lockstep pkg build`, or was tampered with",
    )?;
    // A new directory beside `dest`, created fresh: nothing planted there in
    // advance (a symlink in a shared directory) can be written through.
    let staging = lockstep_core::fs::StagedDir::beside(dest)?;
    write_entries(&mut archive, &entries, staging.path(), max_bytes, zip)?;
    staging.install_new()
}

fn write_entries<R: Read + std::io::Seek>(
    archive: &mut zip::ZipArchive<R>,
    entries: &[lockstep_core::archive::Member],
    staging: &Path,
    max_bytes: u64,
    zip: &Path,
) -> Result<(), Error> {
    let mut total: u64 = 0;
    for entry in entries {
        let target = staging.join(&entry.path);
        if entry.dir {
            fs_err::create_dir_all(&target)?;
            continue;
        }
        if let Some(parent) = target.parent() {
            fs_err::create_dir_all(parent)?;
        }
        let mut file = archive.by_index(entry.index).map_err(|e| {
            Error::failed(format!(
                "cannot read `{}` from {}",
                entry.path.display(),
                zip.display()
            ))
            .cause(e.to_string())
        })?;
        let mut out = fs_err::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&target)?;
        let budget = max_bytes.saturating_sub(total);
        // One byte more than the budget tells "exactly full" from "too big".
        let copied = std::io::copy(&mut (&mut file).take(budget.saturating_add(1)), &mut out)
            .map_err(|e| {
                Error::failed(format!(
                    "cannot extract `{}` from {}",
                    entry.path.display(),
                    zip.display()
                ))
                .cause(e.to_string())
            })?;
        if copied > budget {
            return Err(Error::failed(format!(
                "{} inflates to more than {max_bytes} bytes (at `{}`)",
                zip.display(),
                entry.path.display()
            ))
            .hint("nothing was extracted"));
        }
        total += copied;
        out.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::path::PathBuf;
    use zip::write::SimpleFileOptions;

    enum Item<'a> {
        File(&'a str, &'a [u8]),
        Dir(&'a str),
        Link(&'a str, &'a str),
    }

    fn make_zip(dir: &Path, items: &[Item]) -> PathBuf {
        let path = dir.join("a.zip");
        let mut w = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let opts =
            SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for item in items {
            match item {
                Item::File(name, data) => {
                    w.start_file(*name, opts).unwrap();
                    w.write_all(data).unwrap();
                }
                Item::Dir(name) => w.add_directory(*name, opts).unwrap(),
                Item::Link(name, target) => w.add_symlink(*name, *target, opts).unwrap(),
            }
        }
        w.finish().unwrap();
        path
    }

    #[test]
    fn extracts_files_and_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        let zip = make_zip(
            tmp.path(),
            &[
                Item::Dir("asserts/"),
                Item::File("pylock.toml", b"x"),
                Item::File("asserts/a.whl", b"wheel"),
            ],
        );
        let dest = tmp.path().join("out");
        extract_zip(&zip, &dest, 1 << 20).unwrap();
        assert_eq!(std::fs::read(dest.join("asserts/a.whl")).unwrap(), b"wheel");
        assert_eq!(std::fs::read(dest.join("pylock.toml")).unwrap(), b"x");
    }

    fn refused(items: &[Item], max: u64) -> String {
        let tmp = tempfile::tempdir().unwrap();
        let zip = make_zip(tmp.path(), items);
        let dest = tmp.path().join("out");
        let err = extract_zip(&zip, &dest, max).unwrap_err().render();
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("a.zip")], "{err}");
        err
    }

    #[test]
    fn refuses_unsafe_entries_and_leaves_nothing() {
        let e = refused(
            &[Item::File("ok", b"1"), Item::File("../evil", b"x")],
            1 << 20,
        );
        assert!(e.contains("`../evil` climbs out"), "{e}");
        let e = refused(&[Item::File("/etc/evil", b"x")], 1 << 20);
        assert!(e.contains("absolute path"), "{e}");
        let e = refused(
            &[Item::File("ok", b"1"), Item::Link("link", "/etc/passwd")],
            1 << 20,
        );
        assert!(e.contains("`link` is a symlink"), "{e}");
        let e = refused(&[Item::File("a", b"1"), Item::File("A", b"2")], 1 << 20);
        assert!(e.contains("appears twice"), "{e}");
        let e = refused(&[Item::File("big", &[0u8; 4096])], 1000);
        assert!(e.contains("more than 1000 bytes"), "{e}");
    }

    #[test]
    fn an_existing_destination_is_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let zip = make_zip(tmp.path(), &[Item::File("f", b"1")]);
        let dest = tmp.path().join("out");
        std::fs::create_dir(&dest).unwrap();
        std::fs::write(dest.join("mine"), b"keep").unwrap();
        assert!(extract_zip(&zip, &dest, 1 << 20).is_err());
        assert_eq!(std::fs::read(dest.join("mine")).unwrap(), b"keep");
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let tmp = tempfile::tempdir().unwrap();
            let zip = tmp.path().join("x.zip");
            std::fs::write(&zip, &bytes).unwrap();
            let _ = extract_zip(&zip, &tmp.path().join("out"), 1 << 16);
        }

    }
}
