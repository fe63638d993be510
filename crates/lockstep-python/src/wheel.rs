//! Wheel file names (PEP 427 / the binary distribution format), project name
//! normalisation (PEP 503) and PEP 440 versions.
//!
//! A wheel's file name is the only thing installers look at before opening
//! it, so lockstep reads names and versions from it and checks them against
//! the manifest; the name is never trusted for anything that touches paths
//! (it must be one plain file name).

use std::io::Read;
use std::path::Path;
use std::str::FromStr;

use lockstep_core::Error;

/// The parts of `name-version(-build)?-python-abi-platform.whl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelName {
    /// The distribution name, normalised ([`normalize`]).
    pub name: String,
    pub version: String,
    pub build: Option<String>,
    pub python: String,
    pub abi: String,
    pub platform: String,
}

impl WheelName {
    /// Parses a wheel file name; `None` when it is not one (or not a plain
    /// file name, or its version is not PEP 440).
    pub fn parse(file_name: &str) -> Option<WheelName> {
        if file_name.len() > 255 || file_name.contains(['/', '\\', '\0']) {
            return None;
        }
        let stem = file_name.strip_suffix(".whl")?;
        let parts: Vec<&str> = stem.split('-').collect();
        let (name, version, build, tags) = match parts.as_slice() {
            [n, v, py, abi, plat] => (*n, *v, None, [*py, *abi, *plat]),
            [n, v, b, py, abi, plat] => (*n, *v, Some(*b), [*py, *abi, *plat]),
            _ => return None,
        };
        let plain = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_.+!".contains(&b))
        };
        if !plain(name) || !plain(version) || !tags.iter().all(|t| plain(t)) {
            return None;
        }
        if build.is_some_and(|b| !plain(b) || !b.as_bytes()[0].is_ascii_digit()) {
            return None;
        }
        parse_version(version).ok()?;
        Some(WheelName {
            name: normalize(name),
            version: version.to_string(),
            build: build.map(String::from),
            python: tags[0].to_string(),
            abi: tags[1].to_string(),
            platform: tags[2].to_string(),
        })
    }

    /// A pure-Python wheel for every Python 3 (`py3-none-any`): built once,
    /// it serves every interpreter of the matrix.
    pub fn is_universal(&self) -> bool {
        self.abi == "none"
            && self.platform == "any"
            && self.python.split('.').all(|t| t == "py3" || t == "py2")
    }
}

/// PEP 503 normalisation: lower case, runs of `-`, `_` and `.` become `-`.
pub fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut separator = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            separator = true;
            continue;
        }
        if separator && !out.is_empty() {
            out.push('-');
        }
        separator = false;
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// A valid distribution name (PEP 508): letters, digits, `-_.`, starting and
/// ending with a letter or digit.
pub fn is_valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 200
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(c))
}

/// A PEP 440 version, or an error saying why not.
pub fn parse_version(text: &str) -> Result<pep440_rs::Version, String> {
    if text.len() > 128 {
        return Err("longer than 128 characters".into());
    }
    pep440_rs::Version::from_str(text).map_err(|e| e.to_string())
}

/// Checks a version given on the command line or in a file, naming `what`.
pub fn check_version(what: &str, text: &str) -> Result<pep440_rs::Version, Error> {
    parse_version(text).map_err(|e| {
        Error::usage(format!("{what} `{text}` is not a PEP 440 version"))
            .cause(e)
            .hint("use a version such as 1.2.0, 1.2.0rc1, 1.2.0.dev0+g1a2b3c4 (https://peps.python.org/pep-0440/)")
    })
}

