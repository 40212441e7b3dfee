//! The SQLite backend. SKELETON
