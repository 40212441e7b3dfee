//! Aggregates in SQL: `GROUP BY` over the stored JSON (see [`crate::Aggregate`]), as the
//! SQLite backend does: in PostgreSQL when the selector is equalities of top-level fields with
//! strings, else with the reference matcher over the streamed candidates.

use std::ops::ControlFlow;

use deadpool_postgres::{Client, GenericClient};
use serde_json::{Number, Value};
use tokio_postgres::types::ToSql;

use super::error::is_undefined_table;
use super::query::for_each_candidate;
use super::schema::collection_table;
use crate::aggregate::{Groups, MAX_GROUPS};
use crate::{Aggregate, Document, Result};

/// The stored document as `jsonb`.
const DOC: &str = "coalesce(body, doc::jsonb)";

fn number(text: Option<String>) -> Option<Number> {
    text.and_then(|t| serde_json::from_str::<Number>(&t).ok())
}

/// The groups of `spec` over `collection`.
pub(crate) async fn aggregate(
    client: &mut Client,
    collection: &str,
    spec: &Aggregate,
) -> Result<Vec<Document>> {
    spec.check()?;
    let mut groups = Groups::new(spec);
    match spec.selector.sql_equalities() {
        Some(equalities) => in_sql(client, collection, spec, &equalities, &mut groups).await?,
        None => {
            let group = spec.group.clone();
            let selector = spec.selector.clone();
            let mut failed = None;
            for_each_candidate(client, collection, &spec.selector, None, |_, doc| {
                if selector.matches(&doc)
                    && let Err(e) = groups.add_doc(group.as_deref(), &doc)
                {
                    failed = Some(e);
                    return Ok(ControlFlow::Break(()));
                }
                Ok(ControlFlow::Continue(()))
            })
            .await?;
            if let Some(e) = failed {
                return Err(e);
            }
        }
    }
    Ok(groups.finish(spec))
}

async fn in_sql(
    client: &Client,
    collection: &str,
    spec: &Aggregate,
    equalities: &[(&str, &str)],
    groups: &mut Groups,
) -> Result<()> {
    let mut params: Vec<Box<dyn ToSql + Sync + Send>> = Vec::new();
    let mut param = |value: Box<dyn ToSql + Sync + Send>| {
        params.push(value);
        params.len()
    };
    let path = |p: &str| -> Vec<String> { p.split('.').map(str::to_owned).collect() };
    let key = match &spec.group {
        Some(g) => format!("({DOC} #> ${}::text[])::text", param(Box::new(path(g)))),
        None => "NULL::text".to_owned(),
    };
    let mut columns = vec![format!("{key} AS k"), "count(*)".to_owned()];
    for field in groups.fields() {
        let n = param(Box::new(path(field)));
        let numeric = format!(
            "CASE WHEN jsonb_typeof({DOC} #> ${n}::text[]) = 'number' THEN ({DOC} #> ${n}::text[])::numeric END"
        );
        columns.push(format!("sum({numeric})::text"));
        columns.push(format!("count({numeric})"));
        columns.push(format!("min({numeric})::text"));
        columns.push(format!("max({numeric})::text"));
    }
    let mut conditions = Vec::new();
    for (field, value) in equalities {
        let f = param(Box::new((*field).to_owned()));
        let v = param(Box::new((*value).to_owned()));
        conditions.push(format!(
            "({DOC} -> ${f}::text = to_jsonb(${v}::text) OR \
             (jsonb_typeof({DOC} -> ${f}::text) = 'array' AND {DOC} -> ${f}::text @> jsonb_build_array(${v}::text)))"
        ));
    }
    let mut sql = format!(
        "SELECT {} FROM {}",
        columns.join(", "),
        collection_table(collection)
    );
    if !conditions.is_empty() {
        sql.push_str(&format!(" WHERE {}", conditions.join(" AND ")));
    }
    sql.push_str(&format!(" GROUP BY 1 LIMIT {}", MAX_GROUPS + 1));
    let refs: Vec<&(dyn ToSql + Sync)> = params
        .iter()
        .map(|p| p.as_ref() as &(dyn ToSql + Sync))
        .collect();
    let rows = match client.query(&sql, &refs).await {
        Ok(rows) => rows,
        Err(e) if is_undefined_table(&e) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let width = groups.fields().len();
    for row in rows {
        let key = row
            .get::<_, Option<String>>(0)
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        let count: i64 = row.get(1);
        if count == 0 {
            continue;
        }
        let mut figures = Vec::with_capacity(width);
        for i in 0..width {
            let at = 2 + i * 4;
            let n: i64 = row.get(at + 1);
            figures.push((
                number(row.get(at)),
                u64::try_from(n).unwrap_or(0),
                number(row.get(at + 2)),
                number(row.get(at + 3)),
            ));
        }
        groups.add_row(key, u64::try_from(count).unwrap_or(0), figures)?;
    }
    Ok(())
}
