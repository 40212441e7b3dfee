//! Tests of config parsing: every key, and every kind of mistake with its line and key.

use super::*;

const FULL: &str = r#"listen = "127.0.0.1:3000"
database = "sqlite:./portico.db"

[[api]]
api_path = "api/"
version = "v1"
use_default_auth = true
pretty_json = false
enable_cors = true
default_headers = { "X-Example" = "1" }
auth_failure_delay_ms = 0
login_rate_limit = { attempts = 5, per_seconds = 10 }
cors_origins = ["https://app.example.com"]

[[api.collection]]
name = "articles"
path = "articles"
auth_required = false
role_required = ["editor"]
excluded_endpoints = ["delete"]
endpoints = { getAll = { auth_required = false }, put = false }
owner_field = "ownerId"
max_page_size = 1000

[auto]
collections = ["widgets"]
object_id_collections = []
response_headers = { "Access-Control-Allow-Origin" = "*" }
allow_register = false

[auto.rules.widgets]
insert = "authenticated"
update = "owner:ownerId"
remove = "role:admin"
"#;

fn errors(text: &str) -> Vec<ConfigError> {
    match Config::parse(text) {
        Ok(_) => Vec::new(),
        Err(errors) => errors,
    }
}

#[test]
fn the_issue_example_parses_with_every_key() {
    let config = match Config::parse(FULL) {
        Ok(c) => c,
        Err(e) => panic!("{e:?}"),
    };
    assert_eq!(
        config.listen.map(|a| a.to_string()).as_deref(),
        Some("127.0.0.1:3000")
    );
    assert_eq!(config.database.as_deref(), Some("sqlite:./portico.db"));
    let api = &config.apis[0];
    assert_eq!(api.base_path(), "/api/v1/");
    assert!(api.use_default_auth && api.enable_cors && !api.pretty_json);
    assert_eq!(
        api.default_headers,
        vec![("X-Example".to_owned(), "1".to_owned())]
    );
    assert_eq!(api.auth_failure_delay, Some(Duration::ZERO));
    assert_eq!(
        api.login_rate_limit,
        Some(RateLimit {
            attempts: 5,
            per: Duration::from_secs(10)
        })
    );
    assert_eq!(
        api.cors_origins,
        Some(vec!["https://app.example.com".to_owned()])
    );
    let c = &api.collections[0];
    assert_eq!((c.name.as_str(), c.path.as_str()), ("articles", "articles"));
    assert_eq!(c.role_required, vec!["editor".to_owned()]);
    let names: Vec<_> = c.endpoints.iter().map(|(e, _)| *e).collect();
    assert_eq!(names, vec![Op::GetAll, Op::Post, Op::Get, Op::Patch]);
    assert_eq!(
        c.endpoint(Op::GetAll).and_then(|o| o.auth_required),
        Some(false)
    );
    assert_eq!(c.excluded(), vec![Op::Put, Op::Delete]);
    assert_eq!(c.owner_field.as_deref(), Some("ownerId"));
    assert_eq!(c.max_page_size, Some(1000));
    assert_eq!(c.line, 16);
    let auto = config.auto.clone().unwrap_or_default();
    assert_eq!(auto.collections, Some(vec!["widgets".to_owned()]));
    assert!(!auto.allow_register);
    assert_eq!(auto.response_headers.len(), 1);
    assert_eq!(
        auto.rules,
        vec![CollectionRules {
            collection: "widgets".into(),
            insert: vec![Rule::Authenticated],
            update: vec![Rule::Owner("ownerId".into())],
            remove: vec![Rule::Role("admin".into())],
            read: Vec::new(),
            auth_optional: false,
            line: 31,
        }]
    );
    assert_eq!(auto.line, 25);
}

#[test]
fn an_empty_file_is_a_valid_config() {
    let config = Config::parse("").map_err(|e| format!("{e:?}"));
    assert!(config.is_ok_and(|c| c.apis.is_empty() && c.auto.is_none()));
}

#[test]
fn unknown_keys_are_named_with_their_line() {
    let errs = errors("[[api]]\napi_path = \"api/\"\nuse_defualt_auth = true\n");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].line, 3);
    assert_eq!(errs[0].key, "api.use_defualt_auth");
    assert!(
        errs[0].message.contains("unknown field"),
        "{}",
        errs[0].message
    );
}

