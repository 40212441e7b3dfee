//! Bounded JSON parsing: a body's parsed form costs memory in proportion to its bytes.
//!
//! A parsed `serde_json::Value` costs 72 bytes per value before any heap data, so a body of
//! tiny values (`[0,0,0,...]`, two bytes a value) grows some 50-100x when parsed; a 49 MB body
//! took 1.9 GB. [`parse_bounded`] therefore counts the values and the nesting depth of a body
//! *before* anything is allocated, in one pass over its bytes that keeps no state but a few
//! counters, and parses it with `serde_json` only when it fits its [`JsonLimits`]. The result
//! is exactly what `serde_json::from_slice` gives (the same `Value`, numbers kept as sent), and
//! a body over its budget is refused having cost nothing but the scan.
//!
//! The count may be fed in chunks ([`JsonBudget`]), so a server can refuse a body while it is
//! still arriving, before it holds all of it.
//!
//! ```
//! use portico_store::json::{JsonError, JsonLimits, parse_bounded};
//!
//! let limits = JsonLimits::default();
//! let value = parse_bounded(br#"{"a": [1, 2.50, 18446744073709551617]}"#, &limits)?;
//! assert_eq!(value["a"][2].to_string(), "18446744073709551617");
//!
//! let deep = "[".repeat(1000) + &"]".repeat(1000);
//! assert!(matches!(parse_bounded(deep.as_bytes(), &limits), Err(JsonError::TooDeep { .. })));
//! # Ok::<(), JsonError>(())
//! ```

use serde_json::Value;

/// How much a JSON body may cost once parsed.
///
/// A body of `len` bytes may hold [`JsonLimits::max_values`]`(len)` values:
/// `base_values + len / bytes_per_value`. Every string (object keys included), number and
/// literal counts as one value, every array and object as [`CONTAINER_WEIGHT`] (a non-empty one
/// allocates room for four members at once). The fixed part lets any small body through
/// whatever its shape; the proportional part keeps a large body's parsed size within a constant
/// factor of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct JsonLimits {
    /// The deepest nesting of arrays and objects allowed (the top level is depth 1). At most
    /// 128, `serde_json`'s own limit.
    pub max_depth: usize,
    /// Values any body may hold whatever its length.
    pub base_values: usize,
    /// Beyond `base_values`, one more value is allowed for every this many bytes. Zero means
    /// no proportional allowance.
    pub bytes_per_value: usize,
}

impl JsonLimits {
    /// 64 levels of nesting.
    pub const DEFAULT_MAX_DEPTH: usize = 64;
    /// 262,144 values in any body (some 10,000 small objects): at most ~28 MB once parsed,
    /// whatever its shape.
    pub const DEFAULT_BASE_VALUES: usize = 262_144;
    /// One more value per 48 bytes. Measured (peak RSS growth while parsing, over the body's
    /// length, for bodies at this density): numbers 2.2x, one-element arrays 1.7x, one-field
    /// objects 1.8x, empty strings 1.5x. With the body itself, a large body costs under 4x its
    /// length.
    pub const DEFAULT_BYTES_PER_VALUE: usize = 48;

    /// How many values a body of `len` bytes may hold.
    pub fn max_values(&self, len: usize) -> usize {
        let proportional = len.checked_div(self.bytes_per_value).unwrap_or(0);
        self.base_values.saturating_add(proportional)
    }
}

impl Default for JsonLimits {
    fn default() -> Self {
        JsonLimits {
            max_depth: Self::DEFAULT_MAX_DEPTH,
            base_values: Self::DEFAULT_BASE_VALUES,
            bytes_per_value: Self::DEFAULT_BYTES_PER_VALUE,
        }
    }
}

/// How many values an array or object counts for in [`JsonLimits`]: a `serde_json` array with
/// one element already holds room for four (4 x 72 bytes), an object likewise.
pub const CONTAINER_WEIGHT: usize = 4;

/// Why a body was not parsed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JsonError {
    /// The body nests arrays and objects deeper than the limit (a client error: 400).
    #[error("JSON nested deeper than {limit} levels")]
    TooDeep {
        /// The nesting limit.
        limit: usize,
    },
    /// The body holds more values than its length allows (a client error: 413, the body is
    /// too large for what it holds).
    #[error("JSON body holds more than {limit} values for its {len} bytes")]
    TooManyValues {
        /// The number of values allowed.
        limit: usize,
        /// The body's length in bytes.
        len: usize,
    },
    /// The body is not valid JSON (a client error: 400); the message says where.
    #[error("{0}")]
    Syntax(#[from] serde_json::Error),
}

