//! The collections view: every collection with its count, and its documents read and written
//! through the platform collection, so the schema and the duplicate-`_id` checks apply as they
//! do for the API.

use std::collections::BTreeSet;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query as QueryParams, State};
use http::StatusCode;
use portico_platform::{Collection, Document, Query, Selector, USERS, Update};
use portico_store::Sort;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::admin_error::{AdminError, AdminResult, object_body};
use crate::state::AdminState;

/// Rows a page of documents holds unless `limit` says otherwise, and the most it may ask for.
const DEFAULT_PAGE: u64 = 20;
const MAX_PAGE: u64 = 200;

async fn names(state: &AdminState) -> AdminResult<Vec<String>> {
    let mut names: BTreeSet<String> = state.platform.collection_names().into_iter().collect();
    names.extend(state.platform.store().list_collections().await?);
    Ok(names.into_iter().collect())
}

/// The collection `name` when the store or the platform knows it.
pub(crate) async fn collection(state: &AdminState, name: &str) -> AdminResult<Collection> {
    if let Some(declared) = state.platform.get_collection(name) {
        return Ok(declared);
    }
    if names(state).await?.iter().any(|n| n == name) {
        // In the store but not declared: the same default collection both doors would use.
        return Ok(state.platform.collection(name));
    }
    Err(AdminError::not_found(format!(
        "No collection named {name:?}"
    )))
}

/// Account documents hold password hashes and login tokens: the page never shows `services`.
fn shown(collection: &str, mut doc: Document) -> Document {
    if collection == USERS {
        doc.remove("services");
    }
    doc
}

fn is_secret_path(path: &str) -> bool {
    path == "services" || path.starts_with("services.")
}

/// True when a selector (as JSON text) names a path under `services` at any depth (`$or`,
/// `$elemMatch`... nest selectors, whose keys are paths again).
fn names_secrets(filter: &str) -> bool {
    fn walk(value: &Value) -> bool {
        match value {
            Value::Object(map) => map.iter().any(|(k, v)| is_secret_path(k) || walk(v)),
            Value::Array(items) => items.iter().any(walk),
            _ => false,
        }
    }
    serde_json::from_str::<Value>(filter).is_ok_and(|v| walk(&v))
}

/// The prefix of Portico's own collections (`portico_account_tokens`, `portico_outbox`,
/// `portico_login_failures`...): the server's bookkeeping, which the page hides unless asked and
/// never writes.
pub(crate) const INTERNAL_PREFIX: &str = "portico_";

/// True for one of Portico's own collections (see [`INTERNAL_PREFIX`]).
pub(crate) fn is_internal(name: &str) -> bool {
    name.starts_with(INTERNAL_PREFIX)
}

/// Accounts are written only through the users view, which keeps their hashes and tokens;
/// Portico's own collections only by the server.
fn refuse_account_writes(name: &str) -> AdminResult<()> {
    if name == USERS {
        return Err(AdminError::bad_request(
            "Accounts are changed in the Users view, which keeps their passwords and tokens",
        ));
    }
    refuse_internal_writes(name)
}

/// Portico's own collections are read-only here: the server keeps them (tokens, mails waiting
/// to be sent, login failures), and a hand edit would break what relies on them.
pub(crate) fn refuse_internal_writes(name: &str) -> AdminResult<()> {
    if is_internal(name) {
        return Err(AdminError::new(
            StatusCode::FORBIDDEN,
            format!("{name} is one of Portico's own collections: it is read-only here"),
        ));
    }
    Ok(())
}

/// The query of the collections list.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ListParams {
    /// `internal=true` (or `1`): Portico's own collections are listed too.
    internal: Option<String>,
}

