//! Default auth: login (user/username/email, hashed), logout (POST and GET), the token cycle,
//! one reply for every failure, hooks, rate limits.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use portico_platform::password_digest;
use portico_routes::{
    Api, ApiOptions, Context, Endpoints, LoginHook, LoginRateLimit, RateLimit, RouteOptions,
};
use serde_json::{Value, json};

use super::common::{call, call_json, memory, opts, req, send, user};

async fn auth_api(options: ApiOptions) -> (axum::Router, String, portico_platform::Platform) {
    let platform = memory().await;
    let id = user(&platform, "ann", "secret-pass", &[]).await;
    let mut api = Api::new(
        {
            let mut o = options;
            o.use_default_auth = true;
            o
        },
        platform.clone(),
    )
    .unwrap();
    api.add_route(
        "me",
        RouteOptions::new().auth_required(true),
        Endpoints::new().get(|ctx: Context| async move { json!({"userId": ctx.user_id}) }),
    )
    .unwrap();
    (api.router(), id, platform)
}

#[tokio::test]
async fn login_use_logout_then_token_rejected() {
    let (r, id, _p) = auth_api(opts()).await;
    let resp = call_json(
        &r,
        "POST",
        "/api/login",
        None,
        &json!({"username": "ann", "password": "secret-pass"}),
    )
    .await;
    assert_eq!(resp.status, 200);
    let body = resp.json();
    assert_eq!(body["status"], "success");
    assert_eq!(body["data"]["userId"], json!(id));
    let token = body["data"]["authToken"].as_str().unwrap().to_owned();
    assert_eq!(token.len(), 43);
    let when = body["data"]["when"].as_str().unwrap();
    assert!(chrono::DateTime::parse_from_rfc3339(when).is_ok(), "{when}");

    assert_eq!(
        call(&r, "GET", "/api/me", Some(&token)).await.json(),
        json!({"userId": id})
    );
    let out = call(&r, "POST", "/api/logout", Some(&token)).await;
    assert_eq!(out.status, 200);
    assert_eq!(
        out.json(),
        json!({"status": "success", "data": {"message": "You've been logged out!"}})
    );
    assert_eq!(call(&r, "GET", "/api/me", Some(&token)).await.status, 401);
    assert_eq!(
        call(&r, "POST", "/api/logout", Some(&token)).await.status,
        401
    );
}

#[tokio::test]
async fn logout_by_get_and_only_the_presented_token() {
    let (r, _id, _p) = auth_api(opts()).await;
    let creds = json!({"email": "ann@example.com", "password": "secret-pass"});
    let login = || call_json(&r, "POST", "/api/login", None, &creds);
    let t1 = login().await.json()["data"]["authToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let t2 = login().await.json()["data"]["authToken"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(call(&r, "GET", "/api/logout", Some(&t1)).await.status, 200);
    assert_eq!(call(&r, "GET", "/api/me", Some(&t1)).await.status, 401);
    assert_eq!(call(&r, "GET", "/api/me", Some(&t2)).await.status, 200);
}

#[tokio::test]
async fn login_by_user_field_email_username_and_hashed_password() {
    let (r, id, _p) = auth_api(opts()).await;
    for body in [
        json!({"user": "ann", "password": "secret-pass"}),
        json!({"user": "ann@example.com", "password": "secret-pass"}),
        json!({"email": "ANN@example.com", "password": "secret-pass"}),
        json!({"username": "ann", "password": password_digest("secret-pass"), "hashed": true}),
    ] {
        let resp = call_json(&r, "POST", "/api/login", None, &body).await;
        assert_eq!(resp.status, 200, "{body}");
        assert_eq!(resp.json()["data"]["userId"], json!(id));
    }
    // Form-encoded login works too.
    let form = send(
        &r,
        req("POST", "/api/login", None)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from("username=ann&password=secret-pass"))
            .unwrap(),
    )
    .await;
    assert_eq!(form.status, 200);
}

#[tokio::test]
async fn every_login_failure_gets_the_same_401() {
    let (r, _id, _p) = auth_api(opts()).await;
    let expected = json!({"status": "error", "message": "Unauthorized"});
    for body in [
        json!({"username": "ann", "password": "wrong"}),
        json!({"username": "nobody", "password": "secret-pass"}),
        json!({"username": "ann"}),
        json!({"password": "secret-pass"}),
        json!({}),
        json!({"username": "ann", "password": "secret-pass", "hashed": true}),
    ] {
        let resp = call_json(&r, "POST", "/api/login", None, &body).await;
        assert_eq!(
            (resp.status, resp.json()),
            (401, expected.clone()),
            "{body}"
        );
    }
}

