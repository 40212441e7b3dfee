//! A script's write hooks (`collection(name).before.insert(f)`, `.after.update(f)`, ...) as the
//! platform's [`WriteHooks`] of that collection.

use futures::FutureExt;
use futures::future::BoxFuture;
use portico_platform::{Document, HookOp, HookWhen, MethodError, WriteHooks, hook_refusal};
use serde_json::{Value, json};

use crate::runtime::Kind;
use crate::{HookDefinition, Scripts};

/// One collection's hooks, in the order the scripts gave them.
pub(crate) struct ScriptHooks {
    scripts: Scripts,
    collection: String,
    hooks: Vec<HookDefinition>,
}

fn op_name(op: HookOp) -> &'static str {
    match op {
        HookOp::Insert => "insert",
        HookOp::Update => "update",
        HookOp::Remove => "remove",
    }
}

impl ScriptHooks {
    pub(crate) fn new(
        scripts: Scripts,
        collection: String,
        hooks: Vec<HookDefinition>,
    ) -> ScriptHooks {
        ScriptHooks {
            scripts,
            collection,
            hooks,
        }
    }

    /// The hooks of `op` at `when`, as (index, place).
    fn of(&self, when: HookWhen, op: HookOp) -> Vec<(usize, String)> {
        self.hooks
            .iter()
            .filter(|h| h.when == when && h.op == op)
            .map(|h| (h.index, h.place.clone()))
            .collect()
    }

    /// Runs the before hooks of `op` one after the other on `args`, each seeing what the one
    /// before left; the arguments as the last one left them. `false` from a hook, or a failure,
    /// refuses the write.
    fn before(
        &self,
        op: HookOp,
        user_id: Option<String>,
        mut args: Value,
    ) -> BoxFuture<'static, portico_platform::Result<Value>> {
        let scripts = self.scripts.clone();
        let collection = self.collection.clone();
        let hooks = self.of(HookWhen::Before, op);
        async move {
            // The write these hooks run for: a job they enqueue is stored with it.
            let write = portico_platform::jobs::current_write();
            let timeout = scripts.config().timeout;
            for (index, place) in hooks {
                let context = json!({ "index": index, "userId": user_id });
                let outcome = scripts
                    .call_with(Kind::Hook, &collection, &context, &args, write, timeout)
                    .await
                    .map_err(|e| {
                        hook_refusal(crate::error::method_error(
                            e,
                            &format!("before.{} hook at {place}", op_name(op)),
                        ))
                    })?;
                if outcome.value.get("result") == Some(&Value::Bool(false)) {
                    return Err(hook_refusal(
                        MethodError::new(
                            "access-denied",
                            format!(
                                "Refused by a before.{} hook of collection {collection}",
                                op_name(op)
                            ),
                        )
                        .with_status(403),
                    ));
                }
                if let Some(changed) = outcome.value.get("args") {
                    args = changed.clone();
                }
            }
            Ok(args)
        }
        .boxed()
    }

    /// Runs the after hooks of `op` on `args`; a failure is logged with the hook's place.
    fn after(
        &self,
        op: HookOp,
        user_id: Option<String>,
        previous: Option<Document>,
        args: Value,
    ) -> BoxFuture<'static, ()> {
        let scripts = self.scripts.clone();
        let collection = self.collection.clone();
        let hooks = self.of(HookWhen::After, op);
        async move {
            for (index, place) in hooks {
                let mut context = json!({ "index": index, "userId": user_id });
                if let Some(previous) = &previous {
                    context["previous"] = Value::Object(previous.clone());
                }
                if let Err(e) = scripts
                    .call(Kind::Hook, &collection, &context, &args)
                    .await
                {
                    portico_platform::error_in_request!(target: "portico::script", script = %place, "an after.{} hook of collection {collection:?} failed (the write stands): {e}", op_name(op));
                }
            }
        }
        .boxed()
    }
}

/// The document at `index` of a hook's arguments.
fn document_at(args: &Value, index: usize, what: &str) -> portico_platform::Result<Document> {
    match args.get(index) {
        Some(Value::Object(doc)) => Ok(doc.clone()),
        _ => Err(hook_refusal(MethodError::internal(format!(
            "a {what} hook left its document argument not an object"
        )))),
    }
}

impl WriteHooks for ScriptHooks {
    fn watches(&self, when: HookWhen, op: HookOp) -> bool {
        self.hooks.iter().any(|h| h.when == when && h.op == op)
    }

    fn before_insert(
        &self,
        user_id: Option<String>,
        doc: Document,
    ) -> BoxFuture<'static, portico_platform::Result<Document>> {
        let run = self.before(HookOp::Insert, user_id.clone(), json!([user_id, doc]));
        async move { document_at(&run.await?, 1, "before.insert") }.boxed()
    }

    fn before_update(
        &self,
        user_id: Option<String>,
        doc: Document,
        fields: Vec<String>,
        modifier: Value,
    ) -> BoxFuture<'static, portico_platform::Result<Value>> {
        let run = self.before(
            HookOp::Update,
            user_id.clone(),
            json!([user_id, doc, fields, modifier]),
        );
        async move {
            let args = run.await?;
            match args.get(3) {
                Some(modifier @ Value::Object(_)) => Ok(modifier.clone()),
                _ => Err(hook_refusal(MethodError::internal(
                    "a before.update hook left its modifier argument not an object",
                ))),
            }
        }
        .boxed()
    }

    fn before_remove(
        &self,
        user_id: Option<String>,
        doc: Document,
    ) -> BoxFuture<'static, portico_platform::Result<()>> {
        let run = self.before(HookOp::Remove, user_id.clone(), json!([user_id, doc]));
        async move { run.await.map(|_| ()) }.boxed()
    }

    fn after_insert(&self, user_id: Option<String>, doc: Document) -> BoxFuture<'static, ()> {
        self.after(HookOp::Insert, user_id.clone(), None, json!([user_id, doc]))
    }

    fn after_update(
        &self,
        user_id: Option<String>,
        doc: Document,
        previous: Document,
        fields: Vec<String>,
        modifier: Value,
    ) -> BoxFuture<'static, ()> {
        self.after(
            HookOp::Update,
            user_id.clone(),
            Some(previous),
            json!([user_id, doc, fields, modifier]),
        )
    }

    fn after_remove(&self, user_id: Option<String>, doc: Document) -> BoxFuture<'static, ()> {
        self.after(HookOp::Remove, user_id.clone(), None, json!([user_id, doc]))
    }
}
