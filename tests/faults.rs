//! Fault injection on the wire: two TCP endpoints whose connection runs
//! through a proxy that, at a chosen frame, drops the rest of the stream,
//! delays every frame, cuts the connection inside the frame, corrupts the
//! frame's header, or resets the connection inside the frame. Rank 1 sends
//! rank 0 a stream of checksummed messages (eager and rendezvous sizes),
//! then waits for rank 0's answer.
//!
//! Every case ends in a clear error on both ranks within seconds — no
//! hang — and every message rank 0 did receive is the one sent (no wrong
//! data). Only the delay, which is not a fault, ends well.
//!
//! Corruption is injected into the frame header's checked fields (magic,
//! kind): frames carry no checksum of their own, so a flipped bit inside
//! a payload or a length would rely on TCP's checksum (see the TCP
//! transport's module docs).

use hypercomm::transport::tcp::TcpBuilder;
use hypercomm::transport::Builder;
use hypercomm::wire::Header;
use hypercomm::{Comm, Error};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Messages rank 1 sends.
const MESSAGES: u32 = 40;
/// The frame of the 1 → 0 stream where the fault strikes (past the first
/// few messages, so some arrive before it).
const FAULT_FRAME: usize = 12;
/// The client's two messages of the handshake (`transport/tcp/auth.rs`):
/// greeting and nonce, then (after the server's answer) id and proof.
const CLIENT_HANDSHAKE: [usize; 2] = [8 + 32, 4 + 32];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    /// Every frame forwarded late.
    Delay,
    /// From the middle of the fault frame on, nothing more is forwarded;
    /// the connection stays open (a black hole).
    Drop,
    /// The connection is closed in the middle of the fault frame.
    Truncate,
    /// The fault frame's header is corrupted (`byte` gets `value`).
    Corrupt { byte: usize, value: u8 },
    /// The connection is reset (RST) in the middle of the fault frame.
    Reset,
}

/// The size of message `i`: small, medium and above the eager limit.
fn size(i: u32) -> usize {
    match i % 3 {
        0 => 100,
        1 => 5000,
        _ => 40_000,
    }
}

/// The content of message `i`.
fn content(i: u32) -> Vec<u8> {
    (0..size(i))
        .map(|k| (k as u32).wrapping_mul(31).wrapping_add(i * 7) as u8)
        .collect()
}

fn read_exactly(s: &mut TcpStream, n: usize) -> Option<Vec<u8>> {
    let mut b = vec![0; n];
    s.read_exact(&mut b).ok().map(|()| b)
}

/// Relay one connection from endpoint 1 (`client`) to endpoint 0 at
/// `server`, frame by frame in the 1 → 0 direction, with `fault`.
fn relay(client: TcpStream, server: SocketAddr, fault: Fault) {
    let mut up = TcpStream::connect(server).expect("connecting to endpoint 0");
    let mut from1 = client;
    // 0 → 1: copied as it comes.
    let (mut from0, mut to1) = (up.try_clone().unwrap(), from1.try_clone().unwrap());
    let resetting = Arc::new(AtomicBool::new(false));
    let r = resetting.clone();
    let back = std::thread::spawn(move || {
        let _ = std::io::copy(&mut from0, &mut to1);
        if !r.load(Ordering::SeqCst) {
            let _ = to1.shutdown(Shutdown::Write);
        }
    });
    let end = |a: &TcpStream, b: &TcpStream| {
        let _ = a.shutdown(Shutdown::Both);
        let _ = b.shutdown(Shutdown::Both);
    };
    for n in CLIENT_HANDSHAKE {
        let Some(hs) = read_exactly(&mut from1, n) else {
            return end(&from1, &up);
        };
        up.write_all(&hs).unwrap();
    }
    let mut k = 0;
    while let Some(mut frame) = read_exactly(&mut from1, Header::SIZE) {
        let h = Header::decode(&frame).expect("endpoint 1 sends well-formed frames");
        let Some(payload) = read_exactly(&mut from1, h.stream_payload_len() as usize) else {
            break;
        };
        frame.extend_from_slice(&payload);
        let half = frame.len() / 2;
        match fault {
            Fault::Delay => std::thread::sleep(Duration::from_millis(3)),
            _ if k < FAULT_FRAME => {}
            Fault::Drop => {
                up.write_all(&frame[..half]).unwrap();
                // Swallow everything else until endpoint 1 goes away.
                let _ = std::io::copy(&mut from1, &mut std::io::sink());
                break;
            }
            Fault::Truncate => {
                let _ = up.write_all(&frame[..half]);
                break;
            }
            Fault::Reset => {
                let _ = up.write_all(&frame[..half]);
                // Closing with a zero linger time sends a reset; the copy
                // of the other direction holds the sockets too, so it is
                // stopped first (without the end of stream it would send).
                for s in [&up, &from1] {
                    let _ = socket2::SockRef::from(s).set_linger(Some(Duration::ZERO));
                }
                resetting.store(true, Ordering::SeqCst);
                let _ = up.shutdown(Shutdown::Read);
                let _ = back.join();
                drop(up);
                drop(from1);
                return;
            }
            Fault::Corrupt { byte, value } if k == FAULT_FRAME => frame[byte] = value,
            Fault::Corrupt { .. } => {}
        }
        if up.write_all(&frame).is_err() {
            break;
        }
        k += 1;
    }
    end(&from1, &up);
    let _ = back.join();
}

