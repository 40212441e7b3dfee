//! Full-text search on PostgreSQL: a generated `tsvector` column with a GIN index.
//!
//! `ensure_search` adds the column `search` to the collection's table, generated from the
//! `jsonb` copy of each document: `to_tsvector('simple', ...)` of each field, which takes every
//! string value in it (through arrays and objects). PostgreSQL computes a generated column on
//! every insert and update of the row, whatever writes it (single writes, batches, streamed
//! imports, another instance), so the index cannot fall behind. The `simple` configuration cuts
//! words and lowercases them, without stemming or stop words, as the other backends do. A
//! search is `plainto_tsquery('simple', words)` (every word required, no operator the caller
//! could send), ranked by `ts_rank`.

use deadpool_postgres::{Client, GenericClient};
use futures::TryStreamExt;

use super::error::is_undefined_table;
use super::query::decode;
use super::schema::{self, collection_table};
use super::write::check_name;
use crate::search::{Pager, Search, check_fields, project};
use crate::{Document, Error, Result};

fn gin_index(collection: &str) -> String {
    format!("\"s_{}\"", hex::encode(collection))
}

/// The fields the index of `collection` covers, when it has one.
async fn stored_fields(
    client: &impl GenericClient,
    collection: &str,
) -> Result<Option<Vec<String>>> {
    let row = match client
        .query_opt(
            "SELECT fields FROM portico_search WHERE collection = $1",
            &[&collection],
        )
        .await
    {
        Ok(row) => row,
        Err(e) if is_undefined_table(&e) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    row.map(|row| {
        let text: String = row.try_get(0)?;
        serde_json::from_str(&text)
            .map_err(|e| Error::Backend(format!("postgres: search catalog of {collection:?}: {e}")))
    })
    .transpose()
}

/// Makes the index of `collection` cover `fields` (see [`crate::Store::ensure_search`]).
pub(crate) async fn ensure(client: &mut Client, collection: &str, fields: &[String]) -> Result<()> {
    check_name(collection)?;
    check_fields(fields)?;
    schema::create_collection(client, collection).await?;
    let tx = super::write_tx::WriteTx::begin(client).await?;
    schema::lock_ddl(&tx, collection).await?;
    if stored_fields(&*tx, collection).await?.as_deref() == Some(fields) {
        return Ok(());
    }
    let table = collection_table(collection);
    // The fields were checked: letters, digits, `_` and `-` only.
    let vector: Vec<String> = fields
        .iter()
        .map(|f| format!("to_tsvector('simple', coalesce(body -> '{f}', 'null'::jsonb))"))
        .collect();
    tx.batch_execute(&format!(
        "ALTER TABLE {table} DROP COLUMN IF EXISTS search;
         ALTER TABLE {table} ADD COLUMN search tsvector GENERATED ALWAYS AS ({}) STORED;
         CREATE INDEX {} ON {table} USING gin (search);",
        vector.join(" || "),
        gin_index(collection),
    ))
    .await?;
    let listed = serde_json::to_string(fields).map_err(|e| Error::Backend(e.to_string()))?;
    tx.execute(
        "INSERT INTO portico_search (collection, fields) VALUES ($1, $2) \
         ON CONFLICT (collection) DO UPDATE SET fields = excluded.fields",
        &[&collection, &listed],
    )
    .await?;
    // No document changed: nothing to tell.
    tx.commit(super::prefixes::PrefixDeltas::default()).await?;
    Ok(())
}

/// The answer to `search` over `collection` (see [`crate::Store::search`]).
pub(crate) async fn search(
    client: &Client,
    collection: &str,
    search: &Search,
) -> Result<(Vec<Document>, u64)> {
    check_fields(&search.fields)?;
    let words = search.words()?;
    match stored_fields(client, collection).await? {
        Some(fields) if fields == search.fields => {}
        None if !schema::list_collections(client)
            .await?
            .iter()
            .any(|c| c == collection) =>
        {
            return Ok((Vec::new(), 0));
        }
        _ => {
            return Err(Error::Backend(format!(
                "postgres: collection {collection:?} has no search index over {:?}",
                search.fields
            )));
        }
    }
    if words.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let text = words.join(" ");
    let table = collection_table(collection);
    let ranked = format!(
        "SELECT id, doc FROM {table}, plainto_tsquery('simple', $1) AS q \
         WHERE search @@ q ORDER BY ts_rank(search, q) DESC, id"
    );
    if search.selector.is_all() {
        let total: i64 = client
            .query_one(
                &format!(
                    "SELECT count(*) FROM {table} WHERE search @@ plainto_tsquery('simple', $1)"
                ),
                &[&text],
            )
            .await?
            .try_get(0)?;
        let limit = search.limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        let offset = i64::try_from(search.skip).unwrap_or(i64::MAX);
        let rows = client
            .query(
                &format!("{ranked} LIMIT $2 OFFSET $3"),
                &[&text, &limit, &offset],
            )
            .await?;
        let docs = rows
            .iter()
            .map(|row| decode(collection, row).map(|(_, doc)| doc))
            .collect::<Result<Vec<_>>>()?;
        return Ok((project(search, docs), u64::try_from(total).unwrap_or(0)));
    }
    let stmt = client.prepare_cached(&ranked).await?;
    let rows = client.query_raw(&stmt, [&text]).await?;
    let mut rows = std::pin::pin!(rows);
    let mut pager = Pager::new(search);
    while let Some(row) = rows.try_next().await? {
        pager.offer(decode(collection, &row)?.1);
    }
    Ok(pager.finish())
}
