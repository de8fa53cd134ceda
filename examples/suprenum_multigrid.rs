//! A multigrid V-cycle with the SUPRENUM grid library whose coarse levels
//! are agglomerated onto fewer ranks (seed 002, sections 1 and 3.6: the
//! demonstration program and AGGLM2; SPEC section 10).
//!
//! `−Δu = f` on `[0, (NX−1)h] × [0, (NY−1)h]` with `u = g` on the boundary,
//! `NX = 2^a + 1`, `NY = 2^b + 1` points. Each V-cycle: two red-black
//! Gauss–Seidel sweeps, the residual, full-weighting restriction to the
//! next coarser grid (every second point), the cycle there on the
//! correction, bilinear prolongation added back, two more sweeps; on the
//! coarsest grid (3 points across one side) 20 sweeps.
//!
//! Level 0 is spread over the ranks (`dims_create`); a coarse level keeps
//! the process grid of the level above, each rank owning the coarse points
//! whose fine images it owns (`coarsen_splits`), so restriction and
//! prolongation need a halo of one. When a coarse level's blocks would be
//! thinner than 4 points across, it is agglomerated first: the ranks along
//! that axis merge by the smallest prime factor of their count, repeatedly
//! (so a 3 × 3 grid of ranks goes to 3 × 1 and then 1 × 1); the merged
//! ranks wait, inactive, until the correction comes back up.
//!
//! The host scatters `f` and the boundary values, gets the largest
//! residual after each cycle by a global operation (a maximum: exact) and
//! gathers the solution. `--serial` runs the same V-cycles on plain arrays
//! without the library and prints the same lines; they are equal to the
//! last bit (every point is computed by the same expression, and red-black
//! updates of one colour do not depend on each other's order).
//!
//! ```text
//! cycle <k>: residual <max |f + Δu| over the inner points, {:?}>
//! solution <FNV-1a hash of the f64 bits, axis 0 fastest> centre <{:?}>
//! ```
//!
//! Usage: `suprenum_multigrid [N] [--nx NX] [--ny NY] [--cycles K]
//! [--serial] [--levels]` (N ranks as threads, default 4; NX = 65,
//! NY = 33, K = 6; `--levels` also prints, per level, the process grid it
//! runs on; `nx=NX` is the same as `--nx NX`), or
//! `hypercomm run -n 6 --host suprenum_multigrid -- suprenum_multigrid`.

use hypercomm::grid::{
    coarsen_splits, Agglomeration, Colour, Field, FieldSpec, GlobalOp, Glop, GlopsOpts, Grid, Halo,
    HaloOpts, Value,
};
use hypercomm::topology::dims_create;
use hypercomm::{Comm, Rank};
use std::error::Error;

const PRE: usize = 2;
const POST: usize = 2;
const COARSEST: usize = 20;
/// Agglomerate a level whose blocks are thinner than this.
const THIN: usize = 4;

#[derive(Clone, Copy, Debug)]
struct Params {
    nx: usize,
    ny: usize,
    cycles: usize,
    levels: bool,
}

fn f(x: f64, y: f64) -> f64 {
    1.0 + 8.0 * x * y
}

fn g(x: f64, y: f64) -> f64 {
    x * x - 0.5 * y + 0.25
}

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

// The per-point formulas, shared by the serial and the parallel code.

#[inline]
fn relax(w: f64, e: f64, s: f64, n: f64, fv: f64, h: f64) -> f64 {
    0.25 * (w + e + s + n + h * h * fv)
}

#[inline]
fn resid(c: f64, w: f64, e: f64, s: f64, n: f64, fv: f64, h: f64) -> f64 {
    fv + (w + e + s + n - 4.0 * c) / (h * h)
}

/// Full weighting from the 3 × 3 fine points around a coarse point.
#[inline]
fn weigh(r: impl Fn(isize, isize) -> f64) -> f64 {
    (4.0 * r(0, 0)
        + 2.0 * (r(-1, 0) + r(1, 0) + r(0, -1) + r(0, 1))
        + (r(-1, -1) + r(1, -1) + r(-1, 1) + r(1, 1)))
        / 16.0
}

