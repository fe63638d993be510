//! What iree-test-suites' `torch_ops` tests need of numpy, done the way numpy
//! does it, so lockstep runs those suites without Python and gets the same
//! bytes and the same verdicts as the reference runner:
//!
//! - [`random`]: the legacy `numpy.random.seed(n)` / `numpy.random.rand`
//!   stream (MT19937 seeded by `init_genrand`, doubles from two 32-bit draws);
//! - [`formula`]: `(coeff * rand(*shape) + offset).astype(dtype)`, the
//!   compressed inputs of a test, cast to each dtype as numpy casts;
//! - [`npy`]: reading and writing `.npy` files (the inputs lockstep hands
//!   iree-run-module, the outputs it writes, the expected outputs a suite
//!   names), bounded and strict;
//! - [`allclose`]: `numpy.allclose(observed, expected, rtol, atol,
//!   equal_nan)`, computed in the dtypes numpy computes it in.
//!
//! Pure functions over bytes: no I/O, no clock. Each is tested byte for byte
//! against numpy itself in the workspace's integration tests.

pub mod allclose;
pub mod dtype;
pub mod float16;
pub mod formula;
pub mod npy;
pub mod random;

pub use allclose::{allclose, Tolerance, Verdict};
pub use dtype::DType;
pub use formula::Formula;
pub use npy::Array;
pub use random::LegacyRandom;

/// Why an array could not be made, read or compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NumpyError(pub String);

impl NumpyError {
    pub(crate) fn new(message: impl Into<String>) -> NumpyError {
        NumpyError(message.into())
    }
}
