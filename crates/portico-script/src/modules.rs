//! Module names and sources: relative imports inside the application's folder, and the
//! `"portico"` module.
//!
//! A module's name is its path relative to the application's folder (the config file's
//! folder), with `/` separators: `server/main.ts`. Stack traces and errors show that name.
//! Sources are read, checked and stripped of types once; every runtime of a pool loads the
//! same text from [`Shared`].

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rquickjs::loader::{ImportAttributes, Loader as LoadModule, Resolver};
use rquickjs::module::Declared;
use rquickjs::{Ctx, Module};

use crate::error::{LoadError, Position};
use crate::program::Shared;

/// The `"portico"` module: the prelude's objects, as named exports.
pub(crate) const PORTICO_MODULE: &str = "const m = globalThis.__portico_module;\n\
export const methods = m.methods;\nexport const publish = m.publish;\nexport const api = m.api;\n\
export const collection = m.collection;\nexport const files = m.files;\n\
export const accounts = m.accounts;\n\
export const roles = m.roles;\nexport const jobs = m.jobs;\nexport const cron = m.cron;\nexport const webhooks = m.webhooks;\nexport const channels = m.channels;\nexport const broadcast = m.broadcast;\nexport const PorticoError = m.PorticoError;\nexport default m;\n";

/// The name of the `"portico"` module.
pub(crate) const PORTICO: &str = "portico";

/// Resolves and loads modules for one runtime.
pub(crate) struct Loader {
    shared: Arc<Shared>,
}

impl Loader {
    pub(crate) fn new(shared: Arc<Shared>) -> Loader {
        Loader { shared }
    }
}

/// `base`'s folder joined with `name`, normalised; `None` when it leaves the root.
fn join(base: &str, name: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// The module name of a file path under `root` (`None` when it is not under it).
pub(crate) fn name_of(root: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(root).ok()?;
    let mut parts = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?.to_owned()),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

impl Shared {
    /// The file of the module `name`.
    pub(crate) fn path_of(&self, name: &str) -> PathBuf {
        name.split('/')
            .fold(self.root.clone(), |p, part| p.join(part))
    }

    /// Where `specifier` appears in the source of `base` (for an import error).
    fn import_position(&self, base: &str, specifier: &str) -> Position {
        let source = std::fs::read_to_string(self.path_of(base)).unwrap_or_default();
        let offset = [format!("\"{specifier}\""), format!("'{specifier}'")]
            .iter()
            .filter_map(|quoted| source.find(quoted.as_str()))
            .min()
            .unwrap_or(0);
        Position::at_offset(&source, offset)
    }

    /// The JavaScript of module `name`: read, checked and stripped once, then kept.
    pub(crate) fn source(&self, name: &str) -> Result<String, LoadError> {
        if let Some(js) = self.sources_lock().get(name) {
            return Ok(js.clone());
        }
        let path = self.path_of(name);
        let text = std::fs::read_to_string(&path).map_err(|e| LoadError::Read {
            file: name.to_owned(),
            reason: e.to_string(),
        })?;
        let typescript = name.ends_with(".ts") || name.ends_with(".mts");
        let js = crate::strip::strip_types(&text, typescript).map_err(|e| LoadError::At {
            file: name.to_owned(),
            position: e.position,
            message: e.message,
        })?;
        self.sources_lock().insert(name.to_owned(), js.clone());
        self.files_lock().insert(name.to_owned(), path);
        Ok(js)
    }
}

impl Resolver for Loader {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        if name == PORTICO {
            return Ok(PORTICO.to_owned());
        }
        let fail = |message: String| {
            let position = self.shared.import_position(base, name);
            self.shared.set_load_error(LoadError::At {
                file: base.to_owned(),
                position,
                message,
            });
            rquickjs::Error::new_resolving(base, name)
        };
        // The main module is imported by its own name, from the prelude.
        if base.is_empty()
            || base == "<input>"
            || !(name.starts_with("./") || name.starts_with("../"))
        {
            if self.shared.sources_lock().contains_key(name) || self.shared.path_of(name).is_file()
            {
                return Ok(name.to_owned());
            }
            return Err(fail(format!(
                "cannot import {name:?}: a script may import \"portico\" and other files by a relative path (./file.ts)"
            )));
        }
        let Some(joined) = join(base, name) else {
            return Err(fail(format!(
                "cannot import {name:?}: it is outside the application's folder"
            )));
        };
        for candidate in [
            joined.clone(),
            format!("{joined}.ts"),
            format!("{joined}.js"),
            format!("{joined}/index.ts"),
            format!("{joined}/index.js"),
        ] {
            if self.shared.sources_lock().contains_key(&candidate)
                || self.shared.path_of(&candidate).is_file()
            {
                return Ok(candidate);
            }
        }
        Err(fail(format!("cannot import {name:?}: no such file")))
    }
}

impl LoadModule for Loader {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, Declared>> {
        if name == PORTICO {
            return Module::declare(ctx.clone(), PORTICO, PORTICO_MODULE);
        }
        match self.shared.source(name) {
            Ok(js) => Module::declare(ctx.clone(), name, js),
            Err(e) => {
                self.shared.set_load_error(e);
                Err(rquickjs::Error::new_loading(name))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_names_stay_inside_the_folder() {
        assert_eq!(
            join("server/main.ts", "./lib/a.ts").as_deref(),
            Some("server/lib/a.ts")
        );
        assert_eq!(
            join("server/main.ts", "../common/b").as_deref(),
            Some("common/b")
        );
        assert_eq!(join("server/main.ts", "../../etc/passwd"), None);
        assert_eq!(
            name_of(Path::new("/app"), Path::new("/app/server/main.ts")).as_deref(),
            Some("server/main.ts")
        );
        assert_eq!(name_of(Path::new("/app"), Path::new("/other/x.ts")), None);
    }
}
