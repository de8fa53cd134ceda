//! One value in, one value out: the collectives most programs call every
//! iteration (a residual's maximum, a sum of counts, a flag to everyone)
//! without wrapping the value in a slice and taking `[0]` out again.
//!
//! ```
//! use hypercomm::prelude::*;
//! let out = hypercomm::run(4, |comm| {
//!     let me = comm.rank() as u64;
//!     let total = comm.allreduce_one(me + 1, Sum)?;      // 1 + 2 + 3 + 4
//!     let biggest = comm.allreduce_one(me as f64, Max)?;
//!     let before = comm.exscan_one(me + 1, Sum)?;         // sum over lower ranks
//!     let from_root = comm.bcast_one(if me == 0 { 42u32 } else { 0 }, 0)?;
//!     Ok::<_, Error>((total, biggest, before, from_root))
//! })?;
//! assert_eq!(out[3], (10, 3.0, 6, 42));
//! # Ok::<(), hypercomm::Error>(())
//! ```

use super::ops::{Element, Operator};
use crate::comm::Comm;
use crate::error::Result;
use crate::rank::Rank;

impl Comm {
    /// [`allreduce`](Comm::allreduce) of one value: every node gets
    /// `x0 ⊕ x1 ⊕ …`.
    pub fn allreduce_one<T: Element, O: Operator<T> + 'static>(&self, x: T, op: O) -> Result<T> {
        let mut out = [x];
        self.allreduce_into(&[x], &mut out, op)?;
        Ok(out[0])
    }

    /// [`reduce`](Comm::reduce) of one value: the root gets
    /// `Some(x0 ⊕ x1 ⊕ …)`, the others `None`.
    pub fn reduce_one<T: Element, O: Operator<T> + 'static>(
        &self,
        x: T,
        op: O,
        root: impl Into<Rank>,
    ) -> Result<Option<T>> {
        Ok(self
            .reduce(&[x], op, root)?
            .and_then(|v| v.first().copied()))
    }

    /// [`bcast`](Comm::bcast) of one value: everybody returns the root's
    /// `x` (the others' `x` is not used).
    pub fn bcast_one<T: Element>(&self, x: T, root: impl Into<Rank>) -> Result<T> {
        let mut buf = [x];
        self.bcast(&mut buf, root)?;
        Ok(buf[0])
    }

    /// [`allgather`](Comm::allgather) of one value per node: everybody
    /// gets `[x0, x1, …]` in rank order.
    pub fn allgather_one<T: Element>(&self, x: T) -> Result<Vec<T>> {
        self.allgather(&[x])
    }

    /// [`gather`](Comm::gather) of one value per node: the root gets
    /// `Some([x0, x1, …])`, the others `None`.
    pub fn gather_one<T: Element>(&self, x: T, root: impl Into<Rank>) -> Result<Option<Vec<T>>> {
        self.gather(&[x], root)
    }

    /// Inclusive [`scan`](Comm::scan) of one value: node r gets
    /// `x0 ⊕ … ⊕ xr`.
    pub fn scan_one<T: Element, O: Operator<T> + 'static>(&self, x: T, op: O) -> Result<T> {
        Ok(self.scan(&[x], op)?[0])
    }

    /// Exclusive [`exscan`](Comm::exscan) of one value: node r gets
    /// `x0 ⊕ … ⊕ x(r-1)`, node 0 the operator's identity.
    pub fn exscan_one<T: Element, O: Operator<T> + 'static>(&self, x: T, op: O) -> Result<T> {
        Ok(self.exscan(&[x], op)?[0])
    }
}
