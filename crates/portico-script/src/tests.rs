//! The engine's behaviour and limits, through the platform as the doors use it.

use std::time::{Duration, Instant};

use portico_platform::{MethodError, Platform};
use serde_json::{Value, json};

use crate::{LoadError, ScriptConfig, Scripts};

struct App {
    _dir: tempfile::TempDir,
    platform: Platform,
    scripts: Scripts,
}

fn write(dir: &std::path::Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
    }
}

async fn try_load(
    files: &[(&str, &str)],
    tune: impl FnOnce(&mut ScriptConfig),
) -> (tempfile::TempDir, Platform, Result<Scripts, LoadError>) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    write(dir.path(), files);
    let platform = Platform::open("memory:")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut config = ScriptConfig::new(files[0].0);
    config.runtimes = 2;
    tune(&mut config);
    let scripts = Scripts::load(dir.path(), config, platform.clone()).await;
    (dir, platform, scripts)
}

async fn app(files: &[(&str, &str)], tune: impl FnOnce(&mut ScriptConfig)) -> App {
    let (dir, platform, scripts) = try_load(files, tune).await;
    let scripts = scripts.unwrap_or_else(|e| panic!("{e}"));
    scripts.install(&platform).unwrap_or_else(|e| panic!("{e}"));
    App {
        _dir: dir,
        platform,
        scripts,
    }
}

async fn call(app: &App, name: &str, args: Value) -> Result<Value, MethodError> {
    let args = match args {
        Value::Array(a) => a,
        other => vec![other],
    };
    app.platform
        .call(name, None, args)
        .await
        .map(|reply| reply.value)
}

const MAIN: &str = r#"
import { methods, collection, PorticoError } from "portico";
import { twice } from "./lib/math.ts";

interface Item { name: string; n?: number }

methods({
  echo(x: unknown) { return x; },
  nothing() {},
  twice(n: number): number { return twice(n); },
  refuse() {
    const e = new PorticoError("not-allowed", "You may not", { why: 1 });
    throw e;
  },
  teapot() { const e = new PorticoError("tea", "short and stout"); (e as any).statusCode = 418; throw e; },
  created() { this.setHttpStatusCode(201); return "made"; },
  whoami() { return this.userId; },
  throwsString() { throw "oops"; },
  throwsError() { throw new Error("broken inside"); },
  cycle() { const a: any = {}; a.self = a; return a; },
  big() { return 10n; },
  fn() { return () => 1; },
  spin() { for (;;) {} },
  hog() { const a = []; for (;;) a.push("x".repeat(1000) + a.length); },
  deep() { const f = (n: number): number => f(n + 1) + 1; return f(0); },
  async store(name: string) {
    const items = collection("items");
    const id = await items.insert({ name } as Item);
    await items.update(id, { $set: { n: 2 } });
    const one = await items.findOne(id);
    const all = await items.find({ n: 2 }, { sort: { name: 1 } }).fetch();
    const count = await items.find().count();
    const removed = await items.remove({ _id: "nope" });
    return { one, names: all.map((d: any) => d.name), count, removed };
  },
  async badWrite() { return await collection("items").update({}, { $bogus: 1 }); },
  async sleepy() { await collection("items").find().fetch(); for (;;) {} },
});
"#;

const LIB: &str = "export function twice(n: number): number {\n  return n * 2;\n}\n";

async fn standard() -> App {
    app(
        &[("server/main.ts", MAIN), ("server/lib/math.ts", LIB)],
        |c| {
            c.timeout = Duration::from_millis(300);
            c.memory_mb = 32;
        },
    )
    .await
}

#[tokio::test]
async fn values_cross_both_ways() {
    let app = standard().await;
    let value =
        json!({"a": [1, 2.5, "x", null, true], "big": 9007199254740991_i64, "o": {"k": -3}});
    assert_eq!(
        call(&app, "echo", json!([value.clone()])).await.ok(),
        Some(value)
    );
    assert_eq!(
        call(&app, "nothing", json!([])).await.ok(),
        Some(Value::Null)
    );
    assert_eq!(call(&app, "twice", json!([21])).await.ok(), Some(json!(42)));
    let reply = app.platform.call("created", None, vec![]).await;
    assert_eq!(
        reply.map(|r| (r.value, r.status)).ok(),
        Some((json!("made"), Some(201)))
    );
    let reply = app.platform.call("whoami", Some("u1".into()), vec![]).await;
    assert_eq!(reply.map(|r| r.value).ok(), Some(json!("u1")));
}

