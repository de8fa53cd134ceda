//! The TCP endpoint against a fake peer speaking raw bytes, and framing
//! round trips.

use super::setup::TcpConfig;
use super::*;
use crate::transport::{Builder, Fault, PeerState, Transport};
use proptest::prelude::*;
use std::io::Write;
use std::net::TcpListener;

const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

/// Endpoint 0 of a 2-endpoint job whose endpoint 1 is `fake`, given a
/// connected and authenticated socket to endpoint 0.
fn with_fake_peer(fake: impl FnOnce(TcpStream) + Send + 'static) -> TcpEndpoint {
    let l0 = TcpListener::bind("127.0.0.1:0").unwrap();
    let l1 = TcpListener::bind("127.0.0.1:0").unwrap();
    let a0 = l0.local_addr().unwrap();
    let addrs = vec![a0, l1.local_addr().unwrap()];
    std::thread::spawn(move || {
        let mut s = TcpStream::connect(a0).unwrap();
        auth::client(&mut s, SECRET, "test-job", 1).unwrap();
        fake(s);
    });
    TcpEndpoint::establish(
        TcpConfig {
            me: 0,
            addrs,
            listener: l0,
            secret: SECRET.to_vec(),
            job: "test-job".into(),
            cores: 3,
        },
        None,
    )
    .unwrap()
}

/// Wait (up to 10 s) until `f` says something.
fn until<R>(t: &TcpEndpoint, mut f: impl FnMut(&TcpEndpoint) -> Option<R>) -> R {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(r) = f(t) {
            return r;
        }
        assert!(Instant::now() < end, "nothing happened within 10 s");
        t.wait(Some(Instant::now() + Duration::from_millis(20)));
    }
}

fn header(kind: Kind, src: u32, dst: u32, len: u64) -> Header {
    Header {
        kind,
        flags: 0,
        src,
        dst,
        context: 0,
        tag: 5,
        id: 0,
        len,
    }
}

fn bytes_of(p: Payload) -> Vec<u8> {
    match p {
        Payload::Inline(x) => x.bytes().to_vec(),
        Payload::Bytes(b) => b,
        _ => unreachable!("a stream gives inline or owned bytes"),
    }
}

#[test]
fn a_valid_frame_then_garbage_gives_the_message_then_protocol() {
    let t = with_fake_peer(|mut s| {
        let f = Frame {
            header: header(Kind::Data, 1, 0, 8),
            payload: Payload::Bytes(42u64.to_le_bytes().to_vec()),
        };
        write_frame(&mut s, f).unwrap();
        s.write_all(&[0xAB; 100]).unwrap();
        std::thread::sleep(Duration::from_millis(500));
    });
    let f = until(&t, |t| t.try_recv());
    assert_eq!(bytes_of(f.payload), 42u64.to_le_bytes());
    let fault = until(&t, |t| t.fault());
    match fault {
        Fault::Protocol(m) => assert!(m.contains("magic"), "{m}"),
        f => panic!("expected a protocol fault, got {f:?}"),
    }
    // It stays.
    assert!(matches!(t.fault(), Some(Fault::Protocol(_))));
    assert!(matches!(t.peer_state(1), PeerState::Failed(_)));
}

#[test]
fn a_frame_with_a_forged_source_is_a_protocol_error() {
    let t = with_fake_peer(|mut s| {
        s.write_all(&header(Kind::Data, 7, 0, 0).encode()).unwrap();
        std::thread::sleep(Duration::from_millis(500));
    });
    match until(&t, |t| t.fault()) {
        Fault::Protocol(m) => assert!(m.contains("from endpoint 7"), "{m}"),
        f => panic!("expected a protocol fault, got {f:?}"),
    }
    assert!(t.try_recv().is_none());
}

#[test]
fn a_lying_length_then_eof_is_a_failed_peer_not_a_huge_allocation() {
    let t = with_fake_peer(|mut s| {
        s.write_all(&header(Kind::Data, 1, 0, u64::MAX / 2).encode())
            .unwrap();
        s.write_all(&[1, 2, 3]).unwrap();
    });
    let st = until(&t, |t| match t.peer_state(1) {
        PeerState::Alive => None,
        s => Some(s),
    });
    assert!(matches!(st, PeerState::Failed(_)), "{st:?}");
    assert!(t.try_recv().is_none());
    assert_eq!(t.fault(), None);
}

