//! Modifiers (`$set`, `$inc`, ...) and whole-document replacement.
//!
//! An [`Update`] is parsed and validated once; applying it to a document can still fail on what
//! the document holds (`$inc` on a string, `$push` on a number), and then leaves it untouched.

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Number, Value};

use crate::number::add_numbers;

use crate::document::document_id;
use crate::selector::ElemCond;
use crate::value::{check_path, numeric_index, split_path, values_equal};
use crate::{Document, Error, IdKind, Result, Selector};

/// How far `$set` of `a.N` may grow an array past its end (filling with `null`), so one small
/// request cannot allocate without bound.
const MAX_ARRAY_PADDING: usize = 10_000;

/// A parsed update: either a modifier or a replacement document.
///
/// An update holds its values once: a replacement document is shared (not copied) by the
/// updates made from it ([`Update::with_replacement_fields`]), and the JSON form
/// ([`Update::to_value`]) is built only when asked for, except for modifiers that cannot be
/// rebuilt from their parsed form.
#[derive(Debug, Clone)]
pub struct Update {
    kind: Kind,
    source: OnceLock<Value>,
}

impl PartialEq for Update {
    fn eq(&self, other: &Update) -> bool {
        self.to_value() == other.to_value()
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// The document, and fields set over it (in order; an existing field keeps its place).
    Replace {
        doc: Arc<Document>,
        fields: Vec<(String, Value)>,
    },
    Modify(Vec<FieldOp>),
    /// `{"$set": fields}` made by [`Update::set`]: the fields as given (a dotted key is a
    /// nested path), not a list of changes, so a client body of many fields becomes an update
    /// without a second structure beside it (applied, it is what [`Update::parse`] makes of
    /// that JSON).
    Set(Document),
}

/// One field's change inside a modifier.
#[derive(Debug, Clone, PartialEq)]
struct FieldOp {
    path: String,
    parts: Vec<String>,
    action: Action,
}

#[derive(Debug, Clone, PartialEq)]
enum Action {
    Set(Value),
    Unset,
    Inc(Number),
    Push(Vec<Value>),
    AddToSet(Vec<Value>),
    Pull(ElemCond),
}

fn err(msg: impl Into<String>) -> Error {
    Error::InvalidModifier(msg.into())
}

impl Update {
    /// Parses an update. An object whose keys all start with `$` is a modifier; an object with no
    /// `$` key is a replacement; a mix is an error.
    ///
    /// # Errors
    /// [`crate::Error::InvalidModifier`] naming the problem.
    pub fn parse(value: &Value) -> Result<Update> {
        let Value::Object(m) = value else {
            return Err(err(format!("an update must be an object, not {value}")));
        };
        let dollar = m.keys().filter(|k| k.starts_with('$')).count();
        if dollar == 0 {
            return Update::replace(m.clone());
        }
        if dollar != m.len() {
            return Err(err(
                "an update mixes operators ($set, ...) and plain fields; use one or the other",
            ));
        }
        let mut ops = Vec::new();
        for (op, operand) in m {
            let Value::Object(fields) = operand else {
                return Err(err(format!(
                    "{op} needs an object of fields, not {operand}"
                )));
            };
            if fields.is_empty() {
                return Err(err(format!("{op} is empty")));
            }
            for (path, arg) in fields {
                let parts = split_path(path).map_err(|e| err(format!("{op}: {e}")))?;
                let action = parse_action(op, path, arg)?;
                if parts[0] == "_id" && !(parts.len() == 1 && matches!(action, Action::Set(_))) {
                    return Err(err(format!("{op} cannot change _id ({path:?})")));
                }
                ops.push(FieldOp {
                    path: path.clone(),
                    parts,
                    action,
                });
            }
        }
        check_conflicts(&ops)?;
        // A modifier of `$set`s only is rebuilt from its parts when asked for; any other is
        // kept as given (its arguments' forms, such as `$each`, are not all kept in the parts).
        let source = OnceLock::new();
        if !ops.iter().all(|op| matches!(op.action, Action::Set(_))) {
            let _ = source.set(value.clone());
        }
        Ok(Update {
            kind: Kind::Modify(ops),
            source,
        })
    }

    /// The modifier `{"$set": fields}`, where dotted keys are nested paths.
    ///
    /// # Errors
    /// [`crate::Error::InvalidModifier`] when a field name is not usable (empty, `$`-prefixed, `_id`).
    pub fn set(fields: Document) -> Result<Update> {
        if fields.is_empty() {
            return Err(err("$set is empty"));
        }
        // The fields are the update (nothing is copied or split into parts): checked here as
        // parsing checks each `$set` path.
        for path in fields.keys() {
            check_set_path(path)?;
        }
        check_set_conflicts(&fields)?;
        Ok(Update {
            kind: Kind::Set(fields),
            source: OnceLock::new(),
        })
    }

    /// A whole-document replacement (the stored `_id` is kept).
    ///
    /// # Errors
    /// [`crate::Error::InvalidModifier`] when a key starts with `$` or `_id` differs from the stored one.
    pub fn replace(doc: Document) -> Result<Update> {
        if let Some(key) = doc.keys().find(|k| k.starts_with('$') || k.is_empty()) {
            return Err(err(format!(
                "a replacement document cannot hold the field {key:?}"
            )));
        }
        if let Some(id) = doc.get("_id")
            && !id.is_string()
        {
            return Err(err(format!("_id must be a string, not {id}")));
        }
        Ok(Update {
            kind: Kind::Replace {
                doc: Arc::new(doc),
                fields: Vec::new(),
            },
            source: OnceLock::new(),
        })
    }

    /// This replacement with `fields` set over its document (an existing field keeps its
    /// place, a new one comes last), sharing the document rather than copying it; `None` for
    /// a modifier. For server-set fields such as timestamps.
    ///
    /// # Errors
    /// [`crate::Error::InvalidModifier`] for a field name a replacement cannot hold.
    pub fn with_replacement_fields(&self, fields: Vec<(String, Value)>) -> Result<Option<Update>> {
        let Kind::Replace { doc, fields: set } = &self.kind else {
            return Ok(None);
        };
        replaced(Arc::clone(doc), set.clone(), fields).map(Some)
    }

