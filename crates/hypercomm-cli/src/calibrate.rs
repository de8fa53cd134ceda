//! `hypercomm sim calibrate`: ts and tw of a real transport, for the
//! simulator's model (seed 001: a message of m bytes takes ts + tw·m).
//!
//! Two ranks ping-pong messages of 0 B to 1 MiB over the transport (as
//! threads of this process, `hypercomm::run_on`); the one-way time of each
//! size is half the median round trip of five timed runs after a warm-up.
//! The line ts + tw·m is fitted by least squares on relative error (so the
//! short messages weigh as much as the long ones), and printed with the
//! measured and fitted times side by side.
//!
//! Not done yet: calibrating between machines (TCP across hosts), and a
//! model with more than two parameters (the eager/rendezvous switch at
//! 16 KiB shows as the fit's largest misses).

use hypercomm::{Error, TransportKind};
use std::time::Instant;

/// Message sizes measured, bytes.
const SIZES: [usize; 10] = [
    0,
    8,
    64,
    512,
    4 << 10,
    16 << 10,
    64 << 10,
    256 << 10,
    1 << 20,
    4 << 20,
];

/// Timed runs per size (the median counts).
const RUNS: usize = 5;

/// Round trips per timed run for `size` bytes: about 8 MiB moved, between
/// 20 and 2 000.
fn iterations(size: usize) -> usize {
    ((8 << 20) / (size + 256)).clamp(20, 2000)
}

/// One-way times per size (seconds), measured by two ranks on `kind`.
pub(crate) fn measure(kind: TransportKind) -> Result<Vec<(usize, f64)>, String> {
    let out = hypercomm::run_on(kind, 2, |comm| {
        let me = comm.rank();
        let peer = 1 - me;
        let mut buf = vec![0u8; *SIZES.last().expect("sizes")];
        let mut times = Vec::new();
        for (k, &size) in SIZES.iter().enumerate() {
            let n = iterations(size);
            let tag = k as u32;
            let mut round = |count: usize| -> Result<f64, Error> {
                let start = Instant::now();
                for _ in 0..count {
                    if me == 0 {
                        comm.send(&buf[..size], peer, tag)?;
                        comm.recv_into(&mut buf[..size], peer, tag)?;
                    } else {
                        comm.recv_into(&mut buf[..size], peer, tag)?;
                        comm.send(&buf[..size], peer, tag)?;
                    }
                }
                Ok(start.elapsed().as_secs_f64() / count as f64 / 2.0)
            };
            round(n / 4 + 1)?;
            let mut runs: Vec<f64> = (0..RUNS).map(|_| round(n)).collect::<Result<_, _>>()?;
            runs.sort_by(f64::total_cmp);
            times.push((size, runs[RUNS / 2]));
        }
        Ok::<_, Error>(times)
    })
    .map_err(|e| e.to_string())?;
    Ok(out.into_iter().next().expect("rank 0"))
}

/// ts and tw of the line through `points` (bytes, seconds), least squares
/// on relative error.
pub(crate) fn fit(points: &[(usize, f64)]) -> (f64, f64) {
    // Minimise Σ ((ts + tw·m − t)/t)²: weighted least squares, weight 1/t².
    let (mut sw, mut swm, mut swmm, mut swt, mut swmt) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(m, t) in points {
        let w = 1.0 / (t * t).max(f64::MIN_POSITIVE);
        let m = m as f64;
        sw += w;
        swm += w * m;
        swmm += w * m * m;
        swt += w * t;
        swmt += w * m * t;
    }
    let det = sw * swmm - swm * swm;
    let tw = (sw * swmt - swm * swt) / det;
    let ts = (swt - tw * swm) / sw;
    (ts.max(0.0), tw.max(0.0))
}

pub(crate) fn main(kind: TransportKind) -> Result<(), String> {
    if kind == TransportKind::Sim {
        return Err(
            "calibrate measures a real transport (thread, shm or tcp), not the simulator".into(),
        );
    }
    let points = measure(kind)?;
    let (ts, tw) = fit(&points);
    println!("calibration of the {kind} transport: 2 ranks, ping-pong, median of {RUNS} runs");
    println!(
        "{:>10}  {:>12}  {:>12}  {:>8}",
        "bytes", "one-way (s)", "fit (s)", "fit/meas"
    );
    for &(m, t) in &points {
        let f = ts + tw * m as f64;
        println!("{m:>10}  {t:>12.3e}  {f:>12.3e}  {:>8.2}", f / t);
    }
    println!("ts = {ts:.3e} s");
    println!(
        "tw = {tw:.3e} s per byte ({:.3e} s per 8-byte word)",
        tw * 8.0
    );
    println!(
        "simulate with: hypercomm sim <op> --topology full --ts {ts:.3e} --tw {:.3e}",
        tw * 8.0
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_recovers_a_line() {
        let pts: Vec<(usize, f64)> = SIZES
            .iter()
            .map(|&m| (m, 2e-6 + 1e-10 * m as f64))
            .collect();
        let (ts, tw) = fit(&pts);
        assert!(
            (ts - 2e-6).abs() < 1e-12 && (tw - 1e-10).abs() < 1e-16,
            "{ts} {tw}"
        );
    }
}
