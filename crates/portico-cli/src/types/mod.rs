//! `portico types --client` and `--python`: the shapes of an app's documents, and the names of
//! its methods, publications and routes, written for the TypeScript and Python clients.
//!
//! Everything comes from what `serve` would build for the same config: collections and their
//! JSON Schemas, relations, file fields, owner fields and timestamps from the config, and the
//! method, publication and route names from the route descriptions of the assembled app (so a
//! script's methods and routes are there too). [`AppShape`] holds that; [`typescript`] and
//! [`python`] write it out.

mod python;
mod schema;
mod typescript;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use portico_edge::{Door, RouteDoc};
use serde_json::Value;

use crate::config::Config;
use crate::serve;

pub use python::python;
pub use typescript::typescript;

/// What the clients' types describe: one app's collections, methods, publications and routes.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct AppShape {
    /// The collections, by name.
    pub collections: Vec<CollectionShape>,
    /// The auto API's method names, sorted.
    pub methods: Vec<String>,
    /// The auto API's publication names, sorted.
    pub publications: Vec<String>,
    /// The routes door's paths (`/api/v1/articles/:id`), each with its HTTP methods.
    pub routes: BTreeMap<String, BTreeSet<String>>,
}

/// One collection's documents as a client reads them.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CollectionShape {
    /// The collection's name.
    pub name: String,
    /// Its JSON Schema, when the config gives one.
    pub schema: Option<Value>,
    /// Relation fields and the collections their ids belong to.
    pub relations: Vec<(String, String)>,
    /// File fields and whether each holds several files (`max` > 1).
    pub files: Vec<(String, bool)>,
    /// The owner field (`owner_field`), holding a user's id.
    pub owner_field: Option<String>,
    /// Whether documents carry `createdAt` and `updatedAt`.
    pub timestamps: bool,
}

/// `portico types --client` / `--python`: the shape of the app `config` describes (or, without
/// a config file, of the database's collections as the zero-config default serves them).
///
/// # Errors
/// A bad config, an unreachable database (no config file), or a front door refusing the config.
pub async fn run(
    config: Option<PathBuf>,
    database_flag: Option<String>,
) -> crate::Result<AppShape> {
    let (config, app) = serve::described(config, database_flag, |_| {}).await?;
    Ok(shape(&config, &app.routes))
}

/// The shape of the app built from `config`, whose routes are `routes`.
pub fn shape(config: &Config, routes: &[RouteDoc]) -> AppShape {
    let mut shape = AppShape::default();
    for name in config.collection_names() {
        if name == portico_platform::USERS {
            continue;
        }
        shape.collections.push(collection(config, &name));
    }
    let mut methods = BTreeSet::new();
    let mut publications = BTreeSet::new();
    for route in routes {
        match route.door {
            Door::Auto => {
                if let Some(name) = route.summary.strip_prefix("method ") {
                    methods.insert(name.to_owned());
                } else if let Some(name) = route.summary.strip_prefix("publication ") {
                    publications.insert(name.to_owned());
                }
            }
            Door::Routes => {
                shape
                    .routes
                    .entry(route.path.clone())
                    .or_default()
                    .insert(route.method.as_str().to_owned());
            }
            _ => {}
        }
    }
    shape.methods = methods.into_iter().collect();
    shape.publications = publications.into_iter().collect();
    shape
}

fn collection(config: &Config, name: &str) -> CollectionShape {
    let declared = config
        .apis
        .iter()
        .flat_map(|api| &api.collections)
        .filter(|c| c.name == name);
    let mut files = BTreeMap::new();
    let mut owner_field = None;
    for c in declared {
        for (field, spec) in &c.files {
            files.insert(field.clone(), spec.max > 1);
        }
        owner_field = owner_field.or_else(|| c.owner_field.clone());
    }
    CollectionShape {
        name: name.to_owned(),
        schema: config.schema_values.get(name).cloned(),
        relations: config
            .relations
            .get(name)
            .map(|r| {
                r.iter()
                    .map(|(field, target)| (field.to_owned(), target.to_owned()))
                    .collect()
            })
            .unwrap_or_default(),
        files: files.into_iter().collect(),
        owner_field,
        timestamps: config.timestamps(name),
    }
}

/// A type name for `name` (`blog-posts` → `BlogPosts`), unique among `taken`.
fn type_name(name: &str, taken: &mut BTreeSet<String>) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.push(c.to_ascii_uppercase());
            } else {
                out.push(c);
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'C');
    }
    let mut candidate = out.clone();
    let mut n = 2;
    while !taken.insert(candidate.clone()) {
        candidate = format!("{out}{n}");
        n += 1;
    }
    candidate
}

/// The type names of `shape`'s collections, in order, unique, none equal to `reserved`.
fn type_names(shape: &AppShape, reserved: &[&str]) -> Vec<String> {
    let mut taken: BTreeSet<String> = reserved.iter().map(|s| (*s).to_owned()).collect();
    shape
        .collections
        .iter()
        .map(|c| type_name(&c.name, &mut taken))
        .collect()
}

/// Looks a collection's type name up among `names` (in `shape`'s order of collections).
fn name_lookup<'a>(
    shape: &'a AppShape,
    names: &'a [String],
) -> impl Fn(&str) -> Option<String> + 'a {
    move |collection| {
        shape
            .collections
            .iter()
            .position(|c| c.name == collection)
            .map(|i| names[i].clone())
    }
}

#[cfg(test)]
mod tests;
