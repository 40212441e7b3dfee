//! Mongo-style selectors.
//!
//! A selector is parsed and validated once ([`Selector::parse`]); matching ([`Selector::matches`])
//! cannot fail. The matcher here is the reference meaning of a selector for every backend: a
//! database backend may narrow its candidates with [`Selector::id_equality`] and
//! [`Selector::equalities`], but each document it returns has passed [`Selector::matches`].

use std::cmp::Ordering;

use serde_json::{Map, Value};

use crate::value::{Branch, any_expanded, compare_values, lookup_branches, split_path, type_rank};
use crate::{Document, Error, Result};

static NULL: Value = Value::Null;

/// A parsed, validated selector. The default selector matches every document.
///
/// # Semantics
///
/// - A dotted path reaches every value along it: through an array, each object element is
///   searched (`{"a.b": 1}` matches `{"a": [{"b": 1}]}`), and a numeric part also indexes
///   (`{"a.0.b": 1}`). A value found at the end that is an array is matched as a whole and
///   element by element (`{"tags": "x"}` matches `{"tags": ["x", "y"]}`).
/// - Equality is by value across number representations (`1 == 1.0`); objects are equal only
///   with the same fields in the same order. `null` matches a missing field too.
/// - `$gt $gte $lt $lte` compare only values of the same type bracket (see
///   [`crate::compare_values`]): `{"n": {"$gt": 1}}` never matches a string.
/// - Several operators on one field are each satisfied on their own: `{"$gt": 1, "$lt": 3}`
///   matches `[0, 5]`; use `$elemMatch` to require one element to satisfy all of them.
/// - `$size` and `$elemMatch` apply to the array found at the path, not to arrays nested in it.
/// - `$ne`, `$nin` and `{"$exists": false}` are the negations of `$eq`, `$in` and
///   `{"$exists": true}`: `{"a.b": {"$ne": 1}}` refuses `{"a": [{"b": 1}, {"b": 2}]}`.
/// - `$regex` uses the `regex` crate's syntax (no look-around or back-references) with the
///   options `i`, `m`, `s`, `x`; a pattern it cannot compile is an invalid selector.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selector {
    clauses: Vec<Clause>,
}

/// One top-level condition of a selector; a document must satisfy all of them.
#[derive(Debug, Clone, PartialEq)]
enum Clause {
    /// Conditions on the values at a dotted path.
    Field {
        path: String,
        parts: Vec<String>,
        conds: Vec<Cond>,
    },
    And(Vec<Selector>),
    Or(Vec<Selector>),
    Nor(Vec<Selector>),
    /// The whole document has this [`crate::etag`] (not expressible in JSON; see
    /// [`Selector::and_etag`]).
    Etag(String),
}

/// A condition on the values a path reaches.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cond {
    Eq(Value),
    Ne(Value),
    Cmp(CmpOp, Value),
    In(Vec<Value>),
    Nin(Vec<Value>),
    Exists(bool),
    /// Every item must hold (items are `Eq` or `ElemMatch`); an empty `$all` matches nothing.
    All(Vec<Cond>),
    Size(usize),
    ElemMatch(ElemCond),
    Not(Vec<Cond>),
    Regex(Pattern),
}

/// A condition on one dotted path that every matching document satisfies (see
/// [`Selector::narrowing`]).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Narrowing<'a> {
    /// The path's parts.
    pub(crate) parts: &'a [String],
    /// What some value the path reaches (an array element on the way or at the end included)
    /// satisfies.
    pub(crate) narrow: Narrow<'a>,
}

/// The conditions of [`Narrowing`]; operands are scalars (string, number, bool), never `null`.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
#[derive(Debug, Clone, Copy)]
pub(crate) enum Narrow<'a> {
    /// Equal to the scalar (numbers by value).
    Eq(&'a Value),
    /// In the range; the operand is a number or a string, compared within its type.
    Cmp(CmpOp, &'a Value),
    /// Equal to one of the scalars.
    In(&'a [Value]),
    /// The path reaches some value (`null` included).
    Exists,
}

/// `$gt`, `$gte`, `$lt`, `$lte`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Gt,
    Gte,
    Lt,
    Lte,
}

impl CmpOp {
    fn holds(self, o: Ordering) -> bool {
        match self {
            CmpOp::Gt => o == Ordering::Greater,
            CmpOp::Gte => o != Ordering::Less,
            CmpOp::Lt => o == Ordering::Less,
            CmpOp::Lte => o != Ordering::Greater,
        }
    }
}

/// A condition on one array element (`$elemMatch`, `$pull`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ElemCond {
    /// The element is an object matching this selector.
    Doc(Selector),
    /// The element itself (not its own elements) satisfies every condition.
    Value(Vec<Cond>),
}