/// [`check_version`] for a version lockstep writes (stamps into packages,
/// names files with): it must be written in PEP 440's normal form, since
/// the backend would write the normal form into the wheel's name and every
/// cell would then miss the version asked for (`1.0.0-rc1` is `1.0.0rc1`,
/// and stray whitespace is no part of a version).
pub fn check_stamp_version(what: &str, text: &str) -> Result<pep440_rs::Version, Error> {
    let shown = lockstep_core::error::printable_line(text).into_owned();
    let parsed = parse_version(text.trim()).map_err(|e| {
        Error::usage(format!("{what} `{shown}` is not a PEP 440 version"))
            .cause(e)
            .hint("use a version such as 1.2.0, 1.2.0rc1, 1.2.0.dev0+g1a2b3c4 (https://peps.python.org/pep-0440/)")
    })?;
    let normal = parsed.to_string();
    if normal != text {
        return Err(Error::usage(format!(
            "{what} `{shown}` is not written in PEP 440's normal form"
        ))
        .hint(format!("write it as `{normal}`")));
    }
    Ok(parsed)
}

/// The `Version:` of a wheel's `*.dist-info/METADATA` (read at most
/// `max_bytes` of it; the wheel's members are checked first).
pub fn metadata_version(wheel: &std::path::Path, max_bytes: u64) -> Result<String, String> {
    use std::io::Read;
    let file =
        std::fs::File::open(wheel).map_err(|e| format!("cannot open {}: {e}", wheel.display()))?;
    let mut archive = zip::ZipArchive::new(file)
        .map_err(|e| format!("{} is not a wheel (zip): {e}", wheel.display()))?;
    let members =
        lockstep_core::archive::members(&mut archive, wheel, "the wheel", "rebuild the wheel")
            .map_err(|e| e.render())?;
    let metadata = dist_info_member(&members, "METADATA")
        .ok_or_else(|| format!("{} has no .dist-info/METADATA", wheel.display()))?;
    let entry = archive
        .by_index(metadata.index)
        .map_err(|e| format!("cannot read the METADATA of {}: {e}", wheel.display()))?;
    let mut text = String::new();
    entry
        .take(max_bytes)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read the METADATA of {}: {e}", wheel.display()))?;
    text.lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix("Version:"))
        .map(|v| v.trim().to_string())
        .ok_or_else(|| format!("the METADATA of {} has no Version", wheel.display()))
}

/// The program `script` a wheel carries (`*.data/scripts/SCRIPT`), read
/// from the wheel's bytes (at most `max_bytes` of it); `None` when the
/// wheel has none by that name.
pub fn script(wheel: &[u8], script: &str, max_bytes: u64) -> Result<Option<Vec<u8>>, String> {
    use std::io::Read;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(wheel))
        .map_err(|e| format!("not a wheel (zip): {e}"))?;
    let members = lockstep_core::archive::members(
        &mut archive,
        std::path::Path::new("the wheel"),
        "the wheel",
        "rebuild the wheel",
    )
    .map_err(|e| e.render())?;
    let found = members.iter().find(|m| {
        let parts: Vec<_> = m.path.components().collect();
        !m.dir
            && parts.len() == 3
            && parts[0].as_os_str().to_string_lossy().ends_with(".data")
            && parts[1].as_os_str() == "scripts"
            && parts[2].as_os_str() == script
    });
    let Some(member) = found else {
        return Ok(None);
    };
    let entry = archive
        .by_index(member.index)
        .map_err(|e| format!("cannot read {}: {e}", member.path.display()))?;
    let mut bytes = Vec::new();
    entry
        .take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", member.path.display()))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!(
            "{} is larger than {max_bytes} bytes",
            member.path.display()
        ));
    }
    Ok(Some(bytes))
}

/// The one `*.whl` a tool (uv build, auditwheel repair) wrote into `dir`;
/// `tool` names it when there is not exactly one.
pub fn single_wheel_in(dir: &std::path::Path, tool: &str) -> Result<std::path::PathBuf, String> {
    single_file_in(dir, ".whl", "wheels", tool)
}

/// The one file named `*SUFFIX` (`.whl`, `.tar.gz`) that `tool` wrote into
/// `dir`; `what` names them in the error ("wheels", "sdists").
pub fn single_file_in(
    dir: &std::path::Path,
    suffix: &str,
    what: &str,
    tool: &str,
) -> Result<std::path::PathBuf, String> {
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(suffix))
        })
        .collect();
    match files.as_slice() {
        [file] => Ok(file.clone()),
        _ => Err(format!(
            "{tool} wrote {} {what} into {}, expected one",
            files.len(),
            dir.display()
        )),
    }
}

