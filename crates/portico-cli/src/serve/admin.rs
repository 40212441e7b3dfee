//! The admin page (`portico_admin`) on `portico serve`, unless `[admin] enabled = false`.

use axum::Router;
use portico_auto::RouteDoc;
use portico_platform::Platform;

use crate::config::Config;

/// `app` with the admin page merged in at `[admin] path` for holders of `[admin] role`, listing
/// `routes` (the front doors' own, as [`crate::doors::Doors`] holds them), or `app` as it is
/// when `[admin] enabled = false`.
///
/// # Errors
/// [`crate::Error::Setup`] for an unusable path (one a front door serves is refused earlier,
/// by the doors' route registry).
///
/// `backups` are the `[backups]` of a SQLite database, which the page lists, takes and
/// downloads.
pub async fn mount(
    app: Router,
    config: &Config,
    platform: &Platform,
    routes: Vec<RouteDoc>,
    backups: Option<std::sync::Arc<portico_platform::backups::Backups>>,
) -> crate::Result<Router> {
    if !config.admin.enabled {
        return Ok(app);
    }
    warn_without_admins(config, platform).await?;
    let mut page = portico_admin::AdminPage::new(platform.clone())
        .path(config.admin.path.clone())
        .role(config.admin.role.clone())
        .routes(routes);
    if let Some(backups) = backups {
        page = page.backups(backups);
    }
    let admin = page
        .router()
        .map_err(|err| crate::Error::Setup(format!("[admin] path: {err}")))?;
    // The doors' route registry claimed the admin page's path before any door's, so no route
    // of `app` lies under it.
    Ok(app.merge(admin))
}

/// Says how to make the first admin when no account holds the role yet.
async fn warn_without_admins(config: &Config, platform: &Platform) -> crate::Result<()> {
    let holders =
        portico_platform::Selector::parse(&serde_json::json!({ "roles": config.admin.role }))
            .map_err(portico_platform::Error::from)?;
    let count = platform
        .store()
        .count(portico_platform::USERS, &holders)
        .await
        .map_err(portico_platform::Error::from)?;
    if count == 0 {
        tracing::warn!(
            "no account holds the `{role}` role, so nobody can log in to the admin page; make one with `portico users add --username NAME --password PASSWORD --role {role}`",
            role = config.admin.role
        );
    }
    Ok(())
}