    /// This update with `fields` set: a replacement gets them over its document as
    /// [`Update::with_replacement_fields`] gives; a modifier gets them in its `$set` (a path it
    /// sets already takes the new value in its place, a new one comes after its other `$set`
    /// fields), as [`Update::parse`] gives for that JSON. Nothing the update holds is copied.
    /// For server-set fields such as timestamps.
    ///
    /// # Errors
    /// [`crate::Error::InvalidModifier`] for a field a replacement cannot hold, or a path that
    /// is unusable or conflicts with another change of the modifier (as parsing refuses it).
    pub fn with_set(self, fields: Vec<(String, Value)>) -> Result<Update> {
        let Update { kind, mut source } = self;
        // The JSON form, when it is kept, gains the fields in its `$set`.
        let mut keep = |path: &str, value: &Value| {
            if let Some(Value::Object(given)) = source.get_mut() {
                let set = given
                    .entry("$set")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(set) = set {
                    set.insert(path.to_owned(), value.clone());
                }
            }
        };
        let mut ops = match kind {
            Kind::Replace { doc, fields: set } => return replaced(doc, set, fields),
            Kind::Modify(ops) => ops,
            Kind::Set(mut set) => {
                for (path, value) in fields {
                    keep(&path, &value);
                    // A path it sets takes the new value in its place; a new one comes last.
                    if let Some(slot) = set.get_mut(&path) {
                        *slot = value;
                        continue;
                    }
                    check_set_path(&path)?;
                    set.insert(path, value);
                }
                check_set_conflicts(&set)?;
                return Ok(Update {
                    kind: Kind::Set(set),
                    source,
                });
            }
        };
        for (path, value) in fields {
            keep(&path, &value);
            if let Some(op) = ops
                .iter_mut()
                .find(|op| op.path == path && matches!(op.action, Action::Set(_)))
            {
                op.action = Action::Set(value);
                continue;
            }
            check_set_path(&path)?;
            let parts = split_path(&path).map_err(|e| err(format!("$set: {e}")))?;
            // Where parsing puts it: a modifier's `$set` fields are one run of its changes.
            let at = ops
                .iter()
                .rposition(|op| matches!(op.action, Action::Set(_)))
                .map_or(ops.len(), |last| last + 1);
            ops.insert(
                at,
                FieldOp {
                    path,
                    parts,
                    action: Action::Set(value),
                },
            );
        }
        check_conflicts(&ops)?;
        Ok(Update {
            kind: Kind::Modify(ops),
            source,
        })
    }

    /// True for a replacement, false for a modifier.
    pub fn is_replacement(&self) -> bool {
        matches!(self.kind, Kind::Replace { .. })
    }

    /// The update as JSON, as it was parsed or built (for allow/deny rules and logs). Built on
    /// first use for updates that do not keep it.
    pub fn to_value(&self) -> &Value {
        self.source.get_or_init(|| match &self.kind {
            Kind::Replace { .. } => Value::Object(
                self.replacement_entries()
                    .map(|(k, v)| (k.to_owned(), v.clone()))
                    .collect(),
            ),
            Kind::Modify(ops) => {
                let set: Map<String, Value> = ops
                    .iter()
                    .filter_map(|op| match &op.action {
                        Action::Set(v) => Some((op.path.clone(), v.clone())),
                        _ => None,
                    })
                    .collect();
                let mut source = Map::new();
                source.insert("$set".to_owned(), Value::Object(set));
                Value::Object(source)
            }
            Kind::Set(fields) => {
                let mut source = Map::new();
                source.insert("$set".to_owned(), Value::Object(fields.clone()));
                Value::Object(source)
            }
        })
    }

    /// A replacement's fields in order: its document's, with the fields set over it in their
    /// places, then the new ones. Empty for a modifier.
    fn replacement_entries(&self) -> impl Iterator<Item = (&str, &Value)> {
        let (doc, fields) = match &self.kind {
            Kind::Replace { doc, fields } => (Some(doc.as_ref()), fields.as_slice()),
            Kind::Modify(_) | Kind::Set(_) => (None, &[][..]),
        };
        let set_over = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        let own = doc
            .into_iter()
            .flatten()
            .map(move |(k, v)| (k.as_str(), set_over(k).unwrap_or(v)));
        let added = fields
            .iter()
            .filter(move |(k, _)| !doc.is_some_and(|d| d.contains_key(k)))
            .map(|(k, v)| (k.as_str(), v));
        own.chain(added)
    }

    /// The top-level field names the update may change (for allow/deny rules), sorted, no duplicates.
    ///
    /// For a replacement these are the fields it holds, apart from `_id`; a replacement also
    /// removes the fields of the stored document it does not hold, which the caller, who can
    /// see that document, must consider.
    pub fn field_names(&self) -> Vec<String> {
        let mut names: Vec<String> = match &self.kind {
            Kind::Replace { .. } => self
                .replacement_entries()
                .filter(|(k, _)| *k != "_id")
                .map(|(k, _)| k.to_owned())
                .collect(),
            Kind::Modify(ops) => ops.iter().map(|op| op.parts[0].clone()).collect(),
            Kind::Set(fields) => fields.keys().map(|path| top(path).to_owned()).collect(),
        };
        names.sort();
        names.dedup();
        names
    }

    /// Applies the update to `doc` in place. On error, `doc` is unchanged.
    ///
    /// # Errors
    /// [`crate::Error::InvalidModifier`]: `$inc` on a non-number, `$push` on a non-array, changing `_id`...
    pub fn apply(&self, doc: &mut Document) -> Result<()> {
        *doc = self.applied(doc)?;
        Ok(())
    }

    /// `doc` with the update applied, as a new document: a replacement is built from its own
    /// fields (only `_id` is taken from `doc`), a modifier is applied to one copy of `doc`.
    ///
    /// # Errors
    /// As [`Update::apply`].
    pub fn applied(&self, doc: &Document) -> Result<Document> {
        match &self.kind {
            Kind::Replace {
                doc: replacement, ..
            } => {
                let id = doc.get("_id").cloned();
                if let (Some(old), Some(new)) = (&id, replacement.get("_id"))
                    && !values_equal(old, new)
                {
                    return Err(err(format!(
                        "a replacement cannot change _id from {old} to {new}"
                    )));
                }
                // At its size: a document built by adding fields one by one grows by doubling.
                let mut out = Document::with_capacity(replacement.len() + 3);
                if let Some(id) = id.or_else(|| replacement.get("_id").cloned()) {
                    out.insert("_id".to_string(), id);
                }
                for (k, v) in self.replacement_entries() {
                    if k != "_id" {
                        out.insert(k.to_owned(), v.clone());
                    }
                }
                Ok(out)
            }
            Kind::Modify(ops) => {
                // Work on a copy so a failure half way leaves `doc` as it was.
                let mut work = doc.clone();
                for op in ops {
                    apply_op(&mut work, op, None)?;
                }
                Ok(work)
            }
            Kind::Set(fields) => {
                let mut work = doc.clone();
                for (path, value) in fields {
                    set_at(&mut work, path.clone(), value.clone())?;
                }
                Ok(work)
            }
        }
    }

