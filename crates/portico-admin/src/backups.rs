//! The backups view: the backups of the server's SQLite database, taking one, downloading one
//! (see [`portico_store::sqlite::BackupSet`]).

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use portico_store::sqlite::BackupSet;
use serde_json::{Value, json};

use crate::api_error::{ApiError, ApiResult};
use crate::state::AdminState;

/// Bytes read from a backup file per chunk of a download.
const CHUNK: usize = 64 * 1024;

fn set(state: &AdminState) -> ApiResult<Arc<BackupSet>> {
    state.backups.clone().ok_or_else(|| {
        ApiError::not_found(
            "Backups are not set up on this server: add a [backups] table to its config \
             (SQLite databases only).",
        )
    })
}

/// `GET api/backups`: `{configured, dir, keep, running, backups: [{name, bytes, modifiedMs}]}`,
/// newest first.
pub(crate) async fn list(State(state): State<AdminState>) -> ApiResult<Json<Value>> {
    let Some(set) = state.backups.clone() else {
        return Ok(Json(json!({ "configured": false, "backups": [] })));
    };
    let listed = {
        let set = Arc::clone(&set);
        tokio::task::spawn_blocking(move || set.list())
            .await
            .map_err(|_| ApiError::internal())??
    };
    let backups: Vec<Value> = listed
        .iter()
        .map(|file| {
            let modified = file
                .modified
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            json!({ "name": file.name, "bytes": file.bytes, "modifiedMs": modified })
        })
        .collect();
    Ok(Json(json!({
        "configured": true,
        "dir": set.dir().display().to_string(),
        "keep": set.keep(),
        "running": set.is_running(),
        "backups": backups,
    })))
}

/// `POST api/backups`: takes a backup now; 201 `{name, bytes, format, elapsedMs}` once it is
/// written and checked, 409 while another runs.
pub(crate) async fn start(State(state): State<AdminState>) -> ApiResult<Response> {
    let set = set(&state)?;
    let taken = tokio::task::spawn_blocking(move || set.take())
        .await
        .map_err(|_| ApiError::internal())?;
    match taken {
        Ok(report) => {
            let name = report
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            tracing::info!(backup = %report.path.display(), bytes = report.bytes, "backup taken from the admin page");
            Ok((
                StatusCode::CREATED,
                Json(json!({
                    "name": name,
                    "bytes": report.bytes,
                    "format": report.format,
                    "elapsedMs": u64::try_from(report.elapsed.as_millis()).unwrap_or(u64::MAX),
                })),
            )
                .into_response())
        }
        Err(portico_store::Error::Unavailable(message)) => {
            Err(ApiError::new(StatusCode::CONFLICT, message))
        }
        Err(err) => {
            // The admins may see why a backup failed (a full disk, a directory they named).
            tracing::error!(error = %err, "backup from the admin page failed");
            Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("The backup failed: {err}"),
            ))
        }
    }
}

/// `GET api/backups/{name}`: the file, as an attachment, read in chunks.
pub(crate) async fn download(
    State(state): State<AdminState>,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    let set = set(&state)?;
    let not_found = || ApiError::not_found("No such backup");
    let path = set.find(&name).ok_or_else(not_found)?;
    let file = tokio::fs::File::open(&path)
        .await
        .map_err(|_| not_found())?;
    let length = file
        .metadata()
        .await
        .map_err(|_| ApiError::internal())?
        .len();
    let chunks = futures::stream::unfold(Some(file), |file| async move {
        use tokio::io::AsyncReadExt as _;
        let mut file = file?;
        let mut buffer = vec![0u8; CHUNK];
        match file.read(&mut buffer).await {
            Ok(0) => None,
            Ok(n) => {
                buffer.truncate(n);
                Some((Ok(bytes::Bytes::from(buffer)), Some(file)))
            }
            Err(e) => Some((Err(e), None)),
        }
    });
    Ok((
        [
            (header::CONTENT_TYPE, "application/vnd.sqlite3".to_owned()),
            (header::CONTENT_LENGTH, length.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        Body::from_stream(chunks),
    )
        .into_response())
}
