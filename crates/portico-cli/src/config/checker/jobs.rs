//! Checks `[jobs]` (each limit of the job worker and queue within its range) and `[[cron]]`
//! (names unique, expressions and time zones valid) and `[[webhooks]]` (URLs, events, the
//! secret's variable name).

use std::time::Duration;

use portico_platform::jobs::JobsConfig;

use super::Checker;
use crate::config::raw::{RawCron, RawJobs, RawWebhook};
use crate::config::{CronEntry, WebhookEntry};

impl Checker<'_> {
    pub(super) fn jobs(&mut self, raw: Option<RawJobs>) -> JobsConfig {
        let mut config = JobsConfig::default();
        let Some(raw) = raw else {
            return config;
        };
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let concurrency = self.ranged(
            raw.concurrency,
            "jobs.concurrency",
            (1, 1024),
            config.concurrency as u64,
        );
        config.concurrency = usize::try_from(concurrency).unwrap_or(config.concurrency);
        let lease = self.ranged(
            raw.lease_ms,
            "jobs.lease_ms",
            (1000, 86_400_000),
            ms(config.lease),
        );
        config.lease = Duration::from_millis(lease);
        config.max_jobs = self.ranged(
            raw.max_jobs,
            "jobs.max_jobs",
            (1, 100_000_000),
            config.max_jobs,
        );
        let kb = self.ranged(
            raw.max_args_kb,
            "jobs.max_args_kb",
            (1, 16 * 1024),
            (config.max_args_bytes / 1024) as u64,
        );
        config.max_args_bytes = usize::try_from(kb * 1024).unwrap_or(config.max_args_bytes);
        let poll = self.ranged(raw.poll_ms, "jobs.poll_ms", (10, 60_000), ms(config.poll));
        config.poll = Duration::from_millis(poll);
        let retry = self.ranged(
            raw.webhook_retry_ms,
            "jobs.webhook_retry_ms",
            (10, 3_600_000),
            ms(config.webhook_retry),
        );
        config.webhook_retry = Duration::from_millis(retry);
        let answer = self.ranged(
            raw.webhook_timeout_ms,
            "jobs.webhook_timeout_ms",
            (100, 300_000),
            ms(config.webhook_timeout),
        );
        config.webhook_timeout = Duration::from_millis(answer);
        config
    }

    pub(super) fn cron(&mut self, raw: Vec<RawCron>) -> Vec<CronEntry> {
        let mut entries: Vec<CronEntry> = Vec::new();
        let mut names = std::collections::BTreeSet::new();
        for c in raw {
            let line = self.source.position(c.name.span().start).0;
            if !names.insert(c.name.get_ref().clone()) {
                self.error(
                    &c.name,
                    "cron.name",
                    format!("a cron named `{}` is given twice", c.name.get_ref()),
                );
                continue;
            }
            let timezone = c.timezone.as_ref().map(|t| t.get_ref().as_str());
            match portico_platform::jobs::CronSpec::parse(c.schedule.get_ref(), timezone) {
                Ok(spec) => entries.push(CronEntry {
                    name: c.name.get_ref().clone(),
                    spec,
                    job: c.job.get_ref().clone(),
                    line,
                }),
                Err(e) => {
                    let (at, key) = match (&c.timezone, e.to_string().contains("time zone")) {
                        (Some(tz), true) => (tz.span(), "cron.timezone"),
                        _ => (c.schedule.span(), "cron.schedule"),
                    };
                    let err = self.source.error(at, key, e.to_string());
                    self.errors.push(err);
                }
            }
        }
        entries
    }

    pub(super) fn webhooks(&mut self, raw: Vec<RawWebhook>) -> Vec<WebhookEntry> {
        use portico_platform::HookOp;
        let mut entries = Vec::new();
        for w in raw {
            let line = self.source.position(w.url.span().start).0;
            if let Err(e) = portico_platform::check_webhook_url(w.url.get_ref()) {
                self.error(&w.url, "webhooks.url", e.to_string());
            }
            let events = match &w.events {
                None => vec![HookOp::Insert, HookOp::Update, HookOp::Remove],
                Some(list) => {
                    let mut events = Vec::new();
                    for name in list.get_ref() {
                        match name.as_str() {
                            "insert" => events.push(HookOp::Insert),
                            "update" => events.push(HookOp::Update),
                            "remove" => events.push(HookOp::Remove),
                            other => self.error(
                                list,
                                "webhooks.events",
                                format!("unknown event `{other}`; write insert, update or remove"),
                            ),
                        }
                    }
                    events
                }
            };
            // Accounts are written by the accounts service (sign-up, login tokens, password
            // changes), which makes no write events: a webhook there would miss most of them.
            if let Some(collection) = &w.collection
                && (collection.get_ref() == portico_platform::USERS
                    || collection.get_ref().starts_with("portico_"))
            {
                self.error(
                    collection,
                    "webhooks.collection",
                    format!(
                        "`{}` cannot have webhooks: its writes are made by Portico itself \
                         (accounts: sign-up, login tokens, passwords), which sends no write \
                         events",
                        collection.get_ref()
                    ),
                );
            }
            if w.events.is_some() && w.collection.is_none() {
                self.error(
                    &w.url,
                    "webhooks.events",
                    "events are the writes of a collection: give `collection` too",
                );
            }
            let variable = w.secret_env.get_ref();
            let valid = !variable.is_empty()
                && variable
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                self.error(
                    &w.secret_env,
                    "webhooks.secret_env",
                    "write the name of an environment variable (letters, digits, _); the secret itself never goes in the file",
                );
            }
            entries.push(WebhookEntry {
                url: w.url.get_ref().clone(),
                collection: w.collection.map(|c| c.get_ref().clone()),
                events,
                secret_env: variable.clone(),
                line,
            });
        }
        entries
    }
}
