//! Requests to a served app, in process or not.

use serde_json::{Value, json};

/// A server's base URL and a client: what [`crate::Server`] and [`crate::Process`]
/// dereference to.
#[derive(Debug, Clone)]
pub struct Http {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The client requests go through (one connection pool per server).
    pub http: reqwest::Client,
}

/// One HTTP reply.
#[derive(Debug)]
pub struct Reply {
    /// Its status code.
    pub status: u16,
    /// Its headers.
    pub headers: reqwest::header::HeaderMap,
    /// Its body as JSON (`null` when it is not JSON).
    pub body: Value,
    /// Its body as text.
    pub raw: String,
}

impl Reply {
    /// The header `name` when it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// `X-Auth-Token: token` for routes APIs.
pub fn x_auth(token: &str) -> [(&'static str, &str); 1] {
    [("X-Auth-Token", token)]
}

impl Http {
    /// Requests to `base`.
    pub fn new(base: String) -> Http {
        Http {
            base,
            http: reqwest::Client::new(),
        }
    }

    /// The URL of `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends a request with an optional JSON body and headers; returns status, headers and body.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self.http.request(method, self.url(path));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let raw = response.text().await.expect("body");
        let body = serde_json::from_str(&raw).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
            raw,
        }
    }

    /// Logs `user` in to the admin page's API (`POST /_/api/login`), asserting it succeeds;
    /// its token.
    pub async fn admin_token(&self, user: &str, password: &str) -> String {
        let login = self
            .call(
                "POST",
                "/_/api/login",
                Some(json!({"user": user, "password": password})),
                &[],
            )
            .await;
        assert_eq!(login.status, 200, "admin login of {user}: {}", login.raw);
        login.body["token"].as_str().unwrap_or_default().to_owned()
    }

    /// Logs in through a routes API's default login (`{base}login`); returns (token, user id).
    pub async fn rest_login(&self, base: &str, username: &str, password: &str) -> (String, String) {
        let reply = self
            .call(
                "POST",
                &format!("{base}login"),
                Some(json!({"username": username, "password": password})),
                &[],
            )
            .await;
        assert_eq!(reply.status, 200, "login failed: {}", reply.raw);
        let field = |name: &str| {
            reply.body["data"][name]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        (field("authToken"), field("userId"))
    }

    /// Logs in through the auto API's login add-on; returns (token, user id).
    pub async fn auto_login(&self, username: &str, password: &str) -> (String, String) {
        let reply = self
            .call(
                "POST",
                "/users/login",
                Some(json!({"username": username, "password": password})),
                &[],
            )
            .await;
        assert_eq!(reply.status, 200, "login failed: {}", reply.raw);
        (
            reply.body["token"].as_str().unwrap_or_default().to_owned(),
            reply.body["id"].as_str().unwrap_or_default().to_owned(),
        )
    }
}