/// The member `*.dist-info/FILE` of a wheel's (checked) members.
fn dist_info_member<'a>(
    members: &'a [lockstep_core::archive::Member],
    file: &str,
) -> Option<&'a lockstep_core::archive::Member> {
    members.iter().find(|m| {
        let parts: Vec<_> = m.path.components().collect();
        parts.len() == 2
            && parts[0]
                .as_os_str()
                .to_string_lossy()
                .ends_with(".dist-info")
            && parts[1].as_os_str() == file
    })
}

/// A copy of `wheel` at `out` with `file` added to its `.dist-info`
/// directory holding `bytes` and listed in RECORD (a member of that name
/// already there is replaced). Every other member is copied as it is
/// (compressed bytes, times, modes), so its RECORD line stays true; the new
/// member gets a fixed time, so the same inputs give the same bytes.
pub fn add_dist_info_file(
    wheel: &std::path::Path,
    out: &std::path::Path,
    file: &str,
    bytes: &[u8],
) -> Result<(), Error> {
    use std::io::{Read, Write};
    let name = wheel.display().to_string();
    let zip_err = |e: zip::result::ZipError| {
        Error::failed(format!("cannot rewrite {name}")).cause(e.to_string())
    };
    let reader = fs_err::File::open(wheel)?;
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(reader)).map_err(zip_err)?;
    let members = lockstep_core::archive::members(&mut archive, wheel, "the wheel", "rebuild it")?;
    let record = dist_info_member(&members, "RECORD").ok_or_else(|| {
        Error::failed(format!("{name} has no .dist-info/RECORD"))
            .hint("the build backend wrote an incomplete wheel: check its build log")
    })?;
    let record_path = record.path.to_string_lossy().replace('\\', "/");
    let dist_info = record_path.trim_end_matches("RECORD").to_string();
    let added = format!("{dist_info}{file}");
    const MAX_RECORD: u64 = 64 << 20;
    let mut record_text = String::new();
    archive
        .by_index(record.index)
        .map_err(zip_err)?
        .take(MAX_RECORD + 1)
        .read_to_string(&mut record_text)
        .map_err(|e| {
            Error::failed(format!("cannot read the RECORD of {name}")).cause(e.to_string())
        })?;
    if record_text.len() as u64 > MAX_RECORD {
        return Err(Error::failed(format!(
            "the RECORD of {name} is larger than lockstep reads ({MAX_RECORD} bytes)"
        )));
    }
    let writer_file = fs_err::File::create(out)?;
    let mut writer = zip::ZipWriter::new(std::io::BufWriter::new(writer_file));
    for m in &members {
        let path = m.path.to_string_lossy().replace('\\', "/");
        if path == record_path || path == added {
            continue;
        }
        let raw = archive.by_index_raw(m.index).map_err(zip_err)?;
        writer.raw_copy_file(raw).map_err(zip_err)?;
    }
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(zip::DateTime::default())
        .unix_permissions(0o644);
    writer.start_file(added.clone(), options).map_err(zip_err)?;
    writer
        .write_all(bytes)
        .map_err(|e| Error::failed(format!("cannot write {out:?}")).cause(e.to_string()))?;
    let digest = record_digest(bytes);
    let mut lines: Vec<&str> = record_text
        .lines()
        .filter(|l| {
            let path = l.split(',').next().unwrap_or_default().trim_matches('"');
            !l.trim().is_empty() && path != record_path && path != added
        })
        .collect();
    let ours = format!("{added},sha256={digest},{}", bytes.len());
    lines.push(&ours);
    let mut text = lines.join("\n");
    text.push_str(&format!("\n{record_path},,\n"));
    writer.start_file(record_path, options).map_err(zip_err)?;
    writer
        .write_all(text.as_bytes())
        .map_err(|e| Error::failed(format!("cannot write {out:?}")).cause(e.to_string()))?;
    writer.finish().map_err(zip_err)?;
    Ok(())
}

