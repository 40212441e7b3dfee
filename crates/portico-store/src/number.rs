//! Exact arithmetic on JSON numbers as they were sent.
//!
//! The workspace builds `serde_json` with `arbitrary_precision`, so a [`Number`] holds the text
//! the client wrote (`2.8535563002202693e-175`, `18446744073709551617`, `1.0`). Comparing them
//! through `f64` would call distinct big integers equal, so selectors and sort compare the
//! decimal values exactly instead: a number is read as sign, significant digits and a power of
//! ten, which orders any two JSON numbers without allocating.

use std::cmp::Ordering;

use serde_json::Number;

/// A JSON number's decimal value: `(-1)^negative * 0.d1d2d3... * 10^exponent`, with `digits`
/// free of leading and trailing zeros (empty for zero, whose sign is then ignored).
#[derive(Debug, Clone, Copy)]
struct Decimal<'a> {
    negative: bool,
    /// The integer and fraction digits as written (with the dot, if any), still holding leading
    /// and trailing zeros; [`Decimal::digits`] walks the significant ones.
    mantissa: &'a str,
    /// The position of the decimal point relative to the first significant digit.
    exponent: i128,
    /// The number of significant digits.
    len: usize,
}

impl<'a> Decimal<'a> {
    /// Reads a JSON number's text. Text that is not a JSON number (which `serde_json` never
    /// produces) reads as zero.
    fn parse(text: &'a str) -> Self {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exp_text) = match rest.find(['e', 'E']) {
            Some(at) => (&rest[..at], &rest[at + 1..]),
            None => (rest, ""),
        };
        let written_exp = parse_exponent(exp_text);
        let int_len = mantissa.find('.').unwrap_or(mantissa.len());
        let digits = || mantissa.bytes().filter(u8::is_ascii_digit);
        let leading = digits().take_while(|&d| d == b'0').count();
        let total = digits().count();
        if leading == total {
            return Decimal {
                negative: false,
                mantissa: "",
                exponent: 0,
                len: 0,
            };
        }
        let trailing = digits().rev().take_while(|&d| d == b'0').count();
        // The first significant digit sits at position `leading` among all digits; the decimal
        // point after `int_len` of them.
        let exponent = written_exp + int_len as i128 - leading as i128;
        Decimal {
            negative,
            mantissa,
            exponent,
            len: total - leading - trailing,
        }
    }

    /// The significant digits, most significant first.
    fn digits(&self) -> impl Iterator<Item = u8> + 'a {
        let len = self.len;
        self.mantissa
            .bytes()
            .filter(u8::is_ascii_digit)
            .skip_while(|&d| d == b'0')
            .take(len)
    }

    fn is_zero(&self) -> bool {
        self.len == 0
    }

    /// Compares magnitudes.
    fn cmp_abs(&self, other: &Self) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        self.exponent
            .cmp(&other.exponent)
            .then_with(|| self.digits().cmp(other.digits()))
    }
}

/// The exponent after `e`, saturated far beyond anything a body can make matter: a text of
/// 2^60 digits cannot be sent, so saturation never merges two distinct values.
fn parse_exponent(text: &str) -> i128 {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    const CAP: i128 = 1 << 100;
    let mut value: i128 = 0;
    for d in digits.bytes().filter(u8::is_ascii_digit) {
        value = (value * 10 + i128::from(d - b'0')).min(CAP);
    }
    if negative { -value } else { value }
}

