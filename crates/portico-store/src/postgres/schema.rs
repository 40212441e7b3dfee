//! The tables: a catalog of collections, indexes and counts, one table per collection, one table
//! per index.
//!
//! Collection names and index paths come from clients, so they never appear in SQL as written.
//! A table's name is a prefix and the lowercase hex of the name's UTF-8 bytes (`c_<hex>` for
//! documents, `x_<hex::encode(collection)>_<hex::encode(path)>` for an index), as in the SQLite backend; such
//! names hold only `[a-z0-9_]`. PostgreSQL cuts identifiers at 63 bytes, so a longer name keeps
//! the first part of its hex and ends with a 128-bit hash of the whole (two FNV-1a hashes): two
//! names never share a table in practice, and the mapping needs no lookup.
//!
//! Each collection is `(id text COLLATE "C" PRIMARY KEY, doc text, body jsonb)`:
//!
//! - `doc` is the document exactly as serde_json wrote it. It is what reads return. `jsonb`
//!   alone would not do: it reorders object keys (documents keep their field order) and rewrites
//!   number text (`1.0e2` becomes `100`), and numbers are kept exactly as sent.
//! - `body` is the same document as `jsonb`, used only to narrow candidates in SQL (see
//!   `plan.rs`): PostgreSQL compares its numbers exactly (`numeric`) and its strings by code
//!   point in jsonpath, as the reference matcher does. It is `NULL` for the rare document
//!   `jsonb` cannot hold (a string with a NUL character), and such a row is always a candidate.
//!   Parsing the document once on write instead of on every scan is what keeps scans fast.
//! - `COLLATE "C"` orders ids by bytes, the order of Rust strings and of the other backends.
//!
//! Each collection's document count is kept in `portico_counts`, changed in the transaction of
//! every write that adds or removes documents, so counting a whole collection reads a few rows
//! instead of the collection. The count is spread over [`COUNT_SLOTS`] rows, each write adding to
//! one at random: concurrent inserts (from many instances) then rarely wait on one row lock
//! until the other commits.

use deadpool_postgres::{Client, GenericClient, Transaction};

use super::error::is_undefined_table;
use super::prefixes::PrefixDeltas;
use crate::index_plan::SortedIndex;
use crate::{Error, IndexSpec, Result};

/// Rows a collection's count is spread over.
pub(crate) const COUNT_SLOTS: i32 = 8;

/// Creates the catalog tables when missing. Several instances may open one database at once:
/// an advisory lock makes them take turns.
///
/// The stored format (see [`crate::format`]) is read first, under the lock: a newer one is
/// refused and the transaction rolled back, so nothing changes; an older one is migrated in this
/// transaction (Portico takes no backup of a PostgreSQL database: `pg_dump` before upgrading).
pub(crate) async fn init(client: &mut Client) -> Result<()> {
    use crate::format::{FORMAT_TABLE, FORMAT_VERSION, FormatStatus};
    let tx = client.transaction().await?;
    tx.batch_execute("SELECT pg_advisory_xact_lock(hashtextextended('portico:catalog', 0));")
        .await?;
    let status = FormatStatus::of(read_format(&tx).await?);
    if let FormatStatus::Newer(v) = status {
        return Err(crate::format::newer_error("the PostgreSQL database", v));
    }
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS portico_collections (
             name text COLLATE \"C\" PRIMARY KEY
         );
         CREATE TABLE IF NOT EXISTS portico_indexes (
             collection text COLLATE \"C\" NOT NULL,
             path text COLLATE \"C\" NOT NULL,
             is_unique boolean NOT NULL DEFAULT false,
             PRIMARY KEY (collection, path)
         );
         CREATE TABLE IF NOT EXISTS portico_sorted (
             collection text COLLATE \"C\" NOT NULL,
             name text COLLATE \"C\" NOT NULL,
             spec text NOT NULL,
             multikey boolean NOT NULL DEFAULT false,
             ready boolean NOT NULL DEFAULT false,
             PRIMARY KEY (collection, name)
         );
         CREATE TABLE IF NOT EXISTS portico_counts (
             name text COLLATE \"C\" NOT NULL,
             slot integer NOT NULL,
             n bigint NOT NULL,
             PRIMARY KEY (name, slot)
         );",
    )
    .await?;
    tx.batch_execute(super::prefixes::TABLE).await?;
    // Change stamps (see `stamp.rs`): rows for every collection, also those made before
    // stamps existed, so that from now on every write moves its collection's stamp.
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS portico_stamps (
             name text COLLATE \"C\" NOT NULL,
             slot integer NOT NULL,
             v bigint NOT NULL,
             PRIMARY KEY (name, slot)
         );
         INSERT INTO portico_stamps (name, slot, v)
             SELECT name, s, 0 FROM portico_collections, generate_series(0, {} - 1) AS s
             ON CONFLICT (name, slot) DO NOTHING;",
        super::stamp::SLOTS
    ))
    .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS portico_search (
             collection text COLLATE \"C\" PRIMARY KEY,
             fields text NOT NULL
         )",
    )
    .await?;
    if status != FormatStatus::Current {
        // Format 1 to 2 (and a new database): the catalog as it was, plus the version row.
        tx.batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {FORMAT_TABLE} (
                 id integer PRIMARY KEY CHECK (id = 1),
                 version integer NOT NULL
             );
             INSERT INTO {FORMAT_TABLE} (id, version) VALUES (1, {FORMAT_VERSION})
                 ON CONFLICT (id) DO UPDATE SET version = excluded.version;"
        ))
        .await?;
    }
    tx.commit().await?;
    count_unmarked_prefixes(client).await?;
    if let FormatStatus::Older(from) = status {
        tracing::warn!(
            "the PostgreSQL database was migrated from stored format {from} to {FORMAT_VERSION} \
             in one transaction (Portico takes no backup of a PostgreSQL database; keep a \
             pg_dump from before the upgrade)"
        );
    }
    Ok(())
}

