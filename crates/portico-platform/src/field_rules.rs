//! Field-level read rules: which callers see which top-level fields of a collection's documents.
//!
//! A collection declares, per field, the rules a caller must pass to see it
//! (`salary = "role:hr"`, `notes = "owner:ownerId"`), in the rule words of the allow rules
//! (`anyone | authenticated | role:NAME | owner:FIELD | nobody`; any one passing is enough).
//! For one caller they become a [`FieldView`]: the fields hidden whatever the document, and
//! those shown only in documents the caller owns. The view is applied by the platform where
//! documents leave it (reads, publications, live events, write replies), so every door, stream
//! and batch reply shows the same projection; and it refuses the queries and writes that would
//! reveal a hidden field one question at a time (a filter or sort on it, a write to it).

use std::fmt;
use std::str::FromStr;

use portico_store::{Document, lookup_path};
use serde_json::Value;

use crate::{Error, Result};

/// One rule word: who may do something (see a field, or, in the `portico` config, make a kind
/// of client write). The words are `anyone | authenticated | role:NAME | owner:FIELD | nobody`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadRule {
    /// Every caller, logged in or not.
    Anyone,
    /// Every logged-in caller.
    Authenticated,
    /// Callers holding this role.
    Role(String),
    /// Logged-in callers whose id the document's field (a dotted path) holds. For a write rule
    /// the field itself may not be changed, so a document cannot be handed to someone else.
    Owner(String),
    /// No client (the server only).
    Nobody,
}

impl FromStr for ReadRule {
    type Err = String;

    /// Parses `anyone`, `authenticated`, `role:NAME`, `owner:FIELD` or `nobody`.
    fn from_str(s: &str) -> std::result::Result<ReadRule, String> {
        let s = s.trim();
        match s {
            "anyone" => return Ok(ReadRule::Anyone),
            "authenticated" => return Ok(ReadRule::Authenticated),
            "nobody" => return Ok(ReadRule::Nobody),
            _ => {}
        }
        if let Some((kind, arg)) = s.split_once(':') {
            let arg = arg.trim();
            let valid = !arg.is_empty() && !arg.chars().any(char::is_whitespace);
            match kind.trim() {
                "role" if valid => return Ok(ReadRule::Role(arg.to_owned())),
                "owner" if valid && !arg.starts_with('$') => {
                    return Ok(ReadRule::Owner(arg.to_owned()));
                }
                "role" => {
                    return Err(format!(
                        "`{s}`: `role:` needs a role name, as in `role:admin`"
                    ));
                }
                "owner" => {
                    return Err(format!(
                        "`{s}`: `owner:` needs a field name, as in `owner:ownerId`"
                    ));
                }
                _ => {}
            }
        }
        Err(format!(
            "`{s}` is not a rule; expected one of `anyone`, `authenticated`, `role:NAME`, `owner:FIELD`, `nobody`"
        ))
    }
}

impl fmt::Display for ReadRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadRule::Anyone => f.write_str("anyone"),
            ReadRule::Authenticated => f.write_str("authenticated"),
            ReadRule::Role(role) => write!(f, "role:{role}"),
            ReadRule::Owner(field) => write!(f, "owner:{field}"),
            ReadRule::Nobody => f.write_str("nobody"),
        }
    }
}

/// The read rules of a collection's fields: field -> rules (any one passing shows the field).
/// Fields are top-level names; a field without rules is shown to everyone who may read the
/// document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldRules {
    rules: Vec<(String, Vec<ReadRule>)>,
}

impl FieldRules {
    /// No rules: every field shown.
    pub fn new() -> FieldRules {
        FieldRules::default()
    }

