//! What `lockstep preprocess` keeps in the cache's `preprocess` area: one
//! entry per (executable text, step command, tool identity), holding the
//! checked output. Only successes are cached. The entry protocol (sealed
//! size and sha256, verified on read, a damaged entry removed and
//! recomputed), locks and pruning are lockstep-cache's.

use lockstep_cache::{Area, Bucket, Key, KeyBuilder};
use lockstep_core::Error;

/// The format of preprocess entries (bump when what they hold changes).
const VERSION: u32 = 2;

/// The output's suffix in an entry.
const OUTPUT: &str = "mlir";

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
    pub fn get(&self, key: &Key) -> Option<String> {
        let entry = self.bucket.slot(key, None).get()?;
        std::fs::read_to_string(entry.file(OUTPUT)?).ok()
    }

    /// Stores `output` under `key` (a concurrent writer of the same key waits
    /// and finds it stored).
    pub fn put(&self, key: &Key, output: &str) -> Result<(), Error> {
        let slot = self.bucket.slot(key, None);
        let lock = slot.lock()?;
        if lock.get().is_some() {
            return Ok(());
        }
        let mut stage = lock.stage();
        stage.write(OUTPUT, output.as_bytes())?;
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
        cache.put(&k, "out {\n}\n").unwrap();
        assert_eq!(cache.get(&k).as_deref(), Some("out {\n}\n"));
        let path = cache.bucket.slot(&k, None).path(OUTPUT);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 2]).unwrap();
        assert!(cache.get(&k).is_none());
        assert!(!path.exists());
    }
}
