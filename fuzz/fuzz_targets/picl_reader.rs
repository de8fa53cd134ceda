//! Fuzz target `picl_reader`: see `checks::picl_reader`.
#![no_main]

mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::picl_reader(data));