    /// [`Update::applied`], moving the update's values into the new document instead of
    /// copying them (for the last document an update changes).
    ///
    /// # Errors
    /// As [`Update::apply`].
    pub(crate) fn into_applied(self, doc: &Document) -> Result<Document> {
        match self.kind {
            Kind::Modify(ops) => {
                let mut work = doc.clone();
                for mut op in ops {
                    // `_id` is compared, not moved (see `apply_op`).
                    let value = match &mut op.action {
                        Action::Set(v) if op.path != "_id" => Some(std::mem::take(v)),
                        _ => None,
                    };
                    apply_op(&mut work, &op, value)?;
                }
                Ok(work)
            }
            Kind::Set(fields) => {
                let mut work = doc.clone();
                // The keys and values move into the new document.
                for (path, value) in fields {
                    set_at(&mut work, path, value)?;
                }
                Ok(work)
            }
            kind @ Kind::Replace { .. } => Update {
                kind,
                source: self.source,
            }
            .applied(doc),
        }
    }

    /// The document an upsert inserts when nothing matches `selector`: the selector's equalities,
    /// then the update applied, with a new `_id` unless one is given.
    ///
    /// The `_id` comes from the selector's `_id` equality, else from the update (a replacement's
    /// `_id`, or `$set` of `_id`), else it is a new random id.
    ///
    /// # Errors
    /// As [`Update::apply`]; also when the selector's equalities cannot form a document
    /// (such as `{"a": 1, "a.b": 2}`).
    pub fn upsert_document(&self, selector: &Selector) -> Result<Document> {
        self.upsert_document_with_id_kind(selector, IdKind::Random)
    }

    /// As [`Update::upsert_document`], but a new `_id` (when neither the selector nor the update
    /// names one) is of `kind`, for collections of object ids.
    ///
    /// # Errors
    /// As [`Update::upsert_document`].
    pub fn upsert_document_with_id_kind(
        &self,
        selector: &Selector,
        kind: IdKind,
    ) -> Result<Document> {
        let id = selector
            .id_equality()
            .map(str::to_string)
            .or_else(|| self.given_id())
            .unwrap_or_else(|| kind.generate());
        let mut doc = Document::new();
        doc.insert("_id".to_string(), Value::String(id));
        if let Kind::Replace { .. } = self.kind {
            self.apply(&mut doc)?;
            return Ok(doc);
        }
        for (parts, value) in selector.upsert_fields() {
            if parts[0] == "_id" {
                continue;
            }
            let target = walk(&mut doc, parts, true).map_err(|e| {
                err(format!(
                    "cannot build the upsert document from the selector: {e}"
                ))
            })?;
            if let Some(mut target) = target {
                target
                    .set(&parts[parts.len() - 1], value.clone())
                    .map_err(|e| {
                        err(format!(
                            "cannot build the upsert document from the selector: {e}"
                        ))
                    })?;
            }
        }
        self.apply(&mut doc)?;
        Ok(doc)
    }

    /// The update applied to `old`, as a view that can be compared and encoded without
    /// building the new document: a replacement (the `_id` is `old`'s, or the replacement's),
    /// or an [`Update::set`] of top-level fields (`old`'s fields, those it sets taking its
    /// values, then its new ones); `None` for any other update. For a backend that only needs
    /// the new document's text.
    ///
    /// # Errors
    /// As [`Update::apply`]: a replacement that would change `_id`.
    pub(crate) fn view<'a>(&'a self, old: &'a Document) -> Option<Result<UpdatedView<'a>>> {
        let replacement = match &self.kind {
            Kind::Replace { doc, .. } => doc,
            Kind::Set(fields) if fields.keys().all(|path| !path.contains('.')) => {
                return Some(Ok(UpdatedView::Set { old, fields }));
            }
            Kind::Set(_) | Kind::Modify(_) => return None,
        };
        let id = old.get("_id");
        if let (Some(old_id), Some(new_id)) = (id, replacement.get("_id"))
            && !values_equal(old_id, new_id)
        {
            return Some(Err(err(format!(
                "a replacement cannot change _id from {old_id} to {new_id}"
            ))));
        }
        Some(Ok(UpdatedView::Replaced {
            id: id.or_else(|| replacement.get("_id")),
            update: self,
        }))
    }

    /// An `_id` the update itself names, for upserts.
    fn given_id(&self) -> Option<String> {
        match &self.kind {
            Kind::Replace { doc, .. } => doc.get("_id").and_then(Value::as_str).map(str::to_string),
            Kind::Modify(ops) => ops.iter().find_map(|op| match &op.action {
                Action::Set(Value::String(id)) if op.path == "_id" => Some(id.clone()),
                _ => None,
            }),
            // `Update::set` refuses `_id`.
            Kind::Set(_) => None,
        }
    }
}

/// An update applied to a document, not built: see [`Update::view`]. Encodes (with `serde`)
/// and compares as the document [`Update::apply`] would make.
pub(crate) enum UpdatedView<'a> {
    /// A replacement, with the new document's `_id`.
    Replaced {
        id: Option<&'a Value>,
        update: &'a Update,
    },
    /// Top-level fields set over `old`.
    Set {
        old: &'a Document,
        fields: &'a Document,
    },
}

