//! The token cache never lets a token through past a write or its expiry: each test resolves a
//! token (so it is cached where the backend allows it), changes something, and checks the very
//! next resolution sees the change.

use chrono::Duration;
use portico_platform::{
    AccountsConfig, NewUser, Password, Platform, PlatformConfig, Selector, USERS, Update,
};
use serde_json::json;

use crate::common::TestResult;

/// A user `ada` with a fresh login token; returns (id, token).
async fn ada_with_token(p: &Platform) -> Result<(String, String), Box<dyn std::error::Error>> {
    let accounts = p.accounts();
    let id = accounts
        .create_user(NewUser {
            username: Some("ada".into()),
            password: Some(Password::Plain("pw".into())),
            ..NewUser::default()
        })
        .await?;
    let token = accounts.new_login_token(&id).await?.token;
    // Twice: the second answer comes from the cache where there is one.
    for _ in 0..2 {
        assert!(accounts.user_by_token(&token).await?.is_some());
    }
    Ok((id, token))
}

on_every_backend! {
    async fn logout_refuses_the_cached_token(p: Platform) -> TestResult {
        let (id, token) = ada_with_token(&p).await?;
        assert!(p.accounts().remove_token(&id, &token).await?);
        assert!(p.accounts().user_by_token(&token).await?.is_none());
        Ok(())
    }

    async fn removing_the_user_refuses_the_cached_token(p: Platform) -> TestResult {
        let (id, token) = ada_with_token(&p).await?;
        assert!(p.accounts().remove_user(&id).await?);
        assert!(p.accounts().user_by_token(&token).await?.is_none());
        Ok(())
    }

    async fn any_write_to_the_user_is_seen_at_once(p: Platform) -> TestResult {
        let (id, token) = ada_with_token(&p).await?;
        // A write through the users collection (as generated CRUD does), not through accounts.
        let set = Update::parse(&json!({"$set": {"roles": ["editor"]}}))?;
        p.collection(USERS).update_by_id(&id, &set).await?;
        let user = p.accounts().user_by_token(&token).await?.ok_or("still logged in")?;
        assert_eq!(user["roles"], json!(["editor"]));
        // And a raw store write that drops the token.
        let pull = Update::parse(&json!({"$set": {"services.resume.loginTokens": []}}))?;
        p.store().update(USERS, &Selector::by_id(&id), &pull, Default::default()).await?;
        assert!(p.accounts().user_by_token(&token).await?.is_none());
        Ok(())
    }
}

/// An expired token is refused even when its answer is cached: expiry is checked on every use.
#[tokio::test]
async fn expiry_refuses_the_cached_token_on_sqlite() -> TestResult {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite:{}", dir.path().join("x.db").display());
    let mut config = PlatformConfig::default();
    config.accounts = {
        let mut o = AccountsConfig::default();
        o.token_lifetime = Duration::milliseconds(300);
        o
    };
    let p = Platform::open_with(&url, config).await?;
    let (_, token) = ada_with_token(&p).await?;
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    assert!(p.accounts().user_by_token(&token).await?.is_none());
    Ok(())
}

/// A write by another process on the same SQLite file (here a second platform, as
/// `portico users remove` beside a running server) is seen at once: the cache follows the
/// file's data version, not only this process's writes.
#[tokio::test]
async fn another_process_removing_the_user_refuses_the_cached_token() -> TestResult {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite:{}", dir.path().join("x.db").display());
    let server = Platform::open(&url).await?;
    let (id, token) = ada_with_token(&server).await?;
    let other = Platform::open(&url).await?;
    assert!(other.accounts().remove_user(&id).await?);
    assert!(server.accounts().user_by_token(&token).await?.is_none());
    Ok(())
}

/// SQLite gives a change stamp that moves on every commit; the memory backend none.
#[tokio::test]
async fn change_stamps_move_on_writes_and_are_absent_in_memory() -> TestResult {
    let (_dir, p) = crate::common::sqlite().await?;
    let before = p
        .store()
        .change_stamp(USERS)
        .await
        .ok_or("sqlite has a stamp")?;
    assert_eq!(p.store().change_stamp(USERS).await, Some(before));
    p.collection("other")
        .insert(crate::common::doc(json!({"a": 1})))
        .await?;
    assert_ne!(p.store().change_stamp(USERS).await, Some(before));
    let m = crate::common::memory().await?;
    assert_eq!(m.store().change_stamp(USERS).await, None);
    Ok(())
}

