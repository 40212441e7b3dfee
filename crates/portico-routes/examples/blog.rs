//! A small blog API: custom routes, generated collections with roles, default auth, two versions.
//!
//! ```sh
//! cargo run -p portico-routes --example blog
//! ```
//!
//! It serves on 127.0.0.1:3000 from `blog.db` (SQLite; set `BLOG_DB` to another store URL, such
//! as `memory:`), and creates the user `demo` / `demo-password` (roles author and admin) when
//! absent. See the crate's README for curl commands.

use std::net::SocketAddr;

use portico_platform::{NewUser, Password, Platform, UserSelector};
use portico_routes::{
    AccessScope, Api, ApiOptions, CollectionOptions, Context, Endpoint, Endpoints, Op, Reply,
    RouteOptions,
};
use serde_json::{Value, json};

const DEMO_USER: &str = "demo";
const DEMO_PASSWORD: &str = "demo-password";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let url = std::env::var("BLOG_DB").unwrap_or_else(|_| "sqlite:blog.db".into());
    let platform = Platform::open(&url).await?;
    ensure_demo_user(&platform).await?;

    let app = axum::Router::new()
        .merge(v1(&platform)?.router())
        .merge(v2(&platform)?.router());

    let addr: SocketAddr = "127.0.0.1:3000".parse()?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("Blog API on http://{addr}/blog/v1/ and http://{addr}/blog/v2/ (store: {url})");
    println!("Log in as {DEMO_USER} / {DEMO_PASSWORD}:");
    println!(
        "  curl -s -X POST http://{addr}/blog/v1/login -H 'content-type: application/json' \\\n    -d '{{\"username\":\"{DEMO_USER}\",\"password\":\"{DEMO_PASSWORD}\"}}'"
    );
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await?;
    Ok(())
}

/// Creates the demo user with the author and admin roles when it does not exist.
async fn ensure_demo_user(platform: &Platform) -> Result<(), portico_platform::Error> {
    let accounts = platform.accounts();
    if accounts
        .find_user(&UserSelector::Username(DEMO_USER.into()))
        .await?
        .is_none()
    {
        accounts
            .create_user(NewUser {
                username: Some(DEMO_USER.into()),
                email: Some("demo@example.com".into()),
                password: Some(Password::Plain(DEMO_PASSWORD.into())),
                profile: Some(json!({"name": "Demo Author"})),
                roles: vec!["author".into(), "admin".into()],
            })
            .await?;
        println!("Created the demo user {DEMO_USER:?}.");
    }
    Ok(())
}

/// Version 1: default auth, pretty JSON, posts anyone can read and authors can write.
fn v1(platform: &Platform) -> Result<Api, portico_routes::Error> {
    let mut api = Api::new(
        {
            let mut o = ApiOptions::default();
            o.api_path = "blog".into();
            o.version = Some("v1".into());
            o.use_default_auth = true;
            o.pretty_json = true;
            o
        },
        platform.clone(),
    )?;

    // A custom route: GET is public, POST needs a logged-in user.
    api.add_route(
        "posts/:id/comments",
        RouteOptions::default(),
        Endpoints::new()
            .get(|ctx: Context| async move {
                let post = ctx.url_param("id").unwrap_or_default().to_owned();
                let comments = ctx.platform.collection("comments");
                let query = portico_store::Query {
                    selector: portico_store::Selector::parse(&json!({"postId": post}))?,
                    limit: Some(100),
                    ..Default::default()
                };
                let found = comments.find(&query).await?;
                Ok::<_, Reply>(Reply::success(Value::Array(
                    found.into_iter().map(Value::Object).collect(),
                )))
            })
            .post(
                Endpoint::new(|ctx: Context| async move {
                    let Some(text) = ctx.body_param("text").and_then(Value::as_str) else {
                        return Ok(Reply::fail(400, "text is required"));
                    };
                    let comment = json!({
                        "postId": ctx.url_param("id"),
                        "text": text,
                        "author": ctx.user_id,
                        "created": portico_platform::now_iso(),
                    });
                    let Value::Object(doc) = comment else {
                        return Ok(Reply::internal("comment is not an object"));
                    };
                    let id = ctx.platform.collection("comments").insert(doc).await?;
                    Ok::<_, Reply>(Reply::success(json!({"_id": id})).with_status(201))
                })
                .auth_required(true),
            ),
    )?;

    // Generated routes: reading is public, writing needs the author role.
    let author = || Endpoint::options().role_required("author");
    api.add_collection(
        platform.collection("posts"),
        CollectionOptions::new()
            .endpoint(Op::Post, author())
            .endpoint(Op::Put, author())
            .endpoint(Op::Patch, author())
            .endpoint(Op::Delete, Endpoint::options().role_required("admin")),
    )?;

    // Sign up through POST /blog/v1/users; listing and deleting users is for admins.
    api.add_collection(
        platform.collection("users"),
        CollectionOptions::new()
            .endpoint(Op::GetAll, Endpoint::options().role_required("admin"))
            .endpoint(Op::Delete, Endpoint::options().role_required("admin"))
            .exclude(Op::Put),
    )?;
    Ok(api)
}

/// Version 2: CORS off, compact JSON, the same posts path answering differently, and private
/// drafts each user only sees for themselves.
fn v2(platform: &Platform) -> Result<Api, portico_routes::Error> {
    let mut api = Api::new(
        {
            let mut o = ApiOptions::default();
            o.api_path = "blog".into();
            o.version = Some("v2".into());
            o.enable_cors = false;
            o
        },
        platform.clone(),
    )?;
    api.add_route(
        "posts/:id",
        RouteOptions::default(),
        Endpoints::new().get(|ctx: Context| async move {
            let id = ctx.url_param("id").unwrap_or_default();
            match ctx.platform.collection("posts").get(id).await {
                Ok(Some(post)) => Reply::success(json!({
                    "id": post.get("_id"),
                    "title": post.get("title"),
                    "summary": post.get("body").and_then(Value::as_str).map(|b| b.chars().take(80).collect::<String>()),
                })),
                Ok(None) => Reply::fail(404, "Item not found"),
                Err(e) => Reply::internal(e),
            }
        }),
    )?;
    api.add_collection(
        platform.collection("drafts"),
        CollectionOptions::new().scope(AccessScope::owner_field("ownerId")),
    )?;
    Ok(api)
}
