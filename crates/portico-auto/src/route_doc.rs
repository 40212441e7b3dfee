//! The auto API's routes as data ([`RouteDoc`]s), and the `api-routes` listing made from them.
//!
//! Methods and publications run with or without a user, so they are [`Access::OptionalUser`];
//! collection writes too, with the collection's allow/deny rules named as their rule. The
//! listing, `portico routes` and generated API documents all read this one description.

use http::Method;
use portico_edge::{Access, Door, RouteDoc};
use serde_json::{Map, Value, json};

use crate::route::{API_ROUTES, Route, RouteTable, Target};

/// JSON Schema of the default arguments rule's body: an array of arguments or one object.
fn args_schema() -> Value {
    json!({"oneOf": [{"type": "array"}, {"type": "object"}]})
}

/// The query parameters a publication's url reads: `expand` and `search` (with `skip` and
/// `limit`), and the aggregates (`group`, `count`, `sum`, `avg`, `min`, `max`, with `where`,
/// `sort`, `skip` and `limit`).
const PUBLICATION_QUERY: [&str; 12] = [
    "expand", "search", "group", "count", "sum", "avg", "min", "max", "where", "sort", "skip",
    "limit",
];

/// JSON Schema of a publication's reply: documents by collection, or, when the url asks for
/// aggregates, the groups (each with its group value as `_id`, `null` without `group`).
fn publication_schema() -> Value {
    json!({"oneOf": [
        {
            "type": "object",
            "additionalProperties": {
                "type": "array",
                "items": {"type": "object", "required": ["_id"], "properties": {"_id": {"type": "string"}}}
            }
        },
        {"type": "array", "items": {"type": "object", "required": ["_id"]}}
    ]})
}

/// JSON Schema of the `api-routes` listing.
fn listing_schema() -> Value {
    json!({
        "type": "object",
        "required": [API_ROUTES],
        "properties": {API_ROUTES: {"type": "array", "items": {
            "type": "object",
            "required": ["_id", "methods", "path"],
            "properties": {
                "_id": {"type": "string"},
                "methods": {"type": "array", "items": {"type": "string"}},
                "path": {"type": "string"}
            }
        }}}
    })
}

/// JSON Schemas of the login add-on's bodies (request, reply).
fn login_schemas() -> (Value, Value) {
    let request = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string"},
            "email": {"type": "string"},
            "user": {"oneOf": [{"type": "string"}, {"type": "object"}]},
            "password": {"oneOf": [
                {"type": "string"},
                {"type": "object", "required": ["digest", "algorithm"]}
            ]},
            "hashed": {"type": "boolean"},
            "profile": {"type": "object"}
        }
    });
    let reply = json!({
        "type": "object",
        "required": ["id", "token", "tokenExpires"],
        "properties": {
            "id": {"type": "string"},
            "token": {"type": "string"},
            "tokenExpires": {"type": "string", "format": "date-time"}
        }
    });
    (request, reply)
}

/// What the descriptions read from outside the table: the platform's rules, and whether the
/// login add-on takes sign-ups.
pub(crate) struct Context<'a> {
    pub(crate) platform: &'a portico_platform::Platform,
    pub(crate) register_open: bool,
}

