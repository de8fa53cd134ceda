//! Element types and reduction operators.
//!
//! An [`Element`] is a plain number type (every integer width, `f32`,
//! `f64`) or a value/location pair ([`Loc`]). An operator implements
//! [`Operator<T>`] only for the types where it makes sense, so `BitXor` on
//! `f64` or `LogicalAnd` on `f32` does not compile:
//!
//! | operator | types |
//! |---|---|
//! | [`Sum`], [`Prod`], [`Max`], [`Min`] | all integers, `f32`, `f64` |
//! | [`BitAnd`], [`BitOr`], [`BitXor`], [`LogicalAnd`], [`LogicalOr`] | integers |
//! | [`MaxLoc`], [`MinLoc`] | [`Loc`] pairs |
//! | [`UserOp`] | any element; associative, commutative or not |
//!
//! ```compile_fail
//! use hypercomm::collective::{BitXor, Operator};
//! fn needs<T, O: Operator<T>>(_: O) {}
//! needs::<f64, _>(BitXor); // xor makes no sense for f64
//! ```

use bytemuck::Pod;
use std::sync::Arc;

/// A type collectives can carry; `CODE` identifies it in check signatures.
pub trait Element: Pod + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    /// Type code for collective signatures (check mode).
    const CODE: u8;
    /// Name for error messages.
    const NAME: &'static str;
}

/// Arithmetic on numbers (sum, product, max, min and their identities).
pub trait Number: Element + PartialOrd {
    /// `a + b` (wrapping for integers).
    fn add(a: Self, b: Self) -> Self;
    /// `a * b` (wrapping for integers).
    fn mul(a: Self, b: Self) -> Self;
    /// 0.
    fn zero() -> Self;
    /// 1.
    fn one() -> Self;
    /// The smallest value (−∞ for floats).
    fn lowest() -> Self;
    /// The largest value (+∞ for floats).
    fn highest() -> Self;
}

/// Bitwise and logical operations on integers.
pub trait Integer: Number {
    /// `a & b`.
    fn and(a: Self, b: Self) -> Self;
    /// `a | b`.
    fn or(a: Self, b: Self) -> Self;
    /// `a ^ b`.
    fn xor(a: Self, b: Self) -> Self;
    /// All bits set.
    fn ones() -> Self;
}

