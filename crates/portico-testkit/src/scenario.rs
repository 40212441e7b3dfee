//! Request-scenario tables: requests run in order against a server, each with the status and
//! the JSON it must (and must not) answer.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::http::{Http, Reply};

/// One request of a table and what its reply must be.
///
/// ```no_run
/// # async fn example(server: &portico_testkit::Http) {
/// use portico_testkit::{Scenario, run_scenarios};
/// use serde_json::json;
///
/// run_scenarios(server, &[
///     Scenario::new("a guest writes a note", "POST", "/api/notes")
///         .body(json!({"text": "hi"}))
///         .status(201)
///         .has(json!({"status": "success"}))
///         .keep("note", "/data/_id"),
///     Scenario::new("and reads it back", "GET", "/api/notes/{note}")
///         .status(200)
///         .has(json!({"text": "hi"})),
/// ]).await;
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Scenario {
    name: String,
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Option<Value>,
    status: u16,
    has: Vec<Value>,
    lacks: Vec<Value>,
    keep: Vec<(String, String)>,
}

impl Scenario {
    /// `METHOD path`, expected to answer 200 unless [`Scenario::status`] says otherwise.
    ///
    /// `{name}` in the path, a header value or a string of the body is replaced by what an
    /// earlier scenario of the table kept as `name` ([`Scenario::keep`]).
    pub fn new(name: &str, method: &str, path: &str) -> Scenario {
        Scenario {
            name: name.to_owned(),
            method: method.to_owned(),
            path: path.to_owned(),
            headers: Vec::new(),
            body: None,
            status: 200,
            has: Vec::new(),
            lacks: Vec::new(),
            keep: Vec::new(),
        }
    }

    /// Sends the header `name: value`.
    pub fn header(mut self, name: &str, value: &str) -> Scenario {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sends `X-Auth-Token: token` (the routes door's token header).
    pub fn token(self, token: &str) -> Scenario {
        self.header("X-Auth-Token", token)
    }

    /// Sends `Authorization: Bearer token`.
    pub fn bearer(self, token: &str) -> Scenario {
        self.header("Authorization", &format!("Bearer {token}"))
    }

    /// Sends `body` as JSON.
    pub fn body(mut self, body: Value) -> Scenario {
        self.body = Some(body);
        self
    }

    /// The status the reply must have.
    pub fn status(mut self, status: u16) -> Scenario {
        self.status = status;
        self
    }

    /// JSON that must appear in the reply's body (see [`contains`]).
    pub fn has(mut self, fragment: Value) -> Scenario {
        self.has.push(fragment);
        self
    }

    /// JSON that must not appear in the reply's body (see [`contains`]).
    pub fn lacks(mut self, fragment: Value) -> Scenario {
        self.lacks.push(fragment);
        self
    }

    /// Keeps the string (or number) at `pointer` (a JSON pointer, `/data/_id`) of the reply's
    /// body as `name`, for `{name}` in the scenarios after this one.
    pub fn keep(mut self, name: &str, pointer: &str) -> Scenario {
        self.keep.push((name.to_owned(), pointer.to_owned()));
        self
    }

    /// Sends this scenario's request (its `{name}`s filled from `kept`); a failure names it.
    async fn run(&self, server: &Http, kept: &mut BTreeMap<String, String>) -> Reply {
        let path = fill(&self.path, kept);
        let headers: Vec<(String, String)> = self
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), fill(value, kept)))
            .collect();
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let body = self.body.as_ref().map(|body| fill_json(body, kept));
        let reply = server.call(&self.method, &path, body, &headers).await;
        let what = format!("scenario {:?} ({} {path})", self.name, self.method);
        assert_eq!(
            reply.status, self.status,
            "{what}: status {}, expected {}; body: {}",
            reply.status, self.status, reply.raw
        );
        for fragment in &self.has {
            assert!(
                contains(&reply.body, fragment),
                "{what}: the body lacks {fragment}; body: {}",
                reply.raw
            );
        }
        for fragment in &self.lacks {
            assert!(
                !contains(&reply.body, fragment),
                "{what}: the body has {fragment}; body: {}",
                reply.raw
            );
        }
        for (name, pointer) in &self.keep {
            let value = match reply.body.pointer(pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                other => panic!(
                    "{what}: nothing to keep as {name} at {pointer} ({other:?}); body: {}",
                    reply.raw
                ),
            };
            kept.insert(name.clone(), value);
        }
        reply
    }
}

