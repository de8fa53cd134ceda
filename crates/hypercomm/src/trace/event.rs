//! Trace records: PICL's record kinds (manual section 6, Table 5) as one
//! Rust type, with the numeric codes of the compact format.
//!
//! Times are nanoseconds since the trace origin (rank 0's trace start after
//! clock correction); the PICL writers print them as seconds and
//! microseconds, so PICL files keep microseconds.
//!
//! Not done yet: a `probe` record (code 5 is reserved by PICL for it; probes
//! are counted in `commstats` only, as in PICL).

/// PICL's identifier of the host in trace records.
pub const HOST_ID: i32 = -32768;

/// PICL block types of the high-level routines (manual Table 4) and ours.
///
/// | block type | routine(s) | parameter type |
/// |---|---|---|
/// | −1 | barrier (PICL barrier0) | 0 |
/// | −2 | bcast (bcast0) | root |
/// | −3 | split-phase bcast (PICL bcast1; reserved for the C API — `ibcast` is recorded as −2) | root |
/// | −4 | combine: reduce and allreduce (gsum0 … gcomb0) | root, −1 for all |
/// | −5 | gather | root |
/// | −6 | allgather | −1 |
/// | −7 | scatter | root |
/// | −8 | alltoall | −1 |
/// | −9 | reduce_scatter | −1 |
/// | −10 | scan | −1 |
/// | −11 | exscan | −1 |
/// | −12 | gatherv | root |
/// | −13 | allgatherv | −1 |
/// | −14 | scatterv | root |
/// | −15 | alltoallv | −1 |
/// | −16 | multicast (sparse global send) | root |
/// | −17 | segmented scan | −1 |
/// | −18 | any other collective | 0 |
///
/// The location type is the call's sequence number on its communicator
/// (PICL: "which call to the routine is being recorded"). The host as a
/// root is −32768.
pub mod block {
    /// barrier0.
    pub const BARRIER: i32 = -1;
    /// bcast0.
    pub const BCAST: i32 = -2;
    /// bcast1 (split phase) and non-blocking broadcasts.
    pub const BCAST1: i32 = -3;
    /// Global combine (gsum0, gprod0, gmax0, gmin0, gand0, gor0, gxor0, gcomb0).
    pub const COMBINE: i32 = -4;
    /// Any collective without a code of its own.
    pub const OTHER: i32 = -18;

    /// Block type of a collective operation code (the codes of the
    /// collectives' check signatures: 1 barrier, 2 bcast, 3 reduce, 4
    /// allreduce, 5 gather, … 17 segmented scan).
    pub fn of_op(code: u8) -> i32 {
        match code {
            1 => BARRIER,
            2 => BCAST,
            3 | 4 => COMBINE,
            5..=17 => -(code as i32),
            _ => OTHER,
        }
    }

    /// A readable name of a block type.
    pub fn name(block_type: i32) -> &'static str {
        match block_type {
            -1 => "barrier",
            -2 => "bcast",
            -3 => "bcast1",
            -4 => "combine",
            -5 => "gather",
            -6 => "allgather",
            -7 => "scatter",
            -8 => "alltoall",
            -9 => "reduce_scatter",
            -10 => "scan",
            -11 => "exscan",
            -12 => "gatherv",
            -13 => "allgatherv",
            -14 => "scatterv",
            -15 => "alltoallv",
            -16 => "multicast",
            -17 => "segmented_scan",
            -18 => "collective",
            _ => "block",
        }
    }
}

/// The three level settings of PICL `tracelevel(event, compstats,
/// commstats)`. Each is 0–3:
///
/// * ≤ 0: nothing (but the event records of trace_start, trace_level,
///   trace_flush, trace_exit, open and close are always written);
/// * 1: at `trace_mark`, `trace_level`, open and close;
/// * 2: also at high-level (collective) calls and user sends and receives;
/// * 3: also at the sends and receives inside collectives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Levels {
    /// Event records.
    pub event: i32,
    /// Computation statistics (busy/idle) records.
    pub compstats: i32,
    /// Communication statistics records.
    pub commstats: i32,
}

