//! What each fuzz target checks on one input; shared by the targets and by
//! the stable regression test `tests/fuzz_corpus.rs`, which replays the
//! kept corpus and every crasher found.

// Each target uses one of them.
#![allow(dead_code)]

use hypercomm::trace::picl::{parse, write, Format};
use hypercomm::transport::tcp::{handshake_on_bytes, read_frame, ReadOutcome};
use hypercomm::wire::Header;

/// The frame decoder: `Header::decode` on raw bytes, and the TCP
/// transport's stream reader (`read_frame`) on a byte stream of several
/// frames. Neither may panic, hang or allocate what the input merely
/// claims; a decoded header must re-encode to the same bytes.
pub(crate) fn frame_decoder(data: &[u8]) {
    if let Ok(h) = Header::decode(data) {
        assert_eq!(&h.encode()[..], &data[..Header::SIZE]);
    }
    let mut r = data;
    for _ in 0..16 {
        match read_frame(&mut r, 1, 0) {
            ReadOutcome::Frame(f) => {
                assert_eq!(f.payload.len() as u64, f.header.stream_payload_len())
            }
            _ => break,
        }
    }
}

/// The TCP handshake (`transport/tcp/auth.rs`), both sides fed arbitrary
/// bytes from a would-be peer. Neither may panic or accept: the input
/// cannot know the secret, so every run must end in an error.
pub(crate) fn handshake(data: &[u8]) {
    let secret = [0x5a; 32];
    for as_server in [true, false] {
        let r = handshake_on_bytes(as_server, data, &secret, "fuzz-job");
        assert!(r.is_err(), "forged handshake accepted: {r:?}");
    }
}

/// The PICL trace reader (`trace/picl.rs`): arbitrary text must parse or
/// fail with a line number, never panic; a trace it accepts must write
/// back, in both formats, to text that parses to the same records.
pub(crate) fn picl_reader(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(trace) = parse(&text) else { return };
    for f in [Format::Verbose, Format::Compact] {
        let out = write(&trace, f);
        let again =
            parse(&out).unwrap_or_else(|e| panic!("{f:?} output does not parse: {e}\n{out}"));
        assert_eq!(again.records, trace.records, "{f:?}:\n{out}");
    }
}
