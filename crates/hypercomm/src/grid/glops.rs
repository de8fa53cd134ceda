//! Global operations over mixed types (GLOPS/GLOPH): one collective call
//! combines a vector whose entries have their own element type and
//! operator — a residual sum in `f64`, a maximum in `f64` and an iteration
//! count in `i32`, say — and delivers the result to every node, to the
//! host, or to both.
//!
//! Each entry travels as a 16-byte slot (its value's bits and a code for
//! its type and operator), so the whole vector is one reduction of the
//! collectives layer, with a combiner that applies each slot's own
//! operator. The reduction is reproducible by default (a bracketing fixed
//! by the number of nodes), so a float sum is the same on every run and
//! every transport. Entries whose type or operator differ between nodes
//! are found by the combiner and reported by every member that gets the
//! result.
//!
//! Not done yet: with `back` off and `host` on, only the host sees entries
//! that differ between nodes (the nodes get no result to check); a user
//! operator per entry (PICL's gcomb0 on one type is `Comm::allreduce` with
//! a `UserOp`).

use crate::collective::{CollOpts, Loc, UserOp};
use crate::comm::Comm;
use crate::error::{Error, Result};
use crate::rank::Rank;

/// A value of a global operation.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Value {
    /// SUPRENUM's real (`real*8`).
    F64(f64),
    /// A single-precision real.
    F32(f32),
    /// A 64-bit integer.
    I64(i64),
    /// SUPRENUM's integer (`integer*4`).
    I32(i32),
    /// An unsigned 64-bit integer.
    U64(u64),
    /// An unsigned 32-bit integer.
    U32(u32),
}

/// The operator of one entry (GLOPS `reop`/`inop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum GlobalOp {
    /// `'+'`.
    Sum,
    /// `'*'`.
    Prod,
    /// `'H'`: the highest value.
    Max,
    /// `'L'`: the lowest value.
    Min,
}

impl GlobalOp {
    /// SUPRENUM's character codes `+ * H L`.
    pub fn from_suprenum(c: char) -> Result<GlobalOp> {
        match c {
            '+' => Ok(GlobalOp::Sum),
            '*' => Ok(GlobalOp::Prod),
            'H' => Ok(GlobalOp::Max),
            'L' => Ok(GlobalOp::Min),
            _ => Err(Error::InvalidArgument {
                op: "glops",
                what: format!("operator {c:?} is not one of + * H L"),
            }),
        }
    }
}

/// One entry of a global operation: a value and its operator.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Glop {
    /// The value (replaced by the result).
    pub value: Value,
    /// How values of the nodes combine.
    pub op: GlobalOp,
}

impl Glop {
    /// An entry.
    pub fn new(value: Value, op: GlobalOp) -> Glop {
        Glop { value, op }
    }

    /// The value as `f64` (any type).
    pub fn as_f64(&self) -> f64 {
        match self.value {
            Value::F64(x) => x,
            Value::F32(x) => x.into(),
            Value::I64(x) => x as f64,
            Value::I32(x) => x.into(),
            Value::U64(x) => x as f64,
            Value::U32(x) => x.into(),
        }
    }

    /// The value as `i64` (integers; floats truncate).
    pub fn as_i64(&self) -> i64 {
        match self.value {
            Value::I64(x) => x,
            Value::I32(x) => x.into(),
            Value::U64(x) => x as i64,
            Value::U32(x) => x.into(),
            Value::F64(x) => x as i64,
            Value::F32(x) => x as i64,
        }
    }
}

/// Where the result of [`Comm::glops`] goes, and how it is combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlopsOpts {
    /// Every node gets the result (GLOPS `back`; default yes).
    pub back: bool,
    /// The host gets it (GLOPS `host`, received with [`Comm::gloph`];
    /// default no).
    pub host: bool,
    /// A bracketing fixed by the number of nodes (default yes).
    pub reproducible: bool,
}

