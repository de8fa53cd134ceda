//! Fuzz the frame decoder: `Header::decode` on raw bytes, and the TCP
//! transport's stream reader (`read_frame`) on a byte stream of several
//! frames. Neither may panic, hang or allocate what the input merely
//! claims; a decoded header must re-encode to the same bytes.
#![no_main]

use hypercomm::transport::tcp::{read_frame, ReadOutcome};
use hypercomm::wire::Header;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = Header::decode(data) {
        assert_eq!(&h.encode()[..], &data[..Header::SIZE]);
    }
    let mut r = data;
    for _ in 0..16 {
        match read_frame(&mut r, 1, 0) {
            ReadOutcome::Frame(f) => assert_eq!(f.payload.len() as u64, f.header.stream_payload_len()),
            _ => break,
        }
    }
});
