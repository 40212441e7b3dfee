//! A server with the admin page and the routes door over a SQLite file, with data and accounts.

use std::net::SocketAddr;

use portico_admin::AdminPage;
use portico_platform::{
    CollectionOptions, Document, FileField, Files, FilesConfig, NewUser, Password, Platform,
    UserSelector,
};
use serde_json::{Value, json};

pub(crate) const ADMIN: (&str, &str) = ("root", "root-password-1");
pub(crate) const PLAIN: (&str, &str) = ("bob", "bob-password-1");
pub(crate) const XSS: &str = "<img src=x onerror=alert(1)>";

pub(crate) struct Server {
    /// `http://127.0.0.1:PORT`
    pub(crate) origin: String,
    pub(crate) platform: Platform,
    /// Where the page's backups go.
    pub(crate) backups: std::path::PathBuf,
    /// Where the files of `albums` are kept.
    pub(crate) files: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn doc(value: Value) -> Document {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

async fn user(platform: &Platform, name: &str, password: &str, roles: &[&str]) -> String {
    platform
        .accounts()
        .create_user(NewUser {
            username: Some(name.into()),
            email: Some(format!("{name}@example.com")),
            password: Some(Password::Plain(password.into())),
            roles: roles.iter().map(|r| (*r).to_owned()).collect(),
            ..NewUser::default()
        })
        .await
        .unwrap()
}

impl Server {
    /// The admin page at `/_/` beside a routes API on `articles` and the auto API's route
    /// description; 25 articles (odd ones tagged red), one holding markup, a `notes` collection
    /// with a JSON Schema; an `albums` document `trip` with file fields (`photo`, `docs`) kept in
    /// `files/`; accounts `root` (admin), `bob` and `dave`; backups of the database
    /// in `backups/` beside it (none yet).
    pub(crate) async fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite:{}", dir.path().join("admin.db").display());
        let platform = Platform::open(&url).await.unwrap();
        let articles = platform.collection("articles");
        for n in 1..=25 {
            articles
                .insert(doc(json!({
                    "_id": format!("a{n:02}"),
                    "title": format!("Article {n:02}"),
                    "tag": if n % 2 == 1 { "red" } else { "blue" },
                    "n": n,
                })))
                .await
                .unwrap();
        }
        for spec in [json!("-n"), json!(["tag", "title"])] {
            articles
                .ensure_index(&portico_store::IndexSpec::parse(&spec).unwrap())
                .await
                .unwrap();
        }
        articles
            .insert(doc(json!({"_id": "xss", "title": XSS, "body": XSS})))
            .await
            .unwrap();
        let notes = platform
            .define_collection("notes", {
                let mut o = CollectionOptions::default();
                o.schema = Some(json!({
                    "type": "object",
                    "required": ["text"],
                    "properties": {"text": {"type": "string"}},
                }));
                o
            })
            .unwrap();
        notes
            .insert(doc(json!({"text": "first note"})))
            .await
            .unwrap();
        // `albums` has file fields: a photo (images only) and up to 3 documents.
        let files = Files::open(FilesConfig::new(
            dir.path().join("files").display().to_string(),
        ))
        .unwrap();
        files
            .declare(
                "albums",
                "photo",
                FileField::new(1).types(vec!["image/*".into()]),
            )
            .unwrap();
        files.declare("albums", "docs", FileField::new(3)).unwrap();
        platform.set_files(files);
        platform
            .collection("albums")
            .insert(doc(json!({"_id": "trip", "title": "Trip"})))
            .await
            .unwrap();
        user(&platform, ADMIN.0, ADMIN.1, &["admin"]).await;
        user(&platform, PLAIN.0, PLAIN.1, &["editor"]).await;
        user(&platform, "dave", "dave-password-1", &[]).await;

        let mut rest = portico_routes::Api::new(
            {
                let mut o = portico_routes::ApiOptions::default();
                o.use_default_auth = true;
                o
            },
            platform.clone(),
        )
        .unwrap();
        rest.add_collection(
            platform.collection("articles"),
            portico_routes::CollectionOptions::new(),
        )
        .unwrap();
        let auto = portico_auto::AutoApi::new(platform.clone()).configure({
            let mut o = portico_auto::AutoConfig::default();
            o.collections = Some(vec!["notes".into()]);
            o
        });
        let mut routes = rest.describe();
        routes.extend(auto.routes().unwrap());
        let backups =
            portico_platform::backups::Backups::in_dir(portico_store::sqlite::BackupSet::new(
                dir.path().join("admin.db"),
                dir.path().join("backups"),
                3,
            ));
        let admin = AdminPage::new(platform.clone())
            .routes(routes)
            .backups(std::sync::Arc::new(backups))
            .router()
            .unwrap();
        let app = rest.router().merge(admin);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .await
            .unwrap();
        });
        Server {
            origin: format!("http://{addr}"),
            platform,
            backups: dir.path().join("backups"),
            files: dir.path().join("files"),
            _dir: dir,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    /// A login token of `name`, straight from the accounts service.
    pub(crate) async fn token(&self, name: &str, password: &str) -> String {
        self.platform
            .accounts()
            .login(
                &UserSelector::Username(name.into()),
                &Password::Plain(password.into()),
            )
            .await
            .unwrap()
            .token
    }

    /// The document `id` of `collection`, as stored.
    pub(crate) async fn document(&self, collection: &str, id: &str) -> Document {
        self.platform
            .collection(collection)
            .get(id)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("no document {id} in {collection}"))
    }

    pub(crate) async fn user_id(&self, name: &str) -> String {
        let user = self
            .platform
            .accounts()
            .find_user_by_username(name)
            .await
            .unwrap()
            .unwrap();
        user["_id"].as_str().unwrap().to_owned()
    }
}
