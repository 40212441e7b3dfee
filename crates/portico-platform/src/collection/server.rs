//! Server writes and reads of a [`Collection`]: no rules, the schema still validated.

use std::borrow::Cow;
use std::sync::{Arc, PoisonError};

use portico_store::{
    Document, IdKind, Page, PageRead, Query, Selector, Stored, Update, UpdateOptions, UpdateResult,
};
use serde_json::Value;

use super::{Collection, HookOp};
use crate::time::now_iso;
use crate::timestamps;
use crate::{Cursor, Error, Result};

impl Collection {
    /// Inserts `doc` (a new `_id` of the collection's kind when it has none) and returns its `_id`.
    ///
    /// # Errors
    /// [`Error::Validation`] when the schema refuses it; a store error for a duplicate `_id`.
    pub async fn insert(&self, doc: Document) -> Result<String> {
        let (doc, jobs) = self.hooked_new(None, doc).await?;
        let after = self.keep_for_after_insert(&doc);
        let id = self.store_insert(doc, jobs).await?;
        self.after_insert(None, after).await;
        Ok(id)
    }

    /// [`Collection::insert`], returning the `_id` and the document as stored (with its
    /// timestamps), so a reply can show it without reading it back: as the store's JSON text
    /// when the store gives it (see [`Store::insert_stored`]), decoded only if the caller needs
    /// to look inside ([`Stored::into_document`]).
    ///
    /// # Errors
    /// As [`Collection::insert`].
    pub async fn insert_returning(&self, doc: Document) -> Result<(String, Stored)> {
        self.insert_returning_as(None, doc).await
    }

    /// [`Collection::insert_returning`] done for the client `user_id` by a door that checked
    /// the client's access itself (the routes door: its auth, roles, scope and field rules):
    /// no allow/deny rules run, and the write hooks are handed `user_id`, as for
    /// [`Collection::client_insert`]. A door must never write for a client through the
    /// `user_id`-less methods: a hook would take the client for trusted server code.
    ///
    /// # Errors
    /// As [`Collection::insert`].
    pub async fn insert_returning_as(
        &self,
        user_id: Option<&str>,
        doc: Document,
    ) -> Result<(String, Stored)> {
        let (doc, jobs) = self.hooked_new(user_id, doc).await?;
        let after = self.keep_for_after_insert(&doc);
        let stored = if jobs.is_empty() {
            self.store().insert_stored(self.name(), doc).await?
        } else {
            let id = self.store_insert(doc.clone(), jobs).await?;
            (id, Stored::Document(doc))
        };
        self.after_insert(user_id, after).await;
        Ok(stored)
    }

    /// `doc` with an `_id` of the collection's kind and its timestamps, through the
    /// before-insert hooks, checked against the schema: what an insert by `user_id` stores,
    /// and the jobs the hooks enqueued.
    pub(super) async fn hooked_new(
        &self,
        user_id: Option<&str>,
        mut doc: Document,
    ) -> Result<(Document, super::hooks::Enqueued)> {
        self.ensure_id(&mut doc)?;
        self.stamp_new(&mut doc);
        self.hooked_insert(user_id, doc).await
    }

    /// The document [`Collection::insert`] would store, for a writer that stores it itself (a
    /// batch of writes in one store transaction, [`Store::batch`]): `doc` with an `_id` of the
    /// collection's kind when it has none, `createdAt`/`updatedAt` when the collection keeps
    /// timestamps, checked against the schema. Write hooks do not run (a batch refuses a
    /// collection with hooks).
    ///
    /// # Errors
    /// As [`Collection::insert`], before anything is written.
    pub fn prepared_insert(&self, mut doc: Document) -> Result<Document> {
        self.ensure_id(&mut doc)?;
        self.stamp_new(&mut doc);
        self.validate(&doc)?;
        Ok(doc)
    }

    /// The update [`Collection::update`] would apply to what `selector` finds, for a writer
    /// that applies it itself: with `updatedAt` when the collection keeps timestamps, and for a
    /// replacement the `createdAt` of the document found now (server time when there is none).
    ///
    /// # Errors
    /// Store failures of the read, an update that cannot take the stamp.
    pub async fn prepared_update(&self, selector: &Selector, update: &Update) -> Result<Update> {
        Ok(self
            .stamp_update(selector, Cow::Borrowed(update))
            .await?
            .into_owned())
    }

