//! MIOpenDriver command lines: the flag tables and their meaning.
//!
//! A command starts with its command word, which picks the operation and the
//! element type: `conv` (f32), `convfp16`, `convbfp16`, `convint8` (int8 in,
//! int32 out); `gemm`, `gemmfp16` (as the BOO driver parses them: M from
//! `-k`, K from `-m`); `layernorm`, `layernormfp16`, `layernormbfp16` (the
//! last two as the BOO driver parses them). Every flag
//! has a long (`--batchsize`) and a short (`-n`) form and its value is always
//! the next word (so `-S -1` works); `--long=value` is accepted too.
//!
//! Where lockstep departs from MIOpenDriver (as the BOO driver does):
//! - timing is on unless a line says `-t 0`, and `-i/--iter` defaults to 100;
//! - verification is off unless a line says `-V 1` (MIOpen defaults to 1);
//! - flags that only steer MIOpen itself (`-s`, `-S`, `-G`, `-w`, cast types,
//!   data files ...) are accepted and ignored; a note is recorded when their
//!   value differs from MIOpen's default (at the default they change nothing);
//! - `convint8` runs forward only, as in MIOpen (backward directions that `-F`
//!   asks for are dropped with a note);
//! - `-z/--pad_mode same` is refused where its total padding in a dimension
//!   is odd, which MIOpen splits unevenly: lockstep pads both ends alike;
//! - `--spatial_dim 1` (or a 1-D layout) asks for a 1-D convolution, which
//!   MIOpenDriver does not have but BOO's parser and signatures (from
//!   PyTorch's `conv1d`) do. As in BOO, its layouts are `NCH` (the default)
//!   or `NHC`, which take the height flags (`-H`, `-y`, `-u`, `-p`, `-l`,
//!   `-Y`), or `NCW` or `NWC`, which take the width flags (`-W`, `-x`, `-v`,
//!   `-q`, `-j`, `-X`); all three tensors use the same letter, and the flags
//!   of the other letters are noted and ignored.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Element types of benchmark tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElemType {
    F32,
    F16,
    BF16,
    I8,
    I32,
}

impl ElemType {
    /// The name used in BOO function names (torch's dtype names).
    pub fn name(self) -> &'static str {
        match self {
            ElemType::F32 => "float32",
            ElemType::F16 => "float16",
            ElemType::BF16 => "bfloat16",
            ElemType::I8 => "int8",
            ElemType::I32 => "int32",
        }
    }

    /// The MLIR element type.
    pub fn mlir(self) -> &'static str {
        match self {
            ElemType::F32 => "f32",
            ElemType::F16 => "f16",
            ElemType::BF16 => "bf16",
            ElemType::I8 => "i8",
            ElemType::I32 => "i32",
        }
    }

    /// Size of one element in bytes.
    pub fn bytes(self) -> u64 {
        match self {
            ElemType::F32 | ElemType::I32 => 4,
            ElemType::F16 | ElemType::BF16 => 2,
            ElemType::I8 => 1,
        }
    }

    /// The type products are accumulated in: f32 for floating point, i32 for
    /// integers.
    pub fn accumulator(self) -> ElemType {
        match self {
            ElemType::F32 | ElemType::F16 | ElemType::BF16 => ElemType::F32,
            ElemType::I8 | ElemType::I32 => ElemType::I32,
        }
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A convolution direction, as selected by MIOpen's `-F` bitmask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// `-F 1`: y = conv(x, w).
    Forward,
    /// `-F 2` ("bwd"): dx from dy and w.
    BackwardData,
    /// `-F 4` ("wrw"): dw from dy and x.
    BackwardWeight,
}

impl Direction {
    /// All directions in MIOpen's order (fwd, bwd, wrw).
    pub const ALL: [Direction; 3] = [
        Direction::Forward,
        Direction::BackwardData,
        Direction::BackwardWeight,
    ];

    /// The mode word in BOO function names.
    pub fn boo_name(self) -> &'static str {
        match self {
            Direction::Forward => "forward",
            Direction::BackwardData => "input_backward",
            Direction::BackwardWeight => "weight_backward",
        }
    }

    /// MIOpen's short name (`fwd`, `bwd`, `wrw`).
    pub fn miopen_name(self) -> &'static str {
        match self {
            Direction::Forward => "fwd",
            Direction::BackwardData => "bwd",
            Direction::BackwardWeight => "wrw",
        }
    }

    /// The bit of this direction in `-F`.
    pub fn bit(self) -> u8 {
        match self {
            Direction::Forward => 1,
            Direction::BackwardData => 2,
            Direction::BackwardWeight => 4,
        }
    }

    /// Directions selected by an `-F` value, as MIOpenDriver reads it: 0 means
    /// all three, otherwise bit 1 = fwd, 2 = bwd, 4 = wrw (so 3 = fwd+bwd,
    /// 5 = fwd+wrw, 6 = bwd+wrw, 7 = all three).
    pub fn from_forw(forw: i64) -> Result<Vec<Direction>, String> {
        if !(0..=7).contains(&forw) {
            return Err(format!(
                "-F/--forw must be 0 (fwd+bwd+wrw) or a combination of 1 (fwd), 2 (bwd) and 4 (wrw) \
                 between 1 and 7, found {forw}"
            ));
        }
        Ok(Direction::ALL
            .into_iter()
            .filter(|d| forw == 0 || (forw as u8) & d.bit() != 0)
            .collect())
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.boo_name())
    }
}

/// `-m conv|trans`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConvMode {
    Conv,
    Trans,
}

/// `-z default|same|valid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PadMode {
    Default,
    Same,
    Valid,
}

/// A tensor layout. Letters: N batch (output channels K for a filter), C
/// channels, D/H/W spatial. A 1-D layout has one spatial letter, H or W.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Layout {
    Nch,
    Nhc,
    Ncw,
    Nwc,
    Nchw,
    Nhwc,
    Ncdhw,
    Ndhwc,
}

impl Layout {
    pub fn as_str(self) -> &'static str {
        match self {
            Layout::Nch => "NCH",
            Layout::Nhc => "NHC",
            Layout::Ncw => "NCW",
            Layout::Nwc => "NWC",
            Layout::Nchw => "NCHW",
            Layout::Nhwc => "NHWC",
            Layout::Ncdhw => "NCDHW",
            Layout::Ndhwc => "NDHWC",
        }
    }

    /// The spatial letters, in the order of the per-dimension vectors:
    /// `H` or `W` (1-D), `HW`, `DHW`.
    pub fn spatial_letters(self) -> &'static str {
        match self {
            Layout::Nch | Layout::Nhc => "H",
            Layout::Ncw | Layout::Nwc => "W",
            Layout::Nchw | Layout::Nhwc => "HW",
            Layout::Ncdhw | Layout::Ndhwc => "DHW",
        }
    }

    /// Number of spatial dimensions (1, 2 or 3).
    pub fn spatial_dims(self) -> usize {
        self.spatial_letters().len()
    }

    /// The default layout for a number of spatial dimensions: MIOpen's NCHW
    /// and NCDHW, and BOO's NCH for 1-D (its `DEFAULT_LAYOUTS`).
    pub fn default_for(spatial_dims: usize) -> Layout {
        match spatial_dims {
            1 => Layout::Nch,
            3 => Layout::Ncdhw,
            _ => Layout::Nchw,
        }
    }

    /// The channels-first layout with the same spatial letters (NCW for
    /// NWC, NCHW for NHWC ...).
    pub fn channels_first(self) -> Layout {
        match self {
            Layout::Nch | Layout::Nhc => Layout::Nch,
            Layout::Ncw | Layout::Nwc => Layout::Ncw,
            Layout::Nchw | Layout::Nhwc => Layout::Nchw,
            Layout::Ncdhw | Layout::Ndhwc => Layout::Ncdhw,
        }
    }

    /// What each letter addresses, in layout order. Spatial letters index
    /// the per-dimension vectors (`[H]` or `[W]`, `[H, W]`, `[D, H, W]`):
    /// every layout lists its spatial letters in that order, so the j-th
    /// spatial letter is entry j.
    pub fn axes(self) -> Vec<Axis> {
        let mut spatial = 0;
        self.as_str()
            .chars()
            .map(|letter| match letter {
                'N' => Axis::Batch,
                'C' => Axis::Channel,
                _ => {
                    spatial += 1;
                    Axis::Spatial(spatial - 1)
                }
            })
            .collect()
    }

    /// Parses a layout value, case-insensitively.
    pub fn parse(value: &str) -> Result<Layout, String> {
        match value.to_ascii_uppercase().as_str() {
            "NCH" => Ok(Layout::Nch),
            "NHC" => Ok(Layout::Nhc),
            "NCW" => Ok(Layout::Ncw),
            "NWC" => Ok(Layout::Nwc),
            "NCHW" => Ok(Layout::Nchw),
            "NHWC" => Ok(Layout::Nhwc),
            "NCDHW" => Ok(Layout::Ncdhw),
            "NDHWC" => Ok(Layout::Ndhwc),
            "CHWN" => Err("layout CHWN is not supported: use NCHW or NHWC".into()),
            _ => Err(format!(
                "unknown layout `{value}`: expected NCH, NHC, NCW, NWC (1-D), NCHW, NHWC \
                 (2-D) or NCDHW, NDHWC (3-D)"
            )),
        }
    }

    /// Arranges `n`, `c` and the spatial sizes (ordered as
    /// [`Layout::spatial_letters`]) in this layout.
    pub fn arrange(self, n: u64, c: u64, spatial: &[u64]) -> Vec<u64> {
        self.axes()
            .into_iter()
            .map(|axis| match axis {
                Axis::Batch => n,
                Axis::Channel => c,
                Axis::Spatial(j) => spatial[j],
            })
            .collect()
    }
}

/// What one letter of a layout addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// `N`: the batch (a filter's outer channels).
    Batch,
    /// `C`: the channels (a filter's inner channels).
    Channel,
    /// `D`, `H` or `W`: this entry of the per-dimension vectors.
    Spatial(usize),
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A convolution command (`conv`, `convfp16`, `convbfp16`, `convint8`).
///
/// Spatial vectors hold one entry per spatial letter of the layouts, ordered
/// as [`Layout::spatial_letters`]: `[H]` or `[W]` for 1-D, `[H, W]` for 2-D
/// and `[D, H, W]` for 3-D.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConvCommand {
    /// The command word.
    pub command: String,
    pub dtype: ElemType,
    /// 1, 2 or 3.
    pub spatial_dims: usize,
    /// Batch size (`-n`).
    pub n: u64,
    /// Input channels (`-c`).
    pub c: u64,
    /// Output channels (`-k`).
    pub k: u64,
    pub groups: u64,
    pub input_spatial: Vec<u64>,
    pub filter_spatial: Vec<u64>,
    pub stride: Vec<u64>,
    /// Effective padding (after `-z same|valid`).
    pub padding: Vec<u64>,
    pub dilation: Vec<u64>,
    /// Transposed-convolution output padding (zero in `conv` mode).
    pub output_padding: Vec<u64>,
    pub pad_mode: PadMode,
    pub bias: bool,
    pub mode: ConvMode,
    pub input_layout: Layout,
    pub filter_layout: Layout,
    pub output_layout: Layout,
    /// The `-F` value as given.
    pub forw: u8,
    /// The directions to run, in MIOpen's order (fwd, bwd, wrw).
    pub directions: Vec<Direction>,
    /// Output spatial sizes.
    pub output_spatial: Vec<u64>,
}

