//! The one key builder: every area's key is a sha256 over the area's name, a
//! version of what the area stores, and labelled, length-framed parts, so
//! two different inputs can never frame into the same bytes and a change of
//! format (a new version) never reads an old entry.

use sha2::{Digest, Sha256};

use crate::Area;

/// An entry's key: 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(String);

impl Key {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A key given as text (e.g. a download's sha256): 64 hex digits, else `None`.
    pub fn parse(text: &str) -> Option<Key> {
        let text = text.trim().to_ascii_lowercase();
        is_key(&text).then_some(Key(text))
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `text` is 64 lowercase hex digits.
pub(crate) fn is_key(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Builds a [`Key`] part by part.
#[derive(Clone)]
pub struct KeyBuilder {
    hasher: Sha256,
}

impl KeyBuilder {
    /// A key of `area` for entries of format `version` (bump it when what an
    /// entry holds, or how it is computed, changes).
    pub fn new(area: Area, version: u32) -> KeyBuilder {
        let mut builder = KeyBuilder {
            hasher: Sha256::new(),
        };
        builder = builder.part("lockstep-cache", area.name());
        builder.part("version", version.to_le_bytes())
    }

    /// Adds one labelled part (framed with its length).
    pub fn part(mut self, label: &str, bytes: impl AsRef<[u8]>) -> KeyBuilder {
        let bytes = bytes.as_ref();
        for chunk in [label.as_bytes(), bytes] {
            self.hasher.update((chunk.len() as u64).to_le_bytes());
            self.hasher.update(chunk);
        }
        self
    }

    /// Adds a list of parts under one label (each framed; the count too).
    pub fn parts<S: AsRef<[u8]>>(
        mut self,
        label: &str,
        items: impl IntoIterator<Item = S>,
    ) -> KeyBuilder {
        let items: Vec<S> = items.into_iter().collect();
        self = self.part(label, (items.len() as u64).to_le_bytes());
        for item in &items {
            self = self.part("", item);
        }
        self
    }

    pub fn finish(self) -> Key {
        Key(hex::encode(self.hasher.finalize()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_framed_and_areas_apart() {
        let key = |area, parts: &[&str]| {
            KeyBuilder::new(area, 1)
                .parts("flags", parts.iter())
                .finish()
        };
        let base = key(Area::Compile, &["ab", "c"]);
        assert!(is_key(base.as_str()));
        assert_eq!(base, key(Area::Compile, &["ab", "c"]));
        assert_ne!(base, key(Area::Compile, &["a", "bc"]));
        assert_ne!(base, key(Area::Compile, &["abc"]));
        assert_ne!(base, key(Area::Kernels, &["ab", "c"]));
        let v2 = KeyBuilder::new(Area::Compile, 2)
            .parts("flags", ["ab", "c"])
            .finish();
        assert_ne!(base, v2);
        assert_eq!(Key::parse(&base.as_str().to_uppercase()), Some(base));
        assert_eq!(Key::parse("abc"), None);
    }
}