impl Default for GlopsOpts {
    fn default() -> Self {
        GlopsOpts {
            back: true,
            host: false,
            reproducible: true,
        }
    }
}

/// The slot of one entry: the value's bits and `kind << 8 | op`.
type Slot = Loc<u64, u64>;
/// The code of a slot whose members disagreed.
const CLASH: u64 = u64::MAX;

fn encode(g: &Glop) -> Slot {
    let (kind, bits) = match g.value {
        Value::F64(x) => (0u64, x.to_bits()),
        Value::F32(x) => (1, u64::from(x.to_bits())),
        Value::I64(x) => (2, x as u64),
        Value::I32(x) => (3, x as i64 as u64),
        Value::U64(x) => (4, x),
        Value::U32(x) => (5, u64::from(x)),
    };
    let op = match g.op {
        GlobalOp::Sum => 0,
        GlobalOp::Prod => 1,
        GlobalOp::Max => 2,
        GlobalOp::Min => 3,
    };
    Loc {
        value: bits,
        index: kind << 8 | op,
    }
}

fn decode(s: Slot) -> Option<Glop> {
    if s.index == CLASH {
        return None;
    }
    let value = match s.index >> 8 {
        0 => Value::F64(f64::from_bits(s.value)),
        1 => Value::F32(f32::from_bits(s.value as u32)),
        2 => Value::I64(s.value as i64),
        3 => Value::I32(s.value as i64 as i32),
        4 => Value::U64(s.value),
        5 => Value::U32(s.value as u32),
        _ => return None,
    };
    let op = match s.index & 0xff {
        0 => GlobalOp::Sum,
        1 => GlobalOp::Prod,
        2 => GlobalOp::Max,
        3 => GlobalOp::Min,
        _ => return None,
    };
    Some(Glop { value, op })
}

fn fold<T: PartialOrd + Copy>(
    op: GlobalOp,
    a: T,
    b: T,
    add: fn(T, T) -> T,
    mul: fn(T, T) -> T,
) -> T {
    match op {
        GlobalOp::Sum => add(a, b),
        GlobalOp::Prod => mul(a, b),
        GlobalOp::Max => {
            if b > a {
                b
            } else {
                a
            }
        }
        GlobalOp::Min => {
            if b < a {
                b
            } else {
                a
            }
        }
    }
}

/// Combine two slots with the entry's own operator.
fn combine(a: Slot, b: Slot) -> Slot {
    if a.index != b.index || a.index == CLASH {
        return Loc {
            value: 0,
            index: CLASH,
        };
    }
    let (Some(x), Some(y)) = (decode(a), decode(b)) else {
        return Loc {
            value: 0,
            index: CLASH,
        };
    };
    let op = x.op;
    let value = match (x.value, y.value) {
        (Value::F64(p), Value::F64(q)) => Value::F64(fold(op, p, q, |a, b| a + b, |a, b| a * b)),
        (Value::F32(p), Value::F32(q)) => Value::F32(fold(op, p, q, |a, b| a + b, |a, b| a * b)),
        (Value::I64(p), Value::I64(q)) => {
            Value::I64(fold(op, p, q, i64::wrapping_add, i64::wrapping_mul))
        }
        (Value::I32(p), Value::I32(q)) => {
            Value::I32(fold(op, p, q, i32::wrapping_add, i32::wrapping_mul))
        }
        (Value::U64(p), Value::U64(q)) => {
            Value::U64(fold(op, p, q, u64::wrapping_add, u64::wrapping_mul))
        }
        (Value::U32(p), Value::U32(q)) => {
            Value::U32(fold(op, p, q, u32::wrapping_add, u32::wrapping_mul))
        }
        _ => {
            return Loc {
                value: 0,
                index: CLASH,
            }
        }
    };
    encode(&Glop { value, op })
}

fn operator() -> UserOp<Slot> {
    UserOp::commutative(combine)
}

fn decode_all(slots: &[Slot]) -> Result<Vec<Glop>> {
    slots
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            decode(s).ok_or_else(|| {
                Error::CollectiveMismatch(format!(
                    "glops: the nodes passed different types or operators for entry {i}"
                ))
            })
        })
        .collect()
}