impl ConvCommand {
    /// Whether every per-dimension value (sizes, stride, padding, dilation)
    /// and every layout has `spatial_dims` entries: what a command built by
    /// hand, not parsed, may lack.
    pub fn dims_agree(&self) -> bool {
        let s = self.spatial_dims;
        let per_dim = [
            &self.input_spatial,
            &self.filter_spatial,
            &self.output_spatial,
            &self.stride,
            &self.padding,
            &self.dilation,
        ];
        let layouts = [self.input_layout, self.filter_layout, self.output_layout];
        per_dim.iter().all(|v| v.len() == s) && layouts.iter().all(|l| l.spatial_dims() == s)
    }

    /// The two leading filter dimensions in MIOpen's order: `(K, C/g)` for a
    /// convolution, `(C, K/g)` for a transposed convolution. In a filter
    /// layout the first is the `N` letter, the second the `C` letter.
    pub fn filter_channels(&self) -> (u64, u64) {
        match self.mode {
            ConvMode::Conv => (self.k, self.c / self.groups),
            ConvMode::Trans => (self.c, self.k / self.groups),
        }
    }

    /// The input tensor's shape in its layout.
    pub fn input_shape(&self) -> Vec<u64> {
        self.input_layout
            .arrange(self.n, self.c, &self.input_spatial)
    }

    /// The filter tensor's shape in its layout.
    pub fn filter_shape(&self) -> Vec<u64> {
        let (outer, inner) = self.filter_channels();
        self.filter_layout
            .arrange(outer, inner, &self.filter_spatial)
    }

    /// The output tensor's shape in its layout (K channels).
    pub fn output_shape(&self) -> Vec<u64> {
        self.output_layout
            .arrange(self.n, self.k, &self.output_spatial)
    }
}

/// Output size of a convolution along one dimension (may be < 1 for
/// impossible shapes): `floor((in + 2*pad - dil*(fil-1) - 1) / stride) + 1`.
pub fn conv_output_size(input: u64, filter: u64, stride: u64, pad: u64, dilation: u64) -> i64 {
    let (input, filter, stride, pad, dilation) = (
        input as i128,
        filter as i128,
        stride.max(1) as i128,
        pad as i128,
        dilation as i128,
    );
    let numerator = (input + 2 * pad)
        .saturating_sub(dilation.saturating_mul(filter - 1))
        .saturating_sub(1);
    clamp_i64(numerator.div_euclid(stride) + 1)
}

fn clamp_i64(value: i128) -> i64 {
    value.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// Output size of a transposed convolution along one dimension:
/// `stride*(in-1) + dil*(fil-1) + 1 - 2*pad + output_pad`.
pub fn trans_output_size(
    input: u64,
    filter: u64,
    stride: u64,
    pad: u64,
    dilation: u64,
    output_pad: u64,
) -> i64 {
    let size = (stride as i128)
        .saturating_mul(input as i128 - 1)
        .saturating_add((dilation as i128).saturating_mul(filter as i128 - 1))
        .saturating_add(1)
        .saturating_sub(2 * pad as i128)
        .saturating_add(output_pad as i128);
    clamp_i64(size)
}

/// The gemm direction (`-F` as BOO reads it: 1, 2, 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GemmMode {
    /// C = A·B.
    Forward,
    /// dA = dC·Bᵀ.
    ABackward,
    /// dB = Aᵀ·dC.
    BBackward,
}

impl GemmMode {
    pub fn boo_name(self) -> &'static str {
        match self {
            GemmMode::Forward => "forward",
            GemmMode::ABackward => "a_backward",
            GemmMode::BBackward => "b_backward",
        }
    }
}

/// A gemm command (`gemm`, `gemmfp16`): C (M×N) = A (M×K) · B (K×N), with
/// M, K and N as BOO's parser makes them (`a_shape = [a_w, a_h]`,
/// `b_shape = [a_h, b_w]`): M from `-k`, K from `-m`, whatever the flag
/// names say, so that names and kernels match BOO's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GemmCommand {
    pub command: String,
    pub dtype: ElemType,
    /// M, rows of A and C: the `-k/--a_w` value.
    pub m: u64,
    /// K, the contracted dimension: the `-m/--a_h` value.
    pub k: u64,
    /// N, columns of B and C: the `-n/--b_w` value.
    pub n: u64,
    /// `-u/--transA`: A is stored as K×M.
    pub trans_a: bool,
    /// `-v/--transB`: B is stored as N×K.
    pub trans_b: bool,
    pub mode: GemmMode,
}

/// The layer-norm direction (`-F` as BOO reads it: 1, 2, 3, 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerNormMode {
    Forward,
    InputBackward,
    WeightBackward,
    BiasBackward,
}

impl LayerNormMode {
    pub fn boo_name(self) -> &'static str {
        match self {
            LayerNormMode::Forward => "forward",
            LayerNormMode::InputBackward => "input_backward",
            LayerNormMode::WeightBackward => "weight_backward",
            LayerNormMode::BiasBackward => "bias_backward",
        }
    }
}

/// A layer-norm command (`layernorm`, `layernormfp16`, `layernormbfp16`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerNormCommand {
    pub command: String,
    pub dtype: ElemType,
    /// `-X/--input`, e.g. `32x4x16x16`.
    pub input_shape: Vec<u64>,
    /// `-o/--normalized_dim`: the first normalized dimension (always the last
    /// one, as in BOO).
    pub normalized_dim: usize,
    /// `-e/--eps`.
    pub eps: f64,
    /// `-m 0` (MIOpen's elementwise-affine mode) gives a weight, as in BOO.
    pub elementwise_affine: bool,
    /// BOO always passes a bias.
    pub bias: bool,
    pub mode: LayerNormMode,
}

impl LayerNormCommand {
    /// The trailing, normalized dimensions.
    pub fn normalized_shape(&self) -> Vec<u64> {
        self.input_shape[self.normalized_dim..].to_vec()
    }
}

/// The operation a command asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Op {
    Conv(ConvCommand),
    Gemm(GemmCommand),
    #[serde(rename = "layernorm")]
    LayerNorm(LayerNormCommand),
}

/// A parsed command line with its run options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchCommand {
    /// The words parsed, starting at the command word.
    pub argv: Vec<String>,
    pub op: Op,
    /// Timed iterations (`-i/--iter`, default 100).
    pub iterations: u32,
    /// Timing (on unless `-t 0`).
    pub time: bool,
    /// Verification asked for on the line (`-V 1`).
    pub verify: bool,
    /// Flags accepted but without effect here, and other remarks.
    pub notes: Vec<String>,
}

/// Why a command line was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct ParseError {
    pub reason: String,
}

impl ParseError {
    fn new(reason: impl Into<String>) -> Self {
        ParseError {
            reason: reason.into(),
        }
    }

    /// The error for the single-command form: a usage error (exit 2).
    pub fn into_usage_error(self, command: &str) -> lockstep_core::Error {
        lockstep_core::Error::usage(format!("invalid benchmark command `{command}`"))
            .cause(self.reason)
            .hint(
                "fix the command: it takes MIOpenDriver's flags, e.g. \
                 `convbfp16 -n 16 -c 96 -H 48 -W 32 -k 288 -y 1 -x 1 -F 1`",
            )
    }
}

/// The type of a flag's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    Int,
    Float,
    Str,
}

/// What lockstep does with a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagUse {
    /// The flag shapes the benchmark.
    Used,
    /// Accepted and ignored; a note gives the reason when the value differs
    /// from the default.
    Ignored(&'static str),
    /// Only the default value is supported; another value is an error with
    /// this reason.
    DefaultOnly(&'static str),
}

/// One flag of a flag table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagSpec {
    pub long: &'static str,
    pub short: char,
    /// The default lockstep applies (MIOpen's unless said otherwise).
    pub default: &'static str,
    pub kind: ValueKind,
    pub help: &'static str,
    pub usage: FlagUse,
}

const fn flag(
    long: &'static str,
    short: char,
    default: &'static str,
    kind: ValueKind,
    help: &'static str,
) -> FlagSpec {
    FlagSpec {
        long,
        short,
        default,
        kind,
        help,
        usage: FlagUse::Used,
    }
}

const fn ignored(
    long: &'static str,
    short: char,
    default: &'static str,
    kind: ValueKind,
    why: &'static str,
) -> FlagSpec {
    FlagSpec {
        long,
        short,
        default,
        kind,
        help: why,
        usage: FlagUse::Ignored(why),
    }
}

const fn default_only(
    long: &'static str,
    short: char,
    default: &'static str,
    help: &'static str,
    why: &'static str,
) -> FlagSpec {
    FlagSpec {
        long,
        short,
        default,
        kind: ValueKind::Int,
        help,
        usage: FlagUse::DefaultOnly(why),
    }
}

use ValueKind::{Float, Int, Str};

/// Flags every command takes: timing and verification.
#[rustfmt::skip]
pub const COMMON_FLAGS: &[FlagSpec] = &[
    flag("iter", 'i', "100", Int, "timed iterations (BOO's default 100; MIOpen's is 10)"),
    flag("time", 't', "1", Int, "time the kernel unless 0 (MIOpen's default is 0)"),
    flag("verify", 'V', "0", Int, "verify against a reference when 1 (MIOpen's default of 1 is not adopted)"),
    ignored("wall", 'w', "0", Int, "kernel times always come from iree-benchmark-module, one call per sample"),
];

const VECTORIZED: &str = "vectorized tensors (NCHWc4/c8) are not supported";
const CAST: &str = "tensor casts are not supported; the command's type is used";

/// The MIOpenDriver convolution flags (long, short, default, type, meaning).
#[rustfmt::skip]
pub const CONV_FLAGS: &[FlagSpec] = &[
    flag("in_layout", 'I', "", Str, "input layout (NCH, NHC, NCW, NWC, NCHW, NHWC, NCDHW, NDHWC)"),
    flag("out_layout", 'O', "", Str, "output layout"),
    flag("fil_layout", 'f', "", Str, "filter layout"),
    flag("spatial_dim", '_', "2", Int, "spatial dimensions (2 or 3; 1 is lockstep's extension)"),
    flag("forw", 'F', "0", Int, "0 fwd+bwd+wrw, 1 fwd, 2 bwd, 4 wrw, 3 fwd+bwd, 5 fwd+wrw, 6 bwd+wrw"),
    flag("batchsize", 'n', "100", Int, "mini-batch size N"),
    flag("in_channels", 'c', "3", Int, "input channels C"),
    flag("in_d", '!', "32", Int, "input depth"),
    flag("in_h", 'H', "32", Int, "input height"),
    flag("in_w", 'W', "32", Int, "input width"),
    flag("out_channels", 'k', "32", Int, "output channels K"),
    flag("fil_d", '@', "3", Int, "filter depth"),
    flag("fil_h", 'y', "3", Int, "filter height"),
    flag("fil_w", 'x', "3", Int, "filter width"),
    flag("conv_stride_d", '#', "1", Int, "stride in depth"),
    flag("conv_stride_h", 'u', "1", Int, "stride in height"),
    flag("conv_stride_w", 'v', "1", Int, "stride in width"),
    flag("pad_d", '$', "0", Int, "zero padding in depth"),
    flag("pad_h", 'p', "0", Int, "zero padding in height"),
    flag("pad_w", 'q', "0", Int, "zero padding in width"),
    ignored("pad_val", 'r', "0", Int, "MIOpen's convolutions pad with zeros whatever this says"),
    flag("trans_output_pad_d", '%', "0", Int, "transposed-convolution output padding in depth"),
    flag("trans_output_pad_h", 'Y', "0", Int, "transposed-convolution output padding in height"),
    flag("trans_output_pad_w", 'X', "0", Int, "transposed-convolution output padding in width"),
    flag("dilation_d", '^', "1", Int, "dilation in depth"),
    flag("dilation_h", 'l', "1", Int, "dilation in height"),
    flag("dilation_w", 'j', "1", Int, "dilation in width"),
    ignored("search", 's', "0", Int, "there are no MIOpen solutions to search: IREE compiles the kernel"),
    ignored("printconv", 'P', "1", Int, "lockstep prints every command"),
    ignored("dump_output", 'o', "0", Int, "lockstep does not dump tensors"),
    ignored("in_data", 'd', "", Str, "inputs are generated, not read from files"),
    ignored("weights", 'e', "", Str, "weights are generated, not read from files"),
    ignored("in_bias", 'a', "", Str, "the bias is generated, not read from files"),
    ignored("dout_data", 'D', "", Str, "dy is generated, not read from files"),
    flag("bias", 'b', "0", Int, "add a bias (forward)"),
    flag("mode", 'm', "conv", Str, "conv or trans (transposed)"),
    flag("pad_mode", 'z', "default", Str, "same, valid or default"),
    flag("group_count", 'g', "1", Int, "groups"),
    ignored("solution", 'S', "-1", Str, "there are no MIOpen solutions: IREE compiles the kernel"),
    ignored("gpualloc", 'G', "0", Int, "buffers are allocated by the IREE runtime"),
    ignored("in_cast_type", 'U', "-1", Str, CAST),
    ignored("out_cast_type", 'T', "-1", Str, CAST),
    ignored("wei_cast_type", 'R', "-1", Str, CAST),
    ignored("verification_cache", 'C', "", Str, "lockstep has its own caches"),
    default_only("tensor_vect", 'Z', "0", "tensor vectorization (only 0)", VECTORIZED),
    default_only("vector_length", 'L', "1", "tensor vectorization length (only 1)", VECTORIZED),
];