/// The stored format of the database `client` is on, as `crate::format` defines it: `None`
/// without Portico's catalog.
pub(crate) async fn read_format(client: &impl GenericClient) -> Result<Option<u32>> {
    use crate::format::{FORMAT_TABLE, UNVERSIONED_FORMAT};
    let row = client
        .query_one(
            &format!(
                "SELECT to_regclass('{FORMAT_TABLE}') IS NOT NULL, \
                 to_regclass('portico_collections') IS NOT NULL"
            ),
            &[],
        )
        .await?;
    let (versioned, catalog): (bool, bool) = (row.get(0), row.get(1));
    if versioned {
        let version: Option<i32> = client
            .query_opt(
                &format!("SELECT version FROM {FORMAT_TABLE} WHERE id = 1"),
                &[],
            )
            .await?
            .map(|row| row.get(0));
        return match version.and_then(|v| u32::try_from(v).ok()) {
            Some(v) => Ok(Some(v)),
            None => Err(Error::Open(format!(
                "the table {FORMAT_TABLE} holds no format version (was it edited by hand?)"
            ))),
        };
    }
    Ok(catalog.then_some(UNVERSIONED_FORMAT))
}

/// Takes the transaction-scoped advisory lock of `collection`, which every change of its tables
/// (creating it, adding an index, dropping it) holds, so two instances never run such DDL at once.
pub(crate) async fn lock_ddl(tx: &Transaction<'_>, collection: &str) -> Result<()> {
    let stmt = tx
        .prepare_cached("SELECT pg_advisory_xact_lock(hashtextextended('portico:c:' || $1, 0))")
        .await?;
    tx.execute(&stmt, &[&collection]).await?;
    Ok(())
}

