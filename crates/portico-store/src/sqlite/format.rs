//! The stored format in a SQLite file (see [`crate::format`]): reading it, and writing it.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::format::{FORMAT_TABLE, FORMAT_VERSION, UNVERSIONED_FORMAT};
use crate::{Error, Result};

/// True when the database of `conn` has a table named `name`.
fn has_table(conn: &Connection, name: &str) -> Result<bool> {
    Ok(conn
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1")?
        .exists([name])?)
}

/// The stored format of the database `conn` is on: `None` without Portico's catalog.
pub(crate) fn read(conn: &Connection) -> Result<Option<u32>> {
    if has_table(conn, FORMAT_TABLE)? {
        let version: Option<i64> = conn
            .query_row(
                &format!("SELECT version FROM {FORMAT_TABLE} WHERE id = 1"),
                [],
                |row| row.get(0),
            )
            .optional()?;
        return match version.and_then(|v| u32::try_from(v).ok()) {
            Some(v) => Ok(Some(v)),
            None => Err(Error::Open(format!(
                "the table {FORMAT_TABLE} holds no format version (was it edited by hand?)"
            ))),
        };
    }
    if has_table(conn, "portico_collections")? {
        return Ok(Some(UNVERSIONED_FORMAT));
    }
    Ok(None)
}

/// Writes [`FORMAT_VERSION`] into the database (creating the table). Call inside the
/// transaction that made or migrated the tables.
pub(crate) fn stamp(conn: &Connection) -> Result<()> {
    conn.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {FORMAT_TABLE} (
             id INTEGER PRIMARY KEY CHECK (id = 1),
             version INTEGER NOT NULL
         );
         INSERT INTO {FORMAT_TABLE} (id, version) VALUES (1, {FORMAT_VERSION})
             ON CONFLICT (id) DO UPDATE SET version = excluded.version;"
    ))?;
    Ok(())
}

/// The stored format of the file at `path`, read without changing it: `None` when the file does
/// not exist, is empty, or has no Portico tables.
///
/// The file is opened read and write (as the server opens it; a read-only connection could not
/// read a WAL database whose `-shm` is missing) but only read; SQLite changes the main file only
/// to write a transaction or to checkpoint a WAL that holds committed pages.
///
/// # Errors
/// [`Error::Open`] when the file is not a SQLite database or cannot be read.
pub fn read_stored_format(path: &Path) -> Result<Option<u32>> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() == 0 => return Ok(None),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::Open(format!("{}: {e}", path.display()))),
    }
    let place = |e: Error| match e {
        Error::Open(m) | Error::Backend(m) => Error::Open(format!("{}: {m}", path.display())),
        other => other,
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| super::pool::open_error(path, &e))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| super::pool::open_error(path, &e))?;
    // The first read of the file: where "not a database" shows up.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |row| {
        row.get::<_, i64>(0)
    })
    .map_err(|e| super::pool::open_error(path, &e))?;
    read(&conn).map_err(place)
}
