//! Nothing to call: this crate exists for its `Cargo.toml`, which turns on
//! in the lockstep binary's dependency graph the features the test build's
//! dev-dependencies turn on, so both builds compile each crate once (the
//! pattern cargo-hakari maintains for nextest). See the manifest for which
//! and why.
