//! Mutual challenge-response authentication of a TCP connection with the
//! per-job secret (HMAC-SHA-256), used by the data connections between
//! endpoints and by the control connections to the launcher.
//!
//! ```text
//! client → server   "HCAUTH1\0" ‖ nonce_c (32 bytes)
//! server → client   nonce_s (32) ‖ HMAC(secret, "hypercomm server" ‖ job ‖ nonce_c ‖ nonce_s)
//! client → server   id (u32 LE) ‖ HMAC(secret, "hypercomm client" ‖ job ‖ nonce_s ‖ nonce_c ‖ id)
//! ```
//!
//! Both sides prove they know the secret without sending it; fresh nonces
//! on both sides prevent replay, the role labels prevent reflection, and the
//! job id keeps two jobs with the same secret apart. The server learns the
//! client's (authenticated) endpoint id. Every read has a deadline, so a
//! silent foreign client cannot hold an accept slot.
//!
//! Not done yet: encryption of the traffic after authentication (the
//! connection is authenticated, not private).

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

type HmacSha256 = Hmac<Sha256>;

/// Length of the per-job secret in bytes.
pub(crate) const SECRET_LEN: usize = 32;
const MAGIC: &[u8; 8] = b"HCAUTH1\0";
const NONCE: usize = 32;
const MAC: usize = 32;
/// How long one side waits for the other during the handshake.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// `N` random bytes from the operating system's generator (`getrandom`:
/// the getrandom system call on Linux, its equivalent elsewhere; no file
/// to open, so it works in a chroot or a sandbox without `/dev`).
pub(crate) fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b)?;
    Ok(b)
}

/// Lower-case hex (the `hex` crate).
pub(crate) fn to_hex(b: &[u8]) -> String {
    hex::encode(b)
}

/// Parse hex (either case, surrounding white space ignored); `None` when
/// malformed (odd length or a non-hex digit).
pub(crate) fn from_hex(s: &str) -> Option<Vec<u8>> {
    hex::decode(s.trim()).ok()
}