/// Bilinear interpolation at fine point (i, j) from the coarse values.
#[inline]
fn interpolate(i: isize, j: isize, uc: impl Fn(isize, isize) -> f64) -> f64 {
    let (a, b) = (i.div_euclid(2), j.div_euclid(2));
    match (i % 2 != 0, j % 2 != 0) {
        (false, false) => uc(a, b),
        (true, false) => 0.5 * (uc(a, b) + uc(a + 1, b)),
        (false, true) => 0.5 * (uc(a, b) + uc(a, b + 1)),
        (true, true) => 0.25 * (uc(a, b) + uc(a + 1, b) + uc(a, b + 1) + uc(a + 1, b + 1)),
    }
}

fn levels_of(p: &Params) -> Vec<(usize, usize)> {
    let mut v = vec![(p.nx, p.ny)];
    while v.last().is_some_and(|&(x, y)| x > 3 && y > 3) {
        let (x, y) = *v.last().unwrap();
        v.push((x.div_ceil(2), y.div_ceil(2)));
    }
    v
}

fn report(lines: &mut Vec<String>, sol: &[f64], p: &Params) {
    let centre = sol[p.nx / 2 + p.nx * (p.ny / 2)];
    lines.push(format!(
        "solution {:#018x} centre {centre:?}",
        hash(sol.iter().copied())
    ));
}

// ------------------------------------------------------------------ serial

struct SLevel {
    nx: usize,
    ny: usize,
    h: f64,
    u: Vec<f64>,
    f: Vec<f64>,
    r: Vec<f64>,
}

impl SLevel {
    fn at(&self, i: isize, j: isize) -> usize {
        i as usize + self.nx * j as usize
    }
    fn smooth(&mut self, sweeps: usize) {
        for _ in 0..sweeps {
            for colour in [0, 1] {
                for j in 1..self.ny as isize - 1 {
                    for i in 1..self.nx as isize - 1 {
                        if (i + j) % 2 != colour {
                            continue;
                        }
                        let u = &self.u;
                        let new = relax(
                            u[self.at(i - 1, j)],
                            u[self.at(i + 1, j)],
                            u[self.at(i, j - 1)],
                            u[self.at(i, j + 1)],
                            self.f[self.at(i, j)],
                            self.h,
                        );
                        let k = self.at(i, j);
                        self.u[k] = new;
                    }
                }
            }
        }
    }
    fn residual(&mut self) -> f64 {
        let mut m = 0.0;
        for j in 1..self.ny as isize - 1 {
            for i in 1..self.nx as isize - 1 {
                let u = &self.u;
                let r = resid(
                    u[self.at(i, j)],
                    u[self.at(i - 1, j)],
                    u[self.at(i + 1, j)],
                    u[self.at(i, j - 1)],
                    u[self.at(i, j + 1)],
                    self.f[self.at(i, j)],
                    self.h,
                );
                let k = self.at(i, j);
                self.r[k] = r;
                m = f64::max(m, r.abs());
            }
        }
        m
    }
}

fn serial_cycle(levels: &mut [SLevel], l: usize) {
    if l + 1 == levels.len() {
        levels[l].smooth(COARSEST);
        return;
    }
    levels[l].smooth(PRE);
    levels[l].residual();
    let (fine, coarse) = levels.split_at_mut(l + 1);
    let (fl, cl) = (&fine[l], &mut coarse[0]);
    cl.u.fill(0.0);
    for j in 1..cl.ny as isize - 1 {
        for i in 1..cl.nx as isize - 1 {
            let k = cl.at(i, j);
            cl.f[k] = weigh(|di, dj| fl.r[fl.at(2 * i + di, 2 * j + dj)]);
        }
    }
    serial_cycle(levels, l + 1);
    let (fine, coarse) = levels.split_at_mut(l + 1);
    let (fl, cl) = (&mut fine[l], &coarse[0]);
    for j in 1..fl.ny as isize - 1 {
        for i in 1..fl.nx as isize - 1 {
            let k = fl.at(i, j);
            fl.u[k] += interpolate(i, j, |a, b| cl.u[cl.at(a, b)]);
        }
    }
    levels[l].smooth(POST);
}

