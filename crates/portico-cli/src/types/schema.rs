//! A small model of the types a client sees, read from JSON Schema and from a collection's
//! config, which [`super::typescript`] and [`super::python`] write out.

use serde_json::Value;

use super::CollectionShape;

/// How deep a schema is followed (nesting and `$ref`s); below that a value is `unknown`.
const MAX_DEPTH: usize = 24;

/// The name of the file metadata type (`{name, size, type, sha256, createdAt}`).
pub(super) const FILE_TYPE: &str = "PorticoFile";

/// A type, in terms both clients can write.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Ty {
    Unknown,
    Never,
    Null,
    Bool,
    Number,
    Integer,
    String,
    /// A JSON string, number, boolean or null literal.
    Literal(Value),
    Array(Box<Ty>),
    /// An object with these fields; `open` when other keys may be there too.
    Object {
        fields: Vec<Field>,
        open: bool,
    },
    Union(Vec<Ty>),
    /// A type written elsewhere in the same file (a collection's documents, the file type).
    Named(String),
}

/// A field of an object type.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Field {
    pub(super) name: String,
    pub(super) ty: Ty,
    pub(super) required: bool,
}

impl Field {
    fn new(name: &str, ty: Ty, required: bool) -> Field {
        Field {
            name: name.to_owned(),
            ty,
            required,
        }
    }
}

/// The type of values matching `schema` (`root` resolves local `$ref`s).
pub(super) fn from_schema(schema: &Value, root: &Value, depth: usize) -> Ty {
    if depth > MAX_DEPTH {
        return Ty::Unknown;
    }
    let object = match schema {
        Value::Bool(true) => return Ty::Unknown,
        Value::Bool(false) => return Ty::Never,
        Value::Object(o) => o,
        _ => return Ty::Unknown,
    };
    if let Some(target) = object.get("$ref").and_then(Value::as_str) {
        return match resolve(root, target) {
            Some(found) => from_schema(found, root, depth + 1),
            None => Ty::Unknown,
        };
    }
    if let Some(value) = object.get("const") {
        return literal(value);
    }
    if let Some(Value::Array(values)) = object.get("enum") {
        return union(values.iter().map(literal).collect());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = object.get(key) {
            return union(
                options
                    .iter()
                    .map(|o| from_schema(o, root, depth + 1))
                    .collect(),
            );
        }
    }
    match object.get("type") {
        Some(Value::String(name)) => of_type(name, schema, root, depth),
        Some(Value::Array(names)) => union(
            names
                .iter()
                .filter_map(Value::as_str)
                .map(|name| of_type(name, schema, root, depth))
                .collect(),
        ),
        _ if object.contains_key("properties") => of_type("object", schema, root, depth),
        _ => Ty::Unknown,
    }
}

fn of_type(name: &str, schema: &Value, root: &Value, depth: usize) -> Ty {
    match name {
        "string" => Ty::String,
        "integer" => Ty::Integer,
        "number" => Ty::Number,
        "boolean" => Ty::Bool,
        "null" => Ty::Null,
        "array" => Ty::Array(Box::new(
            schema
                .get("items")
                .map_or(Ty::Unknown, |items| from_schema(items, root, depth + 1)),
        )),
        "object" => object(schema, root, depth),
        _ => Ty::Unknown,
    }
}

fn object(schema: &Value, root: &Value, depth: usize) -> Ty {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fields: Vec<Field> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(name, s)| {
                    let ty = from_schema(s, root, depth + 1);
                    Field::new(name, ty, required.contains(&name.as_str()))
                })
                .collect()
        })
        .unwrap_or_default();
    let open = !matches!(schema.get("additionalProperties"), Some(Value::Bool(false)))
        && (fields.is_empty() || schema.get("additionalProperties").is_some());
    Ty::Object { fields, open }
}

/// A local reference (`#/$defs/name`, `#/definitions/name`, any JSON pointer into the schema).
fn resolve<'a>(root: &'a Value, target: &str) -> Option<&'a Value> {
    let pointer = target.strip_prefix('#')?;
    root.pointer(pointer)
}

fn literal(value: &Value) -> Ty {
    match value {
        Value::Null => Ty::Null,
        Value::Bool(_) | Value::Number(_) | Value::String(_) => Ty::Literal(value.clone()),
        _ => Ty::Unknown,
    }
}

fn union(mut options: Vec<Ty>) -> Ty {
    options.dedup();
    if options.contains(&Ty::Unknown) {
        return Ty::Unknown;
    }
    match options.len() {
        0 => Ty::Never,
        1 => options.remove(0),
        _ => Ty::Union(options),
    }
}

/// The documents of `collection` as a client reads them: `_id`, the schema's fields, the owner,
/// relation and file fields, the timestamps, and `expand` holding related documents (named by
/// `names`, the type names of the collections in the same file, looked up by `name_of`).
pub(super) fn document(
    collection: &CollectionShape,
    name_of: &dyn Fn(&str) -> Option<String>,
) -> Ty {
    let (mut fields, open) = match &collection.schema {
        Some(schema) => match from_schema(schema, schema, 0) {
            Ty::Object { fields, open } => (fields, open),
            _ => (Vec::new(), true),
        },
        None => (Vec::new(), true),
    };
    fields.retain(|f| f.name != "_id");
    fields.insert(0, Field::new("_id", Ty::String, true));
    fn set(fields: &mut Vec<Field>, name: &str, ty: Ty, required: bool) {
        match fields.iter_mut().find(|f| f.name == name) {
            Some(field) => field.ty = ty,
            None => fields.push(Field::new(name, ty, required)),
        }
    }
    if let Some(owner) = &collection.owner_field {
        set(&mut fields, owner, Ty::String, false);
    }
    for (field, many) in &collection.files {
        let file = Ty::Named(FILE_TYPE.to_owned());
        set(
            &mut fields,
            field,
            if *many {
                Ty::Array(Box::new(file))
            } else {
                file
            },
            false,
        );
    }
    if collection.timestamps {
        set(&mut fields, "createdAt", Ty::String, true);
        set(&mut fields, "updatedAt", Ty::String, true);
    }
    let mut expanded = Vec::new();
    for (field, target) in &collection.relations {
        let declared = fields
            .iter()
            .find(|f| &f.name == field)
            .map(|f| f.ty.clone());
        let ids = declared
            .clone()
            .unwrap_or_else(|| Ty::Union(vec![Ty::String, Ty::Array(Box::new(Ty::String))]));
        if declared.is_none() {
            set(&mut fields, field, ids.clone(), false);
        }
        let related = name_of(target).map_or(Ty::Unknown, Ty::Named);
        let ty = match ids {
            Ty::String => related,
            Ty::Array(_) => Ty::Array(Box::new(related)),
            _ => union(vec![related.clone(), Ty::Array(Box::new(related))]),
        };
        expanded.push(Field::new(field, ty, false));
    }
    if !expanded.is_empty() {
        fields.retain(|f| f.name != portico_platform::EXPAND_KEY);
        let expand = Ty::Object {
            fields: expanded,
            open: false,
        };
        fields.push(Field::new(portico_platform::EXPAND_KEY, expand, false));
    }
    Ty::Object { fields, open }
}

/// The file metadata type: what a file field holds.
pub(super) fn file_type() -> Ty {
    Ty::Object {
        fields: vec![
            Field::new("name", Ty::String, true),
            Field::new("size", Ty::Integer, true),
            Field::new("type", Ty::String, true),
            Field::new("sha256", Ty::String, true),
            Field::new("createdAt", Ty::String, true),
        ],
        open: false,
    }
}