/// Runs `scenarios` in order against `server`, panicking at the first that fails (naming it);
/// the replies, in order.
pub async fn run_scenarios(server: &Http, scenarios: &[Scenario]) -> Vec<Reply> {
    let mut kept = BTreeMap::new();
    let mut replies = Vec::with_capacity(scenarios.len());
    for scenario in scenarios {
        replies.push(scenario.run(server, &mut kept).await);
    }
    replies
}

/// Whether `fragment` appears in `body`: it matches `body` itself or any value nested in it.
/// An object matches an object that has each of its keys with a matching value (other keys
/// may be there too); an array matches an array holding a match of each of its items; any
/// other value matches an equal value.
pub fn contains(body: &Value, fragment: &Value) -> bool {
    if matches(body, fragment) {
        return true;
    }
    match body {
        Value::Array(items) => items.iter().any(|item| contains(item, fragment)),
        Value::Object(map) => map.values().any(|value| contains(value, fragment)),
        _ => false,
    }
}

/// Whether `actual` matches `pattern` (see [`contains`]).
fn matches(actual: &Value, pattern: &Value) -> bool {
    match (actual, pattern) {
        (Value::Object(actual), Value::Object(pattern)) => pattern
            .iter()
            .all(|(key, want)| actual.get(key).is_some_and(|got| matches(got, want))),
        (Value::Array(actual), Value::Array(pattern)) => pattern
            .iter()
            .all(|want| actual.iter().any(|got| matches(got, want))),
        (Value::Number(a), Value::Number(b)) => a == b || a.as_f64() == b.as_f64(),
        _ => actual == pattern,
    }
}

/// `text` with each `{name}` of `kept` replaced by its value.
fn fill(text: &str, kept: &BTreeMap<String, String>) -> String {
    let mut text = text.to_owned();
    for (name, value) in kept {
        text = text.replace(&format!("{{{name}}}"), value);
    }
    text
}

/// `value` with [`fill`] applied to each of its strings.
fn fill_json(value: &Value, kept: &BTreeMap<String, String>) -> Value {
    match value {
        Value::String(s) => Value::String(fill(s, kept)),
        Value::Array(items) => Value::Array(items.iter().map(|v| fill_json(v, kept)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), fill_json(v, kept)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{contains, fill_json};

    #[test]
    fn fragments_match_nested_objects_arrays_and_values() {
        let body = json!({"status": "success", "data": [{"_id": "a", "text": "hi", "n": 1}]});
        assert!(contains(&body, &json!({"status": "success"})));
        assert!(contains(&body, &json!({"text": "hi"})));
        assert!(contains(&body, &json!({"data": [{"_id": "a"}]})));
        assert!(contains(&body, &json!("hi")));
        assert!(contains(&body, &json!({"n": 1.0})));
        assert!(!contains(&body, &json!({"text": "bye"})));
        assert!(!contains(&body, &json!({"data": [{"_id": "b"}]})));
        assert!(!contains(&body, &json!({"password": "x"})));
    }

    #[test]
    fn kept_values_fill_strings_of_a_body() {
        let kept = [("id".to_owned(), "x1".to_owned())].into_iter().collect();
        let body = fill_json(&json!({"ref": "{id}", "list": ["a/{id}"], "n": 2}), &kept);
        assert_eq!(body, json!({"ref": "x1", "list": ["a/x1"], "n": 2}));
    }
}
