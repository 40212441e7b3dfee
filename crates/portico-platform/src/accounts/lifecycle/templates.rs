//! The texts of the account mails: built in, or overridden per mail (and per language) from
//! files.

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
///
/// A mail can also have texts per language ([`MailTemplates::set_in`], `fr`, `pt-br`): a mail
/// to an account is written in the first of its languages that has texts (the account's
/// `locale`, then the request's `Accept-Language`, most wanted first; `fr-ca` also tries `fr`),
/// else in the default texts (English).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MailTemplates {
    overrides: BTreeMap<String, MailTemplate>,
    localized: BTreeMap<(String, String), MailTemplate>,
}

/// The languages a mail may be written in, most wanted first: `locale` (the account's), then
/// the tags of an `Accept-Language` value by their weight (`*` and `q=0` left out), lowercased,
/// at most 8.
pub fn preferred_languages(locale: Option<&str>, accept_language: Option<&str>) -> Vec<String> {
    let mut weighted: Vec<(u16, usize, String)> = accept_language
        .unwrap_or_default()
        .split(',')
        .take(16)
        .enumerate()
        .filter_map(|(i, part)| {
            let mut pieces = part.split(';');
            let tag = pieces.next()?.trim().to_ascii_lowercase();
            let q = pieces
                .filter_map(|p| p.trim().strip_prefix("q="))
                .filter_map(|q| q.trim().parse::<f32>().ok())
                .next()
                .unwrap_or(1.0);
            // Weights as thousandths, so they sort as integers.
            let weight = (q.clamp(0.0, 1.0) * 1000.0) as u16;
            (weight > 0 && is_language_tag(&tag)).then_some((weight, i, tag))
        })
        .collect();
    weighted.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut out: Vec<String> = Vec::new();
    let first = locale
        .map(|l| l.trim().to_ascii_lowercase().replace('_', "-"))
        .filter(|l| is_language_tag(l));
    for tag in first.into_iter().chain(weighted.into_iter().map(|w| w.2)) {
        if out.len() < 8 && !out.contains(&tag) {
            out.push(tag);
        }
    }
    out
}

/// True for a language tag as mail files name them: `fr`, `pt-br`, `zh-hant` (letters and
/// digits, 2 to 8 in a part, at most 3 parts, starting with 2 or 3 letters).
pub fn is_language_tag(tag: &str) -> bool {
    let parts: Vec<&str> = tag.split('-').collect();
    parts.len() <= 3
        && parts.first().is_some_and(|p| {
            (2..=3).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_lowercase())
        })
        && parts.iter().all(|p| {
            (2..=8).contains(&p.len())
                && p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// The placeholders (`{{name}}`) of `text` that the mail `name` does not fill in.
pub fn unknown_placeholders(name: &str, text: &str) -> Vec<String> {
    let known = placeholders(name);
    let mut unknown = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let word = after[..end].trim();
        if !known.contains(&word) && !unknown.iter().any(|u| u == word) {
            unknown.push(word.to_owned());
        }
        rest = &after[end + 2..];
    }
    unknown
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

    /// Uses `template` for the mail `name` written in `language` (a tag such as `fr`).
    pub fn set_in(&mut self, name: &str, language: &str, template: MailTemplate) {
        self.localized
            .insert((name.to_owned(), language.to_ascii_lowercase()), template);
    }

    /// The template of the mail `name` in the first of `languages` that has one (a tag's
    /// primary language counts too: `fr-ca` finds `fr`), else [`MailTemplates::get`]'s.
    pub fn get_in(&self, name: &str, languages: &[String]) -> MailTemplate {
        for tag in languages {
            let primary = tag.split('-').next().unwrap_or(tag);
            for candidate in [tag.as_str(), primary] {
                if let Some(t) = self.localized.get(&(name.to_owned(), candidate.to_owned())) {
                    return t.clone();
                }
            }
        }
        self.get(name)
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
    #[cfg(test)]
    pub(crate) fn render(
        &self,
        name: &str,
        values: &[(&str, &str)],
    ) -> (String, String, Option<String>) {
        self.render_in(name, &[], values)
    }

    /// The mail `name`, in the first of `languages` it has texts for, filled in.
    pub(crate) fn render_in(
        &self,
        name: &str,
        languages: &[String],
        values: &[(&str, &str)],
    ) -> (String, String, Option<String>) {
        let t = self.get_in(name, languages);
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
    fn languages_come_from_the_locale_then_the_weights() {
        let langs = preferred_languages(
            Some("de_AT"),
            Some("fr-CA,fr;q=0.9, en;q=0.5,*;q=0.1,x;q=1,es;q=0"),
        );
        assert_eq!(langs, ["de-at", "fr-ca", "fr", "en"]);
        assert!(preferred_languages(None, None).is_empty());
        assert!(is_language_tag("pt-br") && !is_language_tag("../x") && !is_language_tag("f"));
        let mut t = MailTemplates::default();
        let fr = MailTemplate {
            subject: "Réinitialiser".into(),
            text: "Lien : {{link}}".into(),
            html: None,
        };
        t.set_in("password-reset", "fr", fr.clone());
        assert_eq!(t.get_in("password-reset", &["fr-ca".into()]), fr);
        assert_eq!(
            t.get_in("password-reset", &["es".into()]),
            t.get("password-reset")
        );
        assert_eq!(
            t.get_in("verify-email", &["fr".into()]),
            t.get("verify-email")
        );
        assert_eq!(
            unknown_placeholders("password-reset", "{{link}} {{ code }} {{x}}{{x}}"),
            ["code", "x"]
        );
        assert!(unknown_placeholders("email-code", "{{code}} {{minutes}}").is_empty());
    }

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