/// `GET api/collections?internal=`: `{collections: [{name, count, schema, timestamps,
/// readOnly, internal, files}], internal}`. Portico's own collections (`portico_*`) are left
/// out unless `internal=true`, and listed read-only then; `internal` at the top counts them
/// either way, so the page can offer to show them.
pub(crate) async fn list(
    State(state): State<AdminState>,
    QueryParams(params): QueryParams<ListParams>,
) -> AdminResult<Json<Value>> {
    let show_internal = params
        .internal
        .as_deref()
        .is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes"));
    let mut out = Vec::new();
    let mut internal_count = 0;
    for name in names(&state).await? {
        let internal = is_internal(&name);
        if internal {
            internal_count += 1;
            if !show_internal {
                continue;
            }
        }
        let collection = collection(&state, &name).await?;
        let count = collection.count(&Selector::all()).await?;
        // The sorted indexes as the config writes them (`city`, `ownerId,-createdAt`).
        let indexes: Vec<String> = state
            .platform
            .store()
            .sorted_indexes(&name)
            .await?
            .iter()
            .map(ToString::to_string)
            .collect();
        out.push(json!({
            "name": name,
            "count": count,
            "schema": collection.options().schema,
            "timestamps": collection.options().timestamps,
            "readOnly": name == USERS || internal,
            "internal": internal,
            "files": file_fields(&state, &name),
            "indexes": indexes,
        }));
    }
    Ok(Json(
        json!({ "collections": out, "internal": internal_count }),
    ))
}

/// The file fields of `collection` as the page shows them: `{field: {types, max, thumbs}}`
/// (empty when the server keeps no files). Their files are changed through `files.rs`.
fn file_fields(state: &AdminState, collection: &str) -> Value {
    let Some(files) = state.platform.files() else {
        return Value::Object(Map::new());
    };
    let fields: Map<String, Value> = files
        .fields(collection)
        .into_iter()
        .map(|(name, field)| {
            let thumbs: Vec<String> = field.thumbs.iter().map(ToString::to_string).collect();
            (
                name,
                json!({"types": field.types, "max": field.max, "thumbs": thumbs}),
            )
        })
        .collect();
    Value::Object(fields)
}

/// The query of a documents page.
#[derive(Debug, Deserialize)]
pub(crate) struct PageParams {
    #[serde(rename = "where")]
    filter: Option<String>,
    sort: Option<String>,
    skip: Option<u64>,
    limit: Option<u64>,
}

fn selector(filter: Option<&str>) -> AdminResult<Selector> {
    match filter.map(str::trim) {
        None | Some("") => Ok(Selector::all()),
        Some(text) => {
            let value: Value = serde_json::from_str(text)
                .map_err(|e| AdminError::bad_request(format!("Invalid where: not JSON ({e})")))?;
            if !value.is_object() {
                return Err(AdminError::bad_request(
                    "Invalid where: must be a JSON object",
                ));
            }
            Selector::parse(&value)
                .map_err(|e| AdminError::bad_request(format!("Invalid where: {e}")))
        }
    }
}

/// `GET api/collections/{name}/documents?where=&sort=&skip=&limit=`: one page of documents and
/// how many match in all. `where` is a selector as the routes door takes it; `sort` a comma list
/// (`-createdAt,title`).
pub(crate) async fn documents(
    State(state): State<AdminState>,
    Path(name): Path<String>,
    QueryParams(params): QueryParams<PageParams>,
) -> AdminResult<Json<Value>> {
    let collection = collection(&state, &name).await?;
    let selector = selector(params.filter.as_deref())?;
    let sort = match params.sort.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(text) => Some(
            Sort::parse_list(text)
                .map_err(|e| AdminError::bad_request(format!("Invalid sort: {e}")))?,
        ),
    };
    if name == USERS
        && (params.filter.as_deref().is_some_and(names_secrets)
            || sort
                .as_ref()
                .is_some_and(|s| s.keys().iter().any(|(path, _)| is_secret_path(path))))
    {
        // Filtering or sorting on hashes and tokens would reveal them a character at a time.
        return Err(AdminError::bad_request(
            "Accounts cannot be filtered or sorted on `services` (passwords and login tokens)",
        ));
    }
    let total = collection.count(&selector).await?;
    let skip = params.skip.unwrap_or(0);
    let limit = params.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
    let mut query = Query::new(selector);
    query.sort = sort;
    query.skip = skip;
    query.limit = Some(limit);
    let docs: Vec<Document> = collection
        .find(&query)
        .await?
        .into_iter()
        .map(|d| shown(&name, d))
        .collect();
    Ok(Json(json!({
        "total": total,
        "skip": skip,
        "limit": limit,
        "documents": docs,
    })))
}

