//! A collective in flight: the optional check-mode signature exchange,
//! running beside the collective's own schedule, whose result counts once
//! the signatures agree. Blocking calls and non-blocking requests both run
//! one of these.
//!
//! Besides operation, root, count, element type, operator and variant, a
//! signature carries a digest of the counts of a variable-count call
//! (equal on every participant when they agree) and, for all-to-allv, a
//! digest of what each node sends and one of what it expects to receive
//! (their sums over the participants are equal exactly when every node's
//! `recv_counts[q]` is node q's `send_counts[me]`, up to a 2⁻⁶⁴ chance of
//! a collision), so that a count mismatch fails every participant, not
//! only the receiver. A participant whose own arguments are invalid still
//! takes part in the exchange with a signature that says so
//! ([`BAD_ARGS`]), so that the others fail at once instead of waiting.
//!
//! It also states the options in force for the call (`sig_opts.rs`): the
//! forced algorithm, reproducible mode and segment size of the call's
//! [`CollOpts`](super::CollOpts), and the communicator's topology setting
//! and library collectives switch. They decide the schedule and whether
//! the call runs on messages, on the shared-memory board or in the
//! library, so nodes that disagree about them would exchange wrong data or
//! wait for each other; a mismatch names the option ("options differ
//! (reproducible off vs on)"). The host of a call rooted at it states none
//! (its part is one send or receive whatever they are: the nodes choose).
//!
//! Not done yet: the all-to-allv mismatch message names no pair of nodes
//! (the digests say only that some pair disagrees; the receiving node of
//! that pair also reports its own length mismatch when it gets that far).

use super::call::rank_list;
use super::executor::{Exec, Input, Output, Route};
use super::ops::{Element, Operator};
pub(crate) use super::sig_opts::Opts;
use crate::engine::Task;
use crate::engine::{Engine, Group};
use crate::error::{Error, Result};
use crate::rank::Rank;
use hypercomm_algo::{Collective, Schedule};
use std::rc::Rc;

/// What every participant declares about a collective call (PICL check0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Signature {
    pub(crate) op: u8,
    pub(crate) root: i64,
    pub(crate) count: u64,
    pub(crate) elem: u8,
    pub(crate) operator: u8,
    /// Sub-kind: scan direction/inclusion/segmentation, or the phase of a
    /// composed call (0 for the main schedule).
    pub(crate) variant: u8,
    /// Digest of a variable-count call's counts (0: none); must be equal.
    pub(crate) digest: u64,
    /// All-to-allv: digest of what this node sends (`send_counts`).
    pub(crate) sends: u64,
    /// All-to-allv: digest of what this node expects (`recv_counts`).
    pub(crate) expects: u64,
    /// The options in force for the call.
    pub(crate) opts: Opts,
}

/// Bytes of an encoded [`Signature`] (the board's signature area holds
/// as many).
pub(crate) const SIG_BYTES: usize = 32;

/// The variant byte of a participant whose arguments were invalid: it
/// takes part in the exchange only to make the others fail (no scan or
/// phase uses it).
pub(crate) const BAD_ARGS: u8 = 0xff;

/// The count of a host that learns the length from the nodes' data
/// (`reduce`, `gather`, `gatherv` to the host): any count matches it.
pub(crate) const ANY_COUNT: u64 = u64::MAX;

/// splitmix64's finaliser: the mixing function of the count digests.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A digest of a counts vector (order matters), never 0.
pub(crate) fn counts_digest(counts: &[usize]) -> u64 {
    counts
        .iter()
        .fold(mix(counts.len() as u64), |h, &c| mix(h ^ c as u64))
        | 1
}

/// The digest of one message of an all-to-allv: `count` elements from
/// node `from` to node `to`. Sums of these over every pair agree between
/// senders and receivers when the counts do.
pub(crate) fn pair_digest(from: usize, to: usize, count: usize) -> u64 {
    mix(mix(mix(from as u64) ^ to as u64) ^ count as u64)
}

/// The code of all-to-allv, whose signature carries its digests where
/// the others carry count and counts digest.
const ALLTOALLV: u8 = Collective::Alltoallv.code();

