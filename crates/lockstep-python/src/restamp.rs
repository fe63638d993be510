//! A built wheel or sdist at another version, without rebuilding it: what
//! `release promote` does to a candidate's files, and what `pkg build` does
//! to a wheel whose build cannot take a version (one hard-coded in
//! setup.py).
//!
//! A wheel is rewritten: its file name, its `.dist-info` (and `.data`)
//! directory, the `Version:` of METADATA, and RECORD with fresh hashes;
//! stray `*.egg-info` members are dropped (they made a promoted wheel report
//! itself as the rc in `pip freeze`). Every other member is copied
//! byte-identical (its compressed bytes, not re-deflated). Text files that
//! still hold the old version (a `version.py` stamped at build time) are
//! listed, and rewritten when asked. Timestamps and permissions come from
//! the original members, so rewriting twice gives the same bytes.
//!
//! An sdist is rewritten the same way: its top directory renamed, the
//! `Version:` of its PKG-INFO replaced, stamped files listed (and rewritten
//! when asked); the output is gzip'd without a timestamp.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use lockstep_core::Error;
use sha2::{Digest, Sha256};

use crate::sdist::SdistName;
use crate::wheel::{record_digest, record_encoding, WheelName};

/// The largest member rewritten in memory (METADATA, RECORD, stamped text).
const MAX_TEXT_MEMBER: u64 = 64 << 20;

/// Rewrites one wheel into `out_dir`; returns (path, stamped members, dropped members).
pub fn rewrite_wheel(
    wheel: &Path,
    out_dir: &Path,
    from: &str,
    to: &str,
    rewrite_stamps: bool,
) -> Result<(PathBuf, Vec<String>, Vec<String>), Error> {
    let file_name = lockstep_core::fs::file_name(wheel);
    let name = WheelName::parse(&file_name)
        .ok_or_else(|| Error::usage(format!("{file_name} is not a wheel file name")))?;
    if name.version != from {
        return Err(Error::usage(format!("{file_name} is not version {from}")));
    }
    let new_name = file_name.replacen(&format!("-{from}-"), &format!("-{to}-"), 1);
    // The dist-info directory is named like the file: the escaped name as written there.
    let raw_name = file_name.split('-').next().unwrap_or_default();
    let old_info = format!("{raw_name}-{from}.dist-info/");
    let new_info = format!("{raw_name}-{to}.dist-info/");
    let old_data = format!("{raw_name}-{from}.data/");
    let new_data = format!("{raw_name}-{to}.data/");
    let reader = fs_err::File::open(wheel)?;
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(reader)).map_err(|e| {
        Error::failed(format!("{file_name} is not a zip archive")).cause(e.to_string())
    })?;
    lockstep_core::archive::members(
        &mut archive,
        wheel,
        "the wheel",
        "a wheel whose members would escape its directory is never rewritten: rebuild it",
    )?;
    let out_path = out_dir.join(&new_name);
    let out_file = fs_err::File::create(&out_path)?;
    let mut writer = zip::ZipWriter::new(std::io::BufWriter::new(out_file));
    let mut record: Vec<(String, String, u64)> = Vec::new();
    let mut stamps = Vec::new();
    let mut dropped = Vec::new();
    let mut record_name = None;
    let zip_err = |e: zip::result::ZipError| {
        Error::failed(format!("cannot rewrite {file_name}")).cause(e.to_string())
    };
    for i in 0..archive.len() {
        let entry = archive.by_index(i).map_err(zip_err)?;
        let member = entry.name().map_err(zip_err)?.into_owned();
        if member.split('/').any(|part| part.ends_with(".egg-info")) {
            dropped.push(member);
            continue;
        }
        let top = member.split('/').next().unwrap_or_default();
        if (top.ends_with(".dist-info") || top.ends_with(".data")) && member.contains('/') {
            let ours = format!("{top}/") == old_info || format!("{top}/") == old_data;
            if !ours {
                return Err(Error::usage(format!("{file_name} has a foreign `{top}` directory"))
                    .hint("a wheel holds one .dist-info (and .data) directory, named for its own name and version"));
            }
        }
        let renamed = if let Some(rest) = member.strip_prefix(&old_info) {
            format!("{new_info}{rest}")
        } else if let Some(rest) = member.strip_prefix(&old_data) {
            format!("{new_data}{rest}")
        } else {
            member.clone()
        };
        if renamed == format!("{new_info}RECORD") {
            record_name = Some((renamed, options_of(&entry)));
            continue;
        }
        if entry.is_dir() {
            writer
                .add_directory(renamed, options_of(&entry))
                .map_err(zip_err)?;
            continue;
        }
        let is_metadata = renamed == format!("{new_info}METADATA");
        let may_be_text = entry.size() <= MAX_TEXT_MEMBER;
        if is_metadata || may_be_text {
            let options = options_of(&entry);
            let mut bytes = Vec::new();
            entry
                .take(MAX_TEXT_MEMBER + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| Error::failed(e.to_string()))?;
            let mut changed = None;
            if is_metadata {
                changed = Some(rewrite_metadata(&bytes, from, to, &file_name)?);
            } else if let Ok(text) = std::str::from_utf8(&bytes) {
                if contains_version(text, from) {
                    stamps.push(renamed.clone());
                    if rewrite_stamps {
                        changed = Some(replace_version(text, from, to).into_bytes());
                    }
                }
            }
            match changed {
                Some(new_bytes) => {
                    writer
                        .start_file(renamed.clone(), options)
                        .map_err(zip_err)?;
                    writer
                        .write_all(&new_bytes)
                        .map_err(|e| Error::failed(e.to_string()))?;
                    record.push((renamed, record_digest(&new_bytes), new_bytes.len() as u64));
                }
                None => {
                    record.push((renamed.clone(), record_digest(&bytes), bytes.len() as u64));
                    drop(bytes);
                    let raw = archive.by_index_raw(i).map_err(zip_err)?;
                    writer.raw_copy_file_rename(raw, renamed).map_err(zip_err)?;
                }
            }
            continue;
        }
        // Large members: hash while reading, then copy the compressed bytes as they are.
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut reader = entry;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = reader
                .read(&mut buf)
                .map_err(|e| Error::failed(e.to_string()))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            size += n as u64;
        }
        drop(reader);
        record.push((renamed.clone(), record_encoding(&hasher.finalize()), size));
        let raw = archive.by_index_raw(i).map_err(zip_err)?;
        writer.raw_copy_file_rename(raw, renamed).map_err(zip_err)?;
    }
    let (record_member, record_options) =
        record_name.ok_or_else(|| Error::failed(format!("{file_name} has no {old_info}RECORD")))?;
    let mut text = String::new();
    for (path, hash, size) in &record {
        text.push_str(&format!("{},sha256={hash},{size}\n", csv_field(path)));
    }
    text.push_str(&format!("{},,\n", csv_field(&record_member)));
    writer
        .start_file(record_member, record_options)
        .map_err(zip_err)?;
    writer
        .write_all(text.as_bytes())
        .map_err(|e| Error::failed(e.to_string()))?;
    writer.finish().map_err(zip_err)?;
    Ok((out_path, stamps, dropped))
}

