//! What a sorted index covers: [`IndexSpec`], one or more dotted paths each with a direction.

use std::fmt;

use serde_json::Value;

use crate::value::split_path;
use crate::{Error, Result};

/// The most fields one index may have.
pub const MAX_INDEX_FIELDS: usize = 8;

/// One field of an [`IndexSpec`]: a dotted path and its direction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct IndexField {
    /// The dotted path (`createdAt`, `author.name`, `tags`).
    pub path: String,
    /// Ascending (`true`) or descending.
    pub ascending: bool,
}

/// A sorted index of a collection: one or more fields, each ascending or descending, optionally
/// unique. Written as in the config: `"city"`, `"-createdAt"`, `["ownerId", "-createdAt"]`,
/// `{"fields": ["email"], "unique": true}`.
///
/// An index keeps the store's own order ([`crate::compare_values`]), so it serves a sort that
/// names its fields in its directions (after equality on a prefix of them), and equality,
/// `$in` and ranges on its fields; it changes what a query costs, never its answer. A document
/// with an array at an indexed path is found by each element, as selectors match it.
///
/// ```
/// use portico_store::IndexSpec;
/// use serde_json::json;
///
/// let spec = IndexSpec::parse(&json!(["ownerId", "-createdAt"]))?;
/// assert_eq!(spec.to_string(), "ownerId,-createdAt");
/// assert_eq!(IndexSpec::parse(&json!("-createdAt"))?, IndexSpec::new(["-createdAt"])?);
/// # Ok::<(), portico_store::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct IndexSpec {
    /// The fields, most significant first.
    pub fields: Vec<IndexField>,
    /// No two documents may hold one value at the (single) field (see
    /// [`crate::Store::ensure_unique_index`]).
    pub unique: bool,
}

fn err(msg: impl Into<String>) -> Error {
    Error::InvalidName(format!("index: {}", msg.into()))
}

impl IndexSpec {
    /// An index over `fields`, each a dotted path with an optional leading `-` for descending
    /// (`["ownerId", "-createdAt"]`).
    ///
    /// # Errors
    /// [`Error::InvalidName`] for no field, too many ([`MAX_INDEX_FIELDS`]), a repeated one or
    /// a bad path.
    pub fn new<S: AsRef<str>>(fields: impl IntoIterator<Item = S>) -> Result<IndexSpec> {
        let mut spec = IndexSpec {
            fields: Vec::new(),
            unique: false,
        };
        for field in fields {
            let field = field.as_ref();
            let (path, ascending) = match field.strip_prefix('-') {
                Some(rest) => (rest, false),
                None => (field.strip_prefix('+').unwrap_or(field), true),
            };
            split_path(path).map_err(|e| err(format!("{field:?}: {e}")))?;
            if spec.fields.iter().any(|f| f.path == path) {
                return Err(err(format!("{path:?} is named twice")));
            }
            spec.fields.push(IndexField {
                path: path.to_string(),
                ascending,
            });
        }
        if spec.fields.is_empty() {
            return Err(err("an index needs at least one field"));
        }
        if spec.fields.len() > MAX_INDEX_FIELDS {
            return Err(err(format!(
                "an index has at most {MAX_INDEX_FIELDS} fields, not {}",
                spec.fields.len()
            )));
        }
        Ok(spec)
    }

    /// This index, unique (only for an index of one field).
    ///
    /// # Errors
    /// [`Error::InvalidName`] for an index of several fields.
    pub fn unique(mut self) -> Result<IndexSpec> {
        if self.fields.len() != 1 {
            return Err(err(format!(
                "a unique index has one field; {self} has {}",
                self.fields.len()
            )));
        }
        self.unique = true;
        Ok(self)
    }

