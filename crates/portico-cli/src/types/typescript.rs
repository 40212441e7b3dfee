//! `portico types --client`: a `.d.ts` for the TypeScript client (`portico-client`).
//!
//! It exports one interface per collection and augments the client's `Collections`,
//! `Methods`, `Publications` and `Routes` interfaces, so that `pc.collection("tasks")` lists
//! typed documents and a misspelt field is a compile error.

use std::fmt::Write as _;

use super::schema::{FILE_TYPE, Field, Ty, document, file_type};
use super::{AppShape, name_lookup, type_names};

/// The declarations of `shape` for the TypeScript client, as a `.d.ts` file's text.
pub fn typescript(shape: &AppShape, source: &str) -> String {
    let names = type_names(shape, &[FILE_TYPE]);
    let name_of = name_lookup(shape, &names);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// The types of the app in {source}, for the TypeScript client `portico-client`.\n\
         // Written by `portico types --client`; write it again when the config changes.\n"
    );
    let _ = writeln!(out, "/** A file's metadata, as a file field holds it. */");
    let _ = writeln!(
        out,
        "export interface {FILE_TYPE} {}\n",
        render(&file_type(), 0)
    );
    for (collection, name) in shape.collections.iter().zip(&names) {
        let _ = writeln!(out, "/** A document of `{}`. */", collection.name);
        let _ = writeln!(
            out,
            "export interface {name} {}\n",
            render(&document(collection, &name_of), 0)
        );
    }
    let _ = writeln!(out, "declare module 'portico-client' {{");
    let _ = writeln!(out, "  interface Collections {{");
    for (collection, name) in shape.collections.iter().zip(&names) {
        let _ = writeln!(out, "    {}: {name};", key(&collection.name));
    }
    let _ = writeln!(out, "  }}\n  interface Methods {{");
    for method in &shape.methods {
        let _ = writeln!(out, "    {}: unknown;", key(method));
    }
    let _ = writeln!(out, "  }}\n  interface Publications {{");
    for publication in &shape.publications {
        let _ = writeln!(out, "    {}: unknown;", key(publication));
    }
    let _ = writeln!(out, "  }}\n  interface Routes {{");
    for (path, methods) in &shape.routes {
        let methods: Vec<String> = methods.iter().map(|m| string(m)).collect();
        let _ = writeln!(out, "    {}: {};", key(path), methods.join(" | "));
    }
    let _ = writeln!(out, "  }}\n}}");
    out
}

fn render(ty: &Ty, indent: usize) -> String {
    match ty {
        Ty::Unknown => "unknown".to_owned(),
        Ty::Never => "never".to_owned(),
        Ty::Null => "null".to_owned(),
        Ty::Bool => "boolean".to_owned(),
        Ty::Number | Ty::Integer => "number".to_owned(),
        Ty::String => "string".to_owned(),
        Ty::Literal(value) => value.to_string(),
        Ty::Named(name) => name.clone(),
        Ty::Array(item) => match **item {
            Ty::Union(_) => format!("Array<{}>", render(item, indent)),
            _ => format!("{}[]", render(item, indent)),
        },
        Ty::Union(options) => {
            let options: Vec<String> = options.iter().map(|o| render(o, indent)).collect();
            options.join(" | ")
        }
        Ty::Object { fields, open } => object(fields, *open, indent),
    }
}

fn object(fields: &[Field], open: bool, indent: usize) -> String {
    if fields.is_empty() {
        return if open {
            "Record<string, unknown>"
        } else {
            "Record<string, never>"
        }
        .to_owned();
    }
    let pad = "  ".repeat(indent + 1);
    let mut out = String::from("{\n");
    for field in fields {
        let optional = if field.required { "" } else { "?" };
        let _ = writeln!(
            out,
            "{pad}{}{optional}: {};",
            key(&field.name),
            render(&field.ty, indent + 1)
        );
    }
    if open {
        let _ = writeln!(out, "{pad}[key: string]: unknown;");
    }
    out.push_str(&"  ".repeat(indent));
    out.push('}');
    out
}

/// A property name: bare when it is an identifier, else a quoted string.
fn key(name: &str) -> String {
    let identifier = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        name.to_owned()
    } else {
        string(name)
    }
}

fn string(text: &str) -> String {
    // JSON's string syntax is TypeScript's too (and escapes U+2028/U+2029 as needed).
    serde_json::Value::String(text.to_owned()).to_string()
}
