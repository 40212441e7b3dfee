//! Publications: named queries, their options and the [`Subscription`] a handler drives.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt;
use futures::future::BoxFuture;
use portico_store::{Document, document_id};
use serde_json::{Map, Value};

use super::run_caught;
use crate::{Cursor, EndpointOptions, Error, FieldView, MethodError, Platform, Result};

/// Options of a publication (the auto API's `url`, `httpMethod`, `getArgsFromRequest`): an
/// [`EndpointOptions`] whose defaults are `GET /publications/<name>` and the url's `:N`
/// segments as arguments.
pub type PublicationOptions = EndpointOptions;

/// A defined publication as the registry lists it.
#[derive(Debug, Clone)]
pub struct PublicationInfo {
    /// The publication's name.
    pub name: String,
    /// Its options (defaults when none were given).
    pub options: PublicationOptions,
}

/// Where a live subscription's by-hand calls (`added`, `changed`, `removed`, `ready`) go once
/// its handler returned: the live stream's sink (`crate::live`) turns them into events.
pub(crate) trait HandCalls: fmt::Debug + Send {
    /// A document published, as [`Subscription::added`].
    fn added(&self, collection: &str, id: &str, fields: Document);
    /// Fields of a published document changed, as [`Subscription::changed`].
    fn changed(&self, collection: &str, id: &str, fields: Document);
    /// A published document withdrawn, as [`Subscription::removed`].
    fn removed(&self, collection: &str, id: &str);
    /// The initial set complete, as [`Subscription::ready`].
    fn ready(&self);
    /// True once the subscriber went away, as [`Subscription::is_stopped`].
    fn is_stopped(&self) -> bool;
}

/// Documents published by hand: collection -> id -> document, in the order first added.
#[derive(Debug, Default)]
pub(crate) struct Published {
    pub(crate) collections: Map<String, Value>,
    pub(crate) ready: bool,
    /// For a live subscription once its handler returned: where by-hand calls go as events.
    pub(crate) sink: Option<Box<dyn HandCalls>>,
}