fn serial(p: &Params) -> String {
    let h0 = 1.0 / (p.nx.max(p.ny) - 1) as f64;
    let mut levels: Vec<SLevel> = levels_of(p)
        .into_iter()
        .enumerate()
        .map(|(l, (nx, ny))| SLevel {
            nx,
            ny,
            h: h0 * (1 << l) as f64,
            u: vec![0.0; nx * ny],
            f: vec![0.0; nx * ny],
            r: vec![0.0; nx * ny],
        })
        .collect();
    let top = &mut levels[0];
    for j in 0..p.ny {
        for i in 0..p.nx {
            let (x, y) = (i as f64 * h0, j as f64 * h0);
            top.f[i + p.nx * j] = f(x, y);
            if i == 0 || j == 0 || i == p.nx - 1 || j == p.ny - 1 {
                top.u[i + p.nx * j] = g(x, y);
            }
        }
    }
    let mut lines = Vec::new();
    for k in 1..=p.cycles {
        serial_cycle(&mut levels, 0);
        lines.push(format!("cycle {k}: residual {:?}", levels[0].residual()));
    }
    report(&mut lines, &levels[0].u, p);
    lines.join("\n")
}

// ------------------------------------------------------------------ parallel

/// One level on the ranks active there.
struct Level {
    grid: Grid,
    all: Halo,
    red: Halo,
    black: Halo,
    n: [isize; 2],
    h: f64,
    u: Field<f64>,
    f: Field<f64>,
    r: Field<f64>,
}

/// From a level to the next coarser one: the coarse points on this level's
/// process grid, and the agglomeration onto the next level's, if any.
struct Link {
    /// Coarse points on this level's process grid (when agglomerated).
    pre: Option<(Grid, Halo, Field<f64>, Field<f64>)>,
    agg: Option<Agglomeration>,
}

fn level(grid: Grid, n: [isize; 2], h: f64) -> hypercomm::Result<Level> {
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
    Ok(Level {
        u: grid.field(),
        f: grid.field(),
        r: grid.field(),
        grid,
        all,
        red,
        black,
        n,
        h,
    })
}

/// The points a level updates: inner and not on the domain's boundary.
fn updated(grid: &Grid, n: [isize; 2]) -> ([isize; 2], [isize; 2]) {
    let inner = grid.inner();
    (
        [inner.lo[0].max(1), inner.lo[1].max(1)],
        [inner.hi[0].min(n[0] - 1), inner.hi[1].min(n[1] - 1)],
    )
}

impl Level {
    fn smooth(&mut self, sweeps: usize) -> hypercomm::Result<()> {
        let (lo, hi) = updated(&self.grid, self.n);
        for _ in 0..sweeps {
            for (colour, halo) in [(0, &self.red), (1, &self.black)] {
                for j in lo[1]..hi[1] {
                    for i in lo[0]..hi[0] {
                        if (i + j).rem_euclid(2) != colour {
                            continue;
                        }
                        let u = &self.u;
                        let new = relax(
                            u[[i - 1, j]],
                            u[[i + 1, j]],
                            u[[i, j - 1]],
                            u[[i, j + 1]],
                            self.f[[i, j]],
                            self.h,
                        );
                        self.u[[i, j]] = new;
                    }
                }
                halo.exchange(&mut self.u)?;
            }
        }
        Ok(())
    }

    /// The residual into `r` (halo exchanged); the largest here.
    fn residual(&mut self) -> hypercomm::Result<f64> {
        let (lo, hi) = updated(&self.grid, self.n);
        let mut m = 0.0;
        for j in lo[1]..hi[1] {
            for i in lo[0]..hi[0] {
                let u = &self.u;
                let r = resid(
                    u[[i, j]],
                    u[[i - 1, j]],
                    u[[i + 1, j]],
                    u[[i, j - 1]],
                    u[[i, j + 1]],
                    self.f[[i, j]],
                    self.h,
                );
                self.r[[i, j]] = r;
                m = f64::max(m, r.abs());
            }
        }
        self.all.exchange(&mut self.r)?;
        Ok(m)
    }
}

fn smallest_prime(n: usize) -> usize {
    (2..=n).find(|d| n.is_multiple_of(*d)).unwrap_or(1)
}

