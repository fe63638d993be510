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
//!
//! The file is the record of an integrate in progress, so damage is never
//! papered over: a file SQLite cannot read, one shorter than a database
//! header (lockstep creates its database whole, by rename, so a 0-byte
//! file is what is left of one) or one from a newer lockstep is an error
//! naming the file and `lockstep integrate repair`. The schema is versioned
//! (`PRAGMA user_version`) and migrated forward in place.

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
    /// The file as errors name it (for [`parse_state_db`], the input's origin).
    path: PathBuf,
}

/// Everything a database holds, as [`Store::inventory`] reads it.
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    pub journal: Vec<Op>,
    pub probes: Vec<ProbeRecord>,
    /// Named records: `(name, JSON text)`.
    pub records: Vec<(String, String)>,
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

/// The probe records are the one verdict store every bisection recalls
/// from (lockstep-bisect's `recall_or_judge`).
impl lockstep_bisect::VerdictStore for Store {
    fn recall(&self, key: &str) -> Result<Option<lockstep_bisect::Stored>, Error> {
        Ok(self.probe(key)?.map(|rec| lockstep_bisect::Stored {
            key: rec.key,
            context: rec.context,
            commit: rec.commit,
            verdict: lockstep_bisect::Verdict::parse(&rec.outcome),
            detail: rec.detail,
            log: rec.log,
            seconds: rec.seconds,
        }))
    }

    fn remember(&self, v: &lockstep_bisect::Stored) -> Result<(), Error> {
        self.put_probe(&ProbeRecord {
            key: v.key.clone(),
            context: v.context.clone(),
            commit: v.commit.clone(),
            outcome: v.verdict.as_str().into(),
            detail: v.detail.clone(),
            log: v.log.clone(),
            seconds: v.seconds,
        })
    }
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

/// Refuses what cannot be an existing database before SQLite sees it: a
/// directory, FIFO or device (opening a FIFO would block), and a file
/// shorter than SQLite's header, which is what is left of a database (a
/// full disk, a bad copy), not a new one: SQLite would silently treat it as
/// empty and lose the record. `shown` is the path errors name.
fn refuse_non_database(path: &Path, shown: &Path) -> Result<(), Error> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if !meta.is_file() {
        return Err(Error::usage(format!(
            "lockstep's state database {} is not a regular file",
            shown.display()
        ))
        .cause(format!("it is a {}", file_kind(&meta)))
        .hint(format!(
            "move it out of the way (e.g. `mv {0} {0}.aside`) and rerun",
            shown.display()
        )));
    }
    if meta.len() < SQLITE_HEADER {
        return Err(damaged(
            shown,
            format!(
                "it is {} bytes long, shorter than any SQLite database (lockstep writes a new one whole, so this is what is left of one)",
                meta.len()
            ),
        ));
    }
    Ok(())
}

fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    if kind.is_dir() {
        "directory"
    } else if kind.is_fifo() {
        "FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "device"
    } else if kind.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

/// The error for a database whose tables or values are not what this
/// lockstep reads: damage, or a file from another version (or another
/// program) at lockstep's place. Either way the way out is the same.
fn foreign(path: &Path, cause: impl std::fmt::Display) -> Error {
    Error::failed(format!(
        "lockstep's state database {} is damaged or from another version of lockstep",
        path.display()
    ))
    .cause(cause.to_string())
    .hint(format!(
        "in a repository, `lockstep integrate repair` moves it aside (kept as {}.damaged-TIME) and rebuilds what lockstep needs from git; elsewhere move it aside by hand and rerun",
        path.display()
    ))
}

/// SQLite's message without the statement it quotes (`no such column: x
/// in SELECT ...`): the statement is lockstep's, not the user's.
fn without_statement(message: &str) -> &str {
    match message.find(" in ") {
        Some(at)
            if message[at + 4..]
                .trim_start()
                .starts_with(|c: char| c.is_ascii_uppercase()) =>
        {
            &message[..at]
        }
        _ => message,
    }
}

