//! Point-to-point operations on a [`Comm`] (SPEC section 2).
//!
//! * Typed slices of [`bytemuck::Pod`] data, and `serde` objects through
//!   [`Comm::send_obj`] / [`Comm::recv_obj`] (encoded with postcard).
//! * Matching on (communicator, source or [`ANY_SOURCE`](crate::ANY_SOURCE),
//!   tag or [`ANY_TAG`](crate::ANY_TAG)); FIFO per sender and communicator.
//! * A receive whose buffer is too small fails with
//!   [`Error::Truncated`] and leaves the message in place;
//!   [`Comm::recv_partial`] takes what fits (CMMD's negotiated length).
//! * CMMD vector messages: [`Comm::send_strided`] gathers `count` elements of
//!   `elem_len` bytes every `stride` bytes into a packed stream;
//!   [`Comm::recv_strided`] scatters a packed stream into its own geometry.
//!   The geometries need not match; a send stride of 0 repeats one element;
//!   a receive stride smaller than the element overwrites.
//!   [`Comm::recv_strided_partial`] is CMMD's negotiated vector receive
//!   (the smaller of the two lengths is transferred), and
//!   [`Comm::send_recv_strided`] / [`Comm::swap_strided`] are
//!   send_and_receive_v / swap_v.
//! * The asynchronous global OR flag of CMMD.
//!
//! CMMD's non-blocking short messages are [`crate::ShortSends`].

use crate::comm::Comm;
use crate::engine::{Layout, Match};
use crate::error::{Error, Result};
use crate::rank::{Partial, Rank, Source, Status, Tag};
use crate::transport::Payload;
use bytemuck::Pod;

/// Gather `count` elements of `elem_len` bytes, `stride` bytes apart, into a
/// packed vector (CMMD send_v). Checks that `buf` is long enough.
pub fn pack_strided(buf: &[u8], elem_len: usize, stride: usize, count: usize) -> Result<Vec<u8>> {
    strided_fits("send_strided", buf.len(), elem_len, stride, count)?;
    let mut out = packed_capacity("send_strided", elem_len, count)?;
    for i in 0..count {
        out.extend_from_slice(&buf[i * stride..i * stride + elem_len]);
    }
    Ok(out)
}

/// A zeroed buffer for `count` packed elements of `elem_len` bytes; an
/// error naming the sizes when that many bytes cannot be had (elements
/// may overlap in the strided buffer, stride 0 repeating one, so the
/// packed form can be far larger than it).
fn packed_buffer(op: &'static str, elem_len: usize, count: usize) -> Result<Vec<u8>> {
    let mut v = packed_capacity(op, elem_len, count)?;
    v.resize(elem_len * count, 0);
    Ok(v)
}

/// An empty vector with room for `count` packed elements of `elem_len`
/// bytes (see [`packed_buffer`]).
fn packed_capacity(op: &'static str, elem_len: usize, count: usize) -> Result<Vec<u8>> {
    let too_large = || Error::InvalidArgument {
        op,
        what: format!("{count} elements of {elem_len} bytes do not fit in memory"),
    };
    let len = elem_len
        .checked_mul(count)
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(too_large)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| too_large())?;
    Ok(v)
}

/// Check that `have` bytes hold `count` elements of `elem_len` bytes every
/// `stride` bytes; the bytes they span.
fn strided_fits(
    op: &'static str,
    have: usize,
    elem_len: usize,
    stride: usize,
    count: usize,
) -> Result<usize> {
    let need = strided_extent(elem_len, stride, count)?;
    if have < need {
        return Err(Error::InvalidArgument {
            op,
            what: format!(
                "{count} elements of {elem_len} bytes every {stride} bytes need a buffer of {need} bytes, but it has {have}"
            ),
        });
    }
    Ok(need)
}

/// Bytes of buffer a strided geometry spans.
fn strided_extent(elem_len: usize, stride: usize, count: usize) -> Result<usize> {
    if count == 0 || elem_len == 0 {
        return Ok(0);
    }
    (count - 1)
        .checked_mul(stride)
        .and_then(|x| x.checked_add(elem_len))
        .ok_or_else(|| Error::InvalidArgument {
            op: "strided message",
            what: format!("{count} elements every {stride} bytes overflow the address space"),
        })
}

impl Comm {
    fn matcher(&self, src: Source, tag: Tag, op: &'static str) -> Result<Match> {
        Ok(Match {
            ctx: self.inner.ctx,
            src: match src {
                Source::Any => None,
                Source::Rank(r) => Some(self.ep(r, op)?),
            },
            tag: match tag {
                Tag::Any => None,
                Tag::Is(t) => Some(t),
            },
        })
    }

