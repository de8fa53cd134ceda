//! The schedule data model: buffers, regions, operations, rounds.
//!
//! A [`Schedule`] is what one participant does in one collective call. It is
//! a list of [`Round`]s; see [`Round`] for the executor semantics. All
//! lengths and offsets are in *elements* of the collective's element type.

/// Which buffer an op refers to (per rank): the caller's input, the caller's
/// output, or a scratch buffer the executor allocates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Buf {
    /// The caller's input buffer (read-only for every schedule).
    Input,
    /// The caller's output buffer.
    Output,
    /// Scratch buffer `i`; its length (in elements) is `Schedule::temps[i]`.
    /// Its initial content is unspecified: schedules always write a temp
    /// region before reading it.
    Temp(u32),
}

/// A contiguous region of one buffer, in ELEMENTS (not bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    /// The buffer.
    pub buf: Buf,
    /// First element.
    pub offset: usize,
    /// Number of elements.
    pub len: usize,
}

impl Region {
    /// A region of `buf` starting at `offset`, `len` elements long.
    pub fn new(buf: Buf, offset: usize, len: usize) -> Self {
        Region { buf, offset, len }
    }
    /// One past the last element.
    pub fn end(&self) -> usize {
        self.offset + self.len
    }
    /// Whether two regions share at least one element (zero-length regions
    /// never overlap anything).
    pub fn overlaps(&self, other: &Region) -> bool {
        self.buf == other.buf
            && self.len > 0
            && other.len > 0
            && self.offset < other.end()
            && other.offset < self.end()
    }
}

/// Shorthand for a region of [`Buf::Input`].
pub fn input(offset: usize, len: usize) -> Region {
    Region::new(Buf::Input, offset, len)
}
/// Shorthand for a region of [`Buf::Output`].
pub fn output(offset: usize, len: usize) -> Region {
    Region::new(Buf::Output, offset, len)
}
/// Shorthand for a region of [`Buf::Temp`]`(i)`.
pub fn temp(i: u32, offset: usize, len: usize) -> Region {
    Region::new(Buf::Temp(i), offset, len)
}

/// One operation of a round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Send `region` to participant `to`.
    Send {
        /// Destination participant.
        to: usize,
        /// What to send.
        region: Region,
    },
    /// Receive from participant `from` into `region`; the message length
    /// must equal `region.len`.
    Recv {
        /// Source participant.
        from: usize,
        /// Where to put it.
        region: Region,
    },
    /// Local elementwise combine: `dst = src ⊕ dst` if `src_first`, else
    /// `dst = dst ⊕ src`. `src_first` is true when `src` holds data that
    /// comes *earlier* in the collective's combine order (lower ranks for
    /// reductions and upward scans; higher ranks for downward scans). This
    /// matters for non-commutative operators. `src.len == dst.len`.
    Reduce {
        /// Operand region.
        src: Region,
        /// Accumulator region (read and written).
        dst: Region,
        /// Whether `src` is the left operand.
        src_first: bool,
    },
    /// Local copy `dst = src` (`src.len == dst.len`, regions do not overlap).
    Copy {
        /// Source region.
        src: Region,
        /// Destination region.
        dst: Region,
    },
}

/// Executor semantics of a round: post every Send and Recv of the round
/// (non-blocking, in the order listed), wait for all of them, THEN apply the
/// local ops (Reduce/Copy) in order. Local ops may also stand in a round with
/// no communication.
///
/// Invariants kept by every generator (and checked by
/// [`crate::check::simulate`]): a region received in a round overlaps no other
/// region sent or received in that round.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// The operations, communication first by convention.
    pub ops: Vec<Op>,
}

/// What one participant does in one collective call.
///
/// Messages between one ordered pair of participants are matched FIFO and
/// must agree in length. Sends are rendezvous: a send completes only when
/// the matching receive is posted. Zero-length messages are real messages
/// (they must be sent and received like any other).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    /// The rounds, executed in order.
    pub rounds: Vec<Round>,
    /// Element length of each `Temp(i)`.
    pub temps: Vec<usize>,
}

impl Schedule {
    /// An empty schedule (nothing to do).
    pub fn new() -> Self {
        Schedule::default()
    }

    /// Allocate a new scratch buffer of `len` elements and return its index.
    pub fn add_temp(&mut self, len: usize) -> u32 {
        self.temps.push(len);
        (self.temps.len() - 1) as u32
    }

    /// Append a round; empty rounds are dropped.
    pub fn push(&mut self, ops: Vec<Op>) {
        if !ops.is_empty() {
            self.rounds.push(Round { ops });
        }
    }

    /// Append a local op to the last round if it exists, otherwise start a
    /// round with it. (Local ops run after the round's communication, so
    /// this is "do it right after the last round".)
    pub fn push_local(&mut self, op: Op) {
        match self.rounds.last_mut() {
            Some(r) => r.ops.push(op),
            None => self.rounds.push(Round { ops: vec![op] }),
        }
    }

