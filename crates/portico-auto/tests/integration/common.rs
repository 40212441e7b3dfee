//! Shared helpers: a platform, a server on a free port, and a small HTTP client.

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;

use axum::Router;
use portico_platform::{Document, Platform};
use serde_json::Value;

/// A fresh in-memory platform.
pub async fn platform() -> Platform {
    Platform::open("memory:").await.expect("memory platform")
}

/// A JSON object as a document.
pub fn doc(value: Value) -> Document {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// A server answering `router` on 127.0.0.1, stopped when dropped.
pub struct Server {
    pub base: String,
    pub client: reqwest::Client,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What a request got back.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    /// The body parsed as JSON (`Value::Null` when empty or not JSON).
    pub json: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

pub async fn serve(router: Router) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await;
    });
    Server {
        base: format!("http://{addr}"),
        client: reqwest::Client::new(),
        task,
    }
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn send(&self, request: reqwest::RequestBuilder) -> Reply {
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("body");
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            text,
            json,
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(self.client.get(self.url(path))).await
    }

    pub async fn get_as(&self, path: &str, token: &str) -> Reply {
        self.send(self.client.get(self.url(path)).bearer_auth(token))
            .await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.send(self.client.post(self.url(path)).json(&body))
            .await
    }

    pub async fn post_as(&self, path: &str, body: Value, token: &str) -> Reply {
        self.send(
            self.client
                .post(self.url(path))
                .json(&body)
                .bearer_auth(token),
        )
        .await
    }

    pub async fn post_empty(&self, path: &str) -> Reply {
        self.send(self.client.post(self.url(path))).await
    }

    pub async fn post_raw(&self, path: &str, content_type: &str, body: &'static str) -> Reply {
        self.send(
            self.client
                .post(self.url(path))
                .header("content-type", content_type)
                .body(body),
        )
        .await
    }

    pub async fn patch(&self, path: &str, body: Value, token: Option<&str>) -> Reply {
        let mut request = self.client.patch(self.url(path)).json(&body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        self.send(request).await
    }

    pub async fn delete(&self, path: &str, token: Option<&str>) -> Reply {
        let mut request = self.client.delete(self.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        self.send(request).await
    }

    pub async fn options(&self, path: &str) -> Reply {
        self.send(
            self.client
                .request(reqwest::Method::OPTIONS, self.url(path)),
        )
        .await
    }
}

/// Creates a user with a password and returns (id, plain token).
pub async fn user_with_token(platform: &Platform, username: &str) -> (String, String) {
    use portico_platform::{NewUser, Password};
    let accounts = platform.accounts();
    let id = accounts
        .create_user(NewUser {
            username: Some(username.into()),
            password: Some(Password::Plain(format!("{username}-password"))),
            ..NewUser::default()
        })
        .await
        .expect("create user");
    let token = accounts.new_login_token(&id).await.expect("token");
    (id, token.token)
}
