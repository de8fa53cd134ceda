//! Fuzz target `handshake`: see `checks::handshake`.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::handshake(data));