/// Two instances on one PostgreSQL database (two platforms, as two `portico serve`): each test
/// resolves a token on B twice (cached: B's stamp is there and unchanged), changes something on
/// A, and checks B's very next resolution sees it, without waiting for the change feed.
#[cfg(feature = "postgres")]
mod two_instances {
    use super::*;

    async fn pair(
        config: impl Fn() -> PlatformConfig,
    ) -> Result<(Platform, Platform), Box<dyn std::error::Error>> {
        let url = crate::common::postgres_database().await?;
        let a = Platform::open_with(&url, config()).await?;
        let b = Platform::open_with(&url, config()).await?;
        Ok((a, b))
    }

    /// `ada` made on A, with a token resolved (and cached) on B; returns (id, token).
    async fn ada_cached_on_b(
        a: &Platform,
        b: &Platform,
    ) -> Result<(String, String), Box<dyn std::error::Error>> {
        let id = a
            .accounts()
            .create_user(NewUser {
                username: Some("ada".into()),
                password: Some(Password::Plain("password".into())),
                roles: vec!["editor".into()],
                ..NewUser::default()
            })
            .await?;
        let token = a.accounts().new_login_token(&id).await?.token;
        let stamp = b
            .store()
            .change_stamp(USERS)
            .await
            .ok_or("postgres has a stamp")?;
        for _ in 0..2 {
            assert!(b.accounts().user_by_token(&token).await?.is_some());
        }
        assert_eq!(
            b.store().change_stamp(USERS).await,
            Some(stamp),
            "cached, not moved"
        );
        Ok((id, token))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn logout_on_a_is_refused_on_b() -> TestResult {
        let (a, b) = pair(PlatformConfig::default).await?;
        let (id, token) = ada_cached_on_b(&a, &b).await?;
        assert!(a.accounts().remove_token(&id, &token).await?);
        assert!(b.accounts().user_by_token(&token).await?.is_none());
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn removal_on_a_is_refused_on_b() -> TestResult {
        let (a, b) = pair(PlatformConfig::default).await?;
        let (id, token) = ada_cached_on_b(&a, &b).await?;
        assert!(a.accounts().remove_user(&id).await?);
        assert!(b.accounts().user_by_token(&token).await?.is_none());
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn role_change_on_a_is_seen_on_b() -> TestResult {
        let (a, b) = pair(PlatformConfig::default).await?;
        let (id, token) = ada_cached_on_b(&a, &b).await?;
        let user = b
            .accounts()
            .user_by_token(&token)
            .await?
            .ok_or("logged in")?;
        assert_eq!(user["roles"], json!(["editor"]));
        a.accounts().remove_roles(&id, &["editor".into()]).await?;
        let user = b
            .accounts()
            .user_by_token(&token)
            .await?
            .ok_or("logged in")?;
        assert_eq!(user["roles"], json!([]));
        Ok(())
    }

    /// Expiry is checked against the clock on every use of a cached answer.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn expiry_is_refused_on_b() -> TestResult {
        let short = || {
            let mut config = PlatformConfig::default();
            config.accounts = {
                let mut o = AccountsConfig::default();
                o.token_lifetime = Duration::milliseconds(600);
                o
            };
            config
        };
        let (a, b) = pair(short).await?;
        let (_, token) = ada_cached_on_b(&a, &b).await?;
        tokio::time::sleep(std::time::Duration::from_millis(700)).await;
        assert!(b.accounts().user_by_token(&token).await?.is_none());
        assert!(a.accounts().user_by_token(&token).await?.is_none());
        Ok(())
    }

    /// Many tokens resolved on B at once while A logs them out one by one: once A's logout
    /// returned, no resolution that starts on B lets that token through.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_resolutions_never_outlive_a_logout() -> TestResult {
        let (a, b) = pair(PlatformConfig::default).await?;
        let (id, _) = ada_cached_on_b(&a, &b).await?;
        let mut tokens = Vec::new();
        for _ in 0..10 {
            tokens.push(a.accounts().new_login_token(&id).await?.token);
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut readers = Vec::new();
        for _ in 0..4 {
            let (b, tokens, stop) = (b.clone(), tokens.clone(), stop.clone());
            readers.push(tokio::spawn(async move {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for t in &tokens {
                        let _ = b.accounts().user_by_token(t).await;
                    }
                }
            }));
        }
        for t in &tokens {
            assert!(a.accounts().remove_token(&id, t).await?);
            assert!(
                b.accounts().user_by_token(t).await?.is_none(),
                "a logged-out token"
            );
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for r in readers {
            r.await?;
        }
        Ok(())
    }
}
