//! The blocking halo exchange between threads of one process: every face
//! goes straight from the sender's array into the neighbour's halo, in one
//! copy, whatever its layout (strided faces, colour masks, staggered
//! fields, several fields of different types) — no packing, no message
//! buffer.
//!
//! ## Protocol
//!
//! 1. At the start a rank lends every halo part it will receive: for each
//!    of the plan's receives (all axes) a small message to the sending
//!    neighbour, on that flow's tag in this exchange (the plan's own
//!    context, the exchange's number in the tag: `halo.rs`), carries the
//!    byte count, a [`Gate`] (as a raw `Arc`), the receiver's [`Xfer`]
//!    (its runs) and the base address of each field's storage.
//! 2. Then axis after axis: for each face it sends, a rank takes the
//!    neighbour's offer, marks the borrow in use
//!    ([`Gate::enter`]), copies its own runs into the
//!    neighbour's, element by element in the order the packed exchange
//!    uses, marks it done, and tells the neighbour on the flow's tag with
//!    bit 3 set (0: copied; 1: the offer did not match). A face to itself
//!    (a periodic axis of one rank) is copied within the array. Then it
//!    waits for its own halos of that axis to be written the same way.
//!
//! A rank returns when its halos are filled and its faces written; nobody
//! touches its arrays afterwards. If anything fails, it revokes the offers
//! still open before it returns ([`Gate::revoke`] waits out a copy
//! under way, and a writer that comes later writes nothing).
//!
//! ## Why the concurrent accesses do not race
//!
//! Along axis `a` a rank's halo cells (those beyond its inner range along
//! `a`, corners included) are written only by the neighbour sending along
//! `a`, and read by the rank itself only after it heard that they are
//! written (for the faces of later axes, which extend over earlier halos,
//! and by the caller after the exchange). Inner cells are only read. All
//! accesses during the exchange go through raw pointers taken once from
//! the fields, so no reference covers memory another thread writes.
//!
//! Not done yet: the split-phase exchange ([`super::Halo::start`]) takes
//! its values at the start and packs them; processes (shm) copy faces in
//! messages, contiguous ones of one field straight from the array above
//! the eager limit.

use super::field::{FieldData, Run};
use super::halo::{mismatch, wrong_size, Halo, Turn};
use super::plan::Xfer;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// A halo lent to the neighbour that writes it: the writer enters
/// ([`G_OPEN`] → [`G_WRITING`]) and leaves ([`G_WRITTEN`]); the lender may give
/// it up ([`G_OPEN`] → [`G_REVOKED`]), waiting out a write under way, after
/// which nobody enters.
pub(super) struct Gate(AtomicU8);

const G_OPEN: u8 = 0;
const G_WRITING: u8 = 1;
const G_WRITTEN: u8 = 2;
const G_REVOKED: u8 = 3;

