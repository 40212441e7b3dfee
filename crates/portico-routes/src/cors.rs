//! Default headers of every reply: the built-in ones, CORS, and the API's `default_headers`.

use http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS,
    CONTENT_TYPE, VARY,
};
use http::{HeaderMap, HeaderName, HeaderValue};

use crate::{ApiOptions, Error, Result};

/// The headers every reply of one API starts from.
#[derive(Debug, Clone)]
pub(crate) struct BaseHeaders {
    /// Built-in + CORS (except the origin) + default headers.
    common: HeaderMap,
    /// The allow-origin value when any origin is allowed.
    any_origin: bool,
    /// The origins allowed when a list is configured.
    allowed: Option<Vec<String>>,
    /// True when CORS is on.
    cors: bool,
    /// True when `default_headers` sets the allow-origin header itself.
    origin_overridden: bool,
}

fn header_value(value: &str, what: &str) -> Result<HeaderValue> {
    HeaderValue::from_str(value)
        .map_err(|_| Error::InvalidOption(format!("{what}: {value:?} is not a valid header value")))
}

impl BaseHeaders {
    pub(crate) fn new(options: &ApiOptions) -> Result<BaseHeaders> {
        let mut common = HeaderMap::new();
        common.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if options.enable_cors {
            let allow_headers = match &options.cors.allow_headers {
                Some(list) => list.join(", "),
                None => {
                    let mut h =
                        "Origin, X-Requested-With, Content-Type, Accept, If-Match, If-None-Match"
                            .to_owned();
                    if options.use_default_auth {
                        h.push_str(", X-User-Id, X-Auth-Token");
                    }
                    h
                }
            };
            common.insert(
                ACCESS_CONTROL_ALLOW_HEADERS,
                header_value(&allow_headers, "cors.allow_headers")?,
            );
            if !options.cors.expose_headers.is_empty() {
                common.insert(
                    ACCESS_CONTROL_EXPOSE_HEADERS,
                    header_value(
                        &options.cors.expose_headers.join(", "),
                        "cors.expose_headers",
                    )?,
                );
            }
            if options.cors.allow_origins.is_some() {
                common.insert(VARY, HeaderValue::from_static("Origin"));
            }
        }
        let mut origin_overridden = false;
        for (name, value) in &options.default_headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                Error::InvalidOption(format!("default_headers: {name:?} is not a header name"))
            })?;
            if name == ACCESS_CONTROL_ALLOW_ORIGIN {
                origin_overridden = true;
            }
            common.insert(name, header_value(value, "default_headers")?);
        }
        Ok(BaseHeaders {
            common,
            any_origin: options.cors.allow_origins.is_none(),
            allowed: options.cors.allow_origins.clone(),
            cors: options.enable_cors,
            origin_overridden,
        })
    }

    /// The headers for a request from `origin`.
    pub(crate) fn for_origin(&self, origin: Option<&HeaderValue>) -> HeaderMap {
        let mut map = self.common.clone();
        if !self.cors || self.origin_overridden {
            return map;
        }
        if self.any_origin {
            map.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        } else if let (Some(origin), Some(list)) = (origin, &self.allowed)
            && let Ok(o) = origin.to_str()
            && list.iter().any(|allowed| allowed.eq_ignore_ascii_case(o))
        {
            map.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
        }
        map
    }

    /// True when CORS is on.
    pub(crate) fn cors(&self) -> bool {
        self.cors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_allow_any_origin_and_auth_headers() {
        let b = BaseHeaders::new(&ApiOptions {
            use_default_auth: true,
            ..ApiOptions::default()
        })
        .unwrap();
        let h = b.for_origin(None);
        assert_eq!(h["access-control-allow-origin"], "*");
        assert!(
            h["access-control-allow-headers"]
                .to_str()
                .unwrap()
                .contains("X-Auth-Token")
        );
        // A browser client on another origin may send conditional writes and read their tags.
        let allowed = h["access-control-allow-headers"].to_str().unwrap();
        assert!(allowed.contains("If-Match") && allowed.contains("If-None-Match"));
        assert_eq!(
            h["access-control-expose-headers"],
            "X-Total-Count, Link, ETag"
        );
        assert_eq!(h["content-type"], "application/json");
    }

    #[test]
    fn default_headers_override_built_in() {
        let b = BaseHeaders::new(&ApiOptions {
            default_headers: vec![("content-type".into(), "text/plain".into())],
            ..ApiOptions::default()
        })
        .unwrap();
        assert_eq!(b.for_origin(None)["Content-Type"], "text/plain");
    }

    #[test]
    fn allow_list_echoes_listed_origins_only() {
        let mut o = ApiOptions::default();
        o.cors.allow_origins = Some(vec!["https://a.example".into()]);
        let b = BaseHeaders::new(&o).unwrap();
        let good = HeaderValue::from_static("https://a.example");
        let bad = HeaderValue::from_static("https://evil.example");
        assert_eq!(
            b.for_origin(Some(&good))["access-control-allow-origin"],
            "https://a.example"
        );
        assert!(
            b.for_origin(Some(&bad))
                .get("access-control-allow-origin")
                .is_none()
        );
    }

    #[test]
    fn cors_off_sends_no_cors_headers() {
        let b = BaseHeaders::new(&ApiOptions {
            enable_cors: false,
            ..ApiOptions::default()
        })
        .unwrap();
        assert!(
            b.for_origin(None)
                .get("access-control-allow-origin")
                .is_none()
        );
    }

    #[test]
    fn bad_default_header_is_an_error() {
        let r = BaseHeaders::new(&ApiOptions {
            default_headers: vec![("bad name".into(), "x".into())],
            ..ApiOptions::default()
        });
        assert!(matches!(r, Err(Error::InvalidOption(_))));
    }
}
