//! Allow-rule strings of `[auto.rules.<collection>]`:
//! `anyone | authenticated | role:NAME | owner:FIELD | nobody`.

use std::fmt;
use std::str::FromStr;

/// Who may make one kind of client write (insert, update or remove) on a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// Every caller, logged in or not.
    Anyone,
    /// Every logged-in caller.
    Authenticated,
    /// Logged-in callers holding this role.
    Role(String),
    /// Logged-in callers whose id is in this field of the document. On update the field itself
    /// may not be changed, so a document cannot be handed to someone else.
    Owner(String),
    /// No client at all (server code and the CLI still write).
    Nobody,
}

impl FromStr for Rule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        match s {
            "anyone" => return Ok(Rule::Anyone),
            "authenticated" => return Ok(Rule::Authenticated),
            "nobody" => return Ok(Rule::Nobody),
            _ => {}
        }
        if let Some((kind, arg)) = s.split_once(':') {
            let arg = arg.trim();
            let valid = !arg.is_empty() && !arg.chars().any(char::is_whitespace);
            match kind.trim() {
                "role" if valid => return Ok(Rule::Role(arg.to_owned())),
                "owner" if valid && !arg.starts_with('$') => {
                    return Ok(Rule::Owner(arg.to_owned()));
                }
                "role" => {
                    return Err(format!(
                        "`{s}`: `role:` needs a role name, as in `role:admin`"
                    ));
                }
                "owner" => {
                    return Err(format!(
                        "`{s}`: `owner:` needs a field name, as in `owner:ownerId`"
                    ));
                }
                _ => {}
            }
        }
        Err(format!(
            "`{s}` is not a rule; expected one of `anyone`, `authenticated`, `role:NAME`, `owner:FIELD`, `nobody`"
        ))
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Anyone => f.write_str("anyone"),
            Rule::Authenticated => f.write_str("authenticated"),
            Rule::Role(role) => write!(f, "role:{role}"),
            Rule::Owner(field) => write!(f, "owner:{field}"),
            Rule::Nobody => f.write_str("nobody"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!("anyone".parse(), Ok(Rule::Anyone));
        assert_eq!("authenticated".parse(), Ok(Rule::Authenticated));
        assert_eq!("nobody".parse(), Ok(Rule::Nobody));
        assert_eq!("role:admin".parse(), Ok(Rule::Role("admin".into())));
        assert_eq!("owner:ownerId".parse(), Ok(Rule::Owner("ownerId".into())));
    }

    #[test]
    fn refuses_the_rest() {
        for bad in [
            "",
            "everyone",
            "role:",
            "owner:",
            "role:a b",
            "owner:$x",
            "admin:role",
        ] {
            assert!(bad.parse::<Rule>().is_err(), "{bad}");
        }
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "anyone",
            "role:editor",
            "owner:by",
            "nobody",
            "authenticated",
        ] {
            assert_eq!(
                text.parse::<Rule>().map(|r| r.to_string()),
                Ok(text.to_owned())
            );
        }
    }
}
