//! What differs between a plain generated collection and the generated `users` collection,
//! behind one small trait: how documents are shown, which fields a client may filter on, and
//! how a write reaches the store. Every operation's handler (see `handlers.rs`) is written once
//! against [`Records`].

use async_trait::async_trait;
use portico_platform::{NewUser, Password};
use portico_store::{Document, Projection, Stored, UpdateOptions};
use serde_json::{Map, Value, json};

use super::client_body::{BodyUse, check};
use super::list::ListParams;
use super::{CollectionState, platform_error, scoped};
use crate::{Context, Reply};

/// A kind of generated collection.
#[async_trait]
pub(crate) trait Records: Send + Sync {
    /// The projection a list uses, after checking which paths the client may query.
    fn list_projection(&self, params: &ListParams) -> Result<Option<Projection>, Reply>;

    /// A stored document as the client sees it.
    fn show(&self, doc: Document) -> Document;

    /// Whether documents are shown as stored, so their entity tags can make requests
    /// conditional (see `conditional.rs`).
    fn tagged(&self) -> bool;

    /// Inserts a checked client body; returns the new `_id`, and the document as stored when
    /// the kind knows it without reading it back.
    async fn insert(
        &self,
        state: &CollectionState,
        ctx: &Context,
        body: Document,
    ) -> Result<(String, Option<Stored>), Reply>;

    /// Replaces (`how` is [`BodyUse::Replace`]) or changes the target document with a checked
    /// body; `false` when the caller cannot see such a document (or its tag differs).
    async fn update(
        &self,
        state: &CollectionState,
        ctx: &Context,
        target: Target<'_>,
        body: Document,
        how: BodyUse,
    ) -> Result<bool, Reply>;

    /// Removes the target document; `false` when the caller cannot see such a document (or its
    /// tag differs).
    async fn remove(
        &self,
        state: &CollectionState,
        ctx: &Context,
        target: Target<'_>,
    ) -> Result<bool, Reply>;
}

/// The document a write is about: its id, and the entity tag it must still have.
#[derive(Debug, Clone)]
pub(crate) struct Target<'a> {
    pub(crate) id: &'a str,
    pub(crate) tag: Option<std::borrow::Cow<'a, str>>,
}

impl Target<'_> {
    /// The selector of the target within the caller's scope.
    fn selector(
        &self,
        state: &CollectionState,
        ctx: &Context,
    ) -> Result<portico_store::Selector, Reply> {
        let selector = scoped(state, ctx, Some(json!({"_id": self.id})))?;
        Ok(match &self.tag {
            Some(tag) => selector.and_etag(tag.as_ref()),
            None => selector,
        })
    }
}

fn invalid_fields(e: impl std::fmt::Display) -> Reply {
    Reply::error(400, format!("Invalid fields: {e}"))
}

/// A plain collection: documents as stored, written through the store.
pub(crate) struct Documents;

#[async_trait]
impl Records for Documents {
    fn list_projection(&self, params: &ListParams) -> Result<Option<Projection>, Reply> {
        Ok(params.fields.as_ref().map(|f| f.projection.clone()))
    }

    fn show(&self, doc: Document) -> Document {
        doc
    }

    fn tagged(&self) -> bool {
        true
    }

    async fn insert(
        &self,
        state: &CollectionState,
        ctx: &Context,
        mut body: Document,
    ) -> Result<(String, Option<Stored>), Reply> {
        if let Some(scope) = &state.scope {
            body.extend(scope.stamp(ctx));
        }
        let (id, stored) = state
            .collection
            .insert_returning_as(ctx.user_id.as_deref(), body)
            .await
            .map_err(platform_error)?;
        Ok((id, Some(stored)))
    }

    async fn update(
        &self,
        state: &CollectionState,
        ctx: &Context,
        target: Target<'_>,
        mut body: Document,
        how: BodyUse,
    ) -> Result<bool, Reply> {
        let stamp = state
            .scope
            .as_ref()
            .map(|s| s.stamp(ctx))
            .unwrap_or_default();
        let update = if how == BodyUse::Replace {
            body.extend(stamp);
            portico_store::Update::replace(body)
        } else {
            // A patch may not move a document out of the caller's scope.
            for key in body.keys() {
                let top = key.split('.').next().unwrap_or(key);
                if stamp.get(top).is_some_and(|v| body.get(key) != Some(v)) {
                    return Err(Reply::error(
                        400,
                        format!("The field {top} cannot be changed"),
                    ));
                }
            }
            if body.is_empty() {
                return Ok(state
                    .collection
                    .find_one(&target.selector(state, ctx)?)
                    .await
                    .map_err(platform_error)?
                    .is_some());
            }
            portico_store::Update::set(body)
        }
        .map_err(|e| Reply::error(400, e.to_string()))?;
        let selector = target.selector(state, ctx)?;
        let result = state
            .collection
            .update_owned_as(
                ctx.user_id.as_deref(),
                &selector,
                update,
                UpdateOptions::default(),
            )
            .await
            .map_err(platform_error)?;
        Ok(result.matched > 0)
    }