    /// Hand `payload` over to `dest` (operation `op`): it completes at
    /// once unless it waits for credit, with this handle's timeout.
    fn send_owned(&self, payload: Payload, dest: Rank, tag: u32, op: &'static str) -> Result<()> {
        let ep = self.ep(dest, op)?;
        let (g, ctx) = (self.group(), self.inner.ctx);
        self.engine()
            .send_owned(g, ep, ctx, tag, payload, self.timeout, op)
    }

    fn send_bytes(
        &self,
        data: &[u8],
        dest: Rank,
        tag: u32,
        sync: bool,
        op: &'static str,
    ) -> Result<usize> {
        let ep = self.ep(dest, op)?;
        let e = self.engine();
        // SAFETY: `data` stays borrowed until the request is waited below.
        let id = unsafe { e.start_send(self.group(), ep, self.inner.ctx, tag, data, sync)? };
        match id {
            Some(id) => Ok(e.wait_req(id, self.timeout, op)?.len),
            None => Ok(data.len()),
        }
    }

    /// Send a slice to `dest` with `tag`. Returns when the buffer may be
    /// reused: at once for short messages, after the receiver has copied the
    /// data for long ones.
    pub fn send<T: Pod>(&self, buf: &[T], dest: impl Into<Rank>, tag: u32) -> Result<()> {
        self.send_bytes(bytemuck::cast_slice(buf), dest.into(), tag, false, "send")
            .map(|_| ())
    }

    /// Synchronous send (CMMD's rendezvous, MPI `Ssend`): returns when the
    /// receiver has matched the message. Returns how many bytes the receiver
    /// took (less than sent after a [`Comm::recv_partial`] with a smaller
    /// buffer).
    pub fn ssend<T: Pod>(&self, buf: &[T], dest: impl Into<Rank>, tag: u32) -> Result<usize> {
        self.send_bytes(bytemuck::cast_slice(buf), dest.into(), tag, true, "ssend")
    }

    /// Send a vector by handing it over: no copy at all between threads.
    pub fn send_vec<T: Pod + Send>(
        &self,
        v: Vec<T>,
        dest: impl Into<Rank>,
        tag: u32,
    ) -> Result<()> {
        self.send_owned(Payload::Vec(Box::new(v)), dest.into(), tag, "send_vec")
    }