    /// Inserts every document of `docs`, all or none, and returns their `_id`s in order.
    ///
    /// Each document is checked as by [`Collection::insert`] (a new `_id` of the collection's
    /// kind when it has none, then the schema) before anything is written; then all of them are
    /// written in one store batch ([`Store::insert_many`]), much faster than one by one.
    ///
    /// # Errors
    /// [`Error::Validation`] (or [`Error::InvalidArgument`] for a bad `_id`) for the first
    /// document refused, and a store [`portico_store::Error::DuplicateId`] when an `_id` exists
    /// already or repeats within `docs`; nothing is written then.
    pub async fn insert_many(&self, docs: Vec<Document>) -> Result<Vec<String>> {
        let mut checked = Vec::with_capacity(docs.len());
        let mut jobs = Vec::new();
        for doc in docs {
            let (doc, enqueued) = self.hooked_new(None, doc).await?;
            checked.push(doc);
            jobs.extend(enqueued);
        }
        let after: Vec<Option<Document>> = checked
            .iter()
            .map(|doc| self.keep_for_after_insert(doc))
            .collect();
        let ids = if jobs.is_empty() {
            self.store().insert_many(self.name(), checked).await?
        } else {
            let ids = checked
                .iter()
                .map(|d| {
                    d.get("_id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect();
            let ops = checked
                .into_iter()
                .map(|doc| portico_store::BatchOp::Insert {
                    collection: self.name().to_owned(),
                    doc,
                })
                .collect();
            self.write_with_jobs(ops, jobs).await?;
            ids
        };
        for doc in after {
            self.after_insert(None, doc).await;
        }
        Ok(ids)
    }

    /// Inserts every document of `batches`, all or none, and returns how many it inserted: an
    /// import of any size that holds a batch at a time ([`Store::insert_stream`]).
    ///
    /// Each document is checked as by [`Collection::insert_many`] as its batch comes; write
    /// hooks do not run (an import writes data as it is). `batches`
    /// may block (a channel from a reader thread); an error it yields stops the stream.
    ///
    /// # Errors
    /// The first error of `batches`, or as [`Collection::insert_many`]; nothing is written then.
    pub async fn insert_stream<I>(&self, batches: I) -> Result<u64>
    where
        I: Iterator<Item = Result<Vec<Document>>> + Send + 'static,
    {
        // A refusal that is not the store's goes to the store as an error that stops the
        // stream, and is kept here to be returned as it was.
        let refused: Arc<std::sync::Mutex<Option<Error>>> = Arc::default();
        let keep = Arc::clone(&refused);
        let this = self.clone();
        let checked = batches.map(move |batch| {
            let checked = batch.and_then(|mut docs| {
                for doc in &mut docs {
                    this.ensure_id(doc)?;
                    this.stamp_new(doc);
                    this.validate(doc)?;
                }
                Ok(docs)
            });
            checked.map_err(|e| match e {
                Error::Store(e) => e,
                other => {
                    let message = other.to_string();
                    *keep.lock().unwrap_or_else(PoisonError::into_inner) = Some(other);
                    portico_store::Error::InvalidDocument(message)
                }
            })
        });
        match self
            .store()
            .insert_stream(self.name(), Box::new(checked))
            .await
        {
            Ok(n) => Ok(n),
            Err(e) => Err(refused
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .unwrap_or(Error::Store(e))),
        }
    }

    /// The documents matching `query`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn find(&self, query: &Query) -> Result<Vec<Document>> {
        Ok(self.store().find(self.name(), query).await?)
    }

    /// A list page: the documents of `read.query` as stored, with their total when
    /// `read.count` asks and the documents `read.related` names where the store reads them
    /// along (see [`Store::find_page`]; [`crate::Platform::related_fields`] and
    /// [`crate::Platform::expand_read`] build what to follow and show what was read). For a
    /// reply that embeds the documents as stored, decoding only what it must look inside.
    ///
    /// # Errors
    /// Store failures.
    pub async fn find_page(&self, read: &PageRead) -> Result<Page> {
        Ok(self.store().find_page(self.name(), read).await?)
    }

    /// The first document matching `selector`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn find_one(&self, selector: &Selector) -> Result<Option<Document>> {
        Ok(self.store().find_one(self.name(), selector).await?)
    }

    /// The document with `_id == id`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn get(&self, id: &str) -> Result<Option<Document>> {
        Ok(self.store().get(self.name(), id).await?)
    }

