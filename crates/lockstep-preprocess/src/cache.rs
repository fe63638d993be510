//! What `lockstep preprocess` keeps in the cache's `preprocess` area: one
//! entry per (executable text, step command, tool identity), holding the
//! checked output. Only successes are cached. The entry protocol (sealed
//! size and sha256, verified on read, a damaged entry removed and
//! recomputed), locks and pruning are lockstep-cache's.

use lockstep_cache::{Area, Bucket, Key, KeyBuilder};
use lockstep_core::Error;

/// The format of preprocess entries (bump when what they hold changes).
const VERSION: u32 = 3;

/// The output's suffix in an entry.
const OUTPUT: &str = "mlir";

/// The objects the output references: one `SHA256 FILE` line each.
const OBJECTS: &str = "objects";

/// A cached output and the objects (file, sha256) it references: a hit
/// counts only while each object still holds those bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub output: String,
    pub objects: Vec<(std::path::PathBuf, String)>,
}

impl Hit {
    /// Whether every object the output references is as it was.
    pub fn objects_unchanged(&self) -> bool {
        self.objects.iter().all(|(file, sha256)| {
            lockstep_core::hash::sha256_file(file).is_ok_and(|now| now == *sha256)
        })
    }
}

/// The preprocess area of a cache.
#[derive(Debug, Clone)]
pub struct Cache {
    bucket: Bucket,
}

/// The cache key of one step on one executable.
pub fn key(input: &str, step_material: &str) -> Key {
    KeyBuilder::new(Area::Preprocess, VERSION)
        .part("executable", input)
        .part("step", step_material)
        .finish()
}

impl Cache {
    pub fn new(cache: &lockstep_cache::Cache) -> Cache {
        Cache {
            bucket: cache.bucket(Area::Preprocess),
        }
    }

    /// The cached output, or `None` (a damaged entry is removed).
    pub fn get(&self, key: &Key) -> Option<Hit> {
        let entry = self.bucket.slot(key, None).get()?;
        let output = std::fs::read_to_string(entry.file(OUTPUT)?).ok()?;
        let objects = match entry.file(OBJECTS) {
            Some(path) => std::fs::read_to_string(path)
                .ok()?
                .lines()
                .filter_map(|l| l.split_once(' '))
                .map(|(sha, file)| (std::path::PathBuf::from(file), sha.to_string()))
                .collect(),
            None => Vec::new(),
        };
        Some(Hit { output, objects })
    }

    /// Stores `output` and the `objects` (file, sha256) it references under
    /// `key` (a concurrent writer of the same key waits and finds it stored).
    pub fn put(
        &self,
        key: &Key,
        output: &str,
        objects: &[(std::path::PathBuf, String)],
    ) -> Result<(), Error> {
        let slot = self.bucket.slot(key, None);
        let lock = slot.lock()?;
        if lock.get().is_some() {
            return Ok(());
        }
        let mut stage = lock.stage();
        stage.write(OUTPUT, output.as_bytes())?;
        if !objects.is_empty() {
            let lines: String = objects
                .iter()
                .map(|(file, sha)| format!("{sha} {}\n", file.display()))
                .collect();
            stage.write(OBJECTS, lines.as_bytes())?;
        }
        stage.commit(serde_json::Value::Null)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(&lockstep_cache::Cache::at(dir.path()));
        let k = key("hal.executable @x {}", "tool\0cat");
        assert_ne!(k, key("hal.executable @x {}", "tool\0tac"));
        assert_ne!(k, key("hal.executable @y {}", "tool\0cat"));
        assert!(cache.get(&k).is_none());
        cache.put(&k, "out {\n}\n", &[]).unwrap();
        assert_eq!(
            cache.get(&k).map(|h| h.output).as_deref(),
            Some("out {\n}\n")
        );
        // An entry referencing an object counts while the object is unchanged.
        let object = dir.path().join("k.o");
        std::fs::write(&object, b"one").unwrap();
        let sha = lockstep_core::hash::sha256_file(&object).unwrap();
        let k2 = key("hal.executable @z {}", "tool\0cat");
        cache.put(&k2, "z\n", &[(object.clone(), sha)]).unwrap();
        assert!(cache.get(&k2).unwrap().objects_unchanged());
        std::fs::write(&object, b"two").unwrap();
        assert!(!cache.get(&k2).unwrap().objects_unchanged());
        let path = cache.bucket.slot(&k, None).path(OUTPUT);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 2]).unwrap();
        assert!(cache.get(&k).is_none());
        assert!(!path.exists());
    }
}
