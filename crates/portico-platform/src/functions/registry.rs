//! One registry of named functions, as methods and publications are both kept: each name has
//! its options and, once defined, its handler; a name is defined once.

use std::collections::BTreeMap;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::{EndpointOptions, Error, Result, locks};

/// One name of a [`Registry`].
struct Entry<H> {
    options: EndpointOptions,
    /// True when the options were given (by [`Registry::set_options`] or at definition).
    options_set: bool,
    /// `None` while only the options were set.
    handler: Option<H>,
}

/// Named handlers `H` with their options, sorted by name. `kind` (`method`, `publication`)
/// names them in refusals.
pub(crate) struct Registry<H> {
    kind: &'static str,
    entries: RwLock<BTreeMap<String, Entry<H>>>,
}

impl<H: Clone> Registry<H> {
    /// An empty registry of `kind`s.
    pub(crate) fn new(kind: &'static str) -> Registry<H> {
        Registry {
            kind,
            entries: RwLock::new(BTreeMap::new()),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, Entry<H>>> {
        locks::read(&self.entries)
    }

    fn write(&self) -> RwLockWriteGuard<'_, BTreeMap<String, Entry<H>>> {
        locks::write(&self.entries)
    }

    /// Empties the registry and gives back its handlers, to be dropped outside its lock (a
    /// handler's drop may reach the platform again).
    pub(crate) fn take_all(&self) -> Vec<H> {
        std::mem::take(&mut *self.write())
            .into_values()
            .filter_map(|entry| entry.handler)
            .collect()
    }

    /// Defines `name` with `handler`, and with `options` (`None`: those set earlier by
    /// [`Registry::set_options`], or the defaults).
    ///
    /// # Errors
    /// [`Error::Duplicate`] when `name` is defined already; [`Error::MethodOptions`] when
    /// `options` are given for a name whose options were set already.
    pub(crate) fn define(
        &self,
        name: &str,
        options: Option<EndpointOptions>,
        handler: H,
    ) -> Result<()> {
        let kind = self.kind;
        let mut entries = self.write();
        match entries.get_mut(name) {
            Some(entry) if entry.handler.is_some() => Err(Error::Duplicate(format!(
                "{kind} {name:?} is defined already"
            ))),
            Some(entry) => {
                if options.is_some() {
                    return Err(Error::MethodOptions(format!(
                        "options of {kind} {name:?} were set already with set_{kind}_options; \
                         define it without options"
                    )));
                }
                entry.handler = Some(handler);
                Ok(())
            }
            None => {
                entries.insert(
                    name.to_string(),
                    Entry {
                        options_set: options.is_some(),
                        options: options.unwrap_or_default(),
                        handler: Some(handler),
                    },
                );
                Ok(())
            }
        }
    }

    /// Sets the options of `name` before it is defined.
    ///
    /// # Errors
    /// [`Error::MethodOptions`] when `name` is defined already, or its options were set already.
    pub(crate) fn set_options(&self, name: &str, options: EndpointOptions) -> Result<()> {
        let kind = self.kind;
        let mut entries = self.write();
        match entries.get(name) {
            Some(entry) if entry.handler.is_some() => Err(Error::MethodOptions(format!(
                "{kind} {name:?} is defined already; set its options before defining it"
            ))),
            Some(entry) if entry.options_set => Err(Error::MethodOptions(format!(
                "options of {kind} {name:?} were set already"
            ))),
            _ => {
                entries.insert(
                    name.to_string(),
                    Entry {
                        options,
                        options_set: true,
                        handler: None,
                    },
                );
                Ok(())
            }
        }
    }

    /// The handler of `name`, when it is defined.
    pub(crate) fn handler(&self, name: &str) -> Option<H> {
        self.read().get(name).and_then(|e| e.handler.clone())
    }

    /// The defined names with their options, sorted by name.
    pub(crate) fn list(&self) -> Vec<(String, EndpointOptions)> {
        self.read()
            .iter()
            .filter(|(_, e)| e.handler.is_some())
            .map(|(name, e)| (name.clone(), e.options.clone()))
            .collect()
    }

    /// The options of `name`, when it is defined.
    pub(crate) fn options(&self, name: &str) -> Option<EndpointOptions> {
        self.read()
            .get(name)
            .filter(|e| e.handler.is_some())
            .map(|e| e.options.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> Registry<u8> {
        Registry::new("method")
    }

    #[test]
    fn a_name_is_defined_once() {
        let r = registry();
        r.define("a", None, 1).unwrap();
        let err = r.define("a", None, 2).unwrap_err().to_string();
        assert!(err.contains("method \"a\" is defined already"), "{err}");
        assert_eq!(r.handler("a"), Some(1));
    }

    #[test]
    fn options_set_first_are_kept_and_not_given_twice() {
        let r = registry();
        let options = EndpointOptions::default().url("/x");
        r.set_options("a", options.clone()).unwrap();
        assert!(r.list().is_empty(), "options alone define nothing");
        assert!(r.options("a").is_none());
        assert!(r.handler("a").is_none());
        let err = r.set_options("a", options.clone()).unwrap_err().to_string();
        assert!(
            err.contains("options of method \"a\" were set already"),
            "{err}"
        );
        let err = r
            .define("a", Some(options.clone()), 1)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("set_method_options; define it without options"),
            "{err}"
        );
        r.define("a", None, 1).unwrap();
        assert_eq!(r.options("a").and_then(|o| o.url).as_deref(), Some("/x"));
        let err = r
            .set_options("a", EndpointOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("is defined already; set its options before"),
            "{err}"
        );
    }

    #[test]
    fn the_list_is_sorted_by_name() {
        let r = registry();
        r.define("b", None, 2).unwrap();
        r.define("a", None, 1).unwrap();
        r.set_options("c", EndpointOptions::default()).unwrap();
        let names: Vec<String> = r.list().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["a", "b"]);
    }
}
