//! Transport conformance suite (see `tests/common/conformance.rs`): the same
//! test names for every transport. Each transport adds one module that
//! instantiates the suite with its launcher.

mod common;

/// Ranks as threads of this process (`hypercomm::run`).
mod thread {
    crate::common::conformance::conformance_suite!(crate::common::Threads);
}

/// Ranks as processes of this test binary, over TCP (see
/// `tests/common/procs.rs` for how a test body runs as a job).
mod tcp {
    crate::common::conformance::conformance_suite!(crate::common::Processes);
}

/// Ranks as processes of this test binary, over shared memory.
mod shm {
    crate::common::conformance::conformance_suite!(
        crate::common::Processes<crate::common::procs::Shm>
    );
}

// The bodies of two, three and four nodes and the host's on worlds of as
// many processes, over TCP and over shared memory (as over MPI).
crate::common::conformance::world_bodies!(
    tcp_world2,
    tcp_world3,
    tcp_world4,
    tcp_world3_host,
    crate::common::procs::Tcp
);
crate::common::conformance::world_bodies!(
    shm_world2,
    shm_world3,
    shm_world4,
    shm_world3_host,
    crate::common::procs::Shm
);

/// A transport from outside the library, to show that the boundary is the
/// whole contract: it wraps the thread transport and turns every payload
/// into owned bytes on the way (as a byte-stream transport would), so the
/// engine's single-copy and hand-off paths are not used. Nothing in the
/// library names it; it runs through `AnyTransport::other` and
/// `run_builders`.
mod loopback {
    use hypercomm::transport::thread::{ThreadBuilder, ThreadEndpoint};
    use hypercomm::transport::{
        AnyTransport, Builder, Fault, Frame, Link, Payload, PeerState, Transport,
    };
    use hypercomm::{BoxError, Comm};
    use serde::de::DeserializeOwned;
    use serde::Serialize;
    use std::time::Instant;

    /// The thread transport, with every payload copied into owned bytes.
    struct Loopback(ThreadEndpoint);

    impl Transport for Loopback {
        fn endpoint(&self) -> usize {
            self.0.endpoint()
        }
        fn endpoints(&self) -> usize {
            self.0.endpoints()
        }
        fn send(&self, frame: Frame) -> hypercomm::Result<()> {
            let Frame { header, payload } = frame;
            let payload = match payload.detach() {
                // The sender withdrew the buffer: nothing to send.
                None => return Ok(()),
                Some(Payload::Vec(v)) => Payload::Bytes(v.bytes().to_vec()),
                Some(p) => p,
            };
            self.0.send(Frame { header, payload })
        }
        fn try_recv(&self) -> Option<Frame> {
            self.0.try_recv()
        }
        fn wait(&self, deadline: Option<Instant>) {
            self.0.wait(deadline)
        }
        fn peer_state(&self, endpoint: usize) -> PeerState {
            self.0.peer_state(endpoint)
        }
        fn fault(&self) -> Option<Fault> {
            self.0.fault()
        }
        fn abort(&self, message: &str) {
            self.0.abort(message)
        }
        fn close(&self, outcome: Result<(), String>) {
            self.0.close(outcome)
        }
        fn link(&self) -> Link {
            Link {
                kind: None,
                ..self.0.link()
            }
        }
        // The diagnostics are the wrapped endpoint's.
        fn set_waiting(&self, what: Option<&str>) {
            self.0.set_waiting(what)
        }
        fn deadlock(&self) -> Option<String> {
            self.0.deadlock()
        }
        fn describe_waits(&self) -> String {
            self.0.describe_waits()
        }
    }

    struct LoopbackBuilder(ThreadBuilder);

    impl Builder for LoopbackBuilder {
        fn build(self: Box<Self>) -> hypercomm::Result<AnyTransport> {
            Ok(AnyTransport::other(Loopback(self.0.endpoint())))
        }
    }

    fn builders(endpoints: usize) -> Vec<Box<dyn Builder>> {
        let (_, b) = ThreadBuilder::job(endpoints);
        b.into_iter()
            .map(|b| Box::new(LoopbackBuilder(b)) as Box<dyn Builder>)
            .collect()
    }

    /// Jobs of loopback endpoints on threads of this process.
    pub(crate) struct LoopbackThreads;

    impl crate::common::Launcher for LoopbackThreads {
        fn run<R, E, F>(n: usize, f: F) -> hypercomm::Result<Vec<R>>
        where
            R: Send + Serialize + DeserializeOwned,
            E: Into<BoxError>,
            F: Fn(&Comm) -> Result<R, E> + Sync,
        {
            hypercomm::run_builders(builders(n), f)
        }

        fn run_with_host<H, R, EH, EN, FH, FN>(
            n: usize,
            host_fn: FH,
            node_fn: FN,
        ) -> hypercomm::Result<(H, Vec<R>)>
        where
            H: Send + Serialize + DeserializeOwned,
            R: Send + Serialize + DeserializeOwned,
            EH: Into<BoxError>,
            EN: Into<BoxError>,
            FH: FnOnce(&Comm) -> Result<H, EH> + Send,
            FN: Fn(&Comm) -> Result<R, EN> + Sync,
        {
            hypercomm::run_builders_with_host(builders(n + 1), host_fn, node_fn)
        }
    }

    crate::common::conformance::conformance_suite!(LoopbackThreads);

    /// The transport really is the one the ranks run on.
    #[test]
    fn the_ranks_run_on_the_loopback_transport() {
        let r = hypercomm::run_builders(builders(2), |comm| {
            // 1 MiB: would be lent (single copy) on the thread transport.
            let big = vec![comm.rank() as u8 + 1; 1 << 20];
            let mut got = vec![0u8; 1 << 20];
            comm.send_recv(&big, 1 - comm.rank(), 0, &mut got, 1 - comm.rank(), 0)?;
            Ok::<_, hypercomm::Error>(got[0])
        })
        .unwrap();
        assert_eq!(r, vec![2, 1]);
    }
}
