//! A small todo app served through the auto API on 127.0.0.1:3000 (or `TODOS_LISTEN`).
//!
//! ```text
//! cargo run -p portico-auto --example todos
//! TODOS_STORE=sqlite:todos.db cargo run -p portico-auto --example todos
//! ```
//!
//! See the crate README for curl commands.

use std::net::SocketAddr;

use portico_auto::{AutoApi, AutoConfig, BearerTokenLayer, LoginOptions, args_extractor};
use portico_edge::ParsedBody;
use portico_platform::{
    Document, HttpMethod, MethodError, MethodOptions, Platform, PublicationOptions, Query, Rules,
    Selector, arg,
};
use portico_store::Sort;
use serde_json::{Value, json};

/// True when `user` is signed in and owns `doc`.
fn owns(user: Option<&str>, doc: &Document) -> bool {
    user.is_some() && doc.get("owner").and_then(Value::as_str) == user
}

fn selector(value: Value) -> Result<Selector, MethodError> {
    Selector::parse(&value).map_err(|e| MethodError::invalid_arguments(e.to_string()))
}

fn declare(platform: &Platform) -> Result<(), Box<dyn std::error::Error>> {
    // Collections and their client-write rules: users write only their own todos.
    let todos = platform.collection("todos");
    todos.allow(
        Rules::new()
            .insert(|user, doc| async move { owns(user.as_deref(), &doc) })
            .update(|user, doc, fields, _modifier| async move {
                owns(user.as_deref(), &doc) && !fields.iter().any(|f| f == "owner")
            })
            .remove(|user, doc| async move { owns(user.as_deref(), &doc) }),
    );
    platform.collection("lists");

    // POST /methods/todos.add  ["Buy milk", "groceries"]  -> the new todo's id (201).
    platform.method("todos.add", |inv, args| async move {
        let owner = inv
            .user_id()
            .ok_or_else(|| MethodError::new("not-signed-in", "Sign in first").with_status(401))?
            .to_owned();
        let title: String = arg(&args, 0)?;
        if title.trim().is_empty() {
            return Err(MethodError::new("title-required", "A todo needs a title")
                .with_details(json!({"field": "title"})));
        }
        let list: Option<String> = arg(&args, 1)?;
        let mut doc = Document::new();
        doc.insert("owner".into(), json!(owner));
        doc.insert("title".into(), json!(title.trim()));
        doc.insert("list".into(), json!(list.unwrap_or_else(|| "inbox".into())));
        doc.insert("done".into(), json!(false));
        doc.insert("createdAt".into(), json!(portico_platform::now_iso()));
        let id = inv.platform().collection("todos").insert(doc).await?;
        inv.set_http_status_code(201);
        Ok(json!(id))
    })?;

    // PUT /todos/<id>/toggle -> the todo's new `done` value.
    platform.method_with_options(
        "todos.toggle",
        {
            let mut o = MethodOptions::default();
            o.url = Some("todos/:0/toggle".into());
            o.http_method = Some(HttpMethod::Put);
            o
        },
        |inv, args| async move {
            let id: String = arg(&args, 0)?;
            let todos = inv.platform().collection("todos");
            let doc = todos
                .get(&id)
                .await?
                .ok_or_else(|| MethodError::new("not-found", "No such todo").with_status(404))?;
            if !owns(inv.user_id(), &doc) {
                return Err(MethodError::new("forbidden", "Not your todo").with_status(403));
            }
            let done = !doc.get("done").and_then(Value::as_bool).unwrap_or(false);
            let update = portico_platform::Update::parse(&json!({"$set": {"done": done}}))
                .map_err(MethodError::internal)?;
            todos.update_by_id(&id, &update).await?;
            Ok(json!(done))
        },
    )?;

    // GET /todos/search?q=milk -> the caller's todos whose title contains "milk". A custom
    // argument extractor reads the parsed query string (and could read url params, headers or
    // the parsed body); it is async, so it may look things up too.
    platform.method_with_options(
        "todos.search",
        {
            let mut o = MethodOptions::default();
            o.url = Some("todos/search".into());
            o.http_method = Some(HttpMethod::Get);
            o.args_extractor = Some(args_extractor(|req| async move {
                let q = match (req.query.get("q"), &req.body) {
                    (Some(q), _) => q.clone(),
                    (None, ParsedBody::Json(body)) => body.get("q").cloned().unwrap_or_default(),
                    _ => Value::Null,
                };
                Ok(vec![q])
            }));
            o
        },
        |inv, args| async move {
            let q: String = arg(&args, 0)?;
            let owner = inv.user_id().unwrap_or_default().to_owned();
            let mine = inv
                .platform()
                .collection("todos")
                .find(&Query::new(selector(json!({"owner": owner}))?))
                .await?;
            let found: Vec<Value> = mine
                .into_iter()
                .filter(|d| {
                    d.get("title")
                        .and_then(Value::as_str)
                        .is_some_and(|t| t.contains(&q))
                })
                .map(Value::Object)
                .collect();
            Ok(Value::Array(found))
        },
    )?;

    // GET /publications/my-todos -> {"todos": [...]} of the caller, newest first.
    platform.publish("my-todos", |sub, _args| async move {
        let owner = sub.user_id().unwrap_or_default().to_owned();
        let mut query = Query::new(selector(json!({"owner": owner}))?);
        query.sort = Sort::parse(&json!({"createdAt": -1})).ok();
        Ok(vec![sub.platform().collection("todos").cursor(query)])
    })?;

    // GET /lists/<list>/todos -> {"lists": [...], "todos": [...]}: two collections at once.
    platform.publish_with_options(
        "list-todos",
        {
            let mut o = PublicationOptions::default();
            o.url = Some("lists/:0/todos".into());
            o
        },
        |sub, args| async move {
            let list: String = arg(&args, 0)?;
            let owner = sub.user_id().unwrap_or_default().to_owned();
            let platform = sub.platform();
            Ok(vec![
                platform
                    .collection("lists")
                    .cursor(Query::new(selector(json!({"_id": list}))?)),
                platform
                    .collection("todos")
                    .cursor(Query::new(selector(json!({"list": list, "owner": owner}))?)),
            ])
        },
    )?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber_init();
    let store = std::env::var("TODOS_STORE").unwrap_or_else(|_| "memory:".into());
    let platform = Platform::open(&store).await?;
    declare(&platform)?;
    let lists = platform.collection("lists");
    if lists.get("groceries").await?.is_none() {
        lists
            .insert(Document::from_iter([
                ("_id".into(), json!("groceries")),
                ("name".into(), json!("Groceries")),
            ]))
            .await?;
    }

    let app = AutoApi::new(platform)
        .configure({
            let mut o = AutoConfig::default();
            o.collections = Some(vec!["todos".into()]);
            o
        })
        .response_headers([
            ("Cache-Control", "no-store"),
            ("Pragma", "no-cache"),
            ("Access-Control-Allow-Origin", "*"),
            (
                "Access-Control-Allow-Methods",
                "GET, PUT, POST, PATCH, DELETE, OPTIONS",
            ),
            (
                "Access-Control-Allow-Headers",
                "Content-Type, Authorization, X-Requested-With",
            ),
        ])
        .with_login(LoginOptions::default())
        .with_token_authentication(BearerTokenLayer::new())
        .router()?;

    // TODOS_LISTEN picks another address (`127.0.0.1:0`: a free port, as the client's tests use).
    let addr: SocketAddr = match std::env::var("TODOS_LISTEN") {
        Ok(listen) => listen.parse()?,
        Err(_) => SocketAddr::from(([127, 0, 0, 1], 3000)),
    };
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    println!("todos: auto API on http://{addr} (store {store})");
    println!("routes: curl http://{addr}/publications/api-routes");
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await?;
    Ok(())
}

/// Logs to stderr (`RUST_LOG=debug` for more): internal errors are logged, never sent to clients.
fn tracing_subscriber_init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).init();
}
