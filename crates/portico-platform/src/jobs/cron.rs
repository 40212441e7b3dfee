//! Schedules: a job enqueued at each due time of a cron expression, once per due time across
//! every instance on the database.
//!
//! Each schedule has a document in [`SCHEDULES`] holding the last due time it was enqueued for.
//! Every worker looks at the schedules on each pass: when the latest due time (now or before) is
//! after the stored one, it moves the stored time to it and inserts the job in one store
//! transaction, on the condition that the stored time is still the one it read; of several
//! instances exactly one does, so a due time gives one job. A due time missed while every
//! instance was down is caught up by one job at start (the latest one), not one per missed
//! time. A schedule seen for the first time starts from now: it runs at its next due time.

use std::time::Duration;

use chrono::TimeZone;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use portico_store::{BatchOp, Document, Selector, Update};
use serde_json::{Value, json};

use super::{EnqueueOptions, JOBS, Jobs};
use crate::time::now_ms;
use crate::{Error, Result};

/// The collection of schedules: the last due time each was enqueued for, and its last run.
pub const SCHEDULES: &str = "portico_schedules";

/// A cron expression and the time zone it is read in.
#[derive(Debug, Clone)]
pub struct CronSpec {
    cron: Cron,
    timezone: chrono_tz::Tz,
    text: String,
}

impl PartialEq for CronSpec {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text && self.timezone == other.timezone
    }
}

impl CronSpec {
    /// Reads `expression`: five fields (minute, hour, day of month, month, day of week), or
    /// six with a leading seconds field, or `@yearly`, `@monthly`, `@weekly`, `@daily`,
    /// `@hourly`; in `timezone` (an IANA name such as `Europe/Oslo`; UTC when `None`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] saying what is wrong with the expression or the time zone.
    pub fn parse(expression: &str, timezone: Option<&str>) -> Result<CronSpec> {
        let parser = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build();
        let cron = parser.parse(expression).map_err(|e| {
            Error::InvalidArgument(format!(
                "invalid cron expression {expression:?}: {e} (write 5 fields, minute hour \
                 day-of-month month day-of-week, or 6 with seconds first, or @hourly, @daily, \
                 @weekly, @monthly, @yearly)"
            ))
        })?;
        let timezone = match timezone {
            None => chrono_tz::UTC,
            Some(name) => name.parse::<chrono_tz::Tz>().map_err(|_| {
                Error::InvalidArgument(format!(
                    "unknown time zone {name:?} (write an IANA name such as \"Europe/Oslo\" or \"UTC\")"
                ))
            })?,
        };
        let spec = CronSpec {
            cron,
            timezone,
            text: expression.to_owned(),
        };
        if spec.next_due(now_ms()).is_none() {
            return Err(Error::InvalidArgument(format!(
                "the cron expression {expression:?} never falls due"
            )));
        }
        Ok(spec)
    }

    /// The expression as written.
    pub fn expression(&self) -> &str {
        &self.text
    }

    /// The time zone's name.
    pub fn timezone(&self) -> &str {
        self.timezone.name()
    }

    /// The latest due time at or before `now_ms` (milliseconds since the epoch).
    pub fn latest_due(&self, now_ms: i64) -> Option<i64> {
        let now = self.timezone.timestamp_millis_opt(now_ms).single()?;
        self.cron
            .find_previous_occurrence(&now, true)
            .ok()
            .map(|t| t.timestamp_millis())
    }

    /// The first due time after `after_ms`.
    pub fn next_due(&self, after_ms: i64) -> Option<i64> {
        let after = self.timezone.timestamp_millis_opt(after_ms).single()?;
        self.cron
            .find_next_occurrence(&after, false)
            .ok()
            .map(|t| t.timestamp_millis())
    }
}

/// A schedule: the job `job` enqueued at each due time of `spec`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Schedule {
    pub(super) spec: CronSpec,
    pub(super) job: String,
}

/// The job name of a schedule defined with a handler ([`Jobs::cron`]).
pub(super) fn job_name(schedule: &str) -> String {
    format!("cron:{schedule}")
}

