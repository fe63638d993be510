//! Kernel benchmarks in the style of the BOO driver (iree-turbine): MIOpenDriver
//! command lines become op signatures with stable function names.
//!
//! It owns the commands-file format ([`commands`]), the MIOpenDriver flag tables
//! and their validation ([`miopen`]) and the op signatures derived from a parsed
//! command, one per direction, with shapes, FLOP and byte counts ([`signature`]).
//! It is pure: no processes, files or toolchains. It must not know how kernels
//! are compiled or launched (lockstep-iree and the bench runner do that) nor
//! print anything (the binary does).

pub mod commands;
pub mod miopen;
pub mod mlir;
pub mod signature;

pub use commands::{parse_file, split_command, strip_prefixes, Line};
pub use miopen::{
    parse_argv, BenchCommand, ConvCommand, ConvMode, Direction, ElemType, GemmCommand, GemmMode,
    LayerNormCommand, LayerNormMode, Layout, Op, PadMode, ParseError,
};
pub use signature::{signatures, OpSignature, Operand, SignatureDetails};
