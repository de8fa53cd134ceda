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

/// `n` random bytes from the operating system.
pub(crate) fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut b = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b)
}

/// Lower-case hex.
pub(crate) fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Parse hex (either case); `None` when malformed.
pub(crate) fn from_hex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
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
    let nc: [u8; NONCE] = io(random_bytes(), "reading /dev/urandom")?;
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
    io(s.write_all(&out), "sending the proof")?;
    io(s.set_read_timeout(old), "clearing the timeout")?;
    Ok(())
}

/// Server side: check the client's proof; returns the client's endpoint id.
pub(crate) fn server(s: &mut TcpStream, secret: &[u8], job: &str) -> Result<u32, String> {
    io(
        s.set_read_timeout(Some(HANDSHAKE_TIMEOUT)),
        "setting a timeout",
    )?;
    let mut hello = [0u8; 8 + NONCE];
    io(s.read_exact(&mut hello), "reading the challenge")?;
    if &hello[..8] != MAGIC {
        return Err("not a hypercomm client (bad greeting)".into());
    }
    let nc = &hello[8..];
    let ns: [u8; NONCE] = io(random_bytes(), "reading /dev/urandom")?;
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
    io(s.set_read_timeout(None), "clearing the timeout")?;
    Ok(u32::from_le_bytes(idb.try_into().expect("4 bytes")))
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
    fn hex_round_trip() {
        let b = [0u8, 1, 0xab, 0xff];
        assert_eq!(from_hex(&to_hex(&b)).unwrap(), b);
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
    }
}
