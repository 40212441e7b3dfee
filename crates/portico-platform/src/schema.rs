//! Optional JSON Schema validation of a collection's documents.

use portico_store::Document;
use serde_json::Value;

use crate::{Error, Result};

/// A compiled JSON Schema.
///
/// Documents are validated without their `_id`: the store manages ids, so a schema describes
/// only the fields a program or client writes (and `additionalProperties: false` works as
/// expected).
pub(crate) struct Schema {
    validator: jsonschema::Validator,
}

impl Schema {
    /// Compiles `schema`.
    pub(crate) fn compile(schema: &Value) -> Result<Schema> {
        let validator = jsonschema::validator_for(schema)
            .map_err(|e| Error::InvalidArgument(format!("invalid JSON Schema: {e}")))?;
        Ok(Schema { validator })
    }

    /// Checks `doc`; [`Error::Validation`] lists every failure as `<path>: <message>`.
    pub(crate) fn validate(&self, doc: &Document) -> Result<()> {
        let mut body = doc.clone();
        body.shift_remove("_id");
        let instance = Value::Object(body);
        let failures: Vec<String> = self
            .validator
            .iter_errors(&instance)
            .map(|e| {
                let path = e.instance_path().to_string();
                let path = if path.is_empty() {
                    "/".to_string()
                } else {
                    path
                };
                format!("{path}: {e}")
            })
            .collect();
        if failures.is_empty() {
            Ok(())
        } else {
            Err(Error::Validation(failures))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(v: Value) -> Document {
        match v {
            Value::Object(m) => m,
            _ => Document::new(),
        }
    }

    #[test]
    fn lists_every_failure_with_its_path() {
        let schema = Schema::compile(&json!({
            "type": "object",
            "properties": {"title": {"type": "string"}, "n": {"type": "integer", "minimum": 0}},
            "required": ["title"],
            "additionalProperties": false
        }))
        .map_err(|e| e.to_string());
        let Ok(schema) = schema else {
            panic!("schema compiles")
        };
        assert!(
            schema
                .validate(&doc(json!({"_id": "x", "title": "t", "n": 1})))
                .is_ok()
        );
        match schema.validate(&doc(json!({"_id": "x", "n": -1}))) {
            Err(Error::Validation(failures)) => {
                assert_eq!(failures.len(), 2, "{failures:?}");
                assert!(
                    failures.iter().any(|f| f.starts_with("/n:")),
                    "{failures:?}"
                );
                assert!(failures.iter().any(|f| f.contains("title")), "{failures:?}");
            }
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn a_malformed_schema_is_refused() {
        assert!(matches!(
            Schema::compile(&json!({"type": 12})),
            Err(Error::InvalidArgument(_))
        ));
    }
}
