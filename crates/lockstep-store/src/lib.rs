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

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use lockstep_core::Error;
use rusqlite::{params, Connection, OptionalExtension};
use serde::{de::DeserializeOwned, Deserialize, Serialize};

mod lock;
pub use lock::RepoLock;

/// The open database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
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

/// The database's file name in its directory.
pub const FILE_NAME: &str = "state.db";

/// The smallest SQLite database: its header alone is 100 bytes.
const SQLITE_HEADER: u64 = 100;

/// The error for a database SQLite cannot read, with the way out.
fn damaged(path: &Path, cause: impl std::fmt::Display) -> Error {
    Error::failed(format!(
        "lockstep's state database {} is damaged",
        path.display()
    ))
    .cause(cause.to_string())
    .hint(format!(
        "in a repository, `lockstep integrate repair` moves it aside (kept as {}.damaged-TIME) and rebuilds what lockstep needs from git; elsewhere move it aside by hand and rerun",
        path.display()
    ))
}

/// A file shorter than SQLite's header is what is left of a database
/// (a full disk, a bad copy), not a new one: SQLite would silently treat it
/// as empty and lose the record.
fn refuse_truncated(path: &Path) -> Result<(), Error> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() < SQLITE_HEADER => Err(damaged(
            path,
            format!(
                "it is {} bytes long, shorter than any SQLite database",
                meta.len()
            ),
        )),
        _ => Ok(()),
    }
}

pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The schema migrations, in order; `PRAGMA user_version` is how many ran.
const MIGRATIONS: &[&str] = &[SCHEMA_V1];

