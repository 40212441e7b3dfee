//! Login and token-resolution costs (filled in below).
fn main() {}
