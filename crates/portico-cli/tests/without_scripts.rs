//! A `portico` built without the `scripts` feature (`--no-default-features --features
//! full,jemalloc`): a config with `[scripts]` is refused by every command that would load the
//! scripts, saying how to get them back, never served without them; everything else works.
//!
//! A test target of its own, so that the slim build's test step compiles this file only, not
//! the whole integration binary; in a build with scripts it is empty.

#![cfg(not(feature = "scripts"))]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on setup failures

use portico_testkit::{Workspace, text};

const CONFIG: &str =
    "[scripts]\nmain = \"main.ts\"\n[[api]]\n[[api.collection]]\nname = \"items\"\n";
const MAIN: &str = "import { api } from \"portico\";\napi(\"api\").addRoute(\"hello\", { get() { return 1; } });\n";
const REFUSAL: &str = "this portico was built without scripts";

fn workspace() -> Workspace {
    let ws = Workspace::new();
    std::fs::write(ws.path("main.ts"), MAIN).expect("main.ts");
    ws.config(CONFIG);
    ws
}

#[test]
fn check_refuses_scripts_naming_the_feature_and_the_line() {
    let ws = workspace();
    let stderr = ws.check_refuses(CONFIG);
    assert!(stderr.contains(REFUSAL), "{stderr}");
    assert!(stderr.contains("--features scripts"), "{stderr}");
    // `[scripts]` is on line 2 of the file (the workspace writes `database` on line 1).
    assert!(stderr.contains("[scripts] (line 2)"), "{stderr}");
}

#[test]
fn serve_routes_openapi_and_types_refuse_scripts() {
    let ws = workspace();
    let stderr = ws.serve_refuses();
    assert!(stderr.contains(REFUSAL), "serve: {stderr}");
    for args in [
        &["routes", "--config", "portico.toml"][..],
        &["openapi", "--config", "portico.toml"],
        &["types", "--client", "--config", "portico.toml"],
        // The scripts' own module has no declarations to print.
        &["types"],
    ] {
        let out = ws.run(args);
        assert!(!out.status.success(), "{args:?}: {}", text(&out.stdout));
        assert!(
            text(&out.stderr).contains(REFUSAL),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn a_config_without_scripts_is_checked_and_listed_as_before() {
    let ws = Workspace::new();
    ws.config("[[api]]\n[[api.collection]]\nname = \"items\"\n");
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stdout).contains("scripts:"),
        "{}",
        text(&out.stdout)
    );
    let out = ws.run(&["routes", "--config", "portico.toml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("/api/items"),
        "{}",
        text(&out.stdout)
    );
}
