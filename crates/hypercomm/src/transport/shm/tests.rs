//! The shm transport within one process: rings, lending, abort.

use super::*;
use crate::transport::{Borrowed, Completion, Frame, Payload};
use crate::wire::{Header, Kind};

fn frame(src: usize, dst: usize, tag: u32, data: &[u8]) -> Frame {
    Frame {
        header: Header {
            kind: Kind::Data,
            flags: 0,
            src: src as u32,
            dst: dst as u32,
            context: 0,
            tag,
            id: 0,
            len: data.len() as u64,
        },
        payload: Payload::copy_of(data),
    }
}

fn payload_vec(p: Payload) -> Vec<u8> {
    match p {
        Payload::Inline(i) => i.bytes().to_vec(),
        Payload::Bytes(b) => b,
        Payload::Vec(v) => v.bytes().to_vec(),
        Payload::Borrowed(b) => {
            let mut v = vec![0u8; b.len()];
            b.copy_into(&mut v).expect("a live borrow");
            v
        }
    }
}

#[test]
fn one_process_two_endpoints_fifo_and_sizes() {
    let fd = create_segment(2).unwrap();
    let a = ShmEndpoint::attach(fd.try_clone().unwrap(), 2, 0).unwrap();
    let b = ShmEndpoint::attach(fd, 2, 1).unwrap();
    // More than a ring's worth, of many sizes (some span slots; around
    // the largest short record, 4 072 bytes, and the largest first record
    // after a whole header, 4 040), through both ways of sending: as a
    // frame (queued when the ring is full) and copied straight into the
    // ring when it has room. Every header field comes back as sent.
    let sizes = [
        0usize, 1, 32, 33, 40, 41, 4000, 4040, 4041, 4072, 4073, 9000, 70_000,
    ];
    let mut sent = Vec::new();
    for i in 0..200 {
        let len = sizes[i % sizes.len()];
        let data: Vec<u8> = (0..len).map(|j| (i * 7 + j) as u8).collect();
        let mut f = frame(0, 1, i as u32, &data);
        f.header.context = (i as u64) << 40 | 0xbeef;
        f.header.tag |= (i as u32) << 24;
        let header = f.header;
        if i % 2 == 1 {
            // Written, or queued as a copy when the ring has no room.
            assert!(a.send_copied(header, &data).unwrap());
        } else {
            a.send(f).unwrap();
        }
        sent.push((header, data));
    }
    let mut got = 0;
    let t0 = Instant::now();
    while got < sent.len() {
        a.flush();
        if let Some(f) = b.try_recv() {
            assert_eq!(f.header, sent[got].0, "message {got}");
            assert_eq!(payload_vec(f.payload), sent[got].1);
            got += 1;
        }
        assert!(t0.elapsed() < Duration::from_secs(20));
    }
    assert!(b.try_recv().is_none());
    assert_eq!(a.peer_state(1), PeerState::Alive);
    b.close(Err("test failure".into()));
    assert_eq!(a.peer_state(1), PeerState::Failed("test failure".into()));
}

#[test]
fn abort_and_texts() {
    let fd = create_segment(3).unwrap();
    let a = ShmEndpoint::attach(fd.try_clone().unwrap(), 3, 0).unwrap();
    let c = ShmEndpoint::attach(fd.try_clone().unwrap(), 3, 2).unwrap();
    assert!(ShmEndpoint::attach(fd.try_clone().unwrap(), 3, 2).is_err());
    assert!(ShmEndpoint::attach(fd.try_clone().unwrap(), 4, 1).is_err());
    c.set_waiting(Some(
        "rank 2 is in recv, waiting for a message from 0 with tag 5",
    ));
    assert!(a
        .describe_waits()
        .contains("endpoint 2: rank 2 is in recv, waiting for a message from 0 with tag 5"));
    assert!(a.describe_waits().contains("endpoint 1: not started"));
    assert!(a.aborted().is_none());
    c.abort("boom");
    assert_eq!(a.aborted(), Some((2, "boom".to_string())));
}

#[test]
fn lend_protocol_within_one_process() {
    // A borrowed payload read through process_vm_readv from ourselves.
    let fd = create_segment(2).unwrap();
    let a = ShmEndpoint::attach(fd.try_clone().unwrap(), 2, 0).unwrap();
    let b = ShmEndpoint::attach(fd, 2, 1).unwrap();
    if !a.single_copy() {
        return;
    }
    let data: Vec<u8> = (0..CMA_MIN * 2).map(|i| (i % 251) as u8).collect();
    // SAFETY: `data` outlives the borrow: it is read, or revoked, below.
    let done = unsafe { send_lent(&a, &data, 9) };
    assert!(done.finished().is_none());
    let got = b.try_recv().expect("rendezvous frame");
    let Payload::Borrowed(bw) = got.payload else {
        panic!("expected a borrowed payload")
    };
    let mut dst = vec![0u8; data.len()];
    assert_eq!(bw.copy_into(&mut dst), Some(data.len()));
    assert_eq!(dst, data);
    assert_eq!(done.finished(), Some(Ok(data.len())));
    assert_eq!(a.map.lends_out.load(Ordering::Relaxed), 0);
    // Revoked before it was read: the reader gets nothing.
    // SAFETY: `data` outlives the borrow: it is read, or revoked, below.
    let done = unsafe { send_lent(&a, &data, 10) };
    assert!(!done.revoke());
    let got = b.try_recv().expect("rendezvous frame");
    let Payload::Borrowed(bw) = got.payload else {
        panic!("expected a borrowed payload")
    };
    assert_eq!(bw.copy_into(&mut dst), None);
}