    async fn remove(
        &self,
        state: &CollectionState,
        ctx: &Context,
        target: Target<'_>,
    ) -> Result<bool, Reply> {
        let selector = target.selector(state, ctx)?;
        Ok(state
            .collection
            .remove_as(ctx.user_id.as_deref(), &selector)
            .await
            .map_err(platform_error)?
            > 0)
    }
}

/// The generated `users` collection: only `_id` and `profile` are shown or queried; post creates
/// an account (password hashed); put and patch set `profile`.
pub(crate) struct Accounts;

fn exposed(path: &str) -> bool {
    path == "_id" || path == "profile" || path.starts_with("profile.")
}

fn string_field(body: &Document, name: &str) -> Result<Option<String>, Reply> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Reply::error(400, format!("{name} must be a string"))),
    }
}

#[async_trait]
impl Records for Accounts {
    fn list_projection(&self, params: &ListParams) -> Result<Option<Projection>, Reply> {
        // Filtering or sorting on a hidden field would leak it one question at a time.
        if let Some(path) = params.paths().into_iter().find(|p| !exposed(p)) {
            return Err(Reply::error(
                400,
                format!("Invalid where/sort: field {path:?} is not exposed"),
            ));
        }
        let wanted: Vec<&str> = match &params.fields {
            Some(f) if !f.include => {
                return Err(invalid_fields(
                    "users take the names of fields to include (_id, profile...)",
                ));
            }
            Some(f) => f
                .paths
                .iter()
                .map(String::as_str)
                .filter(|p| exposed(p))
                .collect(),
            None => Vec::new(),
        };
        let list = if wanted.is_empty() {
            "_id,profile".to_owned()
        } else {
            wanted.join(",")
        };
        Projection::parse_list(&list)
            .map(Some)
            .map_err(invalid_fields)
    }

    fn show(&self, user: Document) -> Document {
        let mut out = Map::new();
        for field in ["_id", "profile"] {
            if let Some(value) = user.get(field) {
                out.insert(field.into(), value.clone());
            }
        }
        out
    }

    fn tagged(&self) -> bool {
        false
    }

    async fn insert(
        &self,
        _state: &CollectionState,
        ctx: &Context,
        body: Document,
    ) -> Result<(String, Option<Stored>), Reply> {
        let accounts = ctx.platform.accounts();
        // An anonymous sign-up is a client creating an account; an authenticated caller
        // passed the endpoint's auth and role checks, which the host set up on purpose.
        if accounts.config().forbid_client_account_creation && ctx.user_id.is_none() {
            return Err(Reply::error(403, "Signups forbidden"));
        }
        let profile = match body.get("profile") {
            None | Some(Value::Null) => None,
            Some(p @ Value::Object(_)) => Some(p.clone()),
            Some(_) => return Err(Reply::error(400, "profile must be an object")),
        };
        let new_user = NewUser {
            username: string_field(&body, "username")?,
            email: string_field(&body, "email")?,
            password: string_field(&body, "password")?.map(Password::Plain),
            profile,
            roles: Vec::new(),
        };
        let id = accounts
            .create_user(new_user)
            .await
            .map_err(platform_error)?;
        // The account as stored holds more than the body (hashed password, timestamps): read
        // it back to show it.
        Ok((id, None))
    }

    async fn update(
        &self,
        state: &CollectionState,
        ctx: &Context,
        target: Target<'_>,
        body: Document,
        how: BodyUse,
    ) -> Result<bool, Reply> {
        let id = target.id;
        let selector = target.selector(state, ctx)?;
        let Some(user) = state
            .collection
            .find_one(&selector)
            .await
            .map_err(platform_error)?
        else {
            return Ok(false);
        };
        let profile = if how == BodyUse::Replace {
            body
        } else {
            let mut profile = match user.get("profile") {
                Some(Value::Object(p)) => p.clone(),
                _ => Map::new(),
            };
            for (k, v) in body {
                set_path(&mut profile, &k, v);
            }
            profile
        };
        ctx.platform
            .accounts()
            .set_profile(id, Value::Object(profile))
            .await
            .map_err(platform_error)?;
        Ok(true)
    }

    async fn remove(
        &self,
        state: &CollectionState,
        ctx: &Context,
        target: Target<'_>,
    ) -> Result<bool, Reply> {
        let id = target.id;
        let selector = target.selector(state, ctx)?;
        if state
            .collection
            .find_one(&selector)
            .await
            .map_err(platform_error)?
            .is_none()
        {
            return Ok(false);
        }
        ctx.platform
            .accounts()
            .remove_user(id)
            .await
            .map_err(platform_error)
    }
}

/// Sets the dotted `path` inside `target`, making objects on the way.
fn set_path(target: &mut Map<String, Value>, path: &str, value: Value) {
    match path.split_once('.') {
        None => {
            target.insert(path.to_owned(), value);
        }
        Some((head, rest)) => {
            let child = target
                .entry(head.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if !child.is_object() {
                *child = Value::Object(Map::new());
            }
            if let Value::Object(map) = child {
                set_path(map, rest, value);
            }
        }
    }
}

/// `check` with the checked body returned, for the handlers.
pub(crate) fn checked(
    mut body: Document,
    how: BodyUse,
    id: Option<&str>,
) -> Result<Document, Reply> {
    check(&mut body, how, id)?;
    Ok(body)
}
