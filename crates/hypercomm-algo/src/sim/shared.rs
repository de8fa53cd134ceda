//! Algorithms whose participants all run one schedule, relabelled: the
//! simulator then generates participant 0's schedule only, instead of p
//! schedules it would find equal one by one (a quarter of a 2^20-node
//! allreduce's simulation time went to that).
//!
//! A declaration here is a claim about an algorithm's schedules, held to by
//! a test that generates every participant's schedule for many p and
//! lengths and compares (the module `tests`); the simulator also compares a
//! few participants' generated schedules with the relabelled one before it
//! trusts the claim, and generates them all when they differ.
//!
//! Not done yet: declarations for the other symmetric algorithms (Bruck's,
//! pairwise exchange, the ring allreduce); they are simulated as before,
//! with every schedule generated and shared when equal.

use super::error::SimError;
use super::pool::Pool;
use crate::entry::{Entry, Params};
use crate::{Algorithm, Collective, RingOrder};

/// How every participant's schedule follows from participant 0's: its
/// Sends and Recvs, their lengths and rounds are the same, and its peers
/// are participant 0's relabelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alike {
    /// Participant `me` addresses `peer XOR me` where participant 0
    /// addresses `peer` (hypercube algorithms on 2^d participants).
    Xor,
    /// Participant `me` addresses `peer + me mod p` where participant 0
    /// addresses `peer` (ring and dissemination algorithms).
    Shift,
}

/// Whether all participants of `entry` called with `params` (its `me`
/// aside) run participant 0's schedule relabelled, and how; `None` when
/// not declared.
pub fn alike(entry: &Entry, params: &Params<'_>) -> Option<Alike> {
    let p = params.p;
    let equal_counts = params.counts.len() == p && params.counts.windows(2).all(|w| w[0] == w[1]);
    match (entry.collective, entry.algorithm) {
        (Collective::Allreduce, Algorithm::RecursiveDoubling) if p.is_power_of_two() => {
            Some(Alike::Xor)
        }
        (Collective::Allgather, Algorithm::RecursiveDoubling)
            if p.is_power_of_two() && equal_counts =>
        {
            Some(Alike::Xor)
        }
        (Collective::Allgather, Algorithm::Ring)
            if equal_counts && params.order == RingOrder::NATURAL =>
        {
            Some(Alike::Shift)
        }
        (Collective::Barrier, Algorithm::Dissemination) => Some(Alike::Shift),
        _ => None,
    }
}

/// Participants checked against the relabelled schedule before it is
/// trusted: the second, the middle and the last.
fn spot_checks(p: usize) -> impl Iterator<Item = usize> {
    let mut v = vec![1, p / 2, p.saturating_sub(1)];
    v.sort_unstable();
    v.dedup();
    v.into_iter().filter(move |&me| me > 0 && me < p)
}

/// A pool holding participant 0's schedule of `entry` in the form `alike`
/// declares, and its index, when the spot checks agree; `None` otherwise.
pub(crate) fn shared_pool(
    entry: &Entry,
    params: &Params<'_>,
    alike: Alike,
) -> Result<Option<(Pool, u32)>, SimError> {
    let p = params.p;
    let gen = |me: usize| entry.generate(&Params { me, ..*params });
    let mut pool = Pool::new(p);
    let i = pool.add_form(0, &gen(0), alike == Alike::Xor)?;
    for me in spot_checks(p) {
        if !pool.is(i, me, &gen(me))? {
            return Ok(None);
        }
    }
    Ok(Some((pool, i)))
}