#[test]
fn borrow_through_the_ring_withdrawn_midway() {
    let (a, b) = streaming_pair();
    // Larger than a ring: the rest waits in the sender's queue.
    let data: Vec<u8> = (0..300_000).map(|i| (i % 253) as u8).collect();
    // SAFETY: `data` outlives the borrow: it is read, or revoked, below.
    let done = unsafe { send_lent(&a, &data, 1) };
    assert!(done.finished().is_none());
    assert!(!done.revoke());
    a.send(frame(0, 1, 2, b"after")).unwrap();
    let t0 = Instant::now();
    let got = loop {
        a.flush();
        if let Some(f) = b.try_recv() {
            break f;
        }
        assert!(t0.elapsed() < Duration::from_secs(10));
    };
    assert_eq!(got.header.tag, 2, "the withdrawn message never arrives");
    assert_eq!(payload_vec(got.payload), b"after");
    // Both are out of flight for the deadlock detector's count.
    assert_eq!((a.sent.get(), b.drained.get()), (2, 2));
    // The same through the ring, not withdrawn: completes once the
    // reader has taken it out of the ring (seen by the sender's next call).
    // SAFETY: `data` outlives the borrow: it is read, or revoked, below.
    let done = unsafe { send_lent(&a, &data, 3) };
    let got = loop {
        a.flush();
        if let Some(f) = b.try_recv() {
            break f;
        }
        assert!(t0.elapsed() < Duration::from_secs(10));
    };
    assert!(a.try_recv().is_none());
    assert_eq!(done.finished(), Some(Ok(data.len())));
    assert_eq!(payload_vec(got.payload), data);
}

/// Endpoints 0 and 1 of one segment, 0 sending everything through the
/// ring (no single-copy reads).
fn streaming_pair() -> (ShmEndpoint, ShmEndpoint) {
    let fd = create_segment(2).unwrap();
    let mut a = ShmEndpoint::attach(fd.try_clone().unwrap(), 2, 0).unwrap();
    let b = ShmEndpoint::attach(fd, 2, 1).unwrap();
    a.cma = false;
    (a, b)
}

/// A taker that claims every streamed message its buffer can hold.
struct Claimer {
    buf: Vec<u8>,
    claims: usize,
}

impl Taker for Claimer {
    fn take(&mut self, _: &Header, _: &[u8]) -> bool {
        false
    }

    fn claim(&mut self, h: &Header) -> Option<crate::transport::Claim> {
        if h.len as usize > self.buf.len() {
            return None;
        }
        self.claims += 1;
        // SAFETY: the buffer is not resized and is only read after the
        // transport reported the message or gave the claim back.
        Some(unsafe { crate::transport::Claim::new(self.buf.as_mut_ptr(), self.buf.len()) })
    }
}

/// Send `data` from `a` to endpoint 1 as a lent buffer with `tag`.
///
/// # Safety
///
/// `data` must stay alive and unmodified until the returned completion
/// ends or the borrow is revoked.
unsafe fn send_lent(a: &ShmEndpoint, data: &[u8], tag: u32) -> Arc<Completion> {
    let done = Completion::new();
    // SAFETY: the caller's contract.
    let borrowed = unsafe { Borrowed::new(data, done.clone()) };
    let mut f = frame(0, 1, tag, &[]);
    f.header.len = data.len() as u64;
    f.payload = Payload::Borrowed(borrowed);
    a.send(f).unwrap();
    done
}

