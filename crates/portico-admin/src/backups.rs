//! The backups view: the backups of the server's SQLite database, in a directory or an
//! S3-compatible bucket, taking one, downloading one (see [`portico_platform::backups`]).

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use portico_platform::backups::Backups;
use serde_json::{Value, json};

use crate::admin_error::{AdminError, AdminResult};
use crate::state::AdminState;

fn set(state: &AdminState) -> AdminResult<Arc<Backups>> {
    state.backups.clone().ok_or_else(|| {
        AdminError::not_found(
            "Backups are not set up on this server: add a [backups] table to its config \
             (SQLite databases only).",
        )
    })
}

/// `GET api/backups`: `{configured, dir, keep, running, backups: [{name, bytes, modifiedMs}]}`,
/// newest first (`dir`: the directory, or the bucket's `s3://` URL).
pub(crate) async fn list(State(state): State<AdminState>) -> AdminResult<Json<Value>> {
    let Some(set) = state.backups.clone() else {
        return Ok(Json(json!({ "configured": false, "backups": [] })));
    };
    let listed = set.list().await?;
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
        "dir": set.location(),
        "keep": set.keep(),
        "running": set.is_running(),
        "backups": backups,
    })))
}

/// `POST api/backups`: takes a backup now; 201 `{name, bytes, format, elapsedMs}` once it is
/// written and checked, 409 while another runs.
pub(crate) async fn start(State(state): State<AdminState>) -> AdminResult<Response> {
    let set = set(&state)?;
    match set.take().await {
        Ok(report) => {
            let name = report.name;
            tracing::info!(backup = %report.location, bytes = report.bytes, "backup taken from the admin page");
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
            Err(AdminError::new(StatusCode::CONFLICT, message))
        }
        Err(err) => {
            // The admins may see why a backup failed (a full disk, a directory they named).
            tracing::error!(error = %err, "backup from the admin page failed");
            Err(AdminError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("The backup failed: {err}"),
            ))
        }
    }
}

/// `GET api/backups/{name}`: the backup, as an attachment, streamed from its file or bucket.
pub(crate) async fn download(
    State(state): State<AdminState>,
    Path(name): Path<String>,
) -> AdminResult<Response> {
    let set = set(&state)?;
    let download = set
        .download(&name)
        .await?
        .ok_or_else(|| AdminError::not_found("No such backup"))?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/vnd.sqlite3".to_owned()),
            (header::CONTENT_LENGTH, download.bytes.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        Body::from_stream(download.stream),
    )
        .into_response())
}
