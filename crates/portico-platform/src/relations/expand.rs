//! Expanding related documents (see `mod.rs` for relations and [`Expand`]): one query
//! per relation for a whole page of documents, each related document shown only as the
//! caller's [`ReadAccess`] to its collection allows.

use std::collections::BTreeMap;

// Ids and texts keyed by id, hashed per request (a page names at most `MAX_EXPAND_IDS`): the
// std SipHash showed at 4-5% of an expanded list in a profile, foldhash at a fraction of that.
use foldhash::{HashMap, HashSet};

use futures::future::BoxFuture;
use portico_store::{Document, Query, RelatedField, RelatedRead, Selector};
use serde_json::{Value, json};

use super::{EXPAND_KEY, Expand, MAX_EXPAND_IDS, ReadAccess, ids_of, shown};
use crate::{Error, Platform, Result};

impl Platform {
    /// The collections an expansion of `collection`'s documents by `expand` reads, each once
    /// (for a door to work out the caller's [`ReadAccess`] to each).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming a field that is not a relation.
    pub fn expand_targets(&self, collection: &str, expand: &Expand) -> Result<Vec<String>> {
        let mut out = Vec::new();
        self.collect_targets(collection, expand, &mut out)?;
        Ok(out)
    }

    fn collect_targets(
        &self,
        collection: &str,
        expand: &Expand,
        out: &mut Vec<String>,
    ) -> Result<()> {
        for (field, inner) in expand.levels() {
            let target = self.related(collection, field)?;
            self.collect_targets(&target, inner, out)?;
            if !out.contains(&target) {
                out.push(target);
            }
        }
        Ok(())
    }

