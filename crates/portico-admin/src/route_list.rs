//! The API view: every route the front doors serve, from their own descriptions.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::state::AdminState;

/// `GET api/routes`: `{routes: [RouteDoc], openapi}`.
pub(crate) async fn list(State(state): State<AdminState>) -> Json<Value> {
    let routes = (state.routes)();
    Json(json!({ "routes": routes, "openapi": state.openapi }))
}