impl Signature {
    /// The signature of a call of `kind` with root code `root` (-1: none,
    /// -2: the host), `check` and operator code `operator` (0: none).
    pub(crate) fn of(
        kind: Collective,
        root: i64,
        check: &super::call::Check,
        operator: u8,
        opts: Opts,
    ) -> Signature {
        // The digests of an all-to-allv's main phase are where the others'
        // count and counts digest are (`Check`); its signature carries no
        // count (nor does its count exchange phase's).
        let a2a = kind == Collective::Alltoallv;
        let digests = a2a && check.variant == 0;
        let (count, digest) = (check.count, check.digest);
        Signature {
            op: kind.code(),
            root,
            count: if a2a { 0 } else { count },
            elem: check.elem,
            operator,
            variant: check.variant,
            digest: if a2a { 0 } else { digest },
            sends: if digests { count } else { 0 },
            expects: if digests { digest } else { 0 },
            opts,
        }
    }

    /// [`SIG_BYTES`] bytes: operation, element type, operator, variant,
    /// the root (`i32`), then count and counts digest — or, for
    /// all-to-allv (whose count is per node), the send and expect digests
    /// — then the options: algorithm (`u16`), flags, topology and segment
    /// size (`u32`).
    pub(crate) fn encode(&self) -> [u8; SIG_BYTES] {
        let mut b = [0u8; SIG_BYTES];
        b[0] = self.op;
        b[1] = self.elem;
        b[2] = self.operator;
        b[3] = self.variant;
        b[4..8].copy_from_slice(&(self.root as i32).to_le_bytes());
        let (x, y) = if self.op == ALLTOALLV {
            (self.sends, self.expects)
        } else {
            (self.count, self.digest)
        };
        b[8..16].copy_from_slice(&x.to_le_bytes());
        b[16..24].copy_from_slice(&y.to_le_bytes());
        b[24..26].copy_from_slice(&self.opts.algorithm.to_le_bytes());
        b[26] = self.opts.flags;
        b[27] = self.opts.topology;
        b[28..32].copy_from_slice(&self.opts.segment.to_le_bytes());
        b
    }
    pub(crate) fn decode(b: &[u8]) -> Signature {
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let (x, y) = (u64_at(8), u64_at(16));
        let a2a = b[0] == ALLTOALLV;
        Signature {
            op: b[0],
            elem: b[1],
            operator: b[2],
            variant: b[3],
            root: i32::from_le_bytes(b[4..8].try_into().expect("4 bytes")) as i64,
            count: if a2a { 0 } else { x },
            digest: if a2a { 0 } else { y },
            sends: if a2a { x } else { 0 },
            expects: if a2a { y } else { 0 },
            opts: Opts {
                algorithm: u16::from_le_bytes([b[24], b[25]]),
                flags: b[26],
                topology: b[27],
                segment: u32::from_le_bytes(b[28..32].try_into().expect("4 bytes")),
            },
        }
    }
}

/// What a signature's variant byte means (scans: direction, inclusion and
/// segmentation; composed calls: the phase).
fn variant_name(op: u8, v: u8) -> String {
    if matches!(op, 10 | 11 | 17) {
        format!(
            "({}, {}, {})",
            if v & 1 == 0 { "upward" } else { "downward" },
            if v & 2 == 0 { "inclusive" } else { "exclusive" },
            match v >> 2 {
                0 => "not segmented",
                1 => "segment_bit",
                _ => "start_bit",
            }
        )
    } else if v == 0 {
        "main phase".into()
    } else {
        format!("count exchange phase {v}")
    }
}

fn root_name(r: i64) -> String {
    match r {
        -1 => "none".into(),
        -2 => "the host".into(),
        r => format!("rank {r}"),
    }
}

/// Whether the exchanged signatures (`SIG_BYTES` each) are all the same
/// bytes and such that [`compare`] finds nothing: the common case, told
/// without decoding or allocating. (Equal all-to-allv signatures may still
/// disagree in their sums, and equal invalid ones are still invalid.)
fn agree(all: &[u8]) -> bool {
    let Some(first) = all.get(..SIG_BYTES) else {
        return false;
    };
    first[0] != ALLTOALLV && first[3] != BAD_ARGS && all.chunks(SIG_BYTES).all(|c| c == first)
}

