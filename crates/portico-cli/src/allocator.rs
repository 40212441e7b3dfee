//! The `portico` binary's memory allocator, chosen by cargo feature.
//!
//! After a burst of large requests the system allocator (glibc) kept most of the peak resident:
//! freed small blocks stay in per-thread arenas that are only trimmed at their top. jemalloc
//! (the default feature) with background threads was back within 2x of idle 10 s after the
//! burst; mimalloc and a tuned glibc were not. The workspace's `.cargo/config.toml` builds
//! jemalloc with a 250 ms decay (`JEMALLOC_SYS_WITH_MALLOC_CONF`), so freed pages go back within
//! a quarter second: eight clients sending the worst bodies at once peak at about 200 MiB instead
//! of 310. See the crate README ("Memory") for the figures.

#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(all(feature = "mimalloc", not(feature = "jemalloc")))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Readies the allocator for a long-running server: with jemalloc, starts its background
/// threads, which return freed memory to the system on a timer (jemalloc's decay, 10 s) even
/// when the server is idle and nothing else would trigger it.
pub(crate) fn init() {
    #[cfg(feature = "jemalloc")]
    if let Err(e) = tikv_jemalloc_ctl::background_thread::write(true) {
        tracing::warn!("jemalloc background threads not started: {e}");
    }
}