#[test]
fn streamed_messages_into_claimed_buffers() {
    let (a, b) = streaming_pair();
    let data: Vec<u8> = (0..300_000).map(|i| (i % 249) as u8).collect();
    let mut c = Claimer {
        buf: vec![0u8; data.len()],
        claims: 0,
    };
    let t0 = Instant::now();
    // Filled: every slot went into the claimed buffer, no frame was built.
    // SAFETY: `data` outlives the borrow: it is read, or revoked, below.
    let done = unsafe { send_lent(&a, &data, 1) };
    let h = loop {
        a.flush();
        match b.try_recv_offer(&mut c) {
            Arrival::Filled(h) => break h,
            Arrival::Frame(f) => panic!("a frame with tag {}", f.header.tag),
            _ => assert!(t0.elapsed() < Duration::from_secs(10)),
        }
    };
    assert_eq!((h.tag, h.len, c.claims), (1, data.len() as u64, 1));
    assert!(c.buf == data);
    assert!(a.try_recv().is_none());
    assert_eq!(done.finished(), Some(Ok(data.len())));
    // Withdrawn by its sender midway: the claim is void, and what follows
    // comes as usual.
    c.buf.fill(0);
    // SAFETY: `data` outlives the borrow: it is read, or revoked, below.
    let done = unsafe { send_lent(&a, &data, 2) };
    assert!(matches!(b.try_recv_offer(&mut c), Arrival::Nothing));
    assert_eq!(c.claims, 2);
    assert!(!done.revoke());
    a.send(frame(0, 1, 3, b"after")).unwrap();
    a.flush();
    assert!(matches!(b.try_recv_offer(&mut c), Arrival::Withdrawn(0)));
    match b.try_recv_offer(&mut c) {
        Arrival::Frame(f) => assert_eq!(payload_vec(f.payload), b"after"),
        _ => panic!("the message after the withdrawn one"),
    }
    // Given back midway: the rest comes as a frame of the transport's
    // own, whole, and the claimed buffer is not written any more.
    // SAFETY: `data` outlives the borrow: it is read, or revoked, below.
    let done = unsafe { send_lent(&a, &data, 4) };
    assert!(matches!(b.try_recv_offer(&mut c), Arrival::Nothing));
    assert_eq!(c.claims, 3);
    b.unclaim(0);
    c.buf.fill(0);
    let f = loop {
        a.flush();
        if let Some(f) = b.try_recv() {
            break f;
        }
        assert!(t0.elapsed() < Duration::from_secs(10));
    };
    assert_eq!(f.header.tag, 4);
    assert!(payload_vec(f.payload) == data);
    assert!(c.buf.iter().all(|&x| x == 0));
    assert!(a.try_recv().is_none());
    assert_eq!(done.finished(), Some(Ok(data.len())));
}

/// A record's data spans several cells, and only its first holds a control
/// word. Data that looks exactly like the control word a reader will wait
/// for at that cell a lap later must never be taken for one: records of
/// six cells (a lap of 4096 cells is not a multiple of six, so later laps
/// wait at cells that held data) whose data, at each further cell, holds
/// the control word of that cell one lap on. Both record forms: a plain
/// message's short record, a synchronous one's whole header.
#[test]
fn data_that_looks_like_a_control_word_is_never_read_as_one() {
    for sync in [false, true] {
        looks_like_a_control_word(sync, &[6]);
    }
}

/// As above with records of one cell among the long ones, in a pattern
/// that does not repeat within a lap: a reader then waits in the second
/// half of lines that held a long record's data one lap before.
#[test]
fn data_in_a_line_second_half_is_never_read_as_a_record() {
    looks_like_a_control_word(false, &[1, 6, 1, 1, 4, 1, 6, 6, 1, 4, 4, 1, 1, 1, 6]);
}

/// Send `3 * CELLS` messages whose records take `sizes` cells in turn,
/// each holding at every further cell the control word that cell would
/// get one lap on, and check that every one arrives whole.
fn looks_like_a_control_word(sync: bool, sizes: &[u64]) {
    let fd = create_segment(2).unwrap();
    let a = ShmEndpoint::attach(fd.try_clone().unwrap(), 2, 0).unwrap();
    let b = ShmEndpoint::attach(fd, 2, 1).unwrap();
    let head = if sync { Header::SIZE } else { ring::SHORT_HEAD };
    let t0 = Instant::now();
    for i in 0..3 * segment::CELLS {
        let n = sizes[i % sizes.len()];
        // 8-byte control word, header, payload: `n` cells.
        let len = if n == 1 {
            segment::CELL - 8 - head
        } else {
            (n as usize - 1) * segment::CELL - 8 - head + 8
        };
        assert_eq!(ring::cells(head + len), n);
        let pos = {
            let t = a.out.borrow()[1].ring.tail;
            // A record of whole lines starts on a line.
            t + (n > 1 && t % 2 == 1) as u64
        };
        let mut data: Vec<u8> = (0..len).map(|j| (i * 13 + j) as u8).collect();
        for k in 1..n {
            // The further cell's first word: record offset CELL k, after
            // the control word and the header (when it lies in the data).
            let Some(at) = (segment::CELL * k as usize).checked_sub(8 + head) else {
                continue;
            };
            if at + 8 > len {
                continue;
            }
            let fake = ring::ctrl(pos + k + segment::CELLS as u64, ring::K_SHORT, 24);
            data[at..at + 8].copy_from_slice(&fake.to_le_bytes());
        }
        let mut f = frame(0, 1, i as u32, &data);
        if sync {
            f.header.flags = Header::FLAG_SYNC;
            f.header.id = i as u64 + 1;
        }
        // The reader looks at the cell before the record is written there.
        assert!(b.try_recv().is_none(), "before message {i}");
        a.send(f).unwrap();
        let f = loop {
            a.flush();
            if let Some(f) = b.try_recv() {
                break f;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "message {i} never came"
            );
        };
        assert_eq!(f.header.tag as usize, i);
        assert_eq!(f.header.flags != 0, sync, "message {i}");
        assert_eq!(payload_vec(f.payload), data, "message {i}");
    }
    assert!(b.try_recv().is_none());
}