    /// The collection the relation `field` of `collection` names.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `field` is not a relation of `collection`.
    fn related(&self, collection: &str, field: &str) -> Result<String> {
        self.get_collection(collection)
            .and_then(|c| c.options().relations.target(field).map(str::to_owned))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "Invalid expand: {field} is not a relation of {collection}"
                ))
            })
    }

    /// Puts the documents related to each of `docs` (documents of `collection`, as the caller
    /// sees them) under their `"expand"` key: `{"expand": {"author": {...}, "tags": [{...}]}}`.
    /// A relation holding one id gives one document (left out when it is missing or not
    /// readable); an array of ids gives the readable ones in the array's order. Each relation
    /// is read with one query for all of `docs` (at most [`MAX_EXPAND_IDS`] distinct ids), under
    /// `access` to its collection (none: nothing is expanded from it); nested relations
    /// (`author.team`) expand the related documents as shown, with one more query each.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming a field that is not a relation; store failures.
    pub async fn expand(
        &self,
        collection: &str,
        docs: &mut [Document],
        expand: &Expand,
        access: &BTreeMap<String, ReadAccess>,
    ) -> Result<()> {
        self.expand_level(collection.to_owned(), docs, expand, access, Vec::new())
            .await
    }

    /// The relations of `expand`'s first level whose documents a store may read along with a
    /// page of `collection` ([`portico_store::Store::find_page`]): those whose
    /// collection `access` lets the caller read.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming a field that is not a relation.
    pub fn related_fields(
        &self,
        collection: &str,
        expand: &Expand,
        access: &BTreeMap<String, ReadAccess>,
    ) -> Result<Vec<RelatedField>> {
        let mut out = Vec::new();
        for (field, _) in expand.levels() {
            let target = self.related(collection, field)?;
            if access.contains_key(&target) {
                out.push(RelatedField::new(field, target, MAX_EXPAND_IDS));
            }
        }
        Ok(out)
    }

    /// [`Platform::expand`] with the first level's related documents already read along with
    /// the page (`read`, as [`portico_store::Store::find_page`] gave them): each
    /// is shown only if the caller's scope to its collection selects it, exactly as the query
    /// [`Platform::expand`] makes would; ids not looked up are read with one query per
    /// relation, and nested relations as by [`Platform::expand`].
    ///
    /// # Errors
    /// As [`Platform::expand`].
    pub async fn expand_read(
        &self,
        collection: &str,
        docs: &mut [Document],
        expand: &Expand,
        access: &BTreeMap<String, ReadAccess>,
        read: Vec<RelatedRead>,
    ) -> Result<()> {
        self.expand_level(collection.to_owned(), docs, expand, access, read)
            .await
    }

    /// [`Platform::expand_read`] for a page of stored JSON texts (documents of `collection`
    /// shown as stored, in page order): each text gets its `"expand"` member put in as text,
    /// without the document being decoded and encoded again, and each related document is
    /// shown (scope, field view, projection, `users` as `_id` and `profile`, nested relations)
    /// and encoded once however many of the page's documents name it; one that the caller's
    /// access leaves as stored is put in as its stored text. The result is what
    /// [`Platform::expand_read`] gives for the decoded page, encoded. A page with a text that
    /// already holds an `expand` member (or is not one JSON object) is decoded, expanded by
    /// [`Platform::expand_read`] and encoded instead.
    ///
    /// # Errors
    /// As [`Platform::expand`]; a text that is not one JSON object.
    pub async fn expand_texts(
        &self,
        collection: &str,
        texts: Vec<String>,
        expand: &Expand,
        access: &BTreeMap<String, ReadAccess>,
        mut read: Vec<RelatedRead>,
    ) -> Result<Vec<String>> {
        let levels: Vec<(&str, &Expand)> = expand.levels().collect();
        let mut names: Vec<&str> = levels.iter().map(|(field, _)| *field).collect();
        names.push(EXPAND_KEY);
        // Each text's relation fields, read without building the rest of it.
        let mut scanned = Vec::with_capacity(texts.len());
        for text in &texts {
            match portico_store::object_members(text, &names) {
                Some(members)
                    if members.values.last().is_some_and(Option::is_none)
                        && text.trim_end().ends_with('}') =>
                {
                    scanned.push(members);
                }
                _ => {
                    return self
                        .expand_decoded(collection, texts, expand, access, read)
                        .await;
                }
            }
        }
        // Per relation (none: the caller may not read its collection), each related document
        // the caller may read, by id, as the JSON text shown.
        let mut related: Vec<Option<HashMap<String, String>>> = Vec::with_capacity(levels.len());
        for (at, (field, inner)) in levels.iter().enumerate() {
            let target = self.related(collection, field)?;
            let Some(reader) = access.get(&target) else {
                related.push(None);
                continue;
            };
            let ids = page_ids(&scanned, at);
            let along = read
                .iter()
                .position(|r| r.field == *field)
                .map(|at| read.swap_remove(at));
            let shown = self
                .shown_texts(&target, reader, inner, access, ids, along)
                .await?;
            related.push(Some(shown));
        }
        // Each level's member name as JSON text, encoded once for the page.
        let keys: Vec<String> = levels
            .iter()
            .map(|(field, _)| Value::from(*field).to_string())
            .collect();
        let mut expanded = String::new();
        Ok(texts
            .into_iter()
            .zip(&scanned)
            .map(|(text, members)| {
                expanded.clear();
                for (at, key) in keys.iter().enumerate() {
                    if let Some(Some(by_id)) = related.get(at) {
                        let held = members.values.get(at).and_then(Option::as_ref);
                        push_related(&mut expanded, key, held, by_id);
                    }
                }
                if expanded.is_empty() {
                    text
                } else {
                    with_expand_member(text, members.len, &expanded)
                }
            })
            .collect())
    }

    /// [`Platform::expand_texts`] the long way: the page decoded, expanded, encoded.
    async fn expand_decoded(
        &self,
        collection: &str,
        texts: Vec<String>,
        expand: &Expand,
        access: &BTreeMap<String, ReadAccess>,
        read: Vec<RelatedRead>,
    ) -> Result<Vec<String>> {
        let mut docs = texts
            .iter()
            .map(|text| decode(collection, "(a page)", text))
            .collect::<Result<Vec<Document>>>()?;
        drop(texts);
        self.expand_read(collection, &mut docs, expand, access, read)
            .await?;
        docs.iter()
            .map(|doc| serde_json::to_string(doc).map_err(|e| corrupt(collection, "(a page)", &e)))
            .collect()
    }

    /// The documents of `target` among `ids` that `reader` lets the caller read, by id, each
    /// as the JSON text shown (expanded by `inner`): those of `along` (read with the page)
    /// first, the others with one query. A document `reader` shows as stored is its stored
    /// text.
    async fn shown_texts(
        &self,
        target: &str,
        reader: &ReadAccess,
        inner: &Expand,
        access: &BTreeMap<String, ReadAccess>,
        ids: Vec<String>,
        along: Option<RelatedRead>,
    ) -> Result<HashMap<String, String>> {
        let as_stored = inner.is_empty()
            && reader.scope.is_all()
            && reader.view.is_empty()
            && reader.projection.is_none()
            && target != crate::accounts::USERS;
        let mut out = HashMap::default();
        let found = self
            .related_found(
                target,
                reader,
                (inner, access),
                ids,
                along,
                as_stored.then_some(&mut out),
            )
            .await?;
        for doc in found {
            if let Some(id) = portico_store::document_id(&doc) {
                let text = serde_json::to_string(&doc).map_err(|e| corrupt(target, id, &e))?;
                out.insert(id.to_owned(), text);
            }
        }
        Ok(out)
    }

    /// The documents of `target` among `ids` that `reader`'s scope selects, as `reader` shows
    /// them and expanded by `inner` (`nested`: the inner levels and every related collection's
    /// access): those of `along` (what the page's read brought, when it did) first, as the
    /// query would find them, and the others with one query. With `stored`, a document `along`
    /// brought goes there as its stored text instead (the caller shows it as stored).
    async fn related_found(
        &self,
        target: &str,
        reader: &ReadAccess,
        nested: (&Expand, &BTreeMap<String, ReadAccess>),
        ids: Vec<String>,
        along: Option<RelatedRead>,
        mut stored: Option<&mut HashMap<String, String>>,
    ) -> Result<Vec<Document>> {
        let mut found: Vec<Document> = Vec::new();
        let mut missing = ids;
        if let Some(along) = along {
            let wanted: HashSet<&str> = missing.iter().map(String::as_str).collect();
            for (id, text) in along.texts {
                if !wanted.contains(id.as_str()) {
                    continue;
                }
                if let Some(out) = stored.as_deref_mut() {
                    out.insert(id, text);
                    continue;
                }
                let doc = decode(target, &id, &text)?;
                if reader.scope.matches(&doc) {
                    found.push(doc);
                }
            }
            let looked_up: HashSet<&str> = along.ids.iter().map(String::as_str).collect();
            missing.retain(|id| !looked_up.contains(id.as_str()));
        }
        if !missing.is_empty() {
            let wanted = Selector::parse(&json!({"_id": {"$in": missing}}))?;
            let query = Query::new(wanted.and(reader.scope.clone()));
            found.extend(self.store().find(target, &query).await?);
        }
        let mut found: Vec<Document> = found
            .into_iter()
            .map(|doc| shown(target, reader, doc))
            .collect();
        let (inner, access) = nested;
        if !found.is_empty() && !inner.is_empty() {
            self.expand_level(target.to_owned(), &mut found, inner, access, Vec::new())
                .await?;
        }
        Ok(found)
    }

    /// [`Platform::expand`] for server code and platform callers: every related collection is
    /// read under its field rules for `user_id` (`users` as `_id` and `profile`); no other
    /// scope applies.
    ///
    /// # Errors
    /// As [`Platform::expand`]; store failures of the role lookup.
    pub async fn expand_as(
        &self,
        collection: &str,
        user_id: Option<&str>,
        docs: &mut [Document],
        expand: &Expand,
    ) -> Result<()> {
        let mut access = BTreeMap::new();
        for target in self.expand_targets(collection, expand)? {
            let view = self.collection(&target).field_view(user_id).await?;
            access.insert(target, ReadAccess::new(view));
        }
        self.expand(collection, docs, expand, &access).await
    }

    fn expand_level<'a>(
        &'a self,
        collection: String,
        docs: &'a mut [Document],
        expand: &'a Expand,
        access: &'a BTreeMap<String, ReadAccess>,
        mut read: Vec<RelatedRead>,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            for (field, inner) in expand.levels() {
                let target = self.related(&collection, field)?;
                let target = target.as_str();
                let Some(reader) = access.get(target) else {
                    continue;
                };
                let mut seen = HashSet::default();
                let mut ids: Vec<String> = Vec::new();
                for doc in docs.iter() {
                    for id in doc.get(field).map(ids_of).unwrap_or_default() {
                        if ids.len() < MAX_EXPAND_IDS && seen.insert(id) {
                            ids.push(id.to_owned());
                        }
                    }
                }
                let along = read
                    .iter()
                    .position(|r| r.field == field)
                    .map(|at| read.swap_remove(at));
                let found = self
                    .related_found(target, reader, (inner, access), ids, along, None)
                    .await?;
                let by_id: HashMap<String, Value> = found
                    .into_iter()
                    .filter_map(|doc| {
                        let id = portico_store::document_id(&doc)?.to_owned();
                        Some((id, Value::Object(doc)))
                    })
                    .collect();
                for doc in docs.iter_mut() {
                    let related = match doc.get(field) {
                        Some(Value::String(id)) => by_id.get(id).cloned(),
                        Some(Value::Array(items)) => Some(Value::Array(
                            items
                                .iter()
                                .filter_map(|v| v.as_str().and_then(|id| by_id.get(id)).cloned())
                                .collect(),
                        )),
                        _ => None,
                    };
                    let Some(related) = related else {
                        continue;
                    };
                    let slot = doc
                        .entry(EXPAND_KEY)
                        .or_insert_with(|| Value::Object(Document::new()));
                    if !slot.is_object() {
                        *slot = Value::Object(Document::new());
                    }
                    if let Value::Object(map) = slot {
                        map.insert(field.to_owned(), related);
                    }
                }
            }
            Ok(())
        })
    }
}

