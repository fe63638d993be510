//! Kernel benchmarks in the style of the BOO driver (iree-turbine): MIOpenDriver
//! command lines become op signatures with stable function names.
//!
//! It owns the commands-file format ([`commands`]), the MIOpenDriver flag tables
//! and their validation ([`miopen`]) and the op signatures derived from a parsed
//! command, one per direction, with shapes, FLOP and byte counts ([`signature`]).
//! Parsing, signatures and MLIR generation are pure. [`run`] compiles the
//! kernels with iree-compile through the kernel [`cache`] and times each with
//! iree-benchmark-module in its own process, and with verification on runs it
//! once more with iree-run-module on deterministic inputs and checks the output
//! against [`verify`]'s f64 reference; [`rows`] holds the rows, their
//! statistics and the CSV. Tool paths come from the caller (lockstep-iree
//! resolves them); nothing here prints (the binary does).

pub mod cache;
pub mod commands;
pub mod defaults;
pub mod device;
pub mod gemm;
pub mod layernorm;
pub mod miopen;
pub mod mlir;
pub mod references;
pub mod rows;
pub mod run;
pub mod signature;
pub mod verify;

pub use commands::{parse_file, split_command, strip_prefixes, Line};
pub use miopen::{
    parse_argv, Axis, BenchCommand, ConvCommand, ConvMode, Direction, ElemType, GemmCommand,
    GemmMode, LayerNormCommand, LayerNormMode, Layout, Op, PadMode, ParseError,
};
pub use signature::{signatures, OpSignature, Operand, SignatureDetails};

#[cfg(test)]
mod testing;
