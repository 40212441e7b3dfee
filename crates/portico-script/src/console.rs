//! `console.*` from scripts: lines in the server log, with the script's file and line.

use rquickjs::{Ctx, Function};

use crate::error::LoadError;

/// `__portico_log(level, message, place)`.
pub(crate) fn function<'js>(ctx: &Ctx<'js>) -> Result<Function<'js>, LoadError> {
    Function::new(
        ctx.clone(),
        move |level: String, message: String, place: String| match level.as_str() {
            "error" => tracing::error!(target: "portico::script", script = %place, "{message}"),
            "warn" => tracing::warn!(target: "portico::script", script = %place, "{message}"),
            "debug" => tracing::debug!(target: "portico::script", script = %place, "{message}"),
            _ => tracing::info!(target: "portico::script", script = %place, "{message}"),
        },
    )
    .map_err(|e| LoadError::Engine(e.to_string()))
}