impl Comm {
    /// Combine `values` over the nodes, each entry with its own type and
    /// operator, in one collective call (SUPRENUM GLOPS). With `back`, every
    /// node's `values` become the results; with `host`, the host gets them
    /// through [`Comm::gloph`] (called with the same options). Collective
    /// over the nodes, and the host when `host` is set.
    pub fn glops(&self, values: &mut [Glop], opts: &GlopsOpts) -> Result<()> {
        let bad = |what: &str| Error::InvalidArgument {
            op: "glops",
            what: what.into(),
        };
        if self.is_host() {
            return Err(bad("the host receives with gloph"));
        }
        if !opts.back && !opts.host {
            return Err(bad(
                "the result goes nowhere: set back, host or both (GLOPS error 8)",
            ));
        }
        if opts.host && !self.has_host() {
            return Err(bad("host delivery on a communicator without a host"));
        }
        let co = CollOpts {
            reproducible: opts.reproducible,
            ..CollOpts::default()
        };
        let slots: Vec<Slot> = values.iter().map(encode).collect();
        let mut out = vec![Loc::default(); slots.len()];
        if opts.host {
            // 1. To the host; 2. with `back`, from the host to every node.
            self.reduce_into_with(&slots, &mut [], operator(), Rank::Host, &co)?;
            if opts.back {
                self.bcast(&mut out, Rank::Host)?;
            } else {
                return Ok(());
            }
        } else {
            self.allreduce_into_with(&slots, &mut out, operator(), &co)?;
        }
        let res = decode_all(&out)?;
        values.copy_from_slice(&res);
        Ok(())
    }

    /// The host's side of [`Comm::glops`] with `host` set (SUPRENUM
    /// GLOPH): the combined entries.
    pub fn gloph(&self, opts: &GlopsOpts) -> Result<Vec<Glop>> {
        if !self.is_host() {
            return Err(Error::InvalidArgument {
                op: "gloph",
                what: "only the host receives with gloph; nodes call glops".into(),
            });
        }
        // The bracketing is the nodes' choice (they pass `opts` too).
        let mut out = self
            .reduce::<Slot, _>(&[], operator(), Rank::Host)?
            .unwrap_or_default();
        if opts.back {
            self.bcast(&mut out, Rank::Host)?;
        }
        decode_all(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_round_trip_and_combine() {
        let vals = [
            Glop::new(Value::F64(-2.5), GlobalOp::Sum),
            Glop::new(Value::I32(-7), GlobalOp::Max),
            Glop::new(Value::U32(9), GlobalOp::Min),
            Glop::new(Value::F32(1.5), GlobalOp::Prod),
            Glop::new(Value::I64(-3), GlobalOp::Prod),
            Glop::new(Value::U64(4), GlobalOp::Sum),
        ];
        for v in vals {
            assert_eq!(decode(encode(&v)), Some(v));
        }
        let c = |a: Glop, b: Glop| decode(combine(encode(&a), encode(&b)));
        let g = |v| Glop::new(v, GlobalOp::Max);
        assert_eq!(
            c(g(Value::I32(-7)), g(Value::I32(3))),
            Some(g(Value::I32(3)))
        );
        let s = |v| Glop::new(v, GlobalOp::Sum);
        assert_eq!(
            c(s(Value::F64(0.25)), s(Value::F64(0.5))),
            Some(s(Value::F64(0.75)))
        );
        assert_eq!(
            c(s(Value::F64(1.0)), s(Value::F32(1.0))),
            None,
            "types differ"
        );
        assert_eq!(
            c(s(Value::I32(1)), g(Value::I32(1))),
            None,
            "operators differ"
        );
        assert_eq!(GlobalOp::from_suprenum('H').unwrap(), GlobalOp::Max);
        assert!(GlobalOp::from_suprenum('x').is_err());
    }
}
