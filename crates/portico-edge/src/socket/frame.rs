//! The frames of the socket: what a client sends ([`ClientFrame`]) and the server's replies.

use serde::Deserialize;
use serde_json::{Value, json};

/// One frame from the client: `{"type": ..., "ref": ..., ...}`; the fields a type does not use
/// are ignored.
#[derive(Debug, Deserialize)]
pub(super) struct ClientFrame {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(rename = "ref", default)]
    pub(super) reference: Option<Value>,
    #[serde(default)]
    pub(super) channel: Option<String>,
    #[serde(default)]
    pub(super) event: Option<String>,
    #[serde(default)]
    pub(super) payload: Option<Value>,
    #[serde(default)]
    pub(super) meta: Option<Value>,
    #[serde(default)]
    pub(super) token: Option<String>,
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) publication: Option<String>,
    #[serde(default)]
    pub(super) args: Option<Vec<Value>>,
    #[serde(default)]
    pub(super) list: Option<String>,
}

/// The `ref` echoed in a reply: a string of up to 64 characters or a number; anything else
/// is echoed as null (a client cannot make the server echo a large value).
pub(super) fn echo_ref(reference: Option<&Value>) -> Value {
    match reference {
        Some(Value::String(s)) if s.len() <= 64 => Value::String(s.clone()),
        Some(n @ Value::Number(_)) => n.clone(),
        _ => Value::Null,
    }
}

/// `{"type": "ok", "ref": ...}` with `extra`'s fields.
pub(super) fn ok(reference: &Value, extra: Value) -> String {
    let mut reply = json!({"type": "ok", "ref": reference});
    if let (Some(reply), Value::Object(extra)) = (reply.as_object_mut(), extra) {
        reply.extend(extra);
    }
    reply.to_string()
}

/// `{"type": "error", "ref": ..., "code": ..., "reason": ...}`.
pub(super) fn error(reference: &Value, code: &str, reason: &str) -> String {
    json!({"type": "error", "ref": reference, "code": code, "reason": reason}).to_string()
}

/// The `error` of a refused subscription: with `status`, the HTTP status the door or the
/// publication gave the refusal.
pub(super) fn refusal(reference: &Value, code: &str, reason: &str, status: Option<u16>) -> String {
    let mut frame = json!({"type": "error", "ref": reference, "code": code, "reason": reason});
    if let Some(status) = status {
        frame["status"] = json!(status);
    }
    frame.to_string()
}

/// A live event of subscription `sub` as a frame: `{"type": <event>, "sub": <id>, ...its
/// data}`.
pub(super) fn live_event(sub: &str, name: &str, data: &str) -> String {
    let head = json!({"type": name, "sub": sub}).to_string();
    let body = data.trim();
    match body.strip_prefix('{').map(str::trim_start) {
        Some(rest) if rest.starts_with('}') => head,
        Some(rest) => format!("{},{rest}", &head[..head.len() - 1]),
        None => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_events_carry_their_subscription() {
        assert_eq!(
            live_event("s1", "added", r#"{"collection":"c","id":"a"}"#),
            r#"{"type":"added","sub":"s1","collection":"c","id":"a"}"#
        );
        assert_eq!(
            live_event("s1", "ready", "{}"),
            r#"{"type":"ready","sub":"s1"}"#
        );
        let parsed: Value = serde_json::from_str(&live_event("s\"1", "removed", r#"{"id":"x"}"#))
            .unwrap_or_default();
        assert_eq!(parsed["sub"], "s\"1");
    }

    #[test]
    fn refs_are_echoed_only_when_small() {
        assert_eq!(echo_ref(Some(&json!("7"))), json!("7"));
        assert_eq!(echo_ref(Some(&json!(7))), json!(7));
        assert_eq!(echo_ref(Some(&json!("x".repeat(65)))), Value::Null);
        assert_eq!(echo_ref(Some(&json!({"a": 1}))), Value::Null);
        assert_eq!(echo_ref(None), Value::Null);
    }
}
