//! Fuzzing without a nightly toolchain: the selector parser and matcher, modifier parsing and
//! application, and the bounded JSON parser, fed for a bounded time with mutations of a corpus
//! kept in the repo (`fuzz/corpus/<target>/`).
//!
//! `cargo fuzz` needs nightly-only compiler flags (`-Zsanitizer`) and its own binary in CI; this
//! harness runs on the stable toolchain inside `cargo test`. Each target runs for
//! `PORTICO_FUZZ_SECS` seconds (default 2; CI sets 60) from a seed printed at the start
//! (`PORTICO_FUZZ_SEED` replays one). An input that panics fails the test, naming the input; it
//! then belongs in the corpus as a regression case.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use portico_store::json::{JsonError, JsonLimits, parse_bounded};
use portico_store::{Document, Projection, Selector, Sort, Update};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

/// Tokens spliced into inputs: the grammar's operators and punctuation.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "\\",
    "null",
    "true",
    "false",
    "0",
    "-1",
    "1.5",
    "1e400",
    "18446744073709551617",
    "2.8535563002202693e-175",
    "\"a\"",
    "\"a.b\"",
    "\"a.0\"",
    "\"_id\"",
    "\"$and\"",
    "\"$or\"",
    "\"$nor\"",
    "\"$not\"",
    "\"$eq\"",
    "\"$ne\"",
    "\"$gt\"",
    "\"$gte\"",
    "\"$lt\"",
    "\"$lte\"",
    "\"$in\"",
    "\"$nin\"",
    "\"$exists\"",
    "\"$all\"",
    "\"$size\"",
    "\"$elemMatch\"",
    "\"$regex\"",
    "\"$options\"",
    "\"(a+)+$\"",
    "\"[\"",
    "\"$set\"",
    "\"$unset\"",
    "\"$inc\"",
    "\"$push\"",
    "\"$pull\"",
    "\"$addToSet\"",
    "\"$each\"",
    "\"a.b.c\"",
    "\"a.-1\"",
    "\"a..b\"",
    "\"$\"",
    "\"\\u0000\"",
    "[[[[[[",
];

fn seconds() -> u64 {
    std::env::var("PORTICO_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2)
}

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    let inputs: Vec<Vec<u8>> = entries
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .collect();
    assert!(!inputs.is_empty(), "empty corpus {}", dir.display());
    inputs
}

/// One random change: a byte flipped, a span cut or doubled, a token spliced in, or the splice
/// of another corpus input.
fn mutate(rng: &mut StdRng, input: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    let at = |rng: &mut StdRng, len: usize| rng.random_range(0..=len);
    match rng.random_range(0..5) {
        0 if !input.is_empty() => {
            let i = rng.random_range(0..input.len());
            input[i] = rng.random();
        }
        1 if !input.is_empty() => {
            let start = at(rng, input.len());
            let end = (start + rng.random_range(0..8)).min(input.len());
            input.drain(start..end);
        }
        2 if !input.is_empty() => {
            let start = at(rng, input.len());
            let end = (start + rng.random_range(0..16)).min(input.len());
            let copy: Vec<u8> = input[start..end].to_vec();
            let to = at(rng, input.len());
            input.splice(to..to, copy);
        }
        3 => {
            let token = TOKENS[rng.random_range(0..TOKENS.len())].as_bytes();
            let to = at(rng, input.len());
            input.splice(to..to, token.iter().copied());
        }
        _ => {
            let other = &corpus[rng.random_range(0..corpus.len())];
            let from = at(rng, other.len());
            let to = at(rng, input.len());
            input.splice(to..to, other[from..].iter().copied());
        }
    }
    input.truncate(4096);
}

/// Runs `check` on the corpus and then on mutations of it for the target's time; a panic fails
/// the test with the input. Returns how many inputs ran.
fn fuzz(target: &str, check: impl Fn(&[u8])) -> u64 {
    let corpus = corpus(target);
    let seed = std::env::var("PORTICO_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    eprintln!("fuzz {target}: seed {seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let deadline = Instant::now() + Duration::from_secs(seconds());
    let mut runs = 0u64;
    let mut run = |input: &[u8]| {
        runs += 1;
        if catch_unwind(AssertUnwindSafe(|| check(input))).is_err() {
            panic!(
                "fuzz {target} (seed {seed}) panicked on input {:?}",
                String::from_utf8_lossy(input)
            );
        }
    };
    for input in &corpus {
        run(input);
    }
    while Instant::now() < deadline {
        let mut input = corpus[rng.random_range(0..corpus.len())].clone();
        for _ in 0..rng.random_range(1..6) {
            mutate(&mut rng, &mut input, &corpus);
        }
        run(&input);
    }
    eprintln!("fuzz {target}: {runs} inputs");
    runs
}

fn docs() -> Vec<Document> {
    [
        json!({"_id": "a", "a": 1, "b": "x", "c": [1, 2, {"d": 3}], "e": {"f": [{"g": null}]}}),
        json!({"_id": "b", "a": [[1], [2, 3]], "a.b": 1, "n": 18446744073709551617u128.to_string()}),
        json!({"_id": "c"}),
    ]
    .into_iter()
    .filter_map(|v| v.as_object().cloned())
    .collect()
}

fn parse(input: &[u8]) -> Option<Value> {
    parse_bounded(input, &JsonLimits::default()).ok()
}

#[test]
fn selectors_parse_and_match_without_panicking() {
    let docs = docs();
    let runs = fuzz("selector", |input| {
        let Some(value) = parse(input) else { return };
        if let Ok(selector) = Selector::parse(&value) {
            for d in &docs {
                let _ = selector.matches(d);
            }
        }
        let _ = Sort::parse(&value).map(|s| {
            let mut sorted = docs.clone();
            sorted.sort_by(|x, y| s.compare(x, y));
        });
        if let Ok(p) = Projection::parse(&value) {
            for d in &docs {
                let _ = p.apply(d);
            }
        }
    });
    assert!(runs > 0);
}

#[test]
fn modifiers_apply_without_panicking_and_keep_the_id() {
    let docs = docs();
    let runs = fuzz("modifier", |input| {
        let Some(value) = parse(input) else { return };
        let Ok(update) = Update::parse(&value) else {
            return;
        };
        for d in &docs {
            let mut changed = d.clone();
            if update.apply(&mut changed).is_ok() {
                assert_eq!(changed.get("_id"), d.get("_id"), "{value}");
                assert!(serde_json::to_string(&changed).is_ok());
            }
        }
    });
    assert!(runs > 0);
}

#[test]
fn the_bounded_parser_agrees_with_serde_json() {
    let mut limits = JsonLimits::default();
    limits.max_depth = 128;
    let runs = fuzz("json", |input| {
        let ours = parse_bounded(input, &limits);
        let theirs = serde_json::from_slice::<Value>(input);
        match (ours, theirs) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(JsonError::Syntax(_)), Err(_)) => {}
            (Err(JsonError::TooManyValues { .. }), Ok(_)) => {}
            (a, b) => panic!("bounded {a:?}, serde_json {b:?}"),
        }
    });
    assert!(runs > 0);
}
