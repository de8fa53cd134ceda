//! Poisson's equation on a rectangle with the SUPRENUM grid library (seed
//! 002: the demonstration problem of section 1; SPEC section 10).
//!
//! `−Δu = f` on `[0, (NX−1)h] × [0, (NY−1)h]`, `u = g` on the boundary,
//! five-point stencil on an `NX × NY` grid of points (boundary included),
//! solved twice from `u = 0` inside: Jacobi, then red-black Gauss–Seidel,
//! each until the largest change of a sweep is below `TOL` or `MAXIT`
//! sweeps have run.
//!
//! The host makes the initial data (`f` everywhere, `g` on the boundary)
//! and scatters it; the nodes, on a process grid from `dims_create` (a 1-D
//! grid for a prime count), exchange halos — Jacobi in split phase,
//! computing the interior while the faces travel; red-black with the RED
//! and BLACK colour masks — and combine the largest change, the residual's
//! sum of squares and the number of sweeps in one mixed-type global
//! operation (GLOPS; the sum exact, see below); the solution goes back to the host
//! (gather), which prints it.
//!
//! With `--serial` the same computation runs on one array without the
//! library, and prints the same lines, bitwise equal: the per-point
//! arithmetic is the same, the largest change is a maximum (whose order
//! does not matter), and the residual's sum of squares is exact — every
//! square is added to an integer accumulator ([`ExactSum`]) whose digits
//! the global operation adds as `i64` sums, so neither the order nor the
//! partition changes a bit of it — then rounded once.
//!
//! ```text
//! jacobi: sweeps <k> change <max |Δu| of the last sweep, {:?}>
//! jacobi: solution <FNV-1a hash of the f64 bits, axis 0 fastest> centre <u at the centre, {:?}>
//! jacobi: residual <‖f + Δu‖₂ over the inner points, {:e} (every bit)>
//! redblack: … the same three lines
//! ```
//!
//! Usage: `suprenum_poisson [N] [--nx NX] [--ny NY] [--tol TOL] [--maxit K]
//! [--serial]` (N ranks as threads, default 4; NX = 65, NY = 49, TOL =
//! 1e-6, K = 300; `nx=NX` is the same as `--nx NX`), or under the launcher
//! with the same program as host:
//! `hypercomm run -n 6 --host suprenum_poisson nx=33 -- suprenum_poisson nx=33`.

use hypercomm::grid::{Colour, FieldSpec, GlobalOp, Glop, GlopsOpts, Grid, HaloOpts, Value};
use hypercomm::topology::dims_create;
use hypercomm::{Comm, Rank};
use std::error::Error;

#[derive(Clone, Copy, Debug)]
struct Params {
    nx: usize,
    ny: usize,
    tol: f64,
    maxit: usize,
}

impl Params {
    fn h(&self) -> f64 {
        1.0 / (self.nx.max(self.ny) - 1) as f64
    }
}

/// The source term.
fn f(x: f64, y: f64) -> f64 {
    1.0 + 8.0 * x * y
}

/// The boundary values.
fn g(x: f64, y: f64) -> f64 {
    x * x - 0.5 * y + 0.25
}

/// One Jacobi value at a point from its four neighbours (the same
/// expression in the serial and the parallel code).
#[inline]
fn stencil(w: f64, e: f64, s: f64, n: f64, h2f: f64) -> f64 {
    0.25 * (w + e + s + n + h2f)
}

/// The residual `f + Δu` at a point.
#[inline]
fn residual(c: f64, w: f64, e: f64, s: f64, n: f64, fv: f64, h: f64) -> f64 {
    fv + (w + e + s + n - 4.0 * c) / (h * h)
}

/// Digits of [`ExactSum`]: 32 bits each, enough for every bit position
/// of a finite `f64` (2⁻¹⁰⁷⁴ to 2¹⁰²⁴) with a word to spare.
const DIGITS: usize = 66;

