//! Test support: a lock-step simulator for schedules, symbolic data, and
//! per-collective checkers that compare a generator's result with a serial
//! computation.
//!
//! [`simulate`](fn@simulate) runs all `p` schedules together with **rendezvous**
//! semantics: a rank posts every Send and Recv of its current round; a Send
//! and a Recv match when they are the k-th Send from `a` to `b` and the k-th
//! Recv at `b` from `a` (FIFO per ordered pair) and have equal lengths; a
//! rank's round completes when all its posted ops matched, then its local
//! ops run and it posts its next round. If no rank can make progress while
//! some rank is unfinished, that is a deadlock; messages left unmatched at
//! the end are an error too. Data moves at match time; since a round never
//! writes what it sends, this equals "data as of the start of the round".
//!
//! The symbolic element type [`Sym`] is a list of `(rank, index)`
//! contributions and the operator is list concatenation: associative but not
//! commutative, so a result equals the serial fold in the required order
//! exactly or the check fails. Reading or sending an element never written
//! (`None`) is reported as an error, so schedules cannot rely on garbage.
//!
//! Not done yet: the simulator does not model time; that is the job of the
//! library's simulator transport, which runs the same schedules.
//!
//! Files: `simulate.rs` (the lock-step simulator), `collectives.rs`
//! (symbolic data and one checker per collective).

mod collectives;
mod simulate;

pub use collectives::*;
pub use simulate::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Op;
    use crate::schedule::Schedule;
    use crate::schedule::{output, recv, send};

    fn sched(rounds: Vec<Vec<Op>>) -> Schedule {
        let mut s = Schedule::new();
        for r in rounds {
            s.push(r);
        }
        s
    }
    fn init(p: usize, n: usize) -> Init<Sym> {
        (0..p)
            .map(|r| (vec![], (0..n).map(|i| sym(r, i)).collect()))
            .collect()
    }

    #[test]
    fn send_before_recv_on_both_sides_deadlocks_under_rendezvous() {
        let a = sched(vec![
            vec![send(1, output(0, 1))],
            vec![recv(1, output(1, 1))],
        ]);
        let b = sched(vec![
            vec![send(0, output(0, 1))],
            vec![recv(0, output(1, 1))],
        ]);
        let e = simulate(&[a, b], init(2, 2), &concat).unwrap_err();
        assert!(matches!(e, SimError::Deadlock(_)), "{e:?}");
    }

    #[test]
    fn exchange_in_one_round_works() {
        let a = sched(vec![vec![send(1, output(0, 1)), recv(1, output(1, 1))]]);
        let b = sched(vec![vec![send(0, output(0, 1)), recv(0, output(1, 1))]]);
        let out = simulate(&[a, b], init(2, 2), &concat).unwrap();
        assert_eq!(out[0].output[1], sym(1, 0));
        assert_eq!(out[1].output[1], sym(0, 0));
    }

    #[test]
    fn errors_are_detected() {
        let a = sched(vec![vec![send(1, output(0, 2))]]);
        let b = sched(vec![vec![recv(0, output(0, 1))]]);
        assert!(matches!(
            simulate(&[a, b], init(2, 2), &concat),
            Err(SimError::LengthMismatch { .. })
        ));
        let a = sched(vec![vec![send(1, output(0, 1))]]);
        let b = Schedule::new();
        assert!(matches!(
            simulate(&[a, b], init(2, 2), &concat),
            Err(SimError::Deadlock(_))
        ));
        let a = sched(vec![vec![send(1, output(0, 1)), recv(1, output(0, 1))]]);
        let b = sched(vec![vec![send(0, output(0, 1)), recv(0, output(1, 1))]]);
        assert!(matches!(
            simulate(&[a, b], init(2, 2), &concat),
            Err(SimError::Invalid { .. })
        ));
        let a = sched(vec![vec![send(1, output(5, 1))]]);
        let b = sched(vec![vec![recv(0, output(0, 1))]]);
        assert!(matches!(
            simulate(&[a, b], init(2, 2), &concat),
            Err(SimError::Invalid { .. })
        ));
    }

    #[test]
    fn unwritten_data_is_an_error() {
        let a = sched(vec![vec![send(1, output(0, 1))]]);
        let b = sched(vec![vec![recv(0, output(0, 1))]]);
        let init = vec![(vec![], vec![None]), (vec![], vec![None])];
        assert!(matches!(
            simulate(&[a, b], init, &concat),
            Err(SimError::Uninitialized { .. })
        ));
    }
}
