//! The grid suite: process topologies and the SUPRENUM grid layer against
//! serial references, written once as functions generic over the
//! [`Launcher`] and instantiated per transport with [`grids_suite!`], as
//! the collectives suite is.
//!
//! The halo tests fill a *global* array with a known function of the
//! global indices; every rank sets its inner points from it and its halo
//! to a sentinel, exchanges, and compares every stored point with the
//! expectation worked out here from the definition (which halo cells an
//! exchange with these options fills, see `hypercomm::grid::halo`): a
//! filled halo cell holds the global array's value at the point it mirrors,
//! every other cell is untouched. Ranks return the first few differences as
//! text, so results cross process boundaries as plain data.

// Serial references index by axis on purpose.
#![allow(clippy::needless_range_loop)]

use super::{launch, Launcher};
use hypercomm::grid::{
    Colour, Directions, Field, FieldSpec, GlobalOp, Glop, GlopsOpts, Grid, HaloOpts, InPlace,
    Location, PayloadOrder, Place, Pos, Region, Side, Value,
};
use hypercomm::topology::{dims_create, Cart, CartOpts, Embedding};
use hypercomm::{Comm, Error, Rank};

/// Instantiate the grid suite for a launcher type.
#[allow(unused_macros)]
macro_rules! grids_suite {
    ($launcher:ty) => {
        $crate::common::grids::grids_suite!(@tests $launcher;
            cart_coordinates_shifts_and_subgrids,
            cart_hypercube_embedding_keeps_neighbours_adjacent,
            cart_arguments_that_differ_fail_on_every_rank,
            halo_2d_every_mask_width_and_periodicity,
            halo_3d_all_fifteen_masks,
            halo_directions_with_reversal_and_corners,
            halo_staggered_signed_width,
            halo_split_phase_takes_values_at_start,
            halo_plan_reused_while_an_exchange_is_pending,
            halo_pending_exchanges_of_one_plan_finish_in_any_order,
            halo_several_fields_of_mixed_types,
            halo_contiguous_faces_move_straight_between_arrays,
            halo_in_place_between_threads,
            halo_masks_that_empty_some_ranks_faces,
            grid_bad_input_fails_on_every_rank,
            subarrays_to_coordinates_and_the_host,
            gather_and_scatter_whole_fields,
            glops_mixed_types_to_nodes_and_host,
            agglomeration_round_trip_is_the_identity,
            agglomeration_bad_factor_fails_on_every_rank
        );
    };
    (@tests $launcher:ty; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                <$launcher as $crate::common::Launcher>::test(
                    stringify!($name),
                    $crate::common::grids::$name::<$launcher>,
                );
            }
        )*
    };
}
#[allow(unused_imports)]
pub(crate) use grids_suite;

/// The value of the global array at domain point `p` (exact in f64).
fn value(p: [isize; 3]) -> f64 {
    (p[0] + 100 * p[1] + 10_000 * p[2]) as f64 + 0.5
}

const SENTINEL: f64 = -1.0e9;

/// Whether this rank has a neighbour on side `s` of axis `a`.
fn has_neighbour(cart: &Cart, a: usize, s: Side) -> bool {
    if a >= cart.ndims() {
        return false;
    }
    cart.periodic()[a]
        || match s {
            Side::Lower => cart.coords()[a] > 0,
            Side::Upper => cart.coords()[a] + 1 < cart.dims()[a],
        }
}

/// What an exchange should leave at stored point `p` of a field at
/// `loc` on this rank: `Some(v)` for a value, `None` for "untouched".
fn expected(grid: &Grid, loc: Location, opts: &HaloOpts, p: [isize; 3]) -> Option<f64> {
    let inner = grid.inner();
    let g = grid.global();
    if inner.contains(p) {
        return Some(value(p));
    }
    let w = opts.width.unsigned_abs() as isize;
    let mut out_axes = 0;
    let mut wrapped = p;
    for a in 0..3 {
        let (lo, hi) = (inner.lo[a], inner.hi[a]);
        let (side, d) = if p[a] < lo {
            (Side::Lower, lo - p[a])
        } else if p[a] >= hi {
            (Side::Upper, p[a] - hi + 1)
        } else {
            continue;
        };
        out_axes += 1;
        let border = matches!(
            (loc.0[a], side),
            (Pos::Upper, Side::Lower) | (Pos::Lower, Side::Upper)
        );
        if d > w
            || (opts.width < 0 && d == 1 && border)
            || !opts.directions.receives_from(a, side)
            || !has_neighbour(grid.cart(), a, side)
        {
            return None;
        }
        wrapped[a] = p[a].rem_euclid(g[a] as isize);
    }
    if out_axes > 1 && !opts.corners {
        return None;
    }
    opts.colour.selects(wrapped).then(|| value(wrapped))
}

/// Fill a field: inner from the global array, halo with the sentinel.
fn prepared(grid: &Grid) -> Field<f64> {
    scaled(grid, 1.0)
}

/// Differences between `u` and the expectation, as text (at most 3).
fn differences(
    grid: &Grid,
    u: &Field<f64>,
    loc: Location,
    opts: &HaloOpts,
    what: &str,
) -> Vec<String> {
    differences_of(grid, u, 1.0, loc, opts, what)
}

/// Every 2-D process grid shape of up to `max` ranks worth testing, with
/// every periodicity.
fn shapes_2d(max: usize) -> Vec<(Vec<usize>, Vec<bool>)> {
    let mut out = Vec::new();
    for d in [[1, 1], [2, 1], [1, 2], [2, 2], [3, 2], [1, 3], [3, 1]] {
        if d[0] * d[1] > max {
            continue;
        }
        for per in [[false, false], [true, false], [false, true], [true, true]] {
            out.push((d.to_vec(), per.to_vec()));
        }
    }
    out
}

/// Run `body` on a Cartesian grid of `dims` × `periodic` over exactly
/// that many ranks; every rank's differences, concatenated.
fn on_grid<L: Launcher>(
    dims: &[usize],
    periodic: &[bool],
    body: impl Fn(&Comm, &Cart) -> hypercomm::Result<Vec<String>> + Sync,
) -> Vec<String> {
    let n: usize = dims.iter().product();
    launch::<L, _, _>(n, |comm| {
        let cart = comm
            .cartesian(dims, periodic)?
            .expect("every rank is in the grid");
        body(comm, &cart)
    })
    .unwrap_or_else(|e| panic!("grid {dims:?} periodic {periodic:?}: {e}"))
    .concat()
}