/// The exact sum of non-negative `f64`s: each value, an integer times
/// 2⁻¹⁰⁷⁴, is added to 32-bit digits held in `i64`s (so 2³¹ additions fit
/// before a carry is due, in all the partial sums together). Integer addition is exact and associative, so
/// the digits of partial sums add up — here, in a global operation — to
/// the digits of the whole sum in any order; [`ExactSum::value`] rounds
/// that once, to nearest.
#[derive(Clone)]
struct ExactSum([i64; DIGITS]);

impl ExactSum {
    fn new() -> ExactSum {
        ExactSum([0; DIGITS])
    }

    /// Add `x` (finite, not negative: the squares of residuals).
    fn add(&mut self, x: f64) {
        assert!(
            x >= 0.0 && x.is_finite(),
            "ExactSum takes finite x ≥ 0, not {x}"
        );
        let bits = x.to_bits();
        let (e, frac) = ((bits >> 52) as usize, bits & ((1 << 52) - 1));
        // x = m · 2^(pos − 1074).
        let (m, pos) = if e == 0 {
            (frac, 0)
        } else {
            (frac | 1 << 52, e - 1)
        };
        let v = u128::from(m) << (pos % 32);
        for k in 0..3 {
            self.0[pos / 32 + k] += ((v >> (32 * k)) & 0xffff_ffff) as i64;
        }
    }

    /// The sum rounded to the nearest `f64` (ties to even; a subnormal
    /// sum may be rounded twice).
    fn value(&self) -> f64 {
        let mut d = self.0;
        for k in 0..DIGITS - 1 {
            d[k + 1] += d[k] >> 32;
            d[k] &= 0xffff_ffff;
        }
        let Some(top) = (0..DIGITS).rev().find(|&k| d[k] != 0) else {
            return 0.0;
        };
        // The top three digits (at least 65 bits when there are three),
        // with every lower bit folded into a sticky bit below the
        // rounding position.
        let lo = top.saturating_sub(2);
        let mut v = (lo..=top).rev().fold(0u128, |v, k| v << 32 | d[k] as u128);
        if d[..lo].iter().any(|&x| x != 0) {
            v |= 1;
        }
        // v · 2^(32·lo − 1074), scaled in two exact steps.
        let n = 32 * lo as i32 - 1074;
        let pow2 = |k: i32| f64::from_bits(((k + 1023) as u64) << 52);
        (v as f64) * pow2(n / 2) * pow2(n - n / 2)
    }

    /// The digits as entries of a global operation (sums of `i64`).
    fn glops(&self) -> impl Iterator<Item = Glop> + '_ {
        self.0
            .iter()
            .map(|&x| Glop::new(Value::I64(x), GlobalOp::Sum))
    }

    /// From the digits a global operation returned.
    fn from_glops(g: &[Glop]) -> ExactSum {
        let mut s = ExactSum::new();
        for (d, g) in s.0.iter_mut().zip(g) {
            *d = g.as_i64();
        }
        s
    }
}

/// FNV-1a over the bits of the values.
fn hash(values: impl Iterator<Item = f64>) -> u64 {
    let mut x = 0xcbf2_9ce4_8422_2325u64;
    for v in values {
        for b in v.to_bits().to_le_bytes() {
            x ^= u64::from(b);
            x = x.wrapping_mul(0x0100_0000_01b3);
        }
    }
    x
}

fn report(name: &str, sweeps: usize, change: f64, sol: &[f64], p: &Params, res2: f64) -> String {
    let centre = sol[p.nx / 2 + p.nx * (p.ny / 2)];
    format!(
        "{name}: sweeps {sweeps} change {change:?}\n{name}: solution {:#018x} centre {centre:?}\n{name}: residual {:e}",
        hash(sol.iter().copied()),
        res2.sqrt()
    )
}

// ------------------------------------------------------------------ serial