/// The gemm flags as BOO parses them.
#[rustfmt::skip]
pub const GEMM_FLAGS: &[FlagSpec] = &[
    flag("a_w", 'k', "256", Int, "\"width of A\", which BOO makes M (rows of A and C)"),
    flag("a_h", 'm', "256", Int, "\"height of A\", which BOO makes K (the contracted dimension)"),
    flag("b_w", 'n', "256", Int, "width of B and C (N)"),
    flag("transA", 'u', "0", Int, "A is transposed"),
    flag("transB", 'v', "0", Int, "B is transposed"),
    flag("forw", 'F', "1", Int, "1 forward, 2 backward for A, 3 backward for B"),
];

/// The layer-norm flags as BOO parses them.
#[rustfmt::skip]
pub const LAYERNORM_FLAGS: &[FlagSpec] = &[
    flag("forw", 'F', "1", Int, "1 forward, 2 input backward, 3 weight backward, 4 bias backward"),
    flag("input", 'X', "", Str, "input shape NxC[xD]xHxW"),
    flag("eps", 'e', "1e-5", Float, "epsilon"),
    flag("mode", 'm', "0", Int, "0 elementwise affine, 1 weight and bias"),
    flag("normalized_dim", 'o', "3", Int, "first normalized dimension (must be the last)"),
];

const CONV_COMMANDS: &[(&str, ElemType)] = &[
    ("conv", ElemType::F32),
    ("convfp16", ElemType::F16),
    ("convbfp16", ElemType::BF16),
    ("convint8", ElemType::I8),
];
const GEMM_COMMANDS: &[(&str, ElemType)] = &[("gemm", ElemType::F32), ("gemmfp16", ElemType::F16)];
const LAYERNORM_COMMANDS: &[(&str, ElemType)] = &[
    ("layernorm", ElemType::F32),
    ("layernormfp16", ElemType::F16),
    ("layernormbfp16", ElemType::BF16),
];

/// Every command word lockstep accepts.
pub fn command_words() -> Vec<&'static str> {
    CONV_COMMANDS
        .iter()
        .chain(GEMM_COMMANDS)
        .chain(LAYERNORM_COMMANDS)
        .map(|(word, _)| *word)
        .collect()
}

fn lookup(table: &[(&'static str, ElemType)], word: &str) -> Option<ElemType> {
    table.iter().find(|(w, _)| *w == word).map(|(_, t)| *t)
}

/// Parses a command's words, starting at the command word.
pub fn parse_argv<S: AsRef<str>>(argv: &[S]) -> Result<BenchCommand, ParseError> {
    let argv: Vec<String> = argv.iter().map(|s| s.as_ref().to_string()).collect();
    let Some(word) = argv.first() else {
        return Err(ParseError::new(
            "empty command: expected e.g. `convbfp16 -n 16 ...`",
        ));
    };
    let rest = &argv[1..];
    let mut notes = Vec::new();
    let (op, args) = if let Some(dtype) = lookup(CONV_COMMANDS, word) {
        let args = Args::collect(rest, &[CONV_FLAGS, COMMON_FLAGS])?;
        (Op::Conv(conv(word, dtype, &args, &mut notes)?), args)
    } else if let Some(dtype) = lookup(GEMM_COMMANDS, word) {
        let args = Args::collect(rest, &[GEMM_FLAGS, COMMON_FLAGS])?;
        (Op::Gemm(gemm(word, dtype, &args)?), args)
    } else if let Some(dtype) = lookup(LAYERNORM_COMMANDS, word) {
        let args = Args::collect(rest, &[LAYERNORM_FLAGS, COMMON_FLAGS])?;
        (Op::LayerNorm(layernorm(word, dtype, &args)?), args)
    } else if word == "convfp8" || word == "convbfp8" {
        return Err(ParseError::new(format!(
            "command `{word}` is not supported: fp8 convolutions have no lockstep kernels yet; \
             use conv, convfp16, convbfp16 or convint8"
        )));
    } else {
        return Err(ParseError::new(format!(
            "unknown command `{word}`: expected one of {}",
            command_words().join(", ")
        )));
    };
    let iterations = args.positive("iter")?;
    let iterations = u32::try_from(iterations)
        .map_err(|_| ParseError::new(format!("-i/--iter is too large: {iterations}")))?;
    let time = args.flag_bool("time")?;
    let verify = args.flag_bool("verify")?;
    notes.extend(args.ignored_notes()?);
    Ok(BenchCommand {
        argv,
        op,
        iterations,
        time,
        verify,
        notes,
    })
}

/// Flag values of one command line.
struct Args {
    specs: Vec<&'static FlagSpec>,
    /// long name -> (the flag as written, the value).
    given: HashMap<&'static str, (String, String)>,
}

impl Args {
    fn collect(words: &[String], tables: &[&'static [FlagSpec]]) -> Result<Args, ParseError> {
        let specs: Vec<&'static FlagSpec> = tables.iter().flat_map(|t| t.iter()).collect();
        let mut given = HashMap::new();
        let mut i = 0;
        while i < words.len() {
            let word = &words[i];
            let (spec, inline) = if let Some(body) = word.strip_prefix("--") {
                let (name, inline) = match body.split_once('=') {
                    Some((name, value)) => (name, Some(value.to_string())),
                    None => (body, None),
                };
                let spec = specs
                    .iter()
                    .find(|s| s.long == name)
                    .ok_or_else(|| ParseError::new(format!("unknown flag `{word}`")))?;
                (*spec, inline)
            } else if let Some(body) = word.strip_prefix('-') {
                let mut chars = body.chars();
                let short = match (chars.next(), chars.next()) {
                    (Some(c), None) => c,
                    _ => {
                        return Err(ParseError::new(format!(
                            "unknown flag `{word}`: short flags are one character and take \
                             their value from the next word (`-n 16`)"
                        )))
                    }
                };
                let spec = specs
                    .iter()
                    .find(|s| s.short == short)
                    .ok_or_else(|| ParseError::new(format!("unknown flag `{word}`")))?;
                (*spec, None)
            } else {
                return Err(ParseError::new(format!(
                    "unexpected word `{word}`: expected a flag such as `-n` or `--batchsize`"
                )));
            };
            let value = match inline {
                Some(value) => value,
                None => {
                    i += 1;
                    words.get(i).cloned().ok_or_else(|| {
                        ParseError::new(format!("flag {} needs a value", spec_name(spec)))
                    })?
                }
            };
            given.insert(spec.long, (word.clone(), value));
            i += 1;
        }
        Ok(Args { specs, given })
    }

    fn spec(&self, long: &str) -> &'static FlagSpec {
        self.specs
            .iter()
            .find(|s| s.long == long)
            .copied()
            .unwrap_or_else(|| panic!("flag `{long}` is not in the table"))
    }

    fn is_given(&self, long: &str) -> bool {
        self.given.contains_key(long)
    }

    fn raw(&self, long: &str) -> &str {
        match self.given.get(long) {
            Some((_, value)) => value,
            None => self.spec(long).default,
        }
    }

    /// An integer; like MIOpenDriver, 32-bit.
    fn int(&self, long: &str) -> Result<i64, ParseError> {
        let value = self.raw(long);
        let parsed = value.trim().parse::<i64>().map_err(|_| {
            ParseError::new(format!(
                "bad value for {}: expected an integer, found `{value}`",
                spec_name(self.spec(long))
            ))
        })?;
        if i32::try_from(parsed).is_err() {
            return Err(ParseError::new(format!(
                "bad value for {}: {parsed} is out of range (MIOpenDriver takes 32-bit integers)",
                spec_name(self.spec(long))
            )));
        }
        Ok(parsed)
    }

    fn float(&self, long: &str) -> Result<f64, ParseError> {
        let value = self.raw(long);
        match value.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(ParseError::new(format!(
                "bad value for {}: expected a number, found `{value}`",
                spec_name(self.spec(long))
            ))),
        }
    }

    /// An integer that must be at least 1.
    fn positive(&self, long: &str) -> Result<u64, ParseError> {
        self.at_least(long, 1, "must be at least 1")
    }

    /// An integer that must be at least 0.
    fn non_negative(&self, long: &str) -> Result<u64, ParseError> {
        self.at_least(long, 0, "must not be negative")
    }

    fn at_least(&self, long: &str, min: i64, rule: &str) -> Result<u64, ParseError> {
        let v = self.int(long)?;
        if v < min {
            return Err(ParseError::new(format!(
                "bad value for {}: {rule}, found {v}",
                spec_name(self.spec(long))
            )));
        }
        Ok(v as u64)
    }

    /// A 0/1 switch: any other value is an error (`-u 2` is not "true").
    fn flag_bool(&self, long: &str) -> Result<bool, ParseError> {
        match self.int(long)? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(ParseError::new(format!(
                "bad value for {}: 0 or 1, found {v}",
                spec_name(self.spec(long))
            ))),
        }
    }

    /// Notes for ignored flags given with a non-default value; errors for
    /// default-only flags with another value.
    fn ignored_notes(&self) -> Result<Vec<String>, ParseError> {
        let mut notes = Vec::new();
        for spec in &self.specs {
            let Some((written, value)) = self.given.get(spec.long) else {
                continue;
            };
            let is_default = match spec.kind {
                Int => self.int(spec.long).ok() == spec.default.parse::<i64>().ok(),
                Float => value.trim().parse::<f64>().ok() == spec.default.parse::<f64>().ok(),
                Str => value == spec.default,
            };
            match spec.usage {
                FlagUse::Used => {}
                FlagUse::Ignored(why) if !is_default => {
                    notes.push(format!(
                        "ignored `{written} {value}` ({}): {why}",
                        spec_name(spec)
                    ));
                }
                FlagUse::Ignored(_) => {}
                FlagUse::DefaultOnly(why) if !is_default => {
                    return Err(ParseError::new(format!(
                        "unsupported value `{value}` for {}: {why}",
                        spec_name(spec)
                    )));
                }
                FlagUse::DefaultOnly(_) => {}
            }
        }
        notes.sort();
        Ok(notes)
    }
}

fn spec_name(spec: &FlagSpec) -> String {
    format!("-{}/--{}", spec.short, spec.long)
}

