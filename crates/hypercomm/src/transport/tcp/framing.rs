//! Framing: exactly the frames of [`crate::wire`] on a byte stream — the
//! header, then `len` payload bytes — written in one system call when short,
//! and read back without trusting the peer (a lying length never makes us
//! allocate memory the peer does not send; nothing here panics on any input).

use crate::error::Error;
use crate::transport::{Frame, Inline, Payload, INLINE_MAX};
use crate::wire::Header;
use std::io::{Read, Write};

/// Payloads up to this size are copied next to the header and written with
/// one system call.
const COALESCE: usize = 16 << 10;

/// Write one frame: the header, then the payload bytes.
pub fn write_frame(w: &mut impl Write, frame: Frame) -> std::io::Result<()> {
    let hdr = frame.header.encode();
    match frame.payload {
        Payload::Inline(i) => write_parts(w, &hdr, i.bytes()),
        Payload::Bytes(b) => write_parts(w, &hdr, &b),
        Payload::Vec(v) => write_parts(w, &hdr, v.bytes()),
        Payload::Borrowed(b) => {
            let mut res = Ok(());
            let taken = b.with_bytes(|bytes| {
                res = write_parts(w, &hdr, bytes);
                bytes.len()
            });
            match taken {
                Some(_) => res,
                // Revoked by the sender before we started: send nothing.
                None => Ok(()),
            }
        }
    }
}

fn write_parts(
    w: &mut impl Write,
    hdr: &[u8; Header::SIZE],
    payload: &[u8],
) -> std::io::Result<()> {
    if payload.len() <= COALESCE {
        let mut buf = [0u8; Header::SIZE + COALESCE];
        buf[..Header::SIZE].copy_from_slice(hdr);
        buf[Header::SIZE..Header::SIZE + payload.len()].copy_from_slice(payload);
        w.write_all(&buf[..Header::SIZE + payload.len()])
    } else {
        w.write_all(hdr)?;
        w.write_all(payload)
    }
}

/// Read until `buf` is full or end of stream; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// What reading one frame from a byte stream gave.
#[derive(Debug)]
pub enum ReadOutcome {
    /// A whole frame.
    Frame(Frame),
    /// The stream ended cleanly between frames.
    End,
    /// The stream ended or failed inside a frame (an I/O problem, not a
    /// protocol violation).
    Broken(String),
    /// The bytes are not a valid frame from `expect_src` to `expect_dst`.
    Malformed(Error),
}

/// The most a payload's announced length reserves before its bytes arrive.
const RESERVE_MAX: u64 = 16 << 20;

/// Read and check one frame from `r`: the header must decode
/// ([`Header::decode`]) and name `expect_src` → `expect_dst`. The payload is
/// read into a buffer that grows as bytes arrive, so a lying length cannot
/// make us allocate memory the peer never sends. Never panics on any input.
pub fn read_frame(r: &mut impl Read, expect_src: usize, expect_dst: usize) -> ReadOutcome {
    let mut hb = [0u8; Header::SIZE];
    let got = match read_full(r, &mut hb) {
        Ok(g) => g,
        Err(e) => return ReadOutcome::Broken(format!("connection failed: {e}")),
    };
    if got == 0 {
        return ReadOutcome::End;
    }
    if got < Header::SIZE {
        return ReadOutcome::Broken(format!(
            "connection closed inside a frame header ({got} of {} bytes)",
            Header::SIZE
        ));
    }
    let h = match Header::decode(&hb) {
        Ok(h) => h,
        Err(e) => return ReadOutcome::Malformed(e),
    };
    if h.src as usize != expect_src || h.dst as usize != expect_dst {
        return ReadOutcome::Malformed(Error::Protocol(format!(
            "frame claims to go from endpoint {} to endpoint {}, but the connection is from {expect_src} to {expect_dst}",
            h.src, h.dst
        )));
    }
    let len = h.stream_payload_len();
    let payload = if len as usize <= INLINE_MAX && len <= INLINE_MAX as u64 {
        let mut b = [0u8; INLINE_MAX];
        match read_full(r, &mut b[..len as usize]) {
            Ok(g) if g == len as usize => {}
            Ok(g) => {
                return ReadOutcome::Broken(format!(
                    "connection closed inside a payload ({g} of {len} bytes)"
                ))
            }
            Err(e) => return ReadOutcome::Broken(format!("connection failed: {e}")),
        }
        Payload::Inline(Inline::new(&b[..len as usize]).expect("short payload"))
    } else {
        let mut v = Vec::new();
        // Reserve what is announced up to 16 MiB; beyond that, grow as
        // the bytes actually arrive (a header's claim alone cannot make a
        // receiver allocate more; large reallocations are cheap remaps).
        let first = len.min(RESERVE_MAX) as usize;
        if v.try_reserve_exact(first).is_err() {
            return ReadOutcome::Malformed(Error::Protocol(format!(
                "cannot allocate {first} bytes for a {len}-byte payload"
            )));
        }
        match r.take(len).read_to_end(&mut v) {
            Ok(g) if g as u64 == len => {}
            Ok(g) => {
                return ReadOutcome::Broken(format!(
                    "connection closed inside a payload ({g} of {len} bytes)"
                ))
            }
            Err(e) => return ReadOutcome::Broken(format!("connection failed: {e}")),
        }
        Payload::Bytes(v)
    };
    ReadOutcome::Frame(Frame { header: h, payload })
}