/// The outcome of a signature exchange whose output is `all` (every
/// participant's signature in participant order; `with_host`: the last is
/// the host's): a mismatch names the ranks and fields that differ.
pub(crate) fn verdict(all: &[u8], with_host: bool) -> Result<()> {
    if agree(all) {
        return Ok(());
    }
    let sigs: Vec<Signature> = all.chunks(SIG_BYTES).map(Signature::decode).collect();
    match compare(&sigs, &rank_list(sigs.len(), with_host)) {
        Some(msg) => {
            let what = op_name_of(
                sigs.iter()
                    .map(|s| s.op)
                    .filter(|&o| o > 0)
                    .min()
                    .unwrap_or(0),
            );
            Err(Error::CollectiveMismatch(format!("{what}: {msg}")))
        }
        None => Ok(()),
    }
}

/// Compare every participant's signature with participant 0's; describe the
/// differences, naming ranks and fields.
pub(crate) fn compare(sigs: &[Signature], ranks: &[Rank]) -> Option<String> {
    // The ranks, by name, whose signature is `such`.
    let ranks_where = |such: fn(&Signature) -> bool| -> Option<String> {
        let names: Vec<String> = sigs
            .iter()
            .zip(ranks)
            .filter(|(s, _)| such(s))
            .map(|(_, r)| r.to_string())
            .collect();
        (!names.is_empty()).then(|| names.join(", "))
    };
    if let Some(bad) = ranks_where(|s| s.variant == BAD_ARGS) {
        return Some(format!(
            "{bad} called it with invalid arguments (its own error says which)"
        ));
    }
    // No operation has code 0: such a signature is a board slot that a
    // participant without check mode never wrote.
    if let Some(silent) = ranks_where(|s| s.op == 0) {
        return Some(format!(
            "{silent} stated no signature: check mode is off there (set_check must be the same on every rank)"
        ));
    }
    // The first participant that states a count is the reference for
    // counts (a host that learns the length states none).
    let count_ref = sigs.iter().position(|s| s.count != ANY_COUNT);
    let base = sigs[0];
    let mut diffs = Vec::new();
    for (i, s) in sigs.iter().enumerate() {
        let mut f = Vec::new();
        if i > 0 {
            if s.op != base.op {
                f.push(format!(
                    "operation {} vs {}",
                    op_name_of(s.op),
                    op_name_of(base.op)
                ));
            }
            if s.root != base.root {
                f.push(format!(
                    "root {} vs {}",
                    root_name(s.root),
                    root_name(base.root)
                ));
            }
            if s.elem != base.elem {
                f.push(format!(
                    "element type {} vs {}",
                    super::ops::element_name(s.elem),
                    super::ops::element_name(base.elem)
                ));
            }
            if s.operator != base.operator {
                f.push(format!(
                    "operator {} vs {}",
                    super::ops::operator_name(s.operator),
                    super::ops::operator_name(base.operator)
                ));
            }
            if s.variant != base.variant {
                f.push(format!(
                    "variant {} vs {}",
                    variant_name(s.op, s.variant),
                    variant_name(base.op, base.variant)
                ));
            }
            if s.digest != base.digest {
                f.push("counts (per-node lengths) differ".to_string());
            }
            let opts = s.opts.differences(&base.opts);
            if !opts.is_empty() {
                f.push(format!("options differ ({})", opts.join(", ")));
            }
        }
        let r = count_ref.unwrap_or(0);
        if i > r && s.count != ANY_COUNT && s.count != sigs[r].count {
            f.push(if r == 0 {
                format!("count {} vs {}", s.count, sigs[r].count)
            } else {
                format!("count {} vs {} of {}", s.count, sigs[r].count, ranks[r])
            });
        }
        if !f.is_empty() {
            diffs.push(format!(
                "{} differs from {}: {}",
                ranks[i],
                ranks[0],
                f.join(", ")
            ));
        }
    }
    if diffs.is_empty() && sigs.iter().all(|s| s.op == base.op) {
        let sends = sigs.iter().fold(0u64, |a, s| a.wrapping_add(s.sends));
        let expects = sigs.iter().fold(0u64, |a, s| a.wrapping_add(s.expects));
        if sends != expects {
            diffs.push(
                "the send and receive counts do not agree: some node's recv_counts[q] \
                 is not what node q's send_counts give it"
                    .to_string(),
            );
        }
    }
    (!diffs.is_empty()).then(|| diffs.join("; "))
}