/// The reference: both methods on one array, no library.
fn serial(p: &Params) -> String {
    let (nx, ny, h) = (p.nx, p.ny, p.h());
    let at = |i: usize, j: usize| i + nx * j;
    let mut u0 = vec![0.0; nx * ny];
    let mut fv = vec![0.0; nx * ny];
    for j in 0..ny {
        for i in 0..nx {
            let (x, y) = (i as f64 * h, j as f64 * h);
            fv[at(i, j)] = f(x, y);
            if i == 0 || j == 0 || i == nx - 1 || j == ny - 1 {
                u0[at(i, j)] = g(x, y);
            }
        }
    }
    let res2 = |u: &[f64]| {
        let mut s = ExactSum::new();
        for j in 1..ny - 1 {
            for i in 1..nx - 1 {
                let r = residual(
                    u[at(i, j)],
                    u[at(i - 1, j)],
                    u[at(i + 1, j)],
                    u[at(i, j - 1)],
                    u[at(i, j + 1)],
                    fv[at(i, j)],
                    h,
                );
                s.add(r * r);
            }
        }
        s.value()
    };
    let mut out = Vec::new();
    // Jacobi.
    let (mut u, mut v) = (u0.clone(), u0.clone());
    let (mut sweeps, mut change) = (0, f64::INFINITY);
    while sweeps < p.maxit && change >= p.tol {
        change = 0.0;
        for j in 1..ny - 1 {
            for i in 1..nx - 1 {
                let new = stencil(
                    u[at(i - 1, j)],
                    u[at(i + 1, j)],
                    u[at(i, j - 1)],
                    u[at(i, j + 1)],
                    h * h * fv[at(i, j)],
                );
                change = f64::max(change, (new - u[at(i, j)]).abs());
                v[at(i, j)] = new;
            }
        }
        std::mem::swap(&mut u, &mut v);
        sweeps += 1;
    }
    out.push(report("jacobi", sweeps, change, &u, p, res2(&u)));
    // Red-black Gauss–Seidel.
    let mut u = u0;
    let (mut sweeps, mut change) = (0, f64::INFINITY);
    while sweeps < p.maxit && change >= p.tol {
        change = 0.0;
        for colour in [0, 1] {
            for j in 1..ny - 1 {
                for i in 1..nx - 1 {
                    if (i + j) % 2 != colour {
                        continue;
                    }
                    let new = stencil(
                        u[at(i - 1, j)],
                        u[at(i + 1, j)],
                        u[at(i, j - 1)],
                        u[at(i, j + 1)],
                        h * h * fv[at(i, j)],
                    );
                    change = f64::max(change, (new - u[at(i, j)]).abs());
                    u[at(i, j)] = new;
                }
            }
        }
        sweeps += 1;
    }
    out.push(report("redblack", sweeps, change, &u, p, res2(&u)));
    out.join("\n")
}

// ------------------------------------------------------------------ parallel

/// The process grid and the grid of points, for nodes and host alike.
fn grid(comm: &Comm, p: &Params) -> hypercomm::Result<Grid> {
    let cart = comm
        .cartesian(&dims_create(comm.size(), 2)?, &[false, false])?
        .expect("every rank is in the process grid");
    Grid::new(&cart, &[p.nx, p.ny], 1)
}

/// The host: initial data out, solutions in, the report.
fn host(comm: &Comm, p: &Params) -> Result<String, Box<dyn Error + Send + Sync>> {
    let grid = grid(comm, p)?;
    let h = p.h();
    let mut fv = grid.global_field::<f64>();
    let mut u0 = grid.global_field::<f64>();
    let (nx, ny) = (p.nx as isize, p.ny as isize);
    fv.fill_with(|[i, j, _]| f(i as f64 * h, j as f64 * h));
    u0.fill_with(|[i, j, _]| {
        let edge = i == 0 || j == 0 || i == nx - 1 || j == ny - 1;
        if edge {
            g(i as f64 * h, j as f64 * h)
        } else {
            0.0
        }
    });
    let mut none = grid.field::<f64>();
    grid.scatter(Some(&fv), &mut none, Rank::Host)?;
    grid.scatter(Some(&u0), &mut none, Rank::Host)?;
    let opts = GlopsOpts {
        back: true,
        host: true,
        ..GlopsOpts::default()
    };
    let mut out = Vec::new();
    for name in ["jacobi", "redblack"] {
        // The nodes' final global operation: sweeps, change, the digits of residual².
        let r = comm.gloph(&opts)?;
        let sol = grid
            .gather(&none, Rank::Host)?
            .expect("the host is the root");
        out.push(report(
            name,
            r[0].as_i64() as usize,
            r[1].as_f64(),
            sol.as_slice(),
            p,
            ExactSum::from_glops(&r[2..]).value(),
        ));
    }
    Ok(out.join("\n"))
}