/// Parses `bytes` as JSON if it fits `limits`, giving exactly what `serde_json::from_slice`
/// gives.
///
/// # Errors
/// [`JsonError::TooDeep`] or [`JsonError::TooManyValues`] when the body is over its limits
/// (nothing has been allocated then), [`JsonError::Syntax`] when it is not valid JSON.
pub fn parse_bounded(bytes: &[u8], limits: &JsonLimits) -> Result<Value, JsonError> {
    let mut budget = JsonBudget::new(limits, bytes.len());
    budget.feed(bytes)?;
    let sizes = container_sizes(bytes);
    let next = std::cell::Cell::new(0);
    let mut parser = serde_json::Deserializer::from_slice(bytes);
    let value = serde::de::DeserializeSeed::deserialize(
        Presized {
            sizes: &sizes,
            next: &next,
            // No container holds more members than the text has values (a malformed text of
            // commas must not make the parser reserve room for them).
            most: budget.values(),
        },
        &mut parser,
    )?;
    parser.end()?;
    Ok(value)
}

/// The number of members of every array and object of a JSON text, in the order they open.
///
/// `serde_json` builds an object or array by adding its members one by one, growing it by
/// doubling: the old buffers it copies from, and the room it leaves unused, made a parsed object
/// of 50,000 small fields cost 17 times its text at the peak. Knowing each one's size first,
/// [`parse_bounded`] makes every one at its size (a parse of such an object then costs about
/// 7 times its text). Counted from the commas outside strings, in one pass; a malformed text
/// gives wrong sizes, which only make the parser allocate differently before it reports the
/// error.
fn container_sizes(bytes: &[u8]) -> Vec<u32> {
    let mut sizes: Vec<u32> = Vec::new();
    // Per open container: its index in `sizes`, and whether a member started in it.
    let mut open: Vec<(usize, bool)> = Vec::new();
    let mut state = State::Between;
    for &b in bytes {
        match state {
            State::Str => match b {
                b'"' => state = State::Between,
                b'\\' => state = State::Escape,
                _ => {}
            },
            State::Escape => state = State::Str,
            State::Between | State::Bare => match b {
                b'{' | b'[' => {
                    if let Some(top) = open.last_mut() {
                        top.1 = true;
                    }
                    open.push((sizes.len(), false));
                    sizes.push(0);
                    state = State::Between;
                }
                b'}' | b']' => {
                    if let Some((at, started)) = open.pop()
                        && started
                    {
                        sizes[at] = sizes[at].saturating_add(1);
                    }
                    state = State::Between;
                }
                b',' => {
                    if let Some(&(at, _)) = open.last() {
                        sizes[at] = sizes[at].saturating_add(1);
                    }
                    state = State::Between;
                }
                b':' | b' ' | b'\t' | b'\n' | b'\r' => state = State::Between,
                _ => {
                    if let Some(top) = open.last_mut() {
                        top.1 = true;
                    }
                    state = if b == b'"' { State::Str } else { State::Bare };
                }
            },
        }
    }
    sizes
}

/// The key `serde_json` (with its `arbitrary_precision` feature) gives a number as, when it
/// hands it to a visitor as a one-entry map; its own `Value` parser tells numbers from objects
/// by it in the same way.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// Parses a [`Value`] making each array and object at the size [`container_sizes`] found.
#[derive(Clone, Copy)]
struct Presized<'a> {
    sizes: &'a [u32],
    next: &'a std::cell::Cell<usize>,
    most: usize,
}