    /// The document with `_id == id` as stored (see [`Store::get_stored`]): for a reply that
    /// embeds it without decoding it.
    ///
    /// # Errors
    /// Store failures.
    pub async fn get_stored(&self, id: &str) -> Result<Option<Stored>> {
        Ok(self.store().get_stored(self.name(), id).await?)
    }

    /// How many documents match `selector`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn count(&self, selector: &Selector) -> Result<u64> {
        Ok(self.store().count(self.name(), selector).await?)
    }

    /// The groups of `spec` (see [`portico_store::Aggregate`]): counted, summed, averaged in
    /// the database, one document per group.
    ///
    /// # Errors
    /// A path that cannot be aggregated, too many groups, store failures.
    pub async fn aggregate(&self, spec: &portico_store::Aggregate) -> Result<Vec<Document>> {
        Ok(self.store().aggregate(self.name(), spec).await?)
    }

    /// [`Collection::aggregate`] for the caller `user_id`: refused when it groups or computes
    /// on a field the collection's field rules hide from that caller (its figures would reveal
    /// the field). The caller's read scope is the caller's to put in `spec.selector`.
    ///
    /// # Errors
    /// [`Error::HiddenField`], and as [`Collection::aggregate`].
    pub async fn aggregate_as(
        &self,
        user_id: Option<&str>,
        spec: &portico_store::Aggregate,
    ) -> Result<Vec<Document>> {
        let view = self.field_view(user_id).await?;
        view.check_query(spec.paths())?;
        self.aggregate(spec).await
    }

    /// Applies `update` to the first (or with `multi` every) matching document; with `upsert`,
    /// inserts when nothing matches.
    ///
    /// With a schema, the documents the update would produce are validated first and nothing is
    /// written when one fails. (The check reads, then the store writes atomically; a concurrent
    /// writer between the two can still produce a document the schema was not shown.)
    ///
    /// # Errors
    /// [`Error::Validation`], store errors (a modifier that cannot be applied).
    pub async fn update(
        &self,
        selector: &Selector,
        update: &Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        self.update_given(None, selector, Cow::Borrowed(update), options)
            .await
    }

    /// [`Collection::update`] done for the client `user_id` (see
    /// [`Collection::insert_returning_as`]): the write hooks are handed `user_id`.
    ///
    /// # Errors
    /// As [`Collection::update`].
    pub async fn update_as(
        &self,
        user_id: Option<&str>,
        selector: &Selector,
        update: &Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        self.update_given(user_id, selector, Cow::Borrowed(update), options)
            .await
    }

    /// [`Collection::update`] given the update itself, so the store may drop it once it has
    /// made what it writes (see [`portico_store::Store::update_owned`]): a write of a large
    /// document then holds no parsed copy of it while the database copies its text.
    ///
    /// # Errors
    /// As [`Collection::update`].
    pub async fn update_owned(
        &self,
        selector: &Selector,
        update: Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        self.update_given(None, selector, Cow::Owned(update), options)
            .await
    }

    /// [`Collection::update_owned`] done for the client `user_id` (see
    /// [`Collection::insert_returning_as`]): the write hooks are handed `user_id`.
    ///
    /// # Errors
    /// As [`Collection::update`].
    pub async fn update_owned_as(
        &self,
        user_id: Option<&str>,
        selector: &Selector,
        update: Update,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        self.update_given(user_id, selector, Cow::Owned(update), options)
            .await
    }

    async fn update_given(
        &self,
        user_id: Option<&str>,
        selector: &Selector,
        update: Cow<'_, Update>,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        if self.hooked(HookOp::Update) {
            return self
                .update_with_hooks(user_id, selector, &update, options)
                .await;
        }
        self.update_unhooked(selector, update, options).await
    }

    /// [`Collection::update`] without the write hooks.
    pub(super) async fn update_unhooked(
        &self,
        selector: &Selector,
        update: Cow<'_, Update>,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        let update = self.stamp_update(selector, update).await?;
        let result = self.update_stamped(selector, update, options).await?;
        if let (Some(id), true) = (&result.upserted_id, self.inner.options.timestamps) {
            // An upsert's new document was built from the update, which carries no `createdAt`.
            let created = Update::set(Document::from_iter([(
                timestamps::CREATED_AT.to_owned(),
                Value::String(now_iso()),
            )]))?;
            self.store()
                .update(
                    self.name(),
                    &Selector::by_id(id),
                    &created,
                    UpdateOptions::default(),
                )
                .await?;
        }
        Ok(result)
    }

    pub(super) async fn update_stamped(
        &self,
        selector: &Selector,
        update: Cow<'_, Update>,
        options: UpdateOptions,
    ) -> Result<UpdateResult> {
        if self.inner.schema.is_some() {
            let mut query = Query::new(selector.clone());
            if !options.multi {
                query.limit = Some(1);
            }
            let docs = self.find(&query).await?;
            if docs.is_empty() && options.upsert {
                let doc = self.upsert_document(selector, &update)?;
                self.validate(&doc)?;
                // Insert the validated document itself so its `_id` is of this collection's kind.
                let id = self.store().insert(self.name(), doc).await?;
                return Ok(UpdateResult {
                    matched: 0,
                    modified: 0,
                    upserted_id: Some(id),
                });
            }
            for mut doc in docs {
                update.apply(&mut doc)?;
                self.validate(&doc)?;
            }
        } else if options.upsert
            && self.id_kind() == IdKind::ObjectId
            && self.count(selector).await? == 0
        {
            // The store would give the upsert a random id; this collection wants an object id.
            let doc = self.upsert_document(selector, &update)?;
            let id = self.store().insert(self.name(), doc).await?;
            return Ok(UpdateResult {
                matched: 0,
                modified: 0,
                upserted_id: Some(id),
            });
        }
        let store = self.store();
        Ok(match update {
            Cow::Borrowed(update) => store.update(self.name(), selector, update, options).await?,
            Cow::Owned(update) => {
                store
                    .update_owned(self.name(), selector, update, options)
                    .await?
            }
        })
    }

    /// Applies `update` to the document `id` and returns the document after the change, `None`
    /// when there is no such document.
    ///
    /// # Errors
    /// As [`Collection::update`].
    pub async fn update_by_id(&self, id: &str, update: &Update) -> Result<Option<Document>> {
        let result = self
            .update(&Selector::by_id(id), update, UpdateOptions::default())
            .await?;
        if result.matched == 0 {
            return Ok(None);
        }
        self.get(id).await
    }

    /// Removes every document matching `selector`; returns how many.
    ///
    /// # Errors
    /// Store failures.
    pub async fn remove(&self, selector: &Selector) -> Result<u64> {
        self.remove_as(None, selector).await
    }

    /// [`Collection::remove`] done for the client `user_id` (see
    /// [`Collection::insert_returning_as`]): the write hooks are handed `user_id`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn remove_as(&self, user_id: Option<&str>, selector: &Selector) -> Result<u64> {
        if self.hooked(HookOp::Remove) {
            return self.remove_with_hooks(user_id, selector).await;
        }
        Ok(self.store().remove(self.name(), selector).await?)
    }

    /// Removes the document `id`; true when it existed.
    ///
    /// # Errors
    /// Store failures.
    pub async fn remove_by_id(&self, id: &str) -> Result<bool> {
        Ok(self.remove(&Selector::by_id(id)).await? > 0)
    }

    /// A cursor over this collection, for a publication to return.
    pub fn cursor(&self, query: Query) -> Cursor {
        Cursor::new(self.name(), query)
    }
}