impl UpdatedView<'_> {
    /// The fields of the new document, in order.
    fn entries(&self) -> Box<dyn Iterator<Item = (&str, &Value)> + '_> {
        match self {
            UpdatedView::Replaced { id, update } => Box::new(
                id.map(|id| ("_id", id))
                    .into_iter()
                    .chain(update.replacement_entries().filter(|(k, _)| *k != "_id")),
            ),
            UpdatedView::Set { old, fields } => Box::new(
                old.iter()
                    .map(|(k, v)| (k.as_str(), fields.get(k).unwrap_or(v)))
                    .chain(
                        fields
                            .iter()
                            .filter(|(k, _)| !old.contains_key(k.as_str()))
                            .map(|(k, v)| (k.as_str(), v)),
                    ),
            ),
        }
    }

    /// The new document's `_id`, when it is a string.
    pub(crate) fn id(&self) -> Option<&str> {
        match self {
            UpdatedView::Replaced { id, .. } => id.and_then(Value::as_str),
            UpdatedView::Set { old, .. } => document_id(old),
        }
    }

    /// Whether the new document equals `doc` (as documents compare: the same fields and
    /// values, in any order).
    pub(crate) fn equals(&self, doc: &Document) -> bool {
        let mut n = 0;
        for (key, value) in self.entries() {
            n += 1;
            if doc.get(key) != Some(value) {
                return false;
            }
        }
        n == doc.len()
    }
}

impl serde::Serialize for UpdatedView<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.entries() {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// The replacement of `doc` with the fields `set` over it, and `fields` set over those.
fn replaced(
    doc: Arc<Document>,
    mut set: Vec<(String, Value)>,
    fields: Vec<(String, Value)>,
) -> Result<Update> {
    if let Some((key, _)) = fields
        .iter()
        .find(|(k, _)| k.starts_with('$') || k.is_empty() || k == "_id")
    {
        return Err(err(format!(
            "a replacement cannot be given the field {key:?}"
        )));
    }
    for (key, value) in fields {
        match set.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => set.push((key, value)),
        }
    }
    Ok(Update {
        kind: Kind::Replace { doc, fields: set },
        source: OnceLock::new(),
    })
}

fn parse_action(op: &str, path: &str, arg: &Value) -> Result<Action> {
    Ok(match op {
        "$set" => Action::Set(arg.clone()),
        "$unset" => Action::Unset,
        "$inc" => match arg {
            Value::Number(n) => Action::Inc(n.clone()),
            other => {
                return Err(err(format!("$inc of {path:?} needs a number, not {other}")));
            }
        },
        "$push" => Action::Push(each_values(op, path, arg)?),
        "$addToSet" => Action::AddToSet(each_values(op, path, arg)?),
        "$pull" => Action::Pull(
            ElemCond::parse_pull(arg).map_err(|e| err(format!("$pull of {path:?}: {e}")))?,
        ),
        other => {
            return Err(err(format!(
                "unknown update operator {other} (supported: $set, $unset, $inc, $push, $pull, $addToSet)"
            )));
        }
    })
}

/// The values `$push`/`$addToSet` add: the argument, or the items of `{"$each": [...]}`.
fn each_values(op: &str, path: &str, arg: &Value) -> Result<Vec<Value>> {
    match arg {
        Value::Object(m) if m.keys().any(|k| k.starts_with('$')) => {
            if let Some(other) = m.keys().find(|k| *k != "$each") {
                return Err(err(format!(
                    "{op} of {path:?}: {other} is not supported (only $each)"
                )));
            }
            match m.get("$each") {
                Some(Value::Array(items)) => Ok(items.clone()),
                _ => Err(err(format!("{op} of {path:?}: $each needs an array"))),
            }
        }
        other => Ok(vec![other.clone()]),
    }
}

/// Refuses two changes to one path, or to a path and a path inside it (`a` and `a.b`).
///
/// The paths are sorted part by part: a path and every path inside it are then neighbours, so
/// an update of many fields costs `n log n` comparisons, not `n²`.
fn check_conflicts(ops: &[FieldOp]) -> Result<()> {
    let mut sorted: Vec<&FieldOp> = ops.iter().collect();
    sorted.sort_by(|a, b| a.parts.cmp(&b.parts));
    for pair in sorted.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let n = a.parts.len().min(b.parts.len());
        if a.parts[..n] == b.parts[..n] {
            // Named in the order the update gave them.
            let (first, second) = if ops.iter().position(|op| std::ptr::eq(op, a))
                < ops.iter().position(|op| std::ptr::eq(op, b))
            {
                (a, b)
            } else {
                (b, a)
            };
            return Err(err(format!(
                "conflicting changes to {:?} and {:?} in one update",
                first.path, second.path
            )));
        }
    }
    Ok(())
}

/// A path's first part.
fn top(path: &str) -> &str {
    path.split('.').next().unwrap_or(path)
}

/// Checks a `$set` path as [`Update::parse`] does: a usable path, not inside `_id`.
fn check_set_path(path: &str) -> Result<()> {
    check_path(path).map_err(|e| err(format!("$set: {e}")))?;
    if top(path) == "_id" {
        return Err(err(format!("$set cannot change _id ({path:?})")));
    }
    Ok(())
}

/// [`check_conflicts`] for the fields of [`Update::set`]. Their keys differ, so two conflict only
/// when one is a path inside the other (`a` and `a.b`): each key's leading parts are looked up,
/// with nothing built. When one conflicts, the error is the one the list of changes gives.
fn check_set_conflicts(fields: &Document) -> Result<()> {
    let inside = |path: &str| {
        path.match_indices('.')
            .any(|(at, _)| fields.contains_key(&path[..at]))
    };
    if !fields.keys().any(|path| inside(path)) {
        return Ok(());
    }
    let mut ops = Vec::with_capacity(fields.len());
    for path in fields.keys() {
        ops.push(FieldOp {
            path: path.clone(),
            parts: split_path(path).map_err(|e| err(format!("$set: {e}")))?,
            action: Action::Unset,
        });
    }
    check_conflicts(&ops)
}

/// Sets `value` at `path` of `doc` (one field of a `$set`, not `_id`), making objects on the
/// way, as [`apply_op`] does.
fn set_at(doc: &mut Document, path: String, value: Value) -> Result<()> {
    if !path.contains('.') {
        doc.insert(path, value);
        return Ok(());
    }
    let parts = split_path(&path).map_err(|e| err(format!("$set: {e}")))?;
    let target = walk(doc, &parts, true).map_err(|e| err(format!("{path:?}: {e}")))?;
    if let Some(mut target) = target {
        target
            .set(&parts[parts.len() - 1], value)
            .map_err(|e| err(format!("$set of {path:?}: {e}")))?;
    }
    Ok(())
}

