//! Tests of the SQLite backend.
