//! The wire format, defined once: a fixed 48-byte frame header followed by
//! `len` payload bytes.
//!
//! All integers are little-endian, fields in this order:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 2 | magic `0x4843` ("HC") |
//! | 2 | 1 | version (1) |
//! | 3 | 1 | kind ([`Kind`]) |
//! | 4 | 4 | flags ([`Header::FLAG_SYNC`]) |
//! | 8 | 4 | source endpoint |
//! | 12 | 4 | destination endpoint |
//! | 16 | 8 | context (communicator) |
//! | 24 | 4 | tag |
//! | 28 | 4 | reserved, zero |
//! | 32 | 8 | id (sync-send acknowledgement key, or a value for control frames) |
//! | 40 | 8 | payload length in bytes |
//!
//! [`Header::encode`] and [`Header::decode`] stand side by side; decoding
//! untrusted bytes returns [`Error::Protocol`] and never panics. The thread
//! transport passes headers as values and never encodes them; byte-stream
//! transports (TCP, shared memory) use this encoding.

use crate::error::{Error, Result};

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// A user or collective message; the payload is the message.
    Data = 1,
    /// Acknowledges a synchronous send: `id` names it, the payload is empty and
    /// `tag` carries nothing; `len` carries how many bytes the receiver took.
    SyncAck = 2,
    /// The sender's global-OR bit changed: `id` is 0 or 1.
    GlobalOr = 3,
    /// The job was aborted; the payload is the UTF-8 message. `id` is 0
    /// when the sender itself aborted, or 1 + the endpoint that aborted
    /// when the sender relays someone else's abort (byte-stream
    /// transports relay, so that an abort overtakes the exits it causes).
    Abort = 4,
    /// Orderly goodbye: the sender has finished and will send nothing more.
    Goodbye = 5,
    /// The sender found endpoint `id` gone (failed, or finished while
    /// still needed) and is failing because of it: whoever later sees the
    /// sender gone blames `id`, the root cause, not the sender. The
    /// payload is empty.
    Gone = 6,
    /// Flow control: the receiver took messages of the sender's and gives
    /// back `id` bytes of credit (see the engine's `flow.rs`). The payload
    /// is empty.
    Credit = 7,
    /// What does the receiver wait for? Answered by the receiving
    /// transport itself with a [`Kind::WaitReply`] (byte-stream transports,
    /// whose endpoints cannot see each other's waits; for timeout
    /// messages). The payload is empty.
    WaitQuery = 8,
    /// The answer to a [`Kind::WaitQuery`]: the payload is the UTF-8 text
    /// of what the sender waits for (empty while it runs).
    WaitReply = 9,
    /// Look at the shared-memory board again: the sender published
    /// something there while the receiver was asleep (`transport/board.rs`).
    /// The payload is empty; the frame itself carries nothing.
    Wake = 10,
    /// Deadlock detection on byte-stream transports: is the receiver
    /// blocked, and what has it sent and taken in? Answered by the
    /// receiving transport itself with a [`Kind::DeadlockReply`]; `id` is
    /// the asker's round. The payload is empty.
    DeadlockQuery = 11,
    /// The answer to a [`Kind::DeadlockQuery`], with its `id`: the payload
    /// is the sender's state as its transport encodes it.
    DeadlockReply = 12,
    /// The job is deadlocked (every endpoint blocked or ended, nothing in
    /// flight): the payload is the UTF-8 text of what every endpoint waits
    /// for.
    Deadlock = 13,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Data,
            2 => Kind::SyncAck,
            3 => Kind::GlobalOr,
            4 => Kind::Abort,
            5 => Kind::Goodbye,
            6 => Kind::Gone,
            7 => Kind::Credit,
            8 => Kind::WaitQuery,
            9 => Kind::WaitReply,
            10 => Kind::Wake,
            11 => Kind::DeadlockQuery,
            12 => Kind::DeadlockReply,
            13 => Kind::Deadlock,
            _ => return None,
        })
    }
}

