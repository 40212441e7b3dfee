//! Accounts made on a workspace's database in this process, through the library call
//! `portico users add` makes (`portico_cli::users::add`), so tests outside portico-cli need no
//! `portico` binary.

use portico_cli::users::NewAccount;

use crate::workspace::Workspace;

impl Workspace {
    /// Creates the account `username` (no email) with `password` and `roles` on this workspace's
    /// database, in this process; returns its id. The database is created if it does not exist.
    pub fn create_user(&self, username: &str, password: &str, roles: &[&str]) -> String {
        self.create_account(username, None, password, roles)
    }

    /// Creates an account with an email address too, as [`Workspace::create_user`] does;
    /// returns its id.
    pub fn create_account(
        &self,
        username: &str,
        email: Option<&str>,
        password: &str,
        roles: &[&str],
    ) -> String {
        let account = NewAccount {
            username: Some(username.to_owned()),
            email: email.map(str::to_owned),
            password: password.to_owned(),
            roles: roles.iter().map(|r| (*r).to_owned()).collect(),
        };
        let url = self.database();
        // As `portico users add` refuses it: the account would vanish with this call's store.
        assert!(
            !url.starts_with("memory:"),
            "cannot create the account {username} on {url}: a memory store lasts only as long as its server"
        );
        match on_a_runtime_of_its_own(add(url, account)) {
            Ok(id) => id,
            Err(e) => panic!("cannot create the account {username}: {e}"),
        }
    }
}

/// Opens the platform on `url`, adds `account`, and closes the platform (the database is
/// released before the test serves it).
async fn add(url: String, account: NewAccount) -> Result<String, String> {
    let platform = portico_cli::database::open(&url)
        .await
        .map_err(|e| e.to_string())?;
    let added = portico_cli::users::add(&platform, account)
        .await
        .map_err(|e| e.to_string());
    platform.close().await;
    added
}

/// Runs `work` to its end on a one-thread runtime of a thread of its own, so that sync tests
/// and async tests (inside their own runtime) alike can call it.
fn on_a_runtime_of_its_own<T: Send>(work: impl Future<Output = T> + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a tokio runtime")
                    .block_on(work)
            })
            .join()
            .expect("the account thread panicked")
    })
}
