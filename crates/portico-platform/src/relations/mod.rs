//! Relations between collections and their expansion: a field holding the id (or an array of
//! ids) of another collection's document is declared a relation, and a read asking to `expand`
//! it gets the related documents under `"expand"` in each result, read with one query per
//! relation for the whole page and shown only as far as the caller may read them.
//!
//! | part | file |
//! |---|---|
//! | relations, the `expand` parameter, what a caller may read | `mod.rs` |
//! | expanding a page of documents ([`crate::Platform::expand`]) | `expand.rs` |

mod expand;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use portico_store::{Document, Projection, Selector};
use serde_json::Value;

use crate::field_rules::FieldView;
use crate::{Error, Result};

/// How deep an expansion goes: `author` is 1, `author.team` is 2.
pub const MAX_EXPAND_DEPTH: usize = 2;
/// The most relation paths one `expand` may name.
pub const MAX_EXPAND_PATHS: usize = 8;
/// The most distinct ids one relation expands for one page; ids past it are left out.
pub const MAX_EXPAND_IDS: usize = 1000;
/// The key related documents are put under in each expanded document.
pub const EXPAND_KEY: &str = "expand";

/// The relations of a collection: field name → the collection its ids belong to
/// (`relations = { author = "users", tags = "tags" }`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Relations {
    fields: BTreeMap<String, String>,
}

impl Relations {
    /// No relations.
    pub fn new() -> Relations {
        Relations::default()
    }

    /// Declares `field` (a top-level field) as holding ids of documents of `target`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `_id`, `expand`, an empty name, a dotted or `$` name, or
    /// an empty target.
    pub fn field(mut self, field: impl Into<String>, target: impl Into<String>) -> Result<Self> {
        let (field, target) = (field.into(), target.into());
        if field.is_empty()
            || field == "_id"
            || field == EXPAND_KEY
            || field.starts_with('$')
            || field.contains('.')
        {
            return Err(Error::InvalidArgument(format!(
                "{field:?} cannot be a relation: give a top-level field other than _id and expand"
            )));
        }
        if target.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "the relation {field:?} names no collection"
            )));
        }
        self.fields.insert(field, target);
        Ok(self)
    }

    /// True when no field is a relation.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The collection the ids of `field` belong to.
    pub fn target(&self, field: &str) -> Option<&str> {
        self.fields.get(field).map(String::as_str)
    }

    /// Every relation, `(field, target collection)`, by field name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().map(|(f, t)| (f.as_str(), t.as_str()))
    }
}

/// A parsed `expand` parameter: `author,tags,author.team` (a comma list of relation fields,
/// nested with dots up to [`MAX_EXPAND_DEPTH`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expand {
    fields: BTreeMap<String, Expand>,
}

impl Expand {
    /// The relation fields expanded at this level, each with what is expanded below it.
    pub(crate) fn levels(&self) -> impl Iterator<Item = (&str, &Expand)> {
        self.fields.iter().map(|(f, e)| (f.as_str(), e))
    }

    /// True when nothing is to be expanded.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The relation fields expanded at this level.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.fields.keys().map(String::as_str)
    }
}

impl FromStr for Expand {
    type Err = Error;

    fn from_str(text: &str) -> Result<Expand> {
        let invalid = |why: String| Error::InvalidArgument(format!("Invalid expand: {why}"));
        let mut out = Expand::default();
        let paths: Vec<&str> = text
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        if paths.len() > MAX_EXPAND_PATHS {
            return Err(invalid(format!(
                "at most {MAX_EXPAND_PATHS} relations may be expanded at once"
            )));
        }
        for path in paths {
            let parts: Vec<&str> = path.split('.').collect();
            if parts.len() > MAX_EXPAND_DEPTH {
                return Err(invalid(format!(
                    "{path:?} is deeper than {MAX_EXPAND_DEPTH} relations"
                )));
            }
            let mut level = &mut out;
            for part in parts {
                if part.is_empty() || part.starts_with('$') {
                    return Err(invalid(format!("{path:?} is not a relation path")));
                }
                level = level.fields.entry(part.to_owned()).or_default();
            }
        }
        Ok(out)
    }
}

