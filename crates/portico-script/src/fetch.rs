//! `fetch()` for scripts: HTTP requests to the hosts of `fetch_hosts` only.
//!
//! `http://` and `https://` (rustls; the certificate is checked against the system's trusted
//! roots, which `SSL_CERT_FILE` / `SSL_CERT_DIR` can point elsewhere); redirects are not
//! followed (a 3xx is the answer), so an allowed host cannot send a script elsewhere.

use std::time::Duration;

use portico_platform::MethodError;
use serde_json::{Map, Value, json};

/// The largest response body a script may read (a bigger one fails the `fetch`).
const MAX_BODY: usize = 16 * 1024 * 1024;

fn failed(url: &str, e: &reqwest::Error) -> MethodError {
    MethodError::new("fetch-failed", format!("fetch({url:?}): {}", chain(e))).with_status(502)
}

/// An HTTP client limited to a list of hosts.
pub(crate) struct Client {
    http: reqwest::Client,
    hosts: Vec<String>,
}

/// An error with its causes, `a: b: c`.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn refused(reason: String) -> MethodError {
    MethodError::new("fetch-refused", reason).with_status(400)
}

impl Client {
    pub(crate) fn new(hosts: &[String]) -> Client {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Client {
            http,
            hosts: hosts
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .collect(),
        }
    }

    /// True when `url`'s host (with its port, or its scheme's default port) is listed.
    fn allowed(&self, url: &reqwest::Url) -> bool {
        let Some(host) = url.host_str().map(str::to_ascii_lowercase) else {
            return false;
        };
        let port = url.port_or_known_default();
        self.hosts
            .iter()
            .any(|allowed| match allowed.rsplit_once(':') {
                Some((h, p)) if !h.contains(']') || allowed.starts_with('[') => {
                    h == host && p.parse::<u16>().ok() == port
                }
                _ => *allowed == host && port == Some(80),
            })
    }

    /// Runs a request `{url, method, headers, body}` and answers `{status, statusText,
    /// headers, body}`.
    pub(crate) async fn fetch(
        &self,
        payload: &Value,
        timeout: Duration,
    ) -> Result<String, MethodError> {
        let url_text = payload
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let url = reqwest::Url::parse(url_text)
            .map_err(|e| refused(format!("fetch({url_text:?}): not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(refused(format!(
                "fetch({url_text:?}): only http:// and https:// URLs can be fetched"
            )));
        }
        if !self.allowed(&url) {
            return Err(refused(format!(
                "fetch({url_text:?}): the host is not in [scripts] fetch_hosts"
            )));
        }
        let method = payload
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("GET")
            .to_ascii_uppercase();
        let method = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|_| refused(format!("fetch: bad method {method:?}")))?;
        let mut request = self.http.request(method.clone(), url).timeout(timeout);
        if let Some(Value::Object(headers)) = payload.get("headers") {
            for (name, value) in headers {
                let value = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                request = request.header(name.as_str(), value);
            }
        }
        if let Some(body) = payload.get("body").and_then(Value::as_str) {
            request = request.body(body.to_owned());
        }
        // A kept-alive connection the server closed meanwhile fails the send; a GET or HEAD is
        // safe to send again, once.
        let retry = matches!(method, reqwest::Method::GET | reqwest::Method::HEAD)
            .then(|| request.try_clone())
            .flatten();
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(e) => match retry {
                Some(again) if !e.is_timeout() => {
                    again.send().await.map_err(|e| failed(url_text, &e))?
                }
                _ => return Err(failed(url_text, &e)),
            },
        };
        let status = response.status();
        let mut headers = Map::new();
        for (name, value) in response.headers() {
            headers.insert(
                name.as_str().to_owned(),
                Value::String(String::from_utf8_lossy(value.as_bytes()).into_owned()),
            );
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| failed(url_text, &e))? {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(MethodError::new(
                    "fetch-failed",
                    format!("fetch({url_text:?}): the response is larger than {MAX_BODY} bytes"),
                )
                .with_status(502));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(json!({
            "status": status.as_u16(),
            "statusText": status.canonical_reason().unwrap_or(""),
            "headers": headers,
            "body": String::from_utf8_lossy(&body),
        })
        .to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_hosts_are_allowed() {
        let client = Client::new(&["127.0.0.1:8080".into(), "api.example.org".into()]);
        let ok =
            |u: &str| client.allowed(&reqwest::Url::parse(u).unwrap_or_else(|e| panic!("{e}")));
        assert!(ok("http://127.0.0.1:8080/x"));
        assert!(!ok("http://127.0.0.1:8081/x"));
        assert!(ok("http://api.example.org/a"));
        assert!(ok("http://API.example.org:80/a"));
        assert!(!ok("http://api.example.org:8000/a"));
        assert!(!ok("http://evil.example.org/"));
    }
}