#[test]
fn goodbye_then_eof_is_finished_and_eof_alone_is_failed() {
    let t = with_fake_peer(|mut s| {
        s.write_all(&header(Kind::Goodbye, 1, 0, 0).encode())
            .unwrap();
    });
    let start = Instant::now();
    let st = until(&t, |t| match t.peer_state(1) {
        PeerState::Alive => None,
        s => Some(s),
    });
    assert_eq!(st, PeerState::Finished);
    assert!(start.elapsed() < Duration::from_secs(1));

    let t = with_fake_peer(drop);
    let st = until(&t, |t| match t.peer_state(1) {
        PeerState::Alive => None,
        s => Some(s),
    });
    assert!(matches!(st, PeerState::Failed(_)), "{st:?}");
}

#[test]
fn strangers_are_refused_by_an_endpoint_listener() {
    let l0 = TcpListener::bind("127.0.0.1:0").unwrap();
    let a0 = l0.local_addr().unwrap();
    let addrs = vec![a0, "127.0.0.1:9".parse().unwrap()];
    std::thread::spawn(move || {
        // A stranger with the wrong secret, then the real peer.
        let mut bad = TcpStream::connect(a0).unwrap();
        assert!(auth::client(&mut bad, b"wrong", "test-job", 1).is_err());
        let mut s = TcpStream::connect(a0).unwrap();
        auth::client(&mut s, SECRET, "test-job", 1).unwrap();
        let f = Frame {
            header: header(Kind::Data, 1, 0, 1),
            payload: Payload::Bytes(vec![9]),
        };
        write_frame(&mut s, f).unwrap();
        std::thread::sleep(Duration::from_millis(300));
    });
    let t = TcpEndpoint::establish(
        TcpConfig {
            me: 0,
            addrs,
            listener: l0,
            secret: SECRET.to_vec(),
            job: "test-job".into(),
            cores: 3,
        },
        None,
    )
    .unwrap();
    let f = until(&t, |t| t.try_recv());
    assert_eq!(bytes_of(f.payload), vec![9]);
    // Selection's inputs are the job's, not this process's.
    assert_eq!(t.link().cores_per_node, 3);
}

#[test]
fn a_job_of_threads_over_loopback_exchanges_frames() {
    let builders = TcpBuilder::job(3).unwrap();
    std::thread::scope(|s| {
        for b in builders {
            s.spawn(move || {
                let t = match Box::new(b).build().unwrap() {
                    crate::transport::AnyTransport::Tcp(t) => t,
                    _ => unreachable!("a tcp builder builds a tcp endpoint"),
                };
                let me = t.endpoint();
                let next = (me + 1) % 3;
                t.send(Frame {
                    header: header(Kind::Data, me as u32, next as u32, 1),
                    payload: Payload::copy_of(&[me as u8]),
                })
                .unwrap();
                let f = until(&t, |t| t.try_recv());
                assert_eq!(bytes_of(f.payload), vec![((me + 2) % 3) as u8]);
                assert_eq!(t.link().ranks_per_node, 3);
                t.close(Ok(()));
            });
        }
    });
}

proptest! {
    #[test]
    fn reading_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut r = &bytes[..];
        for _ in 0..4 {
            match read_frame(&mut r, 1, 0) {
                ReadOutcome::Frame(_) => continue,
                _ => break,
            }
        }
    }

    #[test]
    fn frames_round_trip_through_a_stream(lens in proptest::collection::vec(0usize..5000, 1..6)) {
        let mut buf = Vec::new();
        for (i, &len) in lens.iter().enumerate() {
            let data: Vec<u8> = (0..len).map(|k| (k + i) as u8).collect();
            write_frame(&mut buf, Frame { header: header(Kind::Data, 1, 0, len as u64), payload: Payload::copy_of(&data) }).unwrap();
        }
        let mut r = &buf[..];
        for (i, &len) in lens.iter().enumerate() {
            match read_frame(&mut r, 1, 0) {
                ReadOutcome::Frame(f) => {
                    prop_assert_eq!(f.header.len, len as u64);
                    let want: Vec<u8> = (0..len).map(|k| (k + i) as u8).collect();
                    prop_assert_eq!(bytes_of(f.payload), want);
                }
                other => prop_assert!(false, "frame {} gave {:?}", i, other),
            }
        }
        prop_assert!(matches!(read_frame(&mut r, 1, 0), ReadOutcome::End));
    }
}