    /// Receive into `buf`. The message may be shorter than `buf`
    /// (`Status::len` says how long it was); if it is longer the call fails
    /// with [`Error::Truncated`] and the message stays available.
    pub fn recv_into<T: Pod>(
        &self,
        buf: &mut [T],
        src: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Status> {
        let m = self.matcher(src.into(), tag.into(), "recv")?;
        let g = self.group();
        let st = self.engine().recv(
            g,
            m,
            bytemuck::cast_slice_mut(buf),
            Layout::Contiguous,
            self.timeout,
            "recv",
        )?;
        let st = st.to_status(g);
        check_elems::<T>(&st)?;
        Ok(st)
    }

    /// Receive one value.
    pub fn recv<T: Pod>(&self, src: impl Into<Source>, tag: impl Into<Tag>) -> Result<(T, Status)> {
        let mut v = T::zeroed();
        let st = self.recv_into(std::slice::from_mut(&mut v), src, tag)?;
        if st.len != std::mem::size_of::<T>() {
            return Err(Error::BadLength {
                from: st.source,
                tag: st.tag,
                len: st.len,
                elem_size: std::mem::size_of::<T>(),
            });
        }
        Ok((v, st))
    }

    /// Receive a whole message of any length as a vector. A vector sent with
    /// [`Comm::send_vec`] between threads arrives without any copy.
    pub fn recv_vec<T: Pod>(
        &self,
        src: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<(Vec<T>, Status)> {
        let m = self.matcher(src.into(), tag.into(), "recv_vec")?;
        let g = self.group();
        let (raw, p) = self.engine().recv_payload(g, m, self.timeout, "recv_vec")?;
        let st = raw.to_status(g);
        check_elems::<T>(&st)?;
        let v = match p {
            Payload::Vec(b) if b.vec_type() == std::any::TypeId::of::<Vec<T>>() => {
                *b.into_any().downcast::<Vec<T>>().expect("type checked")
            }
            p => {
                let bytes = p.into_bytes();
                let mut v = vec![T::zeroed(); st.count::<T>()];
                bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(&bytes);
                v
            }
        };
        Ok((v, st))
    }

    /// CMMD's negotiated receive: copy `min(len, capacity)` bytes, consume
    /// the message, and report both the full length and the count taken. A
    /// sender using [`Comm::ssend`] learns the count too.
    pub fn recv_partial<T: Pod>(
        &self,
        buf: &mut [T],
        src: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Partial> {
        let m = self.matcher(src.into(), tag.into(), "recv_partial")?;
        let g = self.group();
        let dst: &mut [u8] = bytemuck::cast_slice_mut(buf);
        let cap = dst.len();
        let st = self
            .engine()
            .recv(g, m, dst, Layout::Partial, self.timeout, "recv_partial")?
            .to_status(g);
        Ok(Partial {
            received: st.len.min(cap),
            status: st,
        })
    }

    /// Wait for a matching message and describe it without receiving it.
    pub fn probe(&self, src: impl Into<Source>, tag: impl Into<Tag>) -> Result<Status> {
        let m = self.matcher(src.into(), tag.into(), "probe")?;
        let g = self.group();
        Ok(self.engine().probe(g, m, self.timeout)?.to_status(g))
    }

    /// Describe a matching message if one has arrived (PICL probe0, CMMD
    /// msg_pending, SUPRENUM TESTTAG). Never blocks.
    pub fn iprobe(&self, src: impl Into<Source>, tag: impl Into<Tag>) -> Result<Option<Status>> {
        let m = self.matcher(src.into(), tag.into(), "iprobe")?;
        // After an abort, or once the source is gone, every operation fails,
        // non-blocking ones included: otherwise an `iprobe` polling loop
        // would spin forever.
        let g = self.group();
        Ok(self.engine().iprobe(g, &m)?.map(|s| s.to_status(g)))
    }

    #[cfg(feature = "serde")]
    /// Send any `serde` value (encoded with postcard).
    pub fn send_obj<T: serde::Serialize + ?Sized>(
        &self,
        value: &T,
        dest: impl Into<Rank>,
        tag: u32,
    ) -> Result<()> {
        let dest = dest.into();
        let bytes = postcard::to_stdvec(value).map_err(|e| Error::Serde {
            from: self.me(),
            tag,
            message: e.to_string(),
        })?;
        self.send_owned(Payload::Bytes(bytes), dest, tag, "send_obj")
    }

    #[cfg(feature = "serde")]
    /// Receive a `serde` value sent with [`Comm::send_obj`].
    pub fn recv_obj<T: serde::de::DeserializeOwned>(
        &self,
        src: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<(T, Status)> {
        let (bytes, st) = self.recv_vec::<u8>(src, tag)?;
        let v = postcard::from_bytes(&bytes).map_err(|e| Error::Serde {
            from: st.source,
            tag: st.tag,
            message: e.to_string(),
        })?;
        Ok((v, st))
    }

    /// Send `sendbuf` to `dest` and receive into `recvbuf` from `src` at the
    /// same time (CMMD send_and_receive, MPI Sendrecv): safe for shifts and
    /// rings where every rank sends and receives.
    #[allow(clippy::too_many_arguments)]
    pub fn send_recv<T: Pod, U: Pod>(
        &self,
        sendbuf: &[T],
        dest: impl Into<Rank>,
        sendtag: u32,
        recvbuf: &mut [U],
        src: impl Into<Source>,
        recvtag: impl Into<Tag>,
    ) -> Result<Status> {
        let m = self.matcher(src.into(), recvtag.into(), "send_recv")?;
        let dst = self.ep(dest.into(), "send_recv")?;
        let (st, _) = self.exchange_raw(
            bytemuck::cast_slice(sendbuf),
            dst,
            sendtag,
            bytemuck::cast_slice_mut(recvbuf),
            Layout::Contiguous,
            m,
            false,
        )?;
        // As for `recv_into`: a message that is not a whole number of
        // elements is an error, not a silently dropped remainder.
        check_elems::<U>(&st)?;
        Ok(st)
    }

    #[allow(clippy::too_many_arguments)]
    fn exchange_raw(
        &self,
        out: &[u8],
        dst: u32,
        tag: u32,
        inb: &mut [u8],
        layout: Layout,
        m: Match,
        sync: bool,
    ) -> Result<(Status, usize)> {
        let e = self.engine();
        let g = self.group();
        // SAFETY: `inb` is borrowed for this whole function and the request is
        // waited for (or withdrawn) before it returns.
        let r = unsafe { e.post_recv(g, m, inb, layout)? };
        // SAFETY: `out` outlives the send, which is waited for below.
        let s = match unsafe { e.start_send(g, dst, self.inner.ctx, tag, out, sync) } {
            Ok(s) => s,
            Err(err) => {
                e.withdraw(r);
                return Err(err);
            }
        };
        let sent = match s {
            Some(s) => e.wait_req(s, self.timeout, "send_recv"),
            None => Ok(crate::engine::RawStatus {
                src: 0,
                tag,
                len: out.len(),
            }),
        };
        let got = e.wait_req(r, self.timeout, "send_recv");
        // A synchronous send's status says how many bytes the receiver took.
        let taken = sent?.len;
        Ok((got?.to_status(g), taken))
    }

    /// Exchange with `peer` in place (CMMD swap): `buf` is sent and then
    /// overwritten with the peer's message.
    pub fn swap<T: Pod>(&self, buf: &mut [T], peer: impl Into<Rank>, tag: u32) -> Result<Status> {
        let peer = peer.into();
        let out: Vec<u8> = bytemuck::cast_slice(buf).to_vec();
        let m = self.matcher(Source::Rank(peer), Tag::Is(tag), "swap")?;
        let dst = self.ep(peer, "swap")?;
        self.exchange_raw(
            &out,
            dst,
            tag,
            bytemuck::cast_slice_mut(buf),
            Layout::Contiguous,
            m,
            false,
        )
        .map(|(st, _)| st)
    }

    /// CMMD send_v: send `count` elements of `elem_len` bytes taken every
    /// `stride` bytes of `buf` as one packed message.
    pub fn send_strided(
        &self,
        buf: &[u8],
        elem_len: usize,
        stride: usize,
        count: usize,
        dest: impl Into<Rank>,
        tag: u32,
    ) -> Result<()> {
        let packed = pack_strided(buf, elem_len, stride, count)?;
        self.send_owned(Payload::Bytes(packed), dest.into(), tag, "send_strided")
    }

    /// CMMD receive_v: lay the packed message into `count` elements of
    /// `elem_len` bytes every `stride` bytes of `buf`. A longer message fails
    /// with [`Error::Truncated`] (kept); a shorter one fills what it covers.
    pub fn recv_strided(
        &self,
        buf: &mut [u8],
        elem_len: usize,
        stride: usize,
        count: usize,
        src: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Status> {
        strided_fits("recv_strided", buf.len(), elem_len, stride, count)?;
        let m = self.matcher(src.into(), tag.into(), "recv_strided")?;
        let g = self.group();
        let layout = Layout::Strided {
            elem_len,
            stride,
            count,
        };
        Ok(self
            .engine()
            .recv(g, m, buf, layout, self.timeout, "recv_strided")?
            .to_status(g))
    }

    /// CMMD's negotiated vector receive (receive_v against a send of any
    /// length): take `min(len, elem_len × count)` bytes of the packed
    /// message, consume it, and lay what was taken into `count` elements of
    /// `elem_len` bytes every `stride` bytes of `buf` ("the smaller number
    /// of the two is sent", the source's bytes broken across this side's
    /// element length, not its stride). Both counts are reported; a sender
    /// using [`Comm::ssend`] learns the count taken too.
    pub fn recv_strided_partial(
        &self,
        buf: &mut [u8],
        elem_len: usize,
        stride: usize,
        count: usize,
        src: impl Into<Source>,
        tag: impl Into<Tag>,
    ) -> Result<Partial> {
        strided_fits("recv_strided_partial", buf.len(), elem_len, stride, count)?;
        let mut packed = packed_buffer("recv_strided_partial", elem_len, count)?;
        let p = self.recv_partial(&mut packed, src, tag)?;
        lay_strided(&packed[..p.received], buf, elem_len, stride);
        Ok(p)
    }

    /// CMMD send_and_receive_v: send `out_count` elements of `out_elem`
    /// bytes every `out_stride` bytes of `out` to `dest` while receiving
    /// from `src` into `in_count` elements of `in_elem` bytes every
    /// `in_stride` bytes of `inb`, with CMMD's negotiated length on the
    /// receiving side (see [`Comm::recv_strided_partial`]). Returns what was
    /// received.
    #[allow(clippy::too_many_arguments)]
    pub fn send_recv_strided(
        &self,
        out: &[u8],
        out_geometry: (usize, usize, usize),
        dest: impl Into<Rank>,
        sendtag: u32,
        inb: &mut [u8],
        in_geometry: (usize, usize, usize),
        src: impl Into<Source>,
        recvtag: impl Into<Tag>,
    ) -> Result<Partial> {
        let m = self.matcher(src.into(), recvtag.into(), "send_recv_strided")?;
        let dst = self.ep(dest.into(), "send_recv_strided")?;
        let (out, in_) = ((out, out_geometry), (inb, in_geometry));
        Ok(self.strided_exchange(out, dst, sendtag, in_, m, false)?.0)
    }

    /// [`Comm::send_recv_strided`] with a synchronous send, which also
    /// returns how many bytes the destination took (fewer than sent when it
    /// received into a shorter buffer): CMMD send_and_receive "returns
    /// TRUE if the number of bytes received equals inlen and the number of
    /// bytes sent equals outlen", and `CMMD_bytes_sent` tells the second.
    #[allow(clippy::too_many_arguments)]
    pub fn send_recv_strided_sync(
        &self,
        out: &[u8],
        out_geometry: (usize, usize, usize),
        dest: impl Into<Rank>,
        sendtag: u32,
        inb: &mut [u8],
        in_geometry: (usize, usize, usize),
        src: impl Into<Source>,
        recvtag: impl Into<Tag>,
    ) -> Result<(Partial, usize)> {
        let m = self.matcher(src.into(), recvtag.into(), "send_recv_strided")?;
        let dst = self.ep(dest.into(), "send_recv_strided")?;
        let (out, in_) = ((out, out_geometry), (inb, in_geometry));
        self.strided_exchange(out, dst, sendtag, in_, m, true)
    }

    /// The strided exchange: what was received, and how many bytes the
    /// destination took (all of them unless `sync`).
    fn strided_exchange(
        &self,
        (out, (out_elem, out_stride, out_count)): (&[u8], (usize, usize, usize)),
        dst: u32,
        sendtag: u32,
        (inb, (in_elem, in_stride, in_count)): (&mut [u8], (usize, usize, usize)),
        m: Match,
        sync: bool,
    ) -> Result<(Partial, usize)> {
        strided_fits("send_recv_strided", inb.len(), in_elem, in_stride, in_count)?;
        let packed_out = pack_strided(out, out_elem, out_stride, out_count)?;
        let mut packed_in = packed_buffer("send_recv_strided", in_elem, in_count)?;
        let (st, taken) = self.exchange_raw(
            &packed_out,
            dst,
            sendtag,
            &mut packed_in,
            Layout::Partial,
            m,
            sync,
        )?;
        let received = st.len.min(packed_in.len());
        lay_strided(&packed_in[..received], inb, in_elem, in_stride);
        let p = Partial {
            status: st,
            received,
        };
        Ok((p, taken))
    }

    /// CMMD swap_v: [`Comm::send_recv_strided`] with one peer as both
    /// destination and source, one tag both ways. `out` and `inb` are
    /// separate buffers (use [`Comm::swap`] to exchange in place).
    #[allow(clippy::too_many_arguments)]
    pub fn swap_strided(
        &self,
        out: &[u8],
        out_geometry: (usize, usize, usize),
        inb: &mut [u8],
        in_geometry: (usize, usize, usize),
        peer: impl Into<Rank>,
        tag: u32,
    ) -> Result<Partial> {
        let peer = peer.into();
        self.send_recv_strided(out, out_geometry, peer, tag, inb, in_geometry, peer, tag)
    }

    /// Set this rank's bit of the global OR flag (CMMD set_global_or).
    /// Non-blocking; the other members see it eventually. Every
    /// communicator has a flag of its own (a `dup` or `split` starts with
    /// every bit clear).
    pub fn set_global_or(&self, value: bool) {
        self.engine()
            .set_global_or(self.group(), self.inner.ctx, value);
    }

    /// The OR of the latest global-OR bits known from all members (CMMD
    /// get_global_or). Non-blocking and eventually consistent.
    pub fn get_global_or(&self) -> bool {
        self.engine().get_global_or(self.group(), self.inner.ctx)
    }
}

/// Lay a packed stream into `elem_len`-byte elements every `stride` bytes
/// (the caller checked that `dst` spans them).
fn lay_strided(src: &[u8], dst: &mut [u8], elem_len: usize, stride: usize) {
    if elem_len == 0 {
        return;
    }
    for (i, chunk) in src.chunks(elem_len).enumerate() {
        dst[i * stride..i * stride + chunk.len()].copy_from_slice(chunk);
    }
}

fn check_elems<T>(st: &Status) -> Result<()> {
    check_elem_size(st, std::mem::size_of::<T>())
}

/// A message of `st.len` bytes received into elements of `sz` bytes: an
/// error unless it is a whole number of them.
pub(crate) fn check_elem_size(st: &Status, sz: usize) -> Result<()> {
    // Elements of no size hold no bytes: only an empty message fits them.
    if (sz == 0 && st.len > 0) || (sz > 1 && !st.len.is_multiple_of(sz)) {
        return Err(Error::BadLength {
            from: st.source,
            tag: st.tag,
            len: st.len,
            elem_size: sz,
        });
    }
    Ok(())
}