/// A node: both solvers.
fn node(comm: &Comm, p: &Params) -> hypercomm::Result<()> {
    let grid = grid(comm, p)?;
    let h = p.h();
    let (nx, ny) = (p.nx as isize, p.ny as isize);
    let mut fv = grid.field::<f64>();
    let mut u0 = grid.field::<f64>();
    grid.scatter(None, &mut fv, Rank::Host)?;
    grid.scatter(None, &mut u0, Rank::Host)?;
    let spec = [FieldSpec::of::<f64>()];
    let all = grid.halo(&spec, &HaloOpts::default())?;
    let red = grid.halo(
        &spec,
        &HaloOpts {
            colour: Colour::RED,
            ..HaloOpts::default()
        },
    )?;
    let black = grid.halo(
        &spec,
        &HaloOpts {
            colour: Colour::BLACK,
            ..HaloOpts::default()
        },
    )?;
    let inner = grid.inner();
    // The points a sweep updates: inner and not on the domain's boundary.
    let lo = [inner.lo[0].max(1), inner.lo[1].max(1)];
    let hi = [inner.hi[0].min(nx - 1), inner.hi[1].min(ny - 1)];
    let opts = GlopsOpts {
        back: true,
        host: true,
        ..GlopsOpts::default()
    };
    let finish =
        |sweeps: usize, change: f64, u: &hypercomm::grid::Field<f64>| -> hypercomm::Result<()> {
            let mut s = ExactSum::new();
            for j in lo[1]..hi[1] {
                for i in lo[0]..hi[0] {
                    let r = residual(
                        u[[i, j]],
                        u[[i - 1, j]],
                        u[[i + 1, j]],
                        u[[i, j - 1]],
                        u[[i, j + 1]],
                        fv[[i, j]],
                        h,
                    );
                    s.add(r * r);
                }
            }
            let mut v = vec![
                Glop::new(Value::I32(sweeps as i32), GlobalOp::Max),
                Glop::new(Value::F64(change), GlobalOp::Max),
            ];
            v.extend(s.glops());
            comm.glops(&mut v, &opts)?;
            grid.gather(u, Rank::Host)?;
            Ok(())
        };
    // Every node's largest change, combined (a maximum: exact).
    let max_change = |c: f64| -> hypercomm::Result<f64> {
        let mut v = [Glop::new(Value::F64(c), GlobalOp::Max)];
        comm.glops(&mut v, &GlopsOpts::default())?;
        Ok(v[0].as_f64())
    };

    // Jacobi, split phase: the faces travel while the interior is computed.
    let (mut u, mut v) = (u0.clone(), u0.clone());
    let (mut sweeps, mut change) = (0, f64::INFINITY);
    while sweeps < p.maxit && change >= p.tol {
        let pending = all.start(&mut u)?;
        let mut c = 0.0;
        let mut sweep = |u: &hypercomm::grid::Field<f64>,
                         v: &mut hypercomm::grid::Field<f64>,
                         i: isize,
                         j: isize| {
            let new = stencil(
                u[[i - 1, j]],
                u[[i + 1, j]],
                u[[i, j - 1]],
                u[[i, j + 1]],
                h * h * fv[[i, j]],
            );
            c = f64::max(c, (new - u[[i, j]]).abs());
            v[[i, j]] = new;
        };
        // 1. The interior: points whose neighbours are all inner.
        for j in (lo[1]).max(inner.lo[1] + 1)..hi[1].min(inner.hi[1] - 1) {
            for i in (lo[0]).max(inner.lo[0] + 1)..hi[0].min(inner.hi[0] - 1) {
                sweep(&u, &mut v, i, j);
            }
        }
        pending.finish(&mut u)?;
        // 2. The rim, now that the halo is here.
        for j in lo[1]..hi[1] {
            for i in lo[0]..hi[0] {
                let rim = i == inner.lo[0]
                    || j == inner.lo[1]
                    || i == inner.hi[0] - 1
                    || j == inner.hi[1] - 1;
                if rim {
                    sweep(&u, &mut v, i, j);
                }
            }
        }
        std::mem::swap(&mut u, &mut v);
        change = max_change(c)?;
        sweeps += 1;
    }
    // The residual reads the halo, which the last sweep left behind.
    all.exchange(&mut u)?;
    finish(sweeps, change, &u)?;

    // Red-black Gauss–Seidel: only the colour just updated moves.
    let mut u = u0;
    all.exchange(&mut u)?;
    let (mut sweeps, mut change) = (0, f64::INFINITY);
    while sweeps < p.maxit && change >= p.tol {
        let mut c = 0.0;
        for (colour, halo) in [(0, &red), (1, &black)] {
            for j in lo[1]..hi[1] {
                for i in lo[0]..hi[0] {
                    if (i + j).rem_euclid(2) != colour {
                        continue;
                    }
                    let new = stencil(
                        u[[i - 1, j]],
                        u[[i + 1, j]],
                        u[[i, j - 1]],
                        u[[i, j + 1]],
                        h * h * fv[[i, j]],
                    );
                    c = f64::max(c, (new - u[[i, j]]).abs());
                    u[[i, j]] = new;
                }
            }
            halo.exchange(&mut u)?;
        }
        change = max_change(c)?;
        sweeps += 1;
    }
    finish(sweeps, change, &u)
}

