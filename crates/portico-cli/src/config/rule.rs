//! Allow-rule strings of `[auto.rules.<collection>]`:
//! `anyone | authenticated | role:NAME | owner:FIELD | nobody`.

/// Who may make one kind of client write (insert, update or remove) on a collection: the
/// platform's rule words, shared with field-level read rules.
pub use portico_platform::ReadRule as Rule;

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
