//! Log lines gathered in memory and written in batches by a thread of their own.
//!
//! A logging thread formats its line and appends it to a shared buffer (one lock, no
//! allocation per line once the buffer has grown); the writer thread takes the whole buffer
//! every [`BATCH_EVERY`], or at once when it passes [`WAKE_AT`], and writes it with one
//! `write`. A line handed to a channel and a thread woken per line (what a general-purpose
//! non-blocking writer does) cost the server 15-20% of its get-by-id throughput with the
//! request log on, with the writer thread running in turn with the async worker on one core.
//!
//! No line is dropped: past [`HOLD_AT`] bytes waiting, logging threads wait until the writer
//! has taken them, so memory stays bounded when the output is slow (a full pipe). Lines reach
//! the output within [`BATCH_EVERY`]; dropping the [`LogGuard`] writes out the rest and ends
//! the thread.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// Longest time a line waits in memory.
const BATCH_EVERY: Duration = Duration::from_millis(20);
/// Bytes waiting that wake the writer before its time.
const WAKE_AT: usize = 256 * 1024;
/// Bytes waiting past which logging threads wait for the writer.
const HOLD_AT: usize = 4 * 1024 * 1024;

struct State {
    lines: Vec<u8>,
    stop: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the writer thread: lines past [`WAKE_AT`], or stop.
    wake: Condvar,
    /// Wakes logging threads held at [`HOLD_AT`]: the writer took the lines.
    taken: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The `MakeWriter` for the log: each line goes into the shared buffer.
#[derive(Clone)]
pub(crate) struct BatchWriter {
    shared: Arc<Shared>,
}

/// Keeps the writer thread running; dropping it writes out every line still waiting, then
/// ends the thread.
#[must_use = "dropping the guard at once stops the log writer"]
pub struct LogGuard {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for LogGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogGuard").finish_non_exhaustive()
    }
}

/// Starts the writer thread on `out`. `None` when the thread cannot be started.
pub(crate) fn start(
    mut out: impl Write + Send + 'static,
    name: &str,
) -> Option<(BatchWriter, LogGuard)> {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            lines: Vec::new(),
            stop: false,
        }),
        wake: Condvar::new(),
        taken: Condvar::new(),
    });
    let writer_side = Arc::clone(&shared);
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || write_batches(&writer_side, &mut out))
        .ok()?;
    Some((
        BatchWriter {
            shared: Arc::clone(&shared),
        },
        LogGuard {
            shared,
            thread: Some(thread),
        },
    ))
}

/// The writer thread: takes the waiting lines each [`BATCH_EVERY`] (or when woken) and writes
/// them, until stopped with nothing left.
fn write_batches(shared: &Shared, out: &mut impl Write) {
    let mut batch = Vec::new();
    loop {
        let stop = {
            let mut state = shared.lock();
            if !state.stop && state.lines.len() < WAKE_AT {
                state = shared
                    .wake
                    .wait_timeout(state, BATCH_EVERY)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            std::mem::swap(&mut state.lines, &mut batch);
            state.stop
        };
        shared.taken.notify_all();
        if !batch.is_empty() {
            // A failing output (closed standard error) loses the lines, not the server.
            let _ = out.write_all(&batch).and_then(|()| out.flush());
            batch.clear();
        }
        if stop && shared.lock().lines.is_empty() {
            return;
        }
    }
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One line (or part of one) on its way into the shared buffer.
pub(crate) struct LineWriter<'a> {
    shared: &'a Shared,
}

impl Write for LineWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut state = self.shared.lock();
        while state.lines.len() >= HOLD_AT && !state.stop {
            self.shared.wake.notify_one();
            state = self
                .shared
                .taken
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.lines.extend_from_slice(bytes);
        if state.lines.len() >= WAKE_AT {
            self.shared.wake.notify_one();
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for BatchWriter {
    type Writer = LineWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        LineWriter {
            shared: &self.shared,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output the test can read while the writer thread writes to it.
    #[derive(Clone, Default)]
    struct Output(Arc<Mutex<Vec<u8>>>);

    impl Write for Output {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_arrive_soon_in_order_and_all_are_written_when_the_guard_drops() {
        let out = Output::default();
        let (writer, guard) = start(out.clone(), "test-log").unwrap();
        writer.make_writer().write_all(b"first\n").unwrap();
        let mut seen = false;
        for _ in 0..200 {
            if out.0.lock().unwrap().as_slice() == b"first\n" {
                seen = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(seen, "a line is written within a batch's time");
        // Many lines from several threads, past the wake and hold marks: none lost, each
        // whole, each thread's in its order.
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let writer = writer.clone();
                std::thread::spawn(move || {
                    for i in 0..50_000 {
                        let line = format!("t{t} line {i:06} {}\n", "x".repeat(40));
                        writer.make_writer().write_all(line.as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        writer.make_writer().write_all(b"last\n").unwrap();
        drop(guard);
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2 + 4 * 50_000);
        assert_eq!(lines.first(), Some(&"first"));
        assert_eq!(lines.last(), Some(&"last"));
        for t in 0..4 {
            let prefix = format!("t{t} ");
            let mine: Vec<&str> = lines
                .iter()
                .copied()
                .filter(|l| l.starts_with(&prefix))
                .collect();
            assert_eq!(mine.len(), 50_000);
            for (i, line) in mine.iter().enumerate() {
                assert!(line.starts_with(&format!("t{t} line {i:06} ")), "{line}");
            }
        }
    }

    #[test]
    fn a_slow_output_holds_loggers_instead_of_growing_without_bound() {
        /// Takes its time over every write, as a full pipe would.
        struct Slow(Output);
        impl Write for Slow {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                std::thread::sleep(Duration::from_millis(50));
                self.0.write(bytes)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let out = Output::default();
        let (writer, guard) = start(Slow(out.clone()), "test-slow-log").unwrap();
        let line = vec![b'y'; 1023];
        let mut most = 0;
        for _ in 0..20_000 {
            let mut w = writer.make_writer();
            w.write_all(&line).unwrap();
            w.write_all(b"\n").unwrap();
            most = most.max(writer.shared.lock().lines.len());
        }
        assert!(most <= HOLD_AT + 1024, "{most} bytes waited");
        drop(guard);
        assert_eq!(out.0.lock().unwrap().len(), 20_000 * 1024);
    }
}