    /// Adds the rules of `field` (a top-level name): a caller sees it when any of `rules`
    /// passes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `_id`, an empty, dotted or `$` name, no rules, or a
    /// field given twice.
    pub fn field(
        mut self,
        field: impl Into<String>,
        rules: impl IntoIterator<Item = ReadRule>,
    ) -> Result<FieldRules> {
        let field = field.into();
        if field.is_empty() || field == "_id" || field.contains('.') || field.starts_with('$') {
            return Err(Error::InvalidArgument(format!(
                "field rules: {field:?} cannot have read rules (a top-level field other than _id)"
            )));
        }
        let rules: Vec<ReadRule> = rules.into_iter().collect();
        if rules.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "field rules: {field:?} needs at least one rule"
            )));
        }
        if self.rules.iter().any(|(f, _)| *f == field) {
            return Err(Error::InvalidArgument(format!(
                "field rules: {field:?} is given twice"
            )));
        }
        self.rules.push((field, rules));
        Ok(self)
    }

    /// True when no field has rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The fields and their rules, in the order given.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[ReadRule])> {
        self.rules.iter().map(|(f, r)| (f.as_str(), r.as_slice()))
    }

    /// True when some rule depends on the caller's roles.
    pub(crate) fn needs_roles(&self) -> bool {
        self.rules
            .iter()
            .flat_map(|(_, r)| r)
            .any(|r| matches!(r, ReadRule::Role(_)))
    }

    /// The view of a caller with `user_id` holding `roles`.
    pub fn view(&self, user_id: Option<&str>, roles: &[String]) -> FieldView {
        let mut view = FieldView {
            user_id: user_id.map(str::to_owned),
            ..FieldView::default()
        };
        for (field, rules) in &self.rules {
            let mut owners = Vec::new();
            let mut shown = false;
            for rule in rules {
                match rule {
                    ReadRule::Anyone => shown = true,
                    ReadRule::Authenticated => shown |= user_id.is_some(),
                    ReadRule::Role(role) => shown |= roles.iter().any(|r| r == role),
                    ReadRule::Owner(path) if user_id.is_some() => owners.push(path.clone()),
                    ReadRule::Owner(_) | ReadRule::Nobody => {}
                }
            }
            if shown {
                continue;
            }
            if owners.is_empty() {
                view.hidden.push(field.clone());
            } else {
                view.owned.push((field.clone(), owners));
            }
        }
        view
    }
}

/// What one caller may see of a collection's documents (see [`FieldRules::view`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldView {
    user_id: Option<String>,
    /// Fields never shown to this caller.
    hidden: Vec<String>,
    /// Fields shown only in documents whose owner paths hold the caller's id.
    owned: Vec<(String, Vec<String>)>,
}

/// Whether `path` (a dotted query path) reaches into or above `field` (a top-level name).
fn touches(path: &str, field: &str) -> bool {
    path.split('.').next() == Some(field)
}

impl FieldView {
    /// The view that shows every field.
    pub fn all() -> FieldView {
        FieldView::default()
    }

    /// True when the caller sees every field of every document.
    pub fn is_empty(&self) -> bool {
        self.hidden.is_empty() && self.owned.is_empty()
    }

    /// The fields that may be hidden from this caller (in every document or in some).
    pub fn restricted(&self) -> impl Iterator<Item = &str> {
        self.hidden
            .iter()
            .map(String::as_str)
            .chain(self.owned.iter().map(|(f, _)| f.as_str()))
    }

    fn owns(&self, doc: &Document, paths: &[String]) -> bool {
        let Some(id) = &self.user_id else {
            return false;
        };
        paths.iter().any(|path| {
            lookup_path(doc, path)
                .iter()
                .any(|v| v.as_str() == Some(id.as_str()))
        })
    }

    /// Removes from `doc` the fields this caller may not see.
    pub fn apply(&self, doc: &mut Document) {
        if self.is_empty() {
            return;
        }
        let hide: Vec<&str> = self
            .owned
            .iter()
            .filter(|(_, owners)| !self.owns(doc, owners))
            .map(|(f, _)| f.as_str())
            .chain(self.hidden.iter().map(String::as_str))
            .collect();
        for field in hide {
            doc.shift_remove(field);
        }
    }

    /// `doc` as this caller may see it.
    pub fn applied(&self, mut doc: Document) -> Document {
        self.apply(&mut doc);
        doc
    }

    /// Refuses a query that filters, sorts, groups or aggregates on a field that may be
    /// hidden from this caller: its answer would reveal the field one question at a time.
    /// `paths` are the dotted paths the query names.
    ///
    /// # Errors
    /// [`Error::HiddenField`] naming the first such path.
    pub fn check_query<'a>(&self, paths: impl IntoIterator<Item = &'a str>) -> Result<()> {
        for path in paths {
            if self.restricted().any(|f| touches(path, f)) {
                return Err(Error::HiddenField(path.to_owned()));
            }
        }
        Ok(())
    }

    /// Refuses a write that sets or removes `fields` (top-level names or dotted paths) of a
    /// document (`owner_doc`: the stored document for a change, the new one for an insert)
    /// when one of them is hidden from this caller in that document.
    ///
    /// # Errors
    /// [`Error::FieldDenied`] naming the first such field.
    pub fn check_write<'a>(
        &self,
        owner_doc: &Document,
        fields: impl IntoIterator<Item = &'a str>,
    ) -> Result<()> {
        for path in fields {
            if self.hidden.iter().any(|f| touches(path, f)) {
                return Err(Error::FieldDenied(path.to_owned()));
            }
            let gated = self
                .owned
                .iter()
                .any(|(f, owners)| touches(path, f) && !self.owns(owner_doc, owners));
            if gated {
                return Err(Error::FieldDenied(path.to_owned()));
            }
        }
        Ok(())
    }

    /// The fields of `stored` hidden from this caller, to carry over into a replacement the
    /// caller sends without them (a caller cannot remove what it cannot see).
    pub fn hidden_of(&self, stored: &Document) -> Document {
        let mut kept = Document::new();
        for field in self.restricted() {
            if let Some(value) = stored.get(field) {
                let visible = self.applied(stored.clone()).contains_key(field);
                if !visible {
                    kept.insert(field.to_owned(), value.clone());
                }
            }
        }
        kept
    }

    /// A key telling views apart, for sharing live evaluations between callers who see the
    /// same (the caller's id only matters when some field depends on ownership).
    pub(crate) fn key(&self) -> String {
        if self.is_empty() {
            return String::new();
        }
        let user = if self.owned.is_empty() {
            ""
        } else {
            self.user_id.as_deref().unwrap_or("")
        };
        format!("{:?}|{:?}|{user}", self.hidden, self.owned)
    }
}

