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
