//! [`Op`]: the name of a generated collection endpoint.

use std::fmt;
use std::str::FromStr;

use crate::{Error, Result};

/// The name of a generated endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    /// `GET {api}<path>`: list.
    GetAll,
    /// `POST {api}<path>`: create (201).
    Post,
    /// `GET {api}<path>/:id`: read one.
    Get,
    /// `PUT {api}<path>/:id`: replace.
    Put,
    /// `PATCH {api}<path>/:id`: change some fields.
    Patch,
    /// `DELETE {api}<path>/:id`: remove.
    Delete,
}

impl Op {
    /// Every generated endpoint.
    pub const ALL: [Op; 6] = [
        Op::GetAll,
        Op::Post,
        Op::Get,
        Op::Put,
        Op::Patch,
        Op::Delete,
    ];

    /// True for the endpoints at `<path>/:id` (get, put, patch, delete).
    pub fn on_item(self) -> bool {
        !matches!(self, Op::GetAll | Op::Post)
    }

    /// The spec's name: `getAll`, `post`, `get`, `put`, `patch`, `delete`.
    pub fn name(self) -> &'static str {
        match self {
            Op::GetAll => "getAll",
            Op::Post => "post",
            Op::Get => "get",
            Op::Put => "put",
            Op::Patch => "patch",
            Op::Delete => "delete",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Op {
    type Err = Error;

    fn from_str(s: &str) -> Result<Op> {
        Op::ALL
            .into_iter()
            .find(|op| op.name() == s)
            .ok_or_else(|| {
                Error::InvalidOption(format!(
                    "unknown collection endpoint {s:?} (use getAll, post, get, put, patch or delete)"
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names_round_trip() {
        for op in Op::ALL {
            assert_eq!(op.name().parse::<Op>().unwrap(), op);
        }
        assert!("list".parse::<Op>().is_err());
    }
}
