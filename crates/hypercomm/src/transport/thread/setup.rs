//! Making a job of threads: one [`ThreadBuilder`] per endpoint, sent to the
//! thread that will use it.

use super::{ThreadEndpoint, ThreadJob};
use crate::error::Result;
use crate::transport::{
    not_for, AnyTransport, Builder, JoinInfo, Joining, Prepared, Setup, TransportKind,
};
use std::sync::Arc;

/// Builds endpoint `me` of a [`ThreadJob`] on the thread that will use it.
pub struct ThreadBuilder {
    job: Arc<ThreadJob>,
    me: usize,
}

impl ThreadBuilder {
    /// One builder per endpoint of a new job of `endpoints` threads.
    pub fn job(endpoints: usize) -> (Arc<ThreadJob>, Vec<ThreadBuilder>) {
        let job = ThreadJob::new(endpoints);
        let b = (0..endpoints)
            .map(|me| ThreadBuilder {
                job: job.clone(),
                me,
            })
            .collect();
        (job, b)
    }

    /// Make the endpoint (on the calling thread, which it belongs to).
    pub fn endpoint(self) -> ThreadEndpoint {
        self.job.endpoint(self.me)
    }
}

impl Builder for ThreadBuilder {
    fn build(self: Box<Self>) -> Result<AnyTransport> {
        Ok(self.endpoint().into())
    }
}

/// The thread transport's [`Setup`].
pub(crate) struct ThreadSetup;

/// The one instance.
pub(crate) static SETUP: ThreadSetup = ThreadSetup;

impl Setup for ThreadSetup {
    fn threads(&self, endpoints: usize) -> Option<Vec<Box<dyn Builder>>> {
        let (_, b) = ThreadBuilder::job(endpoints);
        Some(
            b.into_iter()
                .map(|b| Box::new(b) as Box<dyn Builder>)
                .collect(),
        )
    }
    fn prepare(&self, _endpoints: usize) -> Result<Prepared> {
        Err(not_for(
            TransportKind::Thread,
            "start processes (its ranks are threads of one process: use hypercomm::run)",
        ))
    }
    fn join(&self, _info: &JoinInfo) -> Result<Box<dyn Joining>> {
        Err(not_for(
            TransportKind::Thread,
            "join a launched job of processes",
        ))
    }
}