fn conv(
    command: &str,
    dtype: ElemType,
    args: &Args,
    notes: &mut Vec<String>,
) -> Result<ConvCommand, ParseError> {
    let [input_layout, filter_layout, output_layout] = conv_layouts(args)?;
    let spatial_dims = input_layout.spatial_dims();
    let dims = dim_flags_of(input_layout);
    let positives = |name: fn(&DimFlags) -> &'static str| -> Result<Vec<u64>, ParseError> {
        dims.iter().map(|d| args.positive(name(d))).collect()
    };
    let non_negatives = |name: fn(&DimFlags) -> &'static str| -> Result<Vec<u64>, ParseError> {
        dims.iter().map(|d| args.non_negative(name(d))).collect()
    };
    note_unused_dimension_flags(args, input_layout, notes);

    let n = args.positive("batchsize")?;
    let c = args.positive("in_channels")?;
    let k = args.positive("out_channels")?;
    let groups = args.positive("group_count")?;
    let input_spatial = positives(|d| d.input)?;
    let filter_spatial = positives(|d| d.filter)?;
    let stride = positives(|d| d.stride)?;
    let dilation = positives(|d| d.dilation)?;
    let mut padding = non_negatives(|d| d.pad)?;
    let mut output_padding = non_negatives(|d| d.output_pad)?;
    let bias = args.flag_bool("bias")?;

    let mode = match args.raw("mode") {
        "conv" => ConvMode::Conv,
        "trans" => ConvMode::Trans,
        other => {
            return Err(ParseError::new(format!(
                "bad value for -m/--mode: expected conv or trans, found `{other}`"
            )))
        }
    };
    let pad_mode = match args.raw("pad_mode") {
        "default" => PadMode::Default,
        "same" => PadMode::Same,
        "valid" => PadMode::Valid,
        other => {
            return Err(ParseError::new(format!(
                "bad value for -z/--pad_mode: expected default, same or valid, found `{other}`"
            )))
        }
    };

    if c % groups != 0 || k % groups != 0 {
        return Err(ParseError::new(format!(
            "invalid group count: input channels ({c}) and output channels ({k}) must both be \
             divisible by -g/--group_count ({groups})"
        )));
    }

    if pad_mode != PadMode::Default {
        let sizes = [&input_spatial, &filter_spatial, &stride, &dilation];
        padding = padding_for_mode(args, pad_mode, mode, &dims, sizes, padding, notes)?;
    }

    match mode {
        ConvMode::Conv => {
            if output_padding.iter().any(|&p| p != 0) {
                notes.push(
                    "ignored the transposed-convolution output padding (-Y/-X/-%): \
                     the convolution is not transposed (-m conv)"
                        .to_string(),
                );
                output_padding.iter_mut().for_each(|p| *p = 0);
            }
        }
        ConvMode::Trans => {
            for i in 0..spatial_dims {
                if output_padding[i] >= stride[i] && output_padding[i] >= dilation[i] {
                    return Err(ParseError::new(format!(
                        "impossible transposed convolution: output padding {} in {} must be \
                         smaller than the stride ({}) or the dilation ({})",
                        output_padding[i], dims[i].name, stride[i], dilation[i]
                    )));
                }
            }
        }
    }

    let mut output_spatial = Vec::with_capacity(spatial_dims);
    for i in 0..spatial_dims {
        let size = match mode {
            ConvMode::Conv => conv_output_size(
                input_spatial[i],
                filter_spatial[i],
                stride[i],
                padding[i],
                dilation[i],
            ),
            ConvMode::Trans => trans_output_size(
                input_spatial[i],
                filter_spatial[i],
                stride[i],
                padding[i],
                dilation[i],
                output_padding[i],
            ),
        };
        if size < 1 {
            return Err(ParseError::new(format!(
                "impossible shape: the output {} would be {size} (input {}, filter {}, stride {}, \
                 padding {}, dilation {}); it must be at least 1",
                dims[i].name,
                input_spatial[i],
                filter_spatial[i],
                stride[i],
                padding[i],
                dilation[i]
            )));
        }
        output_spatial.push(size as u64);
    }

    let forw = args.int("forw")?;
    let mut directions = Direction::from_forw(forw).map_err(ParseError::new)?;
    if dtype == ElemType::I8 {
        let dropped: Vec<&str> = directions
            .iter()
            .filter(|d| **d != Direction::Forward)
            .map(|d| d.miopen_name())
            .collect();
        if !dropped.is_empty() {
            if !directions.contains(&Direction::Forward) {
                return Err(ParseError::new(format!(
                    "convint8 supports only the forward direction, but -F {forw} asks for {}: \
                     use -F 1",
                    dropped.join("+")
                )));
            }
            notes.push(format!(
                "skipped {} for convint8: int8 convolutions run forward only (as in MIOpen)",
                dropped.join("+")
            ));
            directions.retain(|d| *d == Direction::Forward);
        }
    }

    Ok(ConvCommand {
        command: command.to_string(),
        dtype,
        spatial_dims,
        n,
        c,
        k,
        groups,
        input_spatial,
        filter_spatial,
        stride,
        padding,
        dilation,
        output_padding,
        pad_mode,
        bias,
        mode,
        input_layout,
        filter_layout,
        output_layout,
        forw: forw as u8,
        directions,
        output_spatial,
    })
}

/// The layouts of a convolution's input, filter and output, all with the
/// same spatial letters. Without --spatial_dim the layouts given decide the
/// dimensions (as in BOO); a layout not given is the channels-first one with
/// the letters of those given, or the default for the dimensions.
fn conv_layouts(args: &Args) -> Result<[Layout; 3], ParseError> {
    let mut given: Vec<(&str, Layout)> = Vec::new();
    for long in ["in_layout", "fil_layout", "out_layout"] {
        let raw = args.raw(long);
        if !raw.is_empty() {
            let layout = Layout::parse(raw).map_err(|e| {
                ParseError::new(format!("bad value for {}: {e}", spec_name(args.spec(long))))
            })?;
            given.push((long, layout));
        }
    }
    if args.is_given("spatial_dim") {
        check_spatial_dim(args, &given)?;
    }
    if let Some(&(first, first_layout)) = given.first() {
        if let Some(&(long, layout)) = given
            .iter()
            .find(|(_, l)| l.spatial_letters() != first_layout.spatial_letters())
        {
            return Err(disagreeing_layouts(first, first_layout, long, layout));
        }
    }
    let default = match given.first() {
        Some((_, layout)) => layout.channels_first(),
        None => Layout::default_for(args.int("spatial_dim")? as usize),
    };
    let layout = |long: &str| {
        given
            .iter()
            .find(|(l, _)| *l == long)
            .map_or(default, |(_, layout)| *layout)
    };
    Ok([
        layout("in_layout"),
        layout("fil_layout"),
        layout("out_layout"),
    ])
}

/// Checks an explicit --spatial_dim against the layouts given.
fn check_spatial_dim(args: &Args, given: &[(&str, Layout)]) -> Result<(), ParseError> {
    let dims = args.int("spatial_dim")?;
    if !(1..=3).contains(&dims) {
        return Err(ParseError::new(format!(
            "bad value for -_/--spatial_dim: expected 1, 2 or 3 (spatial dimensions of \
             the convolution), found {dims}"
        )));
    }
    let dims = dims as usize;
    match given.iter().find(|(_, l)| l.spatial_dims() != dims) {
        Some((long, layout)) => Err(ParseError::new(format!(
            "--{long} {layout} has {} spatial dimensions but --spatial_dim is {dims}; \
             give a {dims}-D layout ({}) or drop --spatial_dim",
            layout.spatial_dims(),
            layouts_of(dims)
        ))),
        None => Ok(()),
    }
}

/// The error for two layouts with different spatial letters.
fn disagreeing_layouts(first: &str, a: Layout, long: &str, b: Layout) -> ParseError {
    if a.spatial_dims() != b.spatial_dims() {
        let d = a.spatial_dims();
        return ParseError::new(format!(
            "layouts disagree on the number of spatial dimensions: --{first} {a} but \
             --{long} {b}; give every tensor a layout of the same rank ({} for {d}-D)",
            layouts_of(d)
        ));
    }
    // Only 1-D layouts share a rank but not their letter.
    ParseError::new(format!(
        "layouts disagree on the spatial dimension: --{first} {a} runs along {} but \
         --{long} {b} along {}; a 1-D convolution takes the height flags with NCH/NHC or \
         the width flags with NCW/NWC, so give all three tensors the same letter",
        a.spatial_letters(),
        b.spatial_letters()
    ))
}

/// The flags of one spatial dimension.
#[derive(Debug)]
struct DimFlags {
    /// Its layout letter.
    letter: char,
    /// Its name in messages.
    name: &'static str,
    input: &'static str,
    filter: &'static str,
    stride: &'static str,
    pad: &'static str,
    dilation: &'static str,
    output_pad: &'static str,
}

impl DimFlags {
    fn all(&self) -> [&'static str; 6] {
        [
            self.input,
            self.filter,
            self.stride,
            self.pad,
            self.dilation,
            self.output_pad,
        ]
    }
}

/// The per-dimension flags of D, H and W, in that order.
const DIM_FLAGS: [DimFlags; 3] = [
    DimFlags {
        letter: 'D',
        name: "depth",
        input: "in_d",
        filter: "fil_d",
        stride: "conv_stride_d",
        pad: "pad_d",
        dilation: "dilation_d",
        output_pad: "trans_output_pad_d",
    },
    DimFlags {
        letter: 'H',
        name: "height",
        input: "in_h",
        filter: "fil_h",
        stride: "conv_stride_h",
        pad: "pad_h",
        dilation: "dilation_h",
        output_pad: "trans_output_pad_h",
    },
    DimFlags {
        letter: 'W',
        name: "width",
        input: "in_w",
        filter: "fil_w",
        stride: "conv_stride_w",
        pad: "pad_w",
        dilation: "dilation_w",
        output_pad: "trans_output_pad_w",
    },
];

/// The flags of a layout's spatial letters, in per-dimension order (as
/// BOO, which takes the flags of the letters in the layout).
fn dim_flags_of(layout: Layout) -> Vec<&'static DimFlags> {
    DIM_FLAGS
        .iter()
        .filter(|d| layout.spatial_letters().contains(d.letter))
        .collect()
}

/// Notes the flags of the spatial letters a convolution's layout does not
/// have (depth flags in 2-D; in 1-D those of the two other letters): MIOpen
/// accepts them whatever the dimensions, so they are ignored rather than
/// refused (at their defaults they change nothing and are not noted).
fn note_unused_dimension_flags(args: &Args, layout: Layout, notes: &mut Vec<String>) {
    let letters = layout.spatial_letters();
    let hint = match letters {
        "H" => {
            "the convolution is 1-D along H (NCH/NHC take the height flags; \
                give NCW or NWC layouts for the width flags)"
        }
        "W" => {
            "the convolution is 1-D along W (NCW/NWC take the width flags; \
                give NCH or NHC layouts for the height flags)"
        }
        "HW" => "the convolution is 2-D (add --spatial_dim 3 for 3-D)",
        _ => return,
    };
    let unused = DIM_FLAGS.iter().filter(|d| !letters.contains(d.letter));
    for long in unused.flat_map(DimFlags::all) {
        if args.is_given(long) && args.raw(long) != args.spec(long).default {
            notes.push(format!(
                "ignored {} {}: {hint}",
                spec_name(args.spec(long)),
                args.raw(long)
            ));
        }
    }
}

