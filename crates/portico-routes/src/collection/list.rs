//! getAll's query parameters: `where`, `sort`, `limit`, `skip`, `fields`, and the paging headers.

use portico_store::{Projection, Selector, Sort};
use serde_json::{Map, Value};

use crate::Reply;

/// The parsed paging and filtering parameters of a getAll.
#[derive(Debug)]
pub(crate) struct ListParams {
    /// The client's `where`, validated, as JSON (combined with the scope later).
    pub(crate) filter: Option<Value>,
    pub(crate) sort: Option<Sort>,
    pub(crate) skip: u64,
    pub(crate) limit: u64,
    pub(crate) fields: Option<Fields>,
    /// `total=false`: no `X-Total-Count` (the matches are not counted).
    pub(crate) total: bool,
}

/// The `fields` parameter: a comma list of names to include (`title,author.name`), or a JSON
/// projection object, including (`{"title": 1}`) or excluding (`{"body": 0}`).
#[derive(Debug)]
pub(crate) struct Fields {
    pub(crate) projection: Projection,
    /// The paths named.
    pub(crate) paths: Vec<String>,
    /// True when the paths are included, false when excluded.
    pub(crate) include: bool,
}

impl Fields {
    fn parse(text: &str) -> Result<Fields, Reply> {
        let invalid = |e: String| bad(format!("Invalid fields: {e}"));
        if text.trim_start().starts_with('{') {
            let value: Value =
                serde_json::from_str(text).map_err(|e| invalid(format!("not JSON ({e})")))?;
            let projection = Projection::parse(&value).map_err(|e| invalid(e.to_string()))?;
            let map = value.as_object().cloned().unwrap_or_default();
            let include = map
                .iter()
                .filter(|(k, _)| k.as_str() != "_id")
                .all(|(_, v)| {
                    v.as_bool()
                        .unwrap_or_else(|| v.as_f64().is_some_and(|n| n != 0.0))
                });
            return Ok(Fields {
                projection,
                paths: map.keys().cloned().collect(),
                include,
            });
        }
        let projection = Projection::parse_list(text).map_err(|e| invalid(e.to_string()))?;
        Ok(Fields {
            projection,
            paths: text.split(',').map(|s| s.trim().to_owned()).collect(),
            include: true,
        })
    }
}

pub(crate) fn bad(message: String) -> Reply {
    Reply::error(400, message)
}

pub(crate) fn single<'a>(
    query: &'a Map<String, Value>,
    name: &str,
) -> Result<Option<&'a str>, Reply> {
    match query.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(bad(format!(
            "Invalid {name}: give it once, as a single value"
        ))),
    }
}

fn number(query: &Map<String, Value>, name: &str) -> Result<Option<u64>, Reply> {
    match single(query, name)? {
        None | Some("") => Ok(None),
        Some(s) => s.parse::<u64>().map(Some).map_err(|_| {
            bad(format!(
                "Invalid {name}: {s:?} is not a non-negative integer"
            ))
        }),
    }
}

/// The field paths a selector's conditions name (through `$and`, `$or`, `$nor`).
pub(crate) fn selector_paths(value: &Value, out: &mut Vec<String>) -> Result<(), String> {
    let Value::Object(map) = value else {
        return Err("a selector must be an object".into());
    };
    for (key, inner) in map {
        match key.as_str() {
            "$and" | "$or" | "$nor" => match inner {
                Value::Array(items) => {
                    for item in items {
                        selector_paths(item, out)?;
                    }
                }
                _ => return Err(format!("{key} needs an array")),
            },
            k if k.starts_with('$') => return Err(format!("operator {k} is not allowed here")),
            k => out.push(k.to_owned()),
        }
    }
    Ok(())
}