/// Takes the lock every write of `collection`'s documents holds (`ROW EXCLUSIVE`, which writers
/// share) before it reads the list of indexes. `ensure_index` takes a `SHARE` lock, which waits
/// for those writers and holds back new ones, so no write can miss an index being created.
/// `Ok(false)` when the collection does not exist; the transaction is then aborted.
pub(crate) async fn lock_for_write(tx: &Transaction<'_>, collection: &str) -> Result<bool> {
    let sql = format!(
        "LOCK TABLE {} IN ROW EXCLUSIVE MODE",
        collection_table(collection)
    );
    match tx.batch_execute(&sql).await {
        Ok(()) => Ok(true),
        Err(e) if is_undefined_table(&e) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// [`lock_for_write`], then the lists of indexes (equality and sorted, the sorted ones being
/// filled included: a write keeps every index whose catalog row it sees), in one round trip
/// (the statements are pipelined). `None` when the collection does not exist (the lists'
/// errors, an aborted transaction, are then moot); the transaction is aborted.
pub(crate) async fn lock_and_indexes(
    tx: &Transaction<'_>,
    collection: &str,
) -> Result<Option<Indexes>> {
    let (locked, paths, sorted) = tokio::join!(
        lock_for_write(tx, collection),
        indexed_paths(tx, collection),
        sorted_indexes(tx, collection, false)
    );
    if !locked? {
        return Ok(None);
    }
    Ok(Some(Indexes {
        paths: paths?,
        sorted: sorted?,
        prefixes: PrefixDeltas::default(),
    }))
}

/// The indexes a write keeps: the equality indexes and the sorted ones.
#[derive(Debug, Default)]
pub(crate) struct Indexes {
    /// The equality indexes (`ensure_index`, `ensure_unique_index`).
    pub(crate) paths: Vec<IndexedPath>,
    /// The sorted indexes (`ensure_sorted_index`), ready or being filled; `multikey` is set here
    /// as the write sets it in the catalog.
    pub(crate) sorted: Vec<SortedIndex>,
    /// The write's changes to the sorted indexes' prefix counts, applied just before it
    /// commits.
    pub(crate) prefixes: PrefixDeltas,
}

impl Indexes {
    /// True when there is no index to keep.
    pub(crate) fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.sorted.is_empty()
    }
}

/// Creates `collection` when missing, in its own transaction.
pub(crate) async fn create_collection(client: &mut Client, collection: &str) -> Result<()> {
    check_text(collection, "a collection name")?;
    let tx = client.transaction().await?;
    lock_ddl(&tx, collection).await?;
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {} (
             id text COLLATE \"C\" PRIMARY KEY,
             doc text NOT NULL,
             body jsonb
         )",
        collection_table(collection)
    ))
    .await?;
    let stmt = tx
        .prepare_cached(
            "INSERT INTO portico_collections (name) VALUES ($1) ON CONFLICT (name) DO NOTHING",
        )
        .await?;
    tx.execute(&stmt, &[&collection]).await?;
    // The count's slots, and the change stamp's (kept when the collection is dropped: a stamp
    // never goes back).
    for (table, slots) in [
        ("portico_counts (name, slot, n)", COUNT_SLOTS),
        ("portico_stamps (name, slot, v)", super::stamp::SLOTS),
    ] {
        let stmt = tx
            .prepare_cached(&format!(
                "INSERT INTO {table} SELECT $1, s, 0 FROM generate_series(0, $2 - 1) AS s \
                 ON CONFLICT (name, slot) DO NOTHING"
            ))
            .await?;
        tx.execute(&stmt, &[&collection, &slots]).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Refuses text PostgreSQL cannot store (a NUL character) in a name.
pub(crate) fn check_text(name: &str, what: &str) -> Result<()> {
    if name.contains('\0') {
        return Err(Error::InvalidName(format!(
            "{what} must not contain a NUL character"
        )));
    }
    Ok(())
}

/// The count of `collection` kept in the catalog (0 when it does not exist).
pub(crate) async fn stored_count(client: &Client, collection: &str) -> Result<u64> {
    let stmt = client
        .prepare_cached("SELECT coalesce(sum(n), 0)::bigint FROM portico_counts WHERE name = $1")
        .await?;
    let n: i64 = client.query_one(&stmt, &[&collection]).await?.get(0);
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Adds `delta` to the count of `collection`, on one slot chosen at random. Call inside the
/// write transaction that inserted or removed the documents.
pub(crate) async fn add_to_count(tx: &Transaction<'_>, collection: &str, delta: i64) -> Result<()> {
    if delta == 0 {
        return Ok(());
    }
    let slot: i32 = rand::random_range(0..COUNT_SLOTS);
    let stmt = tx
        .prepare_cached("UPDATE portico_counts SET n = n + $3 WHERE name = $1 AND slot = $2")
        .await?;
    tx.execute(&stmt, &[&collection, &slot, &delta]).await?;
    Ok(())
}

/// One index of a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexedPath {
    /// The dotted path.
    pub(crate) path: String,
    /// True when no two documents may share a value there.
    pub(crate) unique: bool,
}

/// The indexes of `collection`, sorted by path.
pub(crate) async fn indexed_paths(
    client: &impl GenericClient,
    collection: &str,
) -> Result<Vec<IndexedPath>> {
    let stmt = client
        .prepare_cached(
            "SELECT path, is_unique FROM portico_indexes WHERE collection = $1 ORDER BY path",
        )
        .await?;
    let rows = client.query(&stmt, &[&collection]).await?;
    Ok(rows
        .iter()
        .map(|row| IndexedPath {
            path: row.get(0),
            unique: row.get(1),
        })
        .collect())
}

/// Creates the (empty) index table of `path` and records it in the catalog. Call inside a
/// transaction holding [`lock_ddl`], after checking that the index does not exist.
pub(crate) async fn create_index_table(
    tx: &Transaction<'_>,
    collection: &str,
    path: &str,
) -> Result<()> {
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {} (
             value bytea NOT NULL,
             id text COLLATE \"C\" NOT NULL,
             PRIMARY KEY (value, id)
         )",
        index_table(collection, path)
    ))
    .await?;
    tx.execute(
        "INSERT INTO portico_indexes (collection, path) VALUES ($1, $2) \
         ON CONFLICT (collection, path) DO NOTHING",
        &[&collection, &path],
    )
    .await?;
    Ok(())
}