/// Build this rank's levels and links (collective over each level's ranks).
fn build(
    comm: &Comm,
    p: &Params,
    top: Grid,
    log: &mut Vec<String>,
) -> hypercomm::Result<(Vec<Level>, Vec<Link>)> {
    let sizes = levels_of(p);
    let h0 = 1.0 / (p.nx.max(p.ny) - 1) as f64;
    let mut levels = vec![level(top, [p.nx as isize, p.ny as isize], h0)?];
    let mut links = Vec::new();
    for (l, &(nx, ny)) in sizes.iter().enumerate().skip(1) {
        let fine = &levels[l - 1].grid;
        let splits: Vec<Vec<usize>> = (0..2).map(|a| coarsen_splits(fine.splits(a))).collect();
        // Coarse levels are the nodes' own: a process grid without the host.
        let cart = match fine.cart().comm().has_host() {
            true => fine.cart().sub(&[true, true])?,
            false => fine.cart().clone(),
        };
        let pre = Grid::with_splits(&cart, &splits, &[[1, 1], [1, 1]])?;
        let dims = fine.cart().dims().to_vec();
        let factors: Vec<usize> = (0..2)
            .map(|a| {
                let thinnest = splits[a].windows(2).map(|w| w[1] - w[0]).min().unwrap_or(0);
                if dims[a] > 1 && thinnest < THIN {
                    smallest_prime(dims[a])
                } else {
                    1
                }
            })
            .collect();
        let n = [nx as isize, ny as isize];
        let h = h0 * (1 << l) as f64;
        if factors.iter().all(|&f| f == 1) {
            links.push(Link {
                pre: None,
                agg: None,
            });
            levels.push(level(pre, n, h)?);
        } else {
            let agg = pre.agglomerate(&factors)?;
            let next = match agg.coarse() {
                Some(c) => Some(Grid::with_splits(
                    c.cart(),
                    &(0..2).map(|a| c.splits(a).to_vec()).collect::<Vec<_>>(),
                    &[[1, 1], [1, 1]],
                )?),
                None => None,
            };
            let all = pre.halo(&[FieldSpec::of::<f64>()], &HaloOpts::default())?;
            let (fc, uc) = (pre.field(), pre.field());
            links.push(Link {
                pre: Some((pre, all, fc, uc)),
                agg: Some(agg),
            });
            match next {
                Some(g) => levels.push(level(g, n, h)?),
                None => break, // inactive from here down
            }
        }
        if p.levels && comm.rank() == 0 {
            log.push(format!(
                "level {l}: {nx} x {ny} points on {:?} ranks",
                levels[l].grid.cart().dims()
            ));
        }
    }
    Ok((levels, links))
}

fn restrict_into(fl: &Level, target: &mut Field<f64>, grid: &Grid, n: [isize; 2]) {
    let (lo, hi) = updated(grid, n);
    target.fill(0.0);
    for j in lo[1]..hi[1] {
        for i in lo[0]..hi[0] {
            target[[i, j]] = weigh(|di, dj| fl.r[[2 * i + di, 2 * j + dj]]);
        }
    }
}

fn prolong_add(fl: &mut Level, uc: &Field<f64>) {
    let (lo, hi) = updated(&fl.grid, fl.n);
    for j in lo[1]..hi[1] {
        for i in lo[0]..hi[0] {
            fl.u[[i, j]] += interpolate(i, j, |a, b| uc[[a, b]]);
        }
    }
}

/// The V-cycle from level `l` down, on this rank's part.
fn cycle(levels: &mut [Level], links: &mut [Link], l: usize) -> hypercomm::Result<()> {
    if l == links.len() {
        // The coarsest level (this rank has no link below it).
        return levels[l].smooth(COARSEST);
    }
    levels[l].smooth(PRE)?;
    levels[l].residual()?;
    if links[l].agg.is_none() {
        // The coarse level lives on the same ranks.
        let (fine, coarse) = levels.split_at_mut(l + 1);
        let cl = &mut coarse[0];
        restrict_into(&fine[l], &mut cl.f, &cl.grid, cl.n);
        cl.u.fill(0.0);
        cycle(levels, links, l + 1)?;
        let (fine, coarse) = levels.split_at_mut(l + 1);
        let cl = &mut coarse[0];
        cl.all.exchange(&mut cl.u)?;
        prolong_add(&mut fine[l], &cl.u);
    } else {
        // 1. Restrict on this level's ranks, agglomerate the result.
        let link = &mut links[l];
        let (pre, _, fc, _) = link.pre.as_mut().expect("an agglomerated link");
        let n = [pre.global()[0] as isize, pre.global()[1] as isize];
        restrict_into(&levels[l], fc, pre, n);
        let down = link.agg.as_ref().expect("an agglomeration").gather(fc)?;
        // 2. The active ranks cycle on the coarse level.
        let up = match down {
            Some(fa) => {
                let cl = &mut levels[l + 1];
                cl.f.as_mut_slice().copy_from_slice(fa.as_slice());
                cl.u.fill(0.0);
                cycle(levels, links, l + 1)?;
                Some(levels[l + 1].u.clone())
            }
            None => None,
        };
        // 3. The correction comes back to every rank of this level.
        let link = &mut links[l];
        let (_, all, _, uc) = link.pre.as_mut().expect("an agglomerated link");
        link.agg
            .as_ref()
            .expect("an agglomeration")
            .scatter(up.as_ref(), uc)?;
        all.exchange(&mut *uc)?;
        prolong_add(&mut levels[l], uc);
    }
    levels[l].all.exchange(&mut levels[l].u)?;
    levels[l].smooth(POST)
}