fn parse() -> Result<(Option<usize>, Params, bool), Box<dyn Error>> {
    let mut p = Params {
        nx: 65,
        ny: 49,
        tol: 1e-6,
        maxit: 300,
    };
    let (mut n, mut serial) = (None, false);
    // `--nx 17` and `nx=17` alike (the second passes through a launcher's
    // `--host PROG ARGS --`, which takes `--…` as its own options).
    let mut args = std::env::args()
        .skip(1)
        .flat_map(|a| match a.split_once('=') {
            Some((k, v)) if !a.starts_with('-') => vec![format!("--{k}"), v.to_string()],
            _ => vec![a],
        });
    while let Some(a) = args.next() {
        let mut val = |what: &str| args.next().ok_or_else(|| format!("{what} needs a value"));
        match a.as_str() {
            "--nx" => p.nx = val("--nx")?.parse()?,
            "--ny" => p.ny = val("--ny")?.parse()?,
            "--tol" => p.tol = val("--tol")?.parse()?,
            "--maxit" => p.maxit = val("--maxit")?.parse()?,
            "--serial" => serial = true,
            s => {
                n = Some(s.parse().map_err(|e| {
                    format!("the number of ranks must be a positive integer, not {s:?}: {e}")
                })?)
            }
        }
    }
    if p.nx < 3 || p.ny < 3 {
        return Err("the grid needs at least 3 × 3 points".into());
    }
    if n == Some(0) {
        return Err("the number of ranks must be at least 1".into());
    }
    Ok((n, p, serial))
}