impl Gate {
    /// Start writing: false when the lender gave the halo up.
    fn enter(&self) -> bool {
        self.0
            .compare_exchange(G_OPEN, G_WRITING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
    /// Done writing.
    fn leave(&self) {
        self.0.store(G_WRITTEN, Ordering::Release);
    }
    /// Give the halo up: afterwards nobody writes it.
    fn revoke(&self) {
        loop {
            match self
                .0
                .compare_exchange(G_OPEN, G_REVOKED, Ordering::AcqRel, Ordering::Acquire)
            {
                Err(G_WRITING) => std::thread::yield_now(),
                _ => return,
            }
        }
    }
}

/// Bit of a flow's tag that marks the message saying its faces are written.
const WRITTEN: u32 = 8;
/// Words of an offer before the fields' base addresses.
const HEAD: usize = 3;

impl Halo {
    /// Exchange the halos of `fs` between threads, in place (see the module
    /// docs). The fields are checked against the plan already.
    pub(super) fn exchange_in_place(
        &self,
        fs: &mut [&mut dyn FieldData],
        turn: Turn,
    ) -> Result<()> {
        for (i, f) in fs.iter_mut().enumerate() {
            let want = f.storage().count() * f.elem_size();
            if f.as_bytes_mut().len() != want {
                return Err(Error::InvalidArgument {
                    op: "halo exchange",
                    what: format!(
                        "field {i} holds {} bytes where its storage {:?} needs {want}",
                        f.as_bytes_mut().len(),
                        f.storage()
                    ),
                });
            }
        }
        // Every access until we return goes through these.
        let bases: Vec<*mut u8> = fs
            .iter_mut()
            .map(|f| f.as_bytes_mut().as_mut_ptr())
            .collect();
        let sizes: Vec<usize> = fs.iter().map(|f| f.elem_size()).collect();
        let mut lends = Vec::new();
        let outcome = self.offer_halos(&bases, &mut lends, turn).and_then(|()| {
            (0..self.phases.len()).try_for_each(|a| {
                if self.phases[a].in_place {
                    self.phase_in_place(a, &bases, &sizes, &mut lends, turn)
                } else {
                    self.phase_packed(a, &bases, &sizes, turn)
                }
            })
        });
        // Offers still open (after a failure): nobody may write them now.
        for (_, _, done) in lends {
            done.revoke();
        }
        outcome
    }

    /// Lend every halo part this rank receives to its sender.
    fn offer_halos(
        &self,
        bases: &[*mut u8],
        lends: &mut Vec<(usize, u32, Arc<Gate>)>,
        turn: Turn,
    ) -> Result<()> {
        let mut offer = Vec::with_capacity(HEAD + bases.len());
        for ph in self.phases.iter().filter(|p| p.in_place) {
            for r in ph.recvs.iter().filter(|x| x.peer != self.me) {
                let done = Arc::new(Gate(AtomicU8::new(G_OPEN)));
                offer.clear();
                offer.push(r.bytes as u64);
                offer.push(Arc::into_raw(done.clone()) as u64);
                offer.push(r as *const Xfer as u64);
                offer.extend(bases.iter().map(|&b| b as u64));
                lends.push((r.peer, r.tag, done));
                self.comm.send(&offer, r.peer, turn.tag(r))?;
            }
        }
        Ok(())
    }

    /// Axis `a`: write the neighbours' halos, then wait for ours.
    fn phase_in_place(
        &self,
        a: usize,
        bases: &[*mut u8],
        sizes: &[usize],
        lends: &mut Vec<(usize, u32, Arc<Gate>)>,
        turn: Turn,
    ) -> Result<()> {
        let ph = &self.phases[a];
        // To itself.
        for (s, r) in ph.to_itself(self.me) {
            // SAFETY: both run lists lie in this rank's storage (the plan was
            // made for it and the fields were checked against it); a face
            // and a halo are apart.
            unsafe { copy_xfer(s, bases, r, bases, sizes) }
                .ok_or_else(|| mismatch(self.me, "faces to itself differ"))?;
        }
        // The neighbours' halos.
        let mut offer = vec![0u64; HEAD + bases.len()];
        for s in ph.sends.iter().filter(|x| x.peer != self.me) {
            let tag = turn.tag(s);
            let st = self.comm.recv_into(&mut offer, s.peer, tag)?;
            if st.len != offer.len() * 8 {
                self.comm.send(&[1u64], s.peer, tag | WRITTEN)?;
                return Err(mismatch(s.peer, "its halo has another number of fields"));
            }
            // SAFETY: an offer of this length and tag comes from
            // `offer_halos` of the same exchange of the same plan at
            // `s.peer` (the plan's context; the exchange's number is in the
            // tag), a thread of this process: the Arc was leaked for us to
            // take.
            let done = unsafe { Arc::from_raw(offer[1] as *const Gate) };
            if offer[0] as usize != s.bytes {
                self.comm.send(&[1u64], s.peer, tag | WRITTEN)?;
                return Err(mismatch(
                    s.peer,
                    &format!(
                        "its halo along axis {a} takes {} bytes where this rank sends {}",
                        offer[0], s.bytes
                    ),
                ));
            }
            if !done.enter() {
                // The lender gave up (it failed, or its exchange did).
                return Err(Error::PeerFailed {
                    rank: crate::rank::Rank::Node(s.peer),
                });
            }
            let dst: Vec<*mut u8> = offer[HEAD..].iter().map(|&b| b as *mut u8).collect();
            // SAFETY: the lender waits for our word (or revokes, which waits
            // for `leave`) before it lets go of its arrays and its plan;
            // its runs lie in its storage (checked on its side), ours in
            // ours, and the cells do not race (module docs).
            let copied = unsafe { copy_xfer(s, bases, &*(offer[2] as *const Xfer), &dst, sizes) };
            done.leave();
            self.comm
                .send(&[u64::from(copied.is_none())], s.peer, tag | WRITTEN)?;
            if copied.is_none() {
                return Err(mismatch(
                    s.peer,
                    &format!("its halos along axis {a} differ from this rank's faces"),
                ));
            }
        }
        // Ours.
        for r in ph.recvs.iter().filter(|x| x.peer != self.me) {
            let mut word = [0u64];
            self.comm
                .recv_into(&mut word, r.peer, turn.tag(r) | WRITTEN)?;
            let i = lends
                .iter()
                .position(|l| l.0 == r.peer && l.1 == r.tag)
                .expect("every receive was offered");
            lends.swap_remove(i);
            if word[0] != 0 {
                return Err(mismatch(r.peer, "its faces do not match this rank's halos"));
            }
        }
        Ok(())
    }
}

impl Halo {
    /// Axis `a` with packed messages (faces of short runs), packing and
    /// unpacking through the same raw pointers as the rest of the exchange.
    fn phase_packed(&self, a: usize, bases: &[*mut u8], sizes: &[usize], turn: Turn) -> Result<()> {
        let ph = &self.phases[a];
        let mut local = Vec::new();
        for x in &ph.sends {
            let mut buf = self.buffer(x.bytes);
            // SAFETY: the runs lie in this rank's storage, the buffer has
            // room for the message, which the runs fill (`x.bytes` is their
            // total); the cells do not race (module docs).
            unsafe {
                message_runs(x, bases, buf.as_mut_ptr(), sizes, true);
                buf.set_len(x.bytes);
            }
            if x.peer == self.me {
                local.push((x.tag, buf));
            } else {
                self.comm.send_vec(buf, x.peer, turn.tag(x))?;
            }
        }
        for r in &ph.recvs {
            let mut buf = match local.iter().position(|(t, _)| *t == r.tag) {
                Some(i) => local.swap_remove(i).1,
                None => self.comm.recv_vec::<u8>(r.peer, turn.tag(r))?.0,
            };
            if buf.len() != r.bytes {
                return Err(wrong_size(r, a, buf.len()));
            }
            // SAFETY: as above.
            unsafe { message_runs(r, bases, buf.as_mut_ptr(), sizes, false) };
            self.keep(buf);
        }
        Ok(())
    }
}

/// Pack (`out`) the runs of `x` from the storages at `bases` into the
/// message at `msg`, or unpack them from it.
///
/// # Safety
/// As [`copy_xfer`]; `msg` holds `x.bytes` bytes.
unsafe fn message_runs(x: &Xfer, bases: &[*mut u8], msg: *mut u8, sizes: &[usize], out: bool) {
    let mut at = 0;
    let parts = x.inner.iter().enumerate().chain(x.ext.iter().enumerate());
    for (f, runs) in parts {
        let len = runs.iter().map(|r| r.len).sum::<usize>();
        let whole = [Run {
            start: 0,
            len,
            step: 1,
        }];
        // SAFETY: forwarded; the message's part starts at `at`.
        at += unsafe {
            let m = msg.add(at);
            if out {
                copy_runs(bases[f], runs, m, &whole, sizes[f])
            } else {
                copy_runs(m, &whole, bases[f], runs, sizes[f])
            }
        };
    }
}

/// Copy the message of `s` (each field's inner runs, then each field's
/// runs in earlier halos) from the storages at `src` into the places of
/// `r` in the storages at `dst`. `None`, having copied nothing, when the
/// element counts differ.
///
/// # Safety
/// Every run of `s` lies in the storage at `src` of its field, every run of
/// `r` in the storage at `dst`, with `sizes` the element sizes, and no
/// other thread writes the source cells or touches the destination cells
/// meanwhile.
unsafe fn copy_xfer(
    s: &Xfer,
    src: &[*mut u8],
    r: &Xfer,
    dst: &[*mut u8],
    sizes: &[usize],
) -> Option<usize> {
    let count = |runs: &[Run]| runs.iter().map(|x| x.len).sum::<usize>();
    let parts = || {
        let sp = s.inner.iter().zip(&r.inner).chain(s.ext.iter().zip(&r.ext));
        sp.zip((0..sizes.len()).chain(0..sizes.len()))
    };
    if s.inner.len() != sizes.len() || s.ext.len() != sizes.len() {
        return None;
    }
    if parts().any(|((a, b), _)| count(a) != count(b)) {
        return None;
    }
    let mut n = 0;
    for ((sr, dr), f) in parts() {
        // SAFETY: forwarded.
        n += unsafe { copy_runs(src[f], sr, dst[f], dr, sizes[f]) };
    }
    Some(n)
}

/// Copy the elements at `sruns` of `src` to `druns` of `dst`, in order
/// (both lists hold as many elements); returns the bytes copied.
///
/// # Safety
/// As [`copy_xfer`].
unsafe fn copy_runs(
    src: *const u8,
    sruns: &[Run],
    dst: *mut u8,
    druns: &[Run],
    sz: usize,
) -> usize {
    let (mut si, mut so, mut di, mut dof, mut n) = (0, 0, 0, 0, 0);
    loop {
        while si < sruns.len() && so == sruns[si].len {
            (si, so) = (si + 1, 0);
        }
        while di < druns.len() && dof == druns[di].len {
            (di, dof) = (di + 1, 0);
        }
        let (Some(s), Some(d)) = (sruns.get(si), druns.get(di)) else {
            return n * sz;
        };
        let k = (s.len - so).min(d.len - dof);
        // SAFETY: positions inside the runs, which lie in the storages.
        unsafe {
            let sp = src.add((s.start + so * s.step) * sz);
            let dp = dst.add((d.start + dof * d.step) * sz);
            if s.step == 1 && d.step == 1 {
                std::ptr::copy_nonoverlapping(sp, dp, k * sz);
            } else {
                strided(sp, s.step * sz, dp, d.step * sz, k, sz);
            }
        }
        (so, dof, n) = (so + k, dof + k, n + k);
    }
}

/// `k` elements of `sz` bytes, `ss` and `ds` bytes apart.
///
/// # Safety
/// As [`copy_xfer`].
#[inline]
unsafe fn strided(sp: *const u8, ss: usize, dp: *mut u8, ds: usize, k: usize, sz: usize) {
    // SAFETY: forwarded; unaligned loads and stores, as storages of
    // different element types may sit anywhere.
    unsafe {
        match sz {
            8 => (0..k).for_each(|i| {
                let v = std::ptr::read_unaligned(sp.add(i * ss) as *const u64);
                std::ptr::write_unaligned(dp.add(i * ds) as *mut u64, v);
            }),
            4 => (0..k).for_each(|i| {
                let v = std::ptr::read_unaligned(sp.add(i * ss) as *const u32);
                std::ptr::write_unaligned(dp.add(i * ds) as *mut u32, v);
            }),
            _ => (0..k)
                .for_each(|i| std::ptr::copy_nonoverlapping(sp.add(i * ss), dp.add(i * ds), sz)),
        }
    }
}
