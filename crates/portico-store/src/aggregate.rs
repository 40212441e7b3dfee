//! Aggregates: the documents a selector matches, grouped by the value at one path, with a
//! count and the sum, average, minimum and maximum of numeric paths per group.
//!
//! The meaning is defined here, once, by [`Groups::add_doc`] over decoded documents (the memory
//! backend, and any backend for a selector it cannot put in SQL); SQLite and PostgreSQL compute
//! the same per-group figures with `GROUP BY` over the stored JSON ([`Groups::add_row`]) when
//! the selector is one they can decide in SQL ([`Selector::sql_equalities`]). Either way the
//! memory held is one accumulator per group, at most [`MAX_GROUPS`], never the documents.
//!
//! - A group's key is the whole value at `group` (an array is one key; no path: one group with
//!   `_id: null`); a missing value and `null` are the same group.
//! - `sum`, `avg`, `min`, `max` look at numbers only; a group without numbers at a path has
//!   sum 0 and `null` for the others. Paths are plain field names joined by dots (no array
//!   positions, no traversal of arrays).

use std::cmp::Ordering;
use std::collections::HashMap;

use serde_json::{Map, Number, Value};

use crate::number::compare_numbers;
use crate::{Document, Error, Result, Selector, Sort};

/// The most groups one aggregate may have before it is refused (a bound on its memory).
pub const MAX_GROUPS: usize = 100_000;

/// What to compute: see the module docs.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Aggregate {
    /// Which documents count.
    pub selector: Selector,
    /// The path whose value makes the groups; `None`: one group of all matching documents.
    pub group: Option<String>,
    /// Whether each group has a `count`.
    pub count: bool,
    /// Paths summed (`sum_<path>`).
    pub sum: Vec<String>,
    /// Paths averaged (`avg_<path>`).
    pub avg: Vec<String>,
    /// Paths whose smallest number is given (`min_<path>`).
    pub min: Vec<String>,
    /// Paths whose largest number is given (`max_<path>`).
    pub max: Vec<String>,
    /// Order of the groups, by their output fields (`_id`, `count`, `sum_amount`...); by `_id`
    /// when `None`.
    pub sort: Option<Sort>,
    /// Groups passed over.
    pub skip: u64,
    /// Groups returned at most.
    pub limit: Option<u64>,
}

/// Checks an aggregate path: non-empty field names of letters, digits, `_` and `-` joined by
/// dots, not starting with a digit (so it never means an array position).
///
/// # Errors
/// [`Error::InvalidSelector`] naming the path.
pub fn check_path(path: &str) -> Result<()> {
    let ok = !path.is_empty()
        && path.split('.').all(|part| {
            !part.is_empty()
                && !part.starts_with(|c: char| c.is_ascii_digit())
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidSelector(format!(
            "{path:?} cannot be aggregated: use field names of letters, digits, _ and -, joined by dots"
        )))
    }
}

impl Aggregate {
    /// An aggregate of the documents `selector` matches: one group, nothing computed yet.
    pub fn new(selector: Selector) -> Aggregate {
        Aggregate {
            selector,
            ..Aggregate::default()
        }
    }