impl Published {
    /// Merges `fields` into the document `id` of `collection`, creating both when missing.
    pub(crate) fn merge(&mut self, collection: &str, id: &str, fields: Document) {
        let docs = self
            .collections
            .entry(collection.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(docs) = docs else { return };
        let doc = docs.entry(id.to_string()).or_insert_with(|| {
            let mut doc = Map::new();
            doc.insert("_id".into(), Value::String(id.to_string()));
            Value::Object(doc)
        });
        if let Value::Object(doc) = doc {
            for (k, v) in fields {
                if k != "_id" {
                    doc.insert(k, v);
                }
            }
        }
    }

    /// Touches `collection` so that it is present in the result even when empty.
    pub(crate) fn touch(&mut self, collection: &str) {
        self.collections
            .entry(collection.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }

    /// The result `{collection: [docs]}`.
    pub(crate) fn into_result(self) -> Map<String, Value> {
        self.collections
            .into_iter()
            .map(|(name, docs)| {
                let list = match docs {
                    Value::Object(docs) => docs.into_iter().map(|(_, d)| d).collect(),
                    _ => Vec::new(),
                };
                (name, Value::Array(list))
            })
            .collect()
    }
}

/// The context of one run of a publication: who subscribes, and the by-hand
/// `added`/`changed`/`removed`/`ready` calls.
#[derive(Clone)]
pub struct Subscription {
    platform: Platform,
    user_id: Option<String>,
    published: Arc<Mutex<Published>>,
    /// What the subscriber may see of collections with field rules: documents published by
    /// hand go through it too.
    views: Arc<Vec<(String, FieldView)>>,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("user_id", &self.user_id)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    pub(crate) fn new(platform: Platform, user_id: Option<String>) -> Subscription {
        Subscription {
            platform,
            user_id,
            published: Arc::new(Mutex::new(Published::default())),
            views: Arc::default(),
        }
    }

    /// The subscription with the subscriber's views of collections with field rules.
    pub(crate) fn with_views(mut self, views: Arc<Vec<(String, FieldView)>>) -> Subscription {
        self.views = views;
        self
    }

    /// `fields` of a document of `collection` as the subscriber may see them. For a change
    /// (`fields` are not the whole document) a field shown only to owners is left out, since
    /// ownership cannot be told from part of a document.
    fn viewed(&self, collection: &str, fields: Document) -> Document {
        match self.views.iter().find(|(name, _)| name == collection) {
            Some((_, view)) => view.applied(fields),
            None => fields,
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Published) -> R) -> R {
        let mut published = self
            .published
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        f(&mut published)
    }

    /// The id of the subscribing user, `None` when anonymous.
    pub fn user_id(&self) -> Option<&str> {
        self.user_id.as_deref()
    }

    /// The platform the publication runs on.
    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    /// Publishes the document `id` of `collection` with `fields` (an `_id` in `fields` is ignored).
    /// Adding an id twice merges the fields.
    pub fn added(&self, collection: &str, id: &str, fields: Document) {
        let fields = self.viewed(collection, fields);
        self.with(|p| match &p.sink {
            Some(sink) => sink.added(collection, id, fields),
            None => p.merge(collection, id, fields),
        });
    }

    /// Changes fields of a published document; a field whose new value is `null` is removed.
    /// A document that was not added is ignored.
    pub fn changed(&self, collection: &str, id: &str, fields: Document) {
        let fields = self.viewed(collection, fields);
        self.with(|p| {
            if let Some(sink) = &p.sink {
                sink.changed(collection, id, fields);
                return;
            }
            let Some(Value::Object(docs)) = p.collections.get_mut(collection) else {
                return;
            };
            let Some(Value::Object(doc)) = docs.get_mut(id) else {
                return;
            };
            for (k, v) in fields {
                if k == "_id" {
                    continue;
                }
                if v.is_null() {
                    doc.shift_remove(&k);
                } else {
                    doc.insert(k, v);
                }
            }
        });
    }

    /// Withdraws a published document.
    pub fn removed(&self, collection: &str, id: &str) {
        self.with(|p| {
            if let Some(sink) = &p.sink {
                sink.removed(collection, id);
                return;
            }
            if let Some(Value::Object(docs)) = p.collections.get_mut(collection) {
                docs.shift_remove(id);
            }
        });
    }

    /// Marks the initial set of documents as complete.
    pub fn ready(&self) {
        self.with(|p| {
            if let Some(sink) = &p.sink {
                sink.ready();
            }
            p.ready = true;
        });
    }

    /// True once a live subscriber went away (or its stream was ended): a handler that
    /// publishes by hand from a task of its own stops then. Always false for a snapshot.
    pub fn is_stopped(&self) -> bool {
        self.with(|p| p.sink.as_ref().is_some_and(|sink| sink.is_stopped()))
    }

    /// True once [`Subscription::ready`] was called.
    pub fn is_ready(&self) -> bool {
        self.with(|p| p.ready)
    }

    pub(crate) fn take(&self) -> Published {
        self.with(std::mem::take)
    }

    /// Takes what the handler published so far and sends every later by-hand call to `sink`.
    pub(crate) fn take_live(&self, sink: impl HandCalls + 'static) -> Published {
        self.with(|p| {
            let taken = std::mem::take(p);
            p.sink = Some(Box::new(sink));
            taken
        })
    }
}

/// A stored publication handler.
pub(crate) type PublicationHandler = Arc<
    dyn Fn(
            Subscription,
            Vec<Value>,
        ) -> BoxFuture<'static, std::result::Result<Vec<Cursor>, MethodError>>
        + Send
        + Sync,
>;

impl Platform {
    /// The handler of the publication `name`, or `publication-not-found` (404).
    pub(crate) fn found_publication(
        &self,
        name: &str,
    ) -> std::result::Result<PublicationHandler, MethodError> {
        self.publication_registry().handler(name).ok_or_else(|| {
            MethodError::new(
                "publication-not-found",
                format!("Publication '{name}' not found"),
            )
            .with_status(404)
        })
    }

    /// Defines the publication `name` with default options.
    ///
    /// # Errors
    /// [`Error::Duplicate`] when a publication of that name exists.
    pub fn publish<F, Fut>(&self, name: &str, handler: F) -> Result<()>
    where
        F: Fn(Subscription, Vec<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Vec<Cursor>, MethodError>> + Send + 'static,
    {
        self.publish_with_options(name, PublicationOptions::default(), handler)
    }

    /// Defines the publication `name` with `options`.
    ///
    /// # Errors
    /// [`Error::Duplicate`] when a publication of that name exists.
    pub fn publish_with_options<F, Fut>(
        &self,
        name: &str,
        options: PublicationOptions,
        handler: F,
    ) -> Result<()>
    where
        F: Fn(Subscription, Vec<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Vec<Cursor>, MethodError>> + Send + 'static,
    {
        let handler: PublicationHandler = Arc::new(move |sub, args| handler(sub, args).boxed());
        self.publication_registry()
            .define(name, Some(options), handler)
    }

    /// Runs the publication `name` for `user_id` with `args` and returns
    /// `{ "<collection>": [documents...] }`: the documents of every returned cursor and of every
    /// `added` call, merged by `_id`. Every collection a cursor or `added` touched is present.
    ///
    /// # Errors
    /// The publication's own [`MethodError`]; `publication-not-found` (status 404) for an unknown
    /// name; an internal error when a cursor's query fails.
    pub async fn subscribe(
        &self,
        name: &str,
        user_id: Option<String>,
        args: Vec<Value>,
    ) -> std::result::Result<Map<String, Value>, MethodError> {
        self.refuse_when_closed()?;
        let handler = self.found_publication(name)?;
        let views = self.field_views(user_id.as_deref()).await?;
        let subscription = Subscription::new(self.clone(), user_id).with_views(views.clone());
        let cursors =
            run_caught("publication", name, || handler(subscription.clone(), args)).await?;
        let mut published = subscription.take();
        for mut cursor in cursors {
            published.touch(&cursor.collection);
            cursor.view = view_of(&views, &cursor.collection);
            let docs = self
                .store()
                .find(&cursor.collection, &cursor.store_query())
                .await
                .map_err(|e| MethodError::from(Error::from(e)))?;
            for doc in docs {
                let mut doc = cursor.shape(doc);
                let Some(id) = document_id(&doc).map(str::to_string) else {
                    continue;
                };
                doc.shift_remove("_id");
                published.merge(&cursor.collection, &id, doc);
            }
        }
        Ok(published.into_result())
    }

    /// The defined publications with their options, sorted by name.
    pub fn publications(&self) -> Vec<PublicationInfo> {
        self.publication_registry()
            .list()
            .into_iter()
            .map(|(name, options)| PublicationInfo { name, options })
            .collect()
    }

    /// The publication `name` with its options, when it is defined.
    pub fn publication_info(&self, name: &str) -> Option<PublicationInfo> {
        self.publication_registry()
            .options(name)
            .map(|options| PublicationInfo {
                name: name.to_string(),
                options,
            })
    }
}

/// The view of `collection` among `views` (everything shown when it has no field rules).
pub(crate) fn view_of(views: &[(String, FieldView)], collection: &str) -> FieldView {
    views
        .iter()
        .find(|(name, _)| name == collection)
        .map_or_else(FieldView::all, |(_, view)| view.clone())
}
