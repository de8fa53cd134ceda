//! What a halo exchange selects: colour masks, direction masks and the
//! location of staggered variables (SUPDT2/RUPDT2, SUPDT3/RUPDT3,
//! SUPSG2/RUPSG2).
//!
//! Not done yet: SUPSG2's `nloc` codes are 2-D; a staggered 3-D variable
//! gives its [`Location`] directly.

use crate::error::{Error, Result};

/// A colour mask: which points of the halo an exchange moves, by the parity
/// of a sum of their global indices (red-black relaxation, every second
/// row). The parity is that of the point's index in the domain (on a
/// periodic axis, the index of the owner's point the halo point mirrors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Colour {
    /// Every point (SUPRENUM colour 0).
    #[default]
    All,
    /// The points where the sum of the indices of the flagged axes
    /// (`axes[a]`) is odd (`odd`) or even.
    Parity {
        /// Which axes' indices are summed.
        axes: [bool; 3],
        /// Odd sums (else even).
        odd: bool,
    },
}

impl Colour {
    /// Points with `i + j (+ k)` even: "red" in red-black ordering.
    pub const RED: Colour = Colour::Parity {
        axes: [true, true, true],
        odd: false,
    };
    /// Points with `i + j (+ k)` odd: "black".
    pub const BLACK: Colour = Colour::Parity {
        axes: [true, true, true],
        odd: true,
    };

    /// SUPRENUM's 2-D codes (SUPDT2/RUPDT2/SUPSG2 `color`): 0 all, 1/2 `i`
    /// odd/even, 3/4 `j` odd/even, 5/6 `i+j` odd/even.
    pub fn from_suprenum_2d(code: u32) -> Result<Colour> {
        let axes = match code {
            0 => return Ok(Colour::All),
            1 | 2 => [true, false, false],
            3 | 4 => [false, true, false],
            5 | 6 => [true, true, false],
            _ => return Err(bad_colour(code, 6)),
        };
        Ok(Colour::Parity {
            axes,
            odd: code % 2 == 1,
        })
    }

    /// SUPRENUM's 3-D codes (SUPDT3/RUPDT3 `color`): 0 all; 1/2 `i+j+k`,
    /// 3/4 `i+j`, 5/6 `i+k`, 7/8 `j+k`, 9/10 `i`, 11/12 `j`, 13/14 `k`, odd
    /// then even.
    pub fn from_suprenum_3d(code: u32) -> Result<Colour> {
        let axes = match code {
            0 => return Ok(Colour::All),
            1 | 2 => [true, true, true],
            3 | 4 => [true, true, false],
            5 | 6 => [true, false, true],
            7 | 8 => [false, true, true],
            9 | 10 => [true, false, false],
            11 | 12 => [false, true, false],
            13 | 14 => [false, false, true],
            _ => return Err(bad_colour(code, 14)),
        };
        Ok(Colour::Parity {
            axes,
            odd: code % 2 == 1,
        })
    }

    /// Whether the point with (domain) indices `p` is selected.
    pub fn selects(&self, p: [isize; 3]) -> bool {
        match *self {
            Colour::All => true,
            Colour::Parity { axes, odd } => {
                let s: isize = (0..3).filter(|&a| axes[a]).map(|a| p[a]).sum();
                (s.rem_euclid(2) == 1) == odd
            }
        }
    }
}

fn bad_colour(code: u32, max: u32) -> Error {
    Error::InvalidArgument {
        op: "halo exchange",
        what: format!("colour code {code} is not one of 0..={max}"),
    }
}

/// A side of an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Towards lower indices.
    Lower,
    /// Towards higher indices.
    Upper,
}

impl Side {
    /// The other side.
    pub fn opposite(self) -> Side {
        match self {
            Side::Lower => Side::Upper,
            Side::Upper => Side::Lower,
        }
    }

    /// −1 for `Lower`, +1 for `Upper`.
    pub fn sign(self) -> isize {
        match self {
            Side::Lower => -1,
            Side::Upper => 1,
        }
    }
}

/// A direction mask: the set of *flows* an exchange performs. A flow is an
/// axis and the side data moves towards: with the flow towards `Lower` on
/// axis 0, every rank sends to its lower x-neighbour and so receives from
/// its upper x-neighbour.
///
/// SUPRENUM gives the send routine (SUPDT2) `dest(a, 1)` = "to the lower
/// neighbour" and the receive routine (RUPDT2) `dest(a, 1)` = "from the
/// upper neighbour": the meaning is reversed between the two, so that the
/// same array passed to both names the same flow. [`Directions::from_suprenum`]
/// takes that array; it describes a flow for either routine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Directions(u8);

impl Default for Directions {
    /// Every flow.
    fn default() -> Self {
        Directions::ALL
    }
}

impl Directions {
    /// Every flow on every axis.
    pub const ALL: Directions = Directions(0x3f);
    /// No flow.
    pub const NONE: Directions = Directions(0);

    fn bit(axis: usize, toward: Side) -> u8 {
        assert!(axis < 3, "axis {axis}");
        1 << (2 * axis + usize::from(toward == Side::Upper))
    }

