//! Timestamps: ISO-8601 UTC strings with milliseconds, which sort correctly as strings.

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use serde_json::Value;

/// The current time as `2026-11-22T03:44:59.123Z`.
pub fn now_iso() -> String {
    to_iso(Utc::now())
}

/// The current time in milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// `d` in whole milliseconds (the largest `i64` past it).
pub(crate) fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// `time` as `2026-11-22T03:44:59.123Z`.
pub(crate) fn to_iso(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Milliseconds since the epoch as a time; `None` out of range.
pub(crate) fn from_millis(ms: i64) -> Option<DateTime<Utc>> {
    Utc.timestamp_millis_opt(ms).single()
}

/// A stored date: an ISO-8601 string, milliseconds since the epoch, or an unconverted
/// `{"$date": ...}` value. `None` when it is none of these.
pub(crate) fn parse_date(value: &Value) -> Option<DateTime<Utc>> {
    match value {
        Value::String(s) => DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|t| t.with_timezone(&Utc)),
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .and_then(from_millis),
        Value::Object(o) => match o.get("$date") {
            Some(Value::Object(inner)) => inner
                .get("$numberLong")
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<i64>().ok())
                .and_then(from_millis),
            Some(inner) => parse_date(inner),
            None => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn iso_strings_have_milliseconds_and_z() {
        let t = from_millis(1_700_000_000_123).map(to_iso);
        assert_eq!(t.as_deref(), Some("2023-11-14T22:13:20.123Z"));
        let now = now_iso();
        assert_eq!(now.len(), 24, "{now}");
        assert!(now.ends_with('Z'));
    }

    #[test]
    fn dates_parse_from_every_stored_form() {
        let expected = from_millis(1_700_000_000_123);
        assert!(expected.is_some());
        for v in [
            json!("2023-11-14T22:13:20.123Z"),
            json!("2023-11-14T23:13:20.123+01:00"),
            json!(1_700_000_000_123i64),
            json!({"$date": 1_700_000_000_123i64}),
            json!({"$date": "2023-11-14T22:13:20.123Z"}),
            json!({"$date": {"$numberLong": "1700000000123"}}),
        ] {
            assert_eq!(parse_date(&v), expected, "{v}");
        }
        assert_eq!(parse_date(&json!("yesterday")), None);
        assert_eq!(parse_date(&json!(null)), None);
    }
}
