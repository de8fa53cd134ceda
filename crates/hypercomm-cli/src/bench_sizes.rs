//! `hypercomm bench`: the sizes measured, the iterations per size, and the
//! memory their buffers take.
//!
//! A size whose buffers cannot fit in this machine's memory is an error
//! naming it before anything runs: allocating them would abort the
//! command (or bring in the out-of-memory killer) instead. The estimate
//! counts the buffers each benchmark allocates per rank (see `collective`,
//! `bandwidth` and `latency` in `bench.rs`, `measure` in `bench_halo.rs`)
//! times the ranks, all on this machine (with `--transport mpi` the ranks
//! may be elsewhere, and one rank's buffers are counted).

use crate::bench::{BenchArgs, Op};
use hypercomm::TransportKind;

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

/// This machine's physical memory in bytes, when the system says.
fn physical_memory() -> Option<u128> {
    #[cfg(unix)]
    {
        // SAFETY: sysconf(3) reads a system constant; no memory is passed.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        (pages > 0 && page > 0).then(|| pages as u128 * page as u128)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Bytes and their binary unit, for a message.
fn human(bytes: u128) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// An error naming `what` when `need` bytes are more than this machine's
/// memory.
fn fits(what: &str, need: u128) -> Result<(), String> {
    match physical_memory() {
        Some(have) if need > have => Err(format!(
            "{what} would need about {} of buffers, more than this machine's memory ({})",
            human(need),
            human(have)
        )),
        _ => Ok(()),
    }
}

/// The ranks whose buffers this machine holds.
fn local_ranks(a: &BenchArgs) -> u128 {
    match a.transport {
        TransportKind::Mpi => 1,
        _ => a.n as u128,
    }
}

/// Check that the buffers of benchmark `op` (called `name`) at every size
/// fit in memory; an error names the first size that does not.
pub(crate) fn check_memory(
    a: &BenchArgs,
    op: Op,
    name: &str,
    sizes: &[usize],
) -> Result<(), String> {
    let n = a.n as u128;
    // Buffers of `size` bytes per rank, and whether every rank has them.
    let (per_rank, ranks) = match op {
        Op::Latency | Op::Handoff => (1, local_ranks(a)),
        // One send buffer and a window of 64 receive buffers.
        Op::Bw | Op::Bibw => (65, local_ranks(a)),
        // Two buffers, on one thread.
        Op::Memcpy => (2, 1),
        // Input, output and the root's buffer (4 sizes), gathered and
        // all-to-all blocks (3 × n sizes); a barrier makes them too.
        op if op.is_collective() => (4 + 3 * n, local_ranks(a)),
        _ => (0, 0),
    };
    for &size in sizes {
        fits(
            &format!("--sizes {size}: {name} on {} ranks", a.n),
            size as u128 * per_rank * ranks,
        )?;
    }
    Ok(())
}

/// Check that the fields of `bench halo` fit in memory; an error names
/// --side.
pub(crate) fn check_halo_memory(a: &BenchArgs, dims: &[usize]) -> Result<(), String> {
    // Each rank's block of the grid with its halo, in every field.
    let block = dims.iter().fold(1u128, |acc, &d| {
        let extent = (a.side as u128).div_ceil(d.max(1) as u128) + 2 * a.width as u128;
        acc.saturating_mul(extent)
    });
    let need = block
        .saturating_mul(local_ranks(a))
        .saturating_mul(a.fields as u128)
        .saturating_mul(8);
    fits(
        &format!(
            "--side {}: halo of {} f64 field{} on a {}-d grid of {} ranks",
            a.side,
            a.fields,
            if a.fields == 1 { "" } else { "s" },
            a.dim,
            a.n
        ),
        need,
    )
}

#[cfg(test)]
mod tests {
    use super::human;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(3 << 20), "3.0 MiB");
        assert_eq!(human(99_999_999_999_999 * 130), "11.5 PiB");
    }
}