/// Makes the index table of `path` unique over `value`, leaving out the key of `null`. Call
/// inside a transaction holding [`lock_ddl`].
///
/// # Errors
/// A PostgreSQL unique violation when stored documents share a value already.
pub(crate) async fn make_unique(tx: &Transaction<'_>, collection: &str, path: &str) -> Result<()> {
    let result = tx
        .batch_execute(&format!(
            "CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} (value) WHERE value <> '\\x{}'::bytea",
            unique_index_name(collection, path),
            index_table(collection, path),
            hex::encode(crate::index_key::NULL_KEY),
        ))
        .await;
    if let Err(e) = result {
        if super::error::unique_violation_table(&e).is_some() {
            return Err(Error::DuplicateKey {
                collection: collection.to_string(),
                path: path.to_string(),
            });
        }
        return Err(e.into());
    }
    tx.execute(
        "UPDATE portico_indexes SET is_unique = true WHERE collection = $1 AND path = $2",
        &[&collection, &path],
    )
    .await?;
    Ok(())
}

/// The catalog name of a sorted index: its fields as written (`ownerId,-createdAt`); a unique
/// index and a plain one over the same fields are one index.
pub(crate) fn sorted_name(spec: &IndexSpec) -> String {
    spec.fields_name()
}

/// The statement listing a collection's sorted indexes (`$1`) in name order, all of them or,
/// when `$2`, only the ready ones; its rows are read by [`sorted_from_rows`].
pub(crate) const SORTED_INDEXES: &str = "SELECT spec, multikey FROM portico_sorted \
     WHERE collection = $1 AND (ready OR NOT $2) ORDER BY name";

/// The sorted indexes of `collection` in name order: all of them (what writers keep), or only
/// the ready ones (filled: what reads may use).
pub(crate) async fn sorted_indexes(
    client: &impl GenericClient,
    collection: &str,
    ready_only: bool,
) -> Result<Vec<SortedIndex>> {
    let stmt = client.prepare_cached(SORTED_INDEXES).await?;
    let rows = client.query(&stmt, &[&collection, &ready_only]).await?;
    sorted_from_rows(collection, &rows)
}

/// The indexes of `collection` in the rows of [`SORTED_INDEXES`].
pub(crate) fn sorted_from_rows(
    collection: &str,
    rows: &[tokio_postgres::Row],
) -> Result<Vec<SortedIndex>> {
    rows.iter()
        .map(|row| {
            let text: &str = row.try_get(0)?;
            let spec = serde_json::from_str(text)
                .map_err(|e| Error::Backend(format!("postgres: index {text:?}: {e}")))
                .and_then(|v| IndexSpec::parse(&v))?;
            Ok(SortedIndex {
                parts: spec.split_paths(),
                table: sorted_table(collection, &spec),
                spec,
                multikey: row.try_get(1)?,
            })
        })
        .collect()
}

/// The catalog row of the sorted index named as `spec`: its spec, and whether it is ready.
pub(crate) async fn sorted_entry(
    client: &impl GenericClient,
    collection: &str,
    spec: &IndexSpec,
) -> Result<Option<(IndexSpec, bool)>> {
    let row = client
        .query_opt(
            "SELECT spec, ready FROM portico_sorted WHERE collection = $1 AND name = $2",
            &[&collection, &sorted_name(spec)],
        )
        .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let text: &str = row.try_get(0)?;
    let stored = serde_json::from_str(text)
        .map_err(|e| Error::Backend(format!("postgres: index {text:?}: {e}")))
        .and_then(|v| IndexSpec::parse(&v))?;
    Ok(Some((stored, row.try_get(1)?)))
}

