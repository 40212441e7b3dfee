//! Background tasks that can be asked to stop: the mail sender, the job worker.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;

/// A spawned task told to stop through a watch channel. [`StoppableTask::stop`] asks it and
/// waits for it (up to a grace period); dropping the handle aborts it at once.
#[derive(Debug)]
pub(crate) struct StoppableTask {
    task: Option<tokio::task::JoinHandle<()>>,
    stopping: watch::Sender<bool>,
}

impl StoppableTask {
    /// Spawns `run` with the receiver that turns `true` when the task is asked to stop.
    pub(crate) fn spawn<F, Fut>(run: F) -> StoppableTask
    where
        F: FnOnce(watch::Receiver<bool>) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (stopping, stop) = watch::channel(false);
        StoppableTask {
            task: Some(tokio::spawn(run(stop))),
            stopping,
        }
    }

    /// Asks the task to stop and waits for it to end, for at most `grace`; past it the task is
    /// aborted where it is.
    pub(crate) async fn stop(mut self, grace: Duration) {
        self.stopping.send_replace(true);
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(grace, &mut task).await.is_err()
        {
            task.abort();
        }
    }
}

impl Drop for StoppableTask {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