/// An operator for schedules that never reduce.
#[derive(Clone, Copy)]
pub(crate) struct NoOp;
impl<T: Element> Operator<T> for NoOp {
    fn combine(&self, a: T, _b: T) -> T {
        a
    }
    fn identity(&self) -> Option<T> {
        None
    }
    fn code(&self) -> u8 {
        0
    }
    fn name(&self) -> &'static str {
        "none"
    }
}

/// The check stage: the signature exchange, over buffers it owns.
struct CheckStage {
    exec: Exec<'static, u8, NoOp>,
    /// Whether the host is the last participant (names the ranks).
    with_host: bool,
}

/// What the check stage needs to know about a call.
pub(crate) struct CheckSpec {
    pub(crate) sig: Signature,
    /// The exchange's schedule (`Comm::check_schedule`).
    pub(crate) sched: Rc<Schedule>,
    /// The call's route with the check stage's own tag.
    pub(crate) route: Route,
    pub(crate) with_host: bool,
}

/// A last step over a task's output.
pub(crate) type Then<'a, T> = Box<dyn FnOnce(&mut [T]) + 'a>;

/// What a task does with its output once the schedule has run.
pub(crate) enum Finish<'a, T> {
    /// Fill it with a value (an exclusive scan's first participant gets
    /// the operator's identity).
    Fill(T),
    /// Hand it to a function (a segmented scan's local last step, from the
    /// lifted prefixes to the caller's output).
    With(Then<'a, T>),
}

impl<T: Element> Finish<'_, T> {
    /// Do it to `out`.
    pub(crate) fn apply(self, out: &mut [T]) {
        match self {
            Finish::Fill(v) => out.fill(v),
            Finish::With(f) => f(out),
        }
    }
}

/// Record the block_end of a traced task (once).
fn end_block(block: &mut Option<(u8, Option<u32>, u32)>) {
    if let Some((op, root, seq)) = block.take() {
        crate::trace::recorder::hook(crate::trace::event::Event::BlockEnd { op, root, seq });
    }
}

/// A collective over buffers borrowed for `'a`: check stage (optional)
/// then the main schedule, then the finishing step.
pub(crate) struct CollTask<'a, T: Element, O: Operator<T>> {
    /// Boxed: most calls run without it, and the task is moved a few times
    /// on its way to the executor loop.
    check: Option<Box<CheckStage>>,
    main: Exec<'a, T, O>,
    /// Runs after the main schedule succeeded.
    finish: Option<Finish<'a, T>>,
    /// The outcome once finished (the error boxed: it is rare, and the
    /// task is moved a few times on its way to the wait loop).
    result: Option<std::result::Result<(), Box<Error>>>,
    /// Trace block record to close: (operation code, root endpoint, sequence).
    block: Option<(u8, Option<u32>, u32)>,
}

impl<'a, T: Element, O: Operator<T>> CollTask<'a, T, O> {
    /// A task around `main`; with `check`, a signature exchange among the
    /// participants runs beside it.
    pub(crate) fn new(
        main: Exec<'a, T, O>,
        check: Option<CheckSpec>,
        finish: Option<Finish<'a, T>>,
    ) -> Result<Self> {
        let check = match check {
            None => None,
            Some(CheckSpec {
                sig,
                sched,
                route,
                with_host,
            }) => {
                let p = route.eps.len();
                let exec = Exec::new(
                    sched,
                    route,
                    Input::Owned(sig.encode().to_vec()),
                    Output::Owned(vec![0u8; SIG_BYTES * p]),
                    None,
                    "check-mode signature exchange",
                )?;
                Some(Box::new(CheckStage { exec, with_host }))
            }
        };
        Ok(CollTask {
            check,
            main,
            finish,
            result: None,
            block: None,
        })
    }

    /// The tag of the main schedule.
    pub(crate) fn tag(&self) -> u32 {
        self.main.tag()
    }

    /// Record a block_begin now and a block_end when the task ends (tracing).
    pub(crate) fn trace(&mut self, op: u8, root: Option<u32>, seq: u32) {
        crate::trace::recorder::hook(crate::trace::event::Event::BlockBegin { op, root, seq });
        self.block = Some((op, root, seq));
    }
}