macro_rules! ints {
    ($($t:ty = $code:expr),*) => {$(
        impl Element for $t { const CODE: u8 = $code; const NAME: &'static str = stringify!($t); }
        impl Number for $t {
            #[inline] fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
            #[inline] fn mul(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
            #[inline] fn zero() -> Self { 0 }
            #[inline] fn one() -> Self { 1 }
            #[inline] fn lowest() -> Self { <$t>::MIN }
            #[inline] fn highest() -> Self { <$t>::MAX }
        }
        impl Integer for $t {
            #[inline] fn and(a: Self, b: Self) -> Self { a & b }
            #[inline] fn or(a: Self, b: Self) -> Self { a | b }
            #[inline] fn xor(a: Self, b: Self) -> Self { a ^ b }
            #[inline] fn ones() -> Self { !0 }
        }
    )*};
}
ints!(
    u8 = 1,
    i8 = 2,
    u16 = 3,
    i16 = 4,
    u32 = 5,
    i32 = 6,
    u64 = 7,
    i64 = 8,
    u128 = 9,
    i128 = 10,
    usize = 11,
    isize = 12
);

macro_rules! floats {
    ($($t:ty = $code:expr),*) => {$(
        impl Element for $t { const CODE: u8 = $code; const NAME: &'static str = stringify!($t); }
        impl Number for $t {
            #[inline] fn add(a: Self, b: Self) -> Self { a + b }
            #[inline] fn mul(a: Self, b: Self) -> Self { a * b }
            #[inline] fn zero() -> Self { 0.0 }
            #[inline] fn one() -> Self { 1.0 }
            #[inline] fn lowest() -> Self { <$t>::NEG_INFINITY }
            #[inline] fn highest() -> Self { <$t>::INFINITY }
        }
    )*};
}
floats!(f32 = 20, f64 = 21);

// `Loc` is defined where its `Pod` declaration is (`crate::buffer`).
pub use crate::buffer::Loc;

macro_rules! locs {
    ($($v:ty, $i:ty = $code:expr);*) => {$(
        impl Element for Loc<$v, $i> {
            const CODE: u8 = $code;
            const NAME: &'static str = concat!("Loc<", stringify!($v), ", ", stringify!($i), ">");
        }
    )*};
}
locs!(f64, u64 = 40; i64, u64 = 41; u64, u64 = 42; f32, u32 = 43; i32, u32 = 44; u32, u32 = 45);

/// The name of the element type whose [`Element::CODE`] is `code` (for
/// messages about values that came from another rank).
pub(crate) fn element_name(code: u8) -> String {
    let name = match code {
        1 => "u8",
        2 => "i8",
        3 => "u16",
        4 => "i16",
        5 => "u32",
        6 => "i32",
        7 => "u64",
        8 => "i64",
        9 => "u128",
        10 => "i128",
        11 => "usize",
        12 => "isize",
        20 => "f32",
        21 => "f64",
        40 => "Loc<f64, u64>",
        41 => "Loc<i64, u64>",
        42 => "Loc<u64, u64>",
        43 => "Loc<f32, u32>",
        44 => "Loc<i32, u32>",
        45 => "Loc<u32, u32>",
        0 => "no element type",
        _ => return format!("an unknown element type (code {code})"),
    };
    name.to_string()
}

/// The name of the operator whose [`Operator::code`] is `code`.
pub(crate) fn operator_name(code: u8) -> &'static str {
    match code {
        0 => "no operator",
        1 => "Sum",
        2 => "Prod",
        3 => "Max",
        4 => "Min",
        5 => "BitAnd",
        6 => "BitOr",
        7 => "BitXor",
        8 => "LogicalAnd",
        9 => "LogicalOr",
        10 => "MaxLoc",
        11 => "MinLoc",
        100 => "a non-commutative user operator",
        101 => "a commutative user operator",
        _ => "an unknown operator",
    }
}

/// A reduction operator on elements of type `T`.
pub trait Operator<T>: Clone + Send + Sync {
    /// `a ⊕ b`.
    fn combine(&self, a: T, b: T) -> T;
    /// The identity, when the operator has one (used for exclusive scans).
    fn identity(&self) -> Option<T>;
    /// Whether `a ⊕ b = b ⊕ a` (lets selection use any algorithm).
    fn commutative(&self) -> bool {
        true
    }
    /// Code for collective signatures (check mode).
    fn code(&self) -> u8;
    /// Name for error messages.
    fn name(&self) -> &'static str;
}

macro_rules! simple_op {
    ($(#[$m:meta])* $name:ident, $code:expr, $bound:ident, |$a:ident, $b:ident| $e:expr, $id:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $name;
        impl<T: $bound> Operator<T> for $name {
            #[inline]
            fn combine(&self, $a: T, $b: T) -> T { $e }
            fn identity(&self) -> Option<T> { Some($id) }
            fn code(&self) -> u8 { $code }
            fn name(&self) -> &'static str { stringify!($name) }
        }
    };
}

simple_op!(/// Sum (wrapping for integers).
    Sum, 1, Number, |a, b| T::add(a, b), T::zero());
simple_op!(/// Product (wrapping for integers).
    Prod, 2, Number, |a, b| T::mul(a, b), T::one());
simple_op!(/// Maximum.
    Max, 3, Number, |a, b| if b > a { b } else { a }, T::lowest());
simple_op!(/// Minimum.
    Min, 4, Number, |a, b| if b < a { b } else { a }, T::highest());
simple_op!(/// Bitwise and.
    BitAnd, 5, Integer, |a, b| T::and(a, b), T::ones());
simple_op!(/// Bitwise or.
    BitOr, 6, Integer, |a, b| T::or(a, b), T::zero());
simple_op!(/// Bitwise exclusive or.
    BitXor, 7, Integer, |a, b| T::xor(a, b), T::zero());
simple_op!(/// Logical and: the result is 1 if both are non-zero, else 0.
    LogicalAnd, 8, Integer, |a, b| if a != T::zero() && b != T::zero() { T::one() } else { T::zero() }, T::one());
simple_op!(/// Logical or: the result is 1 if either is non-zero, else 0.
    LogicalOr, 9, Integer, |a, b| if a != T::zero() || b != T::zero() { T::one() } else { T::zero() }, T::zero());

/// Maximum value with its location; ties keep the smaller index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaxLoc;
/// Minimum value with its location; ties keep the smaller index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MinLoc;

macro_rules! loc_ops {
    ($($v:ty, $i:ty);*) => {$(
        impl Operator<Loc<$v, $i>> for MaxLoc {
            fn combine(&self, a: Loc<$v, $i>, b: Loc<$v, $i>) -> Loc<$v, $i> {
                if b.value > a.value || (b.value == a.value && b.index < a.index) { b } else { a }
            }
            fn identity(&self) -> Option<Loc<$v, $i>> {
                Some(Loc { value: <$v as Number>::lowest(), index: <$i>::MAX })
            }
            fn code(&self) -> u8 { 10 }
            fn name(&self) -> &'static str { "MaxLoc" }
        }
        impl Operator<Loc<$v, $i>> for MinLoc {
            fn combine(&self, a: Loc<$v, $i>, b: Loc<$v, $i>) -> Loc<$v, $i> {
                if b.value < a.value || (b.value == a.value && b.index < a.index) { b } else { a }
            }
            fn identity(&self) -> Option<Loc<$v, $i>> {
                Some(Loc { value: <$v as Number>::highest(), index: <$i>::MAX })
            }
            fn code(&self) -> u8 { 11 }
            fn name(&self) -> &'static str { "MinLoc" }
        }
    )*};
}
loc_ops!(f64, u64; i64, u64; u64, u64; f32, u32; i32, u32; u32, u32);

/// A user-defined associative operator (PICL gcomb0, CMMD user combiners).
///
/// Declare whether it is commutative: a non-commutative operator is always
/// applied in rank order (`x0 ⊕ x1 ⊕ … ⊕ x(p-1)`).
pub struct UserOp<T> {
    f: Arc<dyn Fn(T, T) -> T + Send + Sync>,
    identity: Option<T>,
    commutative: bool,
}

impl<T> Clone for UserOp<T>
where
    T: Copy,
{
    fn clone(&self) -> Self {
        UserOp {
            f: self.f.clone(),
            identity: self.identity,
            commutative: self.commutative,
        }
    }
}

impl<T: Element> UserOp<T> {
    /// A commutative and associative operator.
    pub fn commutative(f: impl Fn(T, T) -> T + Send + Sync + 'static) -> Self {
        UserOp {
            f: Arc::new(f),
            identity: None,
            commutative: true,
        }
    }
    /// An associative operator that is not commutative.
    pub fn ordered(f: impl Fn(T, T) -> T + Send + Sync + 'static) -> Self {
        UserOp {
            f: Arc::new(f),
            identity: None,
            commutative: false,
        }
    }
    /// Give the operator an identity (needed by exclusive scans to fill the
    /// first element; without one it is left as it was).
    pub fn with_identity(mut self, id: T) -> Self {
        self.identity = Some(id);
        self
    }
}

impl<T: Element> Operator<T> for UserOp<T> {
    #[inline]
    fn combine(&self, a: T, b: T) -> T {
        (self.f)(a, b)
    }
    fn identity(&self) -> Option<T> {
        self.identity
    }
    fn commutative(&self) -> bool {
        self.commutative
    }
    fn code(&self) -> u8 {
        100 + self.commutative as u8
    }
    fn name(&self) -> &'static str {
        "user operator"
    }
}

/// Combine slices elementwise: `dst = src ⊕ dst` when `src_first`, else
/// `dst = dst ⊕ src`.
#[inline]
pub(crate) fn combine_slices<T: Copy, O: Operator<T>>(
    op: &O,
    src: &[T],
    dst: &mut [T],
    src_first: bool,
) {
    if src_first {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = op.combine(*s, *d);
        }
    } else {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = op.combine(*d, *s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_identities() {
        fn check<T: Number, O: Operator<T>>(op: O, xs: &[T]) {
            let id = op.identity().unwrap();
            for &x in xs {
                assert_eq!(op.combine(id, x), x, "{} identity left", op.name());
                assert_eq!(op.combine(x, id), x, "{} identity right", op.name());
            }
        }
        let v = [0i32, 1, -5, i32::MAX, i32::MIN];
        check(Sum, &v);
        check(Prod, &v);
        check(Max, &v);
        check(Min, &v);
        check(BitAnd, &v);
        check(BitOr, &v);
        check(BitXor, &v);
        check(Max, &[1.5f64, -2.0, f64::MAX]);
        check(Min, &[4u32, 1, 5, 2]);
    }

    #[test]
    fn logical_and_locations() {
        assert_eq!(LogicalAnd.combine(3u8, 7u8), 1);
        assert_eq!(LogicalAnd.combine(3u8, 0u8), 0);
        assert_eq!(LogicalOr.combine(0i64, -2i64), 1);
        let a = Loc {
            value: 2.0f64,
            index: 3u64,
        };
        let b = Loc {
            value: 2.0f64,
            index: 1u64,
        };
        assert_eq!(MaxLoc.combine(a, b), b);
        assert_eq!(
            MinLoc
                .combine(
                    a,
                    Loc {
                        value: 1.0,
                        index: 9
                    }
                )
                .index,
            9
        );
    }

    #[test]
    fn ordered_user_op_keeps_order() {
        // 2x2 matrix product, flattened into a u64 of four u16 is awkward; use
        // affine maps x -> a*x + b packed as Loc<u64, u64> (value=a, index=b).
        let f = UserOp::ordered(|p: Loc<u64, u64>, q: Loc<u64, u64>| Loc {
            value: p.value.wrapping_mul(q.value),
            index: q.value.wrapping_mul(p.index).wrapping_add(q.index),
        });
        let a = Loc { value: 2, index: 1 };
        let b = Loc { value: 3, index: 5 };
        // apply a then b: x -> 3*(2x+1)+5 = 6x + 8
        assert_eq!(f.combine(a, b), Loc { value: 6, index: 8 });
        assert!(!f.commutative());
    }
}
