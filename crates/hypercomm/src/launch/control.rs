//! The control protocol between a job's endpoints and its rendezvous (the
//! launcher, a spawning host, or rank 0 under Slurm).
//!
//! A control connection is a TCP connection authenticated like the data
//! connections (`transport::tcp::auth`, the endpoint id as client id); it
//! then carries [`Ctl`] messages, each a little-endian `u32` length followed
//! by that many bytes of postcard encoding. The data plane never uses this
//! framing: frames between endpoints are `wire.rs` frames.
//!
//! Not done yet: versioning of the control messages beyond the handshake's
//! magic.

use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// Longest control message accepted (an address table of a very large job).
const MAX_CTL: usize = 16 << 20;

/// A control message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Ctl {
    /// Endpoint → rendezvous, first message: where this endpoint listens for
    /// data connections (`ip:port`; empty for transports without listeners).
    Hello {
        /// The sender's endpoint index.
        endpoint: u32,
        /// Its listening address.
        addr: String,
        /// The cores its process may use.
        cores: u32,
    },
    /// Rendezvous → every endpoint, once all have said hello: the listening
    /// address of every endpoint, by index, and the fewest cores any of
    /// them may use (collective selection's input, the same everywhere).
    Table {
        /// Addresses by endpoint.
        addrs: Vec<String>,
        /// The fewest cores of any endpoint's process.
        cores: u32,
    },
    /// Endpoint → rendezvous: this endpoint aborts the job.
    Abort {
        /// The abort message.
        message: String,
    },
    /// Endpoint → rendezvous: this endpoint is leaving (`ok`: normally).
    Finished {
        /// Normal finish?
        ok: bool,
        /// Why not, when not.
        message: String,
        /// The endpoint this one found gone first (its operations failed
        /// with `PeerFailed` because of it), if any: this endpoint's
        /// failure, or a non-zero exit that follows, is a consequence.
        cause: Option<u32>,
    },
    /// Endpoint → rendezvous: the result of a rank of
    /// [`run_processes`](super::run_processes) (serialised), sent before
    /// `Finished`.
    Result {
        /// The encoded result.
        bytes: Vec<u8>,
    },
    /// Rendezvous → endpoints: `endpoint` aborted the job.
    Aborted {
        /// Who aborted.
        endpoint: u32,
        /// Its message.
        message: String,
    },
    /// Rendezvous → endpoints: `endpoint` died (what the launcher saw).
    PeerFailed {
        /// The dead endpoint.
        endpoint: u32,
        /// How it died.
        message: String,
    },
}

/// Write one control message.
pub(crate) fn write(w: &mut impl Write, m: &Ctl) -> std::io::Result<()> {
    let body = postcard::to_stdvec(m).map_err(std::io::Error::other)?;
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    w.write_all(&out)
}

/// Read one control message; `Ok(None)` at a clean end of stream.
pub(crate) fn read(r: &mut impl Read) -> std::io::Result<Option<Ctl>> {
    let mut lb = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match r.read(&mut lb[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u32::from_le_bytes(lb) as usize;
    if len > MAX_CTL {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("control message of {len} bytes exceeds the limit of {MAX_CTL}"),
        ));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    postcard::from_bytes(&body)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_garbage() {
        let msgs = [
            Ctl::Hello {
                endpoint: 3,
                addr: "127.0.0.1:5".into(),
                cores: 4,
            },
            Ctl::Table {
                addrs: vec!["a".into(), "b".into()],
                cores: 2,
            },
            Ctl::Abort {
                message: "x".into(),
            },
            Ctl::Finished {
                ok: false,
                message: "y".into(),
                cause: Some(2),
            },
            Ctl::Result {
                bytes: vec![1, 2, 3],
            },
        ];
        let mut buf = Vec::new();
        for m in &msgs {
            write(&mut buf, m).unwrap();
        }
        let mut r = &buf[..];
        for m in &msgs {
            assert_eq!(read(&mut r).unwrap().as_ref(), Some(m));
        }
        assert_eq!(read(&mut r).unwrap(), None);
        let garbage = [5u8, 0, 0, 0, 200, 200, 200, 200, 200];
        assert!(read(&mut &garbage[..]).is_err());
        let huge = [255u8, 255, 255, 255];
        assert!(read(&mut &huge[..]).is_err());
    }
}
