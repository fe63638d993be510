//! Kernels as data, in the style of the BOO driver (iree-turbine):
//! MIOpenDriver command lines become op signatures with stable function
//! names, each signature an MLIR module, an f64 reference and its FLOP and
//! byte counts.
//!
//! Why a crate of its own: this is what a kernel *is*, and it is pure (no
//! processes, no files, no clocks), so it can be read, fuzzed and reused
//! (the benchmarks, Python callers) without the machinery that compiles and
//! times kernels (lockstep-bench).
//!
//! It owns the commands-file format ([`commands`]), the MIOpenDriver flag
//! tables and their validation ([`miopen`]) and the op signatures derived
//! from a parsed command, one per direction, with shapes, FLOP and byte
//! counts ([`signature`]). Each op has its MLIR generator and its f64
//! reference: convolutions in [`conv_mlir`] and [`conv_reference`], gemm in
//! [`gemm`], layer norm in [`layernorm`]; [`kernel`] picks them by the
//! signature's op. They share the MLIR-text helpers of [`mlir_text`], the
//! seeded inputs and raw encodings of [`tensor_data`] and the tolerance model
//! of [`compare`]. [`defaults`] holds the embedded default commands.
//!
//! Modules only use modules below them (`scripts/check-module-cycles` checks
//! it), from the bottom: [`miopen`], [`signature`] and [`commands`]; the
//! shared helpers; the ops; [`kernel`] and [`defaults`] on top. The tests
//! compile and run the generated kernels with the real IREE tools and check
//! them against the references.

pub mod commands;
pub mod compare;
pub mod conv_mlir;
pub mod conv_reference;
pub mod defaults;
pub mod gemm;
pub mod kernel;
pub mod layernorm;
pub mod miopen;
pub mod mlir_text;
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
