//! The read path: every read of the store goes through [`PostgresStore::read`], which decides
//! where it is answered, and the read methods state only their query.
//!
//! 1. **The read cache** (see `cache.rs`), for the reads a [`Keep`] says how to keep: when the
//!    cache is on, no collection the read touches goes to a replica in the running scope (the
//!    primary's stamps do not count a replica's data), and their change stamps can be read
//!    (one round shared by the reads waiting, see `stamp.rs`). The answer kept under those
//!    stamps is served; else the query runs on the primary and its answer is kept under them.
//! 2. **A read replica** (see `replica.rs`), when the running scope may use one for the
//!    collection: the query runs there (counted); if it fails there, on the primary.
//! 3. **The primary**, for everything else.

use deadpool_postgres::Client;

use super::{PostgresStore, cache, query};
use crate::{Query, RelatedField, RelatedRead, Result};

/// A page of stored texts, its total and its related documents.
pub(super) type RelatedPage = (Vec<String>, u64, Vec<RelatedRead>);

/// Whether and how a read's answer (of type `T`) is kept in the read cache.
pub(super) enum Keep<'q, T> {
    /// Not kept: the read goes to a replica or the primary.
    No,
    /// One entry of the read's collection, valid under its stamp.
    Entry(Entry<T>),
    /// A page of `collection` with its total and related documents: the page kept as a counted
    /// page is, each related document as a document read by id is (see
    /// [`PostgresStore::cached_related`]).
    Related {
        collection: &'q str,
        query: &'q Query,
        related: &'q [RelatedField],
        answer: fn(RelatedPage) -> T,
    },
}

/// How an answer is kept under one cache key.
pub(super) struct Entry<T> {
    key: cache::Key,
    /// The answer a kept value gives; `None`: it cannot answer this read (a page kept without
    /// its total, for a read that wants it).
    from: fn(&cache::Value) -> Option<T>,
    /// The value kept for an answer; `None`: not kept (a sorted window no index serves).
    into: fn(&T) -> Option<cache::Value>,
}

impl Entry<Option<String>> {
    /// A document's stored text by `_id` (`None`: there is none, which is kept too).
    pub(super) fn doc(id: &str) -> Self {
        Entry {
            key: cache::Key::Doc(id.to_owned()),
            from: |value| match value {
                cache::Value::Doc(text) => Some(text.clone()),
                cache::Value::Page(..) => None,
            },
            into: |text| Some(cache::Value::Doc(text.clone())),
        }
    }
}

impl Entry<Vec<String>> {
    /// A page of stored texts of `query` (a plain page), without its total.
    pub(super) fn page(query: &Query) -> Self {
        Entry {
            key: cache::Key::Page(cache::PageKey::of(query)),
            from: |value| match value {
                cache::Value::Page(texts, _) => Some(texts.clone()),
                cache::Value::Doc(_) => None,
            },
            into: |texts| Some(cache::Value::Page(texts.clone(), None)),
        }
    }
}

impl Entry<Option<(Vec<String>, u64)>> {
    /// A page of `query` with its total (`None`: a sorted window no index serves, not kept).
    pub(super) fn counted_page(query: &Query) -> Self {
        Entry {
            key: cache::Key::Page(cache::PageKey::of(query)),
            from: |value| match value {
                cache::Value::Page(texts, Some(total)) => Some(Some((texts.clone(), *total))),
                _ => None,
            },
            into: |answer| {
                answer
                    .as_ref()
                    .map(|(texts, total)| cache::Value::Page(texts.clone(), Some(*total)))
            },
        }
    }
}

