//! The `portico` binary (arguments are wired in the next commit).

fn main() {}
