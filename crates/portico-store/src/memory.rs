//! The in-memory backend. SKELETON
