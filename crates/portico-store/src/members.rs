//! Reading a few top-level members of a stored document's JSON text without building the
//! document: the relation fields of a page sent as stored ([`object_members`],
//! [`related_ids_of_texts`]). The text is still checked to be one JSON object; the members not
//! asked for are skipped (validated, not built).

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

/// What [`object_members`] read of one JSON object.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Members {
    /// The value of each name asked for, in the order asked (`None`: not a member). A name the
    /// text holds twice gives its last value, as decoding the text would.
    pub values: Vec<Option<Value>>,
    /// How many members the object has (a name given twice counts twice).
    pub len: usize,
}

/// The top-level members `wanted` of `text`, when `text` is one JSON object (surrounding
/// whitespace allowed); `None` otherwise. Names are compared as decoded (`"a\u0062"` is `ab`);
/// members of nested objects are never taken for top-level ones. Only the values asked for are
/// built.
pub fn object_members(text: &str, wanted: &[&str]) -> Option<Members> {
    let mut de = serde_json::Deserializer::from_str(text);
    let members = ObjectSeed(wanted).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(members)
}

/// The ids the relation `field` holds in `texts` (stored documents' JSON texts, a page in
/// order): a string, or the strings of an array, each once, the first `max` in page order then
/// array order. A text that is not one JSON object holds none.
pub fn related_ids_of_texts(texts: &[String], field: &str, max: usize) -> Vec<String> {
    let mut seen = foldhash::HashSet::default();
    let mut ids = Vec::new();
    for text in texts {
        let Some(Members { mut values, .. }) = object_members(text, &[field]) else {
            continue;
        };
        let held = match values.pop().flatten() {
            Some(Value::String(id)) => vec![id],
            Some(Value::Array(items)) => items
                .into_iter()
                .filter_map(|v| match v {
                    Value::String(id) => Some(id),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        for id in held {
            if ids.len() >= max {
                return ids;
            }
            if seen.insert(id.clone()) {
                ids.push(id);
            }
        }
    }
    ids
}

/// Reads one object: the wanted members' values, the others skipped.
struct ObjectSeed<'w>(&'w [&'w str]);

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_> {
    type Value = Members;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Members, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ObjectSeed<'_> {
    type Value = Members;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
        let mut out = Members {
            values: vec![None; self.0.len()],
            len: 0,
        };
        while let Some(key) = map.next_key_seed(KeySeed(self.0))? {
            out.len += 1;
            match key.and_then(|i| out.values.get_mut(i)) {
                Some(slot) => *slot = Some(map.next_value::<Value>()?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

/// Reads one member name: its place among the wanted names, if it is one.
struct KeySeed<'w>(&'w [&'w str]);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<usize>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|w| *w == name))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn members_are_read_at_the_top_level_only() {
        let text = r#" { "_id" : "p1", "x": {"author": "nested"}, "list": [{"author": 1}],
            "auth\u006fr" : "u1", "t\u00e9": [1, "a"] } "#;
        let m = object_members(text, &["author", "té", "expand", "x"]).unwrap();
        assert_eq!(m.len, 5);
        assert_eq!(
            m.values,
            vec![
                Some(json!("u1")),
                Some(json!([1, "a"])),
                None,
                Some(json!({"author": "nested"}))
            ]
        );
        // Given twice: the last value, as decoding the text gives.
        let m = object_members(r#"{"a":1,"a":2}"#, &["a"]).unwrap();
        assert_eq!((m.values, m.len), (vec![Some(json!(2))], 2));
        let m = object_members("{}", &["a"]).unwrap();
        assert_eq!((m.values, m.len), (vec![None], 0));
    }

    #[test]
    fn only_one_object_is_read() {
        for text in [
            "[1]",
            "\"a\"",
            "null",
            "{\"a\":1} {}",
            "{\"a\":1",
            "{\"a\":1}x",
            "{\"a\":tru}",
            "",
        ] {
            assert!(object_members(text, &["a"]).is_none(), "{text}");
        }
    }

    #[test]
    fn related_ids_follow_page_then_array_order() {
        let texts: Vec<String> = [
            json!({"_id": "1", "a": "x"}),
            json!({"_id": "2", "a": ["y", 3, "x", null, ["z"], "w"]}),
            json!({"_id": "3", "a": null}),
            json!({"_id": "4", "a": {"_id": "q"}}),
            json!({"_id": "5"}),
            json!({"_id": "6", "a": "v"}),
        ]
        .iter()
        .map(Value::to_string)
        .chain(["not json".to_owned()])
        .collect();
        assert_eq!(
            related_ids_of_texts(&texts, "a", 10),
            vec!["x", "y", "w", "v"]
        );
        assert_eq!(related_ids_of_texts(&texts, "a", 2), vec!["x", "y"]);
        assert!(related_ids_of_texts(&texts, "b", 10).is_empty());
    }
}
