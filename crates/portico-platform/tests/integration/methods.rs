//! Methods: definition, options, invocation, errors.

use std::sync::Arc;

use portico_platform::{
    ArgsExtractor, Error, HttpMethod, MethodError, MethodOptions, Platform, Rules, Selector, arg,
};
use serde_json::{Value, json};

use crate::common::{TestResult, doc};

fn options(url: &str) -> MethodOptions {
    {
        let mut o = MethodOptions::default();
        o.url = Some(url.into());
        o.http_method = Some(HttpMethod::Get);
        o.args_extractor = None;
        o
    }
}

#[tokio::test]
async fn calls_carry_the_user_and_the_status() -> TestResult {
    let p = Platform::open("memory:").await?;
    p.method("greet", |inv, args| async move {
        let name: String = arg(&args, 0)?;
        inv.set_http_status_code(201);
        Ok(json!({"hello": name, "caller": inv.user_id()}))
    })?;
    let reply = p
        .call("greet", Some("u1".into()), vec![json!("Ada")])
        .await?;
    assert_eq!(reply.value, json!({"hello": "Ada", "caller": "u1"}));
    assert_eq!(reply.status, Some(201));

    let err = p
        .call("greet", None, vec![json!(5)])
        .await
        .err()
        .ok_or("bad argument refused")?;
    assert_eq!(err.error, "invalid-arguments");
    assert_eq!(err.status, Some(400));

    p.method("plain", |_, _| async { Ok(Value::Null) })?;
    assert_eq!(p.call("plain", None, vec![]).await?.status, None);
    Ok(())
}

#[tokio::test]
async fn unknown_methods_and_thrown_errors() -> TestResult {
    let p = Platform::open("memory:").await?;
    let err = p.call("nope", None, vec![]).await.err().ok_or("unknown")?;
    assert_eq!(
        (err.error.as_str(), err.status),
        ("method-not-found", Some(404))
    );

    p.method("fails", |_, _| async {
        Err::<Value, _>(
            MethodError::new("too-late", "Come back tomorrow")
                .with_status(409)
                .with_details(json!({"at": 9})),
        )
    })?;
    let err = p.call("fails", None, vec![]).await.err().ok_or("fails")?;
    assert_eq!(
        err.to_body(),
        json!({"error": "too-late", "reason": "Come back tomorrow", "details": {"at": 9}})
    );
    assert_eq!(err.status, Some(409));

    p.method("panics", |_, args| async move {
        if args.is_empty() {
            panic!("handler bug");
        }
        Ok(Value::Null)
    })?;
    let err = p
        .call("panics", None, vec![])
        .await
        .err()
        .ok_or("panic caught")?;
    assert!(err.internal);
    assert_eq!(err.status, Some(500));
    // The platform still answers afterwards.
    assert!(p.call("panics", None, vec![json!(1)]).await.is_ok());
    Ok(())
}

#[tokio::test]
async fn options_are_set_before_definition_only_once() -> TestResult {
    let p = Platform::open("memory:").await?;
    p.set_method_options("later", options("custom/later"))?;
    assert!(
        p.method_info("later").is_none(),
        "options alone do not define a method"
    );
    assert!(matches!(
        p.set_method_options("later", options("again")),
        Err(Error::MethodOptions(_))
    ));
    assert!(matches!(
        p.method_with_options("later", options("twice"), |_, _| async { Ok(Value::Null) }),
        Err(Error::MethodOptions(_))
    ));
    p.method("later", |_, _| async { Ok(json!("ok")) })?;
    let info = p.method_info("later").ok_or("defined")?;
    assert_eq!(info.options.url.as_deref(), Some("custom/later"));
    assert!(matches!(
        p.set_method_options("later", options("x")),
        Err(Error::MethodOptions(_))
    ));
    assert!(matches!(
        p.method("later", |_, _| async { Ok(Value::Null) }),
        Err(Error::Duplicate(_))
    ));

    // A door's extractor is stored opaquely and found again by its type.
    type Echo = Arc<dyn Fn(&str) -> Vec<Value> + Send + Sync>;
    let echo: Echo = Arc::new(|body: &str| vec![json!(body)]);
    p.method_with_options(
        "echo",
        {
            let mut o = options("echo/:0");
            o.args_extractor = Some(ArgsExtractor::new(echo));
            o
        },
        |_, args| async move { Ok(Value::Array(args)) },
    )?;
    // A bad HTTP method cannot be written: it is refused where the name is parsed.
    assert!("fetch".parse::<HttpMethod>().is_err());
    let names: Vec<String> = p.methods().into_iter().map(|m| m.name).collect();
    assert_eq!(names, ["echo", "later"]);

    let info = p.method_info("echo").ok_or("echo")?;
    let stored = info.options.args_extractor.ok_or("extractor")?;
    assert!(stored.downcast_ref::<String>().is_none());
    let extract = stored.downcast_ref::<Echo>().ok_or("the door's type")?;
    assert_eq!(extract("hi"), vec![json!("hi")]);
    Ok(())
}

on_every_backend! {
    async fn methods_use_the_platform_as_the_caller(p: Platform) -> TestResult {
        let todos = p.collection("todos");
        todos.allow(Rules::new().insert(|user, _| async move { user.is_some() }));
        p.method("addTodo", |inv, args| async move {
            let text: String = arg(&args, 0)?;
            let todos = inv.platform().collection("todos");
            let id = todos
                .client_insert(inv.user_id(), doc(json!({"text": text, "owner": inv.user_id()})))
                .await?;
            Ok(json!(id))
        })?;
        let id = p.call("addTodo", Some("u1".into()), vec![json!("milk")]).await?.value;
        let stored = todos.get(id.as_str().ok_or("id")?).await?.ok_or("stored")?;
        assert_eq!(stored["owner"], json!("u1"));
        let err = p.call("addTodo", None, vec![json!("eggs")]).await.err().ok_or("denied")?;
        assert_eq!((err.error.as_str(), err.status), ("access-denied", Some(403)));
        assert_eq!(todos.count(&Selector::all()).await?, 1);
        Ok(())
    }
}
