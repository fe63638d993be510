//! lockstep's durable state, in one SQLite database per repository
//! (`<git common dir>/lockstep/state.db`).
//!
//! It owns three things: the journal of mutating operations (written before an
//! operation acts, so a rerun after `kill -9` can continue or undo it, like jj's
//! operation log), cached probe results (smoke and bisect runs), and small named
//! records (the current halt, the integrate in progress). It also owns the
//! per-repository lock that keeps two integrates from running at once.
//!
//! It knows nothing about git or what an operation means: callers give it JSON.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use lockstep_core::Error;
use rusqlite::{params, Connection, OptionalExtension};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

mod lock;
pub use lock::RepoLock;

/// The open database.
pub struct Store {
    conn: Connection,
}

/// One journaled operation.
#[derive(Debug, Clone)]
pub struct Op {
    pub id: i64,
    pub kind: String,
    pub state: serde_json::Value,
    pub started_at: f64,
    pub finished_at: Option<f64>,
    pub outcome: Option<String>,
}

/// A cached probe result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRecord {
    pub key: String,
    /// What the verdict depends on besides the commit and patches (the
    /// superproject tree and the command), to find earlier verdicts cheaply.
    pub context: String,
    pub commit: String,
    /// `good`, `bad`, `skip` or `conflict`.
    pub outcome: String,
    pub detail: String,
    pub log: Option<String>,
    pub seconds: f64,
}

fn db_error(e: rusqlite::Error) -> Error {
    Error::failed("lockstep's state database failed").cause(e.to_string())
}

pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS journal (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    started_at REAL NOT NULL,
    finished_at REAL,
    outcome TEXT
);
CREATE TABLE IF NOT EXISTS probes (
    key TEXT PRIMARY KEY,
    context TEXT NOT NULL,
    commit_sha TEXT NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT NOT NULL,
    log TEXT,
    seconds REAL NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS probes_by_context ON probes (context, commit_sha);
CREATE TABLE IF NOT EXISTS records (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
";

impl Store {
    /// Opens (creating if needed) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Store, Error> {
        fs_err::create_dir_all(dir).map_err(|e| {
            Error::failed(format!(
                "cannot create lockstep's state directory {}",
                dir.display()
            ))
            .cause(e.to_string())
        })?;
        let conn = Connection::open(dir.join("state.db")).map_err(db_error)?;
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(db_error)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db_error)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(db_error)?;
        conn.execute_batch(SCHEMA).map_err(db_error)?;
        Ok(Store { conn })
    }

    /// Records that an operation is about to act. Returns its id.
    pub fn begin(&self, kind: &str, state: &impl Serialize) -> Result<i64, Error> {
        let state = serde_json::to_string(state).map_err(|e| Error::failed(e.to_string()))?;
        self.conn
            .execute(
                "INSERT INTO journal (kind, state, started_at) VALUES (?1, ?2, ?3)",
                params![kind, state, now()],
            )
            .map_err(db_error)?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Replaces an unfinished operation's state (progress within it).
    pub fn update(&self, id: i64, state: &impl Serialize) -> Result<(), Error> {
        let state = serde_json::to_string(state).map_err(|e| Error::failed(e.to_string()))?;
        self.conn
            .execute(
                "UPDATE journal SET state = ?2 WHERE id = ?1",
                params![id, state],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// Marks an operation finished with an outcome (`done`, `aborted`, ...).
    pub fn finish(&self, id: i64, outcome: &str) -> Result<(), Error> {
        self.conn
            .execute(
                "UPDATE journal SET finished_at = ?2, outcome = ?3 WHERE id = ?1",
                params![id, now(), outcome],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// The newest unfinished operation, if any.
    pub fn unfinished(&self) -> Result<Option<Op>, Error> {
        Ok(self.unfinished_all()?.into_iter().next())
    }

    /// Every unfinished operation, newest first (the order to recover them in).
    pub fn unfinished_all(&self) -> Result<Vec<Op>, Error> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, kind, state, started_at, finished_at, outcome FROM journal
                 WHERE finished_at IS NULL ORDER BY id DESC",
            )
            .map_err(db_error)?;
        let rows = stmt.query_map([], row_to_op).map_err(db_error)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(db_error)
    }

    /// The newest operations, newest first.
    pub fn history(&self, limit: usize) -> Result<Vec<Op>, Error> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, kind, state, started_at, finished_at, outcome FROM journal
                 ORDER BY id DESC LIMIT ?1",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map(params![limit as i64], row_to_op)
            .map_err(db_error)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(db_error)
    }

    pub fn probe(&self, key: &str) -> Result<Option<ProbeRecord>, Error> {
        self.conn
            .query_row(
                "SELECT key, context, commit_sha, outcome, detail, log, seconds FROM probes WHERE key = ?1",
                params![key],
                row_to_probe,
            )
            .optional()
            .map_err(db_error)
    }

    /// Every verdict recorded in `context` (any patch stack), by commit.
    pub fn probes_in_context(&self, context: &str) -> Result<Vec<ProbeRecord>, Error> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT key, context, commit_sha, outcome, detail, log, seconds FROM probes WHERE context = ?1",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map(params![context], row_to_probe)
            .map_err(db_error)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(db_error)
    }

    pub fn put_probe(&self, rec: &ProbeRecord) -> Result<(), Error> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO probes (key, context, commit_sha, outcome, detail, log, seconds, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    rec.key,
                    rec.context,
                    rec.commit,
                    rec.outcome,
                    rec.detail,
                    rec.log,
                    rec.seconds,
                    now()
                ],
            )
            .map_err(db_error)?;
        Ok(())
    }

    /// Reads a named record.
    pub fn get<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, Error> {
        let text: Option<String> = self
            .conn
            .query_row(
                "SELECT value FROM records WHERE name = ?1",
                params![name],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_error)?;
        match text {
            None => Ok(None),
            Some(t) => serde_json::from_str(&t).map(Some).map_err(|e| {
                Error::failed(format!("stored record `{name}` is unreadable")).cause(e.to_string())
            }),
        }
    }

    /// Writes a named record.
    pub fn set<T: Serialize>(&self, name: &str, value: &T) -> Result<(), Error> {
        let text = serde_json::to_string(value).map_err(|e| Error::failed(e.to_string()))?;
        self.conn
            .execute(
                "INSERT OR REPLACE INTO records (name, value) VALUES (?1, ?2)",
                params![name, text],
            )
            .map_err(db_error)?;
        Ok(())
    }

    pub fn remove(&self, name: &str) -> Result<(), Error> {
        self.conn
            .execute("DELETE FROM records WHERE name = ?1", params![name])
            .map_err(db_error)?;
        Ok(())
    }
}

