//! The file routes of a collection with file fields: `:id/files/:field` (POST: upload),
//! `:id/files/:field/:name` (GET: download, DELETE), and the API's `files/token` (POST: a
//! short-lived download token for URLs that carry no header, such as `<img src>`).
//!
//! Uploads and deletes are allowed to whoever may update the document (the collection's
//! patch options and access scope); downloads to whoever may read it (get's options and
//! scope), or to the holder of a download token.

use std::sync::Arc;

use axum::body::Body;
use http::{HeaderValue, StatusCode, header};
use portico_platform::files::{ByteRange, Download, DownloadOptions, NewFile};
use portico_platform::{FileAccess, FileError, FileSlot, Files};
use serde_json::{Value, json};

use super::{CollectionEndpoint, CollectionOptions, CollectionState, scoped};
use crate::endpoint_doc::EndpointDoc;
use crate::route_table::{RouteExtras, compile};
use crate::{Api, Context, Endpoint, Endpoints, Op, Reply, Result, RouteOptions};

/// A file error as a reply: its status, and its text unless it is an internal one.
fn files_of(ctx: &Context) -> std::result::Result<&Files, Reply> {
    ctx.platform
        .files()
        .ok_or_else(|| Reply::error(404, "This server keeps no files"))
}

/// The document `id` as the caller may reach it: within the collection's access scope.
fn access(
    state: &CollectionState,
    ctx: &Context,
    id: &str,
) -> std::result::Result<FileAccess, Reply> {
    Ok(FileAccess::Scoped {
        selector: scoped(state, ctx, Some(json!({"_id": id})))?,
        user_id: ctx.user_id.clone(),
    })
}

fn params(ctx: &Context) -> std::result::Result<(String, String), Reply> {
    match (ctx.url_param("id"), ctx.url_param("field")) {
        (Some(id), Some(field)) => Ok((id.to_owned(), field.to_owned())),
        _ => Err(Reply::error(404, "API endpoint does not exist")),
    }
}

/// POST `:id/files/:field`: a `multipart/form-data` body (every part with a file name is a
/// file) or a raw body named by `?name=`.
async fn upload(state: Arc<CollectionState>, ctx: Context) -> Reply {
    match try_upload(&state, &ctx).await {
        Ok(reply) => reply,
        // A refused upload is answered before its body was read to the end: the connection
        // closes after the reply, and says so, so a client does not send its next request on it.
        Err(reply) => reply.with_header("Connection", "close"),
    }
}

async fn try_upload(state: &CollectionState, ctx: &Context) -> std::result::Result<Reply, Reply> {
    let files = files_of(ctx)?;
    let (id, field) = params(ctx)?;
    let access = access(state, ctx, &id)?;
    let body = ctx
        .take_body_stream()
        .ok_or_else(|| Reply::internal("file upload without a body stream"))?;
    let content_type = ctx.header("content-type").unwrap_or_default().to_owned();
    let collection = &state.collection;
    if let Ok(boundary) = multer::parse_boundary(&content_type) {
        let mut form = multer::Multipart::new(body.into_data_stream(), boundary);
        let mut stored = Vec::new();
        loop {
            let part = match form.next_field().await {
                Ok(Some(part)) => part,
                Ok(None) => break,
                Err(e) => return Err(Reply::error(400, format!("Malformed multipart body: {e}"))),
            };
            let Some(name) = part.file_name().map(str::to_owned) else {
                continue;
            };
            let declared = part.content_type().map(ToString::to_string);
            let meta = files
                .upload(
                    FileSlot::new(collection, &id, &field),
                    NewFile::new(name, declared),
                    &access,
                    part,
                )
                .await
                .map_err(Reply::from)?;
            stored.push(meta.to_json());
        }
        return match stored.len() {
            0 => Err(Reply::error(
                400,
                "The form holds no file (a part with a filename)",
            )),
            1 => Ok(Reply::success(stored.remove(0)).with_status(201)),
            _ => Ok(Reply::success(Value::Array(stored)).with_status(201)),
        };
    }
    let Some(name) = ctx.query_param("name").filter(|n| !n.is_empty()) else {
        return Err(Reply::error(
            400,
            "Name the file: send multipart/form-data, or the raw bytes with ?name=",
        ));
    };
    let max = files.config().max_size;
    let declared_length = ctx
        .header("content-length")
        .and_then(|l| l.trim().parse::<u64>().ok());
    if declared_length.is_some_and(|len| len > max) {
        return Err(Reply::from(FileError::TooLarge(max)));
    }
    let declared = (!content_type.is_empty()).then_some(content_type);
    let meta = files
        .upload(
            FileSlot::new(collection, &id, &field),
            NewFile::new(name, declared),
            &access,
            body.into_data_stream(),
        )
        .await
        .map_err(Reply::from)?;
    Ok(Reply::success(meta.to_json()).with_status(201))
}