pub(crate) fn cart_coordinates_shifts_and_subgrids<L: Launcher>() {
    for (dims, per) in shapes_2d(6).into_iter().chain([
        (vec![2, 2, 2], vec![false, true, false]),
        (vec![5], vec![true]),
        (vec![1, 3, 2], vec![true, true, true]),
    ]) {
        let bad = on_grid::<L>(&dims, &per, |_, cart| {
            let mut bad = Vec::new();
            let me = cart.rank();
            let c = cart.coords().to_vec();
            // Axis 0 fastest.
            let mut lin = 0;
            for a in (0..dims.len()).rev() {
                lin = lin * dims[a] + c[a];
            }
            if lin != me {
                bad.push(format!("rank {me} has coords {c:?}"));
            }
            for a in 0..dims.len() {
                for disp in [-2isize, -1, 1, 2] {
                    let t = c[a] as isize + disp;
                    let want = if per[a] {
                        let mut cc = c.clone();
                        cc[a] = t.rem_euclid(dims[a] as isize) as usize;
                        cart.rank_of(&cc.iter().map(|&x| x as isize).collect::<Vec<_>>())
                    } else if t >= 0 && t < dims[a] as isize {
                        Some(me - c[a] * stride(&dims, a) + t as usize * stride(&dims, a))
                    } else {
                        None
                    };
                    if cart.neighbour(a, disp) != want {
                        bad.push(format!(
                            "rank {me} axis {a} disp {disp}: {:?} not {want:?}",
                            cart.neighbour(a, disp)
                        ));
                    }
                    let s = cart.shift(a, disp);
                    if s.dest != want || s.source != cart.neighbour(a, -disp) {
                        bad.push(format!("rank {me} shift({a},{disp}) = {s:?}"));
                    }
                }
                // The line along a: ranks follow coordinate a.
                let line = cart.line(a)?;
                if line.size() != dims[a] || line.rank() != c[a] || line.coords() != [c[a]] {
                    bad.push(format!(
                        "rank {me} line({a}): size {} rank {}",
                        line.size(),
                        line.rank()
                    ));
                }
                // A value sent along the line reaches the next coordinate.
                let next = line.neighbour(0, 1);
                let prev = line.neighbour(0, -1);
                if let Some(to) = next {
                    line.comm().send(&[c[a] as u64], to, 5)?;
                }
                if let Some(from) = prev {
                    let (v, _) = line.comm().recv::<u64>(from, 5)?;
                    let want = (c[a] as isize - 1).rem_euclid(dims[a] as isize) as u64;
                    if v != want {
                        bad.push(format!(
                            "rank {me} line({a}) got {v} from the previous coordinate, not {want}"
                        ));
                    }
                }
            }
            let t = cart.tree();
            if t.father != (me > 0).then(|| (me - 1) / 2)
                || t.sons.iter().any(|&s| (s - 1) / 2 != me)
            {
                bad.push(format!("rank {me} tree {t:?}"));
            }
            if dims.len() == 3 {
                let p = cart.plane(0)?;
                if p.size() != dims[1] * dims[2] || p.coords() != [c[1], c[2]] {
                    bad.push(format!("rank {me} plane(0): {:?}", p.coords()));
                }
            }
            Ok(bad)
        });
        assert!(bad.is_empty(), "{dims:?} {per:?}: {bad:?}");
    }
    // Ranks beyond the grid get none; dims_create balances.
    let got = launch::<L, _, _>(5, |comm| {
        Ok(comm
            .cartesian(&dims_create(4, 2)?, &[false, false])?
            .map(|c| c.coords().to_vec()))
    })
    .unwrap();
    assert_eq!(
        got,
        vec![
            Some(vec![0, 0]),
            Some(vec![1, 0]),
            Some(vec![0, 1]),
            Some(vec![1, 1]),
            None
        ]
    );
}

fn stride(dims: &[usize], a: usize) -> usize {
    dims[..a].iter().product()
}

pub(crate) fn cart_hypercube_embedding_keeps_neighbours_adjacent<L: Launcher>() {
    for (dims, per, n) in [
        (vec![4, 2], vec![true, true], 8usize),
        (vec![3, 2], vec![false, false], 8),
        (vec![2, 2, 2], vec![true, false, true], 8),
    ] {
        let out = launch::<L, _, _>(n, |comm| {
            let opts = CartOpts {
                embedding: Embedding::Hypercube,
            };
            let Some(cart) = comm.cartesian_with(&dims, &per, &opts)? else {
                return Ok(Vec::new());
            };
            let mut bad = Vec::new();
            let me = cart.parent_rank_of(cart.rank()).unwrap();
            for a in 0..dims.len() {
                for d in [-1, 1] {
                    let Some(nb) = cart.neighbour(a, d) else {
                        continue;
                    };
                    let p = cart.parent_rank_of(nb).unwrap();
                    let wraps = !(0..dims[a] as isize).contains(&(cart.coords()[a] as isize + d));
                    if (!wraps || dims[a].is_power_of_two()) && (p ^ me).count_ones() > 1 {
                        bad.push(format!(
                            "{me} and {p} are grid neighbours on axis {a} but not cube neighbours"
                        ));
                    }
                }
            }
            // The grid really runs on those parent ranks.
            let word = [comm.rank() as u64];
            let mut got = [0u64];
            cart.comm()
                .send_recv(&word, cart.rank(), 1, &mut got, cart.rank(), 1)?;
            if got[0] != me as u64 {
                bad.push(format!(
                    "grid rank {} runs on parent {} not {me}",
                    cart.rank(),
                    got[0]
                ));
            }
            Ok(bad)
        })
        .unwrap()
        .concat();
        assert!(out.is_empty(), "{out:?}");
    }
}

pub(crate) fn cart_arguments_that_differ_fail_on_every_rank<L: Launcher>() {
    let r = launch::<L, _, _>(4, |comm| {
        let dims = if comm.rank() == 2 {
            vec![4, 1]
        } else {
            vec![2, 2]
        };
        Ok(comm
            .cartesian(&dims, &[false, false])
            .unwrap_err()
            .to_string())
    })
    .unwrap();
    for m in &r {
        assert!(m.contains("rank 2 has dims [4, 1]"), "{m}");
    }
    let r = launch::<L, _, _>(3, |comm| {
        Ok(comm
            .cartesian(&[2, 2], &[false, false])
            .unwrap_err()
            .to_string())
    })
    .unwrap();
    assert!(
        r.iter()
            .all(|m| m.contains("needs 4 ranks but the communicator has 3")),
        "{r:?}"
    );
}

/// One exchange with `opts` on a field at `loc`, blocking or split phase;
/// the differences from the expectation.
fn check_exchange(
    grid: &Grid,
    loc: Location,
    opts: &HaloOpts,
    split: bool,
    what: &str,
) -> hypercomm::Result<Vec<String>> {
    let halo = grid.halo(&[FieldSpec::of::<f64>().at(loc)], opts)?;
    let mut u = prepared(grid);
    if split {
        let p = halo.start(&mut u)?;
        p.finish(&mut u)?;
    } else {
        halo.exchange(&mut u)?;
    }
    Ok(differences(grid, &u, loc, opts, what))
}

pub(crate) fn halo_2d_every_mask_width_and_periodicity<L: Launcher>() {
    // Every 2-D shape and periodicity, and 1-D process grids under a 2-D
    // grid of points (the second axis is then whole on every rank).
    let one_d = [
        (vec![3], vec![true]),
        (vec![2], vec![false]),
        (vec![1], vec![true]),
    ];
    for (dims, per) in shapes_2d(6).into_iter().chain(one_d) {
        let bad = on_grid::<L>(&dims, &per, |_, cart| {
            let grid = Grid::new(cart, &[10, 11], 3)?;
            let mut bad = Vec::new();
            for width in 1..=3 {
                for code in 0..7 {
                    let opts = HaloOpts {
                        width,
                        colour: Colour::from_suprenum_2d(code)?,
                        ..HaloOpts::default()
                    };
                    let what =
                        format!("dims {dims:?} periodic {per:?} width {width} colour {code}");
                    bad.extend(check_exchange(
                        &grid,
                        Location::CENTRE,
                        &opts,
                        code % 2 == 1,
                        &what,
                    )?);
                }
            }
            Ok(bad)
        });
        assert!(bad.is_empty(), "{bad:#?}");
    }
}

