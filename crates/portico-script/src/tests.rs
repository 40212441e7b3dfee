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