/// Creates the (empty) table of the sorted index `spec` and its catalog row, not ready. Call
/// inside a transaction holding [`lock_ddl`] and the collection's `SHARE` lock, after checking
/// that the index does not exist.
///
/// The table is `(k0 bytea, ..., id text)` with a unique btree index on `(k0, k1 DESC, ...,
/// id)` in the spec's directions: `bytea` compares bytewise (as `memcmp`), the order keys'
/// order, and `id` is `COLLATE "C"`, the documents' `_id` order.
pub(crate) async fn create_sorted_table(
    tx: &Transaction<'_>,
    collection: &str,
    spec: &IndexSpec,
) -> Result<()> {
    let columns: Vec<String> = (0..spec.fields.len())
        .map(|i| format!("k{i} bytea NOT NULL"))
        .collect();
    let key = crate::index_plan::key_columns(spec, "");
    let table = sorted_table(collection, spec);
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {table} ({}, id text COLLATE \"C\" NOT NULL); \
         CREATE UNIQUE INDEX IF NOT EXISTS {} ON {table} ({}, id)",
        columns.join(", "),
        sorted_key_name(collection, spec),
        key
    ))
    .await?;
    tx.execute(
        "INSERT INTO portico_sorted (collection, name, spec, multikey, ready) \
         VALUES ($1, $2, $3, false, false)",
        &[
            &collection,
            &sorted_name(spec),
            &spec.to_value().to_string(),
        ],
    )
    .await?;
    Ok(())
}

/// Records that the sorted index `spec` of `collection` holds several entries for a document.
/// Call inside the write transaction that wrote them.
pub(crate) async fn set_multikey(
    client: &impl GenericClient,
    collection: &str,
    spec: &IndexSpec,
) -> Result<()> {
    let stmt = client
        .prepare_cached(
            "UPDATE portico_sorted SET multikey = true \
             WHERE collection = $1 AND name = $2 AND NOT multikey",
        )
        .await?;
    client
        .execute(&stmt, &[&collection, &sorted_name(spec)])
        .await?;
    Ok(())
}

/// Drops the sorted index named as `spec` (its table and catalog row); false when there was
/// none. Call inside a transaction holding [`lock_ddl`] and the collection's `SHARE` lock (a
/// writer that read the catalog before must not find the table gone).
pub(crate) async fn drop_sorted(
    tx: &Transaction<'_>,
    collection: &str,
    spec: &IndexSpec,
) -> Result<bool> {
    let removed = tx
        .execute(
            "DELETE FROM portico_sorted WHERE collection = $1 AND name = $2",
            &[&collection, &sorted_name(spec)],
        )
        .await?;
    let table = sorted_table(collection, spec);
    tx.batch_execute(&format!("DROP TABLE IF EXISTS {table}"))
        .await?;
    super::prefixes::forget(tx, &table).await?;
    Ok(removed > 0)
}

/// Drops `collection`, its index tables and its catalog rows. Call inside a transaction holding
/// [`lock_ddl`].
pub(crate) async fn drop_collection(tx: &Transaction<'_>, collection: &str) -> Result<()> {
    for index in sorted_indexes(tx, collection, false).await? {
        tx.batch_execute(&format!("DROP TABLE IF EXISTS {}", index.table))
            .await?;
        super::prefixes::forget(tx, &index.table).await?;
    }
    for index in indexed_paths(tx, collection).await? {
        tx.batch_execute(&format!(
            "DROP TABLE IF EXISTS {}",
            index_table(collection, &index.path)
        ))
        .await?;
    }
    tx.batch_execute(&format!(
        "DROP TABLE IF EXISTS {}",
        collection_table(collection)
    ))
    .await?;
    for sql in [
        "DELETE FROM portico_search WHERE collection = $1",
        "DELETE FROM portico_indexes WHERE collection = $1",
        "DELETE FROM portico_sorted WHERE collection = $1",
        "DELETE FROM portico_collections WHERE name = $1",
        "DELETE FROM portico_counts WHERE name = $1",
    ] {
        tx.execute(sql, &[&collection]).await?;
    }
    Ok(())
}

/// The names of all collections, sorted by their UTF-8 bytes.
pub(crate) async fn list_collections(client: &Client) -> Result<Vec<String>> {
    let rows = client
        .query("SELECT name FROM portico_collections ORDER BY name", &[])
        .await?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}

/// The quoted name of the table holding `collection`'s documents.
pub(crate) fn collection_table(collection: &str) -> String {
    identifier("c_", &hex::encode(collection))
}