impl Presized<'_> {
    /// The size of the next container to open.
    fn take(self) -> usize {
        let at = self.next.get();
        self.next.set(at + 1);
        self.sizes.get(at).map_or(0, |n| *n as usize).min(self.most)
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Presized<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Presized<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        serde::de::DeserializeSeed::deserialize(self, d)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(self.take());
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let Some(first) = map.next_key::<String>()? else {
            let _ = self.take();
            return Ok(Value::Object(serde_json::Map::new()));
        };
        if first == NUMBER_TOKEN {
            let text: String = map.next_value()?;
            return text
                .parse::<serde_json::Number>()
                .map(Value::Number)
                .map_err(serde::de::Error::custom);
        }
        // The outermost object of a body is a document to be: room for the `_id` and the two
        // timestamps a write adds, so they do not make it grow (by doubling) afterwards.
        let room = if self.next.get() == 0 { 3 } else { 0 };
        let mut object = serde_json::Map::with_capacity(self.take() + room);
        let value = map.next_value_seed(self)?;
        object.insert(first, value);
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// Counts the values and depth of a JSON text fed in chunks, refusing it as soon as it goes over
/// its limits.
///
/// The count needs no valid JSON: it counts the start of every string, number, literal, array
/// and object outside strings, which is at least the number of values `serde_json` can build
/// from the text, and leaves reporting syntax errors to the parser.
#[derive(Debug, Clone)]
pub struct JsonBudget {
    max_depth: usize,
    max_values: usize,
    len: usize,
    values: usize,
    depth: usize,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between tokens.
    Between,
    /// Inside a number or literal.
    Bare,
    /// Inside a string.
    Str,
    /// Inside a string, right after a backslash.
    Escape,
}

impl JsonBudget {
    /// A budget for a body of `len` bytes (the `Content-Length`, or the most the server reads).
    pub fn new(limits: &JsonLimits, len: usize) -> Self {
        JsonBudget {
            max_depth: limits.max_depth,
            max_values: limits.max_values(len),
            len,
            values: 0,
            depth: 0,
            state: State::Between,
        }
    }

    /// The values counted so far (arrays and objects weighing [`CONTAINER_WEIGHT`]).
    pub fn values(&self) -> usize {
        self.values
    }

    /// Counts the next chunk of the text.
    ///
    /// # Errors
    /// [`JsonError::TooDeep`] or [`JsonError::TooManyValues`] once the text seen so far is over
    /// the limits.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), JsonError> {
        for &b in chunk {
            match self.state {
                State::Str => match b {
                    b'"' => self.state = State::Between,
                    b'\\' => self.state = State::Escape,
                    _ => {}
                },
                State::Escape => self.state = State::Str,
                State::Between | State::Bare => match b {
                    b'"' => {
                        self.state = State::Str;
                        self.count(1)?;
                    }
                    b'{' | b'[' => {
                        self.state = State::Between;
                        self.depth += 1;
                        if self.depth > self.max_depth {
                            return Err(JsonError::TooDeep {
                                limit: self.max_depth,
                            });
                        }
                        self.count(CONTAINER_WEIGHT)?;
                    }
                    b'}' | b']' => {
                        self.state = State::Between;
                        self.depth = self.depth.saturating_sub(1);
                    }
                    b',' | b':' | b' ' | b'\t' | b'\n' | b'\r' => self.state = State::Between,
                    _ => {
                        if self.state == State::Between {
                            self.state = State::Bare;
                            self.count(1)?;
                        }
                    }
                },
            }
        }
        Ok(())
    }

    /// Wraps `reader` so that every byte read through it is counted: a read that takes the text
    /// over the limits fails with an [`std::io::Error`] holding the [`JsonError`]. Parsing with
    /// `serde_json::from_reader` through it then stops there, having built no more values than
    /// the budget allows (plus what one read buffer holds).
    pub fn reader<R: std::io::Read>(self, reader: R) -> BudgetReader<R> {
        BudgetReader {
            budget: self,
            inner: reader,
        }
    }

    fn count(&mut self, weight: usize) -> Result<(), JsonError> {
        self.values = self.values.saturating_add(weight);
        if self.values > self.max_values {
            return Err(JsonError::TooManyValues {
                limit: self.max_values,
                len: self.len,
            });
        }
        Ok(())
    }
}

/// A reader that counts the JSON read through it; see [`JsonBudget::reader`].
#[derive(Debug)]
pub struct BudgetReader<R> {
    budget: JsonBudget,
    inner: R,
}

