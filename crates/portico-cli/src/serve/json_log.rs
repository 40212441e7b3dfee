//! `[log] format = "json"`: one JSON object per line.
//!
//! `{"timestamp":"2026-11-25T14:05:01.123Z","level":"INFO","target":"portico::request",
//! "message":"request","request_id":"...","method":"GET",...}`: the event's own fields as
//! JSON values (numbers and booleans as such, anything else as text), and `spans`, the names of
//! the spans the event happened in (the request's `request` span carries the request id at
//! `debug`). Strings are escaped by serde_json, so a field holding a newline or a quote never
//! breaks a line.

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The JSON line format.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct JsonLines;

/// Collects an event's fields as JSON values.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), Value::from(format!("{value:?}")));
    }
}

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let mut line = Map::new();
        line.insert(
            "timestamp".into(),
            Value::from(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        );
        line.insert("level".into(), Value::from(meta.level().as_str()));
        line.insert("target".into(), Value::from(meta.target()));
        event.record(&mut Fields(&mut line));
        if let Some(scope) = ctx.event_scope() {
            let spans: Vec<Value> = scope
                .from_root()
                .map(|span| Value::from(span.name()))
                .collect();
            if !spans.is_empty() {
                line.insert("spans".into(), Value::Array(spans));
            }
        }
        writeln!(writer, "{}", Value::Object(line))
    }
}
