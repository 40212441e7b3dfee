//! A program using the platform directly (filled in below).
fn main() {}