/// What a rank saw: the messages it checked, and how it ended.
type Outcome = (u32, Result<(), Error>, Duration);

/// Rank 1 sends; rank 0 receives, checks each message and answers.
fn program(comm: &Comm) -> Outcome {
    let t = Instant::now();
    let mut checked = 0;
    // A rank whose peer is silent (the black hole) must time out.
    let comm = comm.with_timeout(Some(Duration::from_secs(3)));
    let r = (|| {
        if comm.rank() == 1 {
            for i in 0..MESSAGES {
                comm.send(&content(i), 0, i)?;
            }
            comm.recv::<u32>(0, 999)?;
        } else {
            for i in 0..MESSAGES {
                let (data, _) = comm.recv_vec::<u8>(1, i)?;
                assert!(data == content(i), "message {i} arrived with wrong data");
                checked += 1;
            }
            comm.send(&[checked], 1, 999)?;
        }
        Ok(())
    })();
    (checked, r, t.elapsed())
}

/// A job of two TCP endpoints, the connection from 1 to 0 through the
/// faulty proxy.
fn run(fault: Fault) -> Vec<Outcome> {
    let mut b = TcpBuilder::job(2).unwrap();
    let target = b[0].listen_address().unwrap();
    let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
    b[1].connect_through(0, proxy.local_addr().unwrap())
        .unwrap();
    let relay = std::thread::spawn(move || {
        let (c, _) = proxy.accept().unwrap();
        relay(c, target, fault);
    });
    let builders: Vec<Box<dyn Builder>> = b
        .into_iter()
        .map(|b| Box::new(b) as Box<dyn Builder>)
        .collect();
    let out = hypercomm::run_builders(builders, |c| Ok::<_, Error>(program(c)));
    relay.join().unwrap();
    out.unwrap_or_else(|e| panic!("{fault:?}: the job itself failed: {e}"))
}

/// Each case, with a watchdog: a hang fails the test instead of stalling
/// the suite.
fn case(fault: Fault) -> Vec<Outcome> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run(fault));
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{fault:?}: hung"))
}

/// Both ranks fail, the faults that break the connection quickly (not by
/// the timeout), and the messages before the fault arrived intact.
fn fails_everywhere(fault: Fault, quickly: bool) {
    let out = case(fault);
    for (r, (_, res, took)) in out.iter().enumerate() {
        let e = res
            .as_ref()
            .err()
            .unwrap_or_else(|| panic!("{fault:?}: rank {r} ended well"));
        let text = e.to_string();
        assert!(!text.is_empty());
        if quickly {
            assert!(
                !matches!(e, Error::Timeout { .. }),
                "{fault:?}: rank {r} noticed only by its timeout: {text}"
            );
            assert!(
                *took < Duration::from_secs(3),
                "{fault:?}: rank {r}: {took:?}"
            );
        }
        eprintln!("{fault:?}: rank {r} after {took:?}: {text}");
    }
    let checked = out[0].0;
    assert!(
        (1..MESSAGES).contains(&checked),
        "{fault:?}: rank 0 checked {checked} messages"
    );
}

#[test]
fn a_delayed_connection_delivers_everything() {
    let out = case(Fault::Delay);
    assert!(out.iter().all(|o| o.1.is_ok()), "{out:?}");
    assert_eq!(out[0].0, MESSAGES);
}

#[test]
fn a_black_hole_times_out_on_both_ranks() {
    fails_everywhere(Fault::Drop, false);
}

#[test]
fn a_connection_cut_mid_frame_fails_both_ranks() {
    fails_everywhere(Fault::Truncate, true);
}

#[test]
fn a_connection_reset_mid_frame_fails_both_ranks() {
    fails_everywhere(Fault::Reset, true);
}

#[test]
fn a_corrupted_magic_fails_both_ranks() {
    fails_everywhere(
        Fault::Corrupt {
            byte: 0,
            value: 0x00,
        },
        true,
    );
}

#[test]
fn a_corrupted_kind_fails_both_ranks() {
    fails_everywhere(
        Fault::Corrupt {
            byte: 3,
            value: 0xee,
        },
        true,
    );
}
