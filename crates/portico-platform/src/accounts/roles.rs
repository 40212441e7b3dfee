//! Roles: an array of strings on the user record; adding and removing them.

use portico_store::{Document, Update};
use serde_json::{Value, json};

use super::Accounts;
use crate::{Error, Result};

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

impl Accounts {
    /// Adds roles to the user (roles held already are kept once).
    ///
    /// # Errors
    /// [`Error::UserNotFound`], store failures.
    pub async fn add_roles(&self, user_id: &str, roles: &[String]) -> Result<()> {
        let update = Update::parse(&json!({ "$addToSet": { "roles": { "$each": roles } } }))?;
        if self.update_user(user_id, &update).await? == 0 {
            return Err(Error::UserNotFound);
        }
        Ok(())
    }

    /// Removes roles from the user.
    ///
    /// # Errors
    /// [`Error::UserNotFound`], store failures.
    pub async fn remove_roles(&self, user_id: &str, roles: &[String]) -> Result<()> {
        let update = Update::parse(&json!({ "$pull": { "roles": { "$in": roles } } }))?;
        if self.update_user(user_id, &update).await? == 0 {
            return Err(Error::UserNotFound);
        }
        Ok(())
    }

    pub(super) async fn require_user(&self, user_id: &str) -> Result<Document> {
        self.find_user_by_id(user_id)
            .await?
            .ok_or(Error::UserNotFound)
    }
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
