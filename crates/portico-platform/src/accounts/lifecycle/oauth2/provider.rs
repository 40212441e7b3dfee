//! What an OAuth2 provider is: its endpoints, the scopes asked for, and how its user API
//! names the person and their address; the presets fill these for GitHub, GitLab and Discord.

/// How a provider's user API says who signed in and which address they proved.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuth2Profile {
    /// GitHub: `GET {api}/user` for `id`, then `GET {api}/user/emails` (`emails_url`) for the
    /// address marked `primary`, verified when that entry says `verified: true`.
    GitHub {
        /// `{api}/user/emails`.
        emails_url: String,
    },
    /// GitLab: `GET {api}/user`: `id`, `email`, verified when `confirmed_at` is set.
    GitLab,
    /// Discord: `GET {api}/users/@me`: `id`, `email`, verified when `verified` is true.
    Discord,
    /// Any other provider: the user reply's fields named here (dots go into objects, as in
    /// `"data.id"`).
    Fields {
        /// The field holding the person's stable id (a string or a number).
        id: String,
        /// The field holding their address.
        email: String,
        /// The field that is `true` when the provider verified the address; without one the
        /// address is never taken as verified (so never links to an existing account).
        email_verified: Option<String>,
    },
}

/// The providers Portico knows the endpoints and user API of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuth2Preset {
    /// GitHub (and GitHub Enterprise Server with `base_url`).
    GitHub,
    /// GitLab (gitlab.com, or a self-hosted one with `base_url`).
    GitLab,
    /// Discord.
    Discord,
}

impl OAuth2Preset {
    /// The names presets are written with, in order.
    pub const NAMES: [&'static str; 3] = ["github", "gitlab", "discord"];

    /// The preset written `name` (`github`, `gitlab`, `discord`).
    pub fn parse(name: &str) -> Option<OAuth2Preset> {
        match name {
            "github" => Some(OAuth2Preset::GitHub),
            "gitlab" => Some(OAuth2Preset::GitLab),
            "discord" => Some(OAuth2Preset::Discord),
            _ => None,
        }
    }

    /// Its name as written.
    pub fn name(self) -> &'static str {
        match self {
            OAuth2Preset::GitHub => "github",
            OAuth2Preset::GitLab => "gitlab",
            OAuth2Preset::Discord => "discord",
        }
    }

    /// The address the browser and the token request go to by default.
    pub fn default_base_url(self) -> &'static str {
        match self {
            OAuth2Preset::GitHub => "https://github.com",
            OAuth2Preset::GitLab => "https://gitlab.com",
            OAuth2Preset::Discord => "https://discord.com",
        }
    }

    /// The user API's address for `base_url`: `https://api.github.com` for GitHub itself,
    /// `{base_url}/api/v3` for GitHub Enterprise, `{base_url}/api/v4` for GitLab,
    /// `{base_url}/api` for Discord.
    pub fn default_api_url(self, base_url: &str) -> String {
        let base = base_url.trim_end_matches('/');
        match self {
            OAuth2Preset::GitHub if base == "https://github.com" => {
                "https://api.github.com".to_owned()
            }
            OAuth2Preset::GitHub => format!("{base}/api/v3"),
            OAuth2Preset::GitLab => format!("{base}/api/v4"),
            OAuth2Preset::Discord => format!("{base}/api"),
        }
    }

    /// The scopes asked for by default: GitHub `read:user user:email`, GitLab `read_user`,
    /// Discord `identify email`.
    pub fn default_scopes(self) -> Vec<String> {
        let scopes: &[&str] = match self {
            OAuth2Preset::GitHub => &["read:user", "user:email"],
            OAuth2Preset::GitLab => &["read_user"],
            OAuth2Preset::Discord => &["identify", "email"],
        };
        scopes.iter().map(|s| (*s).to_owned()).collect()
    }
}

/// An OAuth2 provider users may sign in with (authorization code, PKCE S256 unless turned
/// off, the client secret sent in the token request's body).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuth2Provider {
    /// The name in `/auth/oauth2/{name}` (lowercase letters, digits, `-` and `_`).
    pub name: String,
    /// Where the browser is sent to sign in.
    pub auth_url: String,
    /// Where the code is traded for an access token.
    pub token_url: String,
    /// The user API read with the access token.
    pub userinfo_url: String,
    /// This server's client id at the provider.
    pub client_id: String,
    /// Its client secret.
    pub client_secret: String,
    /// The scopes asked for.
    pub scopes: Vec<String>,
    /// How the user API's reply is read.
    pub profile: OAuth2Profile,
    /// True (the default) to send a PKCE S256 challenge and its verifier.
    pub pkce: bool,
}