fn row_to_probe(r: &rusqlite::Row<'_>) -> rusqlite::Result<ProbeRecord> {
    Ok(ProbeRecord {
        key: r.get(0)?,
        context: r.get(1)?,
        commit: r.get(2)?,
        outcome: r.get(3)?,
        detail: r.get(4)?,
        log: r.get(5)?,
        seconds: r.get(6)?,
    })
}

fn row_to_op(r: &rusqlite::Row<'_>) -> rusqlite::Result<Op> {
    let state: String = r.get(2)?;
    Ok(Op {
        id: r.get(0)?,
        kind: r.get(1)?,
        state: serde_json::from_str(&state).unwrap_or(serde_json::Value::Null),
        started_at: r.get(3)?,
        finished_at: r.get(4)?,
        outcome: r.get(5)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let id = store
            .begin("advance", &serde_json::json!({"to": "abc"}))
            .unwrap();
        let op = store.unfinished().unwrap().unwrap();
        assert_eq!(op.id, id);
        assert_eq!(op.state["to"], "abc");
        store.finish(id, "done").unwrap();
        assert!(store.unfinished().unwrap().is_none());
        // Survives reopening.
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            store.history(5).unwrap()[0].outcome.as_deref(),
            Some("done")
        );
    }

    #[test]
    fn records_and_probes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.set("halt", &vec![1, 2]).unwrap();
        assert_eq!(store.get::<Vec<i32>>("halt").unwrap(), Some(vec![1, 2]));
        store.remove("halt").unwrap();
        assert_eq!(store.get::<Vec<i32>>("halt").unwrap(), None);
        let rec = ProbeRecord {
            key: "k".into(),
            context: "ctx".into(),
            commit: "c".into(),
            outcome: "good".into(),
            detail: String::new(),
            log: None,
            seconds: 1.5,
        };
        store.put_probe(&rec).unwrap();
        assert_eq!(store.probe("k").unwrap(), Some(rec.clone()));
        assert_eq!(store.probes_in_context("ctx").unwrap(), vec![rec]);
    }
}
