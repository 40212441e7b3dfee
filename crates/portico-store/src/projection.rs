//! Field projections.

use serde_json::{Map, Value};

use crate::value::split_path;
use crate::{Document, Error, Result};

/// A parsed projection: inclusion (`{"a": 1}`) or exclusion (`{"secret": 0}`) of dotted paths.
/// `_id` is included unless excluded explicitly.
///
/// A path through an array applies to each element of the array (`{"a.b": 1}` keeps `b` in each
/// object of `a`). Fields keep the document's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    include: bool,
    include_id: bool,
    tree: Tree,
}

/// The projected paths as a tree of field names; a leaf ends a path.
#[derive(Debug, Clone, Default, PartialEq)]
struct Tree {
    leaf: bool,
    children: Vec<(String, Tree)>,
}

impl Tree {
    fn child(&self, name: &str) -> Option<&Tree> {
        self.children
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t)
    }

    fn insert(&mut self, path: &str, parts: &[String]) -> Result<()> {
        let mut node = self;
        for part in parts {
            if node.leaf {
                return Err(err(format!(
                    "the path {path:?} collides with a shorter path"
                )));
            }
            let pos = match node.children.iter().position(|(n, _)| n == part) {
                Some(pos) => pos,
                None => {
                    node.children.push((part.clone(), Tree::default()));
                    node.children.len() - 1
                }
            };
            node = &mut node.children[pos].1;
        }
        if node.leaf || !node.children.is_empty() {
            return Err(err(format!("the path {path:?} collides with another path")));
        }
        node.leaf = true;
        Ok(())
    }
}

fn err(msg: impl Into<String>) -> Error {
    Error::InvalidProjection(msg.into())
}

impl Projection {
    /// Parses a projection object.
    ///
    /// Values are `1`/`true` (include) or `0`/`false` (exclude). `{}` returns whole documents.
    ///
    /// # Errors
    /// [`crate::Error::InvalidProjection`] when inclusion and exclusion are mixed (other than `_id`).
    pub fn parse(value: &Value) -> Result<Projection> {
        let Value::Object(m) = value else {
            return Err(err(format!("a projection must be an object, not {value}")));
        };
        let mut mode: Option<bool> = None;
        let mut include_id = true;
        let mut tree = Tree::default();
        for (path, flag) in m {
            let on = match flag {
                Value::Bool(b) => *b,
                Value::Number(n) if n.as_f64() == Some(1.0) => true,
                Value::Number(n) if n.as_f64() == Some(0.0) => false,
                other => {
                    return Err(err(format!(
                        "the projection of {path:?} must be 1, 0, true or false, not {other}"
                    )));
                }
            };
            if path == "_id" {
                include_id = on;
                continue;
            }
            match mode {
                Some(m) if m != on => {
                    return Err(err(
                        "a projection cannot mix inclusion and exclusion (except for _id)",
                    ));
                }
                _ => mode = Some(on),
            }
            let parts = split_path(path).map_err(err)?;
            tree.insert(path, &parts)?;
        }
        // `{"_id": 1}` alone includes only `_id`; `{}` and `{"_id": 0}` exclude (nothing / `_id`).
        let include = mode.unwrap_or(include_id && !m.is_empty());
        Ok(Projection {
            include,
            include_id,
            tree,
        })
    }

    /// Parses a comma list of field names to include, such as `title,author.name`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidProjection`] for an empty name.
    pub fn parse_list(spec: &str) -> Result<Projection> {
        let mut tree = Tree::default();
        for name in spec.split(',') {
            let name = name.trim();
            let parts = split_path(name).map_err(err)?;
            if name == "_id" {
                continue;
            }
            tree.insert(name, &parts)?;
        }
        Ok(Projection {
            include: true,
            include_id: true,
            tree,
        })
    }