/// GET `:id/files/:field/:name` (`?thumb=WxH`, `Range`).
async fn download(state: Arc<CollectionState>, ctx: Context) -> Reply {
    match try_download(&state, &ctx).await {
        Ok(reply) | Err(reply) => reply,
    }
}

async fn try_download(state: &CollectionState, ctx: &Context) -> std::result::Result<Reply, Reply> {
    let files = files_of(ctx)?;
    let (id, field) = params(ctx)?;
    let name = ctx.url_param("name").unwrap_or_default().to_owned();
    let access = access(state, ctx, &id)?;
    let range = ctx.header("range").and_then(ByteRange::parse);
    let thumb = ctx.query_param("thumb").map(str::to_owned);
    let found = files
        .download(
            FileSlot::new(&state.collection, &id, &field),
            &name,
            &access,
            DownloadOptions::new(range, thumb),
        )
        .await
        .map_err(Reply::from)?;
    let tag = format!("\"{}\"", found.etag);
    let unchanged = ctx
        .header("if-none-match")
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag || t.trim() == "*"));
    Ok(Reply::stream(response(found, &tag, unchanged)))
}

/// The reply of a download: 200, 206 for a range, 304 when the client's copy is current.
fn response(found: Download, tag: &str, unchanged: bool) -> axum::response::Response {
    let header_value = |s: &str| HeaderValue::from_str(s).unwrap_or(HeaderValue::from_static(""));
    let (status, body) = if unchanged {
        (StatusCode::NOT_MODIFIED, Body::empty())
    } else if found.range.is_some() {
        (StatusCode::PARTIAL_CONTENT, Body::from_stream(found.body))
    } else {
        (StatusCode::OK, Body::from_stream(found.body))
    };
    let mut response = axum::response::Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::ETAG, header_value(tag));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    );
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; sandbox"),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        header_value(&portico_platform::files::disposition(
            &found.meta.name,
            &found.mime,
        )),
    );
    headers.insert(header::CONTENT_TYPE, header_value(&found.mime));
    if unchanged {
        return response;
    }
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(found.length));
    if let Some((range, size)) = &found.range {
        headers.insert(
            header::CONTENT_RANGE,
            header_value(&format!("bytes {}-{}/{size}", range.start, range.end - 1)),
        );
    }
    response
}

/// DELETE `:id/files/:field/:name`.
async fn delete(state: Arc<CollectionState>, ctx: Context) -> Reply {
    let run = async {
        let files = files_of(&ctx)?;
        let (id, field) = params(&ctx)?;
        let name = ctx.url_param("name").unwrap_or_default().to_owned();
        let access = access(&state, &ctx, &id)?;
        files
            .delete(
                FileSlot::new(&state.collection, &id, &field),
                &name,
                &access,
            )
            .await
            .map_err(Reply::from)?;
        Ok::<Reply, Reply>(Reply::success(json!({"message": "File removed"})))
    };
    match run.await {
        Ok(reply) | Err(reply) => reply,
    }
}

/// POST `files/token`: a download token for the logged-in caller.
async fn token(ctx: Context) -> Reply {
    let run = async {
        let files = files_of(&ctx)?;
        let user_id = ctx.user_id.clone().ok_or_else(crate::auth::unauthorized)?;
        let (token, expires) = files
            .issue_token(&ctx.platform, &user_id)
            .await
            .map_err(Reply::from)?;
        Ok::<Reply, Reply>(Reply::success(json!({"token": token, "expires": expires})))
    };
    match run.await {
        Ok(reply) | Err(reply) => reply,
    }
}

fn meta_schema() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string"}, "size": {"type": "integer"}, "type": {"type": "string"},
        "sha256": {"type": "string"}, "createdAt": {"type": "string", "format": "date-time"}
    }})
}