/// The description of one route.
fn describe(route: &Route, context: Option<&Context<'_>>) -> RouteDoc {
    let doc = |access| RouteDoc::new(Door::Auto, route.method.clone(), route.path(), access);
    let rules = |op: &str, name: &str| match context.and_then(|c| c.platform.get_collection(name)) {
        Some(collection) => format!("{op} rules: {}", collection.rule_summary(op)),
        None => format!("{op}: allow/deny rules of collection {name}"),
    };
    match &route.target {
        Target::Method(name) => {
            let doc = doc(Access::OptionalUser).summary(format!("method {name}"));
            match route.extractor {
                None => doc.request_body(args_schema()),
                Some(_) => doc,
            }
        }
        Target::Publication(name) => {
            let doc = doc(Access::OptionalUser)
                .summary(format!("publication {name}"))
                .query(PUBLICATION_QUERY)
                .reply_body(publication_schema());
            match route.extractor {
                None => doc.request_body(args_schema()),
                Some(_) => doc,
            }
        }
        Target::ApiRoutes => doc(Access::Public)
            .summary("route listing")
            .reply_body(listing_schema()),
        Target::Insert(name) => doc(Access::OptionalUser)
            .summary(format!("insert into {name}"))
            .rule(rules("insert", name))
            .request_body(json!({"type": "object"}))
            .reply_body(json!({"type": "string", "description": "the new _id"})),
        Target::Update(name) => doc(Access::OptionalUser)
            .summary(format!("update in {name}"))
            .rule(rules("update", name))
            .request_body(json!({"type": "object", "description": "fields to $set"}))
            .reply_body(json!({"type": "integer", "minimum": 0})),
        Target::Remove(name) => doc(Access::OptionalUser)
            .summary(format!("remove from {name}"))
            .rule(rules("remove", name))
            .reply_body(json!({"type": "integer", "minimum": 0})),
        Target::Preflight => doc(Access::Public).summary("cross-origin preflight"),
        Target::Listed(what) => {
            let (request, reply) = login_schemas();
            let doc = doc(Access::Public)
                .summary(*what)
                .request_body(request)
                .reply_body(reply);
            if route.path().ends_with("/register") && context.is_some_and(|c| !c.register_open) {
                doc.rule("closed (403): sign-ups are turned off")
            } else {
                doc
            }
        }
    }
}

impl RouteTable {
    /// Every route as a [`RouteDoc`]; with a context, the rules are read from the platform.
    pub(crate) fn docs(&self, context: Option<&Context<'_>>) -> Vec<RouteDoc> {
        self.routes().iter().map(|r| describe(r, context)).collect()
    }
}

/// The `api-routes` listing in the 1.x shape, from route descriptions: one entry per path, in
/// the order paths first appear, with each method at that path once.
pub(crate) fn listing(docs: &[RouteDoc]) -> Value {
    let mut entries: Vec<(&str, Vec<&Method>)> = Vec::new();
    for doc in docs {
        match entries.iter_mut().find(|(p, _)| *p == doc.path) {
            Some((_, methods)) if methods.contains(&&doc.method) => {}
            Some((_, methods)) => methods.push(&doc.method),
            None => entries.push((&doc.path, vec![&doc.method])),
        }
    }
    let list = entries
        .into_iter()
        .map(|(path, methods)| {
            let methods: Vec<String> = methods
                .iter()
                .map(|m| m.as_str().to_ascii_lowercase())
                .collect();
            json!({"_id": path, "methods": methods, "path": path})
        })
        .collect();
    let mut body = Map::new();
    body.insert(API_ROUTES.into(), Value::Array(list));
    Value::Object(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::tests::table;

    #[test]
    fn listing_groups_by_path_and_lists_each_method_once() {
        let t = table(&[
            (Method::POST, "methods/add", Target::Method("add".into())),
            (Method::PATCH, "todos/:_id", Target::Update("todos".into())),
            (Method::DELETE, "todos/:_id", Target::Remove("todos".into())),
        ]);
        assert_eq!(
            listing(&t.docs(None)),
            json!({"api-routes": [
                {"_id": "/methods/add", "methods": ["options", "post"], "path": "/methods/add"},
                {"_id": "/todos/:_id", "methods": ["options", "patch", "delete"],
                 "path": "/todos/:_id"}
            ]})
        );
    }

    #[test]
    fn docs_say_who_may_call_and_what_goes_in() {
        let t = table(&[
            (Method::POST, "methods/add", Target::Method("add".into())),
            (Method::DELETE, "todos/:_id", Target::Remove("todos".into())),
        ]);
        let docs = t.docs(None);
        let add = docs.iter().find(|d| d.method == Method::POST).unwrap();
        assert_eq!(add.access, Access::OptionalUser);
        assert_eq!(add.request_body, Some(args_schema()));
        let remove = docs.iter().find(|d| d.method == Method::DELETE).unwrap();
        assert_eq!(remove.path, "/todos/:_id");
        assert_eq!(
            remove.rules,
            vec!["remove: allow/deny rules of collection todos"]
        );
        let preflight = docs.iter().find(|d| d.method == Method::OPTIONS).unwrap();
        assert_eq!(preflight.access, Access::Public);
    }
}