pub(crate) fn halo_3d_all_fifteen_masks<L: Launcher>() {
    // Axes of 1, 2 and 3 ranks, each shape with every periodicity (an axis
    // of 1 or 2 ranks that wraps makes a rank its own neighbour, or both
    // neighbours the same rank).
    let shapes = [[1, 1, 1], [2, 1, 2], [1, 2, 2], [3, 2, 1], [2, 2, 2]];
    let all = shapes.iter().flat_map(|d| {
        (0..8).map(move |b| {
            (
                d.to_vec(),
                (0..3).map(|a| b >> a & 1 == 1).collect::<Vec<_>>(),
            )
        })
    });
    for (dims, per) in all {
        let bad = on_grid::<L>(&dims, &per, |_, cart| {
            let grid = Grid::new(cart, &[9, 8, 7], 3)?;
            let mut bad = Vec::new();
            for code in 0..15 {
                for width in 1..=3 {
                    let opts = HaloOpts {
                        width,
                        colour: Colour::from_suprenum_3d(code)?,
                        ..HaloOpts::default()
                    };
                    let what = format!("3-D {dims:?} {per:?} colour {code} width {width}");
                    bad.extend(check_exchange(
                        &grid,
                        Location::CENTRE,
                        &opts,
                        width == 2,
                        &what,
                    )?);
                }
            }
            Ok(bad)
        });
        assert!(bad.is_empty(), "{bad:#?}");
    }
}

pub(crate) fn halo_directions_with_reversal_and_corners<L: Launcher>() {
    for (dims, per) in [
        (vec![3, 2], vec![false, false]),
        (vec![2, 2], vec![true, true]),
        (vec![1, 2], vec![true, false]),
    ] {
        let bad = on_grid::<L>(&dims, &per, |_, cart| {
            let grid = Grid::new(cart, &[9, 8], 2)?;
            let mut bad = Vec::new();
            // Every subset of the four flows, SUPRENUM style, with and without corners.
            for bits in 0u32..16 {
                let dest = [
                    [bits & 1 != 0, bits & 2 != 0],
                    [bits & 4 != 0, bits & 8 != 0],
                ];
                for corners in [true, false] {
                    let opts = HaloOpts {
                        width: 2,
                        directions: Directions::from_suprenum(&dest),
                        corners,
                        ..HaloOpts::default()
                    };
                    let what = format!("{dims:?} {per:?} dest {dest:?} corners {corners}");
                    bad.extend(check_exchange(
                        &grid,
                        Location::CENTRE,
                        &opts,
                        bits % 3 == 0,
                        &what,
                    )?);
                }
            }
            // By hand: the flow towards lower x means every rank hears from
            // its upper x-neighbour, so the upper halo is filled and the
            // lower one is not.
            let opts = HaloOpts {
                directions: Directions::NONE.with(0, Side::Lower),
                ..HaloOpts::default()
            };
            let halo = grid.halo(&[FieldSpec::of::<f64>()], &opts)?;
            let mut u = prepared(&grid);
            halo.exchange(&mut u)?;
            let inner = grid.inner();
            let j = inner.lo[1];
            if cart.neighbour(0, 1).is_some()
                && u[[inner.hi[0], j]] != value([inner.hi[0] % 9, j, 0])
            {
                bad.push(format!("upper x halo not filled at rank {}", cart.rank()));
            }
            if u[[inner.lo[0] - 1, j]] != SENTINEL {
                bad.push(format!("lower x halo written at rank {}", cart.rank()));
            }
            Ok(bad)
        });
        assert!(bad.is_empty(), "{bad:#?}");
    }
}

pub(crate) fn halo_staggered_signed_width<L: Launcher>() {
    for (dims, per) in [
        (vec![2, 2], vec![false, false]),
        (vec![3, 1], vec![true, true]),
        (vec![2, 3], vec![true, false]),
    ] {
        let bad = on_grid::<L>(&dims, &per, |_, cart| {
            let grid = Grid::new(cart, &[9, 10], 2)?;
            let mut bad = Vec::new();
            for nloc in 1..=9 {
                let loc = Location::from_nloc(nloc)?;
                for width in [-2isize, -1, 1, 2] {
                    for colour in [Colour::All, Colour::RED] {
                        let opts = HaloOpts {
                            width,
                            colour,
                            ..HaloOpts::default()
                        };
                        let what = format!("{dims:?} {per:?} nloc {nloc} width {width} {colour:?}");
                        bad.extend(check_exchange(&grid, loc, &opts, width < 0, &what)?);
                    }
                }
            }
            // By hand: an upper-x-face variable with width −1 keeps its own
            // value on the lower border (that cell is not received).
            let loc = Location([Pos::Upper, Pos::Centre, Pos::Centre]);
            let opts = HaloOpts {
                width: -1,
                ..HaloOpts::default()
            };
            let halo = grid.halo(&[FieldSpec::of::<f64>().at(loc)], &opts)?;
            let mut u = prepared(&grid);
            halo.exchange(&mut u)?;
            let inner = grid.inner();
            if u[[inner.lo[0] - 1, inner.lo[1]]] != SENTINEL {
                bad.push("the border face was received with a negative width".into());
            }
            Ok(bad)
        });
        assert!(bad.is_empty(), "{bad:#?}");
    }
}

pub(crate) fn halo_split_phase_takes_values_at_start<L: Launcher>() {
    for (dims, per) in [
        (vec![2, 2], vec![true, false]),
        (vec![3, 2], vec![true, true]),
        (vec![2, 1, 2], vec![true, true, false]),
    ] {
        let bad = on_grid::<L>(&dims, &per, |_, cart| {
            let global: Vec<usize> = if dims.len() == 2 {
                vec![8, 7]
            } else {
                vec![6, 5, 6]
            };
            let grid = Grid::new(cart, &global, 1)?;
            let opts = HaloOpts::default();
            let halo = grid.halo(&[FieldSpec::of::<f64>()], &opts)?;
            let mut u = prepared(&grid);
            let pending = halo.start(&mut u)?;
            // Compute on the interior meanwhile: overwrite every inner point.
            let inner = grid.inner();
            for p in inner.points() {
                u[p] = -value(p);
            }
            pending.finish(&mut u)?;
            let mut bad = Vec::new();
            for p in u.storage().points() {
                let want = if inner.contains(p) {
                    -value(p)
                } else {
                    expected(&grid, Location::CENTRE, &opts, p).unwrap_or(SENTINEL)
                };
                if u[p] != want && bad.len() < 3 {
                    bad.push(format!(
                        "split phase {dims:?}: rank {} at {p:?}: {} not {want}",
                        cart.rank(),
                        u[p]
                    ));
                }
            }
            Ok(bad)
        });
        assert!(bad.is_empty(), "{bad:#?}");
    }
}

/// A field holding `k` times the global array inside and the sentinel in
/// its halo (fields told apart by `k` show whose data a halo received).
fn scaled(grid: &Grid, k: f64) -> Field<f64> {
    let mut u = grid.field::<f64>();
    let inner = grid.inner();
    u.fill_with(|p| {
        if inner.contains(p) {
            k * value(p)
        } else {
            SENTINEL
        }
    });
    u
}

