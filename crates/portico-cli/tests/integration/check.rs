//! `portico check`: every mistake named with its line and key, exit codes.

use super::common::{Workspace, text};

fn check(body: &str) -> (bool, String, String) {
    let ws = Workspace::new();
    ws.config(body);
    let out = ws.run(&["check", "--config", "portico.toml"]);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn the_shipped_example_is_valid() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/portico.toml");
    let out = Workspace::new().run(&["check", "--config", example]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("ok: "), "{stdout}");
    assert!(stdout.contains("1 route API, 2 collections"), "{stdout}");
}

#[test]
fn unknown_keys_are_named_with_line_and_key() {
    // Line 1 is the `database` line the workspace writes.
    let (ok, _, stderr) = check("[[api]]\napi_path = \"api/\"\nuse_defualt_auth = true\n");
    assert!(!ok);
    assert!(stderr.contains("line 4"), "{stderr}");
    assert!(stderr.contains("key `api.use_defualt_auth`"), "{stderr}");
    assert!(stderr.contains("unknown field"), "{stderr}");
}

#[test]
fn wrong_types_are_named_with_line_and_key() {
    let (ok, _, stderr) =
        check("[[api]]\n[[api.collection]]\nname = \"a\"\nmax_page_size = \"lots\"\n");
    assert!(!ok);
    assert!(stderr.contains("line 5"), "{stderr}");
    assert!(
        stderr.contains("key `api.collection.max_page_size`"),
        "{stderr}"
    );
}

#[test]
fn a_bad_rule_is_named_with_line_and_key() {
    let (ok, _, stderr) =
        check("[auto]\ncollections = [\"w\"]\n[auto.rules.w]\nupdate = \"owner\"\n");
    assert!(!ok);
    assert!(stderr.contains("line 5"), "{stderr}");
    assert!(stderr.contains("key `auto.rules.w.update`"), "{stderr}");
    assert!(stderr.contains("owner:"), "{stderr}");
}

#[test]
fn two_routes_on_one_path_are_refused() {
    let (ok, _, stderr) = check(
        "[[api]]\n[[api.collection]]\nname = \"a\"\npath = \"things\"\n[[api.collection]]\nname = \"b\"\npath = \"things\"\n",
    );
    assert!(!ok);
    assert!(stderr.contains("line 7"), "{stderr}");
    assert!(stderr.contains("two routes on one path"), "{stderr}");
    assert!(stderr.contains("/api/things"), "{stderr}");
}

#[test]
fn every_mistake_is_printed_at_once() {
    let (ok, _, stderr) = check(
        "listen = \"nowhere\"\n[[api]]\nprety_json = true\n[[api.collection]]\nname = \"a\"\nauth_required = \"no\"\n[auto]\n[auto.rules.a]\ninsert = \"everyone\"\n",
    );
    assert!(!ok);
    // Two the parser finds (one after the other), two found once the rest parses.
    for expected in [
        "line 2, column 10, key `listen`",
        "line 4, column 1, key `api.prety_json`: unknown field `prety_json`",
        "line 7, column 17, key `api.collection.auth_required`",
        "line 10, column 10, key `auto.rules.a.insert`",
    ] {
        assert!(
            stderr.contains(expected),
            "missing {expected:?} in {stderr}"
        );
    }
    assert!(stderr.contains("4 mistakes"), "{stderr}");
}

#[test]
fn semantic_mistakes_are_all_printed() {
    let (ok, _, stderr) =
        check("listen = \"nowhere\"\n[auto]\n[auto.rules.a]\ninsert = \"everyone\"\n");
    assert!(!ok);
    assert!(
        stderr.contains("line 2, column 10, key `listen`"),
        "{stderr}"
    );
    assert!(stderr.contains("key `auto.rules.a.insert`"), "{stderr}");
    assert!(stderr.contains("2 mistakes"), "{stderr}");
}

