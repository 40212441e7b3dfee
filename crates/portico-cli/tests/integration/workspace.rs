//! What the workspace ships: a lean release binary, symbols in a separate profile, a real
//! repository address.

fn manifest() -> toml::Table {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let text = std::fs::read_to_string(path).expect("workspace Cargo.toml");
    toml::from_str(&text).expect("valid TOML")
}

#[test]
fn the_release_binary_carries_no_debug_info_and_profiling_keeps_it() {
    let manifest = manifest();
    let profile = |name: &str| {
        manifest["profile"][name]
            .as_table()
            .cloned()
            .unwrap_or_default()
    };
    let release = profile("release");
    assert!(
        release
            .get("debug")
            .is_none_or(|d| d.as_bool() == Some(false) || d.as_integer() == Some(0)),
        "{release:?}"
    );
    assert!(
        matches!(
            release.get("strip").and_then(|s| s.as_str()),
            Some("debuginfo" | "symbols")
        ),
        "{release:?}"
    );
    let profiling = profile("profiling");
    assert_eq!(
        profiling.get("inherits").and_then(|v| v.as_str()),
        Some("release")
    );
    assert!(
        profiling
            .get("debug")
            .is_some_and(|d| d.as_integer() != Some(0))
    );
    assert_eq!(
        profiling.get("strip").and_then(|v| v.as_str()),
        Some("none")
    );
}

#[test]
fn the_repository_address_is_real() {
    let manifest = manifest();
    let repository = manifest["workspace"]["package"]["repository"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(repository, "https://github.com/portico-rs/portico");
}

/// The workspace root.
fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md, every crate's README.md and GUIDE.md, and docs/*.md.
fn docs() -> Vec<std::path::PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    for dir in ["crates", "docs"] {
        let entries = std::fs::read_dir(root.join(dir)).expect("directory");
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                for name in ["README.md", "GUIDE.md"] {
                    if path.join(name).is_file() {
                        files.push(path.join(name));
                    }
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files
}

#[test]
fn the_docs_stand_alone_and_their_commands_paste_as_they_are() {
    let root = root().canonicalize().expect("root");
    let files = docs();
    assert!(files.len() >= 6, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).expect("doc");
        assert!(
            !text.contains("shared/"),
            "{} points outside the repository",
            file.display()
        );
        for placeholder in ["<id>", "<token>", "TOKEN=...", "<ID>"] {
            for line in text.lines().filter(|l| l.contains(placeholder)) {
                assert!(
                    !line.trim_start().starts_with("curl"),
                    "{}: a placeholder in a command: {line}",
                    file.display()
                );
            }
        }
        // Relative markdown links resolve to files inside the repository.
        for part in text.split("](").skip(1) {
            let target = part.split(')').next().unwrap_or_default();
            if target.contains("://") || target.starts_with('#') {
                continue;
            }
            let path = target.split('#').next().unwrap_or_default();
            let resolved = file.parent().expect("parent").join(path);
            let resolved = resolved
                .canonicalize()
                .unwrap_or_else(|_| panic!("{}: broken link {target}", file.display()));
            assert!(
                resolved.starts_with(&root),
                "{}: {target} leaves the repository",
                file.display()
            );
        }
    }
}

/// The client's README tells what the server has: no claim that it lacks the account
/// lifecycle, and every `/auth/` endpoint it names is one the server serves (issue 39, item 13:
/// it said the server had no password reset, email verification or two-factor codes).
#[test]
fn the_client_readme_names_the_account_endpoints_the_server_has() {
    let text = std::fs::read_to_string(root().join("clients/js/README.md")).expect("README");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for claim in [
        "does not have them",
        "has no password reset",
        "not have them yet",
    ] {
        assert!(!flat.contains(claim), "the client README says {claim:?}");
    }
    let served: std::collections::BTreeSet<String> = portico_accounts::AuthRoutes::docs()
        .into_iter()
        .map(|route| {
            // `oidc/:name` as the README writes it, `oidc/{name}`.
            let path = route.path.trim_start_matches("/auth/");
            path.split('/')
                .map(|part| match part.strip_prefix(':') {
                    Some(name) => format!("{{{name}}}"),
                    None => part.to_owned(),
                })
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect();
    // Every `/auth/...` path the README names (`/auth/password-reset`, `/auth/oidc/{name}`).
    let named: std::collections::BTreeSet<String> = text
        .split("/auth/")
        .skip(1)
        .filter_map(|rest| {
            let path: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "-/{}_.".contains(*c))
                .collect();
            let path = path.trim_end_matches(['.', '/']).to_owned();
            (!path.is_empty() && !path.contains("...")).then_some(path)
        })
        .collect();
    for endpoint in [
        "password-reset",
        "password-reset/confirm",
        "verify-email",
        "verify-email/confirm",
        "email-change",
        "totp/setup",
        "totp/enable",
        "totp/disable",
        "email-code",
        "guest",
        "logout-everywhere",
        "passkey/register/begin",
        "passkey/login/begin",
        "oauth2/exchange",
    ] {
        assert!(
            named.contains(endpoint),
            "the client README shows no call of /auth/{endpoint}: {named:?}"
        );
    }
    for endpoint in &named {
        assert!(
            served.contains(endpoint),
            "the client README names /auth/{endpoint}, which the server does not serve: {served:?}"
        );
    }
}
