//! [`EndpointDoc`]: what one endpoint of a route does beyond its access (summary, rules, query
//! parameters, body schemas), set by the routes the API builds itself and read by
//! `Api::describe`.

use serde_json::Value;

/// What one endpoint of a route does, beyond its access: set by the generated routes.
#[derive(Debug, Clone, Default)]
pub(crate) struct EndpointDoc {
    pub(crate) summary: String,
    pub(crate) rules: Vec<String>,
    pub(crate) query: Vec<String>,
    pub(crate) request_body: Option<Value>,
    pub(crate) reply_body: Option<Value>,
}

impl EndpointDoc {
    pub(crate) fn new(summary: impl Into<String>) -> Self {
        EndpointDoc {
            summary: summary.into(),
            ..EndpointDoc::default()
        }
    }

    pub(crate) fn rules(mut self, rules: Vec<String>) -> Self {
        self.rules = rules;
        self
    }

    pub(crate) fn query(mut self, names: &[&str]) -> Self {
        self.query = names.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    pub(crate) fn request(mut self, schema: Value) -> Self {
        self.request_body = Some(schema);
        self
    }

    pub(crate) fn reply(mut self, schema: Value) -> Self {
        self.reply_body = Some(schema);
        self
    }
}