#[test]
fn a_missing_file_is_an_error() {
    let out = Workspace::new().run(&["check", "--config", "nope.toml"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("cannot read config file nope.toml"));
}

#[test]
fn serve_refuses_a_bad_config_with_the_same_message() {
    let ws = Workspace::new();
    ws.config("[[api]]\nverison = \"v1\"\n");
    let out = ws.run(&[
        "serve",
        "--config",
        "portico.toml",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("line 3") && stderr.contains("key `api.verison`"),
        "{stderr}"
    );
    assert!(text(&out.stdout).is_empty(), "nothing may be served");
}

#[test]
fn an_unreachable_database_is_named_with_its_line() {
    let ws = Workspace::new();
    std::fs::write(
        ws.path("portico.toml"),
        "# my server\ndatabase = \"sqlite:/no/such/dir/p.db\"\n",
    )
    .expect("config");
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("line 2, column 12, key `database`"),
        "{stderr}"
    );
    assert!(stderr.contains("/no/such/dir"), "{stderr}");

    std::fs::write(ws.path("not-a-db"), "hello").expect("file");
    std::fs::write(ws.path("portico.toml"), "database = \"sqlite:not-a-db\"\n").expect("config");
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(
        text(&out.stderr).contains("not a SQLite database"),
        "{}",
        text(&out.stderr)
    );
    assert!(!ws.path("p.db").exists());

    std::fs::write(
        ws.path("portico.toml"),
        "database = \"postgres://db.invalid/p\"\n",
    )
    .expect("config");
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("key `database`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn check_opens_the_database_the_way_serve_does_and_takes_database() {
    let ws = Workspace::new();
    // The directory exists, but nothing can be created in it.
    std::fs::write(
        ws.path("portico.toml"),
        "database = \"sqlite:/proc/portico-check.db\"\n",
    )
    .expect("config");
    let out = ws.run(&["check", "--config", "portico.toml"]);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("line 1, column 12, key `database`"),
        "{stderr}"
    );

    // --database wins over the config, and checking a new file leaves nothing behind.
    let fresh = format!("sqlite:{}", ws.path("fresh.db").display());
    let out = ws.run(&["check", "--config", "portico.toml", "--database", &fresh]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let leftovers: Vec<_> = std::fs::read_dir(ws.dir.path())
        .expect("dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("fresh"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let out = ws.run(&[
        "check",
        "--config",
        "portico.toml",
        "--database",
        "sqlite:/proc/x.db",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("/proc/x.db"),
        "{}",
        text(&out.stderr)
    );
}

/// One overlap between two kinds of route owner: the config (after the `database` line the
/// workspace writes as line 1), the scripts' `main.ts` when any, and what `portico check` must
/// say: the line and key it blames, and both sides.
struct Clash {
    kinds: &'static str,
    config: &'static str,
    script: Option<&'static str>,
    expected: &'static [&'static str],
}

const ACCOUNTS: &str = "[accounts]\napp_url = \"https://app.example.com\"\n";

const CLASHES: &[Clash] = &[
    Clash {
        kinds: "collection / collection",
        config: "[[api]]\n[[api.collection]]\nname = \"a\"\npath = \"x\"\n[[api.collection]]\nname = \"b\"\npath = \"x\"\n",
        script: None,
        expected: &[
            "line 7, column 1, key `api.collection.path`",
            "/api/x of the [[api.collection]] \"b\" at line 7 is answered already by the [[api.collection]] \"a\" at line 4",
        ],
    },
    Clash {
        kinds: "script route / collection",
        config: "[scripts]\nmain = \"main.ts\"\n[[api]]\n[[api.collection]]\nname = \"items\"\n",
        script: Some("api(\"api\").addRoute(\"items/:key\", { get() { return 1; } });\n"),
        expected: &[
            "key `scripts`",
            "/api/items/:key of the script route at main.ts:2",
            "is answered already by the [[api.collection]] \"items\" at line 6 (as /api/items/:id)",
        ],
    },
    Clash {
        kinds: "script route / login route of use_default_auth",
        config: "[scripts]\nmain = \"main.ts\"\n[[api]]\nuse_default_auth = true\n",
        script: Some("api(\"api\").addRoute(\"login\", { post() { return 1; } });\n"),
        expected: &[
            "/api/login of the script route at main.ts:2",
            "is answered already by use_default_auth of the [[api]] at line 4",
        ],
    },
    Clash {
        kinds: "collection / health probe",
        config: "[[api]]\napi_path = \"/\"\n[[api.collection]]\nname = \"healthz\"\n",
        script: None,
        expected: &[
            "line 5, column 1, key `api.collection.path`",
            "/healthz of the [[api.collection]] \"healthz\" at line 5 is answered already by the health probe /healthz",
        ],
    },
    Clash {
        kinds: "collection / metrics",
        config: "[metrics]\n[[api]]\napi_path = \"/\"\n[[api.collection]]\nname = \"items\"\npath = \"metrics\"\n",
        script: None,
        expected: &[
            "/metrics of the [[api.collection]] \"items\" at line 6 is answered already by the metrics of [metrics]",
        ],
    },
    Clash {
        kinds: "auto route / OpenAPI document",
        config: "[auto]\n[[auto.publication]]\nname = \"p\"\ncollection = \"w\"\nurl = \"openapi.json\"\n",
        script: None,
        expected: &[
            "line 2, column 1, key `auto`",
            "/openapi.json of the auto API ([auto] at line 2) is answered already by the OpenAPI document",
        ],
    },
    Clash {
        // A defect before the registry: only a panic caught around axum's merge found it.
        kinds: "auto route / account routes under /auth/",
        config: "[auto]\n[[auto.publication]]\nname = \"p\"\ncollection = \"w\"\nurl = \"auth/methods\"\n[accounts]\napp_url = \"https://app.example.com\"\n",
        script: None,
        expected: &[
            "line 2, column 1, key `auto`",
            "/auth/methods of the auto API ([auto] at line 2) is under /auth/, which the account routes of [accounts] and [email] answers wholly",
        ],
    },
    Clash {
        kinds: "collection / account routes under /auth/",
        config: "[[api]]\napi_path = \"/\"\n[[api.collection]]\nname = \"auth\"\n[accounts]\napp_url = \"https://app.example.com\"\n",
        script: None,
        expected: &[
            "line 5, column 1, key `api.collection.path`",
            "of the [[api.collection]] \"auth\" at line 5 is under /auth/, which the account routes",
        ],
    },
    Clash {
        kinds: "auto route / [[api]] base path",
        config: "[[api]]\n[[api.collection]]\nname = \"a\"\n[auto]\n[[auto.publication]]\nname = \"p\"\ncollection = \"w\"\nurl = \"api/feed\"\n",
        script: None,
        expected: &[
            "line 5, column 1, key `auto`",
            "/api/feed of the auto API ([auto] at line 5) is under the base path /api/ of the [[api]] at line 2, which answers every path below it",
        ],
    },
    Clash {
        kinds: "[[api]] / [[api]]",
        config: "[[api]]\n[[api.collection]]\nname = \"a\"\n[[api]]\n[[api.collection]]\nname = \"b\"\npath = \"b\"\n",
        script: None,
        expected: &[
            "line 5, column 1, key `api.api_path`",
            "the [[api]] at line 5 answers every path below /api/, and the [[api]] at line 2 every path below /api/",
        ],
    },
    Clash {
        kinds: "[[api]] at the root / auto API",
        config: "[auto]\n[[api]]\napi_path = \"/\"\n",
        script: None,
        expected: &[
            "line 3, column 1, key `api.api_path`",
            "the [[api]] at line 3 answers every path below /, and the auto API ([auto] at line 2) every path below /",
        ],
    },
    Clash {
        kinds: "[[api]] / admin page",
        config: "[admin]\npath = \"/console\"\n[[api]]\napi_path = \"console/x\"\n",
        script: None,
        expected: &[
            "line 4, column 1, key `api.api_path`",
            "the [[api]] at line 4 answers every path below /console/x/, and the admin page ([admin] path) every path below /console/",
        ],
    },
    Clash {
        kinds: "admin page / account routes",
        config: "[admin]\npath = \"/auth/admin\"\n[accounts]\napp_url = \"https://app.example.com\"\n",
        script: None,
        expected: &[
            "key `admin.path`",
            "the admin page ([admin] path) answers every path below /auth/admin/, and the account routes of [accounts] and [email] every path below /auth/",
        ],
    },
    Clash {
        kinds: "script route / readiness probe",
        config: "[scripts]\nmain = \"main.ts\"\n[[api]]\napi_path = \"/\"\n",
        script: Some("api(\"/\").addRoute(\"readyz\", { get() { return 1; } });\n"),
        expected: &[
            "key `scripts`",
            "/readyz of the script route at main.ts:2",
            "is answered already by the readiness probe /readyz",
        ],
    },
    Clash {
        kinds: "auto route / admin page",
        config: "[auto]\n[[auto.publication]]\nname = \"p\"\ncollection = \"w\"\nurl = \"_/feed\"\n",
        script: None,
        expected: &[
            "line 2, column 1, key `auto`",
            "/_/feed of the auto API ([auto] at line 2) is under /_/, which the admin page ([admin] path) answers wholly",
        ],
    },
    Clash {
        kinds: "collection / batch route",
        config: "[[api]]\n[[api.collection]]\nname = \"batch\"\n",
        script: None,
        expected: &[
            "line 2, column 1, key `api.batch_limit`",
            "/api/batch of the batch route of the [[api]] at line 2 is answered already by the [[api.collection]] \"batch\" at line 4",
        ],
    },
];

#[test]
fn every_route_clash_is_refused_naming_both_sides() {
    for clash in CLASHES {
        let ws = Workspace::new();
        if let Some(script) = clash.script {
            let main = format!("import {{ api }} from \"portico\";\n{script}");
            std::fs::write(ws.path("main.ts"), main).expect("main.ts");
        }
        let stderr = ws.check_refuses(clash.config);
        if clash.config.contains("[scripts]") && !cfg!(feature = "scripts") {
            // A build without scripts refuses `[scripts]` before any route is built.
            assert!(
                stderr.contains("this portico was built without scripts"),
                "{}: {stderr}",
                clash.kinds
            );
            continue;
        }
        for expected in clash.expected {
            assert!(
                stderr.contains(expected),
                "{}: missing {expected:?} in {stderr}",
                clash.kinds
            );
        }
    }
}

/// `serve` and `portico routes` refuse what `check` does, with the same words: here the clash
/// under `/auth/` that once surfaced only as a panic caught around axum's merge.
#[test]
fn serve_and_routes_refuse_a_route_under_the_account_routes() {
    let ws = Workspace::new();
    ws.config(&format!(
        "[auto]\n[[auto.publication]]\nname = \"p\"\ncollection = \"w\"\nurl = \"auth/methods\"\n{ACCOUNTS}"
    ));
    let expected = "/auth/methods of the auto API ([auto] at line 2) is under /auth/";
    let stderr = ws.serve_refuses();
    assert!(stderr.contains(expected), "{stderr}");
    // `portico routes` builds the same doors, and refuses them the same way.
    let out = ws.run(&["routes", "--config", "portico.toml"]);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains(expected),
        "{}",
        text(&out.stderr)
    );
}

/// `portico routes` lists what the registry accepted, the server's parts included.
#[test]
fn routes_lists_the_server_parts_beside_the_doors() {
    let ws = Workspace::new();
    ws.config(&format!(
        "[metrics]\n[[api]]\n[[api.collection]]\nname = \"a\"\n{ACCOUNTS}"
    ));
    let out = ws.run(&["routes", "--config", "portico.toml"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for path in [
        "/api/a/:id",
        "/healthz",
        "/metrics",
        "/openapi.json",
        "/auth/methods",
    ] {
        assert!(stdout.contains(path), "missing {path} in {stdout}");
    }
}