impl OAuth2Provider {
    /// A provider of `preset`: its endpoints under `base_url` (the preset's own when `None`)
    /// and its user API under `api_url` (derived from the base when `None`, see
    /// [`OAuth2Preset::default_api_url`]), with the preset's scopes.
    pub fn preset(
        preset: OAuth2Preset,
        name: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        base_url: Option<&str>,
        api_url: Option<&str>,
    ) -> OAuth2Provider {
        let base = base_url
            .unwrap_or(preset.default_base_url())
            .trim_end_matches('/')
            .to_owned();
        let api = api_url
            .map(|a| a.trim_end_matches('/').to_owned())
            .unwrap_or_else(|| preset.default_api_url(&base));
        let (auth_url, token_url, userinfo_url, profile) = match preset {
            OAuth2Preset::GitHub => (
                format!("{base}/login/oauth/authorize"),
                format!("{base}/login/oauth/access_token"),
                format!("{api}/user"),
                OAuth2Profile::GitHub {
                    emails_url: format!("{api}/user/emails"),
                },
            ),
            OAuth2Preset::GitLab => (
                format!("{base}/oauth/authorize"),
                format!("{base}/oauth/token"),
                format!("{api}/user"),
                OAuth2Profile::GitLab,
            ),
            OAuth2Preset::Discord => (
                format!("{base}/oauth2/authorize"),
                format!("{api}/oauth2/token"),
                format!("{api}/users/@me"),
                OAuth2Profile::Discord,
            ),
        };
        OAuth2Provider {
            name: name.into(),
            auth_url,
            token_url,
            userinfo_url,
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            scopes: preset.default_scopes(),
            profile,
            pkce: true,
        }
    }

    /// A provider of no preset: its three endpoints, no scopes, and a user reply read as
    /// `id` and `email` (never verified; see [`OAuth2Provider::profile`]).
    pub fn new(
        name: impl Into<String>,
        [auth_url, token_url, userinfo_url]: [&str; 3],
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> OAuth2Provider {
        OAuth2Provider {
            name: name.into(),
            auth_url: auth_url.to_owned(),
            token_url: token_url.to_owned(),
            userinfo_url: userinfo_url.to_owned(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            scopes: Vec::new(),
            profile: OAuth2Profile::Fields {
                id: "id".into(),
                email: "email".into(),
                email_verified: None,
            },
            pkce: true,
        }
    }

    /// Sets [`scopes`](OAuth2Provider::scopes).
    pub fn scopes(mut self, scopes: Vec<String>) -> Self {
        self.scopes = scopes;
        self
    }

    /// Sets [`profile`](OAuth2Provider::profile).
    pub fn profile(mut self, profile: OAuth2Profile) -> Self {
        self.profile = profile;
        self
    }

    /// Sets [`pkce`](OAuth2Provider::pkce).
    pub fn pkce(mut self, pkce: bool) -> Self {
        self.pkce = pkce;
        self
    }

    /// Its endpoints, each named: `auth_url`, `token_url`, `userinfo_url` and GitHub's
    /// `emails_url`.
    pub fn endpoints(&self) -> Vec<(&'static str, &str)> {
        let mut list = vec![
            ("auth_url", self.auth_url.as_str()),
            ("token_url", self.token_url.as_str()),
            ("userinfo_url", self.userinfo_url.as_str()),
        ];
        if let OAuth2Profile::GitHub { emails_url } = &self.profile {
            list.push(("emails_url", emails_url.as_str()));
        }
        list
    }
}

impl std::fmt::Debug for OAuth2Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth2Provider")
            .field("name", &self.name)
            .field("auth_url", &self.auth_url)
            .field("token_url", &self.token_url)
            .field("userinfo_url", &self.userinfo_url)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<hidden>")
            .field("scopes", &self.scopes)
            .field("profile", &self.profile)
            .field("pkce", &self.pkce)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_fill_the_endpoints() {
        let gh = OAuth2Provider::preset(OAuth2Preset::GitHub, "gh", "id", "s", None, None);
        assert_eq!(gh.auth_url, "https://github.com/login/oauth/authorize");
        assert_eq!(gh.token_url, "https://github.com/login/oauth/access_token");
        assert_eq!(gh.userinfo_url, "https://api.github.com/user");
        assert_eq!(
            gh.profile,
            OAuth2Profile::GitHub {
                emails_url: "https://api.github.com/user/emails".into()
            }
        );
        let ghe = OAuth2Provider::preset(
            OAuth2Preset::GitHub,
            "ghe",
            "id",
            "s",
            Some("https://ghe.example.com/"),
            None,
        );
        assert_eq!(ghe.userinfo_url, "https://ghe.example.com/api/v3/user");
        let gl = OAuth2Provider::preset(OAuth2Preset::GitLab, "gl", "id", "s", None, None);
        assert_eq!(gl.token_url, "https://gitlab.com/oauth/token");
        assert_eq!(gl.userinfo_url, "https://gitlab.com/api/v4/user");
        let dc = OAuth2Provider::preset(OAuth2Preset::Discord, "dc", "id", "s", None, None);
        assert_eq!(dc.auth_url, "https://discord.com/oauth2/authorize");
        assert_eq!(dc.token_url, "https://discord.com/api/oauth2/token");
        assert_eq!(dc.userinfo_url, "https://discord.com/api/users/@me");
        assert_eq!(dc.scopes, ["identify", "email"]);
        for name in OAuth2Preset::NAMES {
            assert_eq!(
                OAuth2Preset::parse(name).map(OAuth2Preset::name),
                Some(name)
            );
        }
        assert!(!format!("{gh:?}").contains("\"s\""), "the secret is hidden");
    }
}
