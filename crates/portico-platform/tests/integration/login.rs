//! The login service: one budget per account whatever form names it, owners not locked out by
//! other addresses, sign-ups limited.

use std::net::IpAddr;
use std::time::Duration;

use portico_platform::{Limit, LoginError, LoginLimits, NewUser, Password, Platform};
use serde_json::{Value, json};

use crate::common::TestResult;

fn ip(s: &str) -> Option<IpAddr> {
    s.parse().ok()
}

async fn ada(p: &Platform) -> Result<String, Box<dyn std::error::Error>> {
    Ok(p.accounts()
        .create_user(NewUser {
            username: Some("ada".into()),
            email: Some("ada@example.org".into()),
            password: Some(Password::Plain("right".into())),
            ..NewUser::default()
        })
        .await?)
}

fn wrong(identity: Value) -> Value {
    let mut body = identity;
    body["password"] = json!("wrong");
    body
}

on_every_backend! {
    async fn every_form_of_one_account_shares_one_budget(p: Platform) -> TestResult {
        let id = ada(&p).await?;
        let logins = p.login_service(LoginLimits::default());
        let forms = [
            json!({"username": "ada"}),
            json!({"email": "ADA@example.org"}),
            json!({"user": {"id": id}}),
            json!({"user": "ada"}),
            json!({"username": "Ada"}),
        ];
        for form in &forms {
            let r = logins.login(Some(&wrong(form.clone())), ip("10.0.0.1")).await;
            assert!(matches!(r, Err(LoginError::Failed)), "{form}: {r:?}");
        }
        // Five failures through five forms lock every form from that address.
        for form in &forms {
            let r = logins.login(Some(&wrong(form.clone())), ip("10.0.0.1")).await;
            assert!(matches!(r, Err(LoginError::TooManyAttempts(_))), "{form}: {r:?}");
        }
        Ok(())
    }

    async fn the_owner_from_another_address_still_gets_in(p: Platform) -> TestResult {
        ada(&p).await?;
        let logins = p.login_service(LoginLimits::default());
        for _ in 0..5 {
            let _ = logins.login(Some(&wrong(json!({"username": "ada"}))), ip("10.0.0.66")).await;
        }
        let right = json!({"username": "ada", "password": "right"});
        // The attacker's address is refused even with the right password: no oracle.
        assert!(matches!(
            logins.login(Some(&right), ip("10.0.0.66")).await,
            Err(LoginError::TooManyAttempts(_))
        ));
        assert!(logins.login(Some(&right), ip("192.0.2.1")).await.is_ok());
        Ok(())
    }

    async fn many_addresses_hit_the_account_ceiling(p: Platform) -> TestResult {
        ada(&p).await?;
        // The default budget (5 per 10 s) with a window that 20 password checks on a loaded
        // machine cannot outlast.
        let logins = p.login_service({
            let mut o = LoginLimits::default();
            o.per_identity = Some(Limit::new(5, Duration::from_secs(600)));
            o
        });
        // 4 x 5 failures from 20 addresses, one each.
        for n in 0..20 {
            let from = ip(&format!("10.1.0.{n}"));
            let r = logins.login(Some(&wrong(json!({"username": "ada"}))), from).await;
            assert!(matches!(r, Err(LoginError::Failed)), "{n}: {r:?}");
        }
        let r = logins
            .login(Some(&json!({"username": "ada", "password": "right"})), ip("192.0.2.1"))
            .await;
        assert!(matches!(r, Err(LoginError::TooManyAttempts(_))), "{r:?}");
        Ok(())
    }

    async fn malformed_logins_count_against_the_address(p: Platform) -> TestResult {
        let logins = p.login_service({ let mut o = LoginLimits::default(); o.per_address = Some(Limit::new(3, Duration::from_secs(60))); o });
        for body in [json!({}), json!([1]), json!({"password": "x"})] {
            assert!(matches!(logins.login(Some(&body), ip("10.0.0.2")).await, Err(LoginError::Failed)));
        }
        assert!(matches!(
            logins.login(Some(&json!({})), ip("10.0.0.2")).await,
            Err(LoginError::TooManyAttempts(_))
        ));
        assert!(matches!(logins.login(None, ip("10.0.0.3")).await, Err(LoginError::Failed)));
        Ok(())
    }

    async fn services_of_one_platform_share_failures(p: Platform) -> TestResult {
        ada(&p).await?;
        let a = p.login_service(LoginLimits::default());
        let b = p.login_service(LoginLimits::default());
        for n in 0..5 {
            let service = if n % 2 == 0 { &a } else { &b };
            let _ = service.login(Some(&wrong(json!({"username": "ada"}))), ip("10.0.0.4")).await;
        }
        assert!(matches!(
            b.login(Some(&wrong(json!({"username": "ada"}))), ip("10.0.0.4")).await,
            Err(LoginError::TooManyAttempts(_))
        ));
        Ok(())
    }

    async fn sign_ups_are_limited_per_address(p: Platform) -> TestResult {
        let logins = p.login_service({ let mut o = LoginLimits::default(); o.register_per_address = Some(Limit::new(3, Duration::from_secs(60))); o });
        for n in 0..3 {
            let body = json!({"username": format!("u{n}"), "password": "pw-long-1"});
            logins.register(Some(&body), ip("10.0.0.5"), true).await?;
        }
        let body = json!({"username": "u9", "password": "pw-long-1"});
        assert!(matches!(
            logins.register(Some(&body), ip("10.0.0.5"), true).await,
            Err(LoginError::TooManyAttempts(_))
        ));
        assert!(logins.register(Some(&body), ip("10.0.0.6"), true).await.is_ok());
        assert!(matches!(
            logins.register(Some(&json!({"username": "U9", "password": "pw-long-1"})), ip("10.0.0.7"), true).await,
            Err(LoginError::InvalidUser(_))
        ));
        assert!(matches!(
            logins.register(Some(&body), ip("10.0.0.8"), false).await,
            Err(LoginError::SignupsForbidden)
        ));
        Ok(())
    }
}