impl Jobs {
    /// Schedules the job `job` (defined with [`Jobs::define`]) at each due time of `spec`,
    /// under the name `name`; its arguments are `{schedule, due}` (the due time in
    /// milliseconds since the epoch).
    ///
    /// # Errors
    /// [`Error::Duplicate`] when a schedule of this name exists; [`Error::InvalidArgument`]
    /// when `job` is not defined.
    pub fn schedule(&self, name: &str, spec: CronSpec, job: &str) -> Result<()> {
        super::check_name("schedule name", name)?;
        if self.definition(job).is_none() {
            return Err(Error::InvalidArgument(format!(
                "schedule {name:?} names the job {job:?}, which is not defined"
            )));
        }
        let mut schedules = self
            .inner
            .schedules
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if schedules.contains_key(name) {
            return Err(Error::Duplicate(format!(
                "schedule {name:?} is defined already"
            )));
        }
        schedules.insert(
            name.to_owned(),
            Schedule {
                spec,
                job: job.to_owned(),
            },
        );
        Ok(())
    }

    /// Runs `handler` at each due time of `spec`, once per due time across instances: defines
    /// the job `cron:<name>` (run as jobs are, with `options`) and schedules it.
    ///
    /// # Errors
    /// As [`Jobs::define`] and [`Jobs::schedule`].
    pub fn cron<F, Fut>(
        &self,
        name: &str,
        spec: CronSpec,
        options: super::JobOptions,
        handler: F,
    ) -> Result<()>
    where
        F: Fn(super::JobRun, Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = std::result::Result<(), String>> + Send + 'static,
    {
        let job = job_name(name);
        self.define(&job, options, handler)?;
        self.schedule(name, spec, &job)
    }

    /// The schedules, by name: their expression, time zone, job and next due time.
    pub fn schedules(&self) -> Vec<ScheduleInfo> {
        let now = now_ms();
        self.inner
            .schedules
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(name, s)| ScheduleInfo {
                name: name.clone(),
                expression: s.spec.expression().to_owned(),
                timezone: s.spec.timezone().to_owned(),
                job: s.job.clone(),
                next_due_ms: s.spec.next_due(now),
            })
            .collect()
    }

