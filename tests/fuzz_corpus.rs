//! The fuzz targets' inputs as regression tests on stable: every seed in
//! `fuzz/seeds/<target>/`, every input kept in `fuzz/corpus/<target>/`
//! (the minimised corpus of the runs counted in FUZZING.md) and every
//! crasher in `fuzz/regressions/<target>/` goes through the same checks as
//! the target (`fuzz/fuzz_targets/checks.rs`).

#[path = "../fuzz/fuzz_targets/checks.rs"]
mod checks;

use std::path::PathBuf;

/// Run `check` on every file of the target's seeds, kept corpus and
/// crashers; at least `min_corpus` corpus inputs must be there.
fn replay(target: &str, check: fn(&[u8]), min_corpus: usize) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut counts = Vec::new();
    for dir in ["corpus", "regressions", "seeds"] {
        let d = root.join(dir).join(target);
        let mut n = 0;
        if let Ok(entries) = std::fs::read_dir(&d) {
            for e in entries {
                let path = e.expect("a directory entry").path();
                let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
                let r = std::panic::catch_unwind(|| check(&data));
                assert!(r.is_ok(), "{target}: {path:?} fails its check again");
                n += 1;
            }
        }
        counts.push(n);
    }
    assert!(
        counts[0] >= min_corpus,
        "{target}: only {} corpus inputs kept (fuzz/corpus/{target})",
        counts[0]
    );
    println!(
        "{target}: {} corpus inputs, {} crashers, {} seeds",
        counts[0], counts[1], counts[2]
    );
}

#[test]
fn frame_decoder_corpus_and_crashers() {
    replay("frame_decoder", checks::frame_decoder, 20);
}

#[test]
fn handshake_corpus_and_crashers() {
    replay("handshake", checks::handshake, 5);
}

#[test]
fn picl_reader_corpus_and_crashers() {
    replay("picl_reader", checks::picl_reader, 20);
}
