//! Relative paths written in a config file are taken from the config file's folder, as script
//! and schema paths are: `database = "sqlite:PATH"`, `[files] store` and `[backups] dir`.
//!
//! What the file leaves out keeps its default in the working directory (`sqlite:./portico.db`,
//! `./portico-files`, `./backups`), as `--database` and `PORTICO_DATABASE` are, so that the
//! commands run without a config (`portico users add`) and `serve --config FILE` on a file that
//! names no paths share one database.

use std::path::{Component, Path, PathBuf};

use super::Config;

impl Config {
    /// Rewrites the relative paths `text` (the config file this config was parsed from) writes
    /// so that they are taken from `folder`, the config file's folder: `database` when it is a
    /// `sqlite:` file, `[files] store` when it is a directory, `[backups] dir`. Absolute paths,
    /// other URLs and the defaults of keys not written are left as they are.
    pub fn resolve_paths(&mut self, text: &str, folder: &Path) {
        let Ok(table) = toml::from_str::<toml::Table>(text) else {
            return;
        };
        let written = |section: &str, key: &str| {
            table
                .get(section)
                .and_then(toml::Value::as_table)
                .is_some_and(|t| t.contains_key(key))
        };
        if let Some(url) = &self.database {
            self.database = Some(sqlite_url_from(folder, url));
        }
        if written("files", "store") && self.files.is_local() {
            self.files.store = from_folder(folder, Path::new(&self.files.store))
                .display()
                .to_string();
        }
        if let Some(backups) = &mut self.backups
            && written("backups", "dir")
        {
            backups.dir = from_folder(folder, &backups.dir);
            if let Some(staging) = &backups.staging {
                backups.staging = Some(from_folder(folder, staging));
            }
        }
    }
}

/// `url` with its SQLite file taken from `folder` when it is a relative `sqlite:` path (either
/// spelling, `sqlite:PATH` or `sqlite://PATH`); any other URL as it is.
pub(crate) fn sqlite_url_from(folder: &Path, url: &str) -> String {
    let Some(rest) = url.strip_prefix("sqlite:") else {
        return url.to_owned();
    };
    let path = rest.strip_prefix("//").unwrap_or(rest);
    if path.is_empty() || Path::new(path).is_absolute() {
        return url.to_owned();
    }
    format!("sqlite:{}", from_folder(folder, Path::new(path)).display())
}

/// `path` as seen from the working directory when it is written relative to `folder`: itself
/// when absolute or when `folder` is the working directory (`.` or empty), otherwise
/// `folder/path` without the `./` steps (`examples` and `./app.db` give `examples/app.db`).
pub(crate) fn from_folder(folder: &Path, path: &Path) -> PathBuf {
    let here = folder.as_os_str().is_empty() || folder == Path::new(".");
    if path.is_absolute() || here {
        return path.to_owned();
    }
    let mut joined: PathBuf = folder
        .components()
        .filter(|c| *c != Component::CurDir)
        .collect();
    joined.extend(path.components().filter(|c| *c != Component::CurDir));
    if joined.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_taken_from_the_folder() {
        let folder = Path::new("examples/todos");
        assert_eq!(
            sqlite_url_from(folder, "sqlite:./todos.db"),
            "sqlite:examples/todos/todos.db"
        );
        assert_eq!(
            sqlite_url_from(folder, "sqlite://data/app.db"),
            "sqlite:examples/todos/data/app.db"
        );
        assert_eq!(
            sqlite_url_from(folder, "sqlite:../app.db"),
            "sqlite:examples/todos/../app.db"
        );
        assert_eq!(
            sqlite_url_from(folder, "sqlite:///var/app.db"),
            "sqlite:///var/app.db"
        );
        assert_eq!(
            sqlite_url_from(folder, "sqlite:/var/app.db"),
            "sqlite:/var/app.db"
        );
        assert_eq!(sqlite_url_from(folder, "memory:"), "memory:");
        assert_eq!(
            sqlite_url_from(folder, "postgres://u@h/db"),
            "postgres://u@h/db"
        );
        // A config in the working directory changes nothing, as written.
        assert_eq!(
            sqlite_url_from(Path::new("."), "sqlite:./app.db"),
            "sqlite:./app.db"
        );
        assert_eq!(
            sqlite_url_from(Path::new(""), "sqlite:app.db"),
            "sqlite:app.db"
        );
        assert_eq!(
            from_folder(Path::new("/etc/portico"), Path::new("./files")),
            PathBuf::from("/etc/portico/files")
        );
        assert_eq!(
            from_folder(Path::new("./site"), Path::new(".")),
            PathBuf::from("site")
        );
    }

    #[test]
    fn written_paths_move_and_defaults_stay() {
        let text = "database = \"sqlite:./app.db\"\n[files]\nstore = \"./uploads\"\n[backups]\ndir = \"./saved\"\n";
        let mut config = Config::parse(text).unwrap_or_else(|e| panic!("{e:?}"));
        config.resolve_paths(text, Path::new("site"));
        assert_eq!(config.database.as_deref(), Some("sqlite:site/app.db"));
        assert_eq!(config.files.store, "site/uploads");
        let backups = config.backups.as_ref().map(|b| b.dir.clone());
        assert_eq!(backups, Some(PathBuf::from("site/saved")));

        let text = "[backups]\nkeep = 3\n[files]\nmax_size_mb = 5\n";
        let mut config = Config::parse(text).unwrap_or_else(|e| panic!("{e:?}"));
        config.resolve_paths(text, Path::new("site"));
        assert_eq!(config.database, None);
        assert_eq!(config.files.store, super::super::DEFAULT_FILES_STORE);
        let backups = config.backups.as_ref().map(|b| b.dir.clone());
        assert_eq!(
            backups,
            Some(PathBuf::from(super::super::BackupsConfig::DEFAULT_DIR))
        );

        let text = "[files]\nstore = \"s3://bucket/prefix\"\n[backups]\nurl = \"s3://b/p\"\ndir = \"stage\"\n";
        let mut config = Config::parse(text).unwrap_or_else(|e| panic!("{e:?}"));
        config.resolve_paths(text, Path::new("site"));
        assert_eq!(config.files.store, "s3://bucket/prefix");
        let staging = config.backups.as_ref().and_then(|b| b.staging.clone());
        assert_eq!(staging, Some(PathBuf::from("site/stage")));
    }
}
