//! Client writes of a [`Collection`]: the allow/deny rules, field-name checks and the account
//! fields no client may set.

use std::borrow::Cow;
use std::sync::PoisonError;

use portico_store::{Document, Selector, Update, UpdateOptions};
use serde_json::Value;

use super::{Collection, HookOp};
use crate::FieldView;
use crate::rules::Write;
use crate::{Error, Result, Rules};

impl Collection {
    /// Refuses field names a client may not write: `$`-prefixed ones (a client document is data,
    /// never an operator) and dotted or empty ones (unreachable by path), at any depth. The
    /// top-level `_id` is the one exception.
    pub(super) fn check_client_fields(doc: &Document) -> Result<()> {
        doc.iter()
            .filter(|(k, _)| *k != "_id")
            .try_for_each(|(k, v)| check_field(k, v, ""))
    }

    /// Refuses a client write to an account's `roles` or `services` (or anything under them):
    /// only server code (the CLI, the admin page, the accounts service) changes those, whatever
    /// the collection's rules say. `fields` are the top-level fields the write sets.
    pub(super) fn check_protected<'a>(
        &self,
        fields: impl IntoIterator<Item = &'a str>,
    ) -> Result<()> {
        if self.name() != crate::accounts::USERS {
            return Ok(());
        }
        match fields
            .into_iter()
            .find(|f| PROTECTED_ACCOUNT_FIELDS.contains(f))
        {
            Some(field) => Err(Error::ProtectedField(field.to_owned())),
            None => Ok(()),
        }
    }

    /// The fields of this collection that only server code writes: its file fields, whose
    /// metadata changes only by an upload or a delete through the files service
    /// ([`crate::files::Files`]), never by a client's body.
    pub fn server_fields(&self) -> Vec<String> {
        self.inner.server_fields.of(self.name())
    }

    /// Refuses a client write that would set, change or remove a field only server code writes
    /// ([`Collection::server_fields`]). `stored` is the document before the write (`None` for an
    /// insert), `changed` the document the write would make; a value repeated unchanged passes,
    /// and a missing field is the same as `null`. Both doors and the client writes of this
    /// collection call it.
    ///
    /// # Errors
    /// [`Error::FileField`] naming the first such field.
    pub fn check_server_fields(&self, stored: Option<&Document>, changed: &Document) -> Result<()> {
        for field in self.server_fields() {
            let before = stored.and_then(|d| d.get(&field)).filter(|v| !v.is_null());
            let after = changed.get(&field).filter(|v| !v.is_null());
            if before != after {
                return Err(Error::FileField(field));
            }
        }
        Ok(())
    }

    /// Gives a client's whole replacement `doc` of `stored` the stored values of the fields only
    /// server code writes that it leaves out, so replacing a document keeps its files (a client
    /// that read a document without them, or never knew them, cannot drop them).
    pub fn keep_server_fields(&self, stored: &Document, doc: &mut Document) {
        for field in self.server_fields() {
            if !doc.contains_key(&field)
                && let Some(value) = stored.get(&field)
            {
                doc.insert(field, value.clone());
            }
        }
    }

    /// Adds allow rules for client writes.
    pub fn allow(&self, rules: Rules) {
        self.inner
            .rules
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .allow
            .push(rules);
    }

    /// Who the rules let write with `op` (`insert`, `update` or `remove`), in words: the
    /// descriptions of the allow rules ([`Rules::described`]) and deny rules, or `nobody`.
    pub fn rule_summary(&self, op: &str) -> String {
        self.inner
            .rules
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .summary(op)
    }

    /// Adds deny rules for client writes; a deny returning true overrides every allow.
    pub fn deny(&self, rules: Rules) {
        self.inner
            .rules
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .deny
            .push(rules);
    }

    /// Refuses an update (`update`) or remove at once when no allow rule could let it through,
    /// before the document is looked up: otherwise a missing id (0 changed) and an existing one
    /// (access denied) would answer differently, telling a caller which ids exist.
    pub(super) fn refuse_without_allow(&self, update: bool) -> Result<()> {
        let rules = self
            .inner
            .rules
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        if rules.may_allow(update) {
            Ok(())
        } else {
            Err(Error::AccessDenied)
        }
    }

    /// [`Collection::refuse_without_allow`] for updates (file uploads and deletes).
    pub(crate) fn refuse_without_allow_update(&self) -> Result<()> {
        self.refuse_without_allow(true)
    }

    /// The update rules on changing `fields` of `doc` by `modifier` (file uploads and deletes).
    pub(crate) async fn check_update(
        &self,
        user_id: Option<&str>,
        doc: &Document,
        fields: &[String],
        modifier: &Value,
    ) -> Result<()> {
        self.check(user_id, Write::Update(doc, fields, modifier))
            .await
    }

    pub(super) async fn check(&self, user_id: Option<&str>, write: Write<'_>) -> Result<()> {
        let rules = self
            .inner
            .rules
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if rules.permits(user_id, &write).await {
            Ok(())
        } else {
            Err(Error::AccessDenied)
        }
    }

    /// Inserts a client's document when the rules allow it; returns its `_id`.
    ///
    /// A missing `_id` is generated before the rules run, so they see it. A client-chosen `_id`
    /// must be a non-empty string (24 hex digits in an object-id collection). Field names may not
    /// start with `$` or contain `.`.
    ///
    /// In the `users` collection, `roles` and `services` are refused whatever the rules say
    /// ([`Error::ProtectedField`]); a file field is refused in any collection
    /// ([`Error::FileField`]: files are uploaded to a document that exists).
    ///
    /// # Errors
    /// [`Error::AccessDenied`], [`Error::ProtectedField`], [`Error::FileField`],
    /// [`Error::InvalidArgument`] for a bad
    /// `_id` or field name,
    /// [`Error::Validation`],
    /// a store error for a duplicate `_id`.
    pub async fn client_insert(&self, user_id: Option<&str>, mut doc: Document) -> Result<String> {
        let id = self.ensure_id(&mut doc)?;
        Collection::check_client_fields(&doc)?;
        self.check_protected(doc.keys().map(String::as_str))?;
        self.check_server_fields(None, &doc)?;
        self.stamp_new(&mut doc);
        if !self.id_kind().is_valid(&id) {
            return Err(Error::InvalidArgument(format!("invalid _id {id:?}")));
        }
        if self.has_field_rules() {
            self.field_view(user_id)
                .await?
                .check_write(&doc, doc.keys().map(String::as_str))?;
        }
        self.check(user_id, Write::Insert(&doc)).await?;
        let (doc, jobs) = self.hooked_insert(user_id, doc).await?;
        let after = self.keep_for_after_insert(&doc);
        let id = self.store_insert(doc, jobs).await?;
        self.after_insert(user_id, after).await;
        Ok(id)
    }

    /// Applies a client's modifier (such as `{"$set": {...}}`) to the document `id` when the rules
    /// allow it; returns how many documents were updated (0 when there is no such document).
    ///
    /// The update rules see the document before the change, the changed top-level field names
    /// and `modifier` as given. Whole-document replacement is not accepted from clients, nor a
    /// change that would store a `$`-prefixed or dotted field name, nor (in the `users`
    /// collection) a change to `roles` or `services` ([`Error::ProtectedField`]), nor a change to a
    /// file field's metadata ([`Error::FileField`]: only uploads and deletes change it). With no allow
    /// rule for updates, every id is [`Error::AccessDenied`] (a missing one too), so the answer
    /// tells nothing about which ids exist.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a replacement, a store error for a malformed modifier,
    /// [`Error::AccessDenied`], [`Error::Validation`].
    pub async fn client_update(
        &self,
        user_id: Option<&str>,
        id: &str,
        modifier: &Value,
    ) -> Result<u64> {
        self.client_update_if(user_id, id, modifier, &IfMatch::Absent)
            .await
    }

    /// [`Collection::client_update`] as a conditional write (`If-Match`): with
    /// [`IfMatch::Any`] the document must exist, with [`IfMatch::Tags`] it must still have one
    /// of the tags ([`portico_store::etag`]). The tag the rules saw is checked again inside the
    /// write's transaction, so of two writers racing with the same tag exactly one succeeds.
    ///
    /// # Errors
    /// As [`Collection::client_update`], and [`Error::PreconditionFailed`] when the document is
    /// missing, has another tag, or changed between the check and the write.
    pub async fn client_update_if(
        &self,
        user_id: Option<&str>,
        id: &str,
        modifier: &Value,
        if_match: &IfMatch,
    ) -> Result<u64> {
        let update = Update::parse(modifier)?;
        if update.is_replacement() {
            return Err(Error::InvalidArgument(
                "a client update must use modifiers such as $set, not replace the document".into(),
            ));
        }
        self.refuse_without_allow(true)?;
        let view = self.field_view(user_id).await?;
        let Some((doc, selector)) = self.conditional_target(id, if_match, &view).await? else {
            return Ok(0);
        };
        let fields = update.field_names();
        self.check_protected(fields.iter().map(String::as_str))?;
        view.check_write(&doc, fields.iter().map(String::as_str))?;
        self.check(user_id, Write::Update(&doc, &fields, modifier))
            .await?;
        let hooked = self.hooked(HookOp::Update);
        let (update, hooked, mut jobs) = if hooked {
            let (update, modifier, fields, jobs) = self
                .before_update(user_id, std::slice::from_ref(&doc), &update)
                .await?;
            (update, Some((modifier, fields)), jobs)
        } else {
            (update, None, Vec::new())
        };
        let update = self
            .stamp_update(&Selector::by_id(id), Cow::Owned(update))
            .await?
            .into_owned();
        let mut changed = doc.clone();
        update.apply(&mut changed)?;
        Collection::check_client_fields(&changed)?;
        self.check_server_fields(Some(&doc), &changed)?;
        self.validate(&changed)?;
        self.add_events(HookOp::Update, [&changed], &mut jobs)
            .await?;
        // Neither the checked document nor the update is held while the store writes.
        drop(changed);
        let result = if jobs.is_empty() {
            self.store()
                .update_owned(self.name(), &selector, update, UpdateOptions::default())
                .await?
        } else {
            let op = portico_store::BatchOp::Update {
                collection: self.name().to_owned(),
                selector,
                update,
            };
            let n = self.write_with_jobs(vec![op], jobs).await? as u64;
            portico_store::UpdateResult {
                matched: n,
                modified: n,
                upserted_id: None,
            }
        };
        if result.matched == 0 && !matches!(if_match, IfMatch::Absent) {
            return Err(Error::PreconditionFailed);
        }
        if let (Some((modifier, fields)), true) = (hooked, result.matched > 0) {
            self.after_update(user_id, vec![doc], fields, modifier)
                .await;
        }
        Ok(result.matched)
    }

    /// Removes the document `id` for a client when the rules allow it; returns how many were
    /// removed (0 when there is no such document and some allow rule decides removes; with none,
    /// every id is [`Error::AccessDenied`], so the answer tells nothing about which ids exist).
    ///
    /// # Errors
    /// [`Error::AccessDenied`], store failures.
    pub async fn client_remove(&self, user_id: Option<&str>, id: &str) -> Result<u64> {
        self.client_remove_if(user_id, id, &IfMatch::Absent).await
    }

    /// [`Collection::client_remove`] as a conditional write (`If-Match`), checked inside the
    /// remove's transaction as for [`Collection::client_update_if`].
    ///
    /// # Errors
    /// As [`Collection::client_remove`], and [`Error::PreconditionFailed`].
    pub async fn client_remove_if(
        &self,
        user_id: Option<&str>,
        id: &str,
        if_match: &IfMatch,
    ) -> Result<u64> {
        self.refuse_without_allow(false)?;
        let view = self.field_view(user_id).await?;
        let Some((doc, selector)) = self.conditional_target(id, if_match, &view).await? else {
            return Ok(0);
        };
        self.check(user_id, Write::Remove(&doc)).await?;
        let hooked = self.hooked(HookOp::Remove);
        let mut jobs = if hooked {
            self.before_remove(user_id, std::slice::from_ref(&doc))
                .await?
        } else {
            Vec::new()
        };
        self.add_events(HookOp::Remove, [&doc], &mut jobs).await?;
        let removed = if jobs.is_empty() {
            self.store().remove(self.name(), &selector).await?
        } else {
            let op = portico_store::BatchOp::Remove {
                collection: self.name().to_owned(),
                selector,
            };
            self.write_with_jobs(vec![op], jobs).await? as u64
        };
        if removed == 0 && !matches!(if_match, IfMatch::Absent) {
            return Err(Error::PreconditionFailed);
        }
        if hooked && removed > 0 {
            self.after_remove(user_id, vec![doc]).await;
        }
        Ok(removed)
    }

    /// The document `id` a client write would change, and the selector the write must use:
    /// by `_id` alone, and for a tag condition also by the entity tag read now, so the store
    /// re-checks it inside the write's transaction. `None` when an unconditional write finds no
    /// document. The caller's tags are of the document as `view` shows it (a tag never depends
    /// on a field the caller cannot see); the store re-checks the stored document's own tag.
    pub(super) async fn conditional_target(
        &self,
        id: &str,
        if_match: &IfMatch,
        view: &FieldView,
    ) -> Result<Option<(Document, Selector)>> {
        let Some(doc) = self.get(id).await? else {
            return match if_match {
                IfMatch::Absent => Ok(None),
                _ => Err(Error::PreconditionFailed),
            };
        };
        let selector = Selector::by_id(id);
        let selector = match if_match {
            IfMatch::Absent | IfMatch::Any => selector,
            IfMatch::Tags(tags) => {
                let tag = portico_store::etag(&doc);
                let seen = if view.is_empty() {
                    tag.clone()
                } else {
                    portico_store::etag(&view.applied(doc.clone()))
                };
                if !tags.contains(&seen) {
                    return Err(Error::PreconditionFailed);
                }
                selector.and_etag(tag)
            }
        };
        Ok(Some((doc, selector)))
    }
}