impl Levels {
    /// All three at `l`.
    pub const fn all(l: i32) -> Levels {
        Levels {
            event: l,
            compstats: l,
            commstats: l,
        }
    }
}

/// A record's kind and fields, in PICL's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// 1 `trace_start`: the levels in effect.
    TraceStart(Levels),
    /// 2 `open`; on the host with the number of processors allocated.
    Open {
        /// `allocating N processors` (host only).
        allocating: Option<i64>,
    },
    /// 3 `load`: the node loaded (−1: all).
    Load {
        /// `loading node N`.
        node: i64,
    },
    /// 4 `send`.
    Send {
        /// Destination.
        to: i32,
        /// Message type (tag).
        tag: i64,
        /// Length in bytes.
        len: i64,
    },
    /// 6 `recv`: the message was found at once.
    Recv {
        /// Source.
        from: i32,
        /// Message type.
        tag: i64,
        /// Length in bytes.
        len: i64,
    },
    /// 7 `recv_blocking`: the receive had to wait; the type sought (−1: any).
    RecvBlocking {
        /// Message type sought.
        tag: i64,
    },
    /// 8 `recv_waking`: the blocked receive got its message.
    RecvWaking {
        /// Source.
        from: i32,
        /// Message type.
        tag: i64,
        /// Length in bytes.
        len: i64,
    },
    /// 9 `message` (PICL message0).
    Message,
    /// 10 `sync` (PICL sync0; entry).
    Sync,
    /// 11 `compstats`: cumulative idle time in ns (busy = timestamp − idle).
    Compstats {
        /// Cumulative idle time.
        idle: i64,
    },
    /// 12 `commstats`: cumulative counts.
    Commstats {
        /// Messages received.
        received: i64,
        /// Bytes received.
        recv_volume: i64,
        /// Messages sent.
        sent: i64,
        /// Bytes sent.
        sent_volume: i64,
        /// Probes of the message queue.
        probed: i64,
    },
    /// 13 `close`.
    Close,
    /// 14 `trace_level`: the new levels.
    TraceLevel(Levels),
    /// 15 `trace_mark`: the user's type.
    TraceMark {
        /// User-chosen value.
        mark: i64,
    },
    /// 16 `trace_message`: a line of text (at most 80 characters, one line).
    TraceMessage {
        /// The text.
        text: String,
    },
    /// 17 `trace_stop`: the buffer filled up with the stop policy.
    TraceStop,
    /// 18 `trace_flush`: the flush ended at `finished` (ns).
    TraceFlush {
        /// When the flush ended.
        finished: i64,
    },
    /// 19 `trace_exit`: bytes of trace data generated.
    TraceExit {
        /// Bytes of trace data generated (PICL's compact size).
        space: i64,
    },
    /// 20 `block_begin`.
    BlockBegin {
        /// Block type (see [`block`]).
        block_type: i64,
        /// Location type (which call).
        location_type: i64,
        /// Parameter type (root, or −1 / 0).
        parameter_type: i64,
    },
    /// 21 `block_end`.
    BlockEnd {
        /// Block type.
        block_type: i64,
        /// Location type.
        location_type: i64,
        /// Parameter type.
        parameter_type: i64,
    },
}

impl Kind {
    /// PICL's compact record code (Table 5, with `block_end` = 21).
    pub fn code(&self) -> u32 {
        match self {
            Kind::TraceStart(_) => 1,
            Kind::Open { .. } => 2,
            Kind::Load { .. } => 3,
            Kind::Send { .. } => 4,
            Kind::Recv { .. } => 6,
            Kind::RecvBlocking { .. } => 7,
            Kind::RecvWaking { .. } => 8,
            Kind::Message => 9,
            Kind::Sync => 10,
            Kind::Compstats { .. } => 11,
            Kind::Commstats { .. } => 12,
            Kind::Close => 13,
            Kind::TraceLevel(_) => 14,
            Kind::TraceMark { .. } => 15,
            Kind::TraceMessage { .. } => 16,
            Kind::TraceStop => 17,
            Kind::TraceFlush { .. } => 18,
            Kind::TraceExit { .. } => 19,
            Kind::BlockBegin { .. } => 20,
            Kind::BlockEnd { .. } => 21,
        }
    }