impl<R: std::io::Read> std::io::Read for BudgetReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.budget.feed(&buf[..n]).map_err(std::io::Error::other)?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn container_sizes_count_members_in_opening_order() {
        // Commas and brackets inside strings are not structure.
        let text = br#"{"a": [1, 2, {"b": "x,y]"}], "c": {}, "d": [[]]}"#;
        assert_eq!(container_sizes(text), vec![3, 3, 1, 0, 1, 0]);
        let parsed = parse_bounded(text, &JsonLimits::default()).unwrap();
        assert_eq!(parsed, serde_json::from_slice::<Value>(text).unwrap());
    }

    /// Every value in `v`, object keys included, weighted: what the budget counts at least.
    fn count(v: &Value) -> usize {
        let own = match v {
            Value::Array(_) | Value::Object(_) => CONTAINER_WEIGHT,
            _ => 1,
        };
        own + match v {
            Value::Array(items) => items.iter().map(count).sum(),
            Value::Object(m) => m.values().map(|v| 1 + count(v)).sum(),
            _ => 0,
        }
    }

    fn budget_of(text: &[u8]) -> usize {
        let limits = JsonLimits {
            max_depth: usize::MAX,
            base_values: usize::MAX,
            bytes_per_value: 0,
        };
        let mut budget = JsonBudget::new(&limits, text.len());
        assert!(budget.feed(text).is_ok());
        budget.values()
    }

    #[test]
    fn counts_every_value_once() {
        for (text, n) in [
            (
                &br#"{"a": [1, -2.5e+3, "x\"y", true, null, {}], "b": "\\"}"#[..],
                20,
            ),
            (b"[0,0,0]", 7),
            (b" 12 ", 1),
            (b"[[],{}]", 12),
        ] {
            assert_eq!(budget_of(text), n, "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn refuses_deep_and_dense_bodies_before_parsing() {
        let limits = JsonLimits::default();
        let deep = "[".repeat(65) + &"]".repeat(65);
        assert!(matches!(
            parse_bounded(deep.as_bytes(), &limits),
            Err(JsonError::TooDeep { limit: 64 })
        ));
        let ok = "[".repeat(64) + &"]".repeat(64);
        assert!(parse_bounded(ok.as_bytes(), &limits).is_ok());

        // Two bytes a value: over the allowance of a body this size.
        let dense = format!("[{}0]", "0,".repeat(300_000));
        let err = parse_bounded(dense.as_bytes(), &limits);
        assert!(matches!(err, Err(JsonError::TooManyValues { len, .. }) if len == dense.len()));
        // The same number of values spread over more bytes fits.
        let sparse = format!("[{}\"{}\"]", "0,".repeat(300_000), "x".repeat(30_000_000));
        assert!(parse_bounded(sparse.as_bytes(), &limits).is_ok());
        // A small body fits whatever its shape.
        let small = format!("[{}0]", "0,".repeat(260_000));
        assert!(parse_bounded(small.as_bytes(), &limits).is_ok());
    }

    #[test]
    fn keeps_numbers_as_sent_and_reports_syntax() {
        let limits = JsonLimits::default();
        let v = parse_bounded(b"[2.8535563002202693e-175, 18446744073709551617]", &limits);
        let v = v.map(|v| v.to_string()).unwrap_or_default();
        assert_eq!(v, "[2.8535563002202693e-175,18446744073709551617]");
        assert!(matches!(
            parse_bounded(b"{\"a\":", &limits),
            Err(JsonError::Syntax(_))
        ));
    }

    #[test]
    fn a_reader_stops_at_the_limit() {
        let limits = JsonLimits {
            max_depth: 3,
            ..JsonLimits::default()
        };
        let ok = br#"[[{"a": 1}]]"#;
        let reader = JsonBudget::new(&limits, ok.len()).reader(&ok[..]);
        assert!(serde_json::from_reader::<_, Value>(reader).is_ok());
        let deep = b"[[[[1]]]]";
        let reader = JsonBudget::new(&limits, deep.len()).reader(&deep[..]);
        let err = serde_json::from_reader::<_, Value>(reader)
            .map(|_| ())
            .unwrap_err();
        assert!(err.to_string().contains("nested deeper than 3"), "{err}");
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[a-z\"\\\\é{}\\[\\],:]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("[a-z\"{}]{0,3}", inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Any JSON text, pretty or compact: the same value as serde_json, and a count that is
        /// never below the number of values built.
        #[test]
        fn same_value_as_serde_json(v in arb_json(), pretty in any::<bool>()) {
            let text = if pretty { serde_json::to_vec_pretty(&v) } else { serde_json::to_vec(&v) };
            let text = text.unwrap_or_default();
            let parsed = parse_bounded(&text, &JsonLimits { max_depth: 128, ..JsonLimits::default() });
            let expected: Value = serde_json::from_slice(&text).unwrap_or(Value::Null);
            prop_assert_eq!(parsed.ok(), Some(expected.clone()));
            prop_assert!(budget_of(&text) >= count(&expected));
        }

        /// Any bytes: accepted exactly when serde_json accepts them (within the limits), with
        /// the same value; never a panic.
        #[test]
        fn arbitrary_bytes_agree_with_serde_json(bytes in prop::collection::vec(prop_oneof![
            Just(b'['), Just(b']'), Just(b'{'), Just(b'}'), Just(b'"'), Just(b'\\'), Just(b','),
            Just(b':'), Just(b'1'), Just(b'e'), Just(b'-'), Just(b' '), any::<u8>()
        ], 0..64)) {
            let ours = parse_bounded(&bytes, &JsonLimits::default());
            let theirs = serde_json::from_slice::<Value>(&bytes);
            match (ours, theirs) {
                (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
                (Err(JsonError::Syntax(_)), Err(_)) => {}
                (a, b) => prop_assert!(false, "ours {:?}, serde_json {:?}", a, b),
            }
        }
    }
}
