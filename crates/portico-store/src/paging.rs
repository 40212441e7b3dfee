//! A bounded selection of the smallest items, shared by the backends' sorted pages, and the
//! collecting of one page of matches from candidates read in `_id` order ([`Page`]), shared by
//! the SQL backends.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::ops::ControlFlow;

use crate::{Document, Error, Query, Result, Selector, Sort};

/// The most documents a sorted [`Query`] may skip and return together (`skip + limit`).
///
/// A sorted page that no sorted index serves (see [`crate::Store::ensure_sorted_index`]) is
/// chosen by reading every match and keeping the best `skip + limit` in memory, so this bounds
/// the memory of one such query (about 10,000
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

/// One page of a query's matches, collected from candidates offered in `_id` order: without a
/// sort, the matches after the first `skip`, up to `limit` (then the page is full); with one,
/// the best `skip + limit` in a [`TopK`] (every candidate must be offered), then `skip` dropped.
/// Ties in the sort keep `_id` order.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) struct Page<'a> {
    selector: &'a Selector,
    skip: u64,
    limit: Option<u64>,
    kept: Kept<'a>,
}

#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
enum Kept<'a> {
    InOrder {
        skipped: u64,
        docs: Vec<Document>,
    },
    Sorted {
        sort: &'a Sort,
        top: TopK<Ranked<'a>>,
        seq: u64,
    },
}

#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
impl<'a> Page<'a> {
    /// An empty page of the documents `selector` matches, in `sort` order (or `_id` order).
    pub(crate) fn new(
        selector: &'a Selector,
        sort: Option<&'a Sort>,
        skip: u64,
        limit: Option<u64>,
    ) -> Self {
        let kept = match sort {
            None => Kept::InOrder {
                skipped: 0,
                docs: Vec::new(),
            },
            Some(sort) => Kept::Sorted {
                sort,
                top: TopK::new(limit.map_or(usize::MAX, |l| {
                    usize::try_from(skip.saturating_add(l)).unwrap_or(usize::MAX)
                })),
                seq: 0,
            },
        };
        Page {
            selector,
            skip,
            limit,
            kept,
        }
    }

    /// An empty page of what `query` asks for (its projection aside).
    pub(crate) fn of(query: &'a Query) -> Self {
        Page::new(
            &query.selector,
            query.sort.as_ref(),
            query.skip,
            query.limit,
        )
    }

    /// Offers the next candidate; `Break` once the page is full (no later candidate can be in
    /// it).
    pub(crate) fn offer(&mut self, doc: Document) -> ControlFlow<()> {
        if !self.selector.matches(&doc) {
            return ControlFlow::Continue(());
        }
        match &mut self.kept {
            Kept::Sorted { sort, top, seq } => {
                top.push(Ranked {
                    sort,
                    seq: *seq,
                    doc,
                });
                *seq += 1;
                ControlFlow::Continue(())
            }
            Kept::InOrder { skipped, docs } => {
                if *skipped < self.skip {
                    *skipped += 1;
                    return ControlFlow::Continue(());
                }
                docs.push(doc);
                match self.limit {
                    Some(l) if docs.len() as u64 >= l => ControlFlow::Break(()),
                    _ => ControlFlow::Continue(()),
                }
            }
        }
    }

    /// The page's documents, in order.
    pub(crate) fn into_docs(self) -> Vec<Document> {
        match self.kept {
            Kept::InOrder { docs, .. } => docs,
            Kept::Sorted { top, .. } => top
                .into_sorted_vec()
                .into_iter()
                .skip(usize::try_from(self.skip).unwrap_or(usize::MAX))
                .map(|r| r.doc)
                .collect(),
        }
    }
}

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
