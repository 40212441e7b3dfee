//! Accounts: sign-up, lookups, login, tokens, roles.

use chrono::{Duration, Utc};
use portico_platform::{
    AccountsConfig, Error, NewUser, Password, Platform, PlatformConfig, Selector, TOKEN_PATH,
    USERS, Update, UserSelector, hash_token, password_digest, public_user, user_has_any_role,
};
use serde_json::{Value, json};

use crate::common::{TestResult, doc};

fn plain(p: &str) -> Password {
    Password::Plain(p.to_string())
}

fn new_user(username: Option<&str>, email: Option<&str>, password: &str) -> NewUser {
    NewUser {
        username: username.map(str::to_string),
        email: email.map(str::to_string),
        password: Some(plain(password)),
        ..NewUser::default()
    }
}

async fn user_count(p: &Platform) -> Result<u64, Box<dyn std::error::Error>> {
    Ok(p.store().count(USERS, &Selector::all()).await?)
}

on_every_backend! {
    async fn new_users_have_the_existing_apps_layout(p: Platform) -> TestResult {
        let accounts = p.accounts();
        let id = accounts
            .create_user(NewUser {
                username: Some(" ada ".into()),
                email: Some("Ada@Example.org".into()),
                password: Some(plain("pw1")),
                profile: Some(json!({"name": "Ada"})),
                roles: vec!["admin".into()],
            })
            .await?;
        assert_eq!(id.len(), 17);
        let user = accounts.find_user_by_id(&id).await?.ok_or("user stored")?;
        assert_eq!(user["username"], json!("ada"));
        assert_eq!(user["emails"], json!([{"address": "Ada@Example.org", "verified": false}]));
        assert_eq!(user["profile"], json!({"name": "Ada"}));
        assert_eq!(user["roles"], json!(["admin"]));
        assert_eq!(user["services"]["resume"]["loginTokens"], json!([]));
        let hash = user["services"]["password"]["argon2"].as_str().ok_or("argon2 hash")?;
        assert!(hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{hash}");
        let created = user["createdAt"].as_str().ok_or("createdAt")?;
        assert_eq!(created.len(), 24, "{created}");

        let public = public_user(&user);
        assert_eq!(
            public.keys().map(String::as_str).collect::<Vec<_>>(),
            ["_id", "username", "emails", "profile", "roles"]
        );
        Ok(())
    }

    async fn lookups_are_exact_first_then_unique_case_insensitive(p: Platform) -> TestResult {
        let accounts = p.accounts();
        let ada = accounts.create_user(new_user(Some("Ada"), Some("ada@example.org"), "pw")).await?;
        let found = accounts.find_user_by_username("aDA").await?.ok_or("found")?;
        assert_eq!(found["_id"], json!(ada));
        let found = accounts.find_user_by_email("ADA@EXAMPLE.ORG").await?.ok_or("found")?;
        assert_eq!(found["_id"], json!(ada));
        assert!(accounts.find_user_by_username("ad").await?.is_none());
        // Regex characters in a name are taken literally.
        assert!(accounts.find_user_by_username("A.a").await?.is_none());
        assert!(accounts.find_user_by_username(".*").await?.is_none());

        // Names are unique whatever their case, for imports too.
        accounts.import_user(doc(json!({"_id": "b1", "username": "bob"}))).await?;
        assert!(matches!(
            accounts.import_user(doc(json!({"_id": "b2", "username": "Bob"}))).await,
            Err(Error::UserExists(_))
        ));
        // Two records differing only in case (written around the accounts, so without the
        // lowercase copies of the second): exact wins, else the one with lowercase copies.
        p.store().insert(USERS, doc(json!({"_id": "b2", "username": "Bob"}))).await?;
        assert_eq!(accounts.ensure_lowercase_fields().await?, 0, "b2's copy would collide");
        let exact = accounts.find_user_by_username("Bob").await?.ok_or("exact")?;
        assert_eq!(exact["_id"], json!("b2"));
        let folded = accounts.find_user_by_username("BOB").await?.ok_or("folded")?;
        assert_eq!(folded["_id"], json!("b1"));

        let either = accounts.find_user(&UserSelector::Either("ada@EXAMPLE.org".into())).await?;
        assert_eq!(either.ok_or("either as email")?["_id"], json!(ada));
        let either = accounts.find_user(&UserSelector::Either("ADA".into())).await?;
        assert_eq!(either.ok_or("either as username")?["_id"], json!(ada));
        Ok(())
    }

    async fn records_written_around_accounts_get_their_lowercase_copies(p: Platform) -> TestResult {
        let accounts = p.accounts();
        p.store()
            .insert(USERS, doc(json!({"_id": "raw", "username": "Raw", "emails": [{"address": "Raw@Example.org"}]})))
            .await?;
        assert!(accounts.find_user_by_username("Raw").await?.is_some());
        assert!(accounts.find_user_by_username("raw").await?.is_none());
        // Sign-up still sees the exact name.
        assert!(matches!(
            accounts.create_user(new_user(Some("Raw"), None, "pw")).await,
            Err(Error::UserExists(_))
        ));
        assert_eq!(accounts.ensure_lowercase_fields().await?, 1);
        assert_eq!(accounts.ensure_lowercase_fields().await?, 0);
        let found = accounts.find_user_by_email("raw@EXAMPLE.org").await?.ok_or("found")?;
        assert_eq!(found["_id"], json!("raw"));
        assert!(accounts.find_user_by_username("RAW").await?.is_some());
        assert!(matches!(
            accounts.create_user(new_user(Some("rAW"), None, "pw")).await,
            Err(Error::UserExists(_))
        ));
        Ok(())
    }

    async fn concurrent_sign_ups_and_logins_lose_nothing(p: Platform) -> TestResult {
        let accounts = p.accounts().clone();
        // The same name, in different cases, signed up at once: exactly one wins.
        let names = ["sam", "Sam", "SAM", "sAm"];
        let tasks: Vec<_> = names
            .iter()
            .map(|n| {
                let accounts = accounts.clone();
                let user = new_user(Some(n), None, "pw");
                tokio::spawn(async move { accounts.create_user(user).await })
            })
            .collect();
        let mut created = Vec::new();
        for t in tasks {
            match t.await? {
                Ok(id) => created.push(id),
                Err(Error::UserExists(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        assert_eq!(created.len(), 1, "{created:?}");
        assert_eq!(user_count(&p).await?, 1);

        // Logins at once: every token is stored and resolves (atomic pushes).
        let tasks: Vec<_> = (0..6)
            .map(|_| {
                let accounts = accounts.clone();
                tokio::spawn(async move {
                    accounts.login(&UserSelector::Username("SAM".into()), &plain("pw")).await
                })
            })
            .collect();
        let mut tokens = Vec::new();
        for t in tasks {
            tokens.push(t.await??.token);
        }
        for token in &tokens {
            assert!(accounts.user_by_token(token).await?.is_some());
        }
        let user = accounts.find_user_by_id(&created[0]).await?.ok_or("user")?;
        assert_eq!(user["services"]["resume"]["loginTokens"].as_array().map(Vec::len), Some(6));
        Ok(())
    }

    async fn bad_sign_ups_are_refused_and_write_nothing(p: Platform) -> TestResult {
        let accounts = p.accounts();
        accounts.create_user(new_user(Some("ada"), Some("ada@example.org"), "pw")).await?;
        let before = user_count(&p).await?;
        let cases = [
            (new_user(Some("x"), None, ""), "empty password"),
            (new_user(None, Some("not-an-email"), "pw"), "malformed email"),
            (new_user(None, None, "pw"), "no username or email"),
            (new_user(Some("   "), None, "pw"), "blank username"),
            (
                NewUser { password: Some(Password::Digest("abc".into())), ..new_user(Some("y"), None, "") },
                "bad digest",
            ),
            (
                NewUser { profile: Some(json!("text")), ..new_user(Some("z"), None, "pw") },
                "profile not an object",
            ),
        ];
        for (user, why) in cases {
            match accounts.create_user(user).await {
                Err(Error::InvalidUser(msg)) => assert!(!msg.is_empty(), "{why}"),
                other => panic!("{why}: expected InvalidUser, got {other:?}"),
            }
        }
        for user in [
            new_user(Some("ada"), None, "pw"),
            new_user(Some("ADA"), None, "pw"),
            new_user(Some("other"), Some("ada@example.org"), "pw"),
            new_user(Some("other"), Some("Ada@Example.ORG"), "pw"),
        ] {
            match accounts.create_user(user).await {
                Err(e @ Error::UserExists(_)) => assert_eq!(e.status_code(), 400),
                other => panic!("expected UserExists, got {other:?}"),
            }
        }
        assert_eq!(user_count(&p).await?, before);
        Ok(())
    }

    async fn login_succeeds_with_the_password_or_its_digest(p: Platform) -> TestResult {
        let accounts = p.accounts();
        let password = "pässwörd 😀";
        let id = accounts.create_user(new_user(Some("ada"), Some("ada@example.org"), password)).await?;
        for selector in [
            UserSelector::Username("ada".into()),
            UserSelector::Username("ADA".into()),
            UserSelector::Email("ada@example.org".into()),
            UserSelector::Either("ada".into()),
            UserSelector::Id(id.clone()),
        ] {
            let login = accounts.login(&selector, &plain(password)).await?;
            assert_eq!(login.user_id, id);
            assert_eq!(login.token.len(), 43);
        }
        let digest = Password::Digest(password_digest(password));
        let login = accounts.login(&UserSelector::Username("ada".into()), &digest).await?;

        // Only the hash is stored, with `when`.
        let user = accounts.find_user_by_id(&id).await?.ok_or("user")?;
        let tokens = user["services"]["resume"]["loginTokens"].as_array().ok_or("tokens")?;
        assert_eq!(tokens.len(), 6);
        let last = tokens.last().ok_or("a token")?;
        assert_eq!(last["hashedToken"], json!(hash_token(&login.token)));
        assert_eq!(last["when"], json!(login.when));
        assert!(!user.to_string_lossy().contains(&login.token));

        let checked = accounts.check_password(&user, &plain(password)).await?;
        assert!(checked);
        assert!(!accounts.check_password(&user, &plain("nope")).await?);
        Ok(())
    }

    async fn every_login_failure_is_the_same_error(p: Platform) -> TestResult {
        let accounts = p.accounts();
        accounts.create_user(new_user(Some("ada"), None, "right")).await?;
        accounts.create_user(NewUser { username: Some("nopw".into()), ..NewUser::default() }).await?;
        let cases = [
            (UserSelector::Username("ada".into()), plain("wrong")),
            (UserSelector::Username("ada".into()), plain("")),
            (UserSelector::Username("ada".into()), Password::Digest("zz".into())),
            (UserSelector::Username("ghost".into()), plain("right")),
            (UserSelector::Email("ghost@example.org".into()), plain("right")),
            (UserSelector::Id("no-such-id".into()), plain("right")),
            (UserSelector::Username("nopw".into()), plain("anything")),
        ];
        for (selector, password) in cases {
            match accounts.login(&selector, &password).await {
                Err(e @ Error::LoginFailed) => {
                    assert_eq!(e.to_string(), "Incorrect credentials");
                    assert_eq!(e.status_code(), 401);
                }
                other => panic!("{selector:?}: expected LoginFailed, got {other:?}"),
            }
        }
        Ok(())
    }

    async fn tokens_resolve_until_removed(p: Platform) -> TestResult {
        let accounts = p.accounts();
        let id = accounts.create_user(new_user(Some("ada"), None, "pw")).await?;
        let a = accounts.login(&UserSelector::Username("ada".into()), &plain("pw")).await?;
        let b = accounts.new_login_token(&id).await?;
        for t in [&a, &b] {
            let user = accounts.user_by_token(&t.token).await?.ok_or("token resolves")?;
            assert_eq!(user["_id"], json!(id));
        }
        assert!(accounts.user_by_token("not-a-token").await?.is_none());
        assert!(accounts.user_by_token("").await?.is_none());
        let by_hash = accounts.user_by_hashed_token(TOKEN_PATH, &hash_token(&a.token)).await?;
        assert!(by_hash.is_some());

        // Logout removes one token; the other keeps working.
        assert!(accounts.remove_token(&id, &a.token).await?);
        assert!(!accounts.remove_token(&id, &a.token).await?);
        assert!(accounts.user_by_token(&a.token).await?.is_none());
        assert!(accounts.user_by_token(&b.token).await?.is_some());

        // Logout everywhere.
        let c = accounts.new_login_token(&id).await?;
        assert_eq!(accounts.remove_all_tokens(&id).await?, 2);
        assert!(accounts.user_by_token(&b.token).await?.is_none());
        assert!(accounts.user_by_token(&c.token).await?.is_none());
        assert!(matches!(accounts.remove_all_tokens("nobody").await, Err(Error::UserNotFound)));
        assert!(matches!(accounts.new_login_token("nobody").await, Err(Error::UserNotFound)));
        Ok(())
    }

    async fn expired_tokens_resolve_to_no_one(p: Platform) -> TestResult {
        let accounts = p.accounts();
        let id = accounts.create_user(new_user(Some("ada"), None, "pw")).await?;
        let old = (Utc::now() - Duration::days(91)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let recent = (Utc::now() - Duration::days(89)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let push = Update::parse(&json!({"$push": {"services.resume.loginTokens": {"$each": [
            {"when": old, "hashedToken": hash_token("old-token")},
            {"when": recent, "hashedToken": hash_token("recent-token")},
            {"hashedToken": hash_token("no-when")}
        ]}}}))?;
        p.store().update(USERS, &Selector::by_id(&id), &push, Default::default()).await?;
        assert!(accounts.user_by_token("old-token").await?.is_none());
        assert!(accounts.user_by_token("recent-token").await?.is_some());
        assert!(accounts.user_by_token("no-when").await?.is_none());

        // A new login prunes the expired token.
        accounts.new_login_token(&id).await?;
        let user = accounts.find_user_by_id(&id).await?.ok_or("user")?;
        let hashes: Vec<&Value> = user["services"]["resume"]["loginTokens"]
            .as_array()
            .ok_or("tokens")?
            .iter()
            .map(|t| &t["hashedToken"])
            .collect();
        assert!(!hashes.contains(&&json!(hash_token("old-token"))));
        assert!(hashes.contains(&&json!(hash_token("recent-token"))));

        // So does a login.
        let push = Update::parse(&json!({"$push": {"services.resume.loginTokens":
            {"when": old, "hashedToken": hash_token("old-again")}}}))?;
        p.store().update(USERS, &Selector::by_id(&id), &push, Default::default()).await?;
        accounts.login(&UserSelector::Id(id.clone()), &plain("pw")).await?;
        let user = accounts.find_user_by_id(&id).await?.ok_or("user")?;
        let tokens = user["services"]["resume"]["loginTokens"].as_array().ok_or("tokens")?;
        assert!(tokens.iter().all(|t| t["hashedToken"] != json!(hash_token("old-again"))));
        assert_eq!(tokens.len(), 4, "recent, no-when and two new ones: {tokens:?}");
        Ok(())
    }

    async fn a_custom_token_path_is_looked_up(p: Platform) -> TestResult {
        let accounts = p.accounts();
        let id = accounts.create_user(new_user(Some("ada"), None, "pw")).await?;
        let set = Update::parse(&json!({"$set": {"services.api.key": hash_token("k")}}))?;
        p.store().update(USERS, &Selector::by_id(&id), &set, Default::default()).await?;
        let user = accounts.user_by_hashed_token("services.api.key", &hash_token("k")).await?;
        assert_eq!(user.ok_or("found")?["_id"], json!(id));
        assert!(accounts.user_by_hashed_token("services.api.key", &hash_token("x")).await?.is_none());
        // Looked up again (now through the index made on first use).
        assert!(accounts.user_by_hashed_token("services.api.key", &hash_token("k")).await?.is_some());
        assert!(matches!(
            accounts.user_by_hashed_token("a..b", "h").await,
            Err(Error::InvalidArgument(_))
        ));
        Ok(())
    }

    async fn roles_profile_and_password_changes(p: Platform) -> TestResult {
        let accounts = p.accounts();
        let id = accounts.create_user(new_user(Some("ada"), None, "old")).await?;
        accounts.add_roles(&id, &["editor".into(), "viewer".into()]).await?;
        accounts.add_roles(&id, &["editor".into()]).await?;
        let user = accounts.find_user_by_id(&id).await?.ok_or("user")?;
        assert_eq!(user["roles"], json!(["editor", "viewer"]));
        assert!(user_has_any_role(&user, &["admin".into(), "viewer".into()]));
        accounts.remove_roles(&id, &["viewer".into()]).await?;
        let user = accounts.find_user_by_id(&id).await?.ok_or("user")?;
        assert!(!user_has_any_role(&user, &["viewer".into()]));
        assert!(user_has_any_role(&user, &["editor".into()]));
        assert!(matches!(accounts.add_roles("nobody", &["x".into()]).await, Err(Error::UserNotFound)));

        accounts.set_profile(&id, json!({"bio": "math"})).await?;
        let user = accounts.find_user_by_id(&id).await?.ok_or("user")?;
        assert_eq!(user["profile"], json!({"bio": "math"}));
        assert!(matches!(accounts.set_profile(&id, json!(3)).await, Err(Error::InvalidUser(_))));

        accounts.set_password(&id, plain("new")).await?;
        let ada = UserSelector::Username("ada".into());
        assert!(matches!(accounts.login(&ada, &plain("old")).await, Err(Error::LoginFailed)));
        assert!(accounts.login(&ada, &plain("new")).await.is_ok());
        assert!(matches!(accounts.set_password(&id, plain("")).await, Err(Error::InvalidUser(_))));
        assert!(matches!(accounts.set_password("nobody", plain("x")).await, Err(Error::UserNotFound)));

        assert_eq!(accounts.list_users().await?.len(), 1);
        assert!(accounts.remove_user(&id).await?);
        assert!(!accounts.remove_user(&id).await?);
        assert!(accounts.list_users().await?.is_empty());
        Ok(())
    }
}

trait Lossy {
    fn to_string_lossy(&self) -> String;
}

impl Lossy for portico_platform::Document {
    fn to_string_lossy(&self) -> String {
        Value::Object(self.clone()).to_string()
    }
}

#[tokio::test]
async fn token_lifetime_is_configurable() -> TestResult {
    let mut config = PlatformConfig::default();
    config.accounts = {
        let mut o = AccountsConfig::default();
        o.token_lifetime = Duration::milliseconds(50);
        o
    };
    let p = Platform::open_with("memory:", config).await?;
    let accounts = p.accounts();
    let id = accounts
        .create_user(new_user(Some("ada"), None, "pw"))
        .await?;
    let t = accounts.new_login_token(&id).await?;
    assert!(accounts.user_by_token(&t.token).await?.is_some());
    tokio::time::sleep(std::time::Duration::from_millis(80)).await;
    assert!(accounts.user_by_token(&t.token).await?.is_none());
    Ok(())
}

/// Sign-ups of one name in case variants, at once, through two platforms on one database (two
/// instances of a server): exactly one account is made, the others are told the name is taken.
async fn signups_race_across_instances(url: &str) -> TestResult {
    let a = Platform::open(url).await?;
    let b = Platform::open(url).await?;
    let mut tasks = Vec::new();
    for (i, name) in ["Ann", "ann", "ANN", "aNN", "AnN", "anN"]
        .into_iter()
        .enumerate()
    {
        let p = if i % 2 == 0 { a.clone() } else { b.clone() };
        let email = format!("{}@example.org", name);
        tasks.push(tokio::spawn(async move {
            let user = new_user(Some(name), Some(&email), "pw");
            p.accounts().create_user(user).await
        }));
    }
    let mut made = 0;
    for task in tasks {
        match task.await? {
            Ok(_) => made += 1,
            Err(Error::UserExists(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    assert_eq!(made, 1);
    assert_eq!(a.store().count(USERS, &Selector::all()).await?, 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signups_race_across_instances_on_sqlite() -> TestResult {
    let dir = tempfile::tempdir()?;
    signups_race_across_instances(&format!("sqlite:{}", dir.path().join("x.db").display())).await
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signups_race_across_instances_on_postgres() -> TestResult {
    signups_race_across_instances(&crate::common::postgres_database().await?).await
}

/// A platform can be opened inside a spawned task or a handler: `Platform::open` is `Send`.
#[tokio::test]
async fn a_platform_opens_inside_a_spawned_task() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("spawned.db").display());
    let opened =
        tokio::spawn(async move { Platform::open(&url).await.map(|p| p.collection_names()) })
            .await
            .unwrap();
    assert!(opened.is_ok());
}
