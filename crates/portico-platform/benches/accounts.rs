//! Costs of the accounts service on a SQLite store holding 10k users: a login (user lookup,
//! password check, token issue), and resolving a login token to its user.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benches may panic on setup failures

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::Criterion;
use portico_platform::{Document, Password, Platform, UserSelector, password_digest};
use serde_json::{Value, json};

const USERS: usize = 10_000;

fn user(i: usize, hash: &str) -> Document {
    let v = json!({
        "_id": format!("user{i:05}"),
        "createdAt": "2026-01-01T00:00:00.000Z",
        "services": {"password": {"argon2": hash}, "resume": {"loginTokens": []}},
        "username": format!("user{i}"),
        "emails": [{"address": format!("user{i}@example.org"), "verified": true}],
        "profile": {}, "roles": []
    });
    match v {
        Value::Object(m) => m,
        _ => Document::new(),
    }
}

fn accounts(c: &mut Criterion) {
    let Ok(rt) = tokio::runtime::Runtime::new() else {
        eprintln!("no tokio runtime");
        return;
    };
    let Ok(dir) = tempfile::tempdir() else {
        eprintln!("no temp dir");
        return;
    };
    let url = format!("sqlite:{}", dir.path().join("bench.db").display());
    let setup = rt.block_on(async {
        let platform = Platform::open(&url).await?;
        let accounts = platform.accounts();
        // One real argon2id hash shared by every user: hashing 10k passwords would only slow setup.
        let seed = accounts
            .create_user(portico_platform::NewUser {
                username: Some("seed".into()),
                password: Some(Password::Plain("secret".into())),
                ..Default::default()
            })
            .await?;
        let seed = accounts.find_user_by_id(&seed).await?.unwrap_or_default();
        let hash = seed["services"]["password"]["argon2"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        for i in 0..USERS {
            accounts.import_user(user(i, &hash)).await?;
        }
        let mut tokens = Vec::new();
        for i in (0..USERS).step_by(10) {
            tokens.push(
                accounts
                    .new_login_token(&format!("user{i:05}"))
                    .await?
                    .token,
            );
        }
        Ok::<_, portico_platform::Error>((platform, tokens))
    });
    let (platform, tokens) = match setup {
        Ok(s) => s,
        Err(e) => {
            eprintln!("setup failed: {e}");
            return;
        }
    };
    let accounts = platform.accounts().clone();
    let password = Password::Plain("secret".into());
    let next = AtomicUsize::new(0);

    let mut group = c.benchmark_group("accounts_sqlite_10k_users");
    group.sample_size(20);
    group.bench_function("login_by_username", |b| {
        b.to_async(&rt).iter(|| async {
            let i = next.fetch_add(7919, Ordering::Relaxed) % USERS;
            let login = accounts
                .login(&UserSelector::Username(format!("user{i}")), &password)
                .await;
            black_box(login.is_ok())
        })
    });
    group.bench_function("login_unknown_user", |b| {
        b.to_async(&rt).iter(|| async {
            let login = accounts
                .login(&UserSelector::Username("nobody".into()), &password)
                .await;
            black_box(login.is_err())
        })
    });
    group.bench_function("login_case_insensitive", |b| {
        b.to_async(&rt).iter(|| async {
            let i = next.fetch_add(7919, Ordering::Relaxed) % USERS;
            let login = accounts
                .login(&UserSelector::Username(format!("USER{i}")), &password)
                .await;
            black_box(login.is_ok())
        })
    });
    group.sample_size(100);
    group.bench_function("user_by_token", |b| {
        b.to_async(&rt).iter(|| async {
            let i = next.fetch_add(7919, Ordering::Relaxed) % tokens.len();
            black_box(
                accounts
                    .user_by_token(&tokens[i])
                    .await
                    .ok()
                    .flatten()
                    .is_some(),
            )
        })
    });
    group.bench_function("user_by_token_unknown", |b| {
        b.to_async(&rt).iter(|| async {
            black_box(
                accounts
                    .user_by_token("no-such-token")
                    .await
                    .ok()
                    .flatten()
                    .is_none(),
            )
        })
    });
    group.bench_function("find_user_exact", |b| {
        b.to_async(&rt).iter(|| async {
            let i = next.fetch_add(7919, Ordering::Relaxed) % USERS;
            black_box(
                accounts
                    .find_user_by_username(&format!("user{i}"))
                    .await
                    .ok()
                    .flatten()
                    .is_some(),
            )
        })
    });
    group.bench_function("find_user_case_insensitive", |b| {
        b.to_async(&rt).iter(|| async {
            let i = next.fetch_add(7919, Ordering::Relaxed) % USERS;
            black_box(
                accounts
                    .find_user_by_username(&format!("USER{i}"))
                    .await
                    .ok()
                    .flatten()
                    .is_some(),
            )
        })
    });
    group.bench_function("find_user_unknown", |b| {
        b.to_async(&rt).iter(|| async {
            black_box(
                accounts
                    .find_user_by_username("nobody")
                    .await
                    .ok()
                    .flatten()
                    .is_none(),
            )
        })
    });
    group.bench_function("password_digest", |b| {
        b.iter(|| black_box(password_digest(black_box("correct horse battery staple"))))
    });
    group.finish();
    drop(dir);
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    accounts(&mut c);
    c.final_summary();
}
