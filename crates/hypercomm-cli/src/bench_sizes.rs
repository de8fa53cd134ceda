//! `hypercomm bench`: the sizes measured and the iterations per size.

/// The default sizes: 0 and the powers of two up to 4 MiB.
pub(crate) fn default_sizes() -> Vec<usize> {
    let mut v = vec![0];
    let mut s = 1;
    while s <= 4 << 20 {
        v.push(s);
        s *= 2;
    }
    v
}

/// Timed and warm-up iterations for messages of `size` bytes: `base` up to
/// 8 KiB, fewer for larger ones.
pub(crate) fn iters_for(size: usize, base: usize) -> (usize, usize) {
    let it = if size <= 8192 {
        base
    } else {
        (base * 8192 / size).max(20)
    };
    (it, (it / 10).max(5))
}
