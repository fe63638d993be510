//! The one key builder: every area's key is a sha256 over the area's name, a
//! version of what the area stores, and labelled, length-framed parts, so
//! two different inputs can never frame into the same bytes and a change of
//! format (a new version) never reads an old entry.

use lockstep_core::hash::Framed;

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

/// Builds a [`Key`] part by part: the core's framed hasher, started with
/// the area's name and the entry format's version.
#[derive(Clone)]
pub struct KeyBuilder {
    framed: Framed,
}

impl KeyBuilder {
    /// A key of `area` for entries of format `version` (bump it when what an
    /// entry holds, or how it is computed, changes).
    pub fn new(area: Area, version: u32) -> KeyBuilder {
        KeyBuilder {
            framed: Framed::new("lockstep-cache", area.name(), version),
        }
    }

    /// Adds one labelled part (framed with its length).
    pub fn part(self, label: &str, bytes: impl AsRef<[u8]>) -> KeyBuilder {
        KeyBuilder {
            framed: self.framed.part(label, bytes),
        }
    }

    /// Adds a list of parts under one label (each framed; the count too).
    pub fn parts<S: AsRef<[u8]>>(
        self,
        label: &str,
        items: impl IntoIterator<Item = S>,
    ) -> KeyBuilder {
        KeyBuilder {
            framed: self.framed.parts(label, items),
        }
    }

    pub fn finish(self) -> Key {
        Key(self.framed.hex())
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