/// A frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Header {
    /// What the frame is.
    pub kind: Kind,
    /// Bit flags.
    pub flags: u32,
    /// Sending endpoint (nodes `0..n`, the host `n`).
    pub src: u32,
    /// Receiving endpoint.
    pub dst: u32,
    /// Communicator context.
    pub context: u64,
    /// Message tag.
    pub tag: u32,
    /// Sync-send key or control value.
    pub id: u64,
    /// Payload length in bytes.
    pub len: u64,
}

impl Header {
    /// Size of an encoded header in bytes.
    pub const SIZE: usize = 48;
    /// Magic number at the start of every frame.
    pub const MAGIC: u16 = 0x4843;
    /// Protocol version.
    pub const VERSION: u8 = 1;
    /// The sender waits for a [`Kind::SyncAck`] (synchronous send).
    pub const FLAG_SYNC: u32 = 1;
    const KNOWN_FLAGS: u32 = Self::FLAG_SYNC;

    /// How many payload bytes follow this header on a byte stream: `len`,
    /// except for [`Kind::SyncAck`], whose `len` is a value (the count the
    /// receiver took) and which carries no payload.
    pub fn stream_payload_len(&self) -> u64 {
        match self.kind {
            Kind::SyncAck => 0,
            _ => self.len,
        }
    }

    /// Encode into exactly [`Header::SIZE`] bytes.
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0..2].copy_from_slice(&Self::MAGIC.to_le_bytes());
        b[2] = Self::VERSION;
        b[3] = self.kind as u8;
        b[4..8].copy_from_slice(&self.flags.to_le_bytes());
        b[8..12].copy_from_slice(&self.src.to_le_bytes());
        b[12..16].copy_from_slice(&self.dst.to_le_bytes());
        b[16..24].copy_from_slice(&self.context.to_le_bytes());
        b[24..28].copy_from_slice(&self.tag.to_le_bytes());
        // 28..32 reserved, zero
        b[32..40].copy_from_slice(&self.id.to_le_bytes());
        b[40..48].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// Decode from the first [`Header::SIZE`] bytes of `bytes`.
    ///
    /// Returns [`Error::Protocol`] naming the first thing that is wrong:
    /// too few bytes, bad magic, unknown version, kind or flags, or a
    /// non-zero reserved field.
    #[inline]
    pub fn decode(bytes: &[u8]) -> Result<Header> {
        // Every message is decoded on its way in: the checks inline, the
        // words of an error formatted out of the way.
        Self::parse(bytes).map_err(|f| f.into_error())
    }

    #[inline(always)]
    fn parse(bytes: &[u8]) -> std::result::Result<Header, Malformed> {
        let Some(b) = bytes.first_chunk::<{ Self::SIZE }>() else {
            return Err(Malformed::Short(bytes.len()));
        };
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[o..o + 8]);
            u64::from_le_bytes(a)
        };
        let magic = u16_at(0);
        if magic != Self::MAGIC {
            return Err(Malformed::Magic(magic));
        }
        if b[2] != Self::VERSION {
            return Err(Malformed::Version(b[2]));
        }
        let kind = Kind::from_u8(b[3]).ok_or(Malformed::Kind(b[3]))?;
        let flags = u32_at(4);
        if flags & !Self::KNOWN_FLAGS != 0 {
            return Err(Malformed::Flags(flags));
        }
        let reserved = u32_at(28);
        if reserved != 0 {
            return Err(Malformed::Reserved(reserved));
        }
        Ok(Header {
            kind,
            flags,
            src: u32_at(8),
            dst: u32_at(12),
            context: u64_at(16),
            tag: u32_at(24),
            id: u64_at(32),
            len: u64_at(40),
        })
    }
}

