//! Flow control seen from the transport boundary: a transport that records
//! what the engine asks of it, wrapped around the thread transport.
//!
//! Sends beyond a sender's credit at a receiver wait in the engine until
//! the receiver gives credit back (`Kind::Credit`). They must leave as soon
//! as that credit is taken in, not when the engine's drain of arrivals
//! runs dry: a peer that streams messages keeps the drain going, and a
//! window of large sends both ways (`bibw`) then ran one direction at a
//! time.

use hypercomm::transport::thread::{ThreadBuilder, ThreadEndpoint};
use hypercomm::transport::{AnyTransport, Builder, Fault, Frame, Link, PeerState, Transport};
use hypercomm::wire::Kind;
use hypercomm::{MESSAGE_COST, SENDER_CREDIT};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What the engine did with the transport, in order.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ev {
    /// A data frame went out.
    SentData,
    /// A credit frame was handed to the engine.
    GotCredit,
    /// Some other frame was handed to the engine.
    GotOther,
    /// A look for arrivals found nothing (a drain ended).
    Empty,
}

/// The thread transport, with a log of its endpoint's calls.
struct Recording {
    inner: ThreadEndpoint,
    log: Arc<Mutex<Vec<Ev>>>,
}

impl Recording {
    fn note(&self, e: Ev) {
        self.log.lock().expect("log").push(e);
    }
}

impl Transport for Recording {
    fn endpoint(&self) -> usize {
        self.inner.endpoint()
    }
    fn endpoints(&self) -> usize {
        self.inner.endpoints()
    }
    fn send(&self, frame: Frame) -> hypercomm::Result<()> {
        if frame.header.kind == Kind::Data {
            self.note(Ev::SentData);
        }
        self.inner.send(frame)
    }
    fn try_recv(&self) -> Option<Frame> {
        let f = self.inner.try_recv();
        self.note(match &f {
            Some(f) if f.header.kind == Kind::Credit => Ev::GotCredit,
            Some(_) => Ev::GotOther,
            None => Ev::Empty,
        });
        f
    }
    fn wait(&self, deadline: Option<Instant>) {
        self.inner.wait(deadline)
    }
    fn peer_state(&self, endpoint: usize) -> PeerState {
        self.inner.peer_state(endpoint)
    }
    fn fault(&self) -> Option<Fault> {
        self.inner.fault()
    }
    fn abort(&self, message: &str) {
        self.inner.abort(message)
    }
    fn close(&self, outcome: Result<(), String>) {
        self.inner.close(outcome)
    }
    fn link(&self) -> Link {
        Link {
            kind: None,
            ..self.inner.link()
        }
    }
}

struct RecordingBuilder(ThreadBuilder, Arc<Mutex<Vec<Ev>>>);

impl Builder for RecordingBuilder {
    fn build(self: Box<Self>) -> hypercomm::Result<AnyTransport> {
        Ok(AnyTransport::other(Recording {
            inner: self.0.endpoint(),
            log: self.1,
        }))
    }
}

#[test]
fn sends_waiting_for_credit_leave_when_the_credit_comes_in() {
    const MSG: usize = 1 << 20;
    const COUNT: usize = 8;
    // Hand-computed: 4 MiB of credit holds three messages of 1 MiB plus
    // their per-message cost, so five of the eight must wait.
    let first = SENDER_CREDIT / (MSG + MESSAGE_COST);
    assert_eq!(first, 3, "the credit this test was written for");

    let logs: Vec<Arc<Mutex<Vec<Ev>>>> = (0..2).map(|_| Arc::default()).collect();
    let (_, b) = ThreadBuilder::job(2);
    let builders: Vec<Box<dyn Builder>> = b
        .into_iter()
        .zip(&logs)
        .map(|(b, log)| Box::new(RecordingBuilder(b, log.clone())) as Box<dyn Builder>)
        .collect();
    let sums = hypercomm::run_builders(builders, |comm| -> hypercomm::Result<u64> {
        if comm.rank() == 0 {
            let bufs: Vec<Vec<u8>> = (0..COUNT).map(|i| vec![i as u8 + 1; MSG]).collect();
            hypercomm::scope(|s| {
                let reqs = bufs
                    .iter()
                    .map(|b| comm.isend(s, b, 1, 5))
                    .collect::<hypercomm::Result<Vec<_>>>()?;
                hypercomm::wait_all(reqs)?;
                Ok(0)
            })
        } else {
            let mut sum = 0u64;
            for _ in 0..COUNT {
                let (v, _) = comm.recv_vec::<u8>(0, 5)?;
                sum += v.iter().map(|&x| x as u64).sum::<u64>();
            }
            Ok(sum)
        }
    })
    .expect("the job runs");
    // Every message arrived whole.
    let want: u64 = (1..=COUNT as u64).map(|i| i * MSG as u64).sum();
    assert_eq!(sums[1], want);

    let log = logs[0].lock().expect("log").clone();
    let sent = log.iter().filter(|e| **e == Ev::SentData).count();
    assert_eq!(sent, COUNT, "rank 0 sent every message once");
    // The first three went at once; each later one left right after a
    // credit frame was taken in, before the engine looked for more.
    let mut seen = 0;
    for (i, e) in log.iter().enumerate() {
        if *e != Ev::SentData {
            continue;
        }
        seen += 1;
        if seen <= first {
            continue;
        }
        let before = log[..i].iter().rev().find(|e| **e != Ev::SentData).copied();
        assert_eq!(
            before,
            Some(Ev::GotCredit),
            "send {seen} of {COUNT} followed {before:?}, not the credit it waited for; \
             the calls before it: {:?}",
            &log[i.saturating_sub(12)..i]
        );
    }
}