/// Rewrites one sdist into `out_dir`; returns (path, stamped members, no
/// dropped members).
pub fn rewrite_sdist(
    sdist: &Path,
    out_dir: &Path,
    from: &str,
    to: &str,
    rewrite_stamps: bool,
) -> Result<(PathBuf, Vec<String>, Vec<String>), Error> {
    let file_name = lockstep_core::fs::file_name(sdist);
    let name = SdistName::parse(&file_name)
        .ok_or_else(|| Error::usage(format!("{file_name} is not an sdist file name")))?;
    if name.version != from {
        return Err(Error::usage(format!("{file_name} is not version {from}")));
    }
    let raw_name = name.stem.split('-').next().unwrap_or_default();
    let old_top = format!("{}/", name.stem);
    let new_top = format!("{raw_name}-{to}/");
    let out_path = out_dir.join(format!("{raw_name}-{to}.tar.gz"));
    let out_file = fs_err::File::create(&out_path)?;
    // No timestamp in the gzip header: promoting twice gives the same bytes.
    let gz = flate2::GzBuilder::new().mtime(0).write(
        std::io::BufWriter::new(out_file),
        flate2::Compression::default(),
    );
    let mut builder = tar::Builder::new(gz);
    builder.mode(tar::HeaderMode::Complete);
    let tar_err = |e: std::io::Error| {
        Error::failed(format!("cannot rewrite {file_name}")).cause(e.to_string())
    };
    let mut stamps = Vec::new();
    let mut pkg_info_seen = false;
    crate::sdist::visit(sdist, |member, reader| {
        let rest = format!("{}/", member.path);
        let renamed = match rest.strip_prefix(&old_top) {
            Some(r) => format!("{new_top}{}", r.trim_end_matches('/')),
            None => new_top.trim_end_matches('/').to_string(),
        };
        let mut header = member.header.clone();
        if member.is_dir {
            header.set_size(0);
            return builder
                .append_data(&mut header, &renamed, std::io::empty())
                .map_err(tar_err);
        }
        let size = member.header.size().map_err(tar_err)?;
        if size > MAX_TEXT_MEMBER {
            return builder
                .append_data(&mut header, &renamed, reader)
                .map_err(tar_err);
        }
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).map_err(tar_err)?;
        if member.path == format!("{old_top}PKG-INFO") {
            bytes = rewrite_metadata(&bytes, from, to, &file_name)?;
            pkg_info_seen = true;
        } else if let Ok(text) = std::str::from_utf8(&bytes) {
            if contains_version(text, from) {
                stamps.push(renamed.clone());
                if rewrite_stamps {
                    bytes = replace_version(text, from, to).into_bytes();
                }
            }
        }
        header.set_size(bytes.len() as u64);
        builder
            .append_data(&mut header, &renamed, bytes.as_slice())
            .map_err(tar_err)
    })?;
    if !pkg_info_seen {
        return Err(Error::failed(format!(
            "{file_name} has no {old_top}PKG-INFO"
        )));
    }
    builder
        .into_inner()
        .and_then(|gz| gz.finish())
        .and_then(|mut w| w.flush())
        .map_err(tar_err)?;
    Ok((out_path, stamps, Vec::new()))
}