/// Differences between `u` (made by [`scaled`] with `k`) after one exchange
/// with `opts` and the serial expectation: `k` times the mirrored value in
/// every halo cell the exchange fills, the sentinel elsewhere (at most 3).
fn scaled_differences(
    grid: &Grid,
    u: &Field<f64>,
    k: f64,
    opts: &HaloOpts,
    what: &str,
) -> Vec<String> {
    differences_of(grid, u, k, Location::CENTRE, opts, what)
}

/// Differences between `u` (made by [`scaled`] with `k`, at `loc`) and the
/// serial expectation, as text (at most 3).
fn differences_of(
    grid: &Grid,
    u: &Field<f64>,
    k: f64,
    loc: Location,
    opts: &HaloOpts,
    what: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    for p in u.storage().points() {
        let want = expected(grid, loc, opts, p).map_or(SENTINEL, |v| k * v);
        if u[p] != want && out.len() < 3 {
            out.push(format!(
                "{what}: rank {} {:?} at {p:?}: {} but expected {want}",
                grid.cart().rank(),
                grid.cart().coords(),
                u[p]
            ));
        }
    }
    out
}

/// The process grids of the tests that run one plan several times at once:
/// 2, 4 and 6 ranks, 2-D and 3-D, with and without periodic axes (a
/// periodic axis of two ranks sends both flows to the same neighbour, one
/// of one rank is its own neighbour).
fn reuse_shapes() -> Vec<(Vec<usize>, Vec<bool>)> {
    vec![
        (vec![2, 1], vec![false, false]),
        (vec![2, 1], vec![true, false]),
        (vec![2, 2], vec![false, false]),
        (vec![2, 2], vec![true, true]),
        (vec![3, 2], vec![false, true]),
        (vec![1, 1], vec![true, true]),
        (vec![2, 1, 2], vec![true, false, false]),
    ]
}

/// A halo plan whose split-phase exchange of `u` is pending while a
/// blocking exchange of `w` runs with the same plan: each field's halo gets
/// its own field's values, whichever way the blocking exchange moves them.
pub(crate) fn halo_plan_reused_while_an_exchange_is_pending<L: Launcher>() {
    for (dims, per) in reuse_shapes() {
        let bad = on_grid::<L>(&dims, &per, |_, cart| {
            let global: &[usize] = if dims.len() == 2 { &[9, 8] } else { &[6, 5, 6] };
            let grid = Grid::new(cart, global, 2)?;
            let mut bad = Vec::new();
            for width in [1, 2] {
                let opts = HaloOpts {
                    width,
                    ..HaloOpts::default()
                };
                for how in [InPlace::Auto, InPlace::Always, InPlace::Never] {
                    let halo = grid.halo_with(&[FieldSpec::of::<f64>()], &opts, how)?;
                    let what = format!("{dims:?} {per:?} width {width} {how:?}");
                    // Twice, so that the second round runs on a plan that
                    // has exchanged before.
                    for round in 0..2 {
                        let (mut u, mut w) = (scaled(&grid, 1.0), scaled(&grid, 2.0));
                        let pending = halo.start(&mut u)?;
                        halo.exchange(&mut w)?;
                        pending.finish(&mut u)?;
                        let what = format!("{what} round {round}");
                        bad.extend(scaled_differences(
                            &grid,
                            &u,
                            1.0,
                            &opts,
                            &format!("started u, {what}"),
                        ));
                        bad.extend(scaled_differences(
                            &grid,
                            &w,
                            2.0,
                            &opts,
                            &format!("blocking w, {what}"),
                        ));
                    }
                }
            }
            Ok(bad)
        });
        assert!(bad.is_empty(), "{bad:#?}");
    }
}

/// Two split-phase exchanges of one plan pending at once, finished in the
/// reverse order (and in order, with a blocking exchange of a third field
/// between the starts): each field gets its own values.
pub(crate) fn halo_pending_exchanges_of_one_plan_finish_in_any_order<L: Launcher>() {
    for (dims, per) in reuse_shapes() {
        let bad = on_grid::<L>(&dims, &per, |_, cart| {
            let global: &[usize] = if dims.len() == 2 { &[9, 8] } else { &[6, 5, 6] };
            let grid = Grid::new(cart, global, 2)?;
            let mut bad = Vec::new();
            for width in [1, 2] {
                let opts = HaloOpts {
                    width,
                    ..HaloOpts::default()
                };
                let halo = grid.halo(&[FieldSpec::of::<f64>()], &opts)?;
                let what = format!("{dims:?} {per:?} width {width}");
                // Start a, start b, finish b, finish a.
                let (mut a, mut b) = (scaled(&grid, 1.0), scaled(&grid, 2.0));
                let pa = halo.start(&mut a)?;
                let pb = halo.start(&mut b)?;
                pb.finish(&mut b)?;
                pa.finish(&mut a)?;
                bad.extend(scaled_differences(
                    &grid,
                    &a,
                    1.0,
                    &opts,
                    &format!("a finished last, {what}"),
                ));
                bad.extend(scaled_differences(
                    &grid,
                    &b,
                    2.0,
                    &opts,
                    &format!("b finished first, {what}"),
                ));
                // Start a, blocking c, start b, finish a, finish b.
                let (mut a, mut b, mut c) =
                    (scaled(&grid, 1.0), scaled(&grid, 2.0), scaled(&grid, 3.0));
                let pa = halo.start(&mut a)?;
                halo.exchange(&mut c)?;
                let pb = halo.start(&mut b)?;
                pa.finish(&mut a)?;
                pb.finish(&mut b)?;
                bad.extend(scaled_differences(
                    &grid,
                    &a,
                    1.0,
                    &opts,
                    &format!("a in order, {what}"),
                ));
                bad.extend(scaled_differences(
                    &grid,
                    &b,
                    2.0,
                    &opts,
                    &format!("b in order, {what}"),
                ));
                bad.extend(scaled_differences(
                    &grid,
                    &c,
                    3.0,
                    &opts,
                    &format!("c between, {what}"),
                ));
            }
            Ok(bad)
        });
        assert!(bad.is_empty(), "{bad:#?}");
    }
}

pub(crate) fn halo_several_fields_of_mixed_types<L: Launcher>() {
    let bad = on_grid::<L>(&[3, 2], &[true, false], |_, cart| {
        let grid = Grid::new(cart, &[12, 9], 2)?;
        let opts = HaloOpts {
            width: 2,
            colour: Colour::BLACK,
            ..HaloOpts::default()
        };
        let mut bad = Vec::new();
        for how in [InPlace::Auto, InPlace::Always, InPlace::Never] {
            let halo = grid.halo_with(
                &[
                    FieldSpec::of::<f64>(),
                    FieldSpec::of::<i32>(),
                    FieldSpec::of::<u8>(),
                    FieldSpec::of::<[f32; 3]>(),
                ],
                &opts,
                how,
            )?;
            let inner = grid.inner();
            let mut u = prepared(&grid);
            let mut k = grid.field::<i32>();
            k.fill_with(|p| {
                if inner.contains(p) {
                    value(p) as i32 * 3
                } else {
                    -7
                }
            });
            let mut b = grid.field::<u8>();
            b.fill_with(|p| {
                if inner.contains(p) {
                    (value(p) as i64 % 251) as u8
                } else {
                    255
                }
            });
            let mut v = grid.field::<[f32; 3]>();
            v.fill_with(|p| {
                if inner.contains(p) {
                    [p[0] as f32, p[1] as f32, 1.5]
                } else {
                    [-1.0; 3]
                }
            });
            halo.exchange((&mut u, &mut k, &mut b, &mut v))?;
            bad.extend(differences(
                &grid,
                &u,
                Location::CENTRE,
                &opts,
                &format!("f64 field, {how:?}"),
            ));
            for p in u.storage().points() {
                let e = expected(&grid, Location::CENTRE, &opts, p);
                let q = e.map(|x| {
                    let x = x as i64; // the wrapped point's value, less the 0.5
                    [x.rem_euclid(100), (x / 100) % 100]
                });
                let (wk, wb, wv) = match (e, q) {
                    (Some(x), Some(q)) => (
                        x as i32 * 3,
                        (x as i64 % 251) as u8,
                        [q[0] as f32, q[1] as f32, 1.5],
                    ),
                    _ => (-7, 255, [-1.0; 3]),
                };
                if (k[p], b[p], v[p]) != (wk, wb, wv) && bad.len() < 3 {
                    bad.push(format!(
                        "mixed fields at {p:?}, {how:?}: {:?} not {:?}",
                        (k[p], b[p], v[p]),
                        (wk, wb, wv)
                    ));
                }
            }
        }
        Ok(bad)
    });
    assert!(bad.is_empty(), "{bad:#?}");
}