/// The object or array that holds a path's last part.
enum Target<'a> {
    Object(&'a mut Map<String, Value>),
    Array(&'a mut Vec<Value>),
}

impl Target<'_> {
    fn get(&mut self, key: &str) -> Option<&mut Value> {
        match self {
            Target::Object(m) => m.get_mut(key),
            Target::Array(a) => numeric_index(key).and_then(|i| a.get_mut(i)),
        }
    }

    fn set(&mut self, key: &str, value: Value) -> std::result::Result<(), String> {
        match self {
            Target::Object(m) => {
                m.insert(key.to_string(), value);
                Ok(())
            }
            Target::Array(a) => {
                let i = array_index(a, key)?;
                if i >= a.len() {
                    a.resize(i + 1, Value::Null);
                }
                a[i] = value;
                Ok(())
            }
        }
    }

    fn unset(&mut self, key: &str) {
        match self {
            Target::Object(m) => {
                m.shift_remove(key);
            }
            // Removing an element would shift the others; like the reference platform, leave a null.
            Target::Array(a) => {
                if let Some(v) = numeric_index(key).and_then(|i| a.get_mut(i)) {
                    *v = Value::Null;
                }
            }
        }
    }
}

fn array_index(a: &[Value], key: &str) -> std::result::Result<usize, String> {
    let i = numeric_index(key)
        .ok_or_else(|| format!("cannot use the field name {key:?} in an array"))?;
    if i > a.len() + MAX_ARRAY_PADDING {
        return Err(format!(
            "index {i} is too far past the end of an array of {} elements",
            a.len()
        ));
    }
    Ok(i)
}

/// Walks to the container of `parts`' last part. With `create`, missing objects on the way are
/// made (and arrays padded); without, a missing step returns `Ok(None)`. A step into a scalar is
/// an error with `create`, and `Ok(None)` without.
fn walk<'a>(
    doc: &'a mut Document,
    parts: &[String],
    create: bool,
) -> std::result::Result<Option<Target<'a>>, String> {
    let mut cur = Target::Object(doc);
    let Some((_, inner)) = parts.split_last() else {
        return Ok(None);
    };
    for part in inner {
        let next: &mut Value = match cur {
            Target::Object(m) => {
                if create {
                    m.entry(part.clone())
                        .or_insert_with(|| Value::Object(Map::new()))
                } else {
                    match m.get_mut(part.as_str()) {
                        Some(v) => v,
                        None => return Ok(None),
                    }
                }
            }
            Target::Array(a) => {
                // Removing from a path that cannot exist is a no-op, as in the reference platform.
                if !create && numeric_index(part).is_none() {
                    return Ok(None);
                }
                let i = array_index(a, part)?;
                if i >= a.len() {
                    if !create {
                        return Ok(None);
                    }
                    a.resize(i + 1, Value::Null);
                    a[i] = Value::Object(Map::new());
                }
                &mut a[i]
            }
        };
        cur = match next {
            Value::Object(m) => Target::Object(m),
            Value::Array(a) => Target::Array(a),
            other if create => {
                return Err(format!(
                    "cannot create the field {part:?}.. inside the value {other}"
                ));
            }
            _ => return Ok(None),
        };
    }
    Ok(Some(cur))
}

/// Applies `op` to `doc`; a `$set` sets `value` when given (moved out of `op` by the caller),
/// else a copy of its own.
fn apply_op(doc: &mut Document, op: &FieldOp, value: Option<Value>) -> Result<()> {
    let path = &op.path;
    let last = &op.parts[op.parts.len() - 1];
    if path == "_id" {
        // Only `$set` reaches here (parse refuses the others): allowed when it changes nothing.
        if let Action::Set(v) = &op.action {
            return match doc.get("_id") {
                Some(old) if values_equal(old, v) => Ok(()),
                Some(old) => Err(err(format!("cannot change _id from {old} to {v}"))),
                None if v.is_string() => {
                    doc.insert("_id".to_string(), v.clone());
                    Ok(())
                }
                None => Err(err(format!("_id must be a string, not {v}"))),
            };
        }
    }
    let create = !matches!(op.action, Action::Unset | Action::Pull(_));
    let target = walk(doc, &op.parts, create).map_err(|e| err(format!("{path:?}: {e}")))?;
    let Some(mut target) = target else {
        return Ok(());
    };
    match &op.action {
        Action::Set(v) => target
            .set(last, value.unwrap_or_else(|| v.clone()))
            .map_err(|e| err(format!("$set of {path:?}: {e}")))?,
        Action::Unset => target.unset(last),
        Action::Inc(by) => {
            let new = match target.get(last) {
                None => Value::Number(by.clone()),
                Some(Value::Number(n)) => Value::Number(
                    add_numbers(n, by)
                        .ok_or_else(|| err(format!("$inc of {path:?} overflows ({n} + {by})")))?,
                ),
                Some(other) => {
                    return Err(err(format!(
                        "$inc of {path:?} needs a number there, found {other}"
                    )));
                }
            };
            target
                .set(last, new)
                .map_err(|e| err(format!("$inc of {path:?}: {e}")))?;
        }
        Action::Push(items) | Action::AddToSet(items) => {
            let add_to_set = matches!(op.action, Action::AddToSet(_));
            let name = if add_to_set { "$addToSet" } else { "$push" };
            match target.get(last) {
                Some(Value::Array(a)) => push_items(a, items, add_to_set),
                Some(other) => {
                    return Err(err(format!(
                        "{name} of {path:?} needs an array there, found {other}"
                    )));
                }
                None => {
                    let mut a = Vec::new();
                    push_items(&mut a, items, add_to_set);
                    target
                        .set(last, Value::Array(a))
                        .map_err(|e| err(format!("{name} of {path:?}: {e}")))?;
                }
            }
        }
        Action::Pull(cond) => match target.get(last) {
            Some(Value::Array(a)) => a.retain(|e| !cond.matches_element(e)),
            Some(other) => {
                return Err(err(format!(
                    "$pull of {path:?} needs an array there, found {other}"
                )));
            }
            None => {}
        },
    }
    Ok(())
}

fn push_items(a: &mut Vec<Value>, items: &[Value], add_to_set: bool) {
    for item in items {
        if !add_to_set || !a.iter().any(|e| values_equal(e, item)) {
            a.push(item.clone());
        }
    }
}

/// What an update did ([`crate::Store::update`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateResult {
    /// How many documents matched the selector (at most 1 unless `multi`).
    pub matched: u64,
    /// How many of those were actually changed.
    pub modified: u64,
    /// The `_id` of the inserted document, when the update was an upsert that inserted.
    pub upserted_id: Option<String>,
}