#[tokio::test]
async fn portico_errors_are_client_errors_and_others_are_internal() {
    let app = standard().await;
    let e = call(&app, "refuse", json!([])).await.err();
    let e = e.unwrap_or_else(|| panic!("no error"));
    assert_eq!(
        (e.error.as_str(), e.reason.as_deref(), e.status),
        ("not-allowed", Some("You may not"), None)
    );
    assert_eq!(e.details.as_deref(), Some(&json!({"why": 1})));
    assert_eq!(e.status_or_default(), 400);
    let e = call(&app, "teapot", json!([]))
        .await
        .err()
        .map(|e| e.status);
    assert_eq!(e, Some(Some(418)));
    for name in ["throwsString", "throwsError", "cycle", "big", "fn"] {
        let e = call(&app, name, json!([]))
            .await
            .err()
            .unwrap_or_else(|| panic!("{name} succeeded"));
        assert!(e.internal, "{name}: {e:?}");
        assert_eq!(e.status, Some(500), "{name}");
        assert_eq!(e.reason.as_deref(), Some("Internal server error"), "{name}");
    }
}

#[tokio::test]
async fn limits_stop_a_call_and_the_runtime_goes_on() {
    let app = standard().await;
    for name in ["spin", "hog", "deep", "sleepy"] {
        let started = Instant::now();
        let e = call(&app, name, json!([]))
            .await
            .err()
            .unwrap_or_else(|| panic!("{name} succeeded"));
        assert_eq!(e.status, Some(500), "{name}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{name} took {:?}",
            started.elapsed()
        );
        // Both runtimes still answer.
        for _ in 0..2 {
            assert_eq!(
                call(&app, "twice", json!([2])).await.ok(),
                Some(json!(4)),
                "after {name}"
            );
        }
    }
}

#[tokio::test]
async fn the_data_api_goes_through_the_platform() {
    let app = standard().await;
    let reply = call(&app, "store", json!(["a"]))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(reply["one"]["name"], "a");
    assert_eq!(reply["one"]["n"], 2);
    assert_eq!(reply["names"], json!(["a"]));
    assert_eq!(reply["count"], 1);
    assert_eq!(reply["removed"], 0);
    let stored = app
        .platform
        .collection("items")
        .count(&portico_platform::Selector::all())
        .await;
    assert_eq!(stored.ok(), Some(1));
    let e = call(&app, "badWrite", json!([]))
        .await
        .err()
        .unwrap_or_else(|| panic!("accepted"));
    assert_eq!(e.status_or_default(), 400, "{e:?}");
}

#[tokio::test]
async fn many_calls_run_at_once() {
    let app = app(
        &[("server/main.ts", MAIN), ("server/lib/math.ts", LIB)],
        |c| {
            c.timeout = Duration::from_secs(30);
        },
    )
    .await;
    let calls = (0..200).map(|i| {
        app.scripts
            .call_method("store", None, None, vec![json!(format!("n{i}"))])
    });
    let results = futures::future::join_all(calls).await;
    if let Some(Err(e)) = results.iter().find(|r| r.is_err()) {
        panic!("{e:?}");
    }
    let stored = app
        .platform
        .collection("items")
        .count(&portico_platform::Selector::all())
        .await;
    assert_eq!(stored.ok(), Some(200));
}

#[tokio::test]
async fn load_errors_name_the_file_line_and_column() {
    let cases: [(&[(&str, &str)], &str); 5] = [
        (
            &[("main.ts", "const a: number = 1;\nconst b = ;\n")],
            "main.ts:2:",
        ),
        (
            &[("main.ts", "import { x } from './missing.ts';\n")],
            "main.ts:1:19",
        ),
        (
            &[
                ("main.ts", "import './lib.ts';\n"),
                ("lib.ts", "\n\nenum E { A }\n"),
            ],
            "lib.ts:3:1",
        ),
        (&[("main.js", "import _ from 'lodash';\n")], "main.js:1:15"),
        (
            &[("main.ts", "\nthrow new Error('at load');\n")],
            "main.ts:2",
        ),
    ];
    for (files, expected) in cases {
        let (_dir, _platform, loaded) = try_load(files, |_| {}).await;
        let e = loaded.err().unwrap_or_else(|| panic!("{expected}: loaded"));
        assert!(e.to_string().contains(expected), "{expected}: {e}");
    }
}