    /// Parses the config form: `"path"`, `"-path"`, an array of those, or
    /// `{"fields": [...], "unique": bool}`.
    ///
    /// # Errors
    /// [`Error::InvalidName`] naming the problem.
    pub fn parse(value: &Value) -> Result<IndexSpec> {
        let names = |items: &[Value]| -> Result<Vec<String>> {
            items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(err(format!("a field must be a string, not {other}"))),
                })
                .collect()
        };
        match value {
            Value::String(s) => IndexSpec::new([s]),
            Value::Array(items) => IndexSpec::new(names(items)?),
            Value::Object(m) => {
                if let Some(key) = m
                    .keys()
                    .find(|k| !matches!(k.as_str(), "fields" | "unique"))
                {
                    return Err(err(format!(
                        "unknown key {key:?} (an index has `fields` and `unique`)"
                    )));
                }
                let spec = match m.get("fields") {
                    Some(Value::Array(items)) => IndexSpec::new(names(items)?)?,
                    Some(Value::String(s)) => IndexSpec::new([s])?,
                    Some(other) => {
                        return Err(err(format!("`fields` must be an array, not {other}")));
                    }
                    None => return Err(err("`fields` is missing")),
                };
                match m.get("unique") {
                    None | Some(Value::Bool(false)) => Ok(spec),
                    Some(Value::Bool(true)) => spec.unique(),
                    Some(other) => Err(err(format!("`unique` must be true or false, not {other}"))),
                }
            }
            other => Err(err(format!(
                "an index is a field name, an array of them or {{fields, unique}}, not {other}"
            ))),
        }
    }

    /// The config form of this index (what [`IndexSpec::parse`] reads).
    pub fn to_value(&self) -> Value {
        let names: Vec<Value> = self
            .fields
            .iter()
            .map(|f| Value::String(f.name()))
            .collect();
        match (self.unique, names.len()) {
            (true, _) => serde_json::json!({"fields": names, "unique": true}),
            (false, 1) => names.into_iter().next().unwrap_or(Value::Null),
            (false, _) => Value::Array(names),
        }
    }

    /// The fields as written, comma separated (`ownerId,-createdAt`): the index's name, which a
    /// unique and a plain index over the same fields share.
    pub fn fields_name(&self) -> String {
        let names: Vec<String> = self.fields.iter().map(IndexField::name).collect();
        names.join(",")
    }

    /// The fields' paths, split at dots (valid: checked when the spec was made).
    pub(crate) fn split_paths(&self) -> Vec<Vec<String>> {
        self.fields
            .iter()
            .map(|f| f.path.split('.').map(str::to_string).collect())
            .collect()
    }
}

impl IndexField {
    /// The field as written in a spec: the path, with a leading `-` when descending.
    pub fn name(&self) -> String {
        if self.ascending {
            self.path.clone()
        } else {
            format!("-{}", self.path)
        }
    }
}

/// The fields as written, comma separated (`ownerId,-createdAt`), with ` unique` after a
/// unique index: the index's name in the catalog and in messages.
impl fmt::Display for IndexSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.fields_name())?;
        if self.unique {
            f.write_str(" unique")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parses_every_form_and_round_trips() {
        for v in [
            json!("city"),
            json!("-createdAt"),
            json!(["ownerId", "-createdAt"]),
            json!({"fields": ["email"], "unique": true}),
            json!("a.b.c"),
        ] {
            let spec = IndexSpec::parse(&v).unwrap_or_else(|e| panic!("{v}: {e}"));
            assert_eq!(spec.to_value(), v);
        }
        let spec = IndexSpec::parse(&json!({"fields": ["a", "-b"]})).ok();
        assert_eq!(spec.map(|s| s.to_string()), Some("a,-b".to_string()));
    }

    #[test]
    fn refuses_what_cannot_be_an_index() {
        for bad in [
            json!([]),
            json!(""),
            json!(["a", "a"]),
            json!(["a", "-a"]),
            json!("a..b"),
            json!("$x"),
            json!(3),
            json!([1]),
            json!({"fields": ["a", "b"], "unique": true}),
            json!({"fields": ["a"], "sparse": true}),
            json!({"unique": true}),
            json!(["a", "b", "c", "d", "e", "f", "g", "h", "i"]),
        ] {
            assert!(
                matches!(IndexSpec::parse(&bad), Err(Error::InvalidName(_))),
                "{bad}"
            );
        }
    }
}
