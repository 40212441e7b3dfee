//! Mail in the reader's language through the binary and a real SMTP server (aiosmtpd): per
//! language template files beside the config, chosen from the account's `locale`, else the
//! request's `Accept-Language`, else English; `portico check` refusing unknown placeholders,
//! files of no mail and bad language tags.

use serde_json::{Value, json};

use super::common::{Http, Workspace, text};
use portico_testkit::mail::SmtpSink;

const APP: &str = "http://app.test";

fn write(ws: &Workspace, name: &str, body: &str) {
    let dir = ws.path("mail");
    std::fs::create_dir_all(&dir).expect("mail folder");
    std::fs::write(dir.join(name), body).expect("template");
}

fn config(smtp: &str) -> String {
    format!(
        "[[api]]\nuse_default_auth = true\nauth_failure_delay_ms = 0\n\
         [accounts]\napp_url = \"{APP}\"\n\
         mail_rate_limit_per_email = {{ attempts = 50, per_seconds = 3600 }}\n\
         [email]\nsmtp_url = \"{smtp}\"\nfrom = \"Portico <no-reply@example.com>\"\n\
         templates = \"mail/\"\nretry_max_secs = 1\n"
    )
}

/// Asks for `path` (`/auth/password-reset`, ...) for `email` with `language`; waits for mail
/// number `n` (1-based) and returns it.
async fn ask(
    server: &Http,
    sink: &SmtpSink,
    path: &str,
    email: &str,
    language: Option<&str>,
    n: usize,
) -> Value {
    let headers: Vec<(&str, &str)> = language
        .map(|l| ("Accept-Language", l))
        .into_iter()
        .collect();
    let r = server
        .call("POST", path, Some(json!({"email": email})), &headers)
        .await;
    assert_eq!(r.status, 202, "{}", r.raw);
    sink.wait_for(n).await[n - 1].clone()
}

fn field(mail: &Value, key: &str) -> String {
    mail[key].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mails_follow_the_locale_then_the_request_then_english() {
    let sink = SmtpSink::started();
    let ws = Workspace::new();
    write(
        &ws,
        "reset.fr.subject",
        "Réinitialiser votre mot de passe\n",
    );
    write(
        &ws,
        "reset.fr.txt",
        "Bonjour,\n\nchoisissez un nouveau mot de passe pour {{email}} :\n\n{{link}}\n",
    );
    write(
        &ws,
        "reset.fr.html",
        "<p>Bonjour {{email}}</p><a href=\"{{link}}\">ici</a>",
    );
    write(
        &ws,
        "password-reset.de.txt",
        "Hallo {{email}}, hier: {{link}}\n",
    );
    write(
        &ws,
        "email-code.fr.txt",
        "Votre code : {{code}} ({{minutes}} minutes)\n{{link}}\n",
    );
    ws.config(&config(&sink.url()));
    let check = ws.run(&["check", "--config", "portico.toml"]);
    assert!(check.status.success(), "{}", text(&check.stderr));
    ws.add_account("ann", Some("ann@example.com"), "ann-password", &[]);
    let export = json!([{
        "_id": "DoraAccount000001",
        "username": "dora",
        "emails": [{"address": "dora@example.com", "verified": true}],
        "locale": "de",
        "services": {}
    }]);
    std::fs::write(ws.path("dora.json"), export.to_string()).expect("export");
    let imported = ws.import("users", "dora.json");
    assert!(imported.status.success(), "{}", text(&imported.stderr));
    let server = ws.serve();
    let reset = "/auth/password-reset";

    // The request's languages by weight: fr-CA has no texts, fr has.
    let mail = ask(
        &server,
        &sink,
        reset,
        "ann@example.com",
        Some("es;q=0.2, fr-CA, fr;q=0.9"),
        1,
    )
    .await;
    assert_eq!(
        field(&mail, "subject"),
        "Réinitialiser votre mot de passe",
        "{mail}"
    );
    let body = field(&mail, "text");
    assert!(
        body.starts_with("Bonjour,") && body.contains("pour ann@example.com :"),
        "{body}"
    );
    assert!(
        body.contains(&format!("{APP}/reset-password?token=")),
        "{body}"
    );
    let html = field(&mail, "html");
    assert!(
        html.starts_with(
            "<p>Bonjour ann@example.com</p><a href=\"http://app.test/reset-password?token="
        ),
        "{html}"
    );
    // No texts in any language asked for, or none asked: English.
    for (language, n) in [(Some("es, it;q=0.5"), 2), (None, 3)] {
        let mail = ask(&server, &sink, reset, "ann@example.com", language, n).await;
        assert_eq!(
            field(&mail, "subject"),
            "Reset your password",
            "{language:?}: {mail}"
        );
        assert!(field(&mail, "text").starts_with("Hello,"), "{mail}");
        assert_eq!(mail["html"], Value::Null, "{mail}");
    }
    // The account's locale comes first: German text, and the default subject.
    let mail = ask(&server, &sink, reset, "dora@example.com", Some("fr"), 4).await;
    assert!(
        field(&mail, "text")
            .starts_with("Hallo dora@example.com, hier: http://app.test/reset-password?token="),
        "{mail}"
    );
    assert_eq!(field(&mail, "subject"), "Reset your password", "{mail}");
    // The sign-in code mail too.
    let mail = ask(
        &server,
        &sink,
        "/auth/email-code",
        "ann@example.com",
        Some("fr"),
        5,
    )
    .await;
    let body = field(&mail, "text");
    assert!(
        body.starts_with("Votre code : ") && body.contains("(10 minutes)"),
        "{body}"
    );
}

#[test]
fn check_refuses_unknown_placeholders_names_and_languages() {
    for (file, body, says) in [
        (
            "verify.fr.txt",
            "{{code}} {{link}}",
            "unknown placeholder {{code}}",
        ),
        (
            "password-reset.txt",
            "{{link}} {{ passwort }}",
            "unknown placeholder {{passwort}}",
        ),
        ("pasword-reset.fr.txt", "{{link}}", "is no mail's"),
        ("reset.f_r.txt", "{{link}}", "is not a language tag"),
    ] {
        let ws = Workspace::new();
        write(&ws, file, body);
        let stderr = ws.check_refuses(&config("smtp://127.0.0.1:9"));
        assert!(
            stderr.contains(file) && stderr.contains(says),
            "{file}: {stderr}"
        );
        // serve refuses the same file.
        let refused = ws.serve_refuses();
        assert!(refused.contains(says), "{file}: {refused}");
    }
}
