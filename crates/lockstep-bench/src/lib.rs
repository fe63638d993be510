//! Kernel benchmarks in the style of the BOO driver (iree-turbine): MIOpenDriver
//! command lines become op signatures with stable function names.
//!
//! It owns the commands-file format ([`commands`]), the MIOpenDriver flag tables
//! and their validation ([`miopen`]) and the op signatures derived from a parsed
//! command, one per direction, with shapes, FLOP and byte counts ([`signature`]).
//! Parsing, signatures and MLIR generation are pure.
//!
//! Each op has its MLIR generator and its f64 reference: convolutions in
//! [`conv_mlir`] and [`conv_reference`], gemm in [`gemm`], layer norm in
//! [`layernorm`]; [`kernel`] picks them by the signature's op. They share the
//! MLIR-text helpers of [`mlir_text`], the seeded inputs and raw encodings of
//! [`tensor_data`] and the tolerance model of [`compare`]. [`run`] compiles the
//! kernels with iree-compile through the kernel [`cache`] and times each with
//! iree-benchmark-module in its own process, and with verification on runs it
//! once more with iree-run-module on deterministic inputs and checks the output
//! against the kernel's reference, which [`references`] keeps in the cache;
//! [`rows`] holds the rows, their statistics and the CSV. Tool paths come
//! from the caller (lockstep-iree resolves them); nothing here prints (the
//! binary does).
//!
//! Modules only use modules below them (`scripts/check-module-cycles` checks
//! it), from the bottom: [`miopen`], [`signature`] and [`commands`]; the shared
//! helpers; the ops; [`kernel`], [`references`] and [`defaults`]; [`run`] on
//! top, then [`session`]; [`bisect`] (the first commit whose packages made a
//! kernel slower, with lockstep-pkg's bisection) above that, and [`human`]
//! (how compare's and bisect's results read, printed by the binary) on top.

pub mod bisect;
pub mod cache;
pub mod commands;
pub mod compare;
pub mod config;
pub mod conv_mlir;
pub mod conv_reference;
pub mod defaults;
pub mod device;
pub mod events;
pub mod gemm;
pub mod human;
pub mod jobs;
pub mod kernel;
pub mod layernorm;
pub mod miopen;
pub mod mlir_text;
pub mod references;
pub mod regressions;
pub mod rows;
pub mod run;
pub mod session;
pub mod signature;
pub mod tensor_data;

pub use commands::{parse_file, split_command, strip_prefixes, Line};
pub use miopen::{
    parse_argv, Axis, BenchCommand, ConvCommand, ConvMode, Direction, ElemType, GemmCommand,
    GemmMode, LayerNormCommand, LayerNormMode, Layout, Op, PadMode, ParseError,
};
pub use signature::{signatures, OpSignature, Operand, SignatureDetails};

#[cfg(test)]
mod testing;