#[tokio::test]
async fn duplicate_definitions_name_both_places() {
    let main = "import { methods } from 'portico';\nmethods({ a() {} });\nmethods({ a() {} });\n";
    let (_dir, _platform, loaded) = try_load(&[("main.js", main)], |_| {}).await;
    let e = loaded.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("main.js:2:") && e.contains("main.js:3:"), "{e}");
}

#[tokio::test]
async fn idle_runtimes_are_small() {
    let app = standard().await;
    let sizes = app.scripts.memory_per_runtime().await;
    assert_eq!(sizes.len(), 2);
    for size in sizes {
        assert!(size > 0 && size < 8 * 1024 * 1024, "{size} bytes");
    }
}

#[tokio::test]
async fn a_reload_serves_new_code_and_a_broken_edit_keeps_the_old() {
    let app = app(
        &[(
            "main.js",
            "import { methods } from 'portico';\nmethods({ v() { return 1; } });\n",
        )],
        |_| {},
    )
    .await;
    assert_eq!(call(&app, "v", json!([])).await.ok(), Some(json!(1)));
    let main = app._dir.path().join("main.js");
    std::fs::write(
        &main,
        "import { methods } from 'portico';\nmethods({ v() { return 2; } });\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(app.scripts.reload().await.is_ok());
    assert_eq!(call(&app, "v", json!([])).await.ok(), Some(json!(2)));
    std::fs::write(
        &main,
        "import { methods } from 'portico';\nmethods({\n  v() { return ; ; ) } });\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let e = app
        .scripts
        .reload()
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("main.js:3:"), "{e}");
    assert_eq!(call(&app, "v", json!([])).await.ok(), Some(json!(2)));
}

const HOOKS: &str = r#"
import { collection, methods, PorticoError } from "portico";

const notes = collection("notes");
const log = collection("log");

notes.allow({ insert: () => true, update: () => true, remove: () => true });
notes.before.insert(function (userId, doc) {
  if (doc.text === "refuse") return false;
  if (doc.text === "throw") throw new PorticoError("bad-note", "No such notes", { text: doc.text });
  if (doc.text === "spin") for (;;) {}
  doc.by = userId ?? "server";
  doc.length = doc.text.length;
});
notes.before.insert((userId, doc) => { doc.second = doc.by + "!"; });
notes.after.insert(async function (userId, doc) {
  await log.insert({ op: "inserted", id: doc._id, by: userId, second: doc.second });
});
notes.before.update(function (userId, doc, fieldNames, modifier) {
  if (doc.locked) throw new PorticoError("locked", "This note is locked");
  modifier.$set = Object.assign(modifier.$set || {}, { edits: (doc.edits || 0) + 1 });
});
notes.after.update(async function (userId, doc, fieldNames) {
  await log.insert({ op: "updated", id: doc._id, was: this.previous.text, now: doc.text, fields: fieldNames });
});
notes.before.remove((userId, doc) => { if (doc.keep) throw new PorticoError("kept", "This note is kept"); });
notes.after.remove(async (userId, doc) => { await log.insert({ op: "removed", id: doc._id }); });
notes.after.remove(() => { throw new Error("after hooks fail alone"); });

methods({
  async add(text) { return await notes.insert({ text }); },
  async edit(id, text) { return await notes.update({ _id: id }, { $set: { text } }); },
  async drop(id) { return await notes.remove({ _id: id }); },
});
"#;

#[tokio::test]
async fn write_hooks_run_around_server_and_client_writes() {
    let app = app(&[("main.ts", HOOKS)], |c| {
        c.timeout = Duration::from_millis(300)
    })
    .await;
    let notes = app.platform.collection("notes");
    let log = app.platform.collection("log");
    let get = |id: &str| {
        let notes = notes.clone();
        let id = id.to_owned();
        async move {
            notes
                .get(&id)
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .unwrap_or_else(|| panic!("{id} missing"))
        }
    };
    let logged = |op: &'static str| {
        let log = log.clone();
        async move {
            let selector = portico_platform::Selector::parse(&json!({ "op": op }))
                .unwrap_or_else(|e| panic!("{e}"));
            log.find(&portico_platform::Query::new(selector))
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        }
    };

    // A server insert (from a method) and a client insert both go through both before hooks
    // in order, and the after hook sees the stored document.
    let id = call(&app, "add", json!(["hello"]))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let id = id.as_str().unwrap_or_else(|| panic!("{id}")).to_owned();
    let doc = get(&id).await;
    assert_eq!(doc["by"], "server");
    assert_eq!(doc["length"], 5);
    assert_eq!(doc["second"], "server!");
    let mut client_doc = portico_platform::Document::new();
    client_doc.insert("text".into(), json!("hi"));
    let client_id = notes
        .client_insert(Some("u1"), client_doc)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(get(&client_id).await["by"], "u1");
    let inserted = logged("inserted").await;
    assert_eq!(inserted.len(), 2);
    assert!(
        inserted
            .iter()
            .any(|l| l["id"] == json!(client_id) && l["by"] == "u1" && l["second"] == "u1!")
    );

    // A before hook that refuses, throws or runs too long: the write is not done, and the
    // caller gets the hook's error.
    let e = call(&app, "add", json!(["refuse"])).await.err();
    assert_eq!(e.map(|e| e.status_or_default()), Some(403));
    let e = call(&app, "add", json!(["throw"]))
        .await
        .err()
        .unwrap_or_else(|| panic!("a throwing hook let the insert through"));
    assert_eq!(e.error, "bad-note");
    assert_eq!(e.status_or_default(), 400);
    let e = call(&app, "add", json!(["spin"]))
        .await
        .err()
        .unwrap_or_else(|| panic!("a spinning hook let the insert through"));
    assert_eq!(e.status_or_default(), 500);
    assert_eq!(
        notes.count(&portico_platform::Selector::all()).await.ok(),
        Some(2),
        "a refused insert was stored"
    );

    // Updates: the hook's change to the modifier is applied; after hooks see the previous
    // document; a throwing before hook leaves the document as it was.
    assert_eq!(
        call(&app, "edit", json!([id, "changed"])).await.ok(),
        Some(json!(1))
    );
    let doc = get(&id).await;
    assert_eq!(
        (doc["text"].clone(), doc["edits"].clone()),
        (json!("changed"), json!(1))
    );
    let mut modifier = json!({"$set": {"text": "by client"}});
    assert_eq!(
        notes.client_update(Some("u1"), &id, &modifier).await.ok(),
        Some(1)
    );
    assert_eq!(get(&id).await["edits"], 2);
    let updated = logged("updated").await;
    assert!(
        updated
            .iter()
            .any(|l| l["was"] == "hello" && l["now"] == "changed")
    );
    assert!(
        updated
            .iter()
            .any(|l| l["was"] == "changed" && l["now"] == "by client")
    );
    notes
        .update(
            &portico_platform::Selector::by_id(&id),
            &portico_platform::Update::parse(&json!({"$set": {"locked": true}}))
                .unwrap_or_else(|e| panic!("{e}")),
            portico_platform::UpdateOptions::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    modifier = json!({"$set": {"text": "sneaky"}});
    let e = notes.client_update(Some("u1"), &id, &modifier).await.err();
    assert_eq!(e.map(|e| e.status_code()), Some(400));
    assert_eq!(get(&id).await["text"], "by client");

    // Removes: a throwing before hook keeps the document; the after hooks run (one failing
    // alone) once it is gone.
    notes
        .update(
            &portico_platform::Selector::by_id(&client_id),
            &portico_platform::Update::parse(&json!({"$set": {"keep": true}}))
                .unwrap_or_else(|e| panic!("{e}")),
            portico_platform::UpdateOptions::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let e = notes.client_remove(Some("u1"), &client_id).await.err();
    assert_eq!(e.map(|e| e.status_code()), Some(400));
    let _ = get(&client_id).await;
    assert_eq!(call(&app, "drop", json!([id])).await.ok(), Some(json!(1)));
    assert!(notes.get(&id).await.ok().flatten().is_none());
    let removed = logged("removed").await;
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0]["id"], json!(id));
}