/// A file's hash as a wheel's RECORD writes it: sha256, urlsafe base64
/// without padding (PEP 376/427).
pub fn record_digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    record_encoding(&sha2::Sha256::digest(bytes))
}

/// RECORD's encoding of a sha256 (one streamed through a hasher).
pub fn record_encoding(hash: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(hash)
}

/// Whether a wheel's Python tag can run on CPython `major.minor` (`3.11`):
/// `py3`, `py311`, `cp311`, and `cp3X` with the stable ABI (`abi3`) for
/// X <= minor.
pub fn fits_python(wheel: &WheelName, python: &str) -> bool {
    let Some((major, minor)) = python.split_once('.').and_then(|(a, b)| {
        Some((
            a.parse::<u32>().ok()?,
            b.split('.').next()?.parse::<u32>().ok()?,
        ))
    }) else {
        return false;
    };
    wheel.python.split('.').any(|tag| {
        let Some((kind, digits)) = tag
            .strip_prefix("cp")
            .map(|d| ("cp", d))
            .or_else(|| tag.strip_prefix("py").map(|d| ("py", d)))
        else {
            return false;
        };
        if digits == major.to_string() {
            return kind == "py";
        }
        let Some(tag_minor) = digits
            .strip_prefix(&major.to_string())
            .and_then(|m| m.parse::<u32>().ok())
        else {
            return false;
        };
        tag_minor == minor || (wheel.abi == "abi3" && tag_minor <= minor)
    })
}

/// The most bytes read from one member of a wheel (METADATA, entry points).
const MAX_METADATA_BYTES: u64 = 16 << 20;

/// What a wheel says about itself.
#[derive(Debug, Clone)]
pub struct WheelFacts {
    pub name: WheelName,
    pub metadata: Vec<u8>,
    pub requires_python: Option<String>,
    pub console_scripts: Vec<String>,
}

/// Reads a wheel's METADATA (and console scripts), checking that its name
/// and version agree with the file name.
pub fn wheel_facts(path: &Path) -> Result<WheelFacts, Error> {
    let file_name = lockstep_core::fs::file_name(path);
    let name = WheelName::parse(&file_name)
        .ok_or_else(|| Error::usage(format!("{file_name} is not a wheel file name")))?;
    let file = fs_err::File::open(path)?;
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| {
        Error::failed(format!("{file_name} is not a zip archive")).cause(e.to_string())
    })?;
    // Installers differ on unsafe members (uv installs them, pip refuses):
    // the store holds none.
    lockstep_core::archive::members(
        &mut archive,
        path,
        "the wheel",
        "rebuild the wheel: nothing was published, promoted or indexed",
    )?;
    let dist_info = find_dist_info(&mut archive, &name).ok_or_else(|| {
        Error::failed(format!(
            "{file_name} has no .dist-info/METADATA for its name and version"
        ))
    })?;
    let metadata = read_member(&mut archive, &format!("{dist_info}/METADATA"), &file_name)?;
    let text = String::from_utf8_lossy(&metadata).into_owned();
    let header = |key: &str| {
        text.lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
    };
    let meta_name = header("Name:").unwrap_or_default();
    let meta_version = header("Version:").unwrap_or_default();
    let versions_agree = parse_version(&meta_version)
        .ok()
        .zip(parse_version(&name.version).ok())
        .is_some_and(|(a, b)| a == b);
    if normalize(&meta_name) != normalize(&name.name) || !versions_agree {
        return Err(Error::usage(format!(
            "{file_name}: its file name and METADATA disagree (METADATA says {meta_name} {meta_version})"
        ))
        .hint("rebuild the wheel; installers refuse or mis-report such a wheel"));
    }
    let console_scripts = read_member(
        &mut archive,
        &format!("{dist_info}/entry_points.txt"),
        &file_name,
    )
    .map(|bytes| console_scripts(&String::from_utf8_lossy(&bytes)))
    .unwrap_or_default();
    Ok(WheelFacts {
        requires_python: header("Requires-Python:"),
        name,
        metadata,
        console_scripts,
    })
}