fn options_of<R: Read>(entry: &zip::read::ZipFile<'_, R>) -> zip::write::SimpleFileOptions {
    let mut options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    if let Some(time) = entry.last_modified() {
        options = options.last_modified_time(time);
    }
    if let Some(mode) = entry.unix_mode() {
        options = options.unix_permissions(mode & 0o7777);
    }
    options
}

/// `Version: FROM` -> `Version: TO` in the header of METADATA (exactly once).
fn rewrite_metadata(bytes: &[u8], from: &str, to: &str, file_name: &str) -> Result<Vec<u8>, Error> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| Error::failed(format!("{file_name}: METADATA is not UTF-8")))?;
    let mut out = String::with_capacity(text.len());
    let mut replaced = false;
    let mut in_header = true;
    for line in text.split_inclusive('\n') {
        if in_header && line.trim_end().is_empty() {
            in_header = false;
        }
        if in_header && !replaced && line.trim_end() == format!("Version: {from}") {
            out.push_str(&line.replacen(from, to, 1));
            replaced = true;
        } else {
            out.push_str(line);
        }
    }
    if !replaced {
        return Err(Error::usage(format!(
            "{file_name}: METADATA has no `Version: {from}`"
        )));
    }
    Ok(out.into_bytes())
}

/// Whether `text` holds `version` as a whole token (not inside a longer one).
fn contains_version(text: &str, version: &str) -> bool {
    text.match_indices(version).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + version.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '.'));
        boundary(before) && boundary(after)
    })
}

/// `text` with `version` replaced by `to` where it stands as a whole token.
fn replace_version(text: &str, version: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (i, _) in text.match_indices(version) {
        if i < last {
            continue;
        }
        let before = text[..i].chars().next_back();
        let after = text[i + version.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '.'));
        if boundary(before) && boundary(after) {
            out.push_str(&text[last..i]);
            out.push_str(to);
            last = i + version.len();
        }
    }
    out.push_str(&text[last..]);
    out
}

fn csv_field(path: &str) -> String {
    if path.contains([',', '"', '\n']) {
        format!("\"{}\"", path.replace('"', "\"\""))
    } else {
        path.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_found_as_tokens() {
        assert!(contains_version(
            "VERSION = \"3.14.0rc2026112501\"\n",
            "3.14.0rc2026112501"
        ));
        assert!(!contains_version(
            "3.14.0rc20261125012",
            "3.14.0rc2026112501"
        ));
        assert!(!contains_version(
            "13.14.0rc2026112501",
            "3.14.0rc2026112501"
        ));
    }

    #[test]
    fn stamps_are_rewritten_as_tokens_only() {
        let text = "VERSION = '1.0rc1'  # fixed in 1.0rc10, see 1.0rc1.\n";
        assert_eq!(
            replace_version(text, "1.0rc1", "1.0"),
            "VERSION = '1.0'  # fixed in 1.0rc10, see 1.0rc1.\n"
        );
    }

    #[test]
    fn metadata_version_is_replaced_once_in_the_header() {
        let m = b"Metadata-Version: 2.1\nName: x\nVersion: 1.0rc1\n\nbody Version: 1.0rc1\n";
        let out = String::from_utf8(rewrite_metadata(m, "1.0rc1", "1.0", "x").unwrap()).unwrap();
        assert!(
            out.contains("Version: 1.0\n\nbody Version: 1.0rc1"),
            "{out}"
        );
        assert!(rewrite_metadata(b"Name: x\n", "1.0rc1", "1.0", "x").is_err());
    }
}