fn grid(comm: &Comm, p: &Params) -> hypercomm::Result<Grid> {
    let cart = comm
        .cartesian(&dims_create(comm.size(), 2)?, &[false, false])?
        .expect("every rank is in the process grid");
    Grid::new(&cart, &[p.nx, p.ny], 1)
}

fn host(comm: &Comm, p: &Params) -> Result<String, Box<dyn Error + Send + Sync>> {
    let grid = grid(comm, p)?;
    let h0 = 1.0 / (p.nx.max(p.ny) - 1) as f64;
    let (nx, ny) = (p.nx as isize, p.ny as isize);
    let mut fv = grid.global_field::<f64>();
    let mut u0 = grid.global_field::<f64>();
    fv.fill_with(|[i, j, _]| f(i as f64 * h0, j as f64 * h0));
    u0.fill_with(|[i, j, _]| {
        if i == 0 || j == 0 || i == nx - 1 || j == ny - 1 {
            g(i as f64 * h0, j as f64 * h0)
        } else {
            0.0
        }
    });
    let mut none = grid.field::<f64>();
    grid.scatter(Some(&fv), &mut none, Rank::Host)?;
    grid.scatter(Some(&u0), &mut none, Rank::Host)?;
    let opts = GlopsOpts {
        back: false,
        host: true,
        ..GlopsOpts::default()
    };
    let mut lines = Vec::new();
    for k in 1..=p.cycles {
        let r = comm.gloph(&opts)?;
        lines.push(format!("cycle {k}: residual {:?}", r[0].as_f64()));
    }
    let sol = grid
        .gather(&none, Rank::Host)?
        .expect("the host is the root");
    report(&mut lines, sol.as_slice(), p);
    Ok(lines.join("\n"))
}

fn node(comm: &Comm, p: &Params) -> hypercomm::Result<Vec<String>> {
    let top = grid(comm, p)?;
    let mut log = Vec::new();
    let mut fv = top.field::<f64>();
    let mut u0 = top.field::<f64>();
    top.scatter(None, &mut fv, Rank::Host)?;
    top.scatter(None, &mut u0, Rank::Host)?;
    let (mut levels, mut links) = build(comm, p, top, &mut log)?;
    {
        let l0 = &mut levels[0];
        l0.f = fv;
        l0.u = u0;
        l0.all.exchange(&mut l0.u)?;
    }
    let opts = GlopsOpts {
        back: false,
        host: true,
        ..GlopsOpts::default()
    };
    for _ in 0..p.cycles {
        cycle(&mut levels, &mut links, 0)?;
        let m = levels[0].residual()?;
        comm.glops(&mut [Glop::new(Value::F64(m), GlobalOp::Max)], &opts)?;
    }
    levels[0].grid.gather(&levels[0].u, Rank::Host)?;
    Ok(log)
}

fn parse() -> Result<(Option<usize>, Params, bool), Box<dyn Error>> {
    let mut p = Params {
        nx: 65,
        ny: 33,
        cycles: 6,
        levels: false,
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
            "--cycles" => p.cycles = val("--cycles")?.parse()?,
            "--serial" => serial = true,
            "--levels" => p.levels = true,
            s => {
                n = Some(s.parse().map_err(|e| {
                    format!("the number of ranks must be a positive integer, not {s:?}: {e}")
                })?)
            }
        }
    }
    for (what, v) in [("NX", p.nx), ("NY", p.ny)] {
        if v < 3 || !(v - 1).is_power_of_two() {
            return Err(
                format!("{what} = {v}: the grid needs 2^k + 1 points per side (k ≥ 1)").into(),
            );
        }
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
            for line in node(&comm, &p)? {
                eprintln!("{line}");
            }
        }
        hypercomm::finalize(comm)?;
        return Ok(());
    }
    let (report, logs) =
        hypercomm::run_with_host(n.unwrap_or(4), |c| host(c, &p), |c| node(c, &p))?;
    for line in &logs[0] {
        eprintln!("{line}");
    }
    println!("{report}");
    Ok(())
}
