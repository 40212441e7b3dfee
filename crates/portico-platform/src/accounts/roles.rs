//! Roles: an array of strings on the user record.

use portico_store::Document;
use serde_json::Value;

/// True when `user` holds any of `roles` (its `roles` field, an array of strings; elements of the
/// form `{"_id": "role"}` also count). An empty `roles` list is never satisfied.
pub fn user_has_any_role(user: &Document, roles: &[String]) -> bool {
    let Some(Value::Array(held)) = user.get("roles") else {
        return false;
    };
    held.iter().any(|r| {
        let name = match r {
            Value::String(s) => Some(s.as_str()),
            Value::Object(o) => o.get("_id").and_then(Value::as_str),
            _ => None,
        };
        name.is_some_and(|n| roles.iter().any(|wanted| wanted == n))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn user(v: Value) -> Document {
        match v {
            Value::Object(m) => m,
            _ => Document::new(),
        }
    }

    #[test]
    fn any_of_the_roles_is_enough() {
        let u = user(json!({"roles": ["editor", "viewer"]}));
        assert!(user_has_any_role(&u, &["admin".into(), "editor".into()]));
        assert!(!user_has_any_role(&u, &["admin".into()]));
        assert!(!user_has_any_role(&u, &[]));
        assert!(!user_has_any_role(&user(json!({})), &["admin".into()]));
        assert!(user_has_any_role(
            &user(json!({"roles": [{"_id": "admin"}]})),
            &["admin".into()]
        ));
    }
}