    /// Enqueues the job of every schedule whose latest due time was not enqueued yet (by any
    /// instance); how long until the next due time of any schedule.
    pub(super) async fn enqueue_due(&self) -> Result<Option<Duration>> {
        let schedules: Vec<(String, Schedule)> = self
            .inner
            .schedules
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(n, s)| (n.clone(), s.clone()))
            .collect();
        let now = now_ms();
        let mut next: Option<i64> = None;
        for (name, schedule) in schedules {
            if let Some(due) = schedule.spec.latest_due(now) {
                self.enqueue_if_due(&name, &schedule, due).await?;
            }
            if let Some(n) = schedule.spec.next_due(now) {
                next = Some(next.map_or(n, |m| m.min(n)));
            }
        }
        Ok(next.map(|n| Duration::from_millis(u64::try_from(n - now).unwrap_or(0))))
    }

    async fn enqueue_if_due(&self, name: &str, schedule: &Schedule, due: i64) -> Result<()> {
        let store = &self.inner.store;
        let Some(doc) = store.get(SCHEDULES, name).await? else {
            // First seen: start from now; the schedule runs at its next due time.
            let mut doc = Document::new();
            doc.insert("_id".into(), json!(name));
            doc.insert("last".into(), json!(due));
            match store.insert(SCHEDULES, doc).await {
                Ok(_) | Err(portico_store::Error::DuplicateId { .. }) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        };
        let last = doc.get("last").cloned().unwrap_or(Value::Null);
        if last.as_i64().is_some_and(|l| l >= due) {
            return Ok(());
        }
        let options = EnqueueOptions::new().key(format!("{name}@{due}"));
        let mut job = self.job_document(
            &schedule.job,
            json!({"schedule": name, "due": due}),
            &options,
            true,
        )?;
        job.insert("schedule".into(), json!(name));
        let claim = Selector::parse(&json!({"_id": name, "last": last}))?;
        let set = Update::parse(
            &json!({"$set": {"last": due, "expression": schedule.spec.expression(), "timezone": schedule.spec.timezone(), "job": schedule.job}}),
        )?;
        let ops = vec![
            BatchOp::Update {
                collection: SCHEDULES.into(),
                selector: claim,
                update: set,
            },
            BatchOp::Insert {
                collection: JOBS.into(),
                doc: job,
            },
        ];
        match store.batch(ops).await {
            Ok(_) => {
                tracing::info!(schedule = %name, due, job = %schedule.job, "schedule due: job enqueued");
                Ok(())
            }
            // Another instance enqueued this due time.
            Err(e) if matches!(e.failure, portico_store::BatchFailure::NoMatch) => Ok(()),
            Err(e) => Err(Error::Internal(format!("schedule {name:?}: {e}"))),
        }
    }

    /// Records the outcome of a scheduled job's run on its schedule.
    pub(super) async fn record_schedule_run(
        &self,
        job: &Document,
        run_id: &str,
        outcome: &std::result::Result<(), String>,
    ) {
        let Some(name) = job.get("schedule").and_then(Value::as_str) else {
            return;
        };
        let result = match outcome {
            Ok(()) => json!("ok"),
            Err(e) => json!(format!("failed: {e}")),
        };
        let set = Update::parse(
            &json!({"$set": {"lastRunAt": now_ms(), "lastResult": result, "lastRunId": run_id}}),
        );
        if let Ok(set) = set
            && let Err(e) = self
                .inner
                .store
                .update(SCHEDULES, &Selector::by_id(name), &set, Default::default())
                .await
        {
            tracing::warn!(schedule = %name, error = %e, "cannot record a schedule's last run");
        }
    }
}

/// A schedule as operators see it ([`Jobs::schedules`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduleInfo {
    /// Its name.
    pub name: String,
    /// The cron expression.
    pub expression: String,
    /// The time zone it is read in.
    pub timezone: String,
    /// The job it enqueues.
    pub job: String,
    /// Its next due time, in milliseconds since the epoch.
    pub next_due_ms: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(text)
            .map(|t| t.timestamp_millis())
            .unwrap_or_default()
    }

    #[test]
    fn five_and_six_fields_nicknames_and_time_zones() {
        let weekdays = CronSpec::parse("0 9 * * 1-5", Some("Europe/Oslo")).unwrap();
        // Friday 2026-11-27 12:00 UTC: the latest is 09:00 Oslo (08:00 UTC) that day, the
        // next Monday's.
        let now = at("2026-11-27T12:00:00Z");
        assert_eq!(weekdays.latest_due(now), Some(at("2026-11-27T08:00:00Z")));
        assert_eq!(weekdays.next_due(now), Some(at("2026-11-30T08:00:00Z")));
        let every_two = CronSpec::parse("*/2 * * * * *", None).unwrap();
        assert_eq!(
            every_two.next_due(at("2026-11-27T12:00:01Z")),
            Some(at("2026-11-27T12:00:02Z"))
        );
        let hourly = CronSpec::parse("@hourly", None).unwrap();
        assert_eq!(
            hourly.latest_due(at("2026-11-27T12:59:59Z")),
            Some(at("2026-11-27T12:00:00Z"))
        );
        assert!(CronSpec::parse("@daily", None).is_ok());
    }

    #[test]
    fn mistakes_are_named() {
        for (expr, tz, says) in [
            ("61 * * * *", None, "invalid cron expression \"61 * * * *\""),
            ("* * *", None, "invalid cron expression"),
            (
                "0 9 * * 1-5",
                Some("Mars/Olympus"),
                "unknown time zone \"Mars/Olympus\"",
            ),
            ("0 0 30 2 *", None, "never falls due"),
        ] {
            let e = CronSpec::parse(expr, tz)
                .map(|_| ())
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{expr}: {e}");
        }
    }
}