impl ListParams {
    /// Parses the query parameters. `default_page` applies without `limit`; a larger `limit`
    /// than `max_page` is clamped.
    pub(crate) fn parse(
        query: &Map<String, Value>,
        default_page: u64,
        max_page: u64,
    ) -> Result<ListParams, Reply> {
        let filter = match single(query, "where")? {
            None | Some("") => None,
            Some(text) => {
                let value: Value = serde_json::from_str(text)
                    .map_err(|e| bad(format!("Invalid where: not JSON ({e})")))?;
                if !value.is_object() {
                    return Err(bad("Invalid where: must be a JSON object".into()));
                }
                Selector::parse(&value).map_err(|e| bad(format!("Invalid where: {e}")))?;
                Some(value)
            }
        };
        let sort = match single(query, "sort")? {
            None | Some("") => None,
            Some(text) if text.trim_start().starts_with(['{', '[']) => {
                let value: Value = serde_json::from_str(text)
                    .map_err(|e| bad(format!("Invalid sort: not JSON ({e})")))?;
                Some(Sort::parse(&value).map_err(|e| bad(format!("Invalid sort: {e}")))?)
            }
            Some(text) => {
                Some(Sort::parse_list(text).map_err(|e| bad(format!("Invalid sort: {e}")))?)
            }
        };
        let fields = match single(query, "fields")? {
            None | Some("") => None,
            Some(text) => Some(Fields::parse(text)?),
        };
        let limit = number(query, "limit")?
            .unwrap_or(default_page)
            .min(max_page);
        let skip = number(query, "skip")?.unwrap_or(0);
        let total = match single(query, "total")? {
            None | Some("true" | "1") => true,
            Some("false" | "0") => false,
            Some(other) => {
                return Err(bad(format!(
                    "Invalid total: {other:?} (write total=false to skip the count)"
                )));
            }
        };
        Ok(ListParams {
            filter,
            sort,
            skip,
            limit,
            fields,
            total,
        })
    }

    /// The paths the request filters and sorts on.
    pub(crate) fn paths(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(f) = &self.filter {
            // Validated by Selector::parse; a shape error here only means "no paths".
            let _ = selector_paths(f, &mut out);
        }
        if let Some(s) = &self.sort {
            out.extend(s.keys().iter().map(|(p, _)| p.clone()));
        }
        out
    }
}

/// The `Link` header value for the next and previous pages of `path?query`.
pub(crate) fn link_header(
    path: &str,
    query: Option<&str>,
    skip: u64,
    limit: u64,
    total: u64,
) -> Option<String> {
    let page = |skip: u64| {
        let mut ser = form_urlencoded::Serializer::new(String::new());
        if let Some(q) = query {
            for (k, v) in form_urlencoded::parse(q.as_bytes()) {
                if k != "skip" && k != "limit" {
                    ser.append_pair(&k, &v);
                }
            }
        }
        ser.append_pair("skip", &skip.to_string());
        ser.append_pair("limit", &limit.to_string());
        format!("<{path}?{}>", ser.finish())
    };
    let mut links = Vec::new();
    if limit > 0 && skip.saturating_add(limit) < total {
        links.push(format!("{}; rel=\"next\"", page(skip + limit)));
    }
    if skip > 0 && limit > 0 {
        links.push(format!(
            "{}; rel=\"prev\"",
            page(skip.saturating_sub(limit))
        ));
    }
    (!links.is_empty()).then(|| links.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn links_for_middle_page() {
        let l = link_header(
            "/api/items",
            Some("where=%7B%7D&skip=10&limit=10"),
            10,
            10,
            35,
        )
        .unwrap();
        assert!(
            l.contains("</api/items?where=%7B%7D&skip=20&limit=10>; rel=\"next\""),
            "{l}"
        );
        assert!(l.contains("skip=0&limit=10>; rel=\"prev\""), "{l}");
        assert!(link_header("/x", None, 0, 100, 5).is_none());
    }

    #[test]
    fn selector_paths_walk_logical_operators() {
        let mut out = Vec::new();
        selector_paths(
            &json!({"a": 1, "$or": [{"b.c": {"$gt": 1}}, {"d": 2}]}),
            &mut out,
        )
        .unwrap();
        assert_eq!(out, vec!["a", "b.c", "d"]);
        assert!(selector_paths(&json!({"$where": "x"}), &mut Vec::new()).is_err());
    }

    #[test]
    fn limits_are_numbers_and_clamped() {
        let q = |v: Value| match v {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let p = ListParams::parse(&q(json!({"limit": "5000", "skip": "3"})), 100, 1000).unwrap();
        assert_eq!((p.limit, p.skip), (1000, 3));
        let p = ListParams::parse(&q(json!({})), 100, 1000).unwrap();
        assert_eq!(p.limit, 100);
        assert_eq!(
            ListParams::parse(&q(json!({"limit": "-1"})), 100, 1000)
                .unwrap_err()
                .status(),
            400
        );
    }
}
