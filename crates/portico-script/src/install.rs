//! Script methods, publications, rules and write hooks registered on the platform like Rust ones.

use portico_platform::jobs::{Backoff, CronSpec, JobOptions};
use portico_platform::{
    Cursor, EndpointOptions, HookOp, MethodError, Platform, Query, Rules, public_user,
};
use portico_store::{Projection, Selector, Sort};
use serde_json::{Value, json};

use crate::error::{LoadError, method_error};
use crate::runtime::Kind;
use crate::{Definition, Scripts};

fn options(def: &Definition, kind: &str) -> Result<EndpointOptions, LoadError> {
    let mut options = EndpointOptions::default();
    options.url = def.url.clone();
    if let Some(method) = &def.http_method {
        options.http_method = Some(method.parse().map_err(|e| {
            LoadError::Definition(format!("{kind} {:?} at {}: {e}", def.name, def.place))
        })?);
    }
    Ok(options)
}

fn taken(kind: &str, def: &Definition, e: &portico_platform::Error) -> LoadError {
    LoadError::Definition(format!(
        "{kind} {:?} defined at {} is defined already elsewhere ({e})",
        def.name, def.place
    ))
}

/// The public record of `user_id`, for `this.user`.
async fn user_of(platform: &Platform, user_id: Option<&str>) -> Value {
    match user_id {
        Some(id) => match platform.accounts().find_user_by_id(id).await {
            Ok(Some(user)) => Value::Object(public_user(&user)),
            _ => Value::Null,
        },
        None => Value::Null,
    }
}

/// A query from the prelude's `{collection, selector, options}`.
fn cursor(value: &Value) -> Result<Cursor, MethodError> {
    let bad = |e: portico_store::Error| MethodError::from(portico_platform::Error::from(e));
    let collection = value
        .get("collection")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut query =
        Query::new(Selector::parse(value.get("selector").unwrap_or(&Value::Null)).map_err(bad)?);
    let options = value.get("options").cloned().unwrap_or(Value::Null);
    if let Some(sort) = options.get("sort").filter(|v| !v.is_null()) {
        query.sort = Some(Sort::parse(sort).map_err(bad)?);
    }
    query.skip = options.get("skip").and_then(Value::as_u64).unwrap_or(0);
    query.limit = options.get("limit").and_then(Value::as_u64);
    if let Some(fields) = options.get("fields").filter(|v| !v.is_null()) {
        query.projection = Some(Projection::parse(fields).map_err(bad)?);
    }
    Ok(Cursor::new(collection, query))
}

pub(crate) fn install(scripts: &Scripts, platform: &Platform) -> Result<(), LoadError> {
    let defs = scripts.definitions().clone();
    for def in &defs.methods {
        install_method(scripts, platform, def)?;
    }
    for def in &defs.publications {
        install_publication(scripts, platform, def)?;
    }
    for rule in &defs.rules {
        install_rule(scripts, platform, rule);
    }
    install_hooks(scripts, platform, &defs.hooks);
    for job in &defs.jobs {
        define_job(scripts, platform, job)?;
    }
    crate::channels::install(scripts, platform, &defs.channels);
    for def in &defs.crons {
        schedule_cron(platform, def)?;
    }
    Ok(())
}

/// Registers the script method `def`: each call runs the script's function as the caller.
fn install_method(
    scripts: &Scripts,
    platform: &Platform,
    def: &Definition,
) -> Result<(), LoadError> {
    let name = def.name.clone();
    // What its failures are logged as: the method and where it is defined.
    let what = format!("method {:?} at {}", def.name, def.place);
    let scripts = scripts.clone();
    let handler = move |inv: portico_platform::Invocation, args: Vec<Value>| {
        let scripts = scripts.clone();
        let name = name.clone();
        let what = what.clone();
        async move {
            let user = user_of(inv.platform(), inv.user_id()).await;
            let context = json!({ "userId": inv.user_id(), "user": user });
            match scripts
                .call(Kind::Method, &name, &context, &Value::Array(args))
                .await
            {
                Ok(outcome) => {
                    if let Some(status) = outcome.status {
                        inv.set_http_status_code(status);
                    }
                    Ok(outcome.value)
                }
                Err(e) => Err(method_error(e, &what)),
            }
        }
    };
    let result = if def.url.is_some() || def.http_method.is_some() {
        platform.method_with_options(&def.name, options(def, "method")?, handler)
    } else {
        platform.method(&def.name, handler)
    };
    result.map_err(|e| taken("method", def, &e))?;
    Ok(())
}

/// Registers the script publication `def`: each subscription runs the script's function and
/// publishes what it returns.
fn install_publication(
    scripts: &Scripts,
    platform: &Platform,
    def: &Definition,
) -> Result<(), LoadError> {
    let name = def.name.clone();
    let what = format!("publication {:?} at {}", def.name, def.place);
    let scripts = scripts.clone();
    let handler = move |sub: portico_platform::Subscription, args: Vec<Value>| {
        let scripts = scripts.clone();
        let name = name.clone();
        let what = what.clone();
        async move {
            let user = user_of(sub.platform(), sub.user_id()).await;
            let context = json!({ "userId": sub.user_id(), "user": user });
            let outcome = scripts
                .call(Kind::Publish, &name, &context, &Value::Array(args))
                .await
                .map_err(|e| method_error(e, &what))?;
            publish(&sub, &outcome.value)
        }
    };
    platform
        .publish_with_options(&def.name, options(def, "publication")?, handler)
        .map_err(|e| taken("publication", def, &e))?;
    Ok(())
}

