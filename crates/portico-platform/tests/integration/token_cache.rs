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

/// Where other servers may write (PostgreSQL), the store gives no change stamp, so nothing is
/// cached; SQLite gives one that moves on every commit.
#[tokio::test]
async fn change_stamps_move_on_writes_and_are_absent_in_memory() -> TestResult {
    let (_dir, p) = crate::common::sqlite().await?;
    let before = p.store().change_stamp(USERS).ok_or("sqlite has a stamp")?;
    assert_eq!(p.store().change_stamp(USERS), Some(before));
    p.collection("other")
        .insert(crate::common::doc(json!({"a": 1})))
        .await?;
    assert_ne!(p.store().change_stamp(USERS), Some(before));
    let m = crate::common::memory().await?;
    assert_eq!(m.store().change_stamp(USERS), None);
    Ok(())
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_has_no_change_stamp_so_nothing_is_cached() -> TestResult {
    let p = crate::common::postgres().await?;
    assert_eq!(p.store().change_stamp(USERS), None);
    Ok(())
}