/// The padding after `-z same|valid`: MIOpen recomputes it for convolutions
/// (not transposed) whose dilations or filter sizes are all 1 and leaves the
/// explicit padding alone otherwise; either way a note says what was
/// ignored.
fn padding_for_mode(
    args: &Args,
    pad_mode: PadMode,
    mode: ConvMode,
    dims: &[&DimFlags],
    sizes: [&Vec<u64>; 4],
    explicit: Vec<u64>,
    notes: &mut Vec<String>,
) -> Result<Vec<u64>, ParseError> {
    let [_, filter, _, dilation] = sizes;
    if mode == ConvMode::Conv
        && (dilation.iter().all(|&d| d == 1) || filter.iter().all(|&f| f == 1))
    {
        let computed = pad_mode_padding(args, pad_mode, dims, sizes)?;
        note_overridden_padding(args, dims, &computed, notes);
        return Ok(computed);
    }
    notes.push(format!(
        "ignored `-z {}` (-z/--pad_mode): MIOpen applies it only to convolutions \
         (not -m trans) whose dilations or filter sizes are all 1; the -p/-q/-$ \
         padding is used",
        args.raw("pad_mode")
    ));
    Ok(explicit)
}

/// The padding `-z same|valid` gives each dimension, as MIOpen computes it:
/// zero for `valid`; for `same`, half the total padding that makes the
/// output `ceil(in/stride)`, `max((out-1)*stride + (fil-1)*dil + 1 - in, 0)`.
/// MIOpen pads an odd total unevenly (one more element after than before);
/// lockstep's kernels pad both ends alike, so an odd total is refused rather
/// than rounded down to a smaller kernel than MIOpen's.
fn pad_mode_padding(
    args: &Args,
    pad_mode: PadMode,
    dims: &[&DimFlags],
    [input, filter, stride, dilation]: [&Vec<u64>; 4],
) -> Result<Vec<u64>, ParseError> {
    let mut padding = Vec::with_capacity(dims.len());
    for (i, dim) in dims.iter().enumerate() {
        if pad_mode == PadMode::Valid {
            padding.push(0);
            continue;
        }
        let output = input[i].div_ceil(stride[i]);
        let total = (output - 1)
            .saturating_mul(stride[i])
            .saturating_add((filter[i] - 1).saturating_mul(dilation[i]))
            .saturating_add(1)
            .saturating_sub(input[i]);
        if total % 2 == 1 {
            return Err(ParseError::new(format!(
                "-z/--pad_mode same needs an odd total padding of {total} in {} (input {}, \
                 filter {}, stride {}, dilation {}, for an output of {output}), which MIOpen \
                 splits unevenly ({} before, {} after) but lockstep pads both ends alike: \
                 drop -z same and give the padding explicitly, e.g. {} {} or {}",
                dim.name,
                input[i],
                filter[i],
                stride[i],
                dilation[i],
                total / 2,
                total / 2 + 1,
                spec_name(args.spec(dim.pad)),
                total / 2,
                total / 2 + 1
            )));
        }
        padding.push(total / 2);
    }
    Ok(padding)
}

/// Notes explicit padding flags that `-z same|valid` overrides (as MIOpen
/// does) with another value.
fn note_overridden_padding(
    args: &Args,
    dims: &[&DimFlags],
    computed: &[u64],
    notes: &mut Vec<String>,
) {
    for (dim, pad) in dims.iter().zip(computed) {
        if args.is_given(dim.pad) && args.non_negative(dim.pad).ok() != Some(*pad) {
            notes.push(format!(
                "ignored {} {}: -z {} sets the {} padding to {pad}, as in MIOpen",
                spec_name(args.spec(dim.pad)),
                args.raw(dim.pad),
                args.raw("pad_mode"),
                dim.name
            ));
        }
    }
}

/// The layouts of a convolution with `dims` spatial dimensions, for messages.
fn layouts_of(dims: usize) -> &'static str {
    match dims {
        1 => "NCH, NHC, NCW or NWC",
        3 => "NCDHW or NDHWC",
        _ => "NCHW or NHWC",
    }
}

fn gemm(command: &str, dtype: ElemType, args: &Args) -> Result<GemmCommand, ParseError> {
    let mode = match args.int("forw")? {
        1 => GemmMode::Forward,
        2 => GemmMode::ABackward,
        3 => GemmMode::BBackward,
        other => {
            return Err(ParseError::new(format!(
                "bad value for -F/--forw: gemm takes 1 (forward), 2 (backward for A) or \
                 3 (backward for B), found {other}"
            )))
        }
    };
    // BOO's a_shape is [a_w, a_h]: M is the "width" and K the "height".
    Ok(GemmCommand {
        command: command.to_string(),
        dtype,
        m: args.positive("a_w")?,
        k: args.positive("a_h")?,
        n: args.positive("b_w")?,
        trans_a: args.flag_bool("transA")?,
        trans_b: args.flag_bool("transB")?,
        mode,
    })
}

/// The most dimensions a layer norm's `-X` takes: BOO's are 4 or 5, and
/// the generated module grows with the rank.
const MAX_LAYERNORM_RANK: usize = 8;