impl<T: Element, O: Operator<T>> Task for CollTask<'_, T, O> {
    fn advance(&mut self, e: &Engine) -> bool {
        if self.result.is_some() {
            return true;
        }
        if let Some(CheckStage {
            exec: ex,
            with_host,
        }) = self.check.as_deref_mut()
        {
            // The signature exchange and the collective itself run side by
            // side (a check costs the longer of the two, not their sum); the
            // collective's outcome counts only once the signatures agree.
            // On a mismatch the collective may have stalled, failed on a
            // length, or finished with garbage: it is withdrawn and the
            // mismatch reported, on every rank alike.
            let checked = ex.advance(e);
            self.main.advance(e);
            if !checked {
                return false;
            }
            let verdict = ex
                .take_result()
                .unwrap_or(Ok(()))
                .and_then(|()| verdict(ex.output(), *with_host));
            if let Err(err) = verdict {
                self.main.withdraw(e);
                self.result = Some(Err(Box::new(err)));
                return true;
            }
            self.check = None;
        }
        if !self.main.advance(e) {
            return false;
        }
        let r = self.main.take_result().unwrap_or(Ok(()));
        if r.is_ok() {
            if let Some(f) = self.finish.take() {
                f.apply(self.main.output());
            }
        }
        self.result = Some(r.map_err(Box::new));
        true
    }
    fn take_result(&mut self) -> Option<Result<()>> {
        end_block(&mut self.block);
        self.result.take().map(|r| r.map_err(|e| *e))
    }
    fn group(&self) -> &Rc<Group> {
        self.main.group()
    }
    fn describe(&self) -> String {
        match &self.check {
            Some(c) => c.exec.describe(),
            None => self.main.describe(),
        }
    }
    fn withdraw(&mut self, e: &Engine) {
        end_block(&mut self.block);
        if let Some(c) = &mut self.check {
            c.exec.withdraw(e);
        }
        self.main.withdraw(e);
    }
}