    /// Append `other`'s rounds after this schedule's, renumbering `other`'s
    /// temps so they do not collide with ours.
    pub fn then(mut self, other: Schedule) -> Schedule {
        let base = self.temps.len() as u32;
        let remap = |r: Region| match r.buf {
            Buf::Temp(i) => Region::new(Buf::Temp(i + base), r.offset, r.len),
            _ => r,
        };
        for round in other.rounds {
            let ops = round
                .ops
                .into_iter()
                .map(|op| match op {
                    Op::Send { to, region } => Op::Send {
                        to,
                        region: remap(region),
                    },
                    Op::Recv { from, region } => Op::Recv {
                        from,
                        region: remap(region),
                    },
                    Op::Reduce {
                        src,
                        dst,
                        src_first,
                    } => Op::Reduce {
                        src: remap(src),
                        dst: remap(dst),
                        src_first,
                    },
                    Op::Copy { src, dst } => Op::Copy {
                        src: remap(src),
                        dst: remap(dst),
                    },
                })
                .collect();
            self.rounds.push(Round { ops });
        }
        self.temps.extend(other.temps);
        self
    }

    /// The same schedule with every peer `q` of a Send or Recv replaced by
    /// `f(q)`: a schedule made for a sub-group (a row or a column of a
    /// mesh, numbered `0..len`) run by the participants of a larger one.
    pub fn map_peers(mut self, f: impl Fn(usize) -> usize) -> Schedule {
        for op in self.rounds.iter_mut().flat_map(|r| r.ops.iter_mut()) {
            match op {
                Op::Send { to, .. } => *to = f(*to),
                Op::Recv { from, .. } => *from = f(*from),
                _ => {}
            }
        }
        self
    }

    /// The same schedule with every region `r` replaced by `f(r)` (e.g.
    /// shifted to where a sub-group's blocks lie in a larger buffer).
    pub fn map_regions(mut self, f: impl Fn(Region) -> Region) -> Schedule {
        for op in self.rounds.iter_mut().flat_map(|r| r.ops.iter_mut()) {
            match op {
                Op::Send { region, .. } | Op::Recv { region, .. } => *region = f(*region),
                Op::Reduce { src, dst, .. } | Op::Copy { src, dst } => {
                    *src = f(*src);
                    *dst = f(*dst);
                }
            }
        }
        self
    }

    /// Number of messages this participant sends.
    pub fn sends(&self) -> usize {
        self.ops()
            .filter(|op| matches!(op, Op::Send { .. }))
            .count()
    }

    /// Number of elements this participant sends in total.
    pub fn send_volume(&self) -> usize {
        self.ops()
            .map(|op| match op {
                Op::Send { region, .. } => region.len,
                _ => 0,
            })
            .sum()
    }

    /// All ops in execution order.
    pub fn ops(&self) -> impl Iterator<Item = &Op> {
        self.rounds.iter().flat_map(|r| r.ops.iter())
    }
}

/// `Send` shorthand.
pub fn send(to: usize, region: Region) -> Op {
    Op::Send { to, region }
}
/// `Recv` shorthand.
pub fn recv(from: usize, region: Region) -> Op {
    Op::Recv { from, region }
}
/// `Copy` shorthand.
pub fn copy(src: Region, dst: Region) -> Op {
    Op::Copy { src, dst }
}
/// `Reduce` shorthand.
pub fn reduce(src: Region, dst: Region, src_first: bool) -> Op {
    Op::Reduce {
        src,
        dst,
        src_first,
    }
}

/// Displacements (exclusive prefix sums) of `counts`, with the total as the
/// last element (`counts.len() + 1` entries).
pub fn displs(counts: &[usize]) -> Vec<usize> {
    let mut d = Vec::with_capacity(counts.len() + 1);
    let mut acc = 0;
    d.push(0);
    for &c in counts {
        acc += c;
        d.push(acc);
    }
    d
}

/// Split `count` elements into `n` nearly equal blocks (the first
/// `count % n` blocks get one more element).
pub fn even_counts(count: usize, n: usize) -> Vec<usize> {
    (0..n)
        .map(|i| count / n + usize::from(i < count % n))
        .collect()
}

/// ⌈log2 p⌉ for p ≥ 1 (0 for p ≤ 1).
pub fn ceil_log2(p: usize) -> u32 {
    if p <= 1 {
        0
    } else {
        usize::BITS - (p - 1).leading_zeros()
    }
}

/// The largest power of two ≤ p (p ≥ 1).
pub fn floor_pow2(p: usize) -> usize {
    assert!(p >= 1);
    1 << (usize::BITS - 1 - p.leading_zeros())
}