fn main() -> Result<(), Box<dyn Error>> {
    let (n, p, serial_run) = parse()?;
    if serial_run {
        println!("{}", serial(&p));
        return Ok(());
    }
    if hypercomm::launch::is_launched() {
        let comm = hypercomm::init()?;
        if !comm.has_host() {
            // The host reads the problem, hands out the blocks and gathers
            // the answer: this program needs one.
            hypercomm::finalize(comm)?;
            let me = std::env::args().next().unwrap_or_default();
            eprintln!(
                "this program runs with a host: hypercomm run -n N --host {me} ARGS -- {me} ARGS"
            );
            std::process::exit(2);
        }
        if comm.is_host() {
            println!("{}", host(&comm, &p).map_err(|e| e as Box<dyn Error>)?);
        } else {
            node(&comm, &p)?;
        }
        hypercomm::finalize(comm)?;
        return Ok(());
    }
    let (report, _) = hypercomm::run_with_host(n.unwrap_or(4), |c| host(c, &p), |c| node(c, &p))?;
    println!("{report}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::ExactSum;
    use proptest::prelude::*;

    fn exact(xs: &[f64]) -> f64 {
        let mut s = ExactSum::new();
        xs.iter().for_each(|&x| s.add(x));
        s.value()
    }

    #[test]
    fn rounds_the_exact_sum_once() {
        let e = f64::EPSILON; // 2⁻⁵²
                              // A naive sum loses both halves (each a tie to even); the exact one keeps them.
        assert_eq!(1.0 + e / 2.0 + e / 2.0, 1.0);
        assert_eq!(exact(&[1.0, e / 2.0, e / 2.0]), 1.0 + e);
        // A tie goes to the even neighbour; anything below it breaks the tie.
        assert_eq!(exact(&[1.0, e / 2.0]), 1.0);
        assert_eq!(exact(&[1.0, e, e / 2.0]), 1.0 + 2.0 * e);
        assert_eq!(exact(&[1.0, e / 2.0, 1e-200]), 1.0 + e);
        // The extremes of the range, and nothing.
        assert_eq!(exact(&[f64::MIN_POSITIVE / 4.0; 4]), f64::MIN_POSITIVE);
        assert_eq!(exact(&[5e-324; 3]), 1.5e-323);
        assert_eq!(exact(&[f64::MAX / 2.0, f64::MAX / 2.0]), f64::MAX);
        assert_eq!(exact(&[]), 0.0);
        assert_eq!(exact(&[0.0, 0.0]), 0.0);
    }

    proptest! {
        /// Integers below 2⁵³ in all: every naive sum is exact.
        #[test]
        fn equals_an_exact_naive_sum(xs in prop::collection::vec(0u64..1 << 40, 0..200)) {
            let naive: f64 = xs.iter().map(|&x| x as f64).sum();
            let xs: Vec<f64> = xs.iter().map(|&x| x as f64).collect();
            prop_assert_eq!(exact(&xs), naive);
        }

        /// Any order and any split into partial sums whose digits are added
        /// (as the global operation does) give the same bits.
        #[test]
        fn order_and_partition_do_not_matter(
            xs in prop::collection::vec(0.0f64..1e6, 1..100),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..5),
            seed in any::<u64>(),
        ) {
            let whole = exact(&xs);
            let mut shuffled = xs.clone();
            let mut r = seed | 1;
            for i in (1..shuffled.len()).rev() {
                r ^= r << 13; r ^= r >> 7; r ^= r << 17;
                shuffled.swap(i, (r % (i as u64 + 1)) as usize);
            }
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(shuffled.len())).collect();
            at.extend([0, shuffled.len()]);
            at.sort_unstable();
            let mut total = ExactSum::new();
            for w in at.windows(2) {
                let mut part = ExactSum::new();
                shuffled[w[0]..w[1]].iter().for_each(|&x| part.add(x));
                for (t, p) in total.0.iter_mut().zip(part.0) {
                    *t += p;
                }
            }
            prop_assert_eq!(total.value().to_bits(), whole.to_bits());
            // And it is within half an ulp-ish of a naive sum.
            let naive: f64 = xs.iter().sum();
            prop_assert!((whole - naive).abs() <= 1e-12 * naive.max(1.0));
        }
    }
}