/// Applies `update` to the stored document `old` (whose `_id` is `id`), as every backend's
/// update and batch paths do: the new document and its JSON text, or `None` when the update
/// changes nothing.
///
/// # Errors
/// The modifier's own error, [`Error::InvalidModifier`] when the update would change `_id` or
/// the result cannot be encoded, [`Error::DocumentTooLarge`] past [`MAX_DOCUMENT_BYTES`].
pub(crate) fn apply_update(
    old: &Document,
    update: &Update,
    id: &str,
) -> Result<Option<(Document, String)>> {
    // One new document: a replacement is built from its own fields, a modifier applied to
    // one copy of `old`.
    changed(old, update.applied(old)?, id)
}

/// [`apply_update`] given the update, whose values move into the new document.
///
/// # Errors
/// As [`apply_update`].
pub(crate) fn apply_given_update(
    old: &Document,
    update: Update,
    id: &str,
) -> Result<Option<(Document, String)>> {
    changed(old, update.into_applied(old)?, id)
}

/// `new`, made from `old` (whose `_id` is `id`), with its text; `None` when it is `old`.
fn changed(old: &Document, new: Document, id: &str) -> Result<Option<(Document, String)>> {
    if document_id(&new) != Some(id) {
        return Err(Error::InvalidModifier(format!(
            "the update would change _id of document {id:?}"
        )));
    }
    if new == *old {
        return Ok(None);
    }
    let text = crate::document::encode(&new).map_err(|e| match e {
        Error::DocumentTooLarge { .. } => e,
        other => Error::InvalidModifier(other.to_string()),
    })?;
    Ok(Some((new, text)))
}

/// [`apply_update`] for a backend that needs only the new document's text (no index rows to
/// write): a replacement, or a `$set` of top-level fields made by [`Update::set`], is encoded
/// from the update and `old` without building the new document.
///
/// # Errors
/// As [`apply_update`].
pub(crate) fn apply_update_text(
    old: &Document,
    update: &Update,
    id: &str,
) -> Result<Option<String>> {
    let Some(view) = update.view(old) else {
        return Ok(apply_update(old, update, id)?.map(|(_, text)| text));
    };
    let view = view?;
    if view.id() != Some(id) {
        return Err(Error::InvalidModifier(format!(
            "the update would change _id of document {id:?}"
        )));
    }
    if view.equals(old) {
        return Ok(None);
    }
    crate::document::encode(&view)
        .map(Some)
        .map_err(|e| match e {
            Error::DocumentTooLarge { .. } => e,
            other => Error::InvalidModifier(other.to_string()),
        })
}

