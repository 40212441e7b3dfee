//! `[backups]` (scheduled backups of a SQLite database) and `[log]` (the log's format).

use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

/// `[backups]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBackups {
    every_hours: Option<Spanned<toml::Value>>,
    keep: Option<Spanned<i64>>,
    dir: Option<Spanned<String>>,
    url: Option<Spanned<String>>,
}

/// `[log]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLog {
    format: Option<Spanned<String>>,
    slow_scan_docs: Option<u64>,
}

/// `[backups]`: where backups of the SQLite database go, how often `serve` takes one, how many
/// are kept. The admin page lists, starts and downloads them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BackupsConfig {
    /// `every_hours`: `serve` takes a backup this often (`None`: only on demand, from the admin
    /// page or `portico backup`).
    pub every: Option<Duration>,
    /// `keep` (default 7): the newest this many backups are kept, older ones removed.
    pub keep: usize,
    /// `dir` (default `./backups` in the working directory; a relative `dir` written in the
    /// config file is taken from the file's folder once [`super::Config::load`] has read it).
    /// With `url`: where each backup is taken and checked before its upload (`None` in
    /// [`BackupsConfig::staging`]: beside the database).
    pub dir: PathBuf,
    /// With `url`, `dir` as written (`None`: not written, the copy is staged beside the
    /// database).
    pub staging: Option<PathBuf>,
    /// `url = "s3://bucket/prefix"`: the backups go to an S3-compatible bucket instead of
    /// `dir` (endpoint, region and keys from the `AWS_*` environment variables, as for
    /// `[files] store`).
    pub url: Option<String>,
    /// The line of `[backups]`, for messages.
    pub line: usize,
}

impl BackupsConfig {
    /// The default `keep`.
    pub const DEFAULT_KEEP: usize = 7;
    /// The default `dir`.
    pub const DEFAULT_DIR: &'static str = "./backups";
    /// The longest `every_hours` (a year).
    pub const MAX_HOURS: f64 = 8_760.0;
}

impl Default for BackupsConfig {
    fn default() -> Self {
        BackupsConfig {
            every: None,
            keep: Self::DEFAULT_KEEP,
            dir: PathBuf::from(Self::DEFAULT_DIR),
            url: None,
            staging: None,
            line: 1,
        }
    }
}

/// `[log] format`: how `serve` writes its log lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// `"text"` (the default): one human-readable line per event.
    #[default]
    Text,
    /// `"json"`: one JSON object per line (`timestamp`, `level`, `target`, `message`, and the
    /// event's fields, `request_id` among them on request lines).
    Json,
}

/// `[log]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogConfig {
    /// `format` (default `"text"`).
    pub format: LogFormat,
    /// `slow_scan_docs` (default [`portico_store::DEFAULT_SLOW_SCAN_DOCS`], 1,000; 0 turns it
    /// off): a query that reads and decides more documents than this one by one (no index
    /// serves it) is logged once per shape with the `indexes = [...]` line that would serve
    /// it, and counted in `/metrics` (`portico_slow_queries_total`).
    pub slow_scan_docs: Option<u64>,
}

/// A mistake: where, which key, why.
pub(crate) type Mistake = (Range<usize>, &'static str, String);

impl BackupsConfig {
    /// Checks `[backups]`; the mistakes come back with their places.
    pub(crate) fn check(raw: RawBackups, line: usize) -> (BackupsConfig, Vec<Mistake>) {
        let mut mistakes = Vec::new();
        let mut config = BackupsConfig {
            line,
            ..BackupsConfig::default()
        };
        if let Some(every) = raw.every_hours {
            let hours = match every.get_ref() {
                toml::Value::Integer(n) => Some(*n as f64),
                toml::Value::Float(x) => Some(*x),
                _ => None,
            };
            match hours {
                Some(h) if h > 0.0 && h <= Self::MAX_HOURS => {
                    config.every = Some(Duration::from_secs_f64(h * 3600.0));
                }
                _ => mistakes.push((
                    every.span(),
                    "backups.every_hours",
                    format!(
                        "write a number of hours above 0 and at most {} (6, or 0.5 for half an hour)",
                        Self::MAX_HOURS
                    ),
                )),
            }
        }
        if let Some(keep) = raw.keep {
            match usize::try_from(*keep.get_ref()) {
                Ok(n) if (1..=10_000).contains(&n) => config.keep = n,
                _ => mistakes.push((
                    keep.span(),
                    "backups.keep",
                    format!("{} is out of range; write 1 to 10000", keep.get_ref()),
                )),
            }
        }
        let dir_written = raw.dir.is_some();
        if let Some(dir) = raw.dir {
            if dir.get_ref().trim().is_empty() {
                mistakes.push((
                    dir.span(),
                    "backups.dir",
                    "the directory may not be empty; write a path such as \"./backups\"".into(),
                ));
            } else {
                config.dir = PathBuf::from(dir.get_ref());
            }
        }
        if let Some(url) = raw.url {
            let text = url.get_ref().trim();
            let bucket = text
                .strip_prefix("s3://")
                .map(|rest| rest.split('/').next().unwrap_or_default());
            if bucket.is_none_or(str::is_empty) {
                mistakes.push((
                    url.span(),
                    "backups.url",
                    format!(
                        "`{text}` is not a bucket; write \"s3://bucket/prefix\" (or leave url out and write dir)"
                    ),
                ));
            } else {
                config.url = Some(text.trim_end_matches('/').to_owned());
                config.staging = dir_written.then(|| config.dir.clone());
            }
        }
        (config, mistakes)
    }
}

impl LogConfig {
    /// Checks `[log]`; the mistakes come back with their places.
    pub(crate) fn check(raw: RawLog) -> (LogConfig, Vec<Mistake>) {
        let mut mistakes = Vec::new();
        let format = match raw.format {
            None => LogFormat::Text,
            Some(format) => match format.get_ref().as_str() {
                "text" => LogFormat::Text,
                "json" => LogFormat::Json,
                other => {
                    mistakes.push((
                        format.span(),
                        "log.format",
                        format!("`{other}` is not a log format; write \"text\" or \"json\""),
                    ));
                    LogFormat::Text
                }
            },
        };
        (
            LogConfig {
                format,
                slow_scan_docs: raw.slow_scan_docs,
            },
            mistakes,
        )
    }
}