/// `text` (one JSON object with `len` members, ending in `}` but for whitespace) with the
/// member `"expand": {expanded}` put last (`expanded`: the members of that object, as text).
fn with_expand_member(mut text: String, len: usize, expanded: &str) -> String {
    let end = text.trim_end().len().saturating_sub(1);
    text.truncate(end);
    text.reserve(expanded.len() + EXPAND_KEY.len() + 7);
    if len > 0 {
        text.push(',');
    }
    text.push('"');
    text.push_str(EXPAND_KEY);
    text.push_str("\":{");
    text.push_str(expanded);
    text.push_str("}}");
    text
}

/// `parts` put at the end of `out`, one after another.
fn push_all(out: &mut String, parts: &[&str]) {
    for part in parts {
        out.push_str(part);
    }
}

/// The stored text of document `id` of `collection`, decoded.
fn decode(collection: &str, id: &str, text: &str) -> Result<Document> {
    serde_json::from_str(text).map_err(|e| corrupt(collection, id, &e))
}

fn corrupt(collection: &str, id: &str, e: &serde_json::Error) -> Error {
    Error::Store(portico_store::Error::Backend(format!(
        "stored document {id:?} of collection {collection:?} could not be read: {e}"
    )))
}

/// The ids the relation at `at` names in a page's scanned texts, each once, at most
/// `MAX_EXPAND_IDS`.
fn page_ids(scanned: &[portico_store::Members], at: usize) -> Vec<String> {
    let mut seen = HashSet::default();
    let mut ids: Vec<String> = Vec::new();
    for members in scanned {
        let held = members.values.get(at).and_then(Option::as_ref);
        for id in held.map(ids_of).unwrap_or_default() {
            if ids.len() < MAX_EXPAND_IDS && seen.insert(id) {
                ids.push(id.to_owned());
            }
        }
    }
    ids
}

/// Adds to `expanded` (the inside of one text's `"expand"` object) the member `key` (JSON text)
/// for what the relation field `held` names: the shown text of the one related document, or an
/// array of those of the many, each from `by_id`; nothing for an id `by_id` lacks.
fn push_related(
    expanded: &mut String,
    key: &str,
    held: Option<&Value>,
    by_id: &HashMap<String, String>,
) {
    let sep = if expanded.is_empty() { "" } else { "," };
    match held {
        Some(Value::String(id)) => {
            if let Some(doc) = by_id.get(id) {
                push_all(expanded, &[sep, key, ":", doc]);
            }
        }
        Some(Value::Array(items)) => {
            push_all(expanded, &[sep, key, ":["]);
            let docs = items
                .iter()
                .filter_map(|v| v.as_str().and_then(|id| by_id.get(id)));
            for (n, doc) in docs.enumerate() {
                if n > 0 {
                    expanded.push(',');
                }
                expanded.push_str(doc);
            }
            expanded.push(']');
        }
        _ => {}
    }
}
