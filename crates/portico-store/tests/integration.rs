//! Integration tests of portico-store, compiled as one binary.

#[path = "integration/durability.rs"]
mod durability;