#[tokio::test]
async fn logged_in_and_out_hooks_add_extra() {
    let (r, id, _p) = auth_api({
        let mut o = opts();
        o.on_logged_in = Some(LoginHook::new(|ctx: Context| {
            let name = ctx.user.as_ref().and_then(|u| u.get("username").cloned());
            async move { Some(json!({"welcome": name})) }
        }));
        o.on_logged_out = Some(LoginHook::new(|ctx: Context| {
            let id = ctx.user_id.clone();
            async move { Some(json!({"bye": id})) }
        }));
        o
    })
    .await;
    let login = call_json(
        &r,
        "POST",
        "/api/login",
        None,
        &json!({"username": "ann", "password": "secret-pass"}),
    )
    .await;
    assert_eq!(login.json()["data"]["extra"], json!({"welcome": "ann"}));
    let token = login.json()["data"]["authToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = call(&r, "POST", "/api/logout", Some(&token)).await;
    assert_eq!(out.json()["data"]["extra"], json!({"bye": id}));
    assert_eq!(out.json()["data"]["message"], "You've been logged out!");
}

#[tokio::test]
async fn failed_logins_are_limited_per_identity_with_retry_after() {
    let mut limit = LoginRateLimit::default();
    limit.per_identity = Some(RateLimit::new(3, Duration::from_secs(60)));
    limit.per_address = None;
    let (r, _id, _p) = auth_api({
        let mut o = opts();
        o.login_rate_limit = limit;
        o
    })
    .await;
    let bad = json!({"username": "ann", "password": "wrong"});
    for _ in 0..3 {
        assert_eq!(
            call_json(&r, "POST", "/api/login", None, &bad).await.status,
            401
        );
    }
    let limited = call_json(&r, "POST", "/api/login", None, &bad).await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.json()["status"], "error");
    let retry: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    // Even the right password waits now; another identity does not.
    let good = json!({"username": "ANN", "password": "secret-pass"});
    assert_eq!(
        call_json(&r, "POST", "/api/login", None, &good)
            .await
            .status,
        429
    );
    let other = json!({"username": "bob", "password": "x"});
    assert_eq!(
        call_json(&r, "POST", "/api/login", None, &other)
            .await
            .status,
        401
    );
}

fn from_addr(addr: &str, body: &Value) -> http::Request<Body> {
    let mut request = req("POST", "/api/login", None)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let addr: SocketAddr = addr.parse().unwrap();
    request.extensions_mut().insert(ConnectInfo(addr));
    request
}

#[tokio::test]
async fn failed_logins_are_limited_per_client_address() {
    let mut limit = LoginRateLimit::default();
    limit.per_identity = None;
    limit.per_address = Some(RateLimit::new(2, Duration::from_secs(60)));
    let (r, _id, _p) = auth_api({
        let mut o = opts();
        o.login_rate_limit = limit;
        o
    })
    .await;
    for name in ["a", "b"] {
        let resp = send(
            &r,
            from_addr("10.0.0.1:5000", &json!({"username": name, "password": "x"})),
        )
        .await;
        assert_eq!(resp.status, 401);
    }
    let resp = send(
        &r,
        from_addr("10.0.0.1:5001", &json!({"username": "c", "password": "x"})),
    )
    .await;
    assert_eq!(resp.status, 429);
    assert!(resp.header("retry-after").is_some());
    let other = send(
        &r,
        from_addr(
            "10.0.0.2:5000",
            &json!({"username": "ann", "password": "secret-pass"}),
        ),
    )
    .await;
    assert_eq!(other.status, 200);
}

#[tokio::test]
async fn default_limits_allow_five_failures_per_identity() {
    // The default: five failures per identity in 10 s. Five password checks can outlast 10 s
    // on a loaded test machine, so the behaviour is checked with the same count over 10 minutes.
    let defaults = LoginRateLimit::default();
    let per_identity = defaults.per_identity.expect("a default limit per identity");
    assert_eq!(
        (per_identity.attempts, per_identity.per),
        (5, Duration::from_secs(10))
    );
    let mut limit = defaults;
    limit.per_identity = Some(RateLimit::new(5, Duration::from_secs(600)));
    let mut options = opts();
    options.login_rate_limit = limit;
    let (r, _id, _p) = auth_api(options).await;
    let bad = json!({"username": "ann", "password": "wrong"});
    for _ in 0..5 {
        assert_eq!(
            call_json(&r, "POST", "/api/login", None, &bad).await.status,
            401
        );
    }
    assert_eq!(
        call_json(&r, "POST", "/api/login", None, &bad).await.status,
        429
    );
}

#[tokio::test]
async fn forwarded_addresses_count_only_when_trusted() {
    let mut limit = LoginRateLimit::default();
    limit.per_identity = None;
    limit.per_address = Some(RateLimit::new(1, Duration::from_secs(60)));
    let mut options = opts();
    options.login_rate_limit = limit;
    // The peer and a second proxy hop are trusted; the client is the right-most untrusted
    // address (a client can forge the left part of the header, not the right).
    options.trusted_proxies =
        portico_routes::TrustedProxies::parse(["127.0.0.1", "10.0.0.0/8"]).unwrap();
    let (r, _id, _p) = auth_api(options).await;
    let bad = |ip: &str| {
        let mut request = from_addr(
            "127.0.0.1:9000",
            &json!({"username": "zz", "password": "x"}),
        );
        request
            .headers_mut()
            .insert("x-forwarded-for", ip.parse().unwrap());
        request
    };
    assert_eq!(send(&r, bad("203.0.113.5")).await.status, 401);
    assert_eq!(send(&r, bad("203.0.113.5, 10.0.0.1")).await.status, 429);
    // A forged left part does not hide the real client from the limit.
    assert_eq!(send(&r, bad("198.51.100.1, 203.0.113.5")).await.status, 429);
    // Another forwarded client behind the same proxy is not limited.
    assert_eq!(send(&r, bad("203.0.113.6")).await.status, 401);
    // From an untrusted peer the header is ignored: the peer itself is the client.
    let mut direct = from_addr(
        "192.0.2.9:9000",
        &json!({"username": "zz", "password": "x"}),
    );
    direct
        .headers_mut()
        .insert("x-forwarded-for", "203.0.113.7".parse().unwrap());
    assert_eq!(send(&r, direct).await.status, 401);
    let mut again = from_addr(
        "192.0.2.9:9000",
        &json!({"username": "zz", "password": "x"}),
    );
    again
        .headers_mut()
        .insert("x-forwarded-for", "203.0.113.8".parse().unwrap());
    assert_eq!(send(&r, again).await.status, 429);
}
