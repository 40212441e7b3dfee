//! `portico types --python`: a module of `TypedDict`s for the Python client
//! (`portico_client`), one per collection, with the method, publication and route names.
//!
//! A collection without a JSON Schema takes any field: its type is `dict[str, Any]`.
//! `_id`, `createdAt` and `updatedAt` are not required (the server writes them, and `create`
//! takes the document type `list` gives). Every `TypedDict` is written in the functional form, so any field name works (`_id`,
//! `created-by`, `class`); nested objects are `dict[str, Any]`.

use std::fmt::Write as _;

use super::schema::{FILE_TYPE, Field, Ty, document, file_type};
use super::{AppShape, CollectionShape, name_lookup, type_names};

/// The module describing `shape` for the Python client, as a `.py` file's text.
pub fn python(shape: &AppShape, source: &str) -> String {
    let mut reserved = vec![FILE_TYPE];
    reserved.extend(["Any", "Literal", "NotRequired", "Required", "TypedDict"]);
    reserved.extend(["COLLECTIONS", "METHODS", "PUBLICATIONS", "ROUTES"]);
    let names = type_names(shape, &reserved);
    let name_of = name_lookup(shape, &names);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\"\"\"The types of the app in {}, for the Python client `portico_client`.\n\n\
         Written by `portico types --python`; write it again when the config changes.\n\"\"\"\n\n\
         from typing import Any, Literal, NotRequired, Required, TypedDict\n",
        source.replace('\\', "/").replace('"', "'")
    );
    typed_dict(
        &mut out,
        FILE_TYPE,
        &file_type(),
        "A file's metadata, as a file field holds it.",
    );
    for (collection, name) in shape.collections.iter().zip(&names) {
        collection_types(&mut out, collection, name, document(collection, &name_of));
    }
    let entries: Vec<String> = shape
        .collections
        .iter()
        .zip(&names)
        .map(|(c, n)| format!("    {}: {n},", string(&c.name)))
        .collect();
    let _ = writeln!(
        out,
        "\n#: Each collection's document type, by collection name.\nCOLLECTIONS: dict[str, type] = {{\n{}\n}}",
        entries.join("\n")
    );
    let list = |items: &mut dyn Iterator<Item = String>| {
        items
            .map(|i| format!("    {i},"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let _ = writeln!(
        out,
        "\n#: The auto API's methods.\nMETHODS: tuple[str, ...] = (\n{}\n)",
        list(&mut shape.methods.iter().map(|m| string(m)))
    );
    let _ = writeln!(
        out,
        "\n#: The auto API's publications.\nPUBLICATIONS: tuple[str, ...] = (\n{}\n)",
        list(&mut shape.publications.iter().map(|p| string(p)))
    );
    let routes = shape.routes.iter().map(|(path, methods)| {
        let methods: Vec<String> = methods.iter().map(|m| string(m)).collect();
        format!("{}: ({},)", string(path), methods.join(", "))
    });
    let _ = writeln!(
        out,
        "\n#: The routes door's paths, each with its HTTP methods.\nROUTES: dict[str, tuple[str, ...]] = {{\n{}\n}}",
        list(&mut routes.into_iter())
    );
    out
}

/// The types of one collection's documents (`doc`), named `name`: a `TypedDict` (and one for
/// its `expand`), or `dict[str, Any]` without a schema.
fn collection_types(out: &mut String, collection: &CollectionShape, name: &str, doc: Ty) {
    let about = format!("A document of `{}`.", collection.name);
    let Ty::Object { mut fields, open } = doc else {
        return typed_dict(out, name, &doc, &about);
    };
    if open {
        // No schema: any field goes, which a TypedDict cannot say before Python 3.13.
        let _ = writeln!(
            out,
            "\n#: {about} It has no JSON Schema, so any field goes.\n{name} = dict[str, Any]"
        );
        return;
    }
    // The server writes these: a document to create has none, and `create` takes the same
    // type as `list` gives.
    for field in &mut fields {
        if ["_id", "createdAt", "updatedAt"].contains(&field.name.as_str()) {
            field.required = false;
        }
    }
    // The related documents get a TypedDict of their own.
    if let Some(expand) = fields
        .iter_mut()
        .find(|f| f.name == portico_platform::EXPAND_KEY)
    {
        let expand_name = format!("{name}Expand");
        let ty = std::mem::replace(&mut expand.ty, Ty::Named(expand_name.clone()));
        let about = format!(
            "The related documents `expand` holds in `{}`.",
            collection.name
        );
        typed_dict(out, &expand_name, &ty, &about);
    }
    typed_dict(out, name, &Ty::Object { fields, open }, &about);
}

fn typed_dict(out: &mut String, name: &str, ty: &Ty, about: &str) {
    let fields: &[Field] = match ty {
        Ty::Object { fields, .. } => fields,
        _ => &[],
    };
    let _ = writeln!(
        out,
        "\n#: {about}\n{name} = TypedDict(\n    {},\n    {{",
        string(name)
    );
    for field in fields {
        let wrap = if field.required {
            "Required"
        } else {
            "NotRequired"
        };
        let ty = render(&field.ty);
        // A type naming another TypedDict is written as a string, resolved by type checkers
        // once the whole module is read (the types may name each other).
        let ty = if names_another(&field.ty) {
            string(&ty)
        } else {
            ty
        };
        let _ = writeln!(out, "        {}: {wrap}[{ty}],", string(&field.name));
    }
    let _ = writeln!(out, "    }},\n)");
}

fn render(ty: &Ty) -> String {
    match ty {
        Ty::Unknown | Ty::Never => "Any".to_owned(),
        Ty::Null => "None".to_owned(),
        Ty::Bool => "bool".to_owned(),
        Ty::Integer => "int".to_owned(),
        Ty::Number => "float".to_owned(),
        Ty::String => "str".to_owned(),
        Ty::Literal(serde_json::Value::Number(n)) if n.is_f64() => "float".to_owned(),
        Ty::Literal(value) => format!("Literal[{}]", literal(value)),
        Ty::Named(name) => name.clone(),
        Ty::Array(item) => format!("list[{}]", render(item)),
        Ty::Union(options) => {
            let options: Vec<String> = options.iter().map(render).collect();
            options.join(" | ")
        }
        Ty::Object { .. } => "dict[str, Any]".to_owned(),
    }
}

fn literal(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Bool(true) => "True".to_owned(),
        serde_json::Value::Bool(false) => "False".to_owned(),
        serde_json::Value::Null => "None".to_owned(),
        serde_json::Value::String(s) => string(s),
        other => other.to_string(),
    }
}

fn names_another(ty: &Ty) -> bool {
    match ty {
        Ty::Named(_) => true,
        Ty::Array(item) => names_another(item),
        Ty::Union(options) => options.iter().any(names_another),
        _ => false,
    }
}

/// A Python string literal (JSON's escapes are Python's too, for the characters JSON escapes).
fn string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}
