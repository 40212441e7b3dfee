//! The stored format: which layout of tables a database was written in, kept in the database.
//!
//! Every SQLite and PostgreSQL database holds one row in `portico_format`
//! (`id = 1, version = N`). A store opening a database:
//!
//! | stored | what happens |
//! |---|---|
//! | nothing (a new, empty database) | the tables are made in [`FORMAT_VERSION`] and the row written |
//! | [`FORMAT_VERSION`] | nothing |
//! | older | migrated to [`FORMAT_VERSION`] in one transaction; on SQLite a checked backup of the file is taken first (see `sqlite::SqliteStore::open`) |
//! | newer | refused with [`crate::Error::Open`] saying both versions; nothing in the database is changed |
//!
//! Format 1 is the layout of every release before the format was kept: the catalog tables
//! (`portico_collections`, `portico_indexes`, `portico_counts`) without `portico_format`. A
//! database with the catalog and no `portico_format` row is format 1. Format 2 adds the row.
//! Format 3 adds the sorted indexes (`portico_sorted` and a table per index, see
//! [`crate::Store::ensure_sorted_index`]): every write must keep their entries, which a
//! Portico of format 2 would not do, so it must not open such a database.
//!
//! [`crate::stored_format`] reads the version of a database without changing it (`portico check`).

/// The stored format this build writes and reads.
pub const FORMAT_VERSION: u32 = 3;

/// The format of a database written before the version was kept in it.
pub const UNVERSIONED_FORMAT: u32 = 1;

/// The table holding the version (one row, `id = 1`).
pub const FORMAT_TABLE: &str = "portico_format";

/// How a stored format compares with [`FORMAT_VERSION`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatStatus {
    /// No Portico tables yet: a new database.
    Empty,
    /// Written in this build's format.
    Current,
    /// An older format (the version); opening migrates it.
    Older(u32),
    /// A newer format (the version): this build refuses it.
    Newer(u32),
}

impl FormatStatus {
    /// The status of a database holding `stored` (`None`: no Portico tables).
    pub fn of(stored: Option<u32>) -> FormatStatus {
        match stored {
            None => FormatStatus::Empty,
            Some(v) if v == FORMAT_VERSION => FormatStatus::Current,
            Some(v) if v < FORMAT_VERSION => FormatStatus::Older(v),
            Some(v) => FormatStatus::Newer(v),
        }
    }
}

/// How `portico check` and the logs put it: `stored format 2 (this build's)`.
impl std::fmt::Display for FormatStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FormatStatus::Empty => write!(
                f,
                "no stored format yet (a new database; it will be written in format {FORMAT_VERSION})"
            ),
            FormatStatus::Current => {
                write!(f, "stored format {FORMAT_VERSION} (this build's)")
            }
            FormatStatus::Older(v) => write!(
                f,
                "stored format {v}, older than this build's {FORMAT_VERSION}: the next `portico serve` (or any command that opens it) backs it up and migrates it"
            ),
            FormatStatus::Newer(v) => write!(
                f,
                "stored format {v}, newer than this build's {FORMAT_VERSION}: it was written by a newer Portico, and this one will not open it"
            ),
        }
    }
}

/// The refusal of a database in a newer format; names both versions and says nothing changed.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn newer_error(place: &str, stored: u32) -> crate::Error {
    crate::Error::Open(format!(
        "{place}: the database is in stored format {stored}, newer than this Portico's format \
         {FORMAT_VERSION} (it was written by a newer Portico). Nothing was changed: run that \
         Portico (or a newer one), or restore a backup made by this one"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_compare_with_this_build() {
        assert_eq!(FormatStatus::of(None), FormatStatus::Empty);
        assert_eq!(
            FormatStatus::of(Some(FORMAT_VERSION)),
            FormatStatus::Current
        );
        assert_eq!(
            FormatStatus::of(Some(UNVERSIONED_FORMAT)),
            FormatStatus::Older(1)
        );
        assert_eq!(
            FormatStatus::of(Some(FORMAT_VERSION + 1)),
            FormatStatus::Newer(FORMAT_VERSION + 1)
        );
        assert!(
            FormatStatus::Newer(9)
                .to_string()
                .contains("newer than this build's")
        );
    }
}