/// Adds the script's allow or deny `rule` to its collection; a rule that fails denies.
fn install_rule(scripts: &Scripts, platform: &Platform, rule: &crate::RuleDefinition) {
    let collection = platform.collection(&rule.collection);
    let deny = rule.kind == "deny";
    let ask = {
        let scripts = scripts.clone();
        let name = rule.collection.clone();
        let index = rule.index;
        let place = rule.place.clone();
        move |args: Value| {
            let scripts = scripts.clone();
            let name = name.clone();
            let place = place.clone();
            async move {
                match scripts
                    .call(Kind::Rule, &name, &json!({ "index": index }), &args)
                    .await
                {
                    Ok(outcome) => outcome.value.as_bool().unwrap_or(false),
                    Err(e) => {
                        portico_platform::error_in_request!(target: "portico::script", script = %place, "a rule of collection {name:?} failed, so the write is refused: {e}");
                        // A failing rule never lets a write through.
                        deny
                    }
                }
            }
        }
    };
    let rules = match rule.op {
        HookOp::Insert => Rules::new().insert(move |user, doc| ask(json!([user, doc]))),
        HookOp::Update => Rules::new()
            .update(move |user, doc, fields, modifier| ask(json!([user, doc, fields, modifier]))),
        HookOp::Remove => Rules::new().remove(move |user, doc| ask(json!([user, doc]))),
    };
    let rules = rules.described(format!("{} function at {}", rule.kind, rule.place));
    if deny {
        collection.deny(rules);
    } else {
        collection.allow(rules);
    }
}

/// Sets the scripts' write hooks on their collections, one hook set per collection.
fn install_hooks(scripts: &Scripts, platform: &Platform, defs: &[crate::HookDefinition]) {
    let mut hooks: std::collections::BTreeMap<String, Vec<crate::HookDefinition>> =
        std::collections::BTreeMap::new();
    for hook in defs {
        hooks
            .entry(hook.collection.clone())
            .or_default()
            .push(hook.clone());
    }
    for (name, list) in hooks {
        platform
            .collection(&name)
            .set_hooks(std::sync::Arc::new(crate::hooks::ScriptHooks::new(
                scripts.clone(),
                name,
                list,
            )));
    }
}

/// Schedules the script cron `def` (its job is `cron:NAME`).
fn schedule_cron(platform: &Platform, def: &crate::CronDefinition) -> Result<(), LoadError> {
    let refused =
        |e: String| LoadError::Definition(format!("cron {:?} at {}: {e}", def.name, def.place));
    let spec = CronSpec::parse(&def.expression, def.timezone.as_deref())
        .map_err(|e| refused(e.to_string()))?;
    platform
        .jobs()
        .schedule(&def.name, spec, &format!("cron:{}", def.name))
        .map_err(|e| refused(e.to_string()))?;
    Ok(())
}

/// Defines the script job `def` on `platform`: each run calls the script's function with the
/// job's arguments, within the job's `timeout_ms`.
fn define_job(
    scripts: &Scripts,
    platform: &Platform,
    def: &crate::JobDefinition,
) -> Result<(), LoadError> {
    let mut options = JobOptions::default();
    let refused =
        |e: String| LoadError::Definition(format!("job {:?} at {}: {e}", def.name, def.place));
    if let Some(retries) = def.retries {
        options.retries = retries;
    }
    if let Some(backoff) = &def.backoff {
        options.backoff = Backoff::parse(backoff).map_err(|e| refused(e.to_string()))?;
    }
    if let Some(ms) = def.timeout_ms {
        options.timeout = std::time::Duration::from_millis(ms);
    }
    if let Some(ms) = def.retry_delay_ms {
        options.retry_delay = std::time::Duration::from_millis(ms);
    }
    let scripts = scripts.clone();
    let name = def.name.clone();
    let timeout = options.timeout;
    platform
        .jobs()
        .define(&def.name, options, move |run, args| {
            let scripts = scripts.clone();
            let name = name.clone();
            async move {
                let context =
                    json!({ "jobId": run.id, "attempt": run.attempt, "runId": run.run_id });
                scripts
                    .call_with(Kind::Job, &name, &context, &args, None, timeout)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        })
        .map_err(|e| refused(e.to_string()))
}

/// Applies a publication's answer `{cursors, events}` to `sub`.
fn publish(
    sub: &portico_platform::Subscription,
    value: &Value,
) -> Result<Vec<Cursor>, MethodError> {
    let empty = Vec::new();
    let fields = |v: Option<&Value>| match v {
        Some(Value::Object(m)) => m.clone(),
        _ => serde_json::Map::new(),
    };
    for event in value
        .get("events")
        .and_then(Value::as_array)
        .unwrap_or(&empty)
    {
        let part = |i: usize| event.get(i).and_then(Value::as_str).unwrap_or_default();
        match part(0) {
            "added" => sub.added(part(1), part(2), fields(event.get(3))),
            "changed" => sub.changed(part(1), part(2), fields(event.get(3))),
            "removed" => sub.removed(part(1), part(2)),
            "ready" => sub.ready(),
            _ => {}
        }
    }
    value
        .get("cursors")
        .and_then(Value::as_array)
        .unwrap_or(&empty)
        .iter()
        .map(cursor)
        .collect()
}
