//! The `.d.ts` of the `"portico"` module (`portico types`).

/// TypeScript declarations of the `"portico"` module and the script globals.
pub const TYPES: &str = include_str!("portico.d.ts");