fn mac(secret: &[u8], parts: &[&[u8]]) -> [u8; MAC] {
    let mut m = HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any size");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

fn verify(secret: &[u8], parts: &[&[u8]], tag: &[u8]) -> bool {
    let mut m = HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any size");
    for p in parts {
        m.update(p);
    }
    m.verify_slice(tag).is_ok()
}

fn io<T>(r: std::io::Result<T>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

/// Client side: prove knowledge of `secret` as endpoint `id` and check that
/// the server knows it too.
pub(crate) fn client(s: &mut TcpStream, secret: &[u8], job: &str, id: u32) -> Result<(), String> {
    let old = s.read_timeout().ok().flatten();
    io(
        s.set_read_timeout(Some(HANDSHAKE_TIMEOUT)),
        "setting a timeout",
    )?;
    client_on(s, secret, job, id)?;
    io(s.set_read_timeout(old), "clearing the timeout")
}

/// The client's side of the exchange on any byte stream (the caller sets
/// its deadlines).
pub(crate) fn client_on(
    s: &mut (impl Read + Write),
    secret: &[u8],
    job: &str,
    id: u32,
) -> Result<(), String> {
    let nc: [u8; NONCE] = io(random_bytes(), "drawing a random nonce")?;
    let mut hello = Vec::with_capacity(8 + NONCE);
    hello.extend_from_slice(MAGIC);
    hello.extend_from_slice(&nc);
    io(s.write_all(&hello), "sending the challenge")?;
    let mut reply = [0u8; NONCE + MAC];
    io(s.read_exact(&mut reply), "reading the server's proof")?;
    let (ns, tag) = reply.split_at(NONCE);
    if !verify(secret, &[b"hypercomm server", job.as_bytes(), &nc, ns], tag) {
        return Err("the server does not know this job's secret".into());
    }
    let idb = id.to_le_bytes();
    let proof = mac(
        secret,
        &[b"hypercomm client", job.as_bytes(), ns, &nc, &idb],
    );
    let mut out = Vec::with_capacity(4 + MAC);
    out.extend_from_slice(&idb);
    out.extend_from_slice(&proof);
    io(s.write_all(&out), "sending the proof")
}

/// Server side: check the client's proof; returns the client's endpoint id.
pub(crate) fn server(s: &mut TcpStream, secret: &[u8], job: &str) -> Result<u32, String> {
    io(
        s.set_read_timeout(Some(HANDSHAKE_TIMEOUT)),
        "setting a timeout",
    )?;
    let id = server_on(s, secret, job)?;
    io(s.set_read_timeout(None), "clearing the timeout")?;
    Ok(id)
}

/// The server's side of the exchange on any byte stream (the caller sets
/// its deadlines).
pub(crate) fn server_on(
    s: &mut (impl Read + Write),
    secret: &[u8],
    job: &str,
) -> Result<u32, String> {
    let mut hello = [0u8; 8 + NONCE];
    io(s.read_exact(&mut hello), "reading the challenge")?;
    if &hello[..8] != MAGIC {
        return Err("not a hypercomm client (bad greeting)".into());
    }
    let nc = &hello[8..];
    let ns: [u8; NONCE] = io(random_bytes(), "drawing a random nonce")?;
    let proof = mac(secret, &[b"hypercomm server", job.as_bytes(), nc, &ns]);
    let mut reply = Vec::with_capacity(NONCE + MAC);
    reply.extend_from_slice(&ns);
    reply.extend_from_slice(&proof);
    io(s.write_all(&reply), "sending the proof")?;
    let mut answer = [0u8; 4 + MAC];
    io(s.read_exact(&mut answer), "reading the client's proof")?;
    let (idb, tag) = answer.split_at(4);
    if !verify(
        secret,
        &[b"hypercomm client", job.as_bytes(), &ns, nc, idb],
        tag,
    ) {
        return Err("authentication failed (wrong or missing job secret)".into());
    }
    Ok(u32::from_le_bytes(idb.try_into().expect("4 bytes")))
}

/// One side of the handshake run on scripted bytes, for the fuzz target
/// and tests: `input` is what the other side sends; what this side sends
/// is discarded. As a server it returns the client's endpoint id, as a
/// client 0. Forged input must always be refused with an error, never a
/// panic.
pub fn handshake_on_bytes(
    as_server: bool,
    input: &[u8],
    secret: &[u8],
    job: &str,
) -> Result<u32, String> {
    let mut s = Scripted {
        input,
        output: Vec::new(),
    };
    if as_server {
        server_on(&mut s, secret, job)
    } else {
        client_on(&mut s, secret, job, 0).map(|()| 0)
    }
}

/// A byte stream that reads a script and collects what is written.
struct Scripted<'a> {
    input: &'a [u8],
    output: Vec<u8>,
}

impl Read for Scripted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Scripted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair(cs: &'static [u8], ss: &'static [u8]) -> (Result<(), String>, Result<u32, String>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            server(&mut s, ss, "job")
        });
        let mut c = TcpStream::connect(addr).unwrap();
        let r = client(&mut c, cs, "job", 7);
        drop(c);
        (r, t.join().unwrap())
    }

    #[test]
    fn same_secret_authenticates_both_ways() {
        let (c, s) = pair(b"secret", b"secret");
        assert_eq!(c, Ok(()));
        assert_eq!(s, Ok(7));
    }

    #[test]
    fn wrong_secret_is_refused_on_both_sides() {
        let (c, s) = pair(b"secret", b"other");
        assert!(c.unwrap_err().contains("does not know"));
        assert!(s.is_err());
    }

    #[test]
    fn forged_or_short_handshakes_are_refused() {
        // A greeting that is not ours, a good greeting then nothing, and a
        // well-formed client answer with a made-up proof.
        let e = handshake_on_bytes(
            true,
            b"GET / HTTP/1.1\r\nHost: example.org\r\n\r\n0123456789",
            b"s",
            "job",
        );
        assert!(e.unwrap_err().contains("bad greeting"));
        let mut hello = MAGIC.to_vec();
        hello.extend_from_slice(&[7; NONCE]);
        let e = handshake_on_bytes(true, &hello, b"s", "job").unwrap_err();
        assert!(e.contains("reading the client's proof"), "{e}");
        hello.extend_from_slice(&[9; 4 + MAC]);
        let e = handshake_on_bytes(true, &hello, b"s", "job").unwrap_err();
        assert!(e.contains("authentication failed"), "{e}");
        // A client facing a server that answers with garbage.
        let e = handshake_on_bytes(false, &[1; NONCE + MAC], b"s", "job").unwrap_err();
        assert!(e.contains("does not know"), "{e}");
        let e = handshake_on_bytes(false, &[1; 3], b"s", "job").unwrap_err();
        assert!(e.contains("reading the server's proof"), "{e}");
    }

    #[test]
    fn hex_round_trip() {
        let b = [0u8, 1, 0xab, 0xff];
        assert_eq!(from_hex(&to_hex(&b)).unwrap(), b);
        assert_eq!(to_hex(&b), "0001abff");
        assert_eq!(from_hex(" 0001ABff\n").unwrap(), b);
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
    }
}
