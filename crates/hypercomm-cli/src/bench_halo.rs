//! `hypercomm bench halo`: the halo exchange of the grid layer on an `n`
//! rank process grid from `dims_create` (not periodic), `--dim` 2 or 3,
//! `--side` points per axis, `--width` cells, `--fields` f64 fields in one
//! exchange (one message per neighbour and flow), corners filled.
//!
//! Timing as the other benchmarks: a warm-up, a barrier, then `--iters`
//! exchanges back to back (an exchange synchronises neighbours by itself),
//! each rank's average, the maximum over ranks; the median of `--repeat`
//! runs. `bench/osu.c` measures the same exchange with Open MPI.
//!
//! Beside each figure, `…:memcpy` is what the same bytes cost to copy:
//! every rank at the same moment copies, as one block with `memcpy`, as
//! many bytes as its halo receives in one exchange (the same count of
//! iterations, the same maximum over ranks). Their ratio is the halo's
//! speed as a fraction of memory-copy speed.

use crate::bench::{run_ranks_many, summary, BenchArgs, Format};
use crate::out::outln;
use hypercomm::collective::Max;
use hypercomm::grid::{Field, FieldData, FieldSpec, Grid, HaloOpts};
use hypercomm::topology::dims_create;
use hypercomm::{Comm, Error};
use std::time::Instant;

/// One run: seconds per exchange and per equivalent memcpy (max over ranks).
fn measure(comm: &Comm, a: &BenchArgs, iters: usize) -> Result<Vec<f64>, Error> {
    let dims = dims_create(comm.size(), a.dim)?;
    let cart = comm
        .cartesian(&dims, &vec![false; a.dim])?
        .expect("every rank is in the grid");
    let grid = Grid::new(&cart, &vec![a.side; a.dim], a.width)?;
    let specs = vec![FieldSpec::of::<f64>(); a.fields];
    let opts = HaloOpts {
        width: a.width as isize,
        ..HaloOpts::default()
    };
    let halo = grid.halo_with(&specs, &opts, a.in_place)?;
    let mut fields: Vec<Field<f64>> = (0..a.fields).map(|_| grid.field()).collect();
    for (k, f) in fields.iter_mut().enumerate() {
        f.fill_with(|p| (p[0] + 3 * p[1] + 7 * p[2]) as f64 + k as f64);
    }
    let exchange = |fields: &mut Vec<Field<f64>>| -> Result<(), Error> {
        let list: Vec<&mut dyn FieldData> =
            fields.iter_mut().map(|f| f as &mut dyn FieldData).collect();
        halo.exchange(list)
    };
    let warm = (iters / 10).max(3);
    for _ in 0..warm {
        exchange(&mut fields)?;
    }
    comm.barrier()?;
    let t0 = Instant::now();
    for _ in 0..iters {
        exchange(&mut fields)?;
    }
    let exch = t0.elapsed().as_secs_f64() / iters as f64;
    // The same bytes as one memcpy per exchange, every rank at once.
    let bytes = halo.bytes_received();
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    comm.barrier()?;
    let t0 = Instant::now();
    for _ in 0..iters {
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
    }
    let copy = t0.elapsed().as_secs_f64() / iters as f64;
    comm.allreduce(&[exch, copy], Max)
}

pub(crate) fn main(a: &BenchArgs) -> Result<(), String> {
    if !(2..=3).contains(&a.dim) {
        return Err(format!("--dim {}: 2 or 3", a.dim));
    }
    if a.fields == 0 || a.width == 0 || a.side == 0 {
        return Err("--fields, --width and --side must be at least 1".into());
    }
    let dims = dims_create(a.n, a.dim).map_err(|e| format!("-n {}: {e}", a.n))?;
    crate::bench_sizes::check_halo_memory(a, &dims)?;
    let label = format!("halo{}d-w{}-f{}", a.dim, a.width, a.fields);
    let quiet = hypercomm::launch::Processes::is_copy();
    // Fewer exchanges for large faces: about 2^26 halo bytes per run.
    let face = (a.side.saturating_pow(a.dim as u32 - 1)).saturating_mul(a.width * a.fields * 8);
    let iters = (a.iters.min((1usize << 26) / face.max(1))).max(20);
    let mut exch = Vec::new();
    let mut copy = Vec::new();
    for r in 0..a.repeat {
        let key = format!("{label}/{}/{r}", a.side);
        let v = run_ranks_many(a.transport, a.n, &key, 2, |comm| measure(comm, a, iters))?;
        exch.push(v[0]);
        copy.push(v[1]);
    }
    if quiet {
        return Ok(());
    }
    let (e, c) = (
        summary(exch, a.stat, false) * 1e6,
        summary(copy, a.stat, false) * 1e6,
    );
    match a.format {
        Format::Table => {
            outln!(
                "# hypercomm bench halo, transport {}, n = {}",
                a.transport,
                a.n
            )?;
            outln!("{:<28} {:>10}  {:>12}", "variant", "side", "us")?;
            outln!("{label:<28} {:>10}  {e:>12.3}", a.side)?;
            outln!(
                "{:<28} {:>10}  {c:>12.3}",
                format!("{label}:memcpy"),
                a.side
            )?;
            outln!("# halo at {:.0} % of memcpy speed", 100.0 * c / e)?;
        }
        Format::Tsv => {
            outln!("{label}\t{}\t{}\t{e:.3}\tus", a.n, a.side)?;
            outln!("{label}:memcpy\t{}\t{}\t{c:.3}\tus", a.n, a.side)?;
        }
    }
    Ok(())
}