/// The roles of a user record (`roles`, an array of strings).
pub(crate) fn roles_of(user: &Document) -> Vec<String> {
    match user.get("roles") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
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

    fn rules() -> FieldRules {
        FieldRules::new()
            .field("salary", [ReadRule::Role("hr".into())])
            .and_then(|r| r.field("notes", [ReadRule::Owner("ownerId".into())]))
            .and_then(|r| r.field("secret", [ReadRule::Nobody]))
            .unwrap()
    }

    #[test]
    fn rule_words_parse_and_print() {
        for word in [
            "anyone",
            "authenticated",
            "role:hr",
            "owner:by.id",
            "nobody",
        ] {
            let rule: ReadRule = word.parse().unwrap();
            assert_eq!(rule.to_string(), word);
        }
        for bad in [
            "",
            "everyone",
            "role:",
            "owner:",
            "owner:$x",
            "admin:role",
            "role:a b",
        ] {
            assert!(bad.parse::<ReadRule>().is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_fields_are_refused() {
        for field in ["", "_id", "a.b", "$x"] {
            assert!(FieldRules::new().field(field, [ReadRule::Anyone]).is_err());
        }
        assert!(
            FieldRules::new()
                .field("a", Vec::<ReadRule>::new())
                .is_err()
        );
        assert!(rules().field("salary", [ReadRule::Anyone]).is_err());
    }

    #[test]
    fn views_hide_by_role_and_ownership() {
        let d = doc(
            json!({"_id": "1", "ownerId": "u1", "salary": 5, "notes": "n", "secret": 1, "x": 2}),
        );
        let hr = rules().view(Some("u1"), &["hr".into()]);
        assert_eq!(
            Value::Object(hr.applied(d.clone())),
            json!({"_id": "1", "ownerId": "u1", "salary": 5, "notes": "n", "x": 2})
        );
        let other = rules().view(Some("u2"), &[]);
        assert_eq!(
            Value::Object(other.applied(d.clone())),
            json!({"_id": "1", "ownerId": "u1", "x": 2})
        );
        let anonymous = rules().view(None, &[]);
        assert_eq!(
            Value::Object(anonymous.applied(d.clone())),
            json!({"_id": "1", "ownerId": "u1", "x": 2})
        );
        assert_eq!(
            Value::Object(other.hidden_of(&d)),
            json!({"salary": 5, "notes": "n", "secret": 1})
        );
    }

    #[test]
    fn queries_and_writes_on_hidden_fields_are_refused() {
        let view = rules().view(Some("u1"), &[]);
        assert!(view.check_query(["x", "ownerId"]).is_ok());
        for path in ["salary", "salary.currency", "notes", "secret"] {
            let err = view.check_query(["x", path]).unwrap_err();
            assert!(matches!(&err, Error::HiddenField(p) if p == path), "{err}");
            assert_eq!(err.status_code(), 400);
        }
        let own = doc(json!({"ownerId": "u1"}));
        let theirs = doc(json!({"ownerId": "u2"}));
        assert!(view.check_write(&own, ["notes", "x"]).is_ok());
        let err = view.check_write(&theirs, ["notes"]).unwrap_err();
        assert_eq!(err.status_code(), 403);
        assert!(view.check_write(&own, ["salary.amount"]).is_err());
        assert!(
            rules()
                .view(Some("u1"), &["hr".into()])
                .check_write(&theirs, ["salary"])
                .is_ok()
        );
    }

    #[test]
    fn keys_share_views_without_ownership() {
        let a = rules().view(Some("a"), &[]);
        let b = rules().view(Some("b"), &[]);
        assert_ne!(a.key(), b.key());
        let roles_only = FieldRules::new()
            .field("salary", [ReadRule::Role("hr".into())])
            .unwrap();
        assert_eq!(
            roles_only.view(Some("a"), &[]).key(),
            roles_only.view(Some("b"), &[]).key()
        );
        assert_eq!(FieldView::all().key(), "");
    }
}
