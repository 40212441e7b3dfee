//! `[files]` and a collection's `files = { field = { types, max, thumbs } }`.

use std::collections::BTreeMap;

use portico_platform::FileField;
use portico_platform::files::{DEFAULT_MAX_PIXELS, DEFAULT_MAX_SIZE_MB, ThumbSize};
use serde::Deserialize;
use toml::Spanned;

/// `[files]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFiles {
    pub(crate) store: Option<Spanned<String>>,
    pub(crate) max_size_mb: Option<Spanned<u64>>,
    pub(crate) max_pixels: Option<Spanned<u64>>,
    pub(crate) shared_storage: Option<bool>,
}

/// One file field as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFileField {
    pub(crate) types: Option<Vec<String>>,
    pub(crate) max: Option<u64>,
    pub(crate) thumbs: Option<Vec<String>>,
}

/// The default `[files] store`.
pub const DEFAULT_FILES_STORE: &str = "./portico-files";

/// `[files]`: where files attached to documents are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilesSettings {
    /// `store`: a directory (default `./portico-files` in the working directory; a relative
    /// directory written in the config file is taken from the file's folder once
    /// [`super::Config::load`] has read it) or `s3://bucket/prefix`.
    pub store: String,
    /// `max_size_mb` (default 20), in bytes here: the largest file accepted.
    pub max_size: u64,
    /// `max_pixels` (default 50,000,000): the most pixels of a PNG, JPEG or WebP image
    /// accepted, read from its header at upload.
    pub max_pixels: u64,
    /// `shared_storage = true`: the directory is shared by every instance (a network file
    /// system), so a local directory is accepted with a PostgreSQL database.
    pub shared_storage: bool,
}

impl Default for FilesSettings {
    fn default() -> Self {
        FilesSettings {
            store: DEFAULT_FILES_STORE.to_owned(),
            max_size: DEFAULT_MAX_SIZE_MB * 1024 * 1024,
            max_pixels: DEFAULT_MAX_PIXELS,
            shared_storage: false,
        }
    }
}

impl FilesSettings {
    /// True when `store` is a local directory.
    pub fn is_local(&self) -> bool {
        !self.store.starts_with("s3://")
    }

    /// The platform's configuration.
    pub fn platform_config(&self) -> portico_platform::FilesConfig {
        portico_platform::FilesConfig::new(self.store.clone())
            .max_size(self.max_size)
            .max_pixels(self.max_pixels)
    }

    /// Why files on `database` cannot be kept in this store, when they cannot: a local
    /// directory with a PostgreSQL database (many instances, one database) unless it is said
    /// to be shared.
    pub fn refusal(&self, database: &str) -> Option<String> {
        let shared_database =
            database.starts_with("postgres://") || database.starts_with("postgresql://");
        (shared_database && self.is_local() && !self.shared_storage).then(|| {
            format!(
                "[files] store = \"{}\" is a local directory, but the database is PostgreSQL: other instances on it would not find these files. Use store = \"s3://bucket/prefix\", or write shared_storage = true under [files] when every instance mounts that directory",
                self.store
            )
        })
    }
}

type Mistake = (std::ops::Range<usize>, String, String);

/// Checks `[files]`; returns the settings and the mistakes (span, key, message).
pub(crate) fn check_settings(raw: Option<RawFiles>) -> (FilesSettings, Vec<Mistake>) {
    let mut settings = FilesSettings::default();
    let mut mistakes = Vec::new();
    let Some(raw) = raw else {
        return (settings, mistakes);
    };
    if let Some(store) = raw.store {
        let text = store.get_ref().trim();
        let bad_s3 = text
            .strip_prefix("s3://")
            .is_some_and(|rest| rest.split('/').next().unwrap_or_default().is_empty());
        if text.is_empty() || bad_s3 || (text.contains("://") && !text.starts_with("s3://")) {
            mistakes.push((
                store.span(),
                "files.store".to_owned(),
                "write a directory, as in \"./portico-files\", or \"s3://bucket/prefix\""
                    .to_owned(),
            ));
        }
        settings.store = text.to_owned();
    }
    if let Some(size) = raw.max_size_mb {
        if (1..=1_048_576).contains(size.get_ref()) {
            settings.max_size = size.get_ref() * 1024 * 1024;
        } else {
            mistakes.push((
                size.span(),
                "files.max_size_mb".to_owned(),
                format!(
                    "{} is out of range; write 1 to 1048576 (MiB)",
                    size.get_ref()
                ),
            ));
        }
    }
    if let Some(pixels) = raw.max_pixels {
        if (1..=1_000_000_000).contains(pixels.get_ref()) {
            settings.max_pixels = *pixels.get_ref();
        } else {
            mistakes.push((
                pixels.span(),
                "files.max_pixels".to_owned(),
                format!(
                    "{} is out of range; write 1 to 1000000000 (width x height)",
                    pixels.get_ref()
                ),
            ));
        }
    }
    settings.shared_storage = raw.shared_storage.unwrap_or(false);
    (settings, mistakes)
}

/// Checks a collection's `files`; returns the fields and the mistakes.
pub(crate) fn check_fields(
    raw: Spanned<BTreeMap<String, RawFileField>>,
    key: &str,
) -> (BTreeMap<String, FileField>, Vec<Mistake>) {
    let span = raw.span();
    let mut mistakes = Vec::new();
    let mut fields = BTreeMap::new();
    let mut mistake = |message: String| mistakes.push((span.clone(), key.to_owned(), message));
    for (name, field) in raw.into_inner() {
        let valid_name = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && name.len() <= 64;
        if !valid_name {
            mistake(format!(
                "`{name}` cannot be a file field: use letters, digits and _, starting with a letter"
            ));
        }
        let max = field.max.unwrap_or(1);
        if !(1..=1000).contains(&max) {
            mistake(format!(
                "{name}: max = {max} is out of range; write 1 to 1000"
            ));
        }
        let types = field.types.unwrap_or_default();
        for t in &types {
            let ok = t.split_once('/').is_some_and(|(a, b)| {
                !a.is_empty() && !b.is_empty() && !t.contains(char::is_whitespace)
            });
            if !ok {
                mistake(format!(
                    "{name}: `{t}` is not a type; write one as in \"image/png\" or \"image/*\""
                ));
            }
        }
        let mut thumbs = Vec::new();
        for t in field.thumbs.unwrap_or_default() {
            match t.parse::<ThumbSize>() {
                Ok(size) => thumbs.push(size),
                Err(message) => mistake(format!("{name}: {message}")),
            }
        }
        fields.insert(
            name,
            FileField::new(usize::try_from(max).unwrap_or(1))
                .types(types)
                .thumbs(thumbs),
        );
    }
    (fields, mistakes)
}