fn find_dist_info<R: Read + std::io::Seek>(
    archive: &mut zip::ZipArchive<R>,
    name: &WheelName,
) -> Option<String> {
    let want_name = normalize(&name.name);
    archive.file_names().find_map(|member| {
        let member = member.ok()?;
        let dir = member.strip_suffix("/METADATA")?;
        let stem = dir.strip_suffix(".dist-info")?;
        if dir.contains('/') {
            return None;
        }
        let (n, _v) = stem.rsplit_once('-')?;
        (normalize(n) == want_name).then(|| dir.to_string())
    })
}

fn read_member<R: Read + std::io::Seek>(
    archive: &mut zip::ZipArchive<R>,
    member: &str,
    file_name: &str,
) -> Result<Vec<u8>, Error> {
    let entry = archive
        .by_name(member)
        .map_err(|e| Error::failed(format!("{file_name} has no {member}")).cause(e.to_string()))?;
    let mut bytes = Vec::new();
    entry
        .take(MAX_METADATA_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            Error::failed(format!("cannot read {member} from {file_name}")).cause(e.to_string())
        })?;
    if bytes.len() as u64 > MAX_METADATA_BYTES {
        return Err(Error::failed(format!(
            "{member} in {file_name} is larger than {MAX_METADATA_BYTES} bytes"
        )));
    }
    Ok(bytes)
}

