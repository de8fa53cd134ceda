//! What a caller can ask of selection, as plain data: the options of one
//! call ([`CollOpts`]); the virtual [`Topology`] a communicator follows
//! (PICL setarc0), the [`Algorithm`] names and the [`Collective`] kinds
//! are the algorithm crate's (its registry defines them).

pub use hypercomm_algo::{Algorithm, Collective, Topology};

/// Options of a collective call. Every participant passes the same
/// (check mode compares them; the host of a call rooted at it is free to
/// pass none).
#[derive(Debug, Clone, Default)]
pub struct CollOpts {
    /// Force an algorithm (default: `Auto`).
    pub algorithm: Algorithm,
    /// Bitwise-reproducible reductions: the bracketing depends only on the
    /// inputs and the number of nodes.
    pub reproducible: bool,
    /// Segment size in bytes for pipelined algorithms (default: chosen).
    pub segment_bytes: Option<usize>,
}