#[test]
fn wrong_types_are_named_with_their_line() {
    let errs = errors("[[api]]\n[[api.collection]]\nname = \"a\"\nauth_required = \"yes\"\n");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(
        (errs[0].line, errs[0].key.as_str()),
        (4, "api.collection.auth_required")
    );
}

#[test]
fn every_parse_mistake_is_listed_at_once() {
    let errs = errors(
        "listen = 3000\n[[api]]\npretty = true\n[[api.collection]]\nname = \"a\"\nendpoints = { getAll = { auth_requried = true } }\nmax_page_size = \"big\"\n",
    );
    let found: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.key.as_str())).collect();
    assert_eq!(
        found,
        vec![
            (1, "listen"),
            (3, "api.pretty"),
            (6, "api.collection.endpoints.getAll.auth_requried"),
            (7, "api.collection.max_page_size"),
        ],
        "{errs:?}"
    );
}

#[test]
fn syntax_errors_have_a_line() {
    let errs = errors("[[api]]\napi_path = \"api/\n");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].line, 2);
}

#[test]
fn missing_required_keys_are_named() {
    let errs = errors("[[api]]\n[[api.collection]]\npath = \"x\"\n");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key, "api.collection.name", "{errs:?}");
    assert_eq!(errs[0].line, 2, "{errs:?}");
}

#[test]
fn bad_rules_are_named_with_their_line() {
    let errs = errors(
        "[auto]\ncollections = [\"w\"]\n[auto.rules.w]\ninsert = \"authenticated\"\nupdate = \"owner\"\nremove = \"admins\"\n",
    );
    let found: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.key.as_str())).collect();
    assert_eq!(
        found,
        vec![(5, "auto.rules.w.update"), (6, "auto.rules.w.remove")],
        "{errs:?}"
    );
}

#[test]
fn rules_for_a_collection_without_write_endpoints_are_refused() {
    let errs = errors("[auto]\ncollections = [\"a\"]\n[auto.rules.b]\ninsert = \"anyone\"\n");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key, "auto.rules.b");
}

#[test]
fn semantic_mistakes_are_all_listed() {
    let errs = errors(
        "listen = \"localhost\"\ndatabase = \"mysql://x\"\n[[api]]\napi_path = \"a pi\"\ncors_origins = [\"nope\"]\ndefault_headers = { \"Bad Header\" = \"1\" }\n[[api.collection]]\nname = \"$x\"\nexcluded_endpoints = \"remove\"\nowner_field = \"_id\"\nmax_page_size = 0\n",
    );
    let keys: Vec<&str> = errs.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        keys,
        vec![
            "listen",
            "database",
            "api.api_path",
            "api.cors_origins",
            "api.default_headers",
            "api.collection.name",
            "api.collection.excluded_endpoints",
            "api.collection.owner_field",
            "api.collection.max_page_size",
        ],
        "{errs:?}"
    );
}