pub(crate) fn halo_contiguous_faces_move_straight_between_arrays<L: Launcher>() {
    // (process grid, periodic, points, halo per axis, width, the axes whose
    // faces are contiguous). Faces of whole planes above the 16 KiB eager
    // limit go in one copy; a periodic axis of one rank copies within the
    // array. With a halo beyond the edges of the domain a face does not
    // span whole rows (the exchange leaves those cells alone), so the first
    // case allocates none across the axes that do not exchange.
    type Case = (
        Vec<usize>,
        Vec<bool>,
        Vec<usize>,
        Vec<[usize; 2]>,
        isize,
        Vec<usize>,
    );
    let cases: Vec<Case> = vec![
        (
            vec![1, 1, 4],
            vec![false, false, true],
            vec![50, 50, 12],
            vec![[0, 0], [0, 0], [1, 1]],
            1,
            vec![2],
        ),
        (
            vec![1, 1, 2],
            vec![true, true, true],
            vec![48, 6, 10],
            vec![[2, 2]; 3],
            2,
            vec![2],
        ),
        (
            vec![1, 1, 1],
            vec![true, true, true],
            vec![6, 5, 4],
            vec![[1, 1]; 3],
            1,
            vec![2],
        ),
        (
            vec![2, 2],
            vec![true, true],
            vec![12, 9],
            vec![[1, 1]; 2],
            1,
            vec![1],
        ),
        (
            vec![1, 3],
            vec![false, false],
            vec![130, 9],
            vec![[0, 0], [2, 2]],
            2,
            vec![1],
        ),
    ];
    for (dims, per, global, widths, width, direct) in cases {
        let bad = on_grid::<L>(&dims, &per, |_, cart| {
            let grid = Grid::with_halo(cart, &global, &widths)?;
            let opts = HaloOpts {
                width,
                ..HaloOpts::default()
            };
            let halo = grid.halo(&[FieldSpec::of::<f64>()], &opts)?;
            let mut bad = Vec::new();
            for a in 0..global.len() {
                // An axis without a neighbour has no faces at all.
                let has = [Side::Lower, Side::Upper]
                    .iter()
                    .any(|&s| has_neighbour(cart, a, s));
                if halo.is_direct(a) != (has && direct.contains(&a)) {
                    bad.push(format!("{dims:?}: axis {a} direct {}", halo.is_direct(a)));
                }
            }
            let mut u = prepared(&grid);
            halo.exchange(&mut u)?;
            bad.extend(differences(
                &grid,
                &u,
                Location::CENTRE,
                &opts,
                &format!("direct {dims:?}"),
            ));
            // Two fields: packed.
            let two = grid.halo(&[FieldSpec::of::<f64>(), FieldSpec::of::<f64>()], &opts)?;
            if (0..3).any(|a| two.is_direct(a)) {
                bad.push("a plan of two fields moves a face without packing".into());
            }
            // Two fields exchanged (packed, or in place between threads).
            let (mut u, mut v) = (prepared(&grid), prepared(&grid));
            two.exchange((&mut u, &mut v))?;
            for (f, what) in [(&u, "first of two"), (&v, "second of two")] {
                bad.extend(differences(
                    &grid,
                    f,
                    Location::CENTRE,
                    &opts,
                    &format!("{what} {dims:?}"),
                ));
            }
            Ok(bad)
        });
        assert!(bad.is_empty(), "{bad:#?}");
    }
}

