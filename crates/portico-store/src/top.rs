//! A bounded selection of the smallest items, shared by the backends' sorted pages.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::{Document, Error, Query, Result, Sort};

/// The most documents a sorted [`Query`] may skip and return together (`skip + limit`).
///
/// No backend sorts through an index: a sorted page is chosen by reading every match and keeping
/// the best `skip + limit` in memory, so this bounds the memory of one sorted query (about 10,000
/// documents, a few MB for small ones) whatever the collection's size. A sorted query past it is
/// refused with [`Error::InvalidSort`] (a client error) saying how to page instead: filter on the
/// sort field from the last value seen (`{"field": {"$gt": last}}`) rather than skipping. A query
/// without a sort may skip any number of documents: it streams in `_id` order and keeps none.
pub const MAX_SORTED_WINDOW: u64 = 10_000;

/// Refuses a sorted `query` whose `skip + limit` is over [`MAX_SORTED_WINDOW`] (a sorted query
/// without a limit counts its `skip` only: what it returns is what it asked for).
///
/// # Errors
/// [`Error::InvalidSort`] with a message for the client on how to page.
pub(crate) fn check_sorted_window(query: &Query) -> Result<()> {
    let Some(sort) = &query.sort else {
        return Ok(());
    };
    let window = query.skip.saturating_add(query.limit.unwrap_or(0));
    if window <= MAX_SORTED_WINDOW {
        return Ok(());
    }
    let field = sort
        .keys()
        .first()
        .map_or("the sort field", |(path, _)| path.as_str());
    Err(Error::InvalidSort(format!(
        "a sorted query may skip and return at most {MAX_SORTED_WINDOW} documents in all \
         (skip + limit is {window}); to page further, keep the sort and filter on `{field}` \
         from the last value you saw instead of skipping (e.g. where {{\"{field}\": \
         {{\"$gt\": <last value>}}}} with a small skip for ties)"
    )))
}

/// Keeps the `keep` smallest items pushed so far (by `Ord`) in a max-heap whose top is the first
/// to go, so a sorted page of `skip + limit` documents never holds more than that many.
pub(crate) struct TopK<T> {
    heap: BinaryHeap<T>,
    keep: usize,
}

impl<T: Ord> TopK<T> {
    /// An empty selection that will keep at most `keep` items.
    pub(crate) fn new(keep: usize) -> Self {
        TopK {
            heap: BinaryHeap::new(),
            keep,
        }
    }

    /// Offers `item`: kept when fewer than `keep` are held or it is smaller than the largest held.
    pub(crate) fn push(&mut self, item: T) {
        if self.heap.len() < self.keep {
            self.heap.push(item);
        } else if self.heap.peek().is_some_and(|worst| item < *worst) {
            self.heap.pop();
            self.heap.push(item);
        }
    }

    /// The kept items, smallest first.
    pub(crate) fn into_sorted_vec(self) -> Vec<T> {
        self.heap.into_sorted_vec()
    }
}

/// A document with its position in `_id` order, ordered by a sort and then by that position
/// (which makes the order total, and a [`TopK`] of them the first page of a stable sort).
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) struct Ranked<'a> {
    /// The sort deciding the order.
    pub(crate) sort: &'a Sort,
    /// The position in `_id` order, breaking ties.
    pub(crate) seq: u64,
    /// The document.
    pub(crate) doc: Document,
}

impl Ord for Ranked<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.sort
            .compare(&self.doc, &other.doc)
            .then(self.seq.cmp(&other.seq))
    }
}

impl PartialOrd for Ranked<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
    }
}

impl Eq for Ranked<'_> {}

#[cfg(test)]
mod tests {
    use super::TopK;

    #[test]
    fn keeps_the_smallest_in_order() {
        let mut top = TopK::new(3);
        for n in [5, 1, 9, 3, 7, 2, 8] {
            top.push(n);
        }
        assert_eq!(top.into_sorted_vec(), vec![1, 2, 3]);
    }

    #[test]
    fn keeping_none_keeps_nothing() {
        let mut top = TopK::new(0);
        top.push(1);
        assert!(top.into_sorted_vec().is_empty());
    }
}
