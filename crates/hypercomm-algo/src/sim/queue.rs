//! The event queue: a radix heap on the bits of non-negative `f64` times
//! (their order as unsigned integers is their order as numbers); events at
//! the same time come out in order of a tie key, and in the order they
//! were queued among equal keys.
//!
//! A discrete-event simulation never schedules an event before the one it
//! is handling, so the queue is monotone: every time pushed is at least the
//! last one popped. Bucket i holds the events whose time's highest bit that
//! differs from the last popped time is bit i. A push is one comparison and
//! a vector push; when the events at the current time run out, the smallest
//! non-empty bucket moves down (each event moves at most 64 times), and the
//! events at its earliest time are sorted by tie key (a stable radix sort
//! when there are many). The simulator uses the sending node as the tie key,
//! so that simultaneous requests are served in node order — and so that it
//! touches its per-node state in memory order, which makes a million-node
//! step several times faster than in the order the events were made.

/// A monotone priority queue of `(time, tie, item)`.
#[derive(Debug, Clone)]
pub struct EventQueue<T> {
    /// Events at exactly the current time, sorted by tie key; `head` is the
    /// next to take.
    current: Vec<(u64, T)>,
    head: usize,
    /// Events queued at the current time while it is being handled, sorted
    /// by tie key (FIFO among equal keys).
    late: std::collections::VecDeque<(u64, T)>,
    /// `buckets[i]`: events whose time differs from `last` first in bit i.
    buckets: Vec<Vec<(u64, u64, T)>>,
    /// Emptied buckets' memory, for the next bucket that fills (a million
    /// events a step would otherwise fault in fresh pages every step).
    spare: Vec<Vec<(u64, u64, T)>>,
    scratch: Vec<(u64, T)>,
    /// The counting sort's counts, kept (fresh ones would be fresh pages
    /// every step).
    count: Vec<u32>,
    last: u64,
    len: usize,
}

impl<T: Copy> Default for EventQueue<T> {
    fn default() -> Self {
        EventQueue::new()
    }
}

fn key(t: f64) -> u64 {
    // +0.0 and -0.0 are the same time.
    (t + 0.0).to_bits()
}

fn bucket(k: u64, last: u64) -> usize {
    (u64::BITS - 1 - (k ^ last).leading_zeros()) as usize
}

impl<T: Copy> EventQueue<T> {
    /// An empty queue at time 0.
    pub fn new() -> Self {
        EventQueue {
            current: Vec::new(),
            head: 0,
            late: Default::default(),
            buckets: (0..64).map(|_| Vec::new()).collect(),
            spare: Vec::new(),
            scratch: Vec::new(),
            count: Vec::new(),
            last: 0,
            len: 0,
        }
    }

    /// Number of queued events.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no event is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The time of the last event popped (0 at first).
    pub fn now(&self) -> f64 {
        f64::from_bits(self.last)
    }

    /// Queue `item` at time `t` with tie key `tie`.
    ///
    /// # Panics
    /// When `t` is not a finite time ≥ 0 or lies before [`Self::now`]
    /// (a bug of the simulation: events never go back in time).
    #[inline]
    pub fn push(&mut self, t: f64, tie: u64, item: T) {
        assert!(
            t >= self.now() && t.is_finite(),
            "event at {t}, before now ({})",
            self.now()
        );
        let k = key(t);
        if k == self.last {
            // After the queued ones with a key ≤ tie.
            let at = self.late.partition_point(|e| e.0 <= tie);
            self.late.insert(at, (tie, item));
        } else {
            let b = &mut self.buckets[bucket(k, self.last)];
            if b.capacity() == 0 {
                if let Some(v) = self.spare.pop() {
                    *b = v;
                }
            }
            b.push((k, tie, item));
        }
        self.len += 1;
    }

    /// The earliest event, `(time, tie, item)`.
    #[inline]
    pub fn pop(&mut self) -> Option<(f64, u64, T)> {
        if self.head == self.current.len() && self.late.is_empty() {
            self.refill()?;
        }
        let now = f64::from_bits(self.last);
        let take_late = match (self.current.get(self.head), self.late.front()) {
            (Some(c), Some(l)) => l.0 < c.0,
            (None, Some(_)) => true,
            _ => false,
        };
        self.len -= 1;
        let (tie, item) = if take_late {
            self.late.pop_front().expect("checked")
        } else {
            self.head += 1;
            self.current[self.head - 1]
        };
        Some((now, tie, item))
    }

    /// The time of the earliest event, if any.
    pub fn peek_time(&self) -> Option<f64> {
        if self.head < self.current.len() || !self.late.is_empty() {
            return Some(self.now());
        }
        self.buckets
            .iter()
            .find(|b| !b.is_empty())
            .and_then(|b| b.iter().map(|e| e.0).min())
            .map(f64::from_bits)
    }

    /// Move the smallest non-empty bucket down (nothing is left at the
    /// current time), and sort the events at its earliest time.
    fn refill(&mut self) -> Option<()> {
        let i = self.buckets.iter().position(|b| !b.is_empty())?;
        let moving = std::mem::take(&mut self.buckets[i]);
        self.last = moving.iter().map(|e| e.0).min().expect("not empty");
        self.current.clear();
        self.head = 0;
        for &(k, tie, item) in &moving {
            if k == self.last {
                self.current.push((tie, item));
            } else {
                self.buckets[bucket(k, self.last)].push((k, tie, item));
            }
        }
        // Keep the memory for the next bucket that fills.
        let mut moving = moving;
        moving.clear();
        self.spare.push(moving);
        sort_by_tie(&mut self.current, &mut self.scratch, &mut self.count);
        Some(())
    }
}

