//! Authentication layers: bearer token via header and query, expiry, composition by hand.

use axum::routing::get;
use axum::{Extension, Router};
use portico_auto::{AuthenticatedUser, AutoApi, BearerTokenLayer, TokenAuthLayer};
use portico_platform::{MethodError, Platform, hash_token};
use serde_json::{Value, json};

use crate::common::{doc, platform, serve, user_with_token};

fn whoami(p: &Platform) {
    p.method("whoami", |inv, _args| async move {
        Ok::<Value, MethodError>(json!(inv.user_id()))
    })
    .unwrap();
}

#[tokio::test]
async fn bearer_header_identifies_the_caller() {
    let p = platform().await;
    whoami(&p);
    let (ada, token) = user_with_token(&p, "ada").await;
    let s = serve(
        AutoApi::new(p.clone())
            .with_token_authentication(BearerTokenLayer::new())
            .router()
            .unwrap(),
    )
    .await;
    let r = s.post_as("/methods/whoami", json!([]), &token).await;
    assert_eq!((r.status, r.json), (200, json!(ada)));
    // Lower-case scheme works too.
    let r = s
        .send(
            s.client
                .post(s.url("/methods/whoami"))
                .header("authorization", format!("bearer {token}")),
        )
        .await;
    assert_eq!(r.json, json!(ada));
    // No token, or a bad one: the call runs with no user.
    assert_eq!(s.post_empty("/methods/whoami").await.json, Value::Null);
    let r = s
        .post_as("/methods/whoami", json!([]), "not-a-real-token")
        .await;
    assert_eq!((r.status, r.json), (200, Value::Null));
}

#[tokio::test]
async fn query_token_only_when_turned_on() {
    let p = platform().await;
    whoami(&p);
    let (ada, token) = user_with_token(&p, "ada").await;
    let off = serve(
        AutoApi::new(p.clone())
            .with_token_authentication(BearerTokenLayer::new())
            .router()
            .unwrap(),
    )
    .await;
    let r = off
        .post_empty(&format!("/methods/whoami?access_token={token}"))
        .await;
    assert_eq!(
        (r.status, r.json),
        (200, Value::Null),
        "query tokens are off by default"
    );

    let on = serve(
        AutoApi::new(p.clone())
            .with_token_authentication(BearerTokenLayer::new().allow_query_parameter(true))
            .router()
            .unwrap(),
    )
    .await;
    let r = on
        .post_empty(&format!("/methods/whoami?access_token={token}"))
        .await;
    assert_eq!((r.status, r.json), (200, json!(ada)));
}

#[tokio::test]
async fn expired_token_means_no_user() {
    let p = platform().await;
    whoami(&p);
    // An imported user whose token was issued long ago (the default lifetime is 90 days).
    let old = "old-token-old-token-old-token-old-token-old";
    let fresh = "fresh-token-fresh-token-fresh-token-fresh-t";
    p.accounts()
        .import_user(doc(json!({
            "_id": "u-old",
            "username": "old",
            "services": {"resume": {"loginTokens": [
                {"when": "2020-01-01T00:00:00.000Z", "hashedToken": hash_token(old)},
                {"when": portico_platform::now_iso(), "hashedToken": hash_token(fresh)}
            ]}}
        })))
        .await
        .unwrap();
    let s = serve(
        AutoApi::new(p.clone())
            .with_token_authentication(BearerTokenLayer::new())
            .router()
            .unwrap(),
    )
    .await;
    let r = s.post_as("/methods/whoami", json!([]), old).await;
    assert_eq!((r.status, r.json), (200, Value::Null));
    let r = s.post_as("/methods/whoami", json!([]), fresh).await;
    assert_eq!((r.status, r.json), (200, json!("u-old")));
}

#[tokio::test]
async fn without_the_layers_every_call_is_anonymous() {
    let p = platform().await;
    whoami(&p);
    let (_ada, token) = user_with_token(&p, "ada").await;
    let s = serve(AutoApi::new(p.clone()).router().unwrap()).await;
    let r = s.post_as("/methods/whoami", json!([]), &token).await;
    assert_eq!(r.json, Value::Null);
}

#[tokio::test]
async fn layers_compose_by_hand_on_any_router() {
    let p = platform().await;
    whoami(&p);
    let (ada, token) = user_with_token(&p, "ada").await;
    // The two packages as separate layers, around the auto API and a route of the host's own.
    let app = Router::new()
        .route(
            "/me",
            get(|user: Option<Extension<AuthenticatedUser>>| async move {
                user.map(|Extension(u)| u.user_id().to_owned())
                    .unwrap_or_else(|| "anonymous".into())
            }),
        )
        .merge(AutoApi::new(p.clone()).router().unwrap())
        .layer(TokenAuthLayer::new(p.clone()))
        .layer(BearerTokenLayer::new());
    let s = serve(app).await;
    let r = s.get_as("/me", &token).await;
    assert_eq!(r.text, ada);
    assert_eq!(s.get("/me").await.text, "anonymous");
    let r = s.post_as("/methods/whoami", json!([]), &token).await;
    assert_eq!(r.json, json!(ada));
}