    /// The query parameters that ask for an aggregate on a list url.
    pub const PARAMS: [&'static str; 6] = ["group", "count", "sum", "avg", "min", "max"];

    /// Reads `group`, `count`, `sum`, `avg`, `min` and `max` from a list url's query
    /// parameters (`param(name)` gives one's value): `group=status&count=true&sum=amount,tax`.
    /// `None` when none of them is given (the request wants documents). The door sets the
    /// selector, sort, skip and limit.
    ///
    /// # Errors
    /// [`Error::InvalidSelector`] for a bad `count` or a path that cannot be aggregated.
    pub fn from_params<'a>(param: impl Fn(&str) -> Option<&'a str>) -> Result<Option<Aggregate>> {
        if Aggregate::PARAMS.iter().all(|p| param(p).is_none()) {
            return Ok(None);
        }
        let list = |name: &str| -> Vec<String> {
            param(name)
                .filter(|l| !l.is_empty())
                .map(|l| l.split(',').map(|p| p.trim().to_owned()).collect())
                .unwrap_or_default()
        };
        let count = match param("count") {
            None | Some("" | "false" | "0") => false,
            Some("true" | "1") => true,
            Some(other) => {
                return Err(Error::InvalidSelector(format!(
                    "count={other:?}: use count=true"
                )));
            }
        };
        let spec = Aggregate {
            group: param("group").filter(|g| !g.is_empty()).map(str::to_owned),
            count,
            sum: list("sum"),
            avg: list("avg"),
            min: list("min"),
            max: list("max"),
            ..Aggregate::default()
        };
        spec.check()?;
        Ok(Some(spec))
    }

    /// Every path the aggregate reads (group and numeric paths).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.group
            .iter()
            .chain(&self.sum)
            .chain(&self.avg)
            .chain(&self.min)
            .chain(&self.max)
            .map(String::as_str)
    }

    /// Every numeric path, in output order, with its operations.
    pub(crate) fn fields(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in self
            .sum
            .iter()
            .chain(&self.avg)
            .chain(&self.min)
            .chain(&self.max)
        {
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
        out
    }

    /// Checks every path.
    ///
    /// # Errors
    /// [`Error::InvalidSelector`] for a path that cannot be aggregated.
    pub fn check(&self) -> Result<()> {
        self.paths().try_for_each(check_path)
    }
}

/// The value at a dotted path through objects only (`None` when missing).
fn value_at<'a>(doc: &'a Document, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut current = doc.get(parts.next()?)?;
    for part in parts {
        current = current.as_object()?.get(part)?;
    }
    Some(current)
}

/// One numeric path's figures in one group as SQL computes them: the sum, how many numbers,
/// the smallest and the largest.
pub(crate) type Figures = (Option<Number>, u64, Option<Number>, Option<Number>);

/// The figures of one numeric path in one group.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldAcc {
    /// Integer part of the sum while every number was an integer.
    int_sum: i128,
    float_sum: f64,
    floats: bool,
    pub(crate) n: u64,
    min: Option<Number>,
    max: Option<Number>,
}

impl FieldAcc {
    fn add_sum(&mut self, n: &Number) {
        match n.as_i64() {
            Some(i) if !self.floats => self.int_sum += i128::from(i),
            _ => {
                if !self.floats {
                    self.floats = true;
                    self.float_sum = self.int_sum as f64;
                }
                self.float_sum += n.as_f64().unwrap_or(0.0);
            }
        }
    }

    fn bound(&mut self, n: &Number) {
        if self
            .min
            .as_ref()
            .is_none_or(|m| compare_numbers(n, m) == Ordering::Less)
        {
            self.min = Some(n.clone());
        }
        if self
            .max
            .as_ref()
            .is_none_or(|m| compare_numbers(n, m) == Ordering::Greater)
        {
            self.max = Some(n.clone());
        }
    }

    fn add(&mut self, n: &Number) {
        self.add_sum(n);
        self.n += 1;
        self.bound(n);
    }

    /// Merges figures computed elsewhere (a SQL row): their sum, how many numbers, min, max.
    pub(crate) fn merge(
        &mut self,
        sum: Option<Number>,
        n: u64,
        min: Option<Number>,
        max: Option<Number>,
    ) {
        if n == 0 {
            return;
        }
        if let Some(sum) = sum {
            self.add_sum(&sum);
        }
        self.n += n;
        for bound in [min, max].into_iter().flatten() {
            self.bound(&bound);
        }
    }

    fn sum(&self) -> Value {
        if self.floats {
            Number::from_f64(self.float_sum).map_or(Value::Null, Value::Number)
        } else {
            i64::try_from(self.int_sum).map_or_else(
                |_| Number::from_f64(self.int_sum as f64).map_or(Value::Null, Value::Number),
                |i| Value::Number(i.into()),
            )
        }
    }

