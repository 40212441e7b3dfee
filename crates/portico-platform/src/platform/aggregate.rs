//! Aggregates over what a publication publishes ([`Platform::aggregate_publication`]): the
//! platform call behind the auto API's `?group=&count=&sum=` on a publication's url.

use portico_store::{Aggregate, Document, Projection, lookup_path};
use serde_json::{Map, Value};

use super::run_caught;
use crate::{MethodError, Platform, Subscription};

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
        let handler = self.publication_handler(name).ok_or_else(|| {
            MethodError::new(
                "publication-not-found",
                format!("Publication '{name}' not found"),
            )
            .with_status(404)
        })?;
        let invalid =
            |reason: String| MethodError::new("invalid-aggregate", reason).with_status(400);
        let subscription = Subscription::new(self.clone(), user_id.clone());
        let mut cursors =
            run_caught("publication", name, || handler(subscription.clone(), args)).await?;
        let by_hand = !subscription.take().collections.is_empty();
        let (Some(cursor), true, false) = (cursors.pop(), cursors.is_empty(), by_hand) else {
            return Err(invalid(format!(
                "publication {name:?} does not publish one query, so it cannot be aggregated"
            )));
        };
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
}