/// The names in `[console_scripts]` of an entry_points.txt.
fn console_scripts(text: &str) -> Vec<String> {
    let mut in_section = false;
    let mut names = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_section = line == "[console_scripts]";
        } else if in_section {
            if let Some((name, _)) = line.split_once('=') {
                names.push(name.trim().to_string());
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_stamped_version_must_be_in_normal_form() {
        for ok in [
            "1.0.0",
            "1.0.0rc1",
            "3.14.0.dev20261127+g1a2b3c4",
            "2.1.post3",
        ] {
            check_stamp_version("--version", ok).unwrap();
        }
        for (bad, normal) in [
            ("1.0.0-rc1", Some("1.0.0rc1")),
            ("1.0.0rc1 ", Some("1.0.0rc1")),
            ("1.0.0\n", Some("1.0.0")),
            ("1.0RC1", Some("1.0rc1")),
            ("v1.0", Some("1.0")),
            ("one", None),
            ("", None),
        ] {
            let err = check_stamp_version("--version", bad).unwrap_err();
            assert_eq!(err.kind, lockstep_core::ErrorKind::Usage, "{bad:?}");
            assert!(!err.message.contains('\n'), "{}", err.message);
            if let Some(normal) = normal {
                assert!(
                    err.hint.as_deref().unwrap_or("").contains(normal),
                    "{bad:?}: {err:?}"
                );
            }
        }
    }

    fn tiny_wheel(path: &std::path::Path) {
        use std::io::Write;
        let file = std::fs::File::create(path).expect("create");
        let mut zip = zip::ZipWriter::new(file);
        let options = zip::write::SimpleFileOptions::default();
        for (name, text) in [
            ("a/__init__.py", "X = 1\n"),
            ("a-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: a\nVersion: 1.0\n"),
            ("a-1.0.dist-info/RECORD", "a/__init__.py,sha256=abc,6\na-1.0.dist-info/METADATA,sha256=def,44\na-1.0.dist-info/RECORD,,\n"),
        ] {
            zip.start_file(name, options).expect("start");
            zip.write_all(text.as_bytes()).expect("write");
        }
        zip.finish().expect("finish");
    }

    #[test]
    fn a_dist_info_file_is_added_and_recorded_deterministically() {
        use std::io::Read;
        let dir = tempfile::tempdir().expect("tempdir");
        let wheel = dir.path().join("a-1.0-py3-none-any.whl");
        tiny_wheel(&wheel);
        let (one, two, three) = (
            dir.path().join("1.whl"),
            dir.path().join("2.whl"),
            dir.path().join("3.whl"),
        );
        add_dist_info_file(&wheel, &one, "lockstep_build.json", b"{}").expect("added");
        add_dist_info_file(&wheel, &two, "lockstep_build.json", b"{}").expect("added again");
        assert_eq!(
            std::fs::read(&one).expect("1"),
            std::fs::read(&two).expect("2")
        );
        // Replacing it keeps one member and one RECORD line.
        add_dist_info_file(&one, &three, "lockstep_build.json", b"{\"a\":1}").expect("replaced");
        let mut zip =
            zip::ZipArchive::new(std::fs::File::open(&three).expect("open")).expect("zip");
        let mut record = String::new();
        zip.by_name("a-1.0.dist-info/RECORD")
            .expect("RECORD")
            .read_to_string(&mut record)
            .expect("read");
        let ours: Vec<&str> = record
            .lines()
            .filter(|l| l.contains("lockstep_build.json"))
            .collect();
        assert_eq!(ours, vec!["a-1.0.dist-info/lockstep_build.json,sha256=AVq9f1zFei3ZS3WQ8ErYCEJzkF7jPsXOvq5iJ2qX-GI,7"], "{record}");
        assert!(record.ends_with("a-1.0.dist-info/RECORD,,\n"), "{record}");
        assert!(record.contains("a/__init__.py,sha256=abc,6"), "{record}");
        let mut text = String::new();
        zip.by_name("a-1.0.dist-info/lockstep_build.json")
            .expect("added")
            .read_to_string(&mut text)
            .expect("read");
        assert_eq!(text, "{\"a\":1}");
        assert_eq!(zip.len(), 4);
    }

    use super::*;

    #[test]
    fn parses_wheel_names() {
        let w = WheelName::parse("iree_base_compiler-3.13.0-cp311-cp311-manylinux_2_28_x86_64.whl")
            .expect("valid");
        assert_eq!(w.name, "iree-base-compiler");
        assert_eq!(w.version, "3.13.0");
        assert_eq!(w.python, "cp311");
        assert!(!w.is_universal());
        let w = WheelName::parse("demo_pure-1.0.0rc2-1-py3-none-any.whl").expect("valid");
        assert_eq!(w.build.as_deref(), Some("1"));
        assert!(w.is_universal());
        for bad in [
            "x.whl",
            "a-1.0-py3-none.whl",
            "a-notaversion-py3-none-any.whl",
            "../a-1.0-py3-none-any.whl",
            "a-1.0-py3-none-any.zip",
        ] {
            assert!(WheelName::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn normalises_names() {
        assert_eq!(normalize("Demo__Compiler.x"), "demo-compiler-x");
        assert_eq!(normalize("iree-base-runtime"), "iree-base-runtime");
        assert!(is_valid_name("demo-compiler"));
        assert!(!is_valid_name("-demo"));
        assert!(!is_valid_name("de mo"));
    }

    #[test]
    fn python_tags() {
        let w = |n: &str| WheelName::parse(n).expect("valid");
        assert!(fits_python(&w("a-1-cp311-cp311-linux_x86_64.whl"), "3.11"));
        assert!(!fits_python(&w("a-1-cp311-cp311-linux_x86_64.whl"), "3.12"));
        assert!(fits_python(&w("a-1-cp38-abi3-linux_x86_64.whl"), "3.12"));
        assert!(fits_python(&w("a-1-py3-none-any.whl"), "3.13"));
        assert!(!fits_python(&w("a-1-py3-none-any.whl"), "x"));
    }

    proptest::proptest! {
        #[test]
        fn any_name_parses_or_not_without_panic(name in "\\PC{0,80}") {
            if let Some(w) = WheelName::parse(&name) {
                proptest::prop_assert!(!w.name.contains('/'));
            }
            let _ = normalize(&name);
            let _ = parse_version(&name);
        }
    }
}