/// Stable sort by the first field: nothing when sorted, insertion sort
/// when short, else a radix sort on the bits in which the keys differ.
fn sort_by_tie<T: Copy>(v: &mut Vec<(u64, T)>, scratch: &mut Vec<(u64, T)>, count: &mut Vec<u32>) {
    if v.windows(2).all(|w| w[0].0 <= w[1].0) {
        return;
    }
    if v.len() <= 64 {
        for i in 1..v.len() {
            let mut j = i;
            while j > 0 && v[j - 1].0 > v[j].0 {
                v.swap(j - 1, j);
                j -= 1;
            }
        }
        return;
    }
    let lo = v.iter().map(|e| e.0).min().expect("not empty");
    let span = v.iter().map(|e| e.0 - lo).max().expect("not empty");
    scratch.clear();
    scratch.extend_from_slice(v);
    if span < 4 * v.len() as u64 {
        // Dense keys (a step of a million nodes): one counting pass over
        // the whole key. Events come nearly in order, so its writes stay
        // near its reads, where a radix pass's go to 1 024 places.
        count.clear();
        count.resize(span as usize + 2, 0);
        for e in v.iter() {
            count[(e.0 - lo) as usize + 1] += 1;
        }
        for k in 1..count.len() {
            count[k] += count[k - 1];
        }
        for e in scratch.iter() {
            let c = &mut count[(e.0 - lo) as usize];
            v[*c as usize] = *e;
            *c += 1;
        }
        return;
    }
    let bits = u64::BITS - span.leading_zeros();
    const DIGIT: u32 = 10;
    let mut shift = 0;
    while shift < bits {
        let mut count = vec![0usize; 1 << DIGIT];
        let digit = |k: u64| ((k - lo) >> shift) as usize & ((1 << DIGIT) - 1);
        for e in v.iter() {
            count[digit(e.0)] += 1;
        }
        let mut sum = 0;
        for c in count.iter_mut() {
            let n = *c;
            *c = sum;
            sum += n;
        }
        for e in v.iter() {
            let d = digit(e.0);
            scratch[count[d]] = *e;
            count[d] += 1;
        }
        std::mem::swap(v, scratch);
        shift += DIGIT;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equal_times_come_out_by_tie_then_in_order() {
        let mut q = EventQueue::new();
        for (i, (t, tie)) in [(3.0, 5), (1.0, 0), (3.0, 2), (2.0, 0), (1.0, 0), (3.0, 2)]
            .into_iter()
            .enumerate()
        {
            q.push(t, tie, i);
        }
        let out: Vec<(f64, u64, usize)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            out,
            [
                (1.0, 0, 1),
                (1.0, 0, 4),
                (2.0, 0, 3),
                (3.0, 2, 2),
                (3.0, 2, 5),
                (3.0, 5, 0)
            ]
        );
        assert!(q.is_empty());
    }

    #[test]
    #[should_panic(expected = "before now")]
    fn going_back_in_time_is_a_bug() {
        let mut q = EventQueue::new();
        q.push(2.0, 0, ());
        q.pop();
        q.push(1.0, 0, ());
    }

    #[test]
    fn the_radix_sort_is_stable() {
        let mut v: Vec<(u64, usize)> = (0..5000)
            .map(|i| ((i * 7919 % 613) as u64 * 1000, i))
            .collect();
        let mut want = v.clone();
        want.sort_by_key(|e| e.0);
        sort_by_tie(&mut v, &mut Vec::new(), &mut Vec::new());
        assert_eq!(v, want);
    }

    proptest! {
        /// The tie sort (a counting pass for dense keys, radix passes for
        /// sparse ones, insertion for short runs) equals a stable sort.
        #[test]
        fn the_tie_sort_is_a_stable_sort(
            keys in prop::collection::vec(0u64..3000, 0..600),
            scale in prop::sample::select(vec![1u64, 7, 1 << 20, 1 << 40]),
            base in 0u64..1 << 30,
        ) {
            let mut v: Vec<(u64, usize)> =
                keys.iter().enumerate().map(|(i, &k)| (base + k * scale, i)).collect();
            let mut want = v.clone();
            want.sort_by_key(|e| e.0);
            sort_by_tie(&mut v, &mut Vec::new(), &mut Vec::new());
            prop_assert_eq!(v, want);
        }

        /// Against a stable sort by (time, tie), with pushes between pops
        /// (some at the current time).
        #[test]
        fn behaves_like_a_stable_sort(
            steps in prop::collection::vec((0u32..4, 0u64..300, 0usize..4), 1..300)
        ) {
            let mut q = EventQueue::new();
            let mut model: Vec<(f64, u64, usize)> = Vec::new();
            for (n, (dt, tie, pops)) in steps.into_iter().enumerate() {
                let t = q.now() + f64::from(dt) / 4.0;
                q.push(t, tie, n);
                model.push((t, tie, n));
                for _ in 0..pops {
                    model.sort_by(|a, b| (a.0, a.1).partial_cmp(&(b.0, b.1)).unwrap());
                    let want = (!model.is_empty()).then(|| model.remove(0));
                    prop_assert_eq!(q.peek_time(), want.map(|w| w.0));
                    prop_assert_eq!(q.pop(), want);
                }
            }
        }
    }
}