impl Api {
    /// The file routes of a generated collection, when the platform's files service declares
    /// file fields for it (never for `users`): an upload or a delete takes the options of the
    /// collection's patch (an update of the document), a download those of its get.
    pub(crate) fn add_files_of(
        &mut self,
        state: &Arc<CollectionState>,
        item_path: &str,
        route_options: &RouteOptions,
        options: &CollectionOptions,
    ) -> Result<()> {
        let has_files = state.collection.name() != "users"
            && self
                .platform
                .files()
                .is_some_and(|files| !files.fields(state.collection.name()).is_empty());
        if !has_files {
            return Ok(());
        }
        let configured = |op: Op| -> Option<Endpoint> {
            if options.excluded.contains(&op) {
                return None;
            }
            match options.endpoints.get(&op) {
                Some(CollectionEndpoint::Disabled) => None,
                Some(CollectionEndpoint::Configured(e)) => Some(Endpoint {
                    action: None,
                    ..e.clone()
                }),
                None => Some(Endpoint::options()),
            }
        };
        self.add_file_routes(
            state,
            item_path,
            route_options,
            configured(Op::Patch),
            configured(Op::Get),
        )
    }

    /// Adds the file routes of a generated collection with file fields: upload and delete
    /// with `change` (the patch endpoint's options; none: no upload or delete), download
    /// with `read` (get's), and the API's `files/token` route once.
    fn add_file_routes(
        &mut self,
        state: &Arc<CollectionState>,
        item_path: &str,
        route_options: &RouteOptions,
        change: Option<Endpoint>,
        read: Option<Endpoint>,
    ) -> Result<()> {
        let name = state.collection.name().to_owned();
        let rules: Vec<String> = state.scope.iter().map(|s| s.rule().to_owned()).collect();
        if let Some(change) = change.clone() {
            let target = state.clone();
            let post = change.action(move |ctx: Context| upload(target.clone(), ctx));
            let doc = EndpointDoc::new(format!(
                "attach a file to a document of {name} (multipart/form-data, or the raw bytes with ?name=)"
            ))
            .query(&["name"])
            .request(json!({"type": "string", "format": "binary"}))
            .reply(meta_schema())
            .rules(rules.clone());
            self.insert_route_with(
                compile(&format!("{item_path}/files/:field").into())?,
                route_options.clone(),
                Endpoints::new().post(post),
                RouteExtras {
                    docs: vec![("POST", doc)],
                    streamed: true,
                    ..RouteExtras::default()
                },
            )?;
        }
        let mut endpoints = Endpoints::new();
        let mut docs = Vec::new();
        if let Some(read) = read {
            let target = state.clone();
            endpoints =
                endpoints.get(read.action(move |ctx: Context| download(target.clone(), ctx)));
            docs.push((
                "GET",
                EndpointDoc::new(format!(
                    "download a file of a document of {name} (Range, ?thumb=WxH, ?token=)"
                ))
                .query(&["thumb", "token"])
                .rules(rules.clone()),
            ));
        }
        if let Some(change) = change {
            let target = state.clone();
            endpoints =
                endpoints.delete(change.action(move |ctx: Context| delete(target.clone(), ctx)));
            docs.push((
                "DELETE",
                EndpointDoc::new(format!("remove a file of a document of {name}"))
                    .reply(json!({"type": "object", "properties": {"message": {"type": "string"}}}))
                    .rules(rules),
            ));
        }
        if !endpoints.is_empty() {
            self.insert_route_with(
                compile(&format!("{item_path}/files/:field/:name").into())?,
                route_options.clone(),
                endpoints,
                RouteExtras {
                    docs,
                    file_download: true,
                    ..RouteExtras::default()
                },
            )?;
        }
        let token_path = compile(&"files/token".into())?;
        if !self.has_route(&token_path) {
            let doc = EndpointDoc::new(
                "a download token for the caller, accepted for 2 minutes as ?token= on file download URLs",
            )
            .reply(json!({"type": "object", "properties": {
                "token": {"type": "string"}, "expires": {"type": "integer"}
            }}));
            self.insert_route_with(
                token_path,
                RouteOptions::default(),
                Endpoints::new().post(Endpoint::new(token).auth_required(true)),
                RouteExtras {
                    docs: vec![("POST", doc)],
                    ..RouteExtras::default()
                },
            )?;
        }
        Ok(())
    }
}
