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
//! Then the machine's cores: their number is `available_parallelism`, and
//! the time a core takes to turn from one rank to another (`switch`) is
//! fitted to a dissemination barrier of 0-byte messages run by two and by
//! four ranks per core: the simulator predicts that barrier on the
//! calibrated machine with switch 0 and 1 µs (its time grows linearly with
//! the switch), and the switch that makes it equal the measured time is
//! taken, the mean of the two oversubscriptions.
//!
//! Not done yet: calibrating between machines (TCP across hosts), and a
//! model with more than two parameters (the eager/rendezvous switch at
//! 16 KiB shows as the fit's largest misses).

use crate::out::outln;
use hypercomm::collective::registry;
use hypercomm::sim::{simulate_entry, Call, Costs, Model, Network};
use hypercomm::{Algorithm, Collective, Error, TransportKind};
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

/// Barriers per timed run of the switch measurement.
const BARRIERS: usize = 2000;

/// The time of one dissemination barrier of 0-byte messages (point to
/// point, as the schedule has them) among `n` ranks on `kind`, seconds:
/// the median of the timed runs.
fn measure_barrier(kind: TransportKind, n: usize) -> Result<f64, String> {
    let out = hypercomm::run_on(kind, n, |comm| {
        let (me, n) = (comm.rank(), comm.size());
        let mut empty = [0u8; 0];
        let round = |count: usize, empty: &mut [u8]| -> Result<f64, Error> {
            comm.barrier()?;
            let start = Instant::now();
            for _ in 0..count {
                let mut d = 1;
                while d < n {
                    comm.send::<u8>(&[], (me + d) % n, 7)?;
                    comm.recv_into(empty, (me + n - d) % n, 7)?;
                    d *= 2;
                }
            }
            Ok(start.elapsed().as_secs_f64() / count as f64)
        };
        round(BARRIERS / 4, &mut empty)?;
        let mut runs: Vec<f64> = (0..RUNS)
            .map(|_| round(BARRIERS, &mut empty))
            .collect::<Result<_, _>>()?;
        runs.sort_by(f64::total_cmp);
        Ok::<_, Error>(runs[RUNS / 2])
    })
    .map_err(|e| e.to_string())?;
    Ok(out.into_iter().next().expect("rank 0"))
}

/// The simulator's time for that barrier on `n` nodes fully connected,
/// sharing `cores` cores that switch in `switch` seconds.
pub(crate) fn predict_barrier(n: usize, cores: usize, costs: Costs, switch: f64) -> f64 {
    let model = Model::new(Network::Full, n, costs)
        .and_then(|m| m.with_cores(cores, switch))
        .expect("a valid machine");
    let entry = registry::find(Collective::Barrier, Algorithm::Dissemination).expect("registered");
    simulate_entry(&model, entry, &Call::new(n, 0).params(0), 1.0)
        .expect("a barrier")
        .time()
}

/// The switch time that makes the predicted barrier on `n` ranks take
/// `measured` seconds (0 when even no switch is too slow).
pub(crate) fn fit_switch(n: usize, cores: usize, costs: Costs, measured: f64) -> f64 {
    let unit = 1e-6;
    let t0 = predict_barrier(n, cores, costs, 0.0);
    let t1 = predict_barrier(n, cores, costs, unit);
    if t1 <= t0 {
        return 0.0;
    }
    ((measured - t0) / (t1 - t0) * unit).max(0.0)
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
    outln!("calibration of the {kind} transport: 2 ranks, ping-pong, median of {RUNS} runs")?;
    outln!(
        "{:>10}  {:>12}  {:>12}  {:>8}",
        "bytes",
        "one-way (s)",
        "fit (s)",
        "fit/meas"
    )?;
    for &(m, t) in &points {
        let f = ts + tw * m as f64;
        outln!("{m:>10}  {t:>12.3e}  {f:>12.3e}  {:>8.2}", f / t)?;
    }
    outln!("ts = {ts:.3e} s")?;
    outln!(
        "tw = {tw:.3e} s per byte ({:.3e} s per 8-byte word)",
        tw * 8.0
    )?;
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let costs = Costs {
        ts,
        tw: tw * 8.0,
        th: 0.0,
    };
    outln!("cores = {cores} (available parallelism)")?;
    outln!(
        "{:>6}  {:>14}  {:>14}  {:>12}",
        "ranks",
        "barrier (s)",
        "no switch (s)",
        "switch (s)"
    )?;
    let mut switches = Vec::new();
    for n in [2 * cores, 4 * cores] {
        let measured = measure_barrier(kind, n)?;
        let sw = fit_switch(n, cores, costs, measured);
        let t0 = predict_barrier(n, cores, costs, 0.0);
        outln!("{n:>6}  {measured:>14.3e}  {t0:>14.3e}  {sw:>12.3e}")?;
        switches.push(sw);
    }
    let switch = switches.iter().sum::<f64>() / switches.len() as f64;
    outln!("switch = {switch:.3e} s")?;
    outln!(
        "simulate with: hypercomm sim <op> --topology full --ts {ts:.3e} --tw {:.3e} --cores {cores} --switch {switch:.3e}",
        tw * 8.0
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fitted switch reproduces the barrier time it was fitted to, and
    /// a machine with a core per rank has nothing to fit.
    #[test]
    fn the_switch_fit_inverts_the_prediction() {
        let costs = Costs {
            ts: 2e-7,
            tw: 2e-10,
            th: 0.0,
        };
        for (n, cores) in [(4, 2), (8, 2), (6, 3)] {
            let want = predict_barrier(n, cores, costs, 8.5e-7);
            let sw = fit_switch(n, cores, costs, want);
            assert!((sw - 8.5e-7).abs() < 1e-12, "{n} on {cores}: {sw}");
        }
        assert_eq!(fit_switch(4, 4, costs, 1e-3), 0.0);
    }

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