/// The quoted name of the table indexing `collection` by `path`: `(value bytea, id text)`,
/// primary key `(value, id)`.
pub(crate) fn index_table(collection: &str, path: &str) -> String {
    identifier(
        "x_",
        &format!("{}_{}", hex::encode(collection), hex::encode(path)),
    )
}

/// The quoted name of the table of the sorted index `spec` of `collection`:
/// `o_<hex(collection)>_<hex(fields as written)>` (cut and hashed as [`identifier`] does when
/// long).
pub(crate) fn sorted_table(collection: &str, spec: &IndexSpec) -> String {
    identifier(
        "o_",
        &format!(
            "{}_{}",
            hex::encode(collection),
            hex::encode(sorted_name(spec))
        ),
    )
}

/// The name of the btree index of [`sorted_table`] (indexes share the tables' namespace).
fn sorted_key_name(collection: &str, spec: &IndexSpec) -> String {
    identifier(
        "k_",
        &format!(
            "{}_{}",
            hex::encode(collection),
            hex::encode(sorted_name(spec))
        ),
    )
}

fn unique_index_name(collection: &str, path: &str) -> String {
    identifier(
        "u_",
        &format!("{}_{}", hex::encode(collection), hex::encode(path)),
    )
}

/// PostgreSQL's longest identifier, in bytes.
const MAX_IDENTIFIER: usize = 63;

/// `prefix` + `key` quoted, or when that is too long for PostgreSQL, `prefix` + the start of
/// `key` + `_` + a 128-bit hash of `key` (32 hex digits).
fn identifier(prefix: &str, key: &str) -> String {
    if prefix.len() + key.len() <= MAX_IDENTIFIER {
        return format!("\"{prefix}{key}\"");
    }
    let keep = MAX_IDENTIFIER - prefix.len() - 1 - 32;
    let hash = format!(
        "{:016x}{:016x}",
        fnv1a(key, 0xcbf2_9ce4_8422_2325),
        fnv1a(key, 0x6c62_272e_07bb_0142)
    );
    format!("\"{prefix}{}_{hash}\"", &key[..keep])
}

/// 64-bit FNV-1a of `s` from `basis` (stable across builds, unlike std's hasher).
fn fnv1a(s: &str, basis: u64) -> u64 {
    s.bytes().fold(basis, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Counts the prefixes of every ready compound sorted index without a marker (made before the
/// counts were kept; see `prefixes.rs`), in a transaction per collection holding its `SHARE`
/// lock for the count. Collections whose indexes are all marked are not locked.
async fn count_unmarked_prefixes(client: &mut Client) -> Result<()> {
    let rows = client
        .query(
            "SELECT DISTINCT collection FROM portico_sorted WHERE ready",
            &[],
        )
        .await?;
    let collections: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
    for collection in collections {
        if unmarked(&*client, &collection).await?.is_empty() {
            continue;
        }
        let tx = client.transaction().await?;
        lock_ddl(&tx, &collection).await?;
        tx.batch_execute(&format!(
            "LOCK TABLE {} IN SHARE MODE",
            collection_table(&collection)
        ))
        .await?;
        for index in unmarked(&tx, &collection).await? {
            super::prefixes::recount(&tx, &index).await?;
        }
        tx.commit().await?;
    }
    Ok(())
}

/// The ready compound sorted indexes of `collection` without a prefix count marker.
async fn unmarked(client: &impl GenericClient, collection: &str) -> Result<Vec<SortedIndex>> {
    let mut out = Vec::new();
    for index in sorted_indexes(client, collection, true).await? {
        if super::prefixes::counted(&index) && !super::prefixes::marked(client, &index).await? {
            out.push(index);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_cut_and_hashed_within_the_limit() {
        let long = "services.resume.loginTokens.hashedToken";
        let a = index_table("users", long);
        let b = index_table("users", "services.resume.loginTokens.hashedTokem");
        assert!(a.len() - 2 <= MAX_IDENTIFIER, "{a}");
        assert_ne!(a, b);
        assert_eq!(collection_table("ab"), "\"c_6162\"");
        let spec = IndexSpec::new(["ownerId", "-createdAt", "tags.name"])
            .unwrap_or_else(|e| panic!("{e}"));
        let sorted = sorted_table("notifications", &spec);
        let key = sorted_key_name("notifications", &spec);
        assert_ne!(sorted, key);
        for name in [&a, &b, &collection_table(&"x".repeat(200)), &sorted, &key] {
            let inner = &name[1..name.len() - 1];
            assert!(inner.len() <= MAX_IDENTIFIER);
            assert!(
                inner
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            );
        }
    }
}
