//! Queries over what a publication publishes: aggregates ([`Platform::aggregate_publication`])
//! and full-text search ([`Platform::search_publication`]), the platform calls behind the auto
//! API's `?group=&count=&sum=` and `?search=` on a publication's url.

use portico_store::{Aggregate, Document, Projection, Search, lookup_path};
use serde_json::{Map, Value};

use crate::functions::run_caught;
use crate::{Cursor, MethodError, Platform, Subscription};

/// Whether `projection` keeps the dotted `path` of a document that holds it.
fn shows(projection: &Projection, path: &str) -> bool {
    let mut value = Value::from(1);
    for part in path.rsplit('.') {
        let mut outer = Map::new();
        outer.insert(part.to_owned(), value);
        value = Value::Object(outer);
    }
    let Value::Object(probe) = value else {
        return false;
    };
    !lookup_path(&projection.apply(&probe), path).is_empty()
}

impl Platform {
    /// The one cursor the publication `name` returns for `user_id` with `args`, for a query
    /// over what it publishes (`what` names the query in the refusal). Refused (400, `code`) for
    /// a publication of several cursors or of documents added by hand.
    async fn one_cursor(
        &self,
        name: &str,
        user_id: Option<&str>,
        args: Vec<Value>,
        code: &str,
        what: &str,
    ) -> Result<Cursor, MethodError> {
        let handler = self.found_publication(name)?;
        let subscription = Subscription::new(self.clone(), user_id.map(str::to_owned));
        let mut cursors =
            run_caught("publication", name, || handler(subscription.clone(), args)).await?;
        let by_hand = !subscription.take().collections.is_empty();
        match (cursors.pop(), cursors.is_empty(), by_hand) {
            (Some(cursor), true, false) => Ok(cursor),
            _ => Err(MethodError::new(
                code,
                format!("publication {name:?} does not publish one query, so it cannot be {what}"),
            )
            .with_status(400)),
        }
    }

    /// The groups of `spec` over what the publication `name` publishes for `user_id` with
    /// `args`: the publication's one cursor's selector and `spec.selector` together, grouped and
    /// computed by the store. Refused (400) for a publication of several cursors or of
    /// documents added by hand, and for a path the cursor's projection or the collection's
    /// field rules hide from the caller.
    ///
    /// # Errors
    /// `publication-not-found` (404), `invalid-aggregate` (400), the publication's own error,
    /// store failures.
    pub async fn aggregate_publication(
        &self,
        name: &str,
        user_id: Option<String>,
        args: Vec<Value>,
        mut spec: Aggregate,
    ) -> Result<Vec<Document>, MethodError> {
        let invalid =
            |reason: String| MethodError::new("invalid-aggregate", reason).with_status(400);
        let cursor = self
            .one_cursor(
                name,
                user_id.as_deref(),
                args,
                "invalid-aggregate",
                "aggregated",
            )
            .await?;
        if let Some(projection) = &cursor.query.projection
            && let Some(path) = spec.paths().find(|p| !shows(projection, p))
        {
            return Err(invalid(format!(
                "the field {path} is not published, so it cannot be aggregated"
            )));
        }
        spec.selector = cursor.query.selector.clone().and(spec.selector);
        self.collection(&cursor.collection)
            .aggregate_as(user_id.as_deref(), &spec)
            .await
            .map_err(MethodError::from)
    }

    /// The matches of `search.text` among what the publication `name` publishes for
    /// `user_id` with `args` (see [`crate::Collection::search`]): within the publication's one
    /// cursor's selector and `search.selector`, best first, paged by `search.skip` and
    /// `search.limit`, each shown as the publication shows it (its projection and the
    /// collection's field rules for the caller); and how many match in all. The reply has the
    /// publication's shape, `{"<collection>": [matches]}`.
    ///
    /// Refused (400) for a publication of several cursors or of documents added by hand, a
    /// collection without search fields, and a search field the cursor's projection or the
    /// field rules hide from the caller (the matches would reveal it).
    ///
    /// # Errors
    /// `publication-not-found` (404), `invalid-search` (400), the publication's own error,
    /// store failures.
    pub async fn search_publication(
        &self,
        name: &str,
        user_id: Option<String>,
        args: Vec<Value>,
        mut search: Search,
    ) -> Result<(Map<String, Value>, u64), MethodError> {
        let invalid = |reason: String| MethodError::new("invalid-search", reason).with_status(400);
        let mut cursor = self
            .one_cursor(name, user_id.as_deref(), args, "invalid-search", "searched")
            .await?;
        let collection = self.collection(&cursor.collection);
        let fields = collection.options().search.clone();
        if fields.is_empty() {
            return Err(invalid(format!(
                "{} has no search fields, so it cannot be searched",
                cursor.collection
            )));
        }
        if let Some(projection) = &cursor.query.projection
            && let Some(field) = fields.iter().find(|f| !shows(projection, f))
        {
            return Err(invalid(format!(
                "the field {field} is not published, so it cannot be searched"
            )));
        }
        let view = collection.field_view(user_id.as_deref()).await?;
        view.check_query(fields.iter().map(String::as_str))?;
        search.selector = cursor.query.selector.clone().and(search.selector);
        search.projection = None;
        let (docs, total) = collection.search(&search).await?;
        // Shown as the publication shows its documents: the view on the whole document, then
        // the projection.
        let projection = cursor.query.projection.take();
        let docs = docs
            .into_iter()
            .map(|doc| {
                let doc = view.applied(doc);
                Value::Object(match &projection {
                    Some(p) => p.apply(&doc),
                    None => doc,
                })
            })
            .collect();
        let mut reply = Map::new();
        reply.insert(cursor.collection, Value::Array(docs));
        Ok((reply, total))
    }
}