impl fmt::Display for Expand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (field, inner) in &self.fields {
            if inner.is_empty() {
                if !first {
                    f.write_str(",")?;
                }
                f.write_str(field)?;
                first = false;
            }
            for sub in inner.fields.keys() {
                if !first {
                    f.write_str(",")?;
                }
                write!(f, "{field}.{sub}")?;
                first = false;
            }
        }
        Ok(())
    }
}

/// What one caller may read of a related collection: the documents its `scope` selects, as its
/// field `view` shows them, projected by `projection`. A collection with no entry in the map
/// given to [`crate::Platform::expand`] is not read at all (its related documents are left out).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReadAccess {
    /// The documents the caller may read (an owner scope); every document by default.
    pub scope: Selector,
    /// The fields the caller may see (the collection's field rules for that caller).
    pub view: FieldView,
    /// The fields shown at all (`users` shows `_id` and `profile` whatever this says).
    pub projection: Option<Projection>,
}

impl ReadAccess {
    /// Every document, shown through `view`.
    pub fn new(view: FieldView) -> ReadAccess {
        ReadAccess {
            view,
            ..ReadAccess::default()
        }
    }

    /// Only the documents `scope` selects.
    #[must_use]
    pub fn scoped(mut self, scope: Selector) -> ReadAccess {
        self.scope = scope;
        self
    }
}

/// The ids `value` holds: a string, or the strings of an array.
pub(crate) fn ids_of(value: &Value) -> Vec<&str> {
    match value {
        Value::String(id) => vec![id.as_str()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// `doc` as `access` shows it: field view (decided on the whole document), then the
/// projection; a user account only as `_id` and `profile`.
pub(crate) fn shown(target: &str, access: &ReadAccess, doc: Document) -> Document {
    let doc = access.view.applied(doc);
    let doc = match &access.projection {
        Some(p) => p.apply(&doc),
        None => doc,
    };
    if target == crate::accounts::USERS {
        return doc
            .into_iter()
            .filter(|(k, _)| k == "_id" || k == "profile")
            .collect();
    }
    doc
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn expand_parses_nested_paths_within_bounds() {
        let e: Expand = "author, tags,author.team".parse().unwrap();
        assert_eq!(e.fields().collect::<Vec<_>>(), vec!["author", "tags"]);
        assert_eq!(e.to_string(), "author.team,tags");
        assert!("a.b.c".parse::<Expand>().is_err());
        assert!("a,$where".parse::<Expand>().is_err());
        assert!("a..b".parse::<Expand>().is_err());
        assert!(
            "a,b,c,d,e,f,g,h,i".parse::<Expand>().is_err(),
            "more than {MAX_EXPAND_PATHS} paths"
        );
        assert!("".parse::<Expand>().unwrap().is_empty());
    }

    #[test]
    fn relations_refuse_unusable_fields() {
        assert!(Relations::new().field("_id", "x").is_err());
        assert!(Relations::new().field("expand", "x").is_err());
        assert!(Relations::new().field("a.b", "x").is_err());
        assert!(Relations::new().field("a", "").is_err());
        let r = Relations::new().field("author", "users").unwrap();
        assert_eq!(r.target("author"), Some("users"));
        assert_eq!(r.target("title"), None);
    }

    #[test]
    fn users_show_only_id_and_profile() {
        let doc: Document = serde_json::from_value(
            json!({"_id": "u", "profile": {"n": 1}, "services": {"password": "x"}, "emails": []}),
        )
        .unwrap();
        let shown = shown("users", &ReadAccess::default(), doc);
        assert_eq!(
            Value::Object(shown),
            json!({"_id": "u", "profile": {"n": 1}})
        );
    }
}