#[test]
fn endpoints_accept_true_false_and_options() {
    let config = Config::parse(
        "[[api]]\n[[api.collection]]\nname = \"a\"\nrole_required = \"r1\"\nendpoints = { get = true, post = false, delete = { role_required = \"r2\", auth_required = true } }\n",
    )
    .map_err(|e| format!("{e:?}"));
    let c = config.map(|c| c.apis[0].collections[0].clone());
    let c = match c {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    assert!(c.endpoint(Op::Post).is_none());
    assert_eq!(c.role_required, vec!["r1".to_owned()]);
    assert_eq!(
        c.endpoint(Op::Delete),
        Some(&EndpointAuth {
            auth_required: Some(true),
            auth_optional: None,
            role_required: vec!["r2".into()]
        })
    );
}

#[test]
fn display_names_file_line_and_key() {
    let errors = ConfigErrors {
        file: "p.toml".into(),
        errors: vec![ConfigError {
            line: 3,
            column: 1,
            key: "api.x".into(),
            message: "unknown field `x`".into(),
        }],
    };
    assert_eq!(
        errors.to_string(),
        "p.toml: 1 mistake\n  p.toml: line 3, column 1, key `api.x`: unknown field `x`"
    );
}

#[test]
fn writes_need_a_login_unless_an_auth_key_says_otherwise() {
    let config = Config::parse(
        "[[api]]\n[[api.collection]]\nname = \"a\"\n[[api.collection]]\nname = \"b\"\nauth_required = false\n[[api.collection]]\nname = \"c\"\nendpoints = { post = { auth_required = false } }\n",
    )
    .map_err(|e| format!("{e:?}"));
    let Ok(config) = config else {
        panic!("{config:?}");
    };
    let [a, b, c] = &config.apis[0].collections[..] else {
        panic!("three collections");
    };
    assert!(a.anonymous_writes().is_empty());
    assert_eq!(a.endpoint(Op::Get).and_then(|o| o.auth_required), None);
    assert_eq!(
        a.endpoint(Op::Put).and_then(|o| o.auth_required),
        Some(true)
    );
    assert_eq!(b.anonymous_writes().len(), 4);
    assert_eq!(c.anonymous_writes(), vec![Op::Post]);
    let lines: Vec<usize> = config.warnings().iter().map(|w| w.line).collect();
    assert_eq!(lines, vec![5, 8]);
}

#[test]
fn self_only_users_need_a_login_on_every_endpoint() {
    for key in ["self_only = true", "owner_field = \"_id\""] {
        let config = Config::parse(&format!(
            "[[api]]\n[[api.collection]]\nname = \"users\"\n{key}\n"
        ))
        .map_err(|e| format!("{e:?}"));
        let Ok(config) = config else {
            panic!("{config:?}");
        };
        let users = &config.apis[0].collections[0];
        assert!(users.self_only && users.owner_field.is_none());
        assert!(
            users
                .endpoints
                .iter()
                .all(|(_, o)| o.auth_required == Some(true)),
            "{key}"
        );
    }
}

#[test]
fn server_limits_have_defaults_and_ranges() {
    let config = match Config::parse("") {
        Ok(c) => c,
        Err(e) => panic!("{e:?}"),
    };
    assert_eq!(config.server, ConnectionLimits::default());
    let config = match Config::parse(
        "[server]\nheader_timeout_secs = 3\nbody_timeout_secs = 4\nkeep_alive_timeout_secs = 2\nmax_connections = 50\n",
    ) {
        Ok(c) => c,
        Err(e) => panic!("{e:?}"),
    };
    assert_eq!(config.server.header_timeout, Duration::from_secs(3));
    assert_eq!(config.server.body_timeout, Duration::from_secs(4));
    assert_eq!(config.server.keep_alive_timeout, Duration::from_secs(2));
    assert_eq!(config.server.max_connections, 50);
    let errs = errors("[server]\nheader_timeout_secs = 0\nmax_connections = 0\nbody_timeout = 1\n");
    let found: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.key.as_str())).collect();
    assert!(found.contains(&(4, "server.body_timeout")), "{errs:?}");
    let errs = errors("[server]\nheader_timeout_secs = 0\nmax_connections = 0\n");
    let found: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.key.as_str())).collect();
    assert_eq!(
        found,
        [
            (2, "server.header_timeout_secs"),
            (3, "server.max_connections")
        ]
    );
}

#[test]
fn live_limits_have_defaults_and_ranges() {
    let config = match Config::parse("") {
        Ok(c) => c,
        Err(e) => panic!("{e:?}"),
    };
    assert_eq!(config.live, portico_platform::LiveConfig::default());
    let config = match Config::parse("[live]\nmax_streams = 50\nbuffer = 8\nping_secs = 2\n") {
        Ok(c) => c,
        Err(e) => panic!("{e:?}"),
    };
    assert_eq!(config.live.max_streams, 50);
    assert_eq!(config.live.buffer, 8);
    assert_eq!(config.live.ping, Duration::from_secs(2));
    let errs = errors("[live]\nbuffer = 0\nping_secs = 0\nmax = 1\n");
    let found: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.key.as_str())).collect();
    assert!(found.contains(&(4, "live.max")), "{errs:?}");
    let errs = errors("[live]\nbuffer = 0\nping_secs = 0\n");
    let found: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.key.as_str())).collect();
    assert_eq!(found, [(2, "live.buffer"), (3, "live.ping_secs")]);
}