pub(crate) fn grid_bad_input_fails_on_every_rank<L: Launcher>() {
    type Case = fn(&Comm, &Cart) -> Result<(), Error>;
    let cases: Vec<(&str, Case, &str)> = vec![
        (
            "too few points",
            |_, c| Grid::new(c, &[1, 8], 1).map(|_| ()),
            "does not fit the process grid",
        ),
        (
            "halo wider than inner",
            |_, c| {
                let g = Grid::new(c, &[4, 8], 3)?;
                g.halo(
                    &[FieldSpec::of::<f64>()],
                    &HaloOpts {
                        width: 3,
                        ..Default::default()
                    },
                )
                .map(|_| ())
            },
            "wider than the inner range",
        ),
        (
            "width above the halo",
            |_, c| {
                let g = Grid::new(c, &[40, 40], 1)?;
                g.halo(
                    &[FieldSpec::of::<f64>()],
                    &HaloOpts {
                        width: 2,
                        ..Default::default()
                    },
                )
                .map(|_| ())
            },
            "halo is 1 wide",
        ),
        (
            "mismatched fields",
            |comm, c| {
                let g = Grid::new(c, &[40, 40], 1)?;
                let spec = if comm.rank() == 1 {
                    FieldSpec::of::<f32>()
                } else {
                    FieldSpec::of::<f64>()
                };
                g.halo(&[spec], &HaloOpts::default()).map(|_| ())
            },
            "rank 1 has fields",
        ),
        (
            "mismatched grids",
            |comm, c| Grid::new(c, &[40, 40 + comm.rank() / 3], 1).map(|_| ()),
            "rank 3 has points [40, 41]",
        ),
        (
            "bad colour",
            |_, _| Colour::from_suprenum_2d(9).map(|_| ()),
            "colour code 9",
        ),
        (
            "points beyond indexing",
            |_, c| Grid::new(c, &[usize::MAX, usize::MAX], 1).map(|_| ()),
            "more than a grid indexes along one axis",
        ),
        (
            "halo beyond indexing",
            |_, c| Grid::new(c, &[16, 8], usize::MAX / 2).map(|_| ()),
            "more than a grid indexes along one axis",
        ),
        (
            "storage beyond memory",
            |_, c| Grid::new(c, &[1 << 39, 1 << 39, 1 << 30], 0).map(|_| ()),
            "larger than memory can address",
        ),
    ];
    for (name, case, needle) in cases {
        let r = launch::<L, _, _>(4, |comm| {
            let cart = comm.cartesian(&[2, 2], &[false, false])?.unwrap();
            Ok(case(comm, &cart).map_err(|e| e.to_string()))
        })
        .unwrap();
        for m in &r {
            match m {
                Err(m) => assert!(m.contains(needle), "{name}: {m}"),
                Ok(()) => panic!("{name}: no error on some rank: {r:?}"),
            }
        }
    }
    // The owner of a point outside the domain, along an axis the process
    // grid has or one it has not: none.
    let r = launch::<L, _, _>(4, |comm| {
        let cart = comm.cartesian(&[4], &[false])?.unwrap();
        let g = Grid::new(&cart, &[16, 8], 1)?;
        Ok([
            [0, 100, 0],
            [0, -1, 0],
            [0, 0, 3],
            [-1, 0, 0],
            [16, 0, 0],
            [13, 7, 0],
        ]
        .map(|p| g.owner_of(p)))
    })
    .unwrap();
    let want = [None, None, None, None, None, Some(3)];
    assert!(r.iter().all(|o| *o == want), "{r:?}");
    // A subarray for the host of a job that has none: the grid's own
    // routine is named.
    let r = launch::<L, _, _>(2, |comm| {
        let cart = comm.cartesian(&[2], &[false])?.unwrap();
        let g = Grid::new(&cart, &[8, 8], 1)?;
        let u = g.field::<f64>();
        Ok(g.send_subarray(&u, &g.inner(), Place::Host, 1)
            .unwrap_err()
            .to_string())
    })
    .unwrap();
    assert!(
        r.iter()
            .all(|m| m.contains("Grid::send_subarray") && m.contains("host")),
        "{r:?}"
    );
    // A field of the wrong type for a plan: an error on the caller, before
    // anything is sent.
    let r = launch::<L, _, _>(2, |comm| {
        let cart = comm.cartesian(&[2, 1], &[false, false])?.unwrap();
        let g = Grid::new(&cart, &[8, 8], 1)?;
        let h = g.halo(&[FieldSpec::of::<f64>()], &HaloOpts::default())?;
        let mut wrong = g.field::<f32>();
        Ok(h.exchange(&mut wrong).unwrap_err().to_string())
    })
    .unwrap();
    assert!(r.iter().all(|m| m.contains("holds f32")), "{r:?}");
    // Between threads, a rank that leaves before the exchange: its
    // neighbours, whose halos are lent to each other, get an error instead
    // of waiting for it (and every copy under way ends before they return).
    // (Processes that fail are the business of tests/failures.rs.)
    let hows = if L::THREADS {
        vec![InPlace::Always, InPlace::Auto, InPlace::Never]
    } else {
        Vec::new()
    };
    for how in hows {
        let r = launch::<L, _, _>(4, |comm| {
            let cart = comm.cartesian(&[2, 2], &[false, false])?.unwrap();
            let g = Grid::new(&cart, &[64, 64], 1)?;
            let h = g.halo_with(&[FieldSpec::of::<f64>(); 2], &HaloOpts::default(), how)?;
            if cart.rank() == 3 {
                return Err(Error::InvalidArgument {
                    op: "test",
                    what: "rank 3 leaves".into(),
                });
            }
            let (mut u, mut v) = (g.field::<f64>(), g.field::<f64>());
            h.exchange((&mut u, &mut v))?;
            Ok(())
        });
        let e = r.expect_err("an exchange without rank 3").to_string();
        assert!(e.contains("rank 3") || e.contains("node 3"), "{how:?}: {e}");
    }
}

pub(crate) fn subarrays_to_coordinates_and_the_host<L: Launcher>() {
    let (host, nodes) = super::launch_with_host::<L, _, _, _, _>(
        6,
        |comm| {
            let cart = comm.cartesian(&[3, 2], &[false, false])?.unwrap();
            let grid = Grid::new(&cart, &[9, 8], 1)?;
            // 1. A 2 × 3 block of the global array to the node at (2, 1).
            let mut g = grid.global_field::<i32>();
            g.fill_with(|p| value(p) as i32);
            let block = Region::new(&[4..6, 1..4]);
            grid.send_subarray(&g, &block, Place::Coords(&[2, 1]), 11)?;
            // 2. Node (1, 0)'s inner block comes back, placed at (0, 0).
            let mut back = Field::<i32>::whole(Region::new(&[0..9, 0..8]), 2);
            let got = grid.recv_subarray(&mut back, [0, 0, 0], Place::Coords(&[1, 0]), 12)?;
            let mut bad = Vec::new();
            let inner = grid.inner_of(cart.rank_of(&[1, 0]).unwrap());
            if got != Region::new(&[0..inner.len(0) as isize, 0..inner.len(1) as isize]) {
                bad.push(format!("host learned extent {got:?}"));
            }
            for p in got.points() {
                let src = [p[0] + inner.lo[0], p[1] + inner.lo[1], 0];
                if back[p] != value(src) as i32 * 2 {
                    bad.push(format!("host: {p:?} = {}", back[p]));
                }
            }
            // Bad destination and reserved tag: clear errors, nothing sent.
            let e1 = grid
                .send_subarray(&g, &block, Place::Coords(&[3, 0]), 1)
                .unwrap_err();
            let e2 = grid
                .send_subarray(&g, &block, Place::Coords(&[0, 0]), 0x7f00_0000)
                .unwrap_err();
            if !e1.to_string().contains("outside") || !e2.to_string().contains("reserved") {
                bad.push(format!("{e1} / {e2}"));
            }
            Ok::<_, Error>(bad)
        },
        |comm| {
            let cart = comm.cartesian(&[3, 2], &[false, false])?.unwrap();
            let grid = Grid::new(&cart, &[9, 8], 1)?;
            let mut bad = Vec::new();
            let c = cart.coords().to_vec();
            if c == [2, 1] {
                let mut u = grid.field::<i32>();
                let at = [grid.inner().lo[0], grid.inner().lo[1], 0];
                let r = grid.recv_subarray(&mut u, at, Place::Host, 11)?;
                if r.len(0) != 2 || r.len(1) != 3 {
                    bad.push(format!("extent {r:?}"));
                }
                for p in r.points() {
                    let src = [p[0] - at[0] + 4, p[1] - at[1] + 1, 0];
                    if u[p] != value(src) as i32 {
                        bad.push(format!("node (2,1): {p:?} = {}", u[p]));
                    }
                }
            }
            if c == [1, 0] {
                let mut u = grid.field::<i32>();
                u.fill_with(|p| value(p) as i32 * 2);
                grid.send_subarray(&u, &grid.inner(), Place::Host, 12)?;
            }
            Ok(bad)
        },
    )
    .unwrap();
    assert!(
        host.is_empty() && nodes.concat().is_empty(),
        "{host:?} {nodes:?}"
    );
}

