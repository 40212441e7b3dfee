//! A program using the platform directly: users, a collection with rules, a method and a
//! publication, all called without any HTTP in between.
//!
//! Run with `cargo run -p portico-platform --example basics`.

use portico_platform::{
    Error, MethodError, NewUser, Password, Platform, Query, Rules, Selector, UserSelector, arg,
};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // An embedded SQLite file would be `sqlite:app.db`; memory keeps the example self-contained.
    let platform = Platform::open("memory:").await?;

    // Users.
    let accounts = platform.accounts();
    let ada = accounts
        .create_user(NewUser {
            username: Some("ada".into()),
            email: Some("ada@example.org".into()),
            password: Some(Password::Plain("analytical engine".into())),
            roles: vec!["admin".into()],
            ..NewUser::default()
        })
        .await?;
    let bob = accounts
        .create_user(NewUser {
            username: Some("bob".into()),
            password: Some(Password::Plain("hunter2".into())),
            ..NewUser::default()
        })
        .await?;
    let login = accounts
        .login(
            &UserSelector::Email("ADA@example.org".into()),
            &Password::Plain("analytical engine".into()),
        )
        .await?;
    println!("ada logged in, token issued at {}", login.when);
    let who = accounts.user_by_token(&login.token).await?;
    println!(
        "the token belongs to {:?}",
        who.map(|u| u["username"].clone())
    );

    // A collection: anyone logged in may add their own notes; only the owner may change or remove
    // them; nobody may change the owner.
    let notes = platform.collection("notes");
    let owns = |user: &Option<String>, doc: &portico_platform::Document| {
        user.is_some() && doc.get("owner").and_then(Value::as_str) == user.as_deref()
    };
    notes.allow(
        Rules::new()
            .insert(move |user, doc| async move { owns(&user, &doc) })
            .update(move |user, doc, _, _| async move { owns(&user, &doc) })
            .remove(move |user, doc| async move { owns(&user, &doc) }),
    );
    notes.deny(
        Rules::new().update(|_, _, fields, _| async move { fields.iter().any(|f| f == "owner") }),
    );

    // A method: adds a note for the caller.
    platform.method("addNote", |inv, args| async move {
        let text: String = arg(&args, 0)?;
        let Some(user) = inv.user_id() else {
            return Err(MethodError::new("not-authorized", "Log in first").with_status(401));
        };
        let note = json!({"owner": user, "text": text});
        let Value::Object(note) = note else {
            return Err(MethodError::internal("a note is an object"));
        };
        let id = inv
            .platform()
            .collection("notes")
            .client_insert(Some(user), note)
            .await?;
        inv.set_http_status_code(201);
        Ok(json!(id))
    })?;

    // A publication: the caller's notes.
    platform.publish("myNotes", |sub, _args| async move {
        let Some(user) = sub.user_id() else {
            return Ok(vec![]);
        };
        let mine = Selector::parse(&json!({"owner": user})).map_err(Error::from)?;
        Ok(vec![
            sub.platform().collection("notes").cursor(Query::new(mine)),
        ])
    })?;

    let reply = platform
        .call("addNote", Some(ada.clone()), vec![json!("buy milk")])
        .await?;
    println!("addNote -> {} (status {:?})", reply.value, reply.status);
    platform
        .call("addNote", Some(bob.clone()), vec![json!("walk the dog")])
        .await?;

    let refused = platform
        .call("addNote", None, vec![json!("anonymous")])
        .await;
    println!(
        "anonymous addNote -> {:?}",
        refused.map_err(|e| e.to_body())
    );

    let note_id = reply.value.as_str().unwrap_or_default().to_string();
    let stolen = notes
        .client_update(Some(&bob), &note_id, &json!({"$set": {"text": "mine now"}}))
        .await;
    println!("bob edits ada's note -> {stolen:?}");
    let renamed = notes
        .client_update(Some(&ada), &note_id, &json!({"$set": {"owner": bob}}))
        .await;
    println!("ada gives her note away -> {renamed:?}");

    let published = platform
        .subscribe("myNotes", Some(ada.clone()), vec![])
        .await?;
    println!("myNotes for ada -> {}", Value::Object(published));
    Ok(())
}