    fn avg(&self) -> Value {
        if self.n == 0 {
            return Value::Null;
        }
        let total = if self.floats {
            self.float_sum
        } else {
            self.int_sum as f64
        };
        Number::from_f64(total / self.n as f64).map_or(Value::Null, Value::Number)
    }
}

#[derive(Debug, Clone)]
struct Group {
    key: Value,
    count: u64,
    fields: Vec<FieldAcc>,
}

/// The groups of an aggregate being computed.
#[derive(Debug)]
pub(crate) struct Groups {
    fields: Vec<String>,
    groups: HashMap<String, Group>,
}

impl Groups {
    pub(crate) fn new(spec: &Aggregate) -> Groups {
        Groups {
            fields: spec.fields(),
            groups: HashMap::new(),
        }
    }

    /// The numeric paths, in the order of [`Groups::add_row`]'s figures.
    pub(crate) fn fields(&self) -> &[String] {
        &self.fields
    }

    fn group(&mut self, key: Value) -> Result<&mut Group> {
        let key = if key.is_null() { Value::Null } else { key };
        let text = key.to_string();
        if !self.groups.contains_key(&text) && self.groups.len() >= MAX_GROUPS {
            return Err(Error::InvalidSelector(format!(
                "an aggregate may have at most {MAX_GROUPS} groups; narrow it with where"
            )));
        }
        let width = self.fields.len();
        Ok(self.groups.entry(text).or_insert_with(|| Group {
            key,
            count: 0,
            fields: vec![FieldAcc::default(); width],
        }))
    }

    /// Counts one matching document (the reference meaning).
    pub(crate) fn add_doc(&mut self, group: Option<&str>, doc: &Document) -> Result<()> {
        let key = group
            .and_then(|path| value_at(doc, path))
            .cloned()
            .unwrap_or(Value::Null);
        let values: Vec<Option<Number>> = self
            .fields
            .iter()
            .map(|path| match value_at(doc, path) {
                Some(Value::Number(n)) => Some(n.clone()),
                _ => None,
            })
            .collect();
        let group = self.group(key)?;
        group.count += 1;
        for (acc, value) in group.fields.iter_mut().zip(values) {
            if let Some(n) = value {
                acc.add(&n);
            }
        }
        Ok(())
    }

    /// Adds a group's figures computed by SQL: its key, how many documents, and per numeric
    /// path (sum, how many numbers, min, max).
    pub(crate) fn add_row(&mut self, key: Value, count: u64, figures: Vec<Figures>) -> Result<()> {
        let group = self.group(key)?;
        group.count += count;
        for (acc, (sum, n, min, max)) in group.fields.iter_mut().zip(figures) {
            acc.merge(sum, n, min, max);
        }
        Ok(())
    }