    /// PICL's verbose keyword (with underscores).
    pub fn keyword(&self) -> &'static str {
        keyword_of(self.code()).expect("every kind has a keyword")
    }
}

/// The verbose keyword of a compact code.
pub fn keyword_of(code: u32) -> Option<&'static str> {
    Some(match code {
        1 => "trace_start",
        2 => "open",
        3 => "load",
        4 => "send",
        6 => "recv",
        7 => "recv_blocking",
        8 => "recv_waking",
        9 => "message",
        10 => "sync",
        11 => "compstats",
        12 => "commstats",
        13 => "close",
        14 => "trace_level",
        15 => "trace_mark",
        16 => "trace_message",
        17 => "trace_stop",
        18 => "trace_flush",
        19 => "trace_exit",
        20 => "block_begin",
        21 => "block_end",
        _ => return None,
    })
}

/// The compact code of a verbose keyword.
pub fn code_of(keyword: &str) -> Option<u32> {
    (1..=21).find(|&c| keyword_of(c) == Some(keyword))
}

/// One trace record: when, where, what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Nanoseconds since the trace origin.
    pub time: i64,
    /// Node id (0..P), or [`HOST_ID`].
    pub node: i32,
    /// Kind and fields.
    pub kind: Kind,
}

impl Record {
    /// Whether this record is a receive completion (`recv` or `recv_waking`).
    pub fn is_receive(&self) -> bool {
        matches!(self.kind, Kind::Recv { .. } | Kind::RecvWaking { .. })
    }
}

/// A merged trace: records of every rank, sorted by time (receives never
/// before their sends).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    /// The records.
    pub records: Vec<Record>,
}

impl Trace {
    /// Node ids that appear, nodes ascending then the host.
    pub fn nodes(&self) -> Vec<i32> {
        let mut v: Vec<i32> = self.records.iter().map(|r| r.node).collect();
        v.sort_unstable_by_key(|&n| if n == HOST_ID { i32::MAX } else { n });
        v.dedup();
        v
    }
}

/// A readable name of a node id.
pub fn node_name(node: i32) -> String {
    if node == HOST_ID {
        "host".to_string()
    } else {
        format!("node {node}")
    }
}

/// An event of the engine (endpoint numbering) or of a collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A send starts (closed by [`Event::Done`] when it returns).
    Send {
        /// Destination endpoint.
        dst: u32,
        /// Tag.
        tag: u32,
        /// Length in bytes.
        len: usize,
        /// On a collective context (a send inside a collective).
        coll: bool,
    },
    /// A blocking receive starts (closed by [`Event::Done`]).
    RecvBegin {
        /// Tag sought (`None`: any).
        tag: Option<u32>,
        /// On a collective context.
        coll: bool,
    },
    /// The current wait found nothing at its first look and is waiting.
    Blocked,
    /// A message was delivered (copied out or taken).
    Recv {
        /// Source endpoint.
        src: u32,
        /// Tag.
        tag: u32,
        /// Length in bytes.
        len: usize,
        /// On a collective context.
        coll: bool,
    },
    /// A rank started waiting for a request or a collective (closed by
    /// [`Event::Done`]).
    Wait,
    /// The innermost send, receive or wait returned.
    Done,
    /// The message queue was probed.
    Probe,
    /// PICL message0 starts: a line for the standard output (closed by
    /// [`Event::Done`]; a `message` record).
    Message,
    /// PICL sync0 starts: the nodes synchronise (closed by [`Event::Done`];
    /// a `sync` record, and no block records for the barrier inside).
    Sync,
    /// A collective call starts (PICL block_begin).
    BlockBegin {
        /// Operation code (1 barrier, 2 bcast, 3 reduce, 4 allreduce, …).
        op: u8,
        /// Root endpoint (`None`: all, or no root).
        root: Option<u32>,
        /// The call's sequence number on its communicator.
        seq: u32,
    },
    /// A collective call ends (PICL block_end).
    BlockEnd {
        /// Operation code.
        op: u8,
        /// Root endpoint.
        root: Option<u32>,
        /// Sequence number.
        seq: u32,
    },
}
