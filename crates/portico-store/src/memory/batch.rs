//! [`crate::Store::batch`] for the memory store: every write under the one write lock, so no
//! reader sees part of a batch; an undo log puts back what earlier writes changed when a later
//! one fails.

use std::collections::HashMap;

use super::{Collection, MemoryStore, check_name};
use crate::document::prepare_insert;
use crate::{BatchError, BatchFailure, BatchOp, BatchOutcome, Document, Error, document_id};

/// What to put back: a document's previous version (`None`: it did not exist).
struct Undo {
    collection: String,
    id: String,
    previous: Option<Document>,
}

type Collections = HashMap<String, Collection>;

impl Collection {
    /// Sets (or with `None` deletes) the document `id`, keeping the indexes right; returns the
    /// version it replaced.
    fn put(&mut self, id: &str, doc: Option<Document>) -> Option<Document> {
        let old = self.docs.remove(id);
        if let Some(old) = &old {
            self.index_remove(id, old);
        }
        if let Some(doc) = doc {
            self.index_add(id, &doc);
            self.docs.insert(id.to_owned(), doc);
        }
        old
    }
}

impl MemoryStore {
    pub(super) fn apply_batch(&self, ops: Vec<BatchOp>) -> Result<Vec<BatchOutcome>, BatchError> {
        let mut all = self.write().map_err(|e| BatchError::new(0, e))?;
        let mut undo = Vec::new();
        let mut created = Vec::new();
        let mut done = Vec::with_capacity(ops.len());
        for (index, op) in ops.into_iter().enumerate() {
            let collection = op.collection().to_owned();
            if !all.contains_key(&collection) {
                created.push(collection);
            }
            match apply(&mut all, op, &mut undo) {
                Ok(outcome) => done.push(outcome),
                Err(failure) => {
                    for step in undo.into_iter().rev() {
                        if let Some(coll) = all.get_mut(&step.collection) {
                            coll.put(&step.id, step.previous);
                        }
                    }
                    for name in created {
                        if all.get(&name).is_some_and(|c| c.docs.is_empty()) {
                            all.remove(&name);
                        }
                    }
                    return Err(BatchError::new(index, failure));
                }
            }
        }
        Ok(done)
    }
}

fn apply(
    all: &mut Collections,
    op: BatchOp,
    undo: &mut Vec<Undo>,
) -> Result<BatchOutcome, BatchFailure> {
    match op {
        BatchOp::Insert { collection, doc } => {
            check_name(&collection)?;
            let (id, doc) = prepare_insert(doc)?;
            let coll = all.entry(collection.clone()).or_default();
            if coll.docs.contains_key(&id) {
                return Err(Error::DuplicateId { collection, id }.into());
            }
            coll.put(&id, Some(doc.clone()));
            undo.push(Undo {
                collection,
                id,
                previous: None,
            });
            Ok(BatchOutcome::Inserted(doc))
        }
        BatchOp::Update {
            collection,
            selector,
            update,
        } => {
            let coll = all.get_mut(&collection).ok_or(BatchFailure::NoMatch)?;
            let (id, mut new) = coll
                .matching(&selector)
                .next()
                .map(|(id, doc)| (id.clone(), doc.clone()))
                .ok_or(BatchFailure::NoMatch)?;
            update.apply(&mut new)?;
            if document_id(&new) != Some(id.as_str()) {
                return Err(Error::InvalidModifier(format!(
                    "the update would change the _id of document {id:?}"
                ))
                .into());
            }
            let previous = coll.put(&id, Some(new.clone()));
            undo.push(Undo {
                collection,
                id,
                previous,
            });
            Ok(BatchOutcome::Updated(new))
        }
        BatchOp::Remove {
            collection,
            selector,
        } => {
            let coll = all.get_mut(&collection).ok_or(BatchFailure::NoMatch)?;
            let id = coll
                .matching(&selector)
                .next()
                .map(|(id, _)| id.clone())
                .ok_or(BatchFailure::NoMatch)?;
            let previous = coll.put(&id, None).ok_or(BatchFailure::NoMatch)?;
            undo.push(Undo {
                collection,
                id,
                previous: Some(previous.clone()),
            });
            Ok(BatchOutcome::Removed(previous))
        }
    }
}