    /// The groups as documents, sorted, skipped and limited as `spec` says.
    pub(crate) fn finish(mut self, spec: &Aggregate) -> Vec<Document> {
        if spec.group.is_none() && self.groups.is_empty() {
            // Without a group there is always the one row, of nothing when nothing matched.
            let width = self.fields.len();
            self.groups.insert(
                Value::Null.to_string(),
                Group {
                    key: Value::Null,
                    count: 0,
                    fields: vec![FieldAcc::default(); width],
                },
            );
        }
        let mut rows: Vec<Document> = self
            .groups
            .into_values()
            .map(|group| {
                let mut row = Map::new();
                row.insert("_id".into(), group.key);
                if spec.count {
                    row.insert("count".into(), Value::from(group.count));
                }
                let at = |path: &String| self.fields.iter().position(|f| f == path);
                for (ops, name) in [
                    (&spec.sum, "sum"),
                    (&spec.avg, "avg"),
                    (&spec.min, "min"),
                    (&spec.max, "max"),
                ] {
                    for path in ops {
                        let Some(acc) = at(path).and_then(|i| group.fields.get(i)) else {
                            continue;
                        };
                        let value = match name {
                            "sum" => acc.sum(),
                            "avg" => acc.avg(),
                            "min" => acc.min.clone().map_or(Value::Null, Value::Number),
                            _ => acc.max.clone().map_or(Value::Null, Value::Number),
                        };
                        row.insert(format!("{name}_{path}"), value);
                    }
                }
                row
            })
            .collect();
        match &spec.sort {
            Some(sort) => rows.sort_by(|a, b| {
                sort.compare(a, b)
                    .then_with(|| crate::compare_values(&a["_id"], &b["_id"]))
            }),
            None => rows.sort_by(|a, b| crate::compare_values(&a["_id"], &b["_id"])),
        }
        let skip = usize::try_from(spec.skip).unwrap_or(usize::MAX);
        let limit = spec
            .limit
            .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
        rows.into_iter().skip(skip).take(limit).collect()
    }
}

/// The aggregate over `docs` (the memory backend; a reference for the others in tests).
///
/// # Errors
/// Past [`MAX_GROUPS`] groups; a bad path.
pub(crate) fn over<'a>(
    spec: &Aggregate,
    docs: impl IntoIterator<Item = &'a Document>,
) -> Result<Vec<Document>> {
    spec.check()?;
    let mut groups = Groups::new(spec);
    for doc in docs {
        if spec.selector.matches(doc) {
            groups.add_doc(spec.group.as_deref(), doc)?;
        }
    }
    Ok(groups.finish(spec))
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
    fn groups_count_and_compute_numbers_only() {
        let docs: Vec<Document> = [
            json!({"s": "a", "n": 1, "x": {"y": 2.5}}),
            json!({"s": "a", "n": 3}),
            json!({"s": "b", "n": "not a number"}),
            json!({"n": 5}),
            json!({"s": null, "n": 7}),
        ]
        .into_iter()
        .map(doc)
        .collect();
        let spec = Aggregate {
            group: Some("s".into()),
            count: true,
            sum: vec!["n".into(), "x.y".into()],
            avg: vec!["n".into()],
            min: vec!["n".into()],
            max: vec!["n".into()],
            ..Aggregate::default()
        };
        let rows = over(&spec, &docs).unwrap();
        assert_eq!(
            Value::Array(rows.into_iter().map(Value::Object).collect()),
            json!([
                {"_id": null, "count": 2, "sum_n": 12, "sum_x.y": 0, "avg_n": 6.0, "min_n": 5, "max_n": 7},
                {"_id": "a", "count": 2, "sum_n": 4, "sum_x.y": 2.5, "avg_n": 2.0, "min_n": 1, "max_n": 3},
                {"_id": "b", "count": 1, "sum_n": 0, "sum_x.y": 0, "avg_n": null, "min_n": null, "max_n": null},
            ])
        );
    }

    #[test]
    fn sort_and_limit_apply_to_groups() {
        let docs: Vec<Document> = ["a", "b", "b", "c", "c", "c"]
            .into_iter()
            .map(|s| doc(json!({ "s": s })))
            .collect();
        let spec = Aggregate {
            group: Some("s".into()),
            count: true,
            sort: Some(Sort::parse_list("-count").unwrap()),
            limit: Some(2),
            ..Aggregate::default()
        };
        let rows = over(&spec, &docs).unwrap();
        let ids: Vec<&Value> = rows.iter().map(|r| &r["_id"]).collect();
        assert_eq!(ids, [&json!("c"), &json!("b")]);
    }

    #[test]
    fn paths_are_checked() {
        for bad in ["", "a..b", "a.0", "$x", "a b"] {
            assert!(check_path(bad).is_err(), "{bad}");
        }
        assert!(check_path("amount.net_total").is_ok());
    }
}