/// Version 1: the journal, probe results and named records.
const SCHEMA_V1: &str = "
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
    /// Opens (creating if needed) the store in `dir`. A damaged,
    /// truncated or newer-than-known database is an error naming the file
    /// and the way out ([`Store::move_aside`], `lockstep integrate repair`).
    pub fn open(dir: &Path) -> Result<Store, Error> {
        fs_err::create_dir_all(dir).map_err(|e| {
            Error::failed(format!(
                "cannot create lockstep's state directory {}",
                dir.display()
            ))
            .cause(e.to_string())
        })?;
        let path = dir.join(FILE_NAME);
        refuse_truncated(&path)?;
        let conn = Connection::open(&path).map_err(|e| damaged(&path, e))?;
        let store = Store { conn, path };
        store
            .conn
            .busy_timeout(std::time::Duration::from_secs(30))
            .map_err(|e| store.db_error(e))?;
        store
            .conn
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| damaged(&store.path, e))?;
        store
            .conn
            .pragma_update(None, "synchronous", "FULL")
            .map_err(|e| store.db_error(e))?;
        store.check_integrity()?;
        store.migrate()?;
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn db_error(&self, e: rusqlite::Error) -> Error {
        match &e {
            rusqlite::Error::SqliteFailure(f, _)
                if matches!(
                    f.code,
                    rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase
                ) =>
            {
                damaged(&self.path, e)
            }
            _ => Error::failed(format!(
                "lockstep's state database {} failed",
                self.path.display()
            ))
            .cause(e.to_string()),
        }
    }

    /// SQLite's quick check: damage found now, not halfway through an
    /// operation.
    fn check_integrity(&self) -> Result<(), Error> {
        let verdict: String = self
            .conn
            .query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
            .map_err(|e| damaged(&self.path, e))?;
        if verdict == "ok" {
            Ok(())
        } else {
            Err(damaged(&self.path, verdict))
        }
    }

    /// Brings the schema to [`SCHEMA_VERSION`] (`PRAGMA user_version`
    /// counts the migrations applied; 0 is a new file or one written before
    /// versions, which the first migration upgrades in place).
    fn migrate(&self) -> Result<(), Error> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| self.db_error(e))?;
        let known = MIGRATIONS.len() as i64;
        if version > known {
            return Err(Error::failed(format!(
                "lockstep's state database {} was written by a newer lockstep (schema {version}; this one knows up to {known})",
                self.path.display()
            ))
            .hint("use that newer lockstep here, or move the file aside (`lockstep integrate repair --force` keeps it and starts a new one)"));
        }
        for (i, migration) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
            let to = i as i64 + 1;
            self.conn
                .execute_batch(&format!(
                    "BEGIN IMMEDIATE; {migration} PRAGMA user_version = {to}; COMMIT;"
                ))
                .map_err(|e| {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    self.db_error(e)
                })?;
        }
        Ok(())
    }

    /// Moves the database in `dir` (and its WAL files) aside to
    /// `state.db.damaged-STAMP`, never deleting it; returns the new path,
    /// or `None` when there was no database.
    pub fn move_aside(dir: &Path) -> Result<Option<PathBuf>, Error> {
        let path = dir.join(FILE_NAME);
        if !path.exists() {
            return Ok(None);
        }
        let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S").to_string();
        let aside = dir.join(format!("{FILE_NAME}.damaged-{stamp}"));
        fs_err::rename(&path, &aside)?;
        for suffix in ["-wal", "-shm"] {
            let extra = dir.join(format!("{FILE_NAME}{suffix}"));
            if extra.exists() {
                fs_err::rename(
                    &extra,
                    dir.join(format!("{FILE_NAME}.damaged-{stamp}{suffix}")),
                )?;
            }
        }
        Ok(Some(aside))
    }

    /// Records that an operation is about to act. Returns its id.
    pub fn begin(&self, kind: &str, state: &impl Serialize) -> Result<i64, Error> {
        let state = serde_json::to_string(state).map_err(|e| Error::failed(e.to_string()))?;
        self.conn
            .execute(
                "INSERT INTO journal (kind, state, started_at) VALUES (?1, ?2, ?3)",
                params![kind, state, now()],
            )
            .map_err(|e| self.db_error(e))?;
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
            .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    /// Marks an operation finished with an outcome (`done`, `aborted`, ...).
    pub fn finish(&self, id: i64, outcome: &str) -> Result<(), Error> {
        self.conn
            .execute(
                "UPDATE journal SET finished_at = ?2, outcome = ?3 WHERE id = ?1",
                params![id, now(), outcome],
            )
            .map_err(|e| self.db_error(e))?;
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
            .map_err(|e| self.db_error(e))?;
        let rows = stmt
            .query_map([], row_to_op)
            .map_err(|e| self.db_error(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.db_error(e))
    }

    /// The newest operations, newest first.
    pub fn history(&self, limit: usize) -> Result<Vec<Op>, Error> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, kind, state, started_at, finished_at, outcome FROM journal
                 ORDER BY id DESC LIMIT ?1",
            )
            .map_err(|e| self.db_error(e))?;
        let rows = stmt
            .query_map(params![limit as i64], row_to_op)
            .map_err(|e| self.db_error(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.db_error(e))
    }

    pub fn probe(&self, key: &str) -> Result<Option<ProbeRecord>, Error> {
        self.conn
            .query_row(
                "SELECT key, context, commit_sha, outcome, detail, log, seconds FROM probes WHERE key = ?1",
                params![key],
                row_to_probe,
            )
            .optional()
            .map_err(|e| self.db_error(e))
    }

    /// Every verdict recorded in `context` (any patch stack), by commit.
    pub fn probes_in_context(&self, context: &str) -> Result<Vec<ProbeRecord>, Error> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT key, context, commit_sha, outcome, detail, log, seconds FROM probes WHERE context = ?1",
            )
            .map_err(|e| self.db_error(e))?;
        let rows = stmt
            .query_map(params![context], row_to_probe)
            .map_err(|e| self.db_error(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.db_error(e))
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
            .map_err(|e| self.db_error(e))?;
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
            .map_err(|e| self.db_error(e))?;
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
            .map_err(|e| self.db_error(e))?;
        Ok(())
    }

    pub fn remove(&self, name: &str) -> Result<(), Error> {
        self.conn
            .execute("DELETE FROM records WHERE name = ?1", params![name])
            .map_err(|e| self.db_error(e))?;
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

    fn open_err(dir: &Path) -> Error {
        match Store::open(dir) {
            Ok(_) => panic!("opened"),
            Err(e) => e,
        }
    }

    #[test]
    fn damaged_and_truncated_databases_are_named_with_the_way_out() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE_NAME);
        for bytes in [&b""[..], b"x", b"SQLite format 3\0", &[7u8; 4096][..]] {
            std::fs::write(&file, bytes).unwrap();
            let err = open_err(dir.path());
            assert!(
                err.message.contains(&file.display().to_string()),
                "{}",
                err.message
            );
            assert!(err.message.contains("damaged"), "{}", err.message);
            assert!(err.hint.unwrap().contains("lockstep integrate repair"));
            assert_eq!(
                std::fs::read(&file).unwrap(),
                bytes,
                "the file is left alone"
            );
        }
    }

    #[test]
    fn a_newer_schema_is_refused_and_an_old_one_migrated() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store.set("integrate", &"x").unwrap();
            store.conn.execute_batch("PRAGMA user_version = 0").unwrap();
        }
        // A database from before versions: migrated in place, data kept.
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            store.get::<String>("integrate").unwrap().as_deref(),
            Some("x")
        );
        let v: i64 = store
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, MIGRATIONS.len() as i64);
        store
            .conn
            .execute_batch("PRAGMA user_version = 99")
            .unwrap();
        drop(store);
        let err = open_err(dir.path());
        assert!(err.message.contains("newer lockstep"), "{}", err.message);
    }

    #[test]
    fn move_aside_keeps_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "x").unwrap();
        let aside = Store::move_aside(dir.path()).unwrap().unwrap();
        assert_eq!(std::fs::read(&aside).unwrap(), b"x");
        let store = Store::open(dir.path()).unwrap();
        assert!(store.history(1).unwrap().is_empty());
        assert_eq!(Store::move_aside(&dir.path().join("none")).unwrap(), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
        /// Any bytes as state.db: opened and read, or an error naming the file.
        #[test]
        fn any_bytes_open_or_fail_naming_the_file(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..8192)) {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join(FILE_NAME);
            std::fs::write(&file, &bytes).unwrap();
            let result = Store::open(dir.path()).and_then(|s| s.history(5).map(drop));
            if let Err(e) = result {
                proptest::prop_assert!(e.message.contains(&file.display().to_string()), "{}", e.message);
            }
        }
    }
}