impl ElemCond {
    /// Parses the condition of `$pull`: an operator object is a condition on the element, a plain
    /// object a selector on object elements, anything else equality with the element.
    pub(crate) fn parse_pull(value: &Value) -> std::result::Result<ElemCond, String> {
        match value {
            Value::Object(m) if !m.is_empty() => parse_elem_match(m),
            other => Ok(ElemCond::Value(vec![Cond::Eq(other.clone())])),
        }
    }

    /// True when `element` satisfies the condition.
    pub(crate) fn matches_element(&self, element: &Value) -> bool {
        match self {
            ElemCond::Doc(sel) => match element {
                Value::Object(m) => sel.matches(m),
                _ => false,
            },
            ElemCond::Value(conds) => {
                let branches = [Branch {
                    value: Some(element),
                    dont_iterate: true,
                }];
                conds.iter().all(|c| c.matches(&branches))
            }
        }
    }
}

/// A compiled `$regex` with its `$options`; equal when source and options are equal.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    source: String,
    options: String,
    regex: regex::Regex,
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source && self.options == other.options
    }
}

impl Pattern {
    fn new(source: &str, options: &str) -> std::result::Result<Pattern, String> {
        let mut builder = regex::RegexBuilder::new(source);
        for c in options.chars() {
            match c {
                'i' => builder.case_insensitive(true),
                'm' => builder.multi_line(true),
                's' => builder.dot_matches_new_line(true),
                'x' => builder.ignore_whitespace(true),
                other => return Err(format!("unknown $regex option {other:?} (use i, m, s, x)")),
            };
        }
        // A generous but finite size: a client's pattern must not exhaust memory.
        builder.size_limit(1 << 20);
        let regex = builder
            .build()
            .map_err(|e| format!("bad $regex {source:?}: {e}"))?;
        Ok(Pattern {
            source: source.to_string(),
            options: options.to_string(),
            regex,
        })
    }
}

fn err(msg: impl Into<String>) -> Error {
    Error::InvalidSelector(msg.into())
}

/// One field condition of a selector's conjunction: `(path, split path, condition)`.
pub(crate) type FieldCond<'a> = (&'a str, &'a [String], &'a Cond);

impl Selector {
    /// Parses a selector from JSON (an object). A string is shorthand for `{"_id": string}`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidSelector`] naming the problem (unknown operator, bad operand...).
    pub fn parse(value: &Value) -> Result<Selector> {
        match value {
            Value::String(id) => Ok(Selector::by_id(id)),
            Value::Object(m) => parse_document(m).map_err(err),
            other => Err(err(format!(
                "a selector must be an object or an id string, not {}",
                type_name(other)
            ))),
        }
    }

    /// The selector that matches every document.
    pub fn all() -> Selector {
        Selector::default()
    }

    /// The selector `{"_id": id}`.
    pub fn by_id(id: &str) -> Selector {
        Selector {
            clauses: vec![Clause::Field {
                path: "_id".to_string(),
                parts: vec!["_id".to_string()],
                conds: vec![Cond::Eq(Value::String(id.to_string()))],
            }],
        }
    }

    /// Documents both this selector and `other` match.
    pub fn and(mut self, other: Selector) -> Selector {
        self.clauses.extend(other.clauses);
        self
    }

    /// This selector, further requiring the whole document to have the entity tag `etag`
    /// (see [`crate::etag`]). Every backend checks selectors with the reference matcher inside
    /// the write's transaction, so an update or remove with such a selector happens only if the
    /// document is unchanged since the tag was read: a conditional write, with no lost update.
    pub fn and_etag(mut self, etag: impl Into<String>) -> Selector {
        self.clauses.push(Clause::Etag(etag.into()));
        self
    }

    /// True when the selector has no condition and so matches every document.
    pub fn is_all(&self) -> bool {
        self.clauses.is_empty()
    }

