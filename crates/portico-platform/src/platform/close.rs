//! Closing a platform ([`Platform::close`]): its registries let go of what they hold, and its
//! store releases the database.
//!
//! Handlers a platform holds often hold the platform in turn (a script's methods, hooks, jobs
//! and rules hold its engine, which holds the platform; the auto door's allow rules capture
//! it; a program's own method may capture a clone), so the last handle on a platform is
//! rarely dropped by itself. Closing does not rely on that: it empties the registries, which
//! breaks those cycles, and closes the store explicitly, which releases the database whoever
//! still holds a handle.

use std::sync::atomic::Ordering;

use super::Platform;
use crate::MethodError;
use crate::locks::write;

impl Platform {
    /// Closes the platform, for a server's shutdown: call it once the requests and the
    /// background work on it have stopped (`portico serve` does, after the job worker and the
    /// mail sender stopped).
    ///
    /// The method and publication registries, the declared collections (with their rules,
    /// write hooks and webhook events), the job definitions and schedules and the channels'
    /// script guard are emptied, which lets go of every handler and what it captured; then the
    /// store is closed ([`portico_store::Store::close`]): on SQLite its connections end and
    /// its lock on the file is released, so the same file can be opened again or restored in
    /// this process; on PostgreSQL the pool's connections end.
    ///
    /// A handle kept past this (in a program's own handler, say) stays safe to use: a method or
    /// publication call answers `platform-closed` (503), and every operation on the store
    /// fails with [`portico_store::Error::Closed`] (503 at the front doors). Closing again does
    /// nothing more.
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        let methods = self.inner.methods.take_all();
        let publications = self.inner.publications.take_all();
        let collections = std::mem::take(&mut *write(&self.inner.collections));
        for collection in collections.values() {
            collection.release();
        }
        self.inner.jobs.release();
        self.inner.channels.release();
        // Dropped outside the locks: a handler's drop may reach the platform again.
        drop((methods, publications, collections));
        self.inner.store.close().await;
    }

    /// True once [`Platform::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// The error of a method or publication called on a closed platform.
    pub(crate) fn refuse_when_closed(&self) -> Result<(), MethodError> {
        if self.is_closed() {
            return Err(MethodError::new(
                "platform-closed",
                "The server is shutting down; try again later",
            )
            .with_status(503));
        }
        Ok(())
    }
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use serde_json::json;

    use crate::jobs::JobOptions;
    use crate::{Platform, Rules};

    /// Handlers holding the platform (a method, a collection's rule, a job) keep it alive after
    /// every outside handle is gone, and with it the SQLite file; closing lets go of them and
    /// of the file, and a handle kept past it gets clear errors.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn closing_lets_go_of_handlers_holding_the_platform_and_of_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("app.db");
        let url = format!("sqlite:{}", db.display());
        let platform = Platform::open(&url).await.unwrap();
        let captured = platform.clone();
        platform
            .method("names", move |_, _| {
                let platform = captured.clone();
                async move { Ok(json!(platform.collection_names())) }
            })
            .unwrap();
        let captured = platform.clone();
        platform
            .collection("notes")
            .allow(Rules::new().insert(move |_, _| {
                let _platform = captured.clone();
                async move { true }
            }));
        let captured = platform.clone();
        platform
            .jobs()
            .define("noop", JobOptions::default(), move |_, _| {
                let _platform = captured.clone();
                async move { Ok(()) }
            })
            .unwrap();
        platform
            .collection("notes")
            .insert(json!({"_id": "n1"}).as_object().cloned().unwrap())
            .await
            .unwrap();
        let weak = platform.downgrade();
        drop(platform);
        // The cycle: nothing outside holds the platform, its own handlers do.
        let platform = weak.upgrade().expect("its handlers hold the platform");
        assert!(portico_store::sqlite::is_held(&db).unwrap());

        let kept = platform.clone();
        platform.close().await;
        drop(platform);
        assert!(!portico_store::sqlite::is_held(&db).unwrap());
        let refused = kept.call("names", None, vec![]).await.unwrap_err();
        assert_eq!(
            (refused.error.as_str(), refused.status),
            ("platform-closed", Some(503))
        );
        let closed = kept.store().get("notes", "n1").await.unwrap_err();
        assert!(
            matches!(closed, portico_store::Error::Closed(_)),
            "{closed:?}"
        );
        kept.close().await;
        drop(kept);
        assert!(
            weak.upgrade().is_none(),
            "closed, the platform is let go of"
        );

        let again = Platform::open(&url).await.unwrap();
        assert!(again.store().get("notes", "n1").await.unwrap().is_some());
    }
}