/// [`apply_update_text`] given the update: encoded from its view when it has one (the update
/// is dropped once the text is made), else a modifier's values move into the new document,
/// which is dropped once encoded.
///
/// # Errors
/// As [`apply_update`].
pub(crate) fn apply_given_update_text(
    old: &Document,
    update: Update,
    id: &str,
) -> Result<Option<String>> {
    if update.view(old).is_some() {
        return apply_update_text(old, &update, id);
    }
    Ok(apply_given_update(old, update, id)?.map(|(_, text)| text))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::document_id;

    fn doc(v: Value) -> Document {
        match v {
            Value::Object(m) => m,
            _ => Document::new(),
        }
    }

    fn upd(v: Value) -> Update {
        match Update::parse(&v) {
            Ok(u) => u,
            Err(e) => panic!("update {v} should parse: {e}"),
        }
    }

    /// `with_set` gives what parsing the modifier with those `$set` fields written in gives.
    #[test]
    fn with_set_is_parse_of_the_set_written_in() {
        let stamp = || vec![("updatedAt".to_owned(), json!("now"))];
        for (given, written) in [
            (
                json!({"$inc": {"n": 1}}),
                json!({"$inc": {"n": 1}, "$set": {"updatedAt": "now"}}),
            ),
            (
                json!({"$set": {"a": 1}, "$inc": {"n": 1}}),
                json!({"$set": {"a": 1, "updatedAt": "now"}, "$inc": {"n": 1}}),
            ),
            (
                json!({"$set": {"updatedAt": "forged", "b": 2}}),
                json!({"$set": {"updatedAt": "now", "b": 2}}),
            ),
            (
                json!({"$push": {"l": {"$each": [1, 2]}}}),
                json!({"$push": {"l": {"$each": [1, 2]}}, "$set": {"updatedAt": "now"}}),
            ),
        ] {
            let stamped = upd(given.clone())
                .with_set(stamp())
                .unwrap_or_else(|e| panic!("{given}: {e}"));
            let parsed = upd(written.clone());
            assert_eq!(stamped.to_value(), parsed.to_value(), "{given}");
            assert_eq!(stamped.field_names(), parsed.field_names(), "{given}");
            // Applied alike, new fields in the same order.
            let start = doc(json!({"_id": "x", "l": [], "z": 0}));
            let (a, b) = (stamped.applied(&start), parsed.applied(&start));
            let (a, b) = (
                a.unwrap_or_else(|e| panic!("{e}")),
                b.unwrap_or_else(|e| panic!("{e}")),
            );
            assert_eq!(
                a.keys().collect::<Vec<_>>(),
                b.keys().collect::<Vec<_>>(),
                "{given}"
            );
            assert_eq!(a, b, "{given}");
        }
        // Refused as parsing refuses it.
        for given in [
            json!({"$inc": {"updatedAt": 1}}),
            json!({"$unset": {"updatedAt.x": ""}}),
        ] {
            let written = {
                let mut w = given.clone();
                w["$set"] = json!({"updatedAt": "now"});
                w
            };
            let refused = upd(given.clone()).with_set(stamp());
            assert!(Update::parse(&written).is_err(), "{written}");
            assert!(
                matches!(refused, Err(Error::InvalidModifier(_))),
                "{given}: {refused:?}"
            );
        }
        // A replacement gets them over its document.
        let replacement = Update::replace(doc(json!({"a": 1, "updatedAt": "forged"})))
            .unwrap_or_else(|e| panic!("{e}"));
        let stamped = replacement
            .with_set(stamp())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stamped.to_value(), &json!({"a": 1, "updatedAt": "now"}));
    }

    /// `Update::set(fields)` (the fields kept as given) is what parsing `{"$set": fields}`
    /// gives: the same JSON, field names, new documents (fields in the same order), texts
    /// (encoded from the view or from the new document), stamped updates and errors.
    #[test]
    fn set_is_parse_of_its_fields() {
        let olds = [
            json!({"_id": "x"}),
            json!({"_id": "x", "a": 1, "b": {"c": [1, 2]}, "z": "keep"}),
            json!({"z": 0, "_id": "x", "b": 5, "a": 1}),
        ];
        for fields in [
            json!({"a": 1}),
            json!({"n": 2, "a": 1, "m": {"deep": [true]}}),
            json!({"a": 1, "z": "keep"}),
            json!({"b.c": 7, "new": null}),
            json!({"b.c.1": "two", "a": {"x": 1}}),
            json!({"q.r.s": 1, "a": 2}),
            // Not applicable to every old document (`b` is 5 in the last one).
            json!({"b.d": 1}),
            // Refused: conflicts, `_id`, unusable paths.
            json!({"a": 1, "a.b": 2}),
            json!({"x.y.z": 1, "k": 0, "x.y": 2, "x": 3}),
            json!({"_id": "y"}),
            json!({"a": 1, "_id.x": 1}),
            json!({"a..b": 1}),
            json!({"a.$b": 1}),
            json!({"": 1}),
            json!({}),
        ] {
            let made = Update::set(doc(fields.clone()));
            let parsed = Update::parse(&json!({"$set": fields.clone()}));
            let (made, parsed) = match (made, parsed) {
                (Ok(m), Ok(p)) => (m, p),
                (Err(m), Err(p)) => {
                    // `{"$set": {}}` is refused as "$set is empty" both ways.
                    assert_eq!(m.to_string(), p.to_string(), "{fields}");
                    continue;
                }
                // `set` refuses any `_id` (a client body cannot name it), as it always did;
                // parsing allows `$set` of an unchanged `_id`.
                (Err(m), Ok(_)) if fields.as_object().is_some_and(|f| f.contains_key("_id")) => {
                    assert_eq!(
                        m.to_string(),
                        r#"invalid modifier: $set cannot change _id ("_id")"#
                    );
                    continue;
                }
                (m, p) => panic!("{fields}: {m:?} / {p:?}"),
            };
            assert_eq!(made.to_value(), parsed.to_value(), "{fields}");
            assert_eq!(made.field_names(), parsed.field_names(), "{fields}");
            let stamp = vec![
                ("updatedAt".to_owned(), json!("now")),
                ("a".to_owned(), json!("stamped")),
            ];
            let (made_stamped, parsed_stamped) = (
                made.clone().with_set(stamp.clone()),
                parsed.clone().with_set(stamp),
            );
            match (&made_stamped, &parsed_stamped) {
                (Ok(m), Ok(p)) => assert_eq!(m.to_value(), p.to_value(), "{fields}"),
                (Err(m), Err(p)) => assert_eq!(m.to_string(), p.to_string(), "{fields}"),
                (m, p) => panic!("{fields} stamped: {m:?} / {p:?}"),
            }
            for old in &olds {
                let old = doc(old.clone());
                let want = parsed.applied(&old);
                let got = made.applied(&old);
                let given = made.clone().into_applied(&old);
                match (&want, &got, &given) {
                    (Ok(w), Ok(g), Ok(v)) => {
                        let order = |d: &Document| d.keys().cloned().collect::<Vec<_>>();
                        assert_eq!((g, order(g)), (w, order(w)), "{fields} on {old:?}");
                        assert_eq!((v, order(v)), (w, order(w)), "{fields} on {old:?}");
                    }
                    (Err(w), Err(g), Err(v)) => {
                        assert_eq!(g.to_string(), w.to_string(), "{fields} on {old:?}");
                        assert_eq!(v.to_string(), w.to_string(), "{fields} on {old:?}");
                    }
                    other => panic!("{fields} on {old:?}: {other:?}"),
                }
                // The text, made without the new document or with it, given or borrowed.
                let texts = [
                    apply_update_text(&old, &parsed, "x"),
                    apply_update_text(&old, &made, "x"),
                    apply_given_update_text(&old, made.clone(), "x"),
                    apply_update(&old, &made, "x").map(|o| o.map(|(_, text)| text)),
                ];
                let first = format!("{:?}", texts[0]);
                for text in &texts {
                    assert_eq!(format!("{text:?}"), first, "{fields} on {old:?}");
                }
                if let Ok(Some(text)) = &texts[0] {
                    let want = want.as_ref().map(|w| crate::document::encode(w).ok());
                    assert_eq!(want.ok().flatten().as_ref(), Some(text));
                }
                // Unchanged: no text.
                if want.as_ref().is_ok_and(|w| *w == old) {
                    assert!(matches!(texts[0], Ok(None)), "{fields} on {old:?}");
                }
            }
        }
        // The view is used for top-level fields only.
        let old = doc(json!({"_id": "x"}));
        assert!(upd(json!({"$set": {"a": 1}})).view(&old).is_none());
        let top = Update::set(doc(json!({"a": 1}))).unwrap_or_else(|e| panic!("{e}"));
        assert!(top.view(&old).is_some());
        let nested = Update::set(doc(json!({"a.b": 1}))).unwrap_or_else(|e| panic!("{e}"));
        assert!(nested.view(&old).is_none());
    }

    fn applied(u: Value, d: Value) -> Result<Value> {
        let mut d = doc(d);
        upd(u).apply(&mut d)?;
        Ok(Value::Object(d))
    }

    #[test]
    fn set_unset_inc() {
        assert_eq!(
            applied(
                json!({"$set": {"a.b.c": 1, "x": 2}}),
                json!({"_id": "i", "x": 1})
            )
            .ok(),
            Some(json!({"_id": "i", "x": 2, "a": {"b": {"c": 1}}}))
        );
        assert_eq!(
            applied(
                json!({"$unset": {"a": "", "z.q": 1}}),
                json!({"_id": "i", "a": 1, "b": 2})
            )
            .ok(),
            Some(json!({"_id": "i", "b": 2}))
        );
        assert_eq!(
            applied(
                json!({"$inc": {"n": 2, "m": 1.5, "k": -1}}),
                json!({"n": 1, "m": 1})
            )
            .ok(),
            Some(json!({"n": 3, "m": 2.5, "k": -1}))
        );
        assert_eq!(
            applied(json!({"$set": {"a.1": 9}}), json!({"a": [1, 2, 3]})).ok(),
            Some(json!({"a": [1, 9, 3]}))
        );
        assert_eq!(
            applied(json!({"$set": {"a.3": 9}}), json!({"a": [1]})).ok(),
            Some(json!({"a": [1, null, null, 9]}))
        );
        assert_eq!(
            applied(json!({"$unset": {"a.0": 1}}), json!({"a": [1, 2]})).ok(),
            Some(json!({"a": [null, 2]}))
        );
        // Paths that cannot exist: nothing to remove.
        assert_eq!(
            applied(
                json!({"$unset": {"a.b.c": 1, "s.t": 1}, "$pull": {"a.x.y": 1}}),
                json!({"a": [{"b": {"c": 1}}], "s": 5})
            )
            .ok(),
            Some(json!({"a": [{"b": {"c": 1}}], "s": 5}))
        );
        assert!(applied(json!({"$set": {"a.b": 1}}), json!({"a": [1]})).is_err());
        assert!(applied(json!({"$inc": {"a.b": 1}}), json!({"a": []})).is_err());
    }

    #[test]
    fn arrays() {
        assert_eq!(
            applied(
                json!({"$push": {"a": 3, "b": {"$each": [1, 2]}}}),
                json!({"a": [1]})
            )
            .ok(),
            Some(json!({"a": [1, 3], "b": [1, 2]}))
        );
        assert_eq!(
            applied(
                json!({"$addToSet": {"a": {"$each": [1, 2, 2.0]}}}),
                json!({"a": [1]})
            )
            .ok(),
            Some(json!({"a": [1, 2]}))
        );
        assert_eq!(
            applied(
                json!({"$pull": {"a": 1, "b": {"$gt": 2}, "c": {"x": 1}}}),
                json!({"a": [1, 2, 1], "b": [1, 5, 3], "c": [{"x": 1, "y": 2}, {"x": 2}, 7]})
            )
            .ok(),
            Some(json!({"a": [2], "b": [1], "c": [{"x": 2}, 7]}))
        );
    }

    #[test]
    fn replacement_keeps_id() {
        assert_eq!(
            applied(json!({"b": 2}), json!({"_id": "i", "a": 1})).ok(),
            Some(json!({"_id": "i", "b": 2}))
        );
        assert!(applied(json!({"_id": "j", "b": 2}), json!({"_id": "i"})).is_err());
        assert!(upd(json!({"b": 1})).is_replacement());
    }

    #[test]
    fn errors_leave_the_document_alone() {
        let original = json!({"_id": "i", "s": "x", "n": 1, "a": 5});
        for u in [
            json!({"$set": {"n": 2}, "$inc": {"s": 1}}),
            json!({"$set": {"n": 2}, "$push": {"s": 1}}),
            json!({"$set": {"n": 2}, "$addToSet": {"a": 1}}),
            json!({"$set": {"n": 2}, "$pull": {"a": 1}}),
            json!({"$set": {"_id": "j"}}),
            json!({"$set": {"a.b": 1}}),
        ] {
            let mut d = doc(original.clone());
            assert!(
                matches!(upd(u.clone()).apply(&mut d), Err(Error::InvalidModifier(_))),
                "{u}"
            );
            assert_eq!(Value::Object(d), original, "{u}");
        }
        assert!(applied(json!({"$set": {"_id": "i"}}), original.clone()).is_ok());
    }

    #[test]
    fn invalid_modifiers() {
        for bad in [
            json!({"$foo": {"a": 1}}),
            json!({"$set": {"a": 1}, "b": 2}),
            json!({"$set": 5}),
            json!({"$set": {}}),
            json!({"$set": {"": 1}}),
            json!({"$set": {"a.$": 1}}),
            json!({"$inc": {"a": "1"}}),
            json!({"$unset": {"_id": 1}}),
            json!({"$set": {"a": 1}, "$inc": {"a": 1}}),
            json!({"$set": {"a": 1, "a.b": 1}}),
            json!({"$push": {"a": {"$each": 1}}}),
            json!({"$push": {"a": {"$slice": 1}}}),
            json!({"$pull": {"a": {"$bad": 1}}}),
            json!({"$set_": 1}),
            json!([1]),
        ] {
            assert!(
                matches!(Update::parse(&bad), Err(Error::InvalidModifier(_))),
                "{bad}"
            );
        }
        assert!(Update::replace(doc(json!({"$x": 1}))).is_err());
        assert!(Update::set(doc(json!({"_id": "x"}))).is_err());
    }

    #[test]
    fn field_names_and_upsert() {
        let u = upd(json!({"$set": {"b.c": 1, "a": 1}, "$inc": {"b.d": 1}}));
        assert_eq!(u.field_names(), ["a", "b"]);
        let s = Selector::parse(&json!({"k": "v", "p.q": 1, "n": {"$gt": 1}})).unwrap_or_default();
        let d = upd(json!({"$inc": {"c": 1}}))
            .upsert_document(&s)
            .unwrap_or_default();
        assert_eq!(d.get("k"), Some(&json!("v")));
        assert_eq!(d.get("p"), Some(&json!({"q": 1})));
        assert_eq!(d.get("c"), Some(&json!(1)));
        assert!(d.get("n").is_none());
        let s = Selector::by_id("given");
        let d = upd(json!({"x": 1})).upsert_document(&s).unwrap_or_default();
        assert_eq!(Value::Object(d), json!({"_id": "given", "x": 1}));
        let d = upd(json!({"$inc": {"n": 1}}))
            .upsert_document_with_id_kind(&Selector::all(), IdKind::ObjectId)
            .unwrap_or_default();
        assert!(IdKind::ObjectId.is_valid(document_id(&d).unwrap_or_default()));
        let d = upd(json!({"$set": {"_id": "mine", "x": 1}}))
            .upsert_document(&Selector::all())
            .unwrap_or_default();
        assert_eq!(d.get("_id"), Some(&json!("mine")));
        let set = Update::set(doc(json!({"a.b": 1}))).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.to_value(), &json!({"$set": {"a.b": 1}}));
    }

    #[test]
    fn inc_overflow_falls_back_or_fails() {
        assert_eq!(
            applied(json!({"$inc": {"n": 1}}), json!({"n": i64::MAX})).ok(),
            Some(json!({"n": (i64::MAX as u64) + 1}))
        );
        assert!(applied(json!({"$inc": {"n": 1e308}}), json!({"n": 1e308})).is_err());
    }
}
