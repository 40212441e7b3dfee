//! Form-encoded bodies and query strings: bracketed names nest (`a[b]=1&list[]=x` gives
//! `{"a": {"b": "1"}, "list": ["x"]}`), repeated names collect into an array, and every value is a
//! string. A name that would put a value where another field already nests (`a=1&a[b]=2`) is an
//! error, so no field silently overwrites another.

use serde_json::{Map, Value};

/// The largest array index a form field may use (`a[20]`); larger ones become object keys, so a
/// client cannot make the server allocate a huge array.
const MAX_FORM_INDEX: usize = 100;

/// How deep bracketed names nest (`a[b][c]` is depth 2); deeper brackets stay literal.
const MAX_FORM_DEPTH: usize = 20;

/// Why a form could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FormError(pub String);

/// Parses a query string or form body into nested objects. Values are strings.
///
/// ```
/// let form = portico_edge::parse_form(b"title=Hi&tags[]=a&tags[]=b&author[name]=Ann")?;
/// assert_eq!(
///     serde_json::Value::Object(form),
///     serde_json::json!({"title": "Hi", "tags": ["a", "b"], "author": {"name": "Ann"}})
/// );
/// # Ok::<(), portico_edge::FormError>(())
/// ```
///
/// # Errors
/// [`FormError`] when two names conflict (`a=1&a[b]=2`).
pub fn parse_form(bytes: &[u8]) -> Result<Map<String, Value>, FormError> {
    let mut root = Value::Object(Map::new());
    for (name, value) in form_urlencoded::parse(bytes) {
        let keys = split_name(&name);
        insert(&mut root, &keys, Value::String(value.into_owned()), &name)?;
    }
    match root {
        Value::Object(map) => Ok(map),
        _ => Ok(Map::new()),
    }
}

/// `a[b][]` -> `["a", "b", ""]`. A name whose brackets do not close is taken literally.
fn split_name(name: &str) -> Vec<String> {
    let Some(open) = name.find('[') else {
        return vec![name.to_owned()];
    };
    if open == 0 {
        return vec![name.to_owned()];
    }
    let mut keys = vec![name[..open].to_owned()];
    let mut rest = &name[open..];
    while let Some(stripped) = rest.strip_prefix('[') {
        if keys.len() > MAX_FORM_DEPTH {
            // Deeper brackets stay one literal key, so nesting (and recursion) stays bounded.
            keys.push(rest.to_owned());
            return keys;
        }
        match stripped.find(']') {
            Some(close) => {
                keys.push(stripped[..close].to_owned());
                rest = &stripped[close + 1..];
            }
            None => return vec![name.to_owned()],
        }
    }
    if !rest.is_empty() {
        return vec![name.to_owned()];
    }
    keys
}

fn conflict(name: &str) -> FormError {
    FormError(format!(
        "Malformed form body: field {name:?} conflicts with another field"
    ))
}

fn insert(target: &mut Value, keys: &[String], value: Value, name: &str) -> Result<(), FormError> {
    let Some((key, rest)) = keys.split_first() else {
        return Ok(());
    };
    match target {
        Value::Object(map) => {
            if rest.is_empty() {
                match map.get_mut(key.as_str()) {
                    // `a=1&a=2` collects both values, as query-string parsers usually do.
                    Some(Value::Array(items)) => items.push(value),
                    Some(existing @ Value::String(_)) => {
                        let first = existing.take();
                        *existing = Value::Array(vec![first, value]);
                    }
                    Some(_) => return Err(conflict(name)),
                    None => {
                        map.insert(key.clone(), value);
                    }
                }
                return Ok(());
            }
            let next_is_array =
                rest[0].is_empty() || rest[0].parse::<usize>().is_ok_and(|i| i <= MAX_FORM_INDEX);
            let child = map.entry(key.clone()).or_insert_with(|| {
                if next_is_array {
                    Value::Array(Vec::new())
                } else {
                    Value::Object(Map::new())
                }
            });
            if child.is_string() {
                return Err(conflict(name));
            }
            if child.is_array() && !next_is_array {
                // `a[0]=x&a[b]=y`: turn the array into an object keyed by index.
                let items = match child.take() {
                    Value::Array(items) => items,
                    _ => Vec::new(),
                };
                let obj: Map<String, Value> = items
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| (i.to_string(), v))
                    .collect();
                *child = Value::Object(obj);
            }
            insert(child, rest, value, name)
        }
        Value::Array(items) => {
            let index = if key.is_empty() {
                items.len()
            } else {
                key.parse::<usize>().map_err(|_| conflict(name))?
            };
            if rest.is_empty() {
                if index < items.len() {
                    items[index] = value;
                } else {
                    items.push(value);
                }
                return Ok(());
            }
            if index >= items.len() {
                let next_is_array = rest[0].is_empty() || rest[0].parse::<usize>().is_ok();
                items.push(if next_is_array {
                    Value::Array(Vec::new())
                } else {
                    Value::Object(Map::new())
                });
                let last = items.len() - 1;
                return insert(&mut items[last], rest, value, name);
            }
            insert(&mut items[index], rest, value, name)
        }
        _ => Err(conflict(name)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form(s: &str) -> Value {
        Value::Object(parse_form(s.as_bytes()).unwrap())
    }

    #[test]
    fn flat_and_nested_fields() {
        assert_eq!(
            form("title=Hello+world&author[name]=Ann&author[age]=3"),
            json!({"title": "Hello world", "author": {"name": "Ann", "age": "3"}})
        );
    }

    #[test]
    fn arrays_and_repeated_fields() {
        assert_eq!(form("tags[]=a&tags[]=b"), json!({"tags": ["a", "b"]}));
        assert_eq!(form("t=a&t=b&t=c"), json!({"t": ["a", "b", "c"]}));
        assert_eq!(
            form("p[0][n]=x&p[1][n]=y"),
            json!({"p": [{"n": "x"}, {"n": "y"}]})
        );
    }

    #[test]
    fn unclosed_brackets_are_literal() {
        assert_eq!(form("a[b=1"), json!({"a[b": "1"}));
    }

    #[test]
    fn conflicts_are_errors() {
        assert!(parse_form(b"a=1&a[b]=2").is_err());
    }

    #[test]
    fn nesting_depth_is_bounded() {
        let name = format!("a{}", "[x]".repeat(100_000));
        let parsed = parse_form(format!("{name}=1").as_bytes()).unwrap();
        let mut depth = 0;
        let mut v = &parsed["a"];
        while let Some(Value::Object(m)) = Some(v) {
            let Some((_, next)) = m.iter().next() else {
                break;
            };
            v = next;
            depth += 1;
        }
        assert_eq!(depth, MAX_FORM_DEPTH + 1);
        assert_eq!(v, &json!("1"));
    }

    #[test]
    fn huge_index_is_a_key() {
        assert_eq!(form("a[999999]=1"), json!({"a": {"999999": "1"}}));
    }
}