pub(crate) fn gather_and_scatter_whole_fields<L: Launcher>() {
    let (host, nodes) = super::launch_with_host::<L, _, _, _, _>(
        4,
        |comm| {
            let cart = comm.cartesian(&[2, 2], &[false, true])?.unwrap();
            let grid = Grid::new(&cart, &[7, 5], 1)?;
            let mut g = grid.global_field::<f64>();
            g.fill_with(value);
            let mut none = grid.field::<f64>();
            grid.scatter(Some(&g), &mut none, Rank::Host)?;
            let back = grid
                .gather(&none, Rank::Host)?
                .expect("the root gets the array");
            Ok::<_, Error>(
                back.storage()
                    .points()
                    .filter(|&p| back[p] != -value(p))
                    .count(),
            )
        },
        |comm| {
            let cart = comm.cartesian(&[2, 2], &[false, true])?.unwrap();
            let grid = Grid::new(&cart, &[7, 5], 1)?;
            let mut u = grid.field::<f64>();
            u.fill(SENTINEL);
            grid.scatter(None, &mut u, Rank::Host)?;
            let inner = grid.inner();
            let mut bad = 0;
            for p in u.storage().points() {
                let want = if inner.contains(p) {
                    value(p)
                } else {
                    SENTINEL
                };
                bad += usize::from(u[p] != want);
                u[p] = -u[p];
            }
            let none = grid.gather(&u, Rank::Host)?;
            Ok(bad + usize::from(none.is_some()))
        },
    )
    .unwrap();
    assert_eq!((host, nodes), (0, vec![0; 4]));
    // Rooted at a node, without a host, 3-D.
    let r = launch::<L, _, _>(3, |comm| {
        let cart = comm.cartesian(&[1, 3, 1], &[false; 3])?.unwrap();
        let grid = Grid::new(&cart, &[3, 7, 2], 0)?;
        let mut u = grid.field::<u16>();
        u.fill_with(|p| value(p) as u16);
        Ok(grid
            .gather(&u, Rank::Node(2))?
            .map(|g| g.storage().points().all(|p| g[p] == value(p) as u16)))
    })
    .unwrap();
    assert_eq!(r, vec![None, None, Some(true)]);
}

pub(crate) fn glops_mixed_types_to_nodes_and_host<L: Launcher>() {
    let entries = |r: usize| {
        vec![
            Glop::new(Value::F64(r as f64 + 0.5), GlobalOp::Sum),
            Glop::new(Value::F64(r as f64 * 1.5), GlobalOp::Max),
            Glop::new(Value::I32(1), GlobalOp::Sum),
            Glop::new(Value::I64(-(r as i64)), GlobalOp::Min),
            Glop::new(Value::U32(2), GlobalOp::Prod),
            Glop::new(Value::F32(r as f32), GlobalOp::Min),
        ]
    };
    for n in [1usize, 2, 3, 5] {
        let want = vec![
            Glop::new(
                Value::F64((0..n).map(|r| r as f64 + 0.5).sum()),
                GlobalOp::Sum,
            ),
            Glop::new(Value::F64((n - 1) as f64 * 1.5), GlobalOp::Max),
            Glop::new(Value::I32(n as i32), GlobalOp::Sum),
            Glop::new(Value::I64(-(n as i64 - 1)), GlobalOp::Min),
            Glop::new(Value::U32(1 << n), GlobalOp::Prod),
            Glop::new(Value::F32(0.0), GlobalOp::Min),
        ];
        let got = launch::<L, _, _>(n, |comm| {
            let mut v = entries(comm.rank());
            comm.glops(&mut v, &GlopsOpts::default())?;
            Ok(v)
        })
        .unwrap();
        assert!(got.iter().all(|v| *v == want), "n = {n}: {got:?}");
        for back in [false, true] {
            let opts = GlopsOpts {
                back,
                host: true,
                ..GlopsOpts::default()
            };
            let (h, nodes) = super::launch_with_host::<L, _, _, _, _>(
                n,
                |comm| comm.gloph(&opts),
                |comm| {
                    let mut v = entries(comm.rank());
                    comm.glops(&mut v, &opts)?;
                    Ok(v)
                },
            )
            .unwrap();
            assert_eq!(h, want, "host, n = {n}, back {back}");
            let expect_nodes: Vec<Vec<Glop>> = (0..n)
                .map(|r| if back { want.clone() } else { entries(r) })
                .collect();
            assert_eq!(nodes, expect_nodes, "n = {n}, back {back}");
        }
    }
    // Entries that differ between nodes: an error on every node.
    let r = launch::<L, _, _>(3, |comm| {
        let op = if comm.rank() == 1 {
            GlobalOp::Max
        } else {
            GlobalOp::Sum
        };
        let mut v = vec![
            Glop::new(Value::I32(1), GlobalOp::Sum),
            Glop::new(Value::F64(1.0), op),
        ];
        Ok(comm
            .glops(&mut v, &GlopsOpts::default())
            .unwrap_err()
            .to_string())
    })
    .unwrap();
    assert!(r.iter().all(|m| m.contains("entry 1")), "{r:?}");
}

/// Down by each step of `steps` and back up, on a grid over `dims`: the
/// coarse fields hold the global values of their blocks, the payload
/// vectors concatenate in order, and the way back is the identity.
fn agglomeration_case<L: Launcher>(dims: &[usize], global: &[usize], steps: &[Vec<usize>]) {
    let n: usize = dims.iter().product();
    let bad = launch::<L, _, _>(n, |comm| {
        let per: Vec<bool> = (0..dims.len()).map(|a| a == 0).collect();
        let cart = comm.cartesian(dims, &per)?.unwrap();
        let fine = Grid::new(&cart, global, 1)?;
        let mut u = fine.field::<f64>();
        let inner = fine.inner();
        u.fill_with(|p| if inner.contains(p) { value(p) } else { -3.0 });
        let original = u.clone();
        let mut bad = Vec::new();
        // Down.
        let mut levels = Vec::new();
        let mut grid_here: Option<Grid> = Some(fine);
        let mut field_here: Option<Field<f64>> = Some(u);
        let mut payload: Option<Vec<u64>> = Some(vec![comm.rank() as u64; comm.rank() + 1]);
        for f in steps {
            let Some(g) = grid_here.take() else { break };
            let agg = g.agglomerate(f)?;
            let coarse = agg.gather(field_here.as_ref().expect("active ranks hold a field"))?;
            let pv = agg.gather_vec(payload.as_deref().unwrap(), PayloadOrder::IFirst)?;
            if let (Some(cg), Some(cf)) = (agg.coarse(), &coarse) {
                let ci = cg.inner();
                for p in ci.points() {
                    if cf[p] != value(p) {
                        bad.push(format!("coarse {f:?} at {p:?}: {}", cf[p]));
                        break;
                    }
                }
                if cf.storage() != &cg.storage() {
                    bad.push("coarse field storage".into());
                }
            }
            if agg.is_active() != coarse.is_some() || agg.is_active() != pv.is_some() {
                bad.push("active ranks get data, inactive ones none".into());
            }
            levels.push((g, agg));
            grid_here = levels
                .last()
                .unwrap()
                .1
                .coarse()
                .map(|c| {
                    // Re-make a handle on the same coarse grid for the next step.
                    Grid::with_splits(
                        c.cart(),
                        &(0..c.ndim())
                            .map(|a| c.splits(a).to_vec())
                            .collect::<Vec<_>>(),
                        &c.halo_widths()[..c.ndim()],
                    )
                })
                .transpose()?;
            field_here = coarse;
            payload = pv;
        }
        // The coarsest payload holds every rank's vector when it is one rank.
        if levels
            .last()
            .is_some_and(|l| l.1.coarse().is_some_and(|c| c.cart().size() == 1))
        {
            let want: Vec<u64> = {
                let mut w = Vec::new();
                // Orders compose: the fine ranks in IFirst order of each level.
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by_key(|&r| {
                    let c = cart.coords_of(r).unwrap();
                    let mut key = Vec::new();
                    // Later (coarser) steps are outer keys.
                    let mut cc = c.clone();
                    let mut keys = Vec::new();
                    for f in steps {
                        let within: Vec<usize> = cc.iter().zip(f).map(|(&x, &f)| x % f).collect();
                        keys.push(within.iter().rev().copied().collect::<Vec<_>>());
                        cc = cc.iter().zip(f).map(|(&x, &f)| x / f).collect();
                    }
                    for k in keys.into_iter().rev() {
                        key.extend(k);
                    }
                    key
                });
                for r in order {
                    w.extend(std::iter::repeat_n(r as u64, r + 1));
                }
                w
            };
            if payload.as_ref() != Some(&want) {
                bad.push(format!("payload {payload:?} not {want:?}"));
            }
        }
        // Up again, undoing each step.
        while let Some((g, agg)) = levels.pop() {
            let mut fine_f = g.field::<f64>();
            fine_f.fill(-3.0);
            agg.scatter(field_here.as_ref(), &mut fine_f)?;
            let back = agg.scatter_vec(payload.as_deref(), PayloadOrder::IFirst)?;
            field_here = Some(fine_f);
            payload = Some(back);
        }
        if field_here.as_ref() != Some(&original) {
            bad.push(format!(
                "rank {}: the round trip changed the field",
                comm.rank()
            ));
        }
        if payload != Some(vec![comm.rank() as u64; comm.rank() + 1]) {
            bad.push(format!(
                "rank {}: payload came back as {payload:?}",
                comm.rank()
            ));
        }
        Ok(bad)
    })
    .unwrap()
    .concat();
    assert!(bad.is_empty(), "{dims:?} {steps:?}: {bad:#?}");
}