/// What a client's conditional write expects of the stored document: the meaning of an
/// `If-Match` header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum IfMatch {
    /// No condition (no header): write whatever is stored; a missing document is a count of 0.
    #[default]
    Absent,
    /// `*`: the document must exist (a document removed before the write is a failed
    /// precondition, not a count of 0).
    Any,
    /// The document must still have one of these entity tags ([`portico_store::etag`]).
    Tags(Vec<String>),
}

/// The top-level fields of a user record no client write may set (see
/// [`Collection::client_insert`]).
pub const PROTECTED_ACCOUNT_FIELDS: [&str; 2] = ["roles", "services"];

/// Checks the field `key` (found at `at`) and everything below it; see
/// [`Collection::check_client_fields`].
fn check_field(key: &str, value: &Value, at: &str) -> Result<()> {
    let path = if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    };
    if key.starts_with('$') {
        return Err(Error::InvalidArgument(format!(
            "field names may not start with '$': {path:?}"
        )));
    }
    if key.is_empty() || key.contains('.') {
        return Err(Error::InvalidArgument(format!(
            "field names may not be empty or contain '.': {path:?}"
        )));
    }
    check_nested(value, &path)
}

/// Checks the field names inside `value` (objects, and objects inside arrays at any depth).
fn check_nested(value: &Value, path: &str) -> Result<()> {
    match value {
        Value::Object(m) => m.iter().try_for_each(|(k, v)| check_field(k, v, path)),
        Value::Array(items) => items.iter().try_for_each(|v| check_nested(v, path)),
        _ => Ok(()),
    }
}
