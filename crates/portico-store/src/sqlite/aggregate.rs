//! Aggregates in SQL: `GROUP BY` over the stored JSON text (see [`crate::Aggregate`]).
//!
//! When the selector is one SQL decides exactly (equalities of top-level fields with strings,
//! as an owner scope is), SQLite computes each group's figures and only the groups come back.
//! Any other selector is decided by the reference matcher over the candidates, document by
//! document, with the same per-group accumulators.

use std::ops::ControlFlow;

use rusqlite::Connection;
use rusqlite::types::{Value as SqlValue, ValueRef};
use serde_json::{Number, Value};

use super::plan::{for_each_candidate, plan};
use super::schema::{collection_exists, collection_table};
use crate::aggregate::{Groups, MAX_GROUPS};
use crate::{Aggregate, Document, Result};

/// The SQLite JSON path of a checked aggregate path (`a.b` -> `$."a"."b"`).
fn json_path(path: &str) -> String {
    let mut out = String::from("$");
    for part in path.split('.') {
        out.push_str(&format!(".\"{part}\""));
    }
    out
}

fn number(value: ValueRef<'_>) -> Option<Number> {
    match value {
        ValueRef::Integer(i) => Some(i.into()),
        ValueRef::Real(f) => Number::from_f64(f),
        _ => None,
    }
}

/// The groups of `spec` over `collection`.
pub(crate) fn aggregate(
    conn: &Connection,
    collection: &str,
    spec: &Aggregate,
) -> Result<Vec<Document>> {
    spec.check()?;
    let mut groups = Groups::new(spec);
    let result = match spec.selector.sql_equalities() {
        Some(equalities) => in_sql(conn, collection, spec, &equalities, &mut groups),
        None => {
            let plan = plan(conn, collection, &spec.selector)?;
            for_each_candidate(conn, collection, &plan, |_, doc| {
                if spec.selector.matches(&doc) {
                    groups.add_doc(spec.group.as_deref(), &doc)?;
                }
                Ok(ControlFlow::Continue(()))
            })
        }
    };
    if let Err(e) = result {
        if collection_exists(conn, collection)? {
            return Err(e);
        }
        groups = Groups::new(spec);
    }
    Ok(groups.finish(spec))
}

fn in_sql(
    conn: &Connection,
    collection: &str,
    spec: &Aggregate,
    equalities: &[(&str, &str)],
    groups: &mut Groups,
) -> Result<()> {
    let mut args: Vec<SqlValue> = Vec::new();
    let key = match &spec.group {
        Some(path) => format!("doc -> '{}'", json_path(path)),
        None => "NULL".to_owned(),
    };
    let mut columns = vec![format!("{key} AS k"), "count(*)".to_owned()];
    for path in groups.fields() {
        let p = json_path(path);
        let numeric = format!(
            "CASE WHEN json_type(doc, '{p}') IN ('integer', 'real') THEN json_extract(doc, '{p}') END"
        );
        columns.push(format!("sum({numeric})"));
        columns.push(format!("count({numeric})"));
        columns.push(format!("min({numeric})"));
        columns.push(format!("max({numeric})"));
    }
    let mut conditions = Vec::new();
    for (field, value) in equalities {
        let p = json_path(field);
        args.push(SqlValue::Text((*value).to_owned()));
        let n = args.len();
        conditions.push(format!(
            "json_type(doc, '{p}') IN ('text', 'array') AND EXISTS \
             (SELECT 1 FROM json_each(doc, '{p}') AS e WHERE e.type = 'text' AND e.value = ?{n})"
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
    sql.push_str(&format!(" GROUP BY k LIMIT {}", MAX_GROUPS + 1));
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(args))?;
    let width = groups.fields().len();
    while let Some(row) = rows.next()? {
        let key = match row.get_ref(0)? {
            ValueRef::Text(text) => serde_json::from_slice(text).unwrap_or(Value::Null),
            _ => Value::Null,
        };
        let count: i64 = row.get(1)?;
        if count == 0 {
            continue;
        }
        let mut figures = Vec::with_capacity(width);
        for i in 0..width {
            let at = 2 + i * 4;
            let n: i64 = row.get(at + 1)?;
            figures.push((
                number(row.get_ref(at)?),
                u64::try_from(n).unwrap_or(0),
                number(row.get_ref(at + 2)?),
                number(row.get_ref(at + 3)?),
            ));
        }
        groups.add_row(key, u64::try_from(count).unwrap_or(0), figures)?;
    }
    Ok(())
}