    /// True when `doc` matches. This is the reference meaning of a selector for every backend.
    pub fn matches(&self, doc: &Document) -> bool {
        self.clauses.iter().all(|c| c.matches(doc))
    }

    /// When the selector requires `_id` to equal one string, that string (for fast paths).
    pub fn id_equality(&self) -> Option<&str> {
        for clause in &self.clauses {
            match clause {
                Clause::Field { path, conds, .. } if path == "_id" => {
                    for c in conds {
                        if let Cond::Eq(Value::String(id)) = c {
                            return Some(id);
                        }
                    }
                }
                Clause::And(subs) => {
                    if let Some(id) = subs.iter().find_map(Selector::id_equality) {
                        return Some(id);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// When the selector requires `_id` to be one of a list of strings (`{"_id": {"$in":
    /// [...]}}`, also inside `$and`), those strings: a backend reads those rows by primary key
    /// instead of scanning (the related documents of a page, see the platform's `expand`).
    pub fn id_set(&self) -> Option<Vec<&str>> {
        for clause in &self.clauses {
            match clause {
                Clause::Field { path, conds, .. } if path == "_id" => {
                    for c in conds {
                        if let Cond::In(values) = c
                            && let Some(ids) = values.iter().map(Value::as_str).collect()
                        {
                            return Some(ids);
                        }
                    }
                }
                Clause::And(subs) => {
                    if let Some(ids) = subs.iter().find_map(Selector::id_set) {
                        return Some(ids);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// The selector as SQL can decide it exactly, when it is only equalities of top-level
    /// fields with strings (`$and` included): `(field, string)` pairs that every matching
    /// document satisfies and that together decide a match (a field equals the string, or
    /// holds it as an array element). `Some(empty)` for a selector matching everything;
    /// `None` for anything else (the matcher must decide).
    pub(crate) fn sql_equalities(&self) -> Option<Vec<(&str, &str)>> {
        let mut out = Vec::new();
        for clause in &self.clauses {
            match clause {
                Clause::Field { path, parts, conds } if parts.len() == 1 && conds.len() == 1 => {
                    match &conds[0] {
                        Cond::Eq(Value::String(s)) => out.push((path.as_str(), s.as_str())),
                        _ => return None,
                    }
                }
                Clause::And(subs) => {
                    for sub in subs {
                        out.extend(sub.sql_equalities()?);
                    }
                }
                _ => return None,
            }
        }
        Some(out)
    }

    /// Top-level conditions of the form `path == scalar` (scalar: string, number or bool) that
    /// every matching document satisfies; backends use them to narrow candidates by index.
    ///
    /// "Satisfies" is meant in the selector's sense: some value the path reaches (an element of
    /// an array on the way or at the end included) equals the scalar, and numbers are equal by
    /// value (`1 == 1.0`). Equality with `null` is left out because it also matches documents
    /// where the path is missing, which an index does not list.
    pub fn equalities(&self) -> Vec<(&str, &Value)> {
        let mut out = Vec::new();
        self.collect_equalities(&mut out);
        out
    }

    fn collect_equalities<'a>(&'a self, out: &mut Vec<(&'a str, &'a Value)>) {
        for clause in &self.clauses {
            match clause {
                Clause::Field { path, conds, .. } => {
                    for c in conds {
                        if let Cond::Eq(
                            v @ (Value::String(_) | Value::Number(_) | Value::Bool(_)),
                        ) = c
                        {
                            out.push((path.as_str(), v));
                        }
                    }
                }
                Clause::And(subs) => {
                    for s in subs {
                        s.collect_equalities(out);
                    }
                }
                Clause::Or(_) | Clause::Nor(_) | Clause::Etag(_) => {}
            }
        }
    }

    /// Top-level `{path: {"$size": n}}` conditions (`$and` included) that every matching
    /// document satisfies: the array at `path` has exactly `n` elements. A backend can check them
    /// on the stored text without building the document.
    pub(crate) fn sizes(&self) -> Vec<(&str, usize)> {
        let mut out = Vec::new();
        self.collect_sizes(&mut out);
        out
    }

    fn collect_sizes<'a>(&'a self, out: &mut Vec<(&'a str, usize)>) {
        for clause in &self.clauses {
            match clause {
                Clause::Field { path, conds, .. } => {
                    for c in conds {
                        if let Cond::Size(n) = c {
                            out.push((path.as_str(), *n));
                        }
                    }
                }
                Clause::And(subs) => subs.iter().for_each(|s| s.collect_sizes(out)),
                Clause::Or(_) | Clause::Nor(_) | Clause::Etag(_) => {}
            }
        }
    }

    /// Top-level (or `$and`) conditions that every matching document satisfies and that a
    /// database can check on its own to narrow candidates: equality with a scalar, a range on a
    /// number or string, `$in` a list of scalars, `{"$exists": true}`. A backend may translate
    /// any subset of them; the reference matcher still decides every document.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn narrowing(&self) -> Vec<Narrowing<'_>> {
        let mut out = Vec::new();
        self.collect_narrowing(&mut out);
        out
    }

    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    fn collect_narrowing<'a>(&'a self, out: &mut Vec<Narrowing<'a>>) {
        let scalar = |v: &Value| matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_));
        for clause in &self.clauses {
            match clause {
                Clause::Field { parts, conds, .. } => {
                    for c in conds {
                        let narrow = match c {
                            Cond::Eq(v) if scalar(v) => Narrow::Eq(v),
                            Cond::Cmp(op, v @ (Value::String(_) | Value::Number(_))) => {
                                Narrow::Cmp(*op, v)
                            }
                            Cond::In(list) if !list.is_empty() && list.iter().all(scalar) => {
                                Narrow::In(list)
                            }
                            Cond::Exists(true) => Narrow::Exists,
                            _ => continue,
                        };
                        out.push(Narrowing { parts, narrow });
                    }
                }
                Clause::And(subs) => {
                    for s in subs {
                        s.collect_narrowing(out);
                    }
                }
                Clause::Or(_) | Clause::Nor(_) | Clause::Etag(_) => {}
            }
        }
    }

    /// The conditions every matching document satisfies, as `(path, split path, condition)`
    /// for each top-level (or `$and`) field condition, and whether the selector requires
    /// anything else (`$or`, `$nor`, an entity tag): what an index plan may translate (see
    /// `index_plan.rs`).
    pub(crate) fn conjunction(&self) -> (Vec<FieldCond<'_>>, bool) {
        let mut out = Vec::new();
        let other = self.collect_conjunction(&mut out);
        (out, other)
    }

    fn collect_conjunction<'a>(&'a self, out: &mut Vec<FieldCond<'a>>) -> bool {
        let mut other = false;
        for clause in &self.clauses {
            match clause {
                Clause::Field { path, parts, conds } => {
                    out.extend(conds.iter().map(|c| (path.as_str(), parts.as_slice(), c)));
                }
                Clause::And(subs) => {
                    for s in subs {
                        other |= s.collect_conjunction(out);
                    }
                }
                Clause::Or(_) | Clause::Nor(_) | Clause::Etag(_) => other = true,
            }
        }
        other
    }

    /// The equality conditions an upsert copies into the document it inserts: `(path parts,
    /// value)` for every top-level (or `$and`) equality, whatever the value's type.
    pub(crate) fn upsert_fields(&self) -> Vec<(&[String], &Value)> {
        let mut out = Vec::new();
        self.collect_upsert_fields(&mut out);
        out
    }

    fn collect_upsert_fields<'a>(&'a self, out: &mut Vec<(&'a [String], &'a Value)>) {
        for clause in &self.clauses {
            match clause {
                Clause::Field { parts, conds, .. } => {
                    for c in conds {
                        if let Cond::Eq(v) = c {
                            out.push((parts.as_slice(), v));
                        }
                    }
                }
                Clause::And(subs) => {
                    for s in subs {
                        s.collect_upsert_fields(out);
                    }
                }
                Clause::Or(_) | Clause::Nor(_) | Clause::Etag(_) => {}
            }
        }
    }
}

impl Clause {
    fn matches(&self, doc: &Document) -> bool {
        match self {
            // A top-level field has exactly one branch: skip the general lookup's allocation.
            Clause::Field { parts, conds, .. } if parts.len() == 1 => {
                let branches = [Branch {
                    value: doc.get(parts[0].as_str()),
                    dont_iterate: false,
                }];
                conds.iter().all(|c| c.matches(&branches))
            }
            Clause::Field { parts, conds, .. } => {
                let branches = lookup_branches(doc, parts, false);
                conds.iter().all(|c| c.matches(&branches))
            }
            Clause::And(subs) => subs.iter().all(|s| s.matches(doc)),
            Clause::Or(subs) => subs.iter().any(|s| s.matches(doc)),
            Clause::Nor(subs) => !subs.iter().any(|s| s.matches(doc)),
            Clause::Etag(tag) => crate::etag(doc) == *tag,
        }
    }
}

/// Equality of a value a path reached (`None`: missing) with an operand; missing equals `null`.
fn eq_operand(found: Option<&Value>, operand: &Value) -> bool {
    compare_values(found.unwrap_or(&NULL), operand) == Ordering::Equal
}

impl Cond {
    /// The operator's name (`$eq`, `$gt`...), for a query's shape in logs.
    pub(crate) fn operator(&self) -> &'static str {
        match self {
            Cond::Eq(_) => "$eq",
            Cond::Ne(_) => "$ne",
            Cond::Cmp(CmpOp::Gt, _) => "$gt",
            Cond::Cmp(CmpOp::Gte, _) => "$gte",
            Cond::Cmp(CmpOp::Lt, _) => "$lt",
            Cond::Cmp(CmpOp::Lte, _) => "$lte",
            Cond::In(_) => "$in",
            Cond::Nin(_) => "$nin",
            Cond::Exists(_) => "$exists",
            Cond::All(_) => "$all",
            Cond::Size(_) => "$size",
            Cond::ElemMatch(_) => "$elemMatch",
            Cond::Not(_) => "$not",
            Cond::Regex(_) => "$regex",
        }
    }

    fn matches(&self, branches: &[Branch<'_>]) -> bool {
        match self {
            Cond::Eq(v) => any_expanded(branches, |x| eq_operand(x, v)),
            Cond::Ne(v) => !any_expanded(branches, |x| eq_operand(x, v)),
            Cond::Cmp(op, v) => any_expanded(branches, |x| {
                let x = x.unwrap_or(&NULL);
                type_rank(x) == type_rank(v) && op.holds(compare_values(x, v))
            }),
            Cond::In(list) => any_expanded(branches, |x| list.iter().any(|v| eq_operand(x, v))),
            Cond::Nin(list) => !any_expanded(branches, |x| list.iter().any(|v| eq_operand(x, v))),
            Cond::Exists(want) => branches.iter().any(|b| b.value.is_some()) == *want,
            Cond::All(items) => !items.is_empty() && items.iter().all(|c| c.matches(branches)),
            Cond::Size(n) => branches
                .iter()
                .any(|b| matches!(b.value, Some(Value::Array(a)) if a.len() == *n)),
            Cond::ElemMatch(ec) => branches.iter().any(|b| match b.value {
                Some(Value::Array(a)) => a.iter().any(|e| ec.matches_element(e)),
                _ => false,
            }),
            Cond::Not(conds) => !conds.iter().all(|c| c.matches(branches)),
            Cond::Regex(p) => any_expanded(branches, |x| match x {
                Some(Value::String(s)) => p.regex.is_match(s),
                _ => false,
            }),
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

type ParseResult<T> = std::result::Result<T, String>;

fn parse_document(m: &Map<String, Value>) -> ParseResult<Selector> {
    let mut clauses = Vec::with_capacity(m.len());
    for (key, value) in m {
        if let Some(op) = key.strip_prefix('$') {
            let subs = match op {
                "and" | "or" | "nor" => parse_selector_list(key, value)?,
                "where" | "text" | "expr" | "jsonSchema" | "comment" => {
                    return Err(format!("the operator {key} is not supported"));
                }
                _ => return Err(format!("unknown top-level operator {key}")),
            };
            clauses.push(match op {
                "and" => Clause::And(subs),
                "or" => Clause::Or(subs),
                _ => Clause::Nor(subs),
            });
        } else {
            let parts = split_path(key)?;
            let conds = parse_field_value(key, value)?;
            clauses.push(Clause::Field {
                path: key.clone(),
                parts,
                conds,
            });
        }
    }
    Ok(Selector { clauses })
}

fn parse_selector_list(key: &str, value: &Value) -> ParseResult<Vec<Selector>> {
    let Value::Array(items) = value else {
        return Err(format!(
            "{key} needs an array of selectors, not {}",
            type_name(value)
        ));
    };
    if items.is_empty() {
        return Err(format!("{key} needs a non-empty array of selectors"));
    }
    items
        .iter()
        .map(|item| match item {
            Value::Object(m) => parse_document(m),
            other => Err(format!(
                "{key} needs an array of selector objects, found {}",
                type_name(other)
            )),
        })
        .collect()
}

fn is_operator_object(m: &Map<String, Value>) -> bool {
    m.keys().any(|k| k.starts_with('$'))
}

/// The conditions a field's value in a selector stands for: equality, or an operator object.
fn parse_field_value(path: &str, value: &Value) -> ParseResult<Vec<Cond>> {
    match value {
        Value::Object(m) if is_operator_object(m) => parse_operators(path, m),
        other => Ok(vec![Cond::Eq(other.clone())]),
    }
}

fn parse_operators(path: &str, m: &Map<String, Value>) -> ParseResult<Vec<Cond>> {
    if let Some(plain) = m.keys().find(|k| !k.starts_with('$')) {
        return Err(format!(
            "cannot mix operators and field {plain:?} in the condition on {path:?}"
        ));
    }
    let options = match m.get("$options") {
        None => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(other) => {
            return Err(format!(
                "$options on {path:?} must be a string, not {}",
                type_name(other)
            ));
        }
    };
    if options.is_some() && !m.contains_key("$regex") {
        return Err(format!("$options on {path:?} needs a $regex"));
    }
    let mut conds = Vec::with_capacity(m.len());
    for (op, operand) in m {
        if op == "$options" {
            continue;
        }
        conds.push(parse_operator(path, op, operand, options.unwrap_or(""))?);
    }
    Ok(conds)
}

fn parse_operator(path: &str, op: &str, operand: &Value, options: &str) -> ParseResult<Cond> {
    let cond = match op {
        "$eq" => Cond::Eq(operand.clone()),
        "$ne" => Cond::Ne(operand.clone()),
        "$gt" => Cond::Cmp(CmpOp::Gt, operand.clone()),
        "$gte" => Cond::Cmp(CmpOp::Gte, operand.clone()),
        "$lt" => Cond::Cmp(CmpOp::Lt, operand.clone()),
        "$lte" => Cond::Cmp(CmpOp::Lte, operand.clone()),
        "$in" | "$nin" => {
            let list = plain_array(path, op, operand)?;
            if op == "$in" {
                Cond::In(list)
            } else {
                Cond::Nin(list)
            }
        }
        "$exists" => Cond::Exists(exists_operand(path, operand)?),
        "$all" => Cond::All(all_items(path, operand)?),
        "$size" => Cond::Size(size_operand(path, operand)?),
        "$elemMatch" => match operand {
            Value::Object(m) => Cond::ElemMatch(parse_elem_match(m)?),
            other => {
                return Err(format!(
                    "$elemMatch on {path:?} needs an object, not {}",
                    type_name(other)
                ));
            }
        },
        "$not" => match operand {
            Value::Object(m) if !m.is_empty() && is_operator_object(m) => {
                Cond::Not(parse_operators(path, m)?)
            }
            _ => {
                return Err(format!(
                    "$not on {path:?} needs an operator object such as {{\"$gt\": 1}}"
                ));
            }
        },
        "$regex" => match operand {
            Value::String(source) => Cond::Regex(Pattern::new(source, options)?),
            other => {
                return Err(format!(
                    "$regex on {path:?} needs a string, not {}",
                    type_name(other)
                ));
            }
        },
        _ => {
            return Err(format!(
                "unknown operator {op} in the condition on {path:?}"
            ));
        }
    };
    Ok(cond)
}

/// `$exists`: true or false (a number counts as its truth).
fn exists_operand(path: &str, operand: &Value) -> ParseResult<bool> {
    match operand {
        Value::Bool(b) => Ok(*b),
        Value::Number(n) => Ok(n.as_f64().is_some_and(|f| f != 0.0)),
        other => Err(format!(
            "$exists on {path:?} needs true or false, not {}",
            type_name(other)
        )),
    }
}

/// `$all`: values, or `{"$elemMatch": ...}` objects.
fn all_items(path: &str, operand: &Value) -> ParseResult<Vec<Cond>> {
    let Value::Array(items) = operand else {
        return Err(format!(
            "$all on {path:?} needs an array, not {}",
            type_name(operand)
        ));
    };
    items
        .iter()
        .map(|item| match item {
            Value::Object(m) if is_operator_object(m) => match m.get("$elemMatch") {
                Some(Value::Object(inner)) if m.len() == 1 => {
                    parse_elem_match(inner).map(Cond::ElemMatch)
                }
                _ => Err(format!(
                    "$all on {path:?} takes values or {{\"$elemMatch\": ...}} objects only"
                )),
            },
            other => Ok(Cond::Eq(other.clone())),
        })
        .collect()
}

/// `$size`: a non-negative integer (a float without a fraction counts).
fn size_operand(path: &str, operand: &Value) -> ParseResult<usize> {
    let n = match operand {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f <= u32::MAX as f64)
                .map(|f| f as u64)
        }),
        _ => None,
    };
    n.and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("$size on {path:?} needs a non-negative integer, not {operand}"))
}

fn plain_array(path: &str, op: &str, operand: &Value) -> ParseResult<Vec<Value>> {
    let Value::Array(items) = operand else {
        return Err(format!(
            "{op} on {path:?} needs an array, not {}",
            type_name(operand)
        ));
    };
    if let Some(bad) = items
        .iter()
        .find(|v| matches!(v, Value::Object(m) if is_operator_object(m)))
    {
        return Err(format!(
            "{op} on {path:?} takes plain values, not operators ({bad})"
        ));
    }
    Ok(items.clone())
}

/// `$elemMatch`'s operand: operators (apart from `$and`/`$or`/`$nor`) make it a condition on the
/// element itself; otherwise it is a selector on object elements.
fn parse_elem_match(m: &Map<String, Value>) -> ParseResult<ElemCond> {
    let value_ops = m
        .keys()
        .any(|k| k.starts_with('$') && !matches!(k.as_str(), "$and" | "$or" | "$nor"));
    if value_ops {
        Ok(ElemCond::Value(parse_operators("$elemMatch", m)?))
    } else {
        Ok(ElemCond::Doc(parse_document(m)?))
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

    fn sel(v: Value) -> Selector {
        match Selector::parse(&v) {
            Ok(s) => s,
            Err(e) => panic!("selector {v} should parse: {e}"),
        }
    }

    fn m(s: Value, d: Value) -> bool {
        sel(s).matches(&doc(d))
    }

    #[test]
    fn equality_and_arrays() {
        assert!(m(json!({"a": 1}), json!({"a": 1})));
        assert!(m(json!({"a": 1}), json!({"a": 1.0})));
        assert!(!m(json!({"a": 1}), json!({"a": "1"})));
        assert!(m(json!({"a": 1}), json!({"a": [3, 1]})));
        assert!(m(json!({"a": [3, 1]}), json!({"a": [3, 1]})));
        assert!(!m(json!({"a": [1, 3]}), json!({"a": [3, 1]})));
        assert!(m(json!({"a": [1]}), json!({"a": [[1], 2]})));
        assert!(m(json!({"a.b": 2}), json!({"a": [{"b": 1}, {"b": 2}]})));
        assert!(m(json!({"a.1": 5}), json!({"a": [4, 5]})));
        assert!(m(json!({"a.b": {"c": 1}}), json!({"a": {"b": {"c": 1}}})));
        assert!(!m(
            json!({"a.b": {"c": 1}}),
            json!({"a": {"b": {"c": 1, "d": 2}}})
        ));
        assert!(!m(json!({"a.0": 1}), json!({"a": [[1]]})));
    }

    #[test]
    fn null_matches_missing() {
        assert!(m(json!({"a": null}), json!({})));
        assert!(m(json!({"a": null}), json!({"a": null})));
        assert!(!m(json!({"a": null}), json!({"a": 0})));
        assert!(m(json!({"a.b": null}), json!({"a": [{"b": 1}, {}]})));
        assert!(!m(json!({"a": {"$ne": null}}), json!({"b": 1})));
    }

    #[test]
    fn comparisons_are_type_bracketed() {
        assert!(m(json!({"a": {"$gt": 1}}), json!({"a": 2})));
        assert!(!m(json!({"a": {"$gt": 1}}), json!({"a": "2"})));
        assert!(!m(json!({"a": {"$gt": "a"}}), json!({"a": 5})));
        assert!(m(json!({"a": {"$gt": 1, "$lt": 3}}), json!({"a": [0, 5]})));
        assert!(m(json!({"a": {"$lte": "b"}}), json!({"a": "abc"})));
        assert!(m(json!({"a": {"$gte": null}}), json!({})));
        assert!(!m(json!({"a": {"$gt": null}}), json!({})));
    }

    #[test]
    fn set_operators() {
        assert!(m(json!({"a": {"$in": [1, 2]}}), json!({"a": 2})));
        assert!(m(json!({"a": {"$in": [null]}}), json!({})));
        assert!(!m(json!({"a": {"$nin": [1, 2]}}), json!({"a": [2, 3]})));
        assert!(m(json!({"a": {"$all": [1, 2]}}), json!({"a": [2, 3, 1]})));
        assert!(!m(json!({"a": {"$all": []}}), json!({"a": [1]})));
        assert!(m(json!({"a": {"$size": 2}}), json!({"a": [1, 2]})));
        assert!(!m(json!({"a": {"$size": 1}}), json!({"a": 1})));
        assert!(m(json!({"a": {"$exists": true}}), json!({"a": null})));
        assert!(m(
            json!({"a.b": {"$exists": false}}),
            json!({"a": [{"c": 1}]})
        ));
    }

    #[test]
    fn elem_match_not_regex_logic() {
        let d = json!({"a": [{"b": 1, "c": 2}, {"b": 2, "c": 1}], "s": "Hello"});
        assert!(m(json!({"a": {"$elemMatch": {"b": 1, "c": 2}}}), d.clone()));
        assert!(!m(
            json!({"a": {"$elemMatch": {"b": 1, "c": 1}}}),
            d.clone()
        ));
        assert!(m(
            json!({"n": {"$elemMatch": {"$gt": 2, "$lt": 4}}}),
            json!({"n": [1, 3]})
        ));
        assert!(!m(
            json!({"n": {"$elemMatch": {"$gt": 2, "$lt": 3}}}),
            json!({"n": [1, 5]})
        ));
        assert!(m(
            json!({"s": {"$regex": "^hel", "$options": "i"}}),
            d.clone()
        ));
        assert!(!m(json!({"s": {"$regex": "^hel"}}), d.clone()));
        assert!(m(json!({"s": {"$not": {"$regex": "^x"}}}), d.clone()));
        assert!(m(json!({"$or": [{"s": "x"}, {"a.b": 2}]}), d.clone()));
        assert!(!m(json!({"$nor": [{"s": "x"}, {"a.b": 2}]}), d.clone()));
        assert!(m(json!({"$and": [{"s": "Hello"}, {"a.c": 1}]}), d));
    }

    #[test]
    fn invalid_selectors_are_errors() {
        for bad in [
            json!({"a": {"$foo": 1}}),
            json!({"$foo": []}),
            json!({"a": {"$in": 1}}),
            json!({"a": {"$size": -1}}),
            json!({"a": {"$size": "2"}}),
            json!({"a": {"$regex": "("}}),
            json!({"a": {"$regex": "a", "$options": "q"}}),
            json!({"a": {"$options": "i"}}),
            json!({"a": {"$gt": 1, "b": 2}}),
            json!({"a": {"$not": 5}}),
            json!({"$or": []}),
            json!({"$and": {}}),
            json!({"": 1}),
            json!({"a..b": 1}),
            json!({"$where": "1"}),
            json!(5),
        ] {
            match Selector::parse(&bad) {
                Err(Error::InvalidSelector(msg)) => assert!(!msg.is_empty()),
                other => panic!("{bad} should be invalid, got {other:?}"),
            }
        }
    }

    #[test]
    fn narrowing_helpers() {
        let s =
            sel(json!({"_id": "x", "a": 1, "b": null, "$and": [{"c": "z"}], "$or": [{"d": 1}]}));
        assert_eq!(s.id_equality(), Some("x"));
        let eqs = s.equalities();
        assert_eq!(
            eqs,
            vec![("_id", &json!("x")), ("a", &json!(1)), ("c", &json!("z"))]
        );
        assert_eq!(sel(json!({"_id": {"$eq": "y"}})).id_equality(), Some("y"));
        assert_eq!(sel(json!({"_id": {"$ne": "y"}})).id_equality(), None);
        assert_eq!(
            Selector::parse(&json!("q")).ok(),
            Some(Selector::by_id("q"))
        );
        assert!(Selector::all().matches(&doc(json!({"a": 1}))));
    }
}