/// What made a header undecodable (formatted only when it happens).
enum Malformed {
    Short(usize),
    Magic(u16),
    Version(u8),
    Kind(u8),
    Flags(u32),
    Reserved(u32),
}

impl Malformed {
    #[cold]
    #[inline(never)]
    fn into_error(self) -> Error {
        Error::Protocol(match self {
            Malformed::Short(got) => {
                format!("frame header needs {} bytes, got {got}", Header::SIZE)
            }
            Malformed::Magic(magic) => format!(
                "bad frame magic {magic:#06x} (expected {:#06x})",
                Header::MAGIC
            ),
            Malformed::Version(v) => format!(
                "unsupported frame version {v} (this build speaks {})",
                Header::VERSION
            ),
            Malformed::Kind(k) => format!("unknown frame kind {k}"),
            Malformed::Flags(flags) => format!("unknown frame flags {flags:#x}"),
            Malformed::Reserved(r) => format!("reserved header field is {r:#x}, not zero"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn kinds() -> impl Strategy<Value = Kind> {
        prop_oneof![
            Just(Kind::Data),
            Just(Kind::SyncAck),
            Just(Kind::GlobalOr),
            Just(Kind::Abort),
            Just(Kind::Goodbye),
            Just(Kind::Gone),
            Just(Kind::Credit),
            Just(Kind::WaitQuery),
            Just(Kind::WaitReply),
            Just(Kind::Wake),
            Just(Kind::DeadlockQuery),
            Just(Kind::DeadlockReply),
            Just(Kind::Deadlock)
        ]
    }

    proptest! {
        #[test]
        fn round_trip(kind in kinds(), sync in any::<bool>(), src: u32, dst: u32, context: u64,
                      tag: u32, id: u64, len: u64) {
            let h = Header { kind, flags: if sync { Header::FLAG_SYNC } else { 0 }, src, dst, context, tag, id, len };
            let bytes = h.encode();
            prop_assert_eq!(Header::decode(&bytes).unwrap(), h);
        }

        #[test]
        fn decoding_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
            let _ = Header::decode(&bytes);
        }
    }

    #[test]
    fn known_layout() {
        let h = Header {
            kind: Kind::Data,
            flags: 0,
            src: 1,
            dst: 2,
            context: 0x0102_0304_0506_0708,
            tag: 7,
            id: 9,
            len: 5,
        };
        let b = h.encode();
        assert_eq!(&b[0..4], &[0x43, 0x48, 1, 1]);
        assert_eq!(b[8], 1);
        assert_eq!(b[12], 2);
        assert_eq!(b[16], 0x08);
        assert_eq!(b[23], 0x01);
        assert_eq!(b[24], 7);
        assert_eq!(b[32], 9);
        assert_eq!(b[40], 5);
    }

    #[test]
    fn bad_bytes_are_named() {
        let good = Header {
            kind: Kind::Data,
            flags: 0,
            src: 0,
            dst: 0,
            context: 0,
            tag: 0,
            id: 0,
            len: 0,
        }
        .encode();
        let e = Header::decode(&good[..10]).unwrap_err();
        assert!(e.to_string().contains("needs 48 bytes, got 10"), "{e}");
        let mut b = good;
        b[0] = 0;
        assert!(Header::decode(&b)
            .unwrap_err()
            .to_string()
            .contains("magic"));
        let mut b = good;
        b[2] = 9;
        assert!(Header::decode(&b)
            .unwrap_err()
            .to_string()
            .contains("version 9"));
        let mut b = good;
        b[3] = 77;
        assert!(Header::decode(&b)
            .unwrap_err()
            .to_string()
            .contains("kind 77"));
        let mut b = good;
        b[5] = 1;
        assert!(Header::decode(&b)
            .unwrap_err()
            .to_string()
            .contains("flags"));
        let mut b = good;
        b[29] = 1;
        assert!(Header::decode(&b)
            .unwrap_err()
            .to_string()
            .contains("reserved"));
    }
}