/// Classifies an SQLite error on the file named `shown`: damage, and tables
/// or values this lockstep cannot read, get the way out (`integrate
/// repair`); the file system's refusals (permissions, a full disk, a
/// read-only mount) the cause; another process holding it says so.
fn sqlite_error(shown: &Path, e: rusqlite::Error) -> Error {
    use rusqlite::ErrorCode as Code;
    match &e {
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, Code::DatabaseCorrupt | Code::NotADatabase) =>
        {
            damaged(shown, e)
        }
        rusqlite::Error::SqliteFailure(f, message)
            if matches!(
                f.code,
                Code::Unknown | Code::TypeMismatch | Code::ConstraintViolation | Code::TooBig
            ) =>
        {
            let text = message.as_deref().map(without_statement).unwrap_or("");
            let cause = if text.is_empty() {
                f.to_string()
            } else {
                text.to_string()
            };
            foreign(shown, format!("SQLite: {cause}"))
        }
        rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::InvalidColumnIndex(..)
        | rusqlite::Error::InvalidColumnName(..)
        | rusqlite::Error::Utf8Error(..) => {
            foreign(shown, format!("a value cannot be read: {e}"))
        }
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, Code::DatabaseBusy | Code::DatabaseLocked) =>
        {
            Error::failed(format!(
                "lockstep's state database {} is held by another process",
                shown.display()
            ))
            .cause(e.to_string())
            .hint("wait for the other lockstep (or the program holding the file) to finish, then rerun")
        }
        _ => Error::failed(format!(
            "lockstep's state database {} failed",
            shown.display()
        ))
        .cause(e.to_string())
        .hint("check the file's permissions and the free space of its disk, then rerun"),
    }
}

/// The files beside the database that SQLite and lockstep open by name:
/// each is refused when it is a symbolic link (see [`refuse_links`]).
pub const NEIGHBOURS: [&str; 4] = [FILE_NAME, "state.db-wal", "state.db-shm", "lock"];

/// Refuses a symbolic link at `path` (dangling or not): SQLite and the lock
/// would follow it and create or write the file at its target, outside the
/// repository, even for a read-only command. `what` names the file.
pub fn refuse_link(path: &Path, what: &str) -> Result<(), Error> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_symlink() {
        return Ok(());
    }
    let target = std::fs::read_link(path)
        .map(|t| t.display().to_string())
        .unwrap_or_else(|_| "somewhere unreadable".into());
    Err(Error::usage(format!(
        "{what} {} is a symbolic link (to {target})",
        path.display()
    ))
    .cause("lockstep never follows links there: it would create or write the file at the link's target, outside the repository")
    .hint(format!(
        "remove the link (`rm {}`) and rerun; nothing was done",
        path.display()
    )))
}

/// Refuses a link at the database or any of its [`NEIGHBOURS`] in `dir`.
pub(crate) fn refuse_links(dir: &Path) -> Result<(), Error> {
    for name in NEIGHBOURS {
        let what = match name {
            FILE_NAME => "lockstep's state database",
            "lock" => "lockstep's integrate lock",
            _ => "a file of lockstep's state database",
        };
        refuse_link(&dir.join(name), what)?;
    }
    Ok(())
}

/// Makes sure `dir` (`<git common dir>/lockstep`) is a directory, creating
/// it (and its parents) when missing. A file there, a link to no directory,
/// or anything else is a usage error saying what it is and what to do,
/// before anything is created.
pub fn ensure_state_dir(dir: &Path) -> Result<(), Error> {
    let refuse = |what: String| {
        Error::usage(format!(
            "lockstep's state directory {} is {what}, not a directory",
            dir.display()
        ))
        .cause("lockstep keeps its state database, lock, logs and reports there")
        .hint(format!(
            "move it out of the way (e.g. `mv {0} {0}.aside`) and rerun; nothing was done",
            dir.display()
        ))
    };
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(meta) if meta.file_type().is_symlink() => match std::fs::metadata(dir) {
            Ok(target) if target.is_dir() => Ok(()),
            Ok(target) => Err(refuse(format!(
                "a symbolic link to a {}",
                if target.is_file() {
                    "regular file"
                } else {
                    file_kind(&target)
                }
            ))),
            Err(_) => Err(refuse("a symbolic link to nothing".into())),
        },
        Ok(meta) if meta.is_file() => Err(refuse("a regular file".into())),
        Ok(meta) => Err(refuse(format!("a {}", file_kind(&meta)))),
        Err(_) => fs_err::create_dir_all(dir).map_err(|e| {
            Error::failed(format!(
                "cannot create lockstep's state directory {}",
                dir.display()
            ))
            .cause(e.to_string())
            .hint("check the permissions of the repository's .git directory, then rerun")
        }),
    }
}

