//! The texts of the account mails: built in, or overridden per mail from files.

use std::collections::BTreeMap;

/// One mail's texts. `{{link}}`, `{{email}}` and `{{app_url}}` are replaced when it is sent
/// (the sign-in code mail has `{{code}}` and `{{minutes}}` too; see [`placeholders`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailTemplate {
    /// The subject line.
    pub subject: String,
    /// The plain-text body.
    pub text: String,
    /// The HTML body, when there is one (values are HTML-escaped into it).
    pub html: Option<String>,
}

/// The templates by mail name: `verify-email`, `password-reset`, `email-change`,
/// `email-code` (a sign-in code and link) and `email-code-unknown` (the answer to a sign-in
/// code request for an address no account has). A name not set uses the built-in text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MailTemplates {
    overrides: BTreeMap<String, MailTemplate>,
}

/// The names of the account mails.
pub const MAIL_NAMES: [&str; 5] = [
    "verify-email",
    "password-reset",
    "email-change",
    "email-code",
    "email-code-unknown",
];

/// The placeholders the mail `name` fills in (`{{name}}` in its texts).
pub fn placeholders(name: &str) -> &'static [&'static str] {
    match name {
        "email-code" => &["code", "link", "minutes", "email", "app_url"],
        "email-code-unknown" => &["email", "app_url"],
        _ => &["link", "email", "app_url"],
    }
}

impl MailTemplates {
    /// Uses `template` for the mail `name` (one of [`MAIL_NAMES`]).
    pub fn set(&mut self, name: &str, template: MailTemplate) {
        self.overrides.insert(name.to_owned(), template);
    }

    /// The template of the mail `name`.
    pub fn get(&self, name: &str) -> MailTemplate {
        if let Some(t) = self.overrides.get(name) {
            return t.clone();
        }
        let (subject, text) = match name {
            "verify-email" => (
                "Confirm your email address",
                "Hello,\n\nplease confirm that {{email}} is your address by opening this link:\n\n{{link}}\n\nThe link works once, for 24 hours. If you did not ask for it, ignore this mail.\n",
            ),
            "password-reset" => (
                "Reset your password",
                "Hello,\n\nsomeone (hopefully you) asked to reset the password of the account of {{email}}. Choose a new one here:\n\n{{link}}\n\nThe link works once, for one hour. If you did not ask for it, ignore this mail: your password stays as it is.\n",
            ),
            "email-code" => (
                "Your sign-in code: {{code}}",
                "Hello,\n\nyour code to sign in with {{email}} is\n\n    {{code}}\n\nor open this link:\n\n{{link}}\n\nThe code and the link work once, for {{minutes}} minutes. If you did not ask for them, ignore this mail.\n",
            ),
            "email-code-unknown" => (
                "Signing in to {{app_url}}",
                "Hello,\n\nsomeone (hopefully you) asked for a code to sign in to {{app_url}} with {{email}}, but no account has this address. If it was you, sign up first, or sign in with the address your account has. If not, ignore this mail.\n",
            ),
            _ => (
                "Confirm your new email address",
                "Hello,\n\nplease confirm that your account should use {{email}} from now on by opening this link:\n\n{{link}}\n\nThe link works once, for one hour. If you did not ask for it, ignore this mail.\n",
            ),
        };
        MailTemplate {
            subject: subject.to_owned(),
            text: text.to_owned(),
            html: None,
        }
    }

    /// The mail `name` with its placeholders filled in.
    pub(crate) fn render(
        &self,
        name: &str,
        values: &[(&str, &str)],
    ) -> (String, String, Option<String>) {
        let t = self.get(name);
        let fill = |s: &str, escape: bool| {
            values.iter().fold(s.to_owned(), |acc, (k, v)| {
                let v = if escape {
                    html_escape(v)
                } else {
                    (*v).to_owned()
                };
                acc.replace(&format!("{{{{{k}}}}}"), &v)
            })
        };
        (
            fill(&t.subject, false),
            fill(&t.text, false),
            t.html.as_deref().map(|h| fill(h, true)),
        )
    }
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_and_escaped_in_html() {
        let mut t = MailTemplates::default();
        t.set(
            "password-reset",
            MailTemplate {
                subject: "Reset for {{email}}".into(),
                text: "Go to {{link}}".into(),
                html: Some("<a href=\"{{link}}\">{{email}}</a>".into()),
            },
        );
        let (s, text, html) = t.render(
            "password-reset",
            &[("link", "https://x/r?token=a&b"), ("email", "<a@x.org>")],
        );
        assert_eq!(s, "Reset for <a@x.org>");
        assert_eq!(text, "Go to https://x/r?token=a&b");
        assert_eq!(
            html.as_deref(),
            Some("<a href=\"https://x/r?token=a&amp;b\">&lt;a@x.org&gt;</a>")
        );
        let (_, built_in, none) = t.render("verify-email", &[("link", "L"), ("email", "E")]);
        assert!(built_in.contains("\n\nL\n") && built_in.contains("E is your"));
        assert!(none.is_none());
    }
}