/// Appends the order-preserving key of a JSON number (see [`crate::order_key`]): bytes that
/// compare (as byte strings) as [`compare_numbers`] compares the numbers, equal for equal values
/// in any spelling (`1`, `1.0`, `10e-1`).
///
/// The layout: a sign byte (`0x21` negative, `0x22` zero, `0x23` positive), then, for a
/// non-zero number, the decimal exponent (a length byte and its big-endian magnitude), the
/// significant digits (each `digit + 1`) and a `0x00` end; a negative number has those bytes
/// after the sign byte complemented, which reverses their order (the layout is prefix-free: no
/// number's bytes begin another's).
pub(crate) fn order_key(n: &Number, out: &mut Vec<u8>) {
    let d = Decimal::parse(n.as_str());
    if d.is_zero() {
        out.push(0x22);
        return;
    }
    out.push(if d.negative { 0x21 } else { 0x23 });
    let start = out.len();
    let magnitude = d.exponent.unsigned_abs();
    let bytes = magnitude.to_be_bytes();
    let skip = bytes.iter().take_while(|&&b| b == 0).count();
    let len = (bytes.len() - skip) as u8;
    if d.exponent >= 0 {
        out.push(0x80 + len);
        out.extend_from_slice(&bytes[skip..]);
    } else {
        out.push(0x80 - len);
        out.extend(bytes[skip..].iter().map(|b| !b));
    }
    out.extend(d.digits().map(|digit| digit - b'0' + 1));
    out.push(0x00);
    if d.negative {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
}

/// Orders two JSON numbers by their exact decimal values (`1`, `1.0` and `10e-1` are equal;
/// `18446744073709551617 > 18446744073709551616`).
pub(crate) fn compare_numbers(a: &Number, b: &Number) -> Ordering {
    let (x, y) = (Decimal::parse(a.as_str()), Decimal::parse(b.as_str()));
    let negative = |d: &Decimal<'_>| d.negative && !d.is_zero();
    match (negative(&x), negative(&y)) {
        (false, false) => x.cmp_abs(&y),
        (true, true) => y.cmp_abs(&x),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
    }
}

/// The integer a number's text writes, without fraction or exponent, as `(negative, digits)`.
fn plain_integer(n: &Number) -> Option<(bool, &str)> {
    let text = n.as_str();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some((negative, digits))
}

/// `a + b`: exact when both are written as integers (any size), else through `f64` as the
/// reference platform does; `None` when that sum is not a finite number.
pub(crate) fn add_numbers(a: &Number, b: &Number) -> Option<Number> {
    if let (Some(x), Some(y)) = (plain_integer(a), plain_integer(b)) {
        return Some(add_integers(x, y));
    }
    Number::from_f64(a.as_f64()? + b.as_f64()?)
}

fn add_integers((xn, x): (bool, &str), (yn, y): (bool, &str)) -> Number {
    let (negative, digits) = if xn == yn {
        (xn, add_digits(x, y))
    } else {
        match cmp_digits(x, y) {
            Ordering::Equal => (false, "0".to_string()),
            Ordering::Greater => (xn, sub_digits(x, y)),
            Ordering::Less => (yn, sub_digits(y, x)),
        }
    };
    let text = if negative && digits != "0" {
        format!("-{digits}")
    } else {
        digits
    };
    Number::from_string_unchecked(text)
}

fn trim_zeros(d: &str) -> &str {
    let t = d.trim_start_matches('0');
    if t.is_empty() { "0" } else { t }
}

fn cmp_digits(x: &str, y: &str) -> Ordering {
    let (x, y) = (trim_zeros(x), trim_zeros(y));
    x.len().cmp(&y.len()).then_with(|| x.cmp(y))
}

/// Decimal addition of two digit strings.
fn add_digits(x: &str, y: &str) -> String {
    let (x, y) = (x.as_bytes(), y.as_bytes());
    let mut out = Vec::with_capacity(x.len().max(y.len()) + 1);
    let mut carry = 0;
    for i in 0..x.len().max(y.len()) {
        let dx = x.len().checked_sub(i + 1).map_or(0, |j| x[j] - b'0');
        let dy = y.len().checked_sub(i + 1).map_or(0, |j| y[j] - b'0');
        let s = dx + dy + carry;
        out.push(b'0' + s % 10);
        carry = s / 10;
    }
    if carry > 0 {
        out.push(b'0' + carry);
    }
    finish(out)
}

/// Decimal `x - y` for digit strings with `x >= y`.
fn sub_digits(x: &str, y: &str) -> String {
    let (x, y) = (x.as_bytes(), y.as_bytes());
    let mut out = Vec::with_capacity(x.len());
    let mut borrow = 0;
    for i in 0..x.len() {
        let dx = i16::from(x[x.len() - 1 - i] - b'0');
        let dy = y
            .len()
            .checked_sub(i + 1)
            .map_or(0, |j| i16::from(y[j] - b'0'));
        let mut d = dx - dy - borrow;
        borrow = 0;
        if d < 0 {
            d += 10;
            borrow = 1;
        }
        out.push(b'0' + d as u8);
    }
    finish(out)
}

/// Reverses least-significant-first digits into a string without leading zeros.
fn finish(mut reversed: Vec<u8>) -> String {
    while reversed.len() > 1 && reversed.last() == Some(&b'0') {
        reversed.pop();
    }
    reversed.reverse();
    reversed.into_iter().map(char::from).collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn n(text: &str) -> Number {
        Number::from_string_unchecked(text.to_string())
    }

    #[test]
    fn equal_values_in_any_spelling() {
        for (a, b) in [
            ("1", "1.0"),
            ("1", "10e-1"),
            ("100", "1e2"),
            ("100", "1E+2"),
            ("0", "-0"),
            ("0", "0.000e5"),
            ("-2.50", "-25e-1"),
        ] {
            assert_eq!(compare_numbers(&n(a), &n(b)), Ordering::Equal, "{a} {b}");
        }
    }

    #[test]
    fn big_integers_and_tiny_floats_are_ordered_exactly() {
        let ordered = [
            "-18446744073709551617",
            "-18446744073709551616",
            "-1",
            "-2.8535563002202693e-175",
            "0",
            "2.853556300220269e-175",
            "2.8535563002202693e-175",
            "0.5",
            "1",
            "9007199254740993",
            "18446744073709551615",
            "18446744073709551616",
            "18446744073709551617",
            "1e400",
        ];
        for (i, a) in ordered.iter().enumerate() {
            for (j, b) in ordered.iter().enumerate() {
                assert_eq!(compare_numbers(&n(a), &n(b)), i.cmp(&j), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn integers_add_exactly_at_any_size() {
        let sum = |a: &str, b: &str| add_numbers(&n(a), &n(b)).map(|s| s.to_string());
        assert_eq!(
            sum("18446744073709551615", "2").as_deref(),
            Some("18446744073709551617")
        );
        assert_eq!(sum("-5", "3").as_deref(), Some("-2"));
        assert_eq!(sum("5", "-5").as_deref(), Some("0"));
        assert_eq!(
            sum("-100000000000000000000", "1").as_deref(),
            Some("-99999999999999999999")
        );
        assert_eq!(sum("1.5", "1").as_deref(), Some("2.5"));
        assert_eq!(sum("1e308", "1e308"), None);
    }

    proptest! {
        #[test]
        fn matches_f64_and_i128_order(a in any::<f64>(), b in any::<f64>(), x in any::<i64>(), y in any::<i64>()) {
            if let (Some(na), Some(nb)) = (Number::from_f64(a), Number::from_f64(b)) {
                prop_assert_eq!(compare_numbers(&na, &nb), a.partial_cmp(&b).unwrap_or(Ordering::Equal));
            }
            let (nx, ny) = (Number::from(x), Number::from(y));
            prop_assert_eq!(compare_numbers(&nx, &ny), x.cmp(&y));
            let sum = add_numbers(&nx, &ny).map(|s| s.to_string());
            prop_assert_eq!(sum, Some((i128::from(x) + i128::from(y)).to_string()));
        }
    }
}