    /// This mask with the flow along `axis` towards `toward` added.
    ///
    /// # Panics
    /// If `axis` is 3 or more (grids have at most three axes), as indexing
    /// past the end of an array does.
    pub fn with(self, axis: usize, toward: Side) -> Directions {
        Directions(self.0 | Self::bit(axis, toward))
    }

    /// Both flows along `axis` (a full exchange on that axis only).
    pub fn axis(axis: usize) -> Directions {
        Directions::NONE
            .with(axis, Side::Lower)
            .with(axis, Side::Upper)
    }

    /// Whether data moves along `axis` towards `toward`: every rank sends to
    /// its neighbour on side `toward` (SUPDT's `dest`).
    pub fn sends_to(self, axis: usize, toward: Side) -> bool {
        self.0 & Self::bit(axis, toward) != 0
    }

    /// Whether every rank receives from its neighbour on side `from`: the
    /// flow towards the opposite side (RUPDT's reversed `dest`).
    pub fn receives_from(self, axis: usize, from: Side) -> bool {
        self.sends_to(axis, from.opposite())
    }

    /// SUPRENUM's `dest(axis, 1..=2)`, 0-based here: `dest[a][0]` is the
    /// flow towards the lower neighbour (SUPDT: send to lower; RUPDT: receive
    /// from upper), `dest[a][1]` towards the upper one.
    pub fn from_suprenum(dest: &[[bool; 2]]) -> Directions {
        let mut d = Directions::NONE;
        for (a, sides) in dest.iter().enumerate().take(3) {
            if sides[0] {
                d = d.with(a, Side::Lower);
            }
            if sides[1] {
                d = d.with(a, Side::Upper);
            }
        }
        d
    }
}

/// Where a variable sits in its cell along one axis (staggered grids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Pos {
    /// On the cell's lower face.
    Lower,
    /// At the cell's centre (or an ordinary grid point).
    #[default]
    Centre,
    /// On the cell's upper face.
    Upper,
}

/// Where a variable sits in its control volume, per axis (SUPSG2's
/// `nloc`). `Location::CENTRE`, the default, is an ordinary grid function
/// (SUPDT2): its halo has no points on the process border.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Location(pub [Pos; 3]);

impl Location {
    /// Cell-centred (or grid-point) values.
    pub const CENTRE: Location = Location([Pos::Centre; 3]);

    /// SUPSG2's `nloc` 1..=9, read as the 3 × 3 positions of a 2-D control
    /// volume numbered row by row from the lower left, as the seed's
    /// (garbled) figure shows 1 at the lower left, 2 below the centre, 5 at
    /// the centre and 8 above it: `nloc = 1 + x + 3·y` with `x`, `y` = 0
    /// lower face, 1 centre, 2 upper face.
    pub fn from_nloc(nloc: u32) -> Result<Location> {
        if !(1..=9).contains(&nloc) {
            return Err(Error::InvalidArgument {
                op: "Location::from_nloc",
                what: format!("nloc {nloc} is not one of 1..=9"),
            });
        }
        let p = |v: u32| [Pos::Lower, Pos::Centre, Pos::Upper][v as usize];
        let n = nloc - 1;
        Ok(Location([p(n % 3), p(n / 3), Pos::Centre]))
    }

    /// Whether the first halo index on side `side` of axis `axis` holds a
    /// value on the process border (a face on the border), which a negative
    /// exchange width leaves out.
    pub fn border_in_halo(&self, axis: usize, side: Side) -> bool {
        matches!(
            (self.0[axis], side),
            (Pos::Upper, Side::Lower) | (Pos::Lower, Side::Upper)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifteen_3d_masks_and_seven_2d_ones() {
        let mut seen = std::collections::HashSet::new();
        for c in 0..15 {
            assert!(seen.insert(Colour::from_suprenum_3d(c).unwrap()));
        }
        assert!(Colour::from_suprenum_3d(15).is_err());
        assert!(Colour::from_suprenum_2d(6).unwrap().selects([1, 1, 5]));
        assert!(Colour::from_suprenum_2d(5).unwrap().selects([1, 2, 0]));
        assert!(Colour::from_suprenum_2d(1).unwrap().selects([-1, 0, 0]));
        assert!(Colour::RED.selects([0, 0, 0]) && Colour::BLACK.selects([0, 1, 0]));
        assert!(Colour::from_suprenum_2d(7).is_err());
    }

    #[test]
    fn directions_reverse_between_send_and_receive() {
        let d = Directions::from_suprenum(&[[true, false], [false, false]]);
        assert!(d.sends_to(0, Side::Lower) && !d.sends_to(0, Side::Upper));
        assert!(d.receives_from(0, Side::Upper) && !d.receives_from(0, Side::Lower));
        assert_eq!(
            Directions::axis(1),
            Directions::from_suprenum(&[[false, false], [true, true]])
        );
    }

    #[test]
    fn nloc_positions() {
        assert_eq!(Location::from_nloc(5).unwrap(), Location::CENTRE);
        let l = Location::from_nloc(6).unwrap(); // centre of the upper x face
        assert_eq!(l.0, [Pos::Upper, Pos::Centre, Pos::Centre]);
        assert!(l.border_in_halo(0, Side::Lower) && !l.border_in_halo(0, Side::Upper));
        assert!(Location::from_nloc(0).is_err());
    }
}
