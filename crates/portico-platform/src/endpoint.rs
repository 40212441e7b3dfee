//! The options a front door reads to serve a method or publication over HTTP (the spec's `url`,
//! `httpMethod` and `getArgsFromRequest`), kept with the definition.
//!
//! The platform itself knows no HTTP: it only stores these options for a door to read. So the
//! HTTP method is a small enum of the methods a door may route ([`HttpMethod`]: a bad method
//! cannot be written, and no `http` types reach this crate), and an argument extractor is an
//! opaque [`ArgsExtractor`] that a door makes with its own request type (the auto API's is
//! `portico_auto::args_extractor`) and finds again by downcasting. The platform never calls it.

use std::any::Any;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// An HTTP method a method, publication or script route can be served with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HttpMethod {
    /// `GET` (and `HEAD`, which doors answer with the `GET` route).
    Get,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
    /// `OPTIONS` (replaces the door's generated preflight at that url).
    Options,
}

impl HttpMethod {
    /// The method name, upper case (`"GET"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Options => "OPTIONS",
        }
    }
}

impl fmt::Display for HttpMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of the [`HttpMethod`]s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown http method {0:?}; use get, post, put, patch, delete or options")]
pub struct UnknownHttpMethod(pub String);

impl FromStr for HttpMethod {
    type Err = UnknownHttpMethod;

    /// Any case: `"get"`, `"Post"`, `"DELETE"`.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.trim().to_ascii_lowercase().as_str() {
            "get" => Ok(HttpMethod::Get),
            "post" => Ok(HttpMethod::Post),
            "put" => Ok(HttpMethod::Put),
            "patch" => Ok(HttpMethod::Patch),
            "delete" => Ok(HttpMethod::Delete),
            "options" => Ok(HttpMethod::Options),
            _ => Err(UnknownHttpMethod(name.to_owned())),
        }
    }
}

/// A front door's custom argument extractor (the spec's `getArgsFromRequest`), stored opaquely.
///
/// A door makes one around its own extractor type with [`ArgsExtractor::new`] and reads it back
/// with [`ArgsExtractor::downcast_ref`]; an extractor made for another door is not found, and
/// the door reports it when it builds its routes.
#[derive(Clone)]
pub struct ArgsExtractor(Arc<dyn Any + Send + Sync>);

impl ArgsExtractor {
    /// Wraps a door's extractor.
    pub fn new<T: Any + Send + Sync>(extractor: T) -> Self {
        ArgsExtractor(Arc::new(extractor))
    }

    /// The door's extractor, when it is a `T`.
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl fmt::Debug for ArgsExtractor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ArgsExtractor(<fn>)")
    }
}

/// How a method or publication is served over HTTP. Methods and publications share this type
/// ([`crate::MethodOptions`] and [`crate::PublicationOptions`] are names for it); they differ
/// only in the defaults a door applies when a field is `None`: `POST /methods/<name>` for a
/// method, `GET /publications/<name>` for a publication.
///
/// Built with its setters, one a field:
///
/// ```
/// use portico_platform::{HttpMethod, MethodOptions};
///
/// let options = MethodOptions::default().url("search").http_method(HttpMethod::Get);
/// assert_eq!(options.url.as_deref(), Some("search"));
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct EndpointOptions {
    /// Custom url; segments `:0`, `:1`... become arguments 0, 1... (strings).
    pub url: Option<String>,
    /// The HTTP method required to call it.
    pub http_method: Option<HttpMethod>,
    /// Custom argument extractor; default: the door's own rule.
    pub args_extractor: Option<ArgsExtractor>,
}

impl EndpointOptions {
    /// Sets [`url`](EndpointOptions::url): custom url (to `Some`).
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// Sets [`http_method`](EndpointOptions::http_method): the HTTP method required to call it (to
    /// `Some`).
    pub fn http_method(mut self, http_method: HttpMethod) -> Self {
        self.http_method = Some(http_method);
        self
    }

    /// Sets [`args_extractor`](EndpointOptions::args_extractor): custom argument extractor (to
    /// `Some`).
    pub fn args_extractor(mut self, args_extractor: ArgsExtractor) -> Self {
        self.args_extractor = Some(args_extractor);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_methods_parse_in_any_case() {
        assert_eq!("get".parse(), Ok(HttpMethod::Get));
        assert_eq!(" Patch ".parse(), Ok(HttpMethod::Patch));
        assert_eq!("OPTIONS".parse(), Ok(HttpMethod::Options));
        assert!("fetch".parse::<HttpMethod>().is_err());
        assert!("".parse::<HttpMethod>().is_err());
        assert_eq!(HttpMethod::Delete.to_string(), "DELETE");
    }

    #[test]
    fn extractors_are_found_by_their_type() {
        let e = ArgsExtractor::new(7u8);
        assert_eq!(e.downcast_ref::<u8>(), Some(&7));
        assert!(e.downcast_ref::<u16>().is_none());
        assert_eq!(format!("{e:?}"), "ArgsExtractor(<fn>)");
    }
}
