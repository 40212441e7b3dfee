//! The files of a document: its file fields listed with previews (thumbnails of images), and
//! files uploaded, downloaded and deleted through the platform's files service as server code,
//! so the steps of a client's upload (temporary key, metadata in the document, final key), the
//! size limit and the accepted types apply alike.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use portico_platform::files::{DownloadOptions, NewFile};
use portico_platform::{FileAccess, FileError, FileSlot, Files};
use serde::Deserialize;
use serde_json::Value;

use crate::admin_error::{AdminError, AdminResult};
use crate::collections::collection;
use crate::state::AdminState;

/// A file error as an admin reply: its status and text; a store failure is logged, not sent.
impl From<FileError> for AdminError {
    fn from(err: FileError) -> Self {
        match err {
            FileError::Platform(e) => AdminError::from(e),
            e if e.status() >= 500 => {
                tracing::error!(error = %e, "admin files call failed");
                AdminError::internal()
            }
            e => AdminError::new(
                StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST),
                e.to_string(),
            ),
        }
    }
}

fn service(state: &AdminState) -> AdminResult<&Files> {
    state
        .platform
        .files()
        .ok_or_else(|| AdminError::not_found("This server keeps no files"))
}

/// The query of an upload.
#[derive(Debug, Deserialize)]
pub(crate) struct UploadParams {
    name: Option<String>,
}

/// `POST api/collections/{name}/documents/{id}/files/{field}?name=`: the raw body is the file
/// (typed by its content; the `Content-Type` is believed only for types without magic bytes);
/// 201 with its metadata.
pub(crate) async fn upload(
    State(state): State<AdminState>,
    Path((name, id, field)): Path<(String, String, String)>,
    Query(params): Query<UploadParams>,
    headers: HeaderMap,
    body: Body,
) -> AdminResult<(StatusCode, Json<Value>)> {
    let files = service(&state)?;
    crate::collections::refuse_internal_writes(&name)?;
    let collection = collection(&state, &name).await?;
    let Some(file_name) = params.name.filter(|n| !n.trim().is_empty()) else {
        return Err(AdminError::bad_request("Name the file: ?name="));
    };
    let max = files.config().max_size;
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if length.is_some_and(|len| len > max) {
        return Err(FileError::TooLarge(max).into());
    }
    let declared = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_owned);
    let meta = files
        .upload(
            FileSlot::new(&collection, &id, &field),
            NewFile::new(file_name, declared),
            &FileAccess::Server,
            body.into_data_stream(),
        )
        .await?;
    tracing::info!(collection = %name, id = %id, field = %field, file = %meta.name, bytes = meta.size, "file uploaded from the admin page");
    Ok((StatusCode::CREATED, Json(meta.to_json())))
}

/// The query of a download.
#[derive(Debug, Deserialize)]
pub(crate) struct DownloadParams {
    thumb: Option<String>,
}

/// `GET api/collections/{name}/documents/{id}/files/{field}/{file}?thumb=WxH`: the file, or a
/// thumbnail of any size (the page asks for its previews), always as an attachment: the page
/// fetches it with its token and shows or saves it from a blob.
pub(crate) async fn download(
    State(state): State<AdminState>,
    Path((name, id, field, file)): Path<(String, String, String, String)>,
    Query(params): Query<DownloadParams>,
) -> AdminResult<Response> {
    let files = service(&state)?;
    let collection = collection(&state, &name).await?;
    let found = files
        .download(
            FileSlot::new(&collection, &id, &field),
            &file,
            &FileAccess::Server,
            DownloadOptions::new(None, params.thumb),
        )
        .await?;
    let content_type = HeaderValue::from_str(&found.mime)
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    Ok((
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_LENGTH, HeaderValue::from(found.length)),
            (
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("attachment"),
            ),
        ],
        Body::from_stream(found.body),
    )
        .into_response())
}

/// `DELETE api/collections/{name}/documents/{id}/files/{field}/{file}`: the file's metadata
/// leaves the document, then its bytes and thumbnails the store; the reply is its metadata.
pub(crate) async fn delete(
    State(state): State<AdminState>,
    Path((name, id, field, file)): Path<(String, String, String, String)>,
) -> AdminResult<Json<Value>> {
    let files = service(&state)?;
    crate::collections::refuse_internal_writes(&name)?;
    let collection = collection(&state, &name).await?;
    let gone = files
        .delete(
            FileSlot::new(&collection, &id, &field),
            &file,
            &FileAccess::Server,
        )
        .await?;
    tracing::info!(collection = %name, id = %id, field = %field, file = %gone.name, "file deleted from the admin page");
    Ok(Json(gone.to_json()))
}