#[test]
fn channel_rules_and_socket_limits_are_checked_with_their_lines() {
    let config = match Config::parse(
        "[[channels]]\npattern = \"room:*\"\njoin = \"authenticated\"\n\
         [[channels]]\npattern = \"news\"\njoin = \"anyone\"\nsend = \"role:editor,admin\"\n\
         [live]\nmax_channels = 7\nframes_per_second = 9\nheartbeat_ms = 500\npresence_timeout_ms = 2000\n",
    ) {
        Ok(c) => c,
        Err(e) => panic!("{e:?}"),
    };
    use portico_platform::{ChannelAccess, ChannelRule};
    assert_eq!(
        config.channels,
        [
            ChannelRule::new("room:*"),
            ChannelRule::new("news").with(
                ChannelAccess::Anyone,
                ChannelAccess::Roles(vec!["editor".into(), "admin".into()]),
                ChannelAccess::Anyone,
            ),
        ]
    );
    assert_eq!(config.channel_limits.max_channels_per_connection, 7);
    assert_eq!(config.channel_limits.frames_per_second, 9);
    assert_eq!(config.channel_limits.heartbeat, Duration::from_millis(500));
    assert_eq!(
        Config::parse("").map(|c| c.channel_limits).ok(),
        Some(portico_platform::ChannelsConfig::default())
    );
    let errs = errors(
        "[[channels]]\npattern = \"\"\njoin = \"everyone\"\nsend = \"owner:x\"\n\
         [live]\nmax_message_bytes = 9000\nheartbeat_ms = 1000\npresence_timeout_ms = 1500\n",
    );
    let found: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.key.as_str())).collect();
    assert_eq!(
        found,
        [
            (2, "channels.pattern"),
            (3, "channels.join"),
            (4, "channels.send"),
            (6, "live.max_message_bytes"),
            (8, "live.presence_timeout_ms"),
        ],
        "{errs:?}"
    );
}

#[test]
fn read_replicas_are_postgresql_urls_with_a_positive_lag_bound() {
    let config = Config::parse(
        "database = \"postgres://app@primary/app\"\n\
         database_replicas = [\"postgres://app@replica1/app\", \"postgresql://app@replica2/app\"]\n\
         replica_max_lag_ms = 250\n",
    )
    .expect("valid");
    assert_eq!(config.database_replicas.len(), 2);
    assert_eq!(config.replica_max_lag, Some(Duration::from_millis(250)));
    assert!(
        Config::parse("")
            .expect("valid")
            .database_replicas
            .is_empty()
    );
    let errs = errors("database_replicas = [\"sqlite:./replica.db\"]\nreplica_max_lag_ms = 0\n");
    let keys: Vec<&str> = errs.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        keys,
        vec!["database_replicas", "replica_max_lag_ms"],
        "{errs:?}"
    );
    assert!(errs[0].message.contains("not a PostgreSQL URL"), "{errs:?}");
}

#[test]
fn the_stamp_pacing_keys_are_bounded() {
    let config =
        Config::parse("database_stamp_batch = 16\ndatabase_stamp_wait_us = 250\n").expect("valid");
    assert_eq!(config.database_stamp_batch, Some(16));
    assert_eq!(config.database_stamp_wait, Some(Duration::from_micros(250)));
    let unset = Config::parse("").expect("valid");
    assert_eq!(
        (unset.database_stamp_batch, unset.database_stamp_wait),
        (None, None)
    );
    let zero_wait = Config::parse("database_stamp_wait_us = 0\n").expect("valid");
    assert_eq!(zero_wait.database_stamp_wait, Some(Duration::ZERO));
    let errs = errors("database_stamp_batch = 0\ndatabase_stamp_wait_us = 2000000\n");
    let keys: Vec<&str> = errs.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        keys,
        vec!["database_stamp_batch", "database_stamp_wait_us"],
        "{errs:?}"
    );
    assert!(errs[0].message.contains("between 1 and 4096"), "{errs:?}");
    assert!(errs[1].message.contains("at most"), "{errs:?}");
    assert_eq!(errors("database_stamp_batch = 5000\n").len(), 1);
}

#[test]
fn the_database_cache_budget_is_in_mib_and_bounded() {
    let config = Config::parse("database_cache_mb = 8\n").expect("valid");
    assert_eq!(config.database_cache_bytes, Some(8 * 1024 * 1024));
    assert_eq!(
        Config::parse("database_cache_mb = 0\n")
            .expect("valid")
            .database_cache_bytes,
        Some(0),
        "0 turns the cache off"
    );
    assert_eq!(Config::parse("").expect("valid").database_cache_bytes, None);
    let errs = errors("database_cache_mb = 2000000\n");
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key, "database_cache_mb");
    assert!(errs[0].message.contains("at most"), "{errs:?}");
}

