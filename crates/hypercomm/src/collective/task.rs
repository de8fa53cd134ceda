//! A collective in flight: the optional check-mode signature exchange,
//! running beside the collective's own schedule, whose result counts once
//! the signatures agree. Blocking calls and non-blocking requests both run
//! one of these.
//!
//! Not done yet: the signature cannot describe per-node counts, so
//! all-to-allv checks only the operation and element type (a count
//! mismatch there is still reported, by the message length).

use super::call::rank_list;
use super::executor::{Exec, Input, Output, Route};
use super::ops::{Element, Operator};
use crate::engine::Task;
use crate::engine::{Engine, Group};
use crate::error::{Error, Result};
use crate::rank::Rank;
use hypercomm_algo::Collective;
use std::sync::Arc;

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
}

pub(crate) const SIG_BYTES: usize = 24;

/// The variant byte of a host-rooted call's node stage when node 0 could
/// not take the host's data (no scan or phase uses it).
pub(crate) const HOST_MISFIT: u8 = 0xff;

impl Signature {
    pub(crate) fn encode(&self) -> [u8; SIG_BYTES] {
        let mut b = [0u8; SIG_BYTES];
        b[0] = self.op;
        b[1] = self.elem;
        b[2] = self.operator;
        b[3] = self.variant;
        b[8..16].copy_from_slice(&self.root.to_le_bytes());
        b[16..24].copy_from_slice(&self.count.to_le_bytes());
        b
    }
    pub(crate) fn decode(b: &[u8]) -> Signature {
        Signature {
            op: b[0],
            elem: b[1],
            operator: b[2],
            variant: b[3],
            root: i64::from_le_bytes(b[8..16].try_into().expect("8 bytes")),
            count: u64::from_le_bytes(b[16..24].try_into().expect("8 bytes")),
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

/// Compare every participant's signature with participant 0's; describe the
/// differences, naming ranks and fields.
pub(crate) fn compare(sigs: &[Signature], ranks: &[Rank]) -> Option<String> {
    if let Some(i) = sigs.iter().position(|s| s.variant == HOST_MISFIT) {
        return Some(format!(
            "{} could not take the host's data for this {}: the host's length \
             differs from the one the nodes call it with",
            ranks[i],
            op_name_of(sigs[i].op)
        ));
    }
    let base = sigs[0];
    let mut diffs = Vec::new();
    for (i, s) in sigs.iter().enumerate().skip(1) {
        let mut f = Vec::new();
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
        if s.count != base.count {
            f.push(format!("count {} vs {}", s.count, base.count));
        }
        if s.elem != base.elem {
            f.push(format!("element type code {} vs {}", s.elem, base.elem));
        }
        if s.operator != base.operator {
            f.push(format!("operator code {} vs {}", s.operator, base.operator));
        }
        if s.variant != base.variant {
            f.push(format!(
                "variant {} vs {}",
                variant_name(s.op, s.variant),
                variant_name(base.op, base.variant)
            ));
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
    /// participants runs beside it (`me` is this participant's index).
    pub(crate) fn new(
        main: Exec<'a, T, O>,
        check: Option<CheckSpec>,
        me: usize,
        finish: Option<Finish<'a, T>>,
    ) -> Result<Self> {
        let check = match check {
            None => None,
            Some(CheckSpec {
                sig,
                route,
                with_host,
            }) => {
                let p = route.eps.len();
                let sched = hypercomm_algo::allgather_bruck(me, &vec![SIG_BYTES; p]);
                let exec = Exec::new(
                    sched.into(),
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
            let verdict = match ex.take_result().unwrap_or(Ok(())) {
                Err(err) => Err(err),
                Ok(()) => {
                    let sigs: Vec<Signature> = ex
                        .output()
                        .chunks(SIG_BYTES)
                        .map(Signature::decode)
                        .collect();
                    match compare(&sigs, &rank_list(sigs.len(), *with_host)) {
                        Some(msg) => {
                            let what = op_name_of(sigs.iter().map(|s| s.op).min().unwrap_or(0));
                            Err(Error::CollectiveMismatch(format!("{what}: {msg}")))
                        }
                        None => Ok(()),
                    }
                }
            };
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
            match self.finish.take() {
                None => {}
                Some(Finish::Fill(v)) => self.main.output().fill(v),
                Some(Finish::With(f)) => f(self.main.output()),
            }
        }
        self.result = Some(r.map_err(Box::new));
        true
    }
    fn take_result(&mut self) -> Option<Result<()>> {
        end_block(&mut self.block);
        self.result.take().map(|r| r.map_err(|e| *e))
    }
    fn group(&self) -> &Arc<Group> {
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