    /// Returns the projected copy of `doc`.
    pub fn apply(&self, doc: &Document) -> Document {
        let mut out = if self.include {
            include_map(doc, &self.tree)
        } else {
            exclude_map(doc, &self.tree)
        };
        if self.include_id {
            if self.include
                && let Some(id) = doc.get("_id")
            {
                // Keep `_id` where the document has it (first, for stored documents).
                let mut with_id = Map::new();
                with_id.insert("_id".to_string(), id.clone());
                with_id.extend(out);
                out = with_id;
            }
        } else {
            out.shift_remove("_id");
        }
        out
    }
}

fn include_map(m: &Map<String, Value>, tree: &Tree) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in m {
        if let Some(sub) = tree.child(k)
            && let Some(v) = include_value(v, sub)
        {
            out.insert(k.clone(), v);
        }
    }
    out
}

fn include_value(v: &Value, tree: &Tree) -> Option<Value> {
    if tree.leaf {
        return Some(v.clone());
    }
    match v {
        Value::Object(m) => Some(Value::Object(include_map(m, tree))),
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .filter(|e| e.is_object() || e.is_array())
                .filter_map(|e| include_value(e, tree))
                .collect(),
        )),
        _ => None,
    }
}

fn exclude_map(m: &Map<String, Value>, tree: &Tree) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in m {
        match tree.child(k) {
            Some(sub) if sub.leaf => {}
            Some(sub) => {
                out.insert(k.clone(), exclude_value(v, sub));
            }
            None => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out
}

fn exclude_value(v: &Value, tree: &Tree) -> Value {
    match v {
        Value::Object(m) => Value::Object(exclude_map(m, tree)),
        Value::Array(items) => Value::Array(items.iter().map(|e| exclude_value(e, tree)).collect()),
        other => other.clone(),
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

    fn project(p: Value, d: Value) -> Value {
        match Projection::parse(&p) {
            Ok(p) => Value::Object(p.apply(&doc(d))),
            Err(e) => panic!("{p}: {e}"),
        }
    }

    #[test]
    fn inclusion() {
        let d = json!({"_id": "i", "a": 1, "b": {"c": 2, "d": 3}, "e": [{"c": 1, "x": 2}, 5]});
        assert_eq!(
            project(json!({"a": 1}), d.clone()),
            json!({"_id": "i", "a": 1})
        );
        assert_eq!(
            project(json!({"b.c": 1, "_id": 0}), d.clone()),
            json!({"b": {"c": 2}})
        );
        assert_eq!(
            project(json!({"e.c": true}), d.clone()),
            json!({"_id": "i", "e": [{"c": 1}]})
        );
        assert_eq!(project(json!({"_id": 1}), d.clone()), json!({"_id": "i"}));
        assert_eq!(project(json!({}), d.clone()), d);
        let list = Projection::parse_list("b.d, a").map(|p| Value::Object(p.apply(&doc(d))));
        assert_eq!(list.ok(), Some(json!({"_id": "i", "a": 1, "b": {"d": 3}})));
    }

    #[test]
    fn exclusion() {
        let d = json!({"_id": "i", "a": 1, "b": {"c": 2, "d": 3}, "e": [{"c": 1, "x": 2}, 5]});
        assert_eq!(
            project(json!({"a": 0, "b.c": 0, "e.c": false}), d.clone()),
            json!({"_id": "i", "b": {"d": 3}, "e": [{"x": 2}, 5]})
        );
        assert_eq!(
            project(json!({"_id": 0}), d),
            json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [{"c": 1, "x": 2}, 5]})
        );
    }

    #[test]
    fn invalid() {
        for bad in [
            json!({"a": 1, "b": 0}),
            json!({"a": 1, "a.b": 1}),
            json!({"a": {"$slice": 1}}),
            json!({"a": 2}),
            json!({"": 1}),
            json!([]),
        ] {
            assert!(
                matches!(Projection::parse(&bad), Err(Error::InvalidProjection(_))),
                "{bad}"
            );
        }
        assert!(Projection::parse(&json!({"a": 1, "_id": 0})).is_ok());
        assert!(Projection::parse_list("a,,b").is_err());
    }
}