/// The columns this lockstep reads, per table: a table without one is from
/// another version (or another program).
const COLUMNS: [(&str, &[&str]); 3] = [
    (
        "journal",
        &[
            "id",
            "kind",
            "state",
            "started_at",
            "finished_at",
            "outcome",
        ],
    ),
    (
        "probes",
        &[
            "key",
            "context",
            "commit_sha",
            "outcome",
            "detail",
            "log",
            "seconds",
            "at",
        ],
    ),
    ("records", &["name", "value"]),
];

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
    ///
    /// Before anything is created: `dir` must be a directory (or missing)
    /// and neither the database nor its `-wal`, `-shm` and `lock`
    /// neighbours a symbolic link ([`refuse_link`]).
    pub fn open(dir: &Path) -> Result<Store, Error> {
        ensure_state_dir(dir)?;
        refuse_links(dir)?;
        let path = dir.join(FILE_NAME);
        if std::fs::symlink_metadata(&path).is_err() {
            create_whole(dir, &path)?;
        }
        Store::open_file(&path, &path)
    }

    /// Opens the existing database at `path`, naming it `shown` in errors.
    fn open_file(path: &Path, shown: &Path) -> Result<Store, Error> {
        refuse_non_database(path, shown)?;
        let conn = Connection::open(path).map_err(|e| sqlite_error(shown, e))?;
        let store = Store {
            conn,
            path: shown.to_path_buf(),
        };
        store
            .conn
            .busy_timeout(std::time::Duration::from_secs(30))
            .map_err(|e| store.db_error(e))?;
        store
            .conn
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| store.db_error(e))?;
        store
            .conn
            .pragma_update(None, "synchronous", "FULL")
            .map_err(|e| store.db_error(e))?;
        store.check_integrity()?;
        store.migrate()?;
        store.check_columns()?;
        Ok(store)
    }

    /// Every table and column this lockstep reads is there: a database of
    /// an older or foreign schema is named now, not with a raw SQL error
    /// halfway through a command.
    fn check_columns(&self) -> Result<(), Error> {
        for (table, wanted) in COLUMNS {
            let mut stmt = self
                .conn
                .prepare("SELECT name FROM pragma_table_info(?1)")
                .map_err(|e| self.db_error(e))?;
            let have: Vec<String> = stmt
                .query_map([table], |r| r.get(0))
                .map_err(|e| self.db_error(e))?
                .collect::<Result<_, _>>()
                .map_err(|e| self.db_error(e))?;
            if have.is_empty() {
                return Err(foreign(&self.path, format!("it has no table `{table}`")));
            }
            if let Some(missing) = wanted.iter().find(|c| !have.iter().any(|h| h == *c)) {
                return Err(foreign(
                    &self.path,
                    format!("its table `{table}` has no column `{missing}`"),
                ));
            }
        }
        Ok(())
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn db_error(&self, e: rusqlite::Error) -> Error {
        sqlite_error(&self.path, e)
    }

    /// Every row of every table, read and converted: what a command could
    /// come across, checked at once (`lockstep integrate repair` and the
    /// fuzz harness use it).
    pub fn inventory(&self) -> Result<Inventory, Error> {
        let journal = self.history(usize::MAX)?;
        let mut stmt = self
            .conn
            .prepare("SELECT key, context, commit_sha, outcome, detail, log, seconds FROM probes")
            .map_err(|e| self.db_error(e))?;
        let probes = stmt
            .query_map([], row_to_probe)
            .map_err(|e| self.db_error(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.db_error(e))?;
        let mut stmt = self
            .conn
            .prepare("SELECT name, value FROM records")
            .map_err(|e| self.db_error(e))?;
        let records = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.db_error(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.db_error(e))?;
        Ok(Inventory {
            journal,
            probes,
            records,
        })
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
        let known = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
        if version > known {
            return Err(Error::failed(format!(
                "lockstep's state database {} was written by a newer lockstep (schema {version}; this one knows up to {known})",
                self.path.display()
            ))
            .hint("use that newer lockstep here, or move the file aside (`lockstep integrate repair --force` keeps it and starts a new one)"));
        }
        let done = usize::try_from(version).unwrap_or(0);
        for (to, migration) in (1..).zip(MIGRATIONS).skip(done) {
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
            .query_map(params![i64::try_from(limit).unwrap_or(i64::MAX)], row_to_op)
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
                Error::failed(format!(
                    "the record `{name}` in lockstep's state database {} is unreadable",
                    self.path.display()
                ))
                .cause(e.to_string())
                .hint("`lockstep integrate repair --force` moves the database aside (kept) and rebuilds the integrate record from git")
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

/// A new database is built beside `path` and linked into place whole, so
/// that a state.db lockstep finds short or empty was damaged, never one it
/// was still creating. Another process creating it first is no error.
fn create_whole(dir: &Path, path: &Path) -> Result<(), Error> {
    let partial = dir.join(format!("{FILE_NAME}.new-{}", std::process::id()));
    let _ = std::fs::remove_file(&partial);
    let built = Connection::open(&partial).and_then(|conn| {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        for (to, migration) in (1..).zip(MIGRATIONS) {
            conn.execute_batch(&format!(
                "BEGIN IMMEDIATE; {migration} PRAGMA user_version = {to}; COMMIT;"
            ))?;
        }
        conn.close().map_err(|(_, e)| e)
    });
    if let Err(e) = built {
        let _ = std::fs::remove_file(&partial);
        return Err(sqlite_error(path, e).context(format!(
            "cannot create lockstep's state database in {}",
            dir.display()
        )));
    }
    // A link never replaces a database another process just created; a
    // file system without hard links gets a rename, which could only
    // replace one created in the same instant, before anything was in it.
    let placed = match std::fs::hard_link(&partial, path) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists && !path.exists() => {
            std::fs::rename(&partial, path)
        }
        _ => Ok(()),
    };
    let _ = std::fs::remove_file(&partial);
    placed.map_err(|e| {
        Error::failed(format!(
            "cannot create lockstep's state database {}",
            path.display()
        ))
        .cause(e.to_string())
    })
}

/// Reads `bytes` as a state database, every table and row, as
/// `lockstep integrate` would: the inventory, or an error naming `origin`.
/// The bytes are copied to a private temporary file first (SQLite reads
/// files), which is removed afterwards; nothing else is touched.
pub fn parse_state_db(bytes: &[u8], origin: &Path) -> Result<Inventory, Error> {
    let dir = tempfile::Builder::new()
        .prefix("lockstep-state-")
        .tempdir()
        .map_err(|e| Error::failed("cannot create a temporary directory").cause(e.to_string()))?;
    let path = dir.path().join(FILE_NAME);
    std::fs::write(&path, bytes)
        .map_err(|e| Error::failed("cannot write a temporary copy").cause(e.to_string()))?;
    // The connection closes before the directory is removed.
    let store = Store::open_file(&path, origin)?;
    let inventory = store.inventory();
    drop(store);
    inventory
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

    /// A real database with some rows, as bytes.
    fn real_database() -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            for i in 0..200 {
                store
                    .begin("advance", &serde_json::json!({"to": format!("{i:040}")}))
                    .unwrap();
            }
            store.set("integrate", &"x".repeat(5000)).unwrap();
            store
                .conn
                .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
                .unwrap();
        }
        std::fs::read(dir.path().join(FILE_NAME)).unwrap()
    }

    #[test]
    fn corrupt_pages_and_truncated_files_are_damage_named_with_the_way_out() {
        let good = real_database();
        assert!(good.len() > 8192, "several pages: {}", good.len());
        let mut corrupt = good.clone();
        for b in &mut corrupt[4096..4096 + 512] {
            *b = 0xa5;
        }
        let truncated = good[..good.len() / 2].to_vec();
        let origin = Path::new("/repo/.git/lockstep/state.db");
        for (what, bytes) in [
            ("corrupt", corrupt),
            ("truncated", truncated),
            ("empty", vec![]),
            ("one byte", vec![0]),
        ] {
            let err = parse_state_db(&bytes, origin).unwrap_err();
            assert!(
                err.message.contains("/repo/.git/lockstep/state.db"),
                "{what}: {}",
                err.message
            );
            assert!(
                err.hint
                    .as_deref()
                    .unwrap_or("")
                    .contains("lockstep integrate repair"),
                "{what}: {err:?}"
            );
        }
        let inventory = parse_state_db(&good, origin).unwrap();
        assert_eq!(inventory.journal.len(), 200);
        assert_eq!(inventory.records.len(), 1);
    }

    #[test]
    fn a_new_database_is_never_left_empty_and_a_directory_is_named() {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open(dir.path()).unwrap());
        let len = std::fs::metadata(dir.path().join(FILE_NAME)).unwrap().len();
        assert!(len >= SQLITE_HEADER, "created whole: {len} bytes");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.contains(".new-")), "{names:?}");

        let other = tempfile::tempdir().unwrap();
        std::fs::create_dir(other.path().join(FILE_NAME)).unwrap();
        let err = open_err(other.path());
        assert!(
            err.message.contains("not a regular file"),
            "{}",
            err.message
        );
        assert!(
            err.causes.iter().any(|c| c.contains("directory")),
            "{err:?}"
        );
    }

    #[test]
    fn an_unreadable_record_names_the_file_and_repair() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .conn
            .execute(
                "INSERT INTO records (name, value) VALUES ('integrate', '{oops')",
                [],
            )
            .unwrap();
        let err = store.get::<String>("integrate").unwrap_err();
        assert!(
            err.message
                .contains(&dir.path().join(FILE_NAME).display().to_string()),
            "{}",
            err.message
        );
        assert!(err.hint.unwrap().contains("repair"));
    }

    #[test]
    fn links_at_the_database_or_its_neighbours_are_refused_and_not_followed() {
        for name in NEIGHBOURS {
            let dir = tempfile::tempdir().unwrap();
            let outside = tempfile::tempdir().unwrap();
            let target = outside.path().join("elsewhere.db");
            std::os::unix::fs::symlink(&target, dir.path().join(name)).unwrap();
            let err = open_err(dir.path());
            assert_eq!(err.kind, lockstep_core::ErrorKind::Usage, "{name}");
            assert!(
                err.message
                    .contains(&dir.path().join(name).display().to_string()),
                "{name}: {}",
                err.message
            );
            assert!(err.message.contains("symbolic link"), "{}", err.message);
            assert!(!target.exists(), "{name}: nothing created at the target");
            assert!(
                !dir.path().join(FILE_NAME).exists() || name == FILE_NAME,
                "{name}: no database created beside it"
            );
            if name == "lock" {
                let err = RepoLock::acquire(dir.path(), "integrate next")
                    .err()
                    .unwrap();
                assert!(err.message.contains("symbolic link"), "{}", err.message);
                assert!(!target.exists());
            }
        }
    }

    #[test]
    fn a_state_directory_that_is_not_one_says_what_it_is() {
        let top = tempfile::tempdir().unwrap();
        let file = top.path().join("lockstep");
        std::fs::write(&file, "x").unwrap();
        let dangling = top.path().join("dangling");
        std::os::unix::fs::symlink(top.path().join("none"), &dangling).unwrap();
        for (dir, what) in [
            (&file, "is a regular file, not a directory"),
            (&dangling, "is a symbolic link to nothing"),
        ] {
            let err = open_err(dir);
            assert_eq!(err.kind, lockstep_core::ErrorKind::Usage);
            assert!(err.message.contains(what), "{}", err.message);
            assert!(!err.message.contains("os error"), "{}", err.message);
            assert!(err.hint.unwrap().contains("mv "), "says what to do");
        }
        assert!(!top.path().join("none").exists());
        assert_eq!(std::fs::read(&file).unwrap(), b"x");
    }

    #[test]
    fn an_older_or_foreign_schema_is_named_with_repair_not_raw_sql() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store
                .conn
                .execute_batch(
                    "DROP TABLE probes; CREATE TABLE probes (key TEXT PRIMARY KEY, context TEXT, commit_sha TEXT, outcome TEXT, detail TEXT, log TEXT, at REAL);",
                )
                .unwrap();
        }
        let err = open_err(dir.path());
        assert!(
            err.message.contains("damaged or from another version"),
            "{}",
            err.message
        );
        assert!(
            err.causes.iter().any(|c| c.contains("no column `seconds`")),
            "{err:?}"
        );
        assert!(err.hint.unwrap().contains("lockstep integrate repair"));
        // A raw SQL error met later reads the same way, without the statement.
        let e = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(1),
            Some("no such column: seconds in SELECT key, seconds FROM probes".into()),
        );
        let err = sqlite_error(Path::new("/r/state.db"), e);
        assert!(err.message.contains("another version"), "{}", err.message);
        assert_eq!(err.causes, ["SQLite: no such column: seconds"]);
        assert!(err.hint.unwrap().contains("repair"));
        // A value of the wrong type: the same, not "check permissions".
        let e =
            rusqlite::Error::InvalidColumnType(6, "seconds".into(), rusqlite::types::Type::Blob);
        let err = sqlite_error(Path::new("/r/state.db"), e);
        assert!(err.message.contains("damaged or from another version"));
        assert!(!err.hint.as_deref().unwrap().contains("permissions"));
    }

    #[test]
    fn blobs_where_numbers_belong_are_damage_with_repair() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .conn
            .execute(
                "INSERT INTO probes VALUES ('k', 'c', 's', 'good', '', NULL, X'00', 0)",
                [],
            )
            .unwrap();
        let err = store.probe("k").unwrap_err();
        assert!(
            err.message.contains("damaged or from another version"),
            "{}",
            err.message
        );
        assert!(err.hint.unwrap().contains("lockstep integrate repair"));
    }

    /// Values of any SQLite type, for columns whatever they were declared.
    fn any_value() -> impl proptest::strategy::Strategy<Value = rusqlite::types::Value> {
        use proptest::prelude::*;
        use rusqlite::types::Value;
        prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::Integer),
            any::<f64>().prop_map(Value::Real),
            ".{0,40}".prop_map(Value::Text),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Blob),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Any bytes as state.db: opened and read, or an error naming the file.
        #[test]
        fn any_bytes_open_or_fail_naming_the_file(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..8192)) {
            let origin = Path::new("/somewhere/state.db");
            if let Err(e) = parse_state_db(&bytes, origin) {
                proptest::prop_assert!(e.message.contains("/somewhere/state.db"), "{}", e.message);
            }
        }

        /// A real database with bytes flipped anywhere after its header.
        #[test]
        fn flipped_bytes_in_a_real_database(at in 100usize..16384, value in proptest::prelude::any::<u8>()) {
            static GOOD: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
            let mut bytes = GOOD.get_or_init(real_database).clone();
            let at = at % bytes.len();
            bytes[at] = value;
            if let Err(e) = parse_state_db(&bytes, Path::new("/x/state.db")) {
                proptest::prop_assert!(e.message.contains("/x/state.db"), "{}", e.message);
            }
        }

        /// Rows of any types in every column: read back or refused naming
        /// the file, never a panic.
        #[test]
        fn rows_of_any_type_are_read_or_refused(
            journal in proptest::collection::vec(proptest::collection::vec(any_value(), 6), 0..4),
            probes in proptest::collection::vec(proptest::collection::vec(any_value(), 8), 0..4),
            records in proptest::collection::vec((any_value(), any_value()), 0..4),
        ) {
            let dir = tempfile::tempdir().unwrap();
            {
                let store = Store::open(dir.path()).unwrap();
                store.conn.execute_batch("DROP TABLE journal; DROP TABLE probes; DROP TABLE records;
                    CREATE TABLE journal (id, kind, state, started_at, finished_at, outcome);
                    CREATE TABLE probes (key, context, commit_sha, outcome, detail, log, seconds, at);
                    CREATE TABLE records (name, value);").unwrap();
                for row in &journal {
                    store.conn.execute("INSERT INTO journal VALUES (?1,?2,?3,?4,?5,?6)", rusqlite::params_from_iter(row)).unwrap();
                }
                for row in &probes {
                    store.conn.execute("INSERT INTO probes VALUES (?1,?2,?3,?4,?5,?6,?7,?8)", rusqlite::params_from_iter(row)).unwrap();
                }
                for (name, value) in &records {
                    store.conn.execute("INSERT INTO records VALUES (?1,?2)", rusqlite::params![name, value]).unwrap();
                }
            }
            let file = dir.path().join(FILE_NAME);
            let named = |e: Error| e.message.contains(&file.display().to_string());
            match Store::open(dir.path()) {
                Err(e) => proptest::prop_assert!(named(e)),
                Ok(store) => {
                    for result in [
                        store.inventory().map(drop),
                        store.unfinished_all().map(drop),
                        store.get::<serde_json::Value>("integrate").map(drop),
                        store.probe("k").map(drop),
                    ] {
                        if let Err(e) = result {
                            proptest::prop_assert!(named(e));
                        }
                    }
                }
            }
        }
    }
}