#[test]
fn backups_go_to_a_bucket_with_url_and_dir_stages_them() {
    let config = Config::parse("[backups]\nurl = \"s3://b/nightly/\"\nkeep = 3\n").unwrap();
    let backups = config.backups.unwrap();
    assert_eq!(backups.url.as_deref(), Some("s3://b/nightly"));
    assert_eq!((backups.keep, backups.staging), (3, None));
    let config = Config::parse("[backups]\nurl = \"s3://b\"\ndir = \"./stage\"\n").unwrap();
    let backups = config.backups.unwrap();
    assert_eq!(backups.staging, Some(std::path::PathBuf::from("./stage")));
    for bad in ["s3://", "s3:///x", "./backups", "https://b/x"] {
        let found = errors(&format!("[backups]\nurl = \"{bad}\"\n"));
        assert!(
            found.len() == 1 && found[0].key == "backups.url" && found[0].line == 2,
            "{bad}: {found:?}"
        );
    }
}

#[test]
fn the_email_code_keys_are_read_and_bounded() {
    let config = match Config::parse(
        "[accounts]\nemail_code_signup = true\nemail_code_token_secs = 120\n\
         email_code_digits = 8\nemail_code_attempts = 3\n\
         email_code_rate_limit_per_email = { attempts = 4, per_seconds = 60 }\n",
    ) {
        Ok(c) => c,
        Err(e) => panic!("{e:?}"),
    };
    let accounts = config.accounts.as_ref().expect("[accounts]");
    assert!(accounts.email_code_signup);
    assert_eq!(accounts.email_code_token, Duration::from_secs(120));
    assert_eq!(
        (accounts.email_code_digits, accounts.email_code_attempts),
        (8, 3)
    );
    assert_eq!(
        accounts.email_code_failures_per_email,
        Some(portico_platform::Limit::new(4, Duration::from_secs(60)))
    );
    let platform = accounts::platform_accounts(&config).expect("platform settings");
    assert!(platform.email_code_signup);
    assert_eq!(platform.email_code_lifetime, chrono::Duration::seconds(120));
    assert!(!platform.allow_guests);
    let guests = match Config::parse(
        "[accounts]\nallow_guests = true\nguest_ttl_days = 0.5\n\
         [[api]]\n[[api.collection]]\nname = \"notes\"\nowner_field = \"ownerId\"\n\
         [auto]\ncollections = [\"tasks\"]\n[auto.rules.tasks]\nupdate = \"owner:by\"\n",
    ) {
        Ok(c) => c,
        Err(e) => panic!("{e:?}"),
    };
    let platform = accounts::platform_accounts(&guests).expect("platform settings");
    assert!(platform.allow_guests);
    assert_eq!(platform.guest_ttl, chrono::Duration::hours(12));
    let owned = |c: &str, f: &str| (c.to_owned(), f.to_owned());
    assert_eq!(
        platform.guest_owned,
        [owned("notes", "ownerId"), owned("tasks", "by")]
    );
    let errs = errors(
        "[accounts]\nemail_code_digits = 9\nemail_code_attempts = 0\nemail_code_token_secs = 0\n\
         guest_ttl_days = 0\n",
    );
    let keys: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.key.as_str())).collect();
    assert_eq!(
        keys,
        [
            (2, "accounts.email_code_digits"),
            (3, "accounts.email_code_attempts"),
            (4, "accounts.email_code_token_secs"),
            (5, "accounts.guest_ttl_days")
        ]
    );
}

#[test]
fn route_limits_are_read_and_checked() {
    let config = match Config::parse(
        "[[limits]]\npath = \"/auth/*\"\nrequests = 5\nwindow_secs = 60\n\
         [[limits]]\npath = \"/api/notes\"\nper = \"account\"\nrequests = 2\nwindow_secs = 1\nmethods = [\"post\"]\n",
    ) {
        Ok(c) => c,
        Err(e) => panic!("{e:?}"),
    };
    assert_eq!(config.limits.len(), 2);
    assert_eq!(config.limits[1].per, LimitPer::Account);
    assert_eq!(config.limits[1].methods, ["POST"]);
    assert!(config.limits[0].applies("GET", "/auth/methods"));
    let errs =
        errors("[[limits]]\npath = \"auth/*\"\nper = \"ip\"\nrequests = 0\nwindow_secs = 0\n");
    let keys: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.key.as_str())).collect();
    assert_eq!(
        keys,
        [
            (2, "limits.path"),
            (3, "limits.per"),
            (4, "limits.requests"),
            (5, "limits.window_secs")
        ]
    );
}