impl PostgresStore {
    /// Answers a read from the read cache, a replica or the primary (see the module docs):
    /// `keep` says how its answer is kept, `on` names the collection that decides whether a
    /// replica may answer (`None`: the primary always), and `read` runs the query on a
    /// connection (more than once when a replica fails it).
    pub(super) async fn read<T, F, Fut>(
        &self,
        on: Option<&str>,
        keep: Keep<'_, T>,
        read: F,
    ) -> Result<T>
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        match keep {
            Keep::No => {}
            Keep::Entry(entry) => {
                if let Some(collection) = on
                    && let Some(stamps) = self.cache_stamps(&[collection]).await
                {
                    return self.kept(collection, stamps[0], entry, &read).await;
                }
            }
            Keep::Related {
                collection,
                query,
                related,
                answer,
            } => {
                let mut names = vec![collection];
                names.extend(related.iter().map(|f| f.collection.as_str()));
                if let Some(stamps) = self.cache_stamps(&names).await {
                    return Ok(answer(
                        self.cached_related(collection, query, related, &stamps)
                            .await?,
                    ));
                }
            }
        }
        let replica = on.and_then(|c| self.replicas.as_ref()?.pick(Some(c)));
        if let Some(replica) = replica {
            match replica.client().await {
                Ok(client) => match read(client).await {
                    Ok(answer) => {
                        replica.served();
                        return Ok(answer);
                    }
                    Err(e) => replica.failed(&e),
                },
                Err(e) => replica.failed(&e),
            }
        }
        read(self.client().await?).await
    }

    /// The stamps the reads of `collections` are cached under (in that order): `None` when
    /// there is no cache, one of them goes to a replica in the running scope (whose data the
    /// primary's stamps do not count), or a stamp cannot be read (then nothing is cached, as
    /// `cache.rs` says).
    async fn cache_stamps(&self, collections: &[&str]) -> Option<Vec<u64>> {
        if !self.cache.enabled()
            || self
                .replicas
                .as_ref()
                .is_some_and(|r| collections.iter().any(|c| r.pick(Some(c)).is_some()))
        {
            return None;
        }
        self.stamps.stamps(collections).await
    }

    /// The answer `entry` keeps for `collection` under `stamp`, else `read` on the primary,
    /// kept.
    async fn kept<T, F, Fut>(
        &self,
        collection: &str,
        stamp: u64,
        entry: Entry<T>,
        read: &F,
    ) -> Result<T>
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        if let Some(value) = self.cache.get(collection, &entry.key, stamp)
            && let Some(answer) = (entry.from)(&value)
        {
            return Ok(answer);
        }
        let answer = read(self.client().await?).await?;
        if let Some(value) = (entry.into)(&answer) {
            self.cache.put(collection, entry.key, stamp, value);
        }
        Ok(answer)
    }

    /// [`crate::Store::find_page`] with related documents through the read cache, under `stamps` (of
    /// `collection`, then of each relation's): the page and its total as a counted page is
    /// kept, and each relation's documents as `get_stored` keeps them, the ids the cache does not
    /// hold read with one statement per relation and kept. `query` is a plain page.
    async fn cached_related(
        &self,
        collection: &str,
        query: &Query,
        related: &[RelatedField],
        stamps: &[u64],
    ) -> Result<RelatedPage> {
        let (page, total) = self
            .kept(
                collection,
                stamps[0],
                Entry::counted_page(query),
                &|client: Client| async move {
                    query::page_json_counted(&client, collection, query.skip, query.limit)
                        .await
                        .map(Some)
                },
            )
            .await?
            .unwrap_or_default();
        let mut reads = Vec::with_capacity(related.len());
        for (follow, &stamp) in related.iter().zip(&stamps[1..]) {
            reads.push(self.cached_relation(&page, follow, stamp).await?);
        }
        Ok((page, total, reads))
    }

    /// The documents of `page` one relation names, from the cache under `stamp` or read by
    /// id with one statement and kept.
    async fn cached_relation(
        &self,
        page: &[String],
        follow: &RelatedField,
        stamp: u64,
    ) -> Result<RelatedRead> {
        let target = follow.collection.as_str();
        let ids = crate::related_ids_of_texts(page, &follow.field, follow.max_ids);
        let mut read = RelatedRead {
            field: follow.field.clone(),
            ..RelatedRead::default()
        };
        let mut missing = Vec::new();
        for id in &ids {
            let key = cache::Key::Doc(id.clone());
            match self.cache.get(target, &key, stamp).as_deref() {
                Some(cache::Value::Doc(Some(text))) => {
                    read.texts.push((id.clone(), text.clone()));
                }
                Some(cache::Value::Doc(None)) => {}
                _ => missing.push(id.clone()),
            }
        }
        if !missing.is_empty() {
            let client = self.client().await?;
            let found = query::texts_by_id(&client, target, &missing).await?;
            drop(client);
            let mut by_id: std::collections::HashMap<String, String> = found.into_iter().collect();
            for id in missing {
                let text = by_id.remove(&id);
                if let Some(text) = &text {
                    read.texts.push((id.clone(), text.clone()));
                }
                self.cache
                    .put(target, cache::Key::Doc(id), stamp, cache::Value::Doc(text));
            }
        }
        read.ids = ids;
        Ok(read)
    }
}