fn layernorm(command: &str, dtype: ElemType, args: &Args) -> Result<LayerNormCommand, ParseError> {
    let mode = match args.int("forw")? {
        1 => LayerNormMode::Forward,
        2 => LayerNormMode::InputBackward,
        3 => LayerNormMode::WeightBackward,
        4 => LayerNormMode::BiasBackward,
        other => {
            return Err(ParseError::new(format!(
                "bad value for -F/--forw: layernorm takes 1 (forward), 2 (input backward), \
                 3 (weight backward) or 4 (bias backward), found {other}"
            )))
        }
    };
    let raw = args.raw("input");
    if raw.is_empty() {
        return Err(ParseError::new(
            "missing -X/--input: layernorm needs the input shape, e.g. `-X 32x4x16x16`",
        ));
    }
    let input_shape = raw
        .split('x')
        .map(|d| match d.parse::<u64>() {
            Ok(v)
                if (1..=i32::MAX as u64).contains(&v) && d.bytes().all(|b| b.is_ascii_digit()) =>
            {
                Ok(v)
            }
            _ => Err(ParseError::new(format!(
                "bad value for -X/--input: expected sizes of at least 1 joined by `x` \
                 (NxC[xD]xHxW), found `{raw}`"
            ))),
        })
        .collect::<Result<Vec<u64>, ParseError>>()?;
    if input_shape.len() > MAX_LAYERNORM_RANK {
        return Err(ParseError::new(format!(
            "bad value for -X/--input: {} dimensions, at most {MAX_LAYERNORM_RANK} are supported \
             (NxC[xD]xHxW), found `{raw}`",
            input_shape.len()
        )));
    }
    let normalized_dim = args.int("normalized_dim")?;
    if normalized_dim != input_shape.len() as i64 - 1 {
        return Err(ParseError::new(format!(
            "bad value for -o/--normalized_dim: only the last dimension can be normalized \
             (as in BOO), so it must be {} for input {raw}, found {normalized_dim}",
            input_shape.len() - 1
        )));
    }
    let eps = args.float("eps")?;
    // The kernel adds eps in f32: it must stay a positive f32.
    let as_f32 = eps as f32;
    if eps <= 0.0 || as_f32 <= 0.0 || !as_f32.is_finite() {
        return Err(ParseError::new(format!(
            "bad value for -e/--eps: must be a positive number an f32 holds \
             (about 1.4e-45 to 3.4e38), found {}",
            args.raw("eps")
        )));
    }
    let elementwise_affine = match args.int("mode")? {
        0 => true,
        1 => false,
        other => {
            return Err(ParseError::new(format!(
                "bad value for -m/--mode: expected 0 (elementwise affine) or 1 (weight and bias), \
                 found {other}"
            )))
        }
    };
    Ok(LayerNormCommand {
        command: command.to_string(),
        dtype,
        input_shape,
        normalized_dim: normalized_dim as usize,
        eps,
        elementwise_affine,
        bias: true,
        mode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<BenchCommand, ParseError> {
        let words: Vec<&str> = line.split_whitespace().collect();
        parse_argv(&words)
    }

    fn conv_of(line: &str) -> ConvCommand {
        match parse(line).unwrap_or_else(|e| panic!("{line}: {e}")).op {
            Op::Conv(c) => c,
            other => panic!("not a conv: {other:?}"),
        }
    }

    fn err(line: &str) -> String {
        match parse(line) {
            Ok(cmd) => panic!("{line} parsed: {cmd:?}"),
            Err(e) => e.reason,
        }
    }

    #[test]
    fn defaults_are_miopens_with_boo_run_options() {
        let cmd = parse("conv").unwrap();
        assert_eq!(cmd.iterations, 100);
        assert!(cmd.time);
        assert!(!cmd.verify);
        assert!(cmd.notes.is_empty());
        let Op::Conv(c) = cmd.op else { panic!() };
        assert_eq!(c.dtype, ElemType::F32);
        assert_eq!(c.spatial_dims, 2);
        assert_eq!((c.n, c.c, c.k, c.groups), (100, 3, 32, 1));
        assert_eq!(c.input_spatial, [32, 32]);
        assert_eq!(c.filter_spatial, [3, 3]);
        assert_eq!(c.stride, [1, 1]);
        assert_eq!(c.padding, [0, 0]);
        assert_eq!(c.dilation, [1, 1]);
        assert_eq!(c.output_padding, [0, 0]);
        assert_eq!(c.output_spatial, [30, 30]);
        assert_eq!(c.mode, ConvMode::Conv);
        assert_eq!(c.pad_mode, PadMode::Default);
        assert!(!c.bias);
        assert_eq!(
            (c.input_layout, c.filter_layout, c.output_layout),
            (Layout::Nchw, Layout::Nchw, Layout::Nchw)
        );
        assert_eq!(c.forw, 0);
        assert_eq!(c.directions, Direction::ALL);
    }

    #[test]
    fn command_words_pick_the_type() {
        for (word, ty) in [
            ("conv", ElemType::F32),
            ("convfp16", ElemType::F16),
            ("convbfp16", ElemType::BF16),
            ("convint8", ElemType::I8),
        ] {
            assert_eq!(conv_of(&format!("{word} -F 1")).dtype, ty);
        }
        assert!(err("convfp8 -n 1").contains("not supported"));
        assert!(err("convbfp8").contains("not supported"));
        let e = err("pool -n 1");
        assert!(e.contains("unknown command `pool`"), "{e}");
        assert!(e.contains("convbfp16"), "{e}");
        assert!(parse_argv::<&str>(&[])
            .unwrap_err()
            .reason
            .contains("empty"));
    }

    /// Every used conv flag, in long and short form, lands in the same field.
    #[test]
    fn every_flag_in_long_and_short_form() {
        type Case = (&'static str, char, &'static str, fn(&ConvCommand) -> String);
        let cases: &[Case] = &[
            ("batchsize", 'n', "7", |c| c.n.to_string()),
            ("in_channels", 'c', "6", |c| c.c.to_string()),
            ("in_h", 'H', "20", |c| c.input_spatial[0].to_string()),
            ("in_w", 'W', "21", |c| c.input_spatial[1].to_string()),
            ("out_channels", 'k', "9", |c| c.k.to_string()),
            ("fil_h", 'y', "5", |c| c.filter_spatial[0].to_string()),
            ("fil_w", 'x', "1", |c| c.filter_spatial[1].to_string()),
            ("conv_stride_h", 'u', "2", |c| c.stride[0].to_string()),
            ("conv_stride_w", 'v', "3", |c| c.stride[1].to_string()),
            ("pad_h", 'p', "1", |c| c.padding[0].to_string()),
            ("pad_w", 'q', "2", |c| c.padding[1].to_string()),
            ("dilation_h", 'l', "2", |c| c.dilation[0].to_string()),
            ("dilation_w", 'j', "3", |c| c.dilation[1].to_string()),
            ("group_count", 'g', "3", |c| c.groups.to_string()),
            ("bias", 'b', "1", |c| c.bias.to_string()),
            ("forw", 'F', "5", |c| c.forw.to_string()),
            ("in_layout", 'I', "NHWC", |c| c.input_layout.to_string()),
            ("fil_layout", 'f', "NHWC", |c| c.filter_layout.to_string()),
            ("out_layout", 'O', "NHWC", |c| c.output_layout.to_string()),
            ("spatial_dim", '_', "2", |c| c.spatial_dims.to_string()),
            ("mode", 'm', "trans", |c| format!("{:?}", c.mode)),
            ("pad_mode", 'z', "valid", |c| format!("{:?}", c.pad_mode)),
        ];
        let base = "conv -c 6 -k 9";
        for (long, short, value, get) in cases {
            let from_long = conv_of(&format!("{base} --{long} {value}"));
            let from_short = conv_of(&format!("{base} -{short} {value}"));
            let from_eq = conv_of(&format!("{base} --{long}={value}"));
            assert_eq!(from_long, from_short, "--{long} vs -{short}");
            assert_eq!(from_long, from_eq, "--{long}=");
            let got = get(&from_long);
            let expected = match *value {
                "1" if *long == "bias" => "true",
                "trans" => "Trans",
                "valid" => "Valid",
                v => v,
            };
            assert_eq!(got, expected, "--{long}");
        }
    }

    #[test]
    fn three_d_flags() {
        let line = "convfp16 --spatial_dim 3 -n 2 -c 4 -! 10 -H 12 -W 14 -k 8 -@ 3 -y 3 -x 1 \
                    -# 2 -u 1 -v 1 -$ 1 -p 0 -q 0 -^ 2 -l 1 -j 1 -F 1";
        let c = conv_of(line);
        assert_eq!(c.spatial_dims, 3);
        assert_eq!(c.input_spatial, [10, 12, 14]);
        assert_eq!(c.filter_spatial, [3, 3, 1]);
        assert_eq!(c.stride, [2, 1, 1]);
        assert_eq!(c.padding, [1, 0, 0]);
        assert_eq!(c.dilation, [2, 1, 1]);
        // depth: (10 + 2 - 2*2 - 1)/2 + 1 = 4
        assert_eq!(c.output_spatial, [4, 10, 14]);
        assert_eq!(c.input_layout, Layout::Ncdhw);
        assert_eq!(c.input_shape(), [2, 4, 10, 12, 14]);
        assert_eq!(c.filter_shape(), [8, 4, 3, 3, 1]);
        assert_eq!(c.output_shape(), [2, 8, 4, 10, 14]);

        let long = "convfp16 -_ 3 --in_d 10 --fil_d 3 --conv_stride_d 2 --pad_d 1 --dilation_d 2 \
                    -n 2 -c 4 -H 12 -W 14 -k 8 -x 1 -F 1";
        assert_eq!(conv_of(long), conv_of(&line.replace("-y 3 ", "")));

        // 3-D layouts, with --spatial_dim or inferred from the layouts.
        let c = conv_of("conv -_ 3 -I NDHWC -f NDHWC -O ndhwc -F 1");
        assert_eq!(c.input_layout, Layout::Ndhwc);
        assert_eq!(c.output_layout, Layout::Ndhwc);
        assert_eq!(c.input_shape(), [100, 32, 32, 32, 3]);
        let inferred = conv_of("conv -I NDHWC -F 1");
        assert_eq!(inferred.spatial_dims, 3);
        assert_eq!(inferred.filter_layout, Layout::Ncdhw);

        // Depth flags on a 2-D convolution are noted, not used.
        let cmd = parse("conv -! 8 -@ 1").unwrap();
        assert!(cmd
            .notes
            .iter()
            .any(|n| n.contains("-!/--in_d") && n.contains("2-D")));
        let Op::Conv(c) = cmd.op else { panic!() };
        assert_eq!(c.input_spatial.len(), 2);
    }

    #[test]
    fn one_d_flags() {
        // As in BOO, 1-D defaults to NCH and takes the height flags.
        let line = "convfp16 --spatial_dim 1 -n 2 -c 4 -H 14 -k 8 -y 3 -u 2 -p 1 -l 2 -F 1";
        let c = conv_of(line);
        assert_eq!(c.spatial_dims, 1);
        assert_eq!(c.input_spatial, [14]);
        assert_eq!(c.filter_spatial, [3]);
        assert_eq!(c.stride, [2]);
        assert_eq!(c.padding, [1]);
        assert_eq!(c.dilation, [2]);
        assert_eq!(c.output_padding, [0]);
        // (14 + 2 - 2*2 - 1)/2 + 1 = 6
        assert_eq!(c.output_spatial, [6]);
        assert_eq!(
            (c.input_layout, c.filter_layout, c.output_layout),
            (Layout::Nch, Layout::Nch, Layout::Nch)
        );
        assert_eq!(c.input_shape(), [2, 4, 14]);
        assert_eq!(c.filter_shape(), [8, 4, 3]);
        assert_eq!(c.output_shape(), [2, 8, 6]);
        let long = "convfp16 -_ 1 --in_h 14 --fil_h 3 --conv_stride_h 2 --pad_h 1 \
                    --dilation_h 2 -n 2 -c 4 -k 8 -F 1";
        assert_eq!(conv_of(long), c);

        // NCW takes the same values from the width flags.
        let w = conv_of(
            "convfp16 -_ 1 -n 2 -c 4 -W 14 -k 8 -x 3 -v 2 -q 1 -j 2 -F 1 -I NCW -f NCW -O NCW",
        );
        assert_eq!(w.input_layout, Layout::Ncw);
        let as_nch = |mut c: ConvCommand| {
            c.input_layout = Layout::Nch;
            c.filter_layout = Layout::Nch;
            c.output_layout = Layout::Nch;
            c
        };
        assert_eq!(as_nch(w), c);

        // NHC, given with -_ 1 or deciding the dimensions alone.
        let c = conv_of("conv -_ 1 -I NHC -f NHC -O nhc -H 10 -y 3 -F 1");
        assert_eq!(c.input_shape(), [100, 10, 3]);
        assert_eq!(c.filter_shape(), [32, 3, 3]);
        assert_eq!(c.output_shape(), [100, 8, 32]);
        let implied = conv_of("conv -I NHC -H 10 -y 3 -F 1");
        assert_eq!(implied.spatial_dims, 1);
        assert_eq!(implied.input_layout, Layout::Nhc);
        assert_eq!(implied.filter_layout, Layout::Nch);
        assert_eq!(implied.output_shape(), [100, 32, 8]);
        let mixed = conv_of("conv -I nch -f NHC -O NHC -c 4 -k 6 -H 9 -y 2 -F 1");
        assert_eq!(mixed.spatial_dims, 1);
        assert_eq!(mixed.input_shape(), [100, 4, 9]);
        assert_eq!(mixed.filter_shape(), [6, 2, 4]);
        assert_eq!(mixed.output_shape(), [100, 8, 6]);

        let e = err("conv -I NHC -O NCHW");
        assert!(e.contains("disagree"), "{e}");
        let e = err("conv -f NCDHW -O NCH");
        assert!(e.contains("disagree"), "{e}");
        let e = err("conv -_ 1 -I NHWC");
        assert!(
            e.contains("--spatial_dim is 1") && e.contains("NCH, NHC, NCW or NWC"),
            "{e}"
        );
        let e = err("conv -_ 2 -f NCH");
        assert!(e.contains("--spatial_dim is 2"), "{e}");
    }

    /// Every layout parses from its name and puts each size under its letter.
    #[test]
    fn layouts_place_sizes_by_letter() {
        use Layout::*;
        for layout in [Nch, Nhc, Ncw, Nwc, Nchw, Nhwc, Ncdhw, Ndhwc] {
            let name = layout.as_str();
            assert_eq!(Layout::parse(&name.to_ascii_lowercase()), Ok(layout));
            assert_eq!(layout.channels_first().as_str().chars().nth(1), Some('C'));
            assert_eq!(
                layout.channels_first().spatial_letters(),
                layout.spatial_letters()
            );
            // Sizes 10 (N), 20 (C), then 3, 4, 5 for the spatial letters in order.
            let spatial: Vec<u64> = (3..3 + layout.spatial_dims() as u64).collect();
            let by_letter = |letter: char| match letter {
                'N' => 10,
                'C' => 20,
                l => spatial[layout.spatial_letters().find(l).unwrap()],
            };
            let expected: Vec<u64> = name.chars().map(by_letter).collect();
            assert_eq!(layout.arrange(10, 20, &spatial), expected, "{name}");
        }
        assert_eq!(Layout::default_for(1), Nch);
    }

    #[test]
    fn one_d_width_layouts() {
        let c = conv_of("conv -_ 1 -I NWC -f NWC -O nwc -W 10 -x 3 -F 1");
        assert_eq!(c.input_shape(), [100, 10, 3]);
        assert_eq!(c.filter_shape(), [32, 3, 3]);
        assert_eq!(c.output_shape(), [100, 8, 32]);
        // Layouts not given take the channels-first layout of the same letter.
        let implied = conv_of("conv -I NWC -W 10 -x 3 -F 1");
        assert_eq!(implied.spatial_dims, 1);
        assert_eq!(implied.input_layout, Layout::Nwc);
        assert_eq!(implied.filter_layout, Layout::Ncw);
        assert_eq!(implied.output_shape(), [100, 32, 8]);
        let mixed = conv_of("conv -I ncw -f NWC -O NWC -c 4 -k 6 -W 9 -x 2 -F 1");
        assert_eq!(mixed.input_shape(), [100, 4, 9]);
        assert_eq!(mixed.filter_shape(), [6, 2, 4]);
        assert_eq!(mixed.output_shape(), [100, 8, 6]);
        let e = err("conv -I NWC -O NCHW");
        assert!(e.contains("disagree"), "{e}");
    }

    #[test]
    fn one_d_layouts_share_their_letter() {
        for line in [
            "conv -_ 1 -I NCH -f NCW",
            "conv -I NWC -O NHC",
            "conv -_ 1 -f NCH -O NWC",
        ] {
            let e = err(line);
            assert!(
                e.contains("disagree on the spatial dimension")
                    && e.contains("along H")
                    && e.contains("along W")
                    && e.contains("same letter"),
                "{line}: {e}"
            );
        }
        let e = err("conv -I NCH -f NWC");
        assert!(
            e.contains("--in_layout NCH") && e.contains("--fil_layout NWC"),
            "{e}"
        );
    }

    #[test]
    fn one_d_flags_of_other_letters_are_noted() {
        // Along H (the default): width and depth flags are noted, not used.
        let cmd = parse("conv -_ 1 -W 8 -x 1 -v 2 -q 1 -j 2 -X 1 -! 4 -H 9 -F 1").unwrap();
        let along_h = [
            "-W/--in_w",
            "-x/--fil_w",
            "-v/--conv_stride_w",
            "-q/--pad_w",
            "-j/--dilation_w",
            "-X/--trans_output_pad_w",
            "-!/--in_d",
        ];
        for flag in along_h {
            assert!(
                cmd.notes
                    .iter()
                    .any(|n| n.contains(flag) && n.contains("1-D along H") && n.contains("NCW")),
                "{flag}: {:#?}",
                cmd.notes
            );
        }
        assert_eq!(cmd.notes.len(), 7, "{:#?}", cmd.notes);
        let Op::Conv(c) = cmd.op else { panic!() };
        assert_eq!((c.input_spatial, c.output_spatial), (vec![9], vec![7]));

        // Along W: height and depth flags are.
        let cmd = parse("conv -_ 1 -H 8 -y 1 -u 2 -p 1 -l 2 -Y 1 -! 4 -W 9 -I NCW -F 1").unwrap();
        for flag in [
            "-H/--in_h",
            "-y/--fil_h",
            "-u/--conv_stride_h",
            "-p/--pad_h",
            "-l/--dilation_h",
            "-Y/--trans_output_pad_h",
            "-!/--in_d",
        ] {
            assert!(
                cmd.notes
                    .iter()
                    .any(|n| n.contains(flag) && n.contains("1-D along W")),
                "{flag}: {:#?}",
                cmd.notes
            );
        }
        assert_eq!(cmd.notes.len(), 7, "{:#?}", cmd.notes);
        let Op::Conv(c) = cmd.op else { panic!() };
        assert_eq!((c.input_spatial, c.output_spatial), (vec![9], vec![7]));
        // At MIOpen's defaults they change nothing and are not noted.
        assert!(parse("conv -_ 1 -W 32 -x 3 -F 1").unwrap().notes.is_empty());
        assert!(parse("conv -_ 1 -I NCW -H 32 -y 3 -F 1")
            .unwrap()
            .notes
            .is_empty());
    }

    #[test]
    fn one_d_transposed_and_impossible_shapes() {
        // Transposed, with output padding in height.
        let t = conv_of("conv -_ 1 -m trans -n 1 -c 4 -H 5 -k 6 -y 3 -u 2 -p 1 -Y 1 -g 2 -F 1");
        assert_eq!(t.output_padding, [1]);
        // 2*(5-1) + (3-1) + 1 - 2 + 1 = 10
        assert_eq!(t.output_spatial, [10]);
        assert_eq!(t.filter_shape(), [4, 3, 3]);
        let e = err("conv -_ 1 -m trans -Y 1");
        assert!(
            e.contains("smaller than the stride") && e.contains("height"),
            "{e}"
        );
        let e = err("conv -_ 1 -m trans -X 1 -I NWC");
        assert!(
            e.contains("smaller than the stride") && e.contains("width"),
            "{e}"
        );
        let e = err("conv -_ 1 -H 2 -y 3");
        assert!(e.contains("output height would be 0"), "{e}");
        let e = err("conv -_ 1 -W 2 -x 3 -I NCW -f NCW -O NCW");
        assert!(e.contains("output width would be 0"), "{e}");
    }

    #[test]
    fn layouts_are_independent() {
        let c =
            conv_of("convbfp16 -n 2 -c 4 -H 5 -W 6 -k 8 -y 3 -x 1 -I NHWC -f NCHW -O NHWC -F 1");
        assert_eq!(c.input_shape(), [2, 5, 6, 4]);
        assert_eq!(c.filter_shape(), [8, 4, 3, 1]);
        assert_eq!(c.output_shape(), [2, 3, 6, 8]);
        let c = conv_of("conv -n 2 -c 4 -H 5 -W 6 -k 8 -y 3 -x 1 -I nchw -f nhwc -O nchw -F 1");
        assert_eq!(c.input_shape(), [2, 4, 5, 6]);
        assert_eq!(c.filter_shape(), [8, 3, 1, 4]);
        assert_eq!(c.output_shape(), [2, 8, 3, 6]);

        assert!(err("conv -I NCWH").contains("unknown layout `NCWH`"));
        assert!(err("conv -f CHWN").contains("CHWN is not supported"));
        let e = err("conv -_ 2 -I NCDHW");
        assert!(e.contains("--spatial_dim is 2"), "{e}");
        let e = err("conv -I NHWC -O NDHWC");
        assert!(e.contains("disagree"), "{e}");
        let e = err("conv -_ 4");
        assert!(
            e.contains("expected 1, 2 or 3") && e.contains("found 4"),
            "{e}"
        );
        assert!(err("conv -_ 0").contains("expected 1, 2 or 3"));
    }

    #[test]
    fn every_forw_combination() {
        use Direction::*;
        let expected: &[(i64, &[Direction])] = &[
            (0, &[Forward, BackwardData, BackwardWeight]),
            (1, &[Forward]),
            (2, &[BackwardData]),
            (3, &[Forward, BackwardData]),
            (4, &[BackwardWeight]),
            (5, &[Forward, BackwardWeight]),
            (6, &[BackwardData, BackwardWeight]),
            (7, &[Forward, BackwardData, BackwardWeight]),
        ];
        for (forw, dirs) in expected {
            assert_eq!(
                conv_of(&format!("conv -F {forw}")).directions,
                *dirs,
                "-F {forw}"
            );
            assert_eq!(Direction::from_forw(*forw).unwrap(), *dirs);
        }
        assert!(err("conv -F 8").contains("-F/--forw"));
        assert!(err("conv --forw -1").contains("-F/--forw"));
        assert!(err("conv -F x").contains("expected an integer"));
    }

    #[test]
    fn int8_runs_forward_only() {
        let cmd = parse("convint8 -c 8 -k 8").unwrap();
        let Op::Conv(c) = &cmd.op else { panic!() };
        assert_eq!(c.directions, [Direction::Forward]);
        assert!(
            cmd.notes.iter().any(|n| n.contains("bwd+wrw")),
            "{:?}",
            cmd.notes
        );
        let e = err("convint8 -F 6");
        assert!(e.contains("only the forward direction"), "{e}");
        assert!(parse("convint8 -F 1").unwrap().notes.is_empty());
    }

    #[test]
    fn transposed_convolution_with_output_padding() {
        let c = conv_of("convfp16 -m trans -n 2 -c 16 -H 7 -W 9 -k 8 -y 3 -x 3 -u 2 -v 2 -p 1 -q 1 -Y 1 -X 0 -g 2 -F 1");
        assert_eq!(c.mode, ConvMode::Trans);
        assert_eq!(c.output_padding, [1, 0]);
        // 2*(7-1) + (3-1) + 1 - 2 + 1 = 14 ; 2*(9-1) + 2 + 1 - 2 + 0 = 17
        assert_eq!(c.output_spatial, [14, 17]);
        // MIOpen's transposed filter: C x K/g x Y x X.
        assert_eq!(c.filter_channels(), (16, 4));
        assert_eq!(c.filter_shape(), [16, 4, 3, 3]);
        assert_eq!(c.output_shape(), [2, 8, 14, 17]);
        let long = conv_of("convfp16 --mode trans -n 2 -c 16 -H 7 -W 9 -k 8 -y 3 -x 3 -u 2 -v 2 -p 1 -q 1 --trans_output_pad_h 1 --trans_output_pad_w 0 -g 2 -F 1");
        assert_eq!(c, long);
        let three = conv_of("conv -_ 3 -m trans -# 2 -% 1 -F 1");
        assert_eq!(three.output_padding, [1, 0, 0]);
        // 2*(32-1) + 2 + 1 + 1 = 66
        assert_eq!(three.output_spatial, [66, 34, 34]);

        let e = err("conv -m trans -Y 1");
        assert!(e.contains("smaller than the stride"), "{e}");
        let e = err("conv -m deconv");
        assert!(e.contains("expected conv or trans"), "{e}");

        // Output padding is meaningless without -m trans: noted and dropped.
        let cmd = parse("conv -Y 1").unwrap();
        assert!(cmd.notes.iter().any(|n| n.contains("not transposed")));
        let Op::Conv(c) = cmd.op else { panic!() };
        assert_eq!(c.output_padding, [0, 0]);
    }

    #[test]
    fn groups() {
        let c = conv_of("conv -c 32 -k 64 -g 4 -F 1");
        assert_eq!(c.filter_shape(), [64, 8, 3, 3]);
        let depthwise = conv_of("conv -c 32 -k 32 -g 32 -F 1");
        assert_eq!(depthwise.filter_shape(), [32, 1, 3, 3]);
        let e = err("conv -c 30 -k 64 -g 4");
        assert!(e.contains("divisible"), "{e}");
        let e = err("conv -c 32 -k 30 -g 4");
        assert!(e.contains("divisible"), "{e}");
        assert!(err("conv -g 0").contains("at least 1"));
    }

    #[test]
    fn pad_modes() {
        // "same": output ceil(in/stride), padding half the total
        // max((out-1)*stride + (fil-1)*dil + 1 - in, 0) when it is even.
        let same = conv_of("conv -y 3 -x 3 -z same -F 1");
        assert_eq!(same.padding, [1, 1]);
        assert_eq!(same.output_spatial, [32, 32]);
        // H: out 16, 15*2 + 3 - 31 = 2 ; W: out 16, 15*2 + 4 - 32 = 2.
        let same = conv_of("conv -H 31 -W 32 -y 3 -x 4 -u 2 -v 2 -z same -F 1");
        assert_eq!(same.padding, [1, 1]);
        assert_eq!(same.output_spatial, [16, 16]);
        // A total below zero is no padding: 1x1 filters, stride 2.
        let same = conv_of("conv -y 1 -x 1 -u 2 -v 2 -l 2 -j 2 -z same -F 1");
        assert_eq!(same.padding, [0, 0]);
        assert_eq!(same.output_spatial, [16, 16]);
        // 1-D along H and 3-D.
        let same = conv_of("conv -_ 1 -H 10 -y 5 -z same -F 1");
        assert_eq!((same.padding, same.output_spatial), (vec![2], vec![10]));
        let same = conv_of("conv -_ 3 -! 8 -@ 5 -z same -F 1");
        assert_eq!(same.padding, [2, 1, 1]);
        assert_eq!(same.output_spatial, [8, 32, 32]);

        let valid = conv_of("conv -p 2 -q 2 -z valid -F 1");
        assert_eq!(valid.padding, [0, 0]);
        assert!(err("conv -z full").contains("default, same or valid"));
    }

    /// MIOpen pads an odd "same" total unevenly; lockstep refuses the line
    /// instead of timing a smaller, evenly padded kernel.
    #[test]
    fn odd_same_padding_is_refused() {
        // 3x3, stride 2, even input: out 16, total 15*2 + 3 - 32 = 1.
        let e = err("conv -H 32 -W 32 -y 3 -x 3 -u 2 -v 2 -z same -F 1");
        for part in [
            "-z/--pad_mode same",
            "odd total padding of 1 in height",
            "output of 16",
            "0 before, 1 after",
            "-p/--pad_h 0 or 1",
        ] {
            assert!(e.contains(part), "{part}: {e}");
        }
        // Even in H, odd in W (4 wide filter, stride 1: total 3).
        let e = err("conv -y 3 -x 4 -z same -F 1");
        assert!(
            e.contains("3 in width") && e.contains("-q/--pad_w 1 or 2"),
            "{e}"
        );
        let e = err("conv -_ 3 -@ 2 -z same -F 1");
        assert!(e.contains("in depth") && e.contains("-$/--pad_d"), "{e}");
        // The explicit padding the error asks for is accepted.
        let c = conv_of("conv -H 32 -W 32 -y 3 -x 3 -u 2 -v 2 -p 1 -q 1 -F 1");
        assert_eq!(c.output_spatial, [16, 16]);
    }

    #[test]
    fn pad_modes_override_explicit_padding_with_a_note() {
        // As MIOpen, same/valid replace -p/-q; a different value is noted.
        let cmd = parse("conv -y 3 -x 3 -p 3 -q 1 -z same -F 1").unwrap();
        assert_eq!(cmd.notes.len(), 1, "{:#?}", cmd.notes);
        assert!(
            cmd.notes[0].contains("-p/--pad_h 3") && cmd.notes[0].contains("height padding to 1"),
            "{:#?}",
            cmd.notes
        );
        let Op::Conv(c) = cmd.op else { panic!() };
        assert_eq!(c.padding, [1, 1]);
        let cmd = parse("conv -p 2 -q 0 -z valid -F 1").unwrap();
        assert_eq!(cmd.notes.len(), 1, "{:#?}", cmd.notes);
        assert!(cmd.notes[0].contains("-z valid"), "{:#?}", cmd.notes);

        // Not applied with dilation > 1 and filters > 1, nor to transposed
        // convolutions (as MIOpen): the explicit padding stays, noted.
        for line in [
            "conv -p 2 -q 2 -l 2 -z valid -F 1",
            "conv -m trans -p 2 -q 2 -z same -F 1",
        ] {
            let cmd = parse(line).unwrap();
            let Op::Conv(c) = &cmd.op else { panic!() };
            assert_eq!(c.padding, [2, 2], "{line}");
            assert!(
                cmd.notes
                    .iter()
                    .any(|n| n.contains("-z/--pad_mode") && n.contains("padding is used")),
                "{line}: {:#?}",
                cmd.notes
            );
        }
        assert!(parse("conv -z default -p 1 -F 1").unwrap().notes.is_empty());
    }

    #[test]
    fn output_sizes() {
        assert_eq!(conv_output_size(32, 3, 1, 0, 1), 30);
        assert_eq!(conv_output_size(32, 3, 2, 1, 1), 16);
        assert_eq!(conv_output_size(7, 3, 1, 0, 3), 1);
        assert_eq!(conv_output_size(2, 3, 1, 0, 1), 0);
        assert_eq!(conv_output_size(1, 5, 1, 0, 1), -3);
        assert_eq!(trans_output_size(16, 3, 2, 1, 1, 1), 32);
        assert_eq!(trans_output_size(1, 1, 1, 1, 1, 0), -1);
        let e = err("conv -H 2 -y 3");
        assert!(
            e.contains("impossible shape") && e.contains("height"),
            "{e}"
        );
        let e = err("conv -W 5 -x 3 -j 3");
        assert!(e.contains("width would be -1"), "{e}");
        let e = err("conv -m trans -H 1 -W 1 -y 1 -x 1 -p 1 -q 1");
        assert!(e.contains("impossible shape"), "{e}");
    }

    #[test]
    fn run_options() {
        let cmd = parse("conv -i 7 -t 0 -V 1").unwrap();
        assert_eq!((cmd.iterations, cmd.time, cmd.verify), (7, false, true));
        let cmd = parse("conv --iter 9 --time 1 --verify 0").unwrap();
        assert_eq!((cmd.iterations, cmd.time, cmd.verify), (9, true, false));
        assert!(err("conv -i 0").contains("at least 1"));
        assert!(err("conv --iter many").contains("expected an integer"));
        assert!(parse("gemm -i 3 -t 0 -V 1").unwrap().verify);
        assert_eq!(parse("layernorm -X 2x8 -o 1 -i 3").unwrap().iterations, 3);
    }

    #[test]
    fn ignored_flags_are_noted_when_not_default() {
        let all = "conv -r 1 -s 1 -P 0 -o 1 -d in.bin -e w.bin -a b.bin -D dy.bin -S 42 -G 1 \
                   -U fp8 -T fp8 -R fp8 -C /tmp/cache -w 1";
        let cmd = parse(all).unwrap();
        assert_eq!(cmd.notes.len(), 15, "{:#?}", cmd.notes);
        for flag in [
            "--search",
            "--solution",
            "--gpualloc",
            "--wall",
            "--in_cast_type",
            "--pad_val",
        ] {
            assert!(
                cmd.notes.iter().any(|n| n.contains(flag)),
                "{flag}: {:#?}",
                cmd.notes
            );
        }
        let long = "conv --pad_val 1 --search 1 --printconv 0 --dump_output 1 --in_data in.bin \
                    --weights w.bin --in_bias b.bin --dout_data dy.bin --solution 42 --gpualloc 1 \
                    --in_cast_type fp8 --out_cast_type fp8 --wei_cast_type fp8 \
                    --verification_cache /tmp/cache --wall 1";
        assert_eq!(parse(long).unwrap().notes.len(), 15);
        // At MIOpen's defaults they change nothing and are not noted.
        let cmd = parse("conv -s 0 -S -1 -P 1 -w 0 -G 0 -Z 0 -L 1").unwrap();
        assert!(cmd.notes.is_empty(), "{:?}", cmd.notes);
        // Vectorized layouts are refused.
        assert!(err("conv -Z 1 -L 4").contains("vectorized"));
        assert!(err("conv --vector_length 8").contains("vectorized"));
    }

    #[test]
    fn bad_lines_have_reasons() {
        assert_eq!(err("conv --bogus 1"), "unknown flag `--bogus`");
        assert_eq!(err("conv -K 1"), "unknown flag `-K`");
        assert!(err("conv -n16").contains("next word"));
        assert!(err("conv 16").contains("unexpected word `16`"));
        assert_eq!(err("conv -n"), "flag -n/--batchsize needs a value");
        assert!(err("conv -n 1.5").contains("bad value for -n/--batchsize: expected an integer"));
        assert!(err("conv -n 0").contains("must be at least 1"));
        assert!(err("conv -p -1").contains("must not be negative"));
        assert!(err("conv -u 0").contains("-u/--conv_stride_h"));
        assert!(err("conv -l 0").contains("-l/--dilation_h"));
        // A value may start with a dash: it is always the next word.
        assert!(parse("conv -S -1").unwrap().notes.is_empty());
        // Gemm flags are not conv flags and the reverse.
        assert!(err("conv --transA 1").contains("unknown flag"));
        assert!(err("gemm -g 2").contains("unknown flag"));
    }

    #[test]
    fn huge_values_are_refused_or_saturate_without_panicking() {
        assert!(err("conv -n 99999999999").contains("out of range"));
        assert!(err("layernorm -X 99999999999x2 -o 1").contains("-X/--input"));
        let big = i32::MAX;
        let c = conv_of(&format!(
            "conv -n {big} -c {big} -k {big} -H {big} -W {big} -y 1 -x 1 -u {big} -p {big} -F 1"
        ));
        assert_eq!(c.output_spatial, [3, i32::MAX as u64]);
        // Its FLOP and byte counts saturate too: signature's
        // `huge_sizes_saturate_flops_and_bytes`.
        assert_eq!(
            trans_output_size(u64::MAX, u64::MAX, u64::MAX, 0, 1, 0),
            i64::MAX
        );
    }

    #[test]
    fn layernorm_eps_and_rank_are_bounded() {
        let e = err("layernorm -X 2x8 -o 1 -e 1e300");
        assert!(
            e.contains("bad value for -e/--eps") && e.contains("1e300"),
            "{e}"
        );
        assert!(err("layernorm -X 2x8 -o 1 -e 1e-300").contains("-e/--eps"));
        assert!(err("layernorm -X 2x8 -o 1 -e -1").contains("-e/--eps"));
        assert!(parse("layernorm -X 2x8 -o 1 -e 1e-30").is_ok());
        let e = err("layernorm -X 1x2x3x4x5x6x7x8x9 -o 8");
        assert!(e.contains("9 dimensions, at most 8"), "{e}");
        assert!(parse("layernorm -X 1x2x3x4x5x6x7x8 -o 7").is_ok());
    }

    #[test]
    fn later_flags_win() {
        assert_eq!(conv_of("conv -n 2 --batchsize 3").n, 3);
    }

    #[test]
    fn gemm_commands() {
        let cmd = parse("gemm").unwrap();
        let Op::Gemm(g) = cmd.op else { panic!() };
        assert_eq!((g.m, g.k, g.n), (256, 256, 256));
        assert_eq!(g.dtype, ElemType::F32);
        assert_eq!(g.mode, GemmMode::Forward);
        assert!(!g.trans_a && !g.trans_b);

        let short = parse("gemmfp16 -m 64 -k 32 -n 16 -u 1 -v 0 -F 2").unwrap();
        let long =
            parse("gemmfp16 --a_h 64 --a_w 32 --b_w 16 --transA 1 --transB 0 --forw 2").unwrap();
        assert_eq!(short.op, long.op);
        let Op::Gemm(g) = short.op else { panic!() };
        // As BOO: M from -k/--a_w, K from -m/--a_h.
        assert_eq!((g.m, g.k, g.n), (32, 64, 16));
        assert_eq!(g.dtype, ElemType::F16);
        assert!(g.trans_a && !g.trans_b);
        assert_eq!(g.mode, GemmMode::ABackward);
        let Op::Gemm(g) = parse("gemm -F 3").unwrap().op else {
            panic!()
        };
        assert_eq!(g.mode, GemmMode::BBackward);
        assert!(err("gemm -F 0").contains("gemm takes 1"));
        assert!(err("gemm -m 0").contains("at least 1"));
    }

    #[test]
    fn layernorm_commands() {
        let short = parse("layernormbfp16 -X 32x4x16x16 -e 1e-6 -m 1 -o 3 -F 3").unwrap();
        let long = parse(
            "layernormbfp16 --input 32x4x16x16 --eps 1e-6 --mode 1 --normalized_dim 3 --forw 3",
        )
        .unwrap();
        assert_eq!(short.op, long.op);
        let Op::LayerNorm(l) = short.op else { panic!() };
        assert_eq!(l.dtype, ElemType::BF16);
        assert_eq!(l.input_shape, [32, 4, 16, 16]);
        assert_eq!(l.normalized_shape(), [16]);
        assert_eq!(l.eps, 1e-6);
        assert!(!l.elementwise_affine);
        assert!(l.bias);
        assert_eq!(l.mode, LayerNormMode::WeightBackward);

        let Op::LayerNorm(l) = parse("layernorm -X 2x3x4x5").unwrap().op else {
            panic!()
        };
        assert_eq!(l.dtype, ElemType::F32);
        assert_eq!(l.eps, 1e-5);
        assert!(l.elementwise_affine);
        assert_eq!(l.mode, LayerNormMode::Forward);
        let Op::LayerNorm(l) = parse("layernormfp16 -X 2x3x4x5x6 -o 4 -F 4").unwrap().op else {
            panic!()
        };
        assert_eq!(l.dtype, ElemType::F16);
        assert_eq!(l.mode, LayerNormMode::BiasBackward);

        assert!(err("layernorm").contains("missing -X/--input"));
        assert!(err("layernorm -X 2x0x4").contains("-X/--input"));
        assert!(err("layernorm -X 2,3").contains("-X/--input"));
        assert!(err("layernorm -X 2x3x4x5 -o 2").contains("must be 3"));
        assert!(err("layernorm -X 2x3x4x5 -F 5").contains("layernorm takes"));
        assert!(err("layernorm -X 2x3x4x5 -m 2").contains("-m/--mode"));
        assert!(err("layernorm -X 2x3x4x5 -e 0").contains("positive"));
        assert!(err("layernorm -X 2x3x4x5 -e x").contains("expected a number"));
    }

    #[test]
    fn flag_tables_have_unique_names() {
        for tables in [
            &[CONV_FLAGS, COMMON_FLAGS][..],
            &[GEMM_FLAGS, COMMON_FLAGS][..],
            &[LAYERNORM_FLAGS, COMMON_FLAGS][..],
        ] {
            let specs: Vec<&FlagSpec> = tables.iter().flat_map(|t| t.iter()).collect();
            for (i, a) in specs.iter().enumerate() {
                for b in &specs[i + 1..] {
                    assert_ne!(a.long, b.long);
                    assert_ne!(a.short, b.short, "{} and {}", a.long, b.long);
                }
            }
        }
    }

    #[test]
    fn usage_error_for_the_single_command_form() {
        let e = parse("conv -n 0")
            .unwrap_err()
            .into_usage_error("conv -n 0");
        assert_eq!(e.exit_code(), 2);
        assert!(e.causes[0].contains("at least 1"));
    }
}
