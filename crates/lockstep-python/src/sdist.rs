//! Source distributions (`NAME-VERSION.tar.gz`, PEP 625) as lockstep builds,
//! lists and releases them next to the wheels of a set.
//!
//! An sdist is a gzip'd tar holding one top directory `NAME-VERSION/` with
//! `PKG-INFO` (its core metadata) and the package's sources. Every member is
//! checked before anything is read out of it, as wheels are
//! (`lockstep_core::archive`): no `..`, no absolute path, no link, no
//! device, nothing outside the top directory, at most
//! [`lockstep_core::archive::MAX_MEMBERS`] members. A tar is read front to
//! back, so [`visit`] streams each member to its caller (promote rewrites
//! an sdist member by member without holding it in memory).

use std::io::Read;
use std::path::Path;

use lockstep_core::Error;

use crate::wheel::{normalize, parse_version};

/// The largest `PKG-INFO` read.
const MAX_PKG_INFO: u64 = 16 << 20;

/// The most bytes an sdist's members may hold together once unpacked
/// (a gzip bomb is refused, not streamed into a promoted copy).
pub const MAX_UNPACKED: u64 = 8 << 30;

/// A parsed sdist file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdistName {
    /// The distribution name, normalised.
    pub name: String,
    pub version: String,
    /// The file name without `.tar.gz`: the top directory inside.
    pub stem: String,
}

impl SdistName {
    /// Parses `NAME-VERSION.tar.gz`; `None` when it is not one (not a plain
    /// file name, a name with a `-` in it, or a version that is not PEP 440).
    pub fn parse(file_name: &str) -> Option<SdistName> {
        if file_name.len() > 255 || file_name.contains(['/', '\\', '\0']) {
            return None;
        }
        let stem = file_name.strip_suffix(".tar.gz")?;
        let (name, version) = stem.split_once('-')?;
        let plain = |s: &str, extra: &[u8]| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
        };
        if !plain(name, b"_.") || !plain(version, b"_.+!") || !crate::wheel::is_valid_name(name) {
            return None;
        }
        parse_version(version).ok()?;
        Some(SdistName {
            name: normalize(name),
            version: version.to_string(),
            stem: stem.to_string(),
        })
    }

    /// Whether `file_name` ends like an sdist (so a listing can tell an
    /// sdist it cannot read from a file that is none of its business).
    pub fn looks_like(file_name: &str) -> bool {
        file_name.ends_with(".tar.gz")
    }
}

/// One checked member handed to [`visit`]'s callback.
pub struct Member<'a> {
    /// Its path inside the archive (`NAME-VERSION/src/x.py`).
    pub path: String,
    /// Its tar header (mode, mtime, size, type).
    pub header: &'a tar::Header,
    pub is_dir: bool,
}

/// Calls `each` with every member of the sdist `file` in order, after
/// checking it; the first unsafe member is an error naming it.
pub fn visit(
    file: &Path,
    mut each: impl FnMut(Member<'_>, &mut dyn Read) -> Result<(), Error>,
) -> Result<(), Error> {
    let file_name = file_name(file);
    let name = SdistName::parse(&file_name).ok_or_else(|| {
        Error::usage(format!("{file_name} is not an sdist file name"))
            .cause("an sdist is NAME-VERSION.tar.gz with a PEP 440 version (PEP 625)")
    })?;
    let reader = fs_err::File::open(file)?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(std::io::BufReader::new(
        reader,
    )));
    let damaged = |e: std::io::Error| {
        Error::failed(format!("{file_name} is not a readable .tar.gz")).cause(e.to_string())
    };
    let entries = archive.entries().map_err(damaged)?;
    let top = format!("{}/", name.stem);
    let mut seen = std::collections::HashSet::new();
    let mut unpacked: u64 = 0;
    for entry in entries {
        let mut entry = entry.map_err(damaged)?;
        unpacked = unpacked.saturating_add(entry.header().size().unwrap_or(u64::MAX));
        if unpacked > MAX_UNPACKED {
            return Err(Error::failed(format!(
                "{file_name} unpacks to more than {} GiB",
                MAX_UNPACKED >> 30
            ))
            .hint("an sdist holds sources, not data: rebuild it without the large files"));
        }
        if seen.len() >= lockstep_core::archive::MAX_MEMBERS {
            return Err(Error::failed(format!(
                "{file_name} holds more than {} members",
                lockstep_core::archive::MAX_MEMBERS
            )));
        }
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let refuse = |why: &str| {
            Error::failed(format!("the sdist's entry `{}` {why}", raw.escape_debug()))
                .cause(format!("in {}", file.display()))
                .hint("rebuild the sdist with `lockstep pkg build`: nothing was published, promoted or indexed")
        };
        let kind = entry.header().entry_type();
        let is_dir = kind.is_dir();
        if !(kind.is_file() || is_dir) {
            return Err(refuse(
                "is not a regular file or directory (links are refused)",
            ));
        }
        let path = lockstep_core::archive::safe_relative_path(&raw).map_err(&refuse)?;
        let path = path.to_string_lossy().into_owned();
        let inside = format!("{path}/").starts_with(&top);
        if !inside {
            return Err(refuse(&format!("is outside the top directory {top}")));
        }
        if !seen.insert(path.to_lowercase()) {
            return Err(refuse("appears twice"));
        }
        let header = entry.header().clone();
        each(
            Member {
                path,
                header: &header,
                is_dir,
            },
            &mut entry,
        )?;
    }
    Ok(())
}