/// The name of the operation a signature's code stands for.
fn op_name_of(code: u8) -> &'static str {
    Collective::from_code(code).map_or("collective", Collective::name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::call::Check;
    use crate::collective::CollOpts;
    use hypercomm_algo::{Algorithm, Topology};

    fn sig(op: Collective, count: u64) -> Signature {
        Signature {
            op: op.code(),
            root: -2,
            count,
            elem: 3,
            operator: 1,
            variant: 0,
            digest: 0,
            sends: 0,
            expects: 0,
            opts: Opts::default(),
        }
    }

    fn opts(algorithm: Algorithm, reproducible: bool, segment: Option<usize>) -> Opts {
        let call = CollOpts {
            algorithm,
            reproducible,
            segment_bytes: segment,
        };
        Opts::of(&Check::of::<u8>(0, &call), Topology::Auto, false)
    }

    #[test]
    fn signatures_round_trip_in_sig_bytes() {
        let s = Signature {
            digest: counts_digest(&[1, 2, 3]),
            ..sig(Collective::Gatherv, 6)
        };
        assert_eq!(Signature::decode(&s.encode()), s);
        let o = Signature {
            opts: Opts::of(
                &Check::of::<u8>(
                    0,
                    &CollOpts {
                        algorithm: Algorithm::Ring,
                        reproducible: true,
                        segment_bytes: Some(1 << 40),
                    },
                ),
                Topology::BiRing(hypercomm_algo::RingOrder {
                    gray: true,
                    forward: false,
                }),
                true,
            ),
            ..sig(Collective::Allreduce, 6)
        };
        assert_eq!(o.opts.segment, u32::MAX);
        assert_eq!(Signature::decode(&o.encode()), o);
        let any = Signature {
            opts: Opts::ANY,
            ..sig(Collective::Bcast, 1)
        };
        assert_eq!(Signature::decode(&any.encode()), any);
        let a = Signature {
            sends: 7,
            expects: u64::MAX,
            ..sig(Collective::Alltoallv, 0)
        };
        assert_eq!(Signature::decode(&a.encode()), a);
    }

    #[test]
    fn differing_options_are_named() {
        let ranks = rank_list(3, false);
        let mut sigs = vec![sig(Collective::Allreduce, 4); 3];
        sigs[0].opts = opts(Algorithm::Auto, true, None);
        sigs[1].opts = opts(Algorithm::Ring, true, None);
        sigs[2].opts = opts(Algorithm::Auto, false, Some(4096));
        let m = compare(&sigs, &ranks).expect("a mismatch");
        assert!(
            m.contains("rank 1 differs from rank 0: options differ (algorithm ring vs auto)"),
            "{m}"
        );
        assert!(
            m.contains(
                "rank 2 differs from rank 0: options differ (reproducible off vs on, \
                 segment_bytes 4096 bytes vs not given)"
            ),
            "{m}"
        );
        let ring = |o| Opts::of(&Default::default(), Topology::Ring(o), true);
        sigs = vec![sig(Collective::Bcast, 4); 2];
        sigs[1].opts = ring(hypercomm_algo::RingOrder::GRAY);
        let m = compare(&sigs, &ranks[..2]).expect("a mismatch");
        assert!(
            m.contains("topology ring (Gray order, forward) vs auto")
                && m.contains("library collectives on vs off"),
            "{m}"
        );
        sigs[0].opts = sigs[1].opts;
        assert_eq!(compare(&sigs, &ranks[..2]), None);
    }

    #[test]
    fn a_host_that_states_no_options_matches_any() {
        let mut sigs = [sig(Collective::Bcast, 4); 3];
        sigs[0].opts = opts(Algorithm::Binomial, true, Some(64));
        sigs[1].opts = sigs[0].opts;
        sigs[2].opts = Opts::ANY;
        let all: Vec<u8> = sigs.iter().flat_map(|s| s.encode()).collect();
        assert!(verdict(&all, true).is_ok());
        sigs[1].opts = Opts::default();
        let all: Vec<u8> = sigs.iter().flat_map(|s| s.encode()).collect();
        let e = verdict(&all, true).expect_err("a mismatch").to_string();
        assert!(
            e.contains("rank 1 differs from rank 0: options differ"),
            "{e}"
        );
        assert!(!e.contains("host"), "{e}");
    }

    #[test]
    fn a_host_that_learns_the_count_matches_any() {
        let ranks = rank_list(3, true);
        let mut sigs = vec![sig(Collective::Reduce, 4); 3];
        sigs[2].count = ANY_COUNT;
        assert_eq!(compare(&sigs, &ranks), None);
        sigs[1].count = 5;
        let m = compare(&sigs, &ranks).expect("a mismatch");
        assert!(m.contains("rank 1") && m.contains("count 5 vs 4"), "{m}");
    }

    #[test]
    fn counts_digests_see_order_and_alltoallv_digests_see_pairs() {
        assert_ne!(counts_digest(&[1, 2]), counts_digest(&[2, 1]));
        assert_ne!(counts_digest(&[]), 0);
        // Two nodes: node 0 sends 2 to node 1, node 1 sends 3 to node 0.
        let send = [[0usize, 2], [3, 0]];
        let digests = |recv: [[usize; 2]; 2]| -> Vec<Signature> {
            (0..2)
                .map(|me| Signature {
                    sends: (0..2)
                        .map(|q| pair_digest(me, q, send[me][q]))
                        .fold(0, u64::wrapping_add),
                    expects: (0..2)
                        .map(|q| pair_digest(q, me, recv[me][q]))
                        .fold(0, u64::wrapping_add),
                    ..sig(Collective::Alltoallv, 0)
                })
                .collect()
        };
        let ranks = rank_list(2, false);
        assert_eq!(compare(&digests([[0, 3], [2, 0]]), &ranks), None);
        let m = compare(&digests([[0, 2], [2, 0]]), &ranks).expect("a mismatch");
        assert!(m.contains("recv_counts"), "{m}");
    }

    #[test]
    fn bad_arguments_are_named() {
        let ranks = rank_list(3, true);
        let mut sigs = vec![sig(Collective::Scatter, 2); 3];
        sigs[2].variant = BAD_ARGS;
        let m = compare(&sigs, &ranks).expect("a mismatch");
        assert!(
            m.starts_with("the host called it with invalid arguments"),
            "{m}"
        );
    }
}