pub(crate) fn agglomeration_round_trip_is_the_identity<L: Launcher>() {
    agglomeration_case::<L>(&[4, 3], &[13, 10], &[vec![2, 3], vec![2, 1]]);
    agglomeration_case::<L>(&[4, 2], &[11, 9], &[vec![4, 1], vec![1, 2]]);
    agglomeration_case::<L>(&[3, 2], &[10, 7], &[vec![3, 2]]);
    agglomeration_case::<L>(&[2, 2, 3], &[6, 7, 9], &[vec![1, 2, 3], vec![2, 1, 1]]);
    agglomeration_case::<L>(&[1, 4, 2], &[5, 9, 6], &[vec![1, 4, 1], vec![1, 1, 2]]);
}

pub(crate) fn agglomeration_bad_factor_fails_on_every_rank<L: Launcher>() {
    let r = launch::<L, _, _>(6, |comm| {
        let cart = comm.cartesian(&[3, 2], &[false, false])?.unwrap();
        let grid = Grid::new(&cart, &[9, 9], 1)?;
        Ok(grid.agglomerate(&[2, 2]).unwrap_err().to_string())
    })
    .unwrap();
    assert!(
        r.iter()
            .all(|m| m.contains("factor 2 does not divide the 3 ranks of axis 0")),
        "{r:?}"
    );
    let r = launch::<L, _, _>(4, |comm| {
        let cart = comm.cartesian(&[2, 2], &[false, false])?.unwrap();
        let grid = Grid::new(&cart, &[9, 9], 1)?;
        let f = if comm.rank() == 3 {
            vec![1, 2]
        } else {
            vec![2, 1]
        };
        Ok(grid.agglomerate(&f).unwrap_err().to_string())
    })
    .unwrap();
    assert!(
        r.iter().all(|m| m.contains("rank 3 has factors [1, 2]")),
        "{r:?}"
    );
}

pub(crate) fn halo_in_place_between_threads<L: Launcher>() {
    // (process grid, points, the axes copied in place between threads with
    // `InPlace::Auto`), width 1, not periodic. Along axis 0 a face is one
    // point per row (8-byte pieces): packed. Along axis 1 of the 64 x 64
    // grid a face is rows of 32 points plus one corner point: 264 bytes in
    // 2 pieces, above a cache line each on average: in place. In 3-D the
    // rows along axis 1 are 32 points plus one corner per plane; axis 2 has
    // one rank and no exchange.
    let cases: Vec<(Vec<usize>, Vec<usize>, Vec<usize>)> = vec![
        (vec![2, 2], vec![64, 64], vec![1]),
        (vec![2, 2, 1], vec![64, 64, 6], vec![1]),
        (vec![2, 1], vec![8, 8], vec![]),
    ];
    for (dims, global, want) in cases {
        let per = vec![false; dims.len()];
        let bad = on_grid::<L>(&dims, &per, |_, cart| {
            let grid = Grid::new(cart, &global, 1)?;
            let opts = HaloOpts::default();
            let mut bad = Vec::new();
            for how in [InPlace::Auto, InPlace::Always, InPlace::Never] {
                let halo = grid.halo_with(&[FieldSpec::of::<f64>(); 2], &opts, how)?;
                for a in 0..global.len() {
                    let has = [Side::Lower, Side::Upper]
                        .iter()
                        .any(|&s| has_neighbour(cart, a, s));
                    let expect = L::THREADS
                        && has
                        && match how {
                            InPlace::Auto => want.contains(&a),
                            InPlace::Always => true,
                            InPlace::Never => false,
                        };
                    if halo.is_in_place(a) != expect {
                        bad.push(format!("{dims:?} {how:?}: axis {a} in place {}", !expect));
                    }
                }
                let (mut u, mut v) = (prepared(&grid), prepared(&grid));
                for _ in 0..3 {
                    halo.exchange((&mut u, &mut v))?;
                }
                for (f, what) in [(&u, "first"), (&v, "second")] {
                    let what = format!("{what} field, {dims:?} {how:?}");
                    bad.extend(differences(&grid, f, Location::CENTRE, &opts, &what));
                }
            }
            Ok(bad)
        });
        assert!(bad.is_empty(), "{bad:#?}");
    }
}

pub(crate) fn halo_masks_that_empty_some_ranks_faces<L: Launcher>() {
    // Uneven blocks with colour masks and one-way direction masks: a mask
    // can leave one rank's face along an axis empty while its neighbour's
    // holds points. The default plan (`InPlace::Auto`) must still take one
    // road per axis on every rank (between threads: copied in place or
    // packed); each rank deciding alone, [3, 1] over 8 x 9 points with
    // "i odd" and only the upward flow of axis 0 waited for ever.
    let dirs = [
        Directions::ALL,
        Directions::NONE.with(0, Side::Lower),
        Directions::NONE.with(0, Side::Upper),
        Directions::NONE.with(1, Side::Lower),
        Directions::NONE.with(1, Side::Upper),
    ];
    for dims in [[3, 1], [1, 3], [3, 2]] {
        for per in [[false, false], [true, true]] {
            let bad = on_grid::<L>(&dims, &per, |_, cart| {
                let mut bad = Vec::new();
                for global in [[8, 9], [9, 8]] {
                    let grid = Grid::new(cart, &global, 1)?;
                    for code in 0..7 {
                        for (d, &directions) in dirs.iter().enumerate() {
                            let opts = HaloOpts {
                                colour: Colour::from_suprenum_2d(code)?,
                                directions,
                                ..HaloOpts::default()
                            };
                            let what =
                                format!("{dims:?} {per:?} {global:?} colour {code} directions {d}");
                            bad.extend(check_exchange(
                                &grid,
                                Location::CENTRE,
                                &opts,
                                false,
                                &what,
                            )?);
                        }
                    }
                }
                Ok(bad)
            });
            assert!(bad.is_empty(), "{bad:#?}");
        }
    }
}