/// `GET api/collections/{name}/documents/{id}`.
pub(crate) async fn document(
    State(state): State<AdminState>,
    Path((name, id)): Path<(String, String)>,
) -> AdminResult<Json<Document>> {
    let collection = collection(&state, &name).await?;
    match collection.get(&id).await? {
        Some(doc) => Ok(Json(shown(&name, doc))),
        None => Err(AdminError::not_found(format!(
            "No document {id:?} in {name}"
        ))),
    }
}

/// `POST api/collections/{name}/documents` with a document: inserted through the collection
/// (a new `_id` when it has none, the schema, a duplicate `_id` refused with 409).
pub(crate) async fn insert(
    State(state): State<AdminState>,
    Path(name): Path<String>,
    body: Bytes,
) -> AdminResult<(StatusCode, Json<Value>)> {
    let collection = collection(&state, &name).await?;
    refuse_account_writes(&name)?;
    let doc = object_body(&body)?;
    // File fields are filled by uploads to a document that exists.
    collection.check_server_fields(None, &doc)?;
    let id = collection.insert(doc).await?;
    Ok((StatusCode::CREATED, Json(json!({ "_id": id }))))
}

/// `PUT api/collections/{name}/documents/{id}` with the whole new document (its `_id`, when
/// given, must be `id`): a replacement through the collection, schema checked.
pub(crate) async fn replace(
    State(state): State<AdminState>,
    Path((name, id)): Path<(String, String)>,
    body: Bytes,
) -> AdminResult<Json<Document>> {
    let collection = collection(&state, &name).await?;
    refuse_account_writes(&name)?;
    let mut doc = object_body(&body)?;
    if let Some(given) = doc.get("_id")
        && given.as_str() != Some(id.as_str())
    {
        return Err(AdminError::bad_request(format!(
            "_id cannot change (it is {id:?}); create a new document instead"
        )));
    }
    if !collection.server_fields().is_empty() {
        // The files panel changes file fields; an edit of the JSON keeps them (left out: kept;
        // changed: refused), so metadata never names bytes that are not there.
        let Some(stored) = collection.get(&id).await? else {
            return Err(AdminError::not_found(format!(
                "No document {id:?} in {name}"
            )));
        };
        collection.keep_server_fields(&stored, &mut doc);
        collection.check_server_fields(Some(&stored), &doc)?;
    }
    let update = Update::replace(doc)?;
    match collection.update_by_id(&id, &update).await? {
        Some(doc) => Ok(Json(doc)),
        None => Err(AdminError::not_found(format!(
            "No document {id:?} in {name}"
        ))),
    }
}

/// `DELETE api/collections/{name}/documents/{id}`.
pub(crate) async fn remove(
    State(state): State<AdminState>,
    Path((name, id)): Path<(String, String)>,
) -> AdminResult<Json<Value>> {
    let collection = collection(&state, &name).await?;
    refuse_account_writes(&name)?;
    if collection.remove_by_id(&id).await? {
        Ok(Json(json!({ "removed": id })))
    } else {
        Err(AdminError::not_found(format!(
            "No document {id:?} in {name}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_naming_account_secrets_are_found_at_any_depth() {
        assert!(names_secrets(
            r#"{"services.password.argon2": {"$regex": "^a"}}"#
        ));
        assert!(names_secrets(
            r#"{"$or": [{"a": 1}, {"services": {"$exists": true}}]}"#
        ));
        assert!(names_secrets(
            r#"{"x": {"$elemMatch": {"services.resume": 1}}}"#
        ));
        assert!(!names_secrets(r#"{"username": "services"}"#));
        assert!(!names_secrets(r#"{"servicesX": 1, "profile.services": 2}"#));
    }
}