/// The sdist's `NAME-VERSION/PKG-INFO` (every member checked on the way).
pub fn pkg_info(file: &Path) -> Result<Vec<u8>, Error> {
    let file_name = file_name(file);
    let want = SdistName::parse(&file_name)
        .map(|n| format!("{}/PKG-INFO", n.stem))
        .unwrap_or_default();
    let mut found = None;
    visit(file, |member, reader| {
        if member.path == want {
            let mut bytes = Vec::new();
            reader
                .take(MAX_PKG_INFO + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| Error::failed(format!("cannot read {want}")).cause(e.to_string()))?;
            if bytes.len() as u64 > MAX_PKG_INFO {
                return Err(Error::failed(format!(
                    "{file_name}: PKG-INFO is larger than {} MiB",
                    MAX_PKG_INFO >> 20
                )));
            }
            found = Some(bytes);
        }
        Ok(())
    })?;
    found.ok_or_else(|| {
        Error::failed(format!("{file_name} has no {want}"))
            .hint("an sdist's core metadata is NAME-VERSION/PKG-INFO; rebuild it")
    })
}

/// The `Version:` of the sdist's PKG-INFO.
pub fn metadata_version(file: &Path) -> Result<String, String> {
    let info = pkg_info(file).map_err(|e| e.render())?;
    metadata_header(&String::from_utf8_lossy(&info), "Version:")
        .map(String::from)
        .ok_or_else(|| format!("the PKG-INFO of {} has no Version", file.display()))
}

/// The value of `key` (`Version:`) in core metadata text (its header only).
pub fn metadata_header<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix(key).map(str::trim))
}

fn file_name(file: &Path) -> String {
    lockstep_core::fs::file_name(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sdist(dir: &Path, name: &str, members: &[(&str, &[u8])]) -> std::path::PathBuf {
        let path = dir.join(name);
        let out = std::fs::File::create(&path).unwrap();
        let gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
        let mut builder = tar::Builder::new(gz);
        for (member, bytes) in members {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            // append_data refuses `..`; write the raw name for the hostile cases.
            let raw = member.as_bytes();
            header.as_old_mut().name[..raw.len()].copy_from_slice(raw);
            header.set_cksum();
            builder.append(&header, *bytes).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap();
        path
    }

    #[test]
    fn names_parse() {
        let n = SdistName::parse("demo_runtime-1.2.0rc1.tar.gz").unwrap();
        assert_eq!(
            (n.name.as_str(), n.version.as_str(), n.stem.as_str()),
            ("demo-runtime", "1.2.0rc1", "demo_runtime-1.2.0rc1")
        );
        for bad in [
            "demo-runtime-1.0.tar.gz",
            "demo-1.0.zip",
            "demo-x!y.tar.gz",
            "-1.0.tar.gz",
            "a/b-1.0.tar.gz",
            "demo.tar.gz",
        ] {
            assert!(SdistName::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn pkg_info_is_read_and_unsafe_members_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let good = sdist(
            dir.path(),
            "demo-1.0.tar.gz",
            &[
                ("demo-1.0/PKG-INFO", b"Name: demo\nVersion: 1.0\n\n"),
                ("demo-1.0/x.py", b"x = 1\n"),
            ],
        );
        let info = pkg_info(&good).unwrap();
        assert_eq!(
            metadata_header(&String::from_utf8_lossy(&info), "Version:"),
            Some("1.0")
        );
        for (name, member) in [
            ("demo-2.0.tar.gz", "demo-2.0/../../evil"),
            ("demo-3.0.tar.gz", "other/PKG-INFO"),
        ] {
            let bad = sdist(dir.path(), name, &[(member, b"x")]);
            let err = pkg_info(&bad).unwrap_err();
            assert!(err.message.contains("entry"), "{}", err.render());
        }
        let missing = sdist(dir.path(), "demo-4.0.tar.gz", &[("demo-4.0/x.py", b"")]);
        assert!(pkg_info(&missing)
            .unwrap_err()
            .message
            .contains("has no demo-4.0/PKG-INFO"));
        // A member claiming more than the bound is refused from its header.
        let path = dir.path().join("demo-6.0.tar.gz");
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::default(),
        );
        let mut builder = tar::Builder::new(gz);
        let mut header = tar::Header::new_gnu();
        header.set_path("demo-6.0/big").unwrap();
        header.set_size(MAX_UNPACKED + 1);
        header.set_cksum();
        builder.append(&header, std::io::empty()).unwrap_or(());
        let _ = builder.into_inner().map(|gz| gz.finish());
        let err = pkg_info(&path).unwrap_err();
        assert!(
            err.message.contains("unpacks to more than"),
            "{}",
            err.render()
        );
        std::fs::write(dir.path().join("demo-5.0.tar.gz"), b"not gzip").unwrap();
        assert!(pkg_info(&dir.path().join("demo-5.0.tar.gz")).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_name_parses_or_not_without_panic(name in "[a-zA-Z0-9._+!-]{0,40}(\\.tar\\.gz)?") {
            if let Some(parsed) = SdistName::parse(&name) {
                proptest::prop_assert!(name.starts_with(&parsed.stem));
                proptest::prop_assert!(parse_version(&parsed.version).is_ok());
            }
        }
    }
}
