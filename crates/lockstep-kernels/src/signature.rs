//! Op signatures: one kernel per command and direction, with a stable function
//! name in the BOO driver's format, its operands in their layouts, and the work
//! it does (FLOPs, bytes moved) for GFLOP/s and GB/s.
//!
//! Convolution names follow BOO:
//! `conv_{1|2|3}d_{dtype}_{mode}[_b]_{input shape}_{input layout}_{filter shape}_{filter layout}_{output layout}_{strides}s_{pads}p_{dilations}d_{groups}g`
//! where shapes are in their layouts, layouts are lower case with the filter's
//! `n` written `f` and the output's `c` written `f`, per-dimension values are
//! ordered `[[d x] h x] w` (one value for 1-D), the mode is `forward`, `input_backward` or
//! `weight_backward`, and `_b` marks a forward convolution with bias. BOO has no
//! marker for transposed convolutions; lockstep appends
//! `_trans_{output padding}op` so they never share a name (or a cache entry)
//! with a plain convolution.
//!
//! Gemm: `gemm_{dtype}_{mode}_{M}x{K}x{N}[_transA][_transB]` (BOO's format,
//! with BOO's M from `-k` and K from `-m`), operands in the order of BOO's
//! modules: forward `(a, b)`, `a_backward` `(c_grad, b)`, `b_backward`
//! `(c_grad, a)`.
//! Layer norm: `layer_norm_{normalized dims}d_{dtype}_{mode}_{input shape}[_w][_b]`
//! (BOO's format without its empty items and `aten` suffix).

use serde::{Deserialize, Serialize};

use crate::miopen::{
    ConvCommand, ConvMode, Direction, ElemType, GemmCommand, GemmMode, LayerNormCommand,
    LayerNormMode, Op,
};

/// One tensor a kernel reads or writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operand {
    /// Role: `input`, `filter`, `bias`, `output`, `output_grad`, `a`, `mean` ...
    pub name: String,
    /// Sizes, in `layout` order when there is one.
    pub shape: Vec<u64>,
    /// The layout (`NHWC`, ...) for convolution tensors.
    pub layout: Option<String>,
    pub elem: ElemType,
}

impl Operand {
    fn new(name: &str, shape: Vec<u64>, layout: Option<&str>, elem: ElemType) -> Operand {
        Operand {
            name: name.to_string(),
            shape,
            layout: layout.map(str::to_string),
            elem,
        }
    }

    pub fn elements(&self) -> u64 {
        product(self.shape.iter().copied())
    }

    pub fn bytes(&self) -> u64 {
        self.elements().saturating_mul(self.elem.bytes())
    }
}

/// The convolution behind a signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConvSignature {
    pub conv: ConvCommand,
    pub direction: Direction,
    /// Shapes in their layouts.
    pub input_shape: Vec<u64>,
    pub filter_shape: Vec<u64>,
    pub output_shape: Vec<u64>,
}

/// What a signature computes, with every parameter a kernel generator needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum SignatureDetails {
    Conv(Box<ConvSignature>),
    Gemm(GemmCommand),
    #[serde(rename = "layernorm")]
    LayerNorm(LayerNormCommand),
}

/// One kernel to compile and time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpSignature {
    /// Stable function name (BOO format); also the cache key's readable part.
    pub func_name: String,
    /// The mode word in the name (`forward`, `input_backward`, ...).
    pub mode: String,
    pub dtype: ElemType,
    /// The accumulation type: f32 for floating point, i32 for int8.
    pub accumulator: ElemType,
    /// Kernel arguments, in order.
    pub inputs: Vec<Operand>,
    /// Kernel results, in order.
    pub outputs: Vec<Operand>,
    /// Floating-point (or integer) operations, multiply and add counted apart.
    pub flops: u64,
    /// Bytes read and written (every operand once).
    pub bytes: u64,
    pub details: SignatureDetails,
}

impl OpSignature {
    /// The error for a kernel given another kind's signature.
    pub(crate) fn not_a(&self, kind: &str) -> String {
        format!(
            "{}: not a {kind} signature (mode `{}`)",
            self.func_name, self.mode
        )
    }

    /// Refuses a signature whose type is not floating point computed in f32
    /// (`kernel`: its name in the error; `how`: "accumulated", "computed").
    pub(crate) fn require_float_in_f32(&self, kernel: &str, how: &str) -> Result<(), String> {
        if crate::mlir_text::is_float(self.dtype) && self.accumulator == ElemType::F32 {
            return Ok(());
        }
        Err(format!(
            "{}: {kernel} needs a floating-point type {how} in f32, found {} in {}",
            self.func_name,
            self.dtype.mlir(),
            self.accumulator.mlir()
        ))
    }

    fn new(
        func_name: String,
        mode: &str,
        dtype: ElemType,
        inputs: Vec<Operand>,
        outputs: Vec<Operand>,
        flops: u64,
        details: SignatureDetails,
    ) -> OpSignature {
        let bytes = inputs
            .iter()
            .chain(&outputs)
            .map(Operand::bytes)
            .fold(0u64, u64::saturating_add);
        OpSignature {
            func_name,
            mode: mode.to_string(),
            dtype,
            accumulator: dtype.accumulator(),
            inputs,
            outputs,
            flops,
            bytes,
            details,
        }
    }
}

/// The signatures of a command: one per convolution direction, one for gemm
/// and layer norm.
pub fn signatures(op: &Op) -> Vec<OpSignature> {
    match op {
        Op::Conv(conv) => conv
            .directions
            .iter()
            .map(|d| conv_signature(conv, *d))
            .collect(),
        Op::Gemm(gemm) => vec![gemm_signature(gemm)],
        Op::LayerNorm(ln) => vec![layernorm_signature(ln)],
    }
}

/// Product that saturates instead of overflowing (absurd shapes must not panic).
fn product(values: impl IntoIterator<Item = u64>) -> u64 {
    values.into_iter().fold(1u64, u64::saturating_mul)
}

fn join(values: &[u64]) -> String {
    values
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

/// The BOO function name of a convolution in one direction.
pub fn conv_func_name(conv: &ConvCommand, direction: Direction) -> String {
    let mut items = vec![
        "conv".to_string(),
        format!("{}d", conv.spatial_dims),
        conv.dtype.name().to_string(),
        direction.boo_name().to_string(),
    ];
    if conv.bias && direction == Direction::Forward {
        items.push("b".to_string());
    }
    items.extend([
        join(&conv.input_shape()),
        conv.input_layout.as_str().to_ascii_lowercase(),
        join(&conv.filter_shape()),
        conv.filter_layout
            .as_str()
            .to_ascii_lowercase()
            .replace('n', "f"),
        conv.output_layout
            .as_str()
            .to_ascii_lowercase()
            .replace('c', "f"),
        format!("{}s", join(&conv.stride)),
        format!("{}p", join(&conv.padding)),
        format!("{}d", join(&conv.dilation)),
        format!("{}g", conv.groups),
    ]);
    if conv.mode == ConvMode::Trans {
        items.push("trans".to_string());
        items.push(format!("{}op", join(&conv.output_padding)));
    }
    items.join("_")
}

/// Multiply-accumulates of a convolution (the same in every direction).
pub fn conv_macs(conv: &ConvCommand) -> u64 {
    let (spatial, outer, inner) = match conv.mode {
        ConvMode::Conv => (&conv.output_spatial, conv.k, conv.c / conv.groups),
        ConvMode::Trans => (&conv.input_spatial, conv.c, conv.k / conv.groups),
    };
    product(
        [conv.n, outer, inner]
            .into_iter()
            .chain(spatial.iter().copied())
            .chain(conv.filter_spatial.iter().copied()),
    )
}

/// The signature of a convolution in one direction.
pub fn conv_signature(conv: &ConvCommand, direction: Direction) -> OpSignature {
    let dtype = conv.dtype;
    let input_shape = conv.input_shape();
    let filter_shape = conv.filter_shape();
    let output_shape = conv.output_shape();
    let in_layout = Some(conv.input_layout.as_str());
    let fil_layout = Some(conv.filter_layout.as_str());
    let out_layout = Some(conv.output_layout.as_str());
    let x = |name: &str| Operand::new(name, input_shape.clone(), in_layout, dtype);
    let w = |name: &str| Operand::new(name, filter_shape.clone(), fil_layout, dtype);
    let y = |name: &str, elem| Operand::new(name, output_shape.clone(), out_layout, elem);
    let macs = conv_macs(conv);
    let (inputs, outputs, flops) = match direction {
        Direction::Forward => {
            let mut inputs = vec![x("input"), w("filter")];
            let mut flops = macs.saturating_mul(2);
            if conv.bias {
                inputs.push(Operand::new("bias", vec![conv.k], None, dtype));
                flops = flops.saturating_add(product(output_shape.iter().copied()));
            }
            // MIOpen writes int8 convolutions' results as int32.
            let out_elem = if dtype == ElemType::I8 {
                ElemType::I32
            } else {
                dtype
            };
            (inputs, vec![y("output", out_elem)], flops)
        }
        Direction::BackwardData => (
            vec![y("output_grad", dtype), w("filter")],
            vec![x("input_grad")],
            macs.saturating_mul(2),
        ),
        Direction::BackwardWeight => (
            vec![y("output_grad", dtype), x("input")],
            vec![w("filter_grad")],
            macs.saturating_mul(2),
        ),
    };
    OpSignature::new(
        conv_func_name(conv, direction),
        direction.boo_name(),
        dtype,
        inputs,
        outputs,
        flops,
        SignatureDetails::Conv(Box::new(ConvSignature {
            conv: conv.clone(),
            direction,
            input_shape,
            filter_shape,
            output_shape,
        })),
    )
}

/// The BOO function name of a gemm.
pub fn gemm_func_name(gemm: &GemmCommand) -> String {
    let mut items = vec![
        "gemm".to_string(),
        gemm.dtype.name().to_string(),
        gemm.mode.boo_name().to_string(),
        format!("{}x{}x{}", gemm.m, gemm.k, gemm.n),
    ];
    if gemm.trans_a {
        items.push("transA".to_string());
    }
    if gemm.trans_b {
        items.push("transB".to_string());
    }
    items.join("_")
}

/// The signature of a gemm.
pub fn gemm_signature(gemm: &GemmCommand) -> OpSignature {
    let (m, k, n, dtype) = (gemm.m, gemm.k, gemm.n, gemm.dtype);
    let a_shape = if gemm.trans_a { vec![k, m] } else { vec![m, k] };
    let b_shape = if gemm.trans_b { vec![n, k] } else { vec![k, n] };
    let op = |name: &str, shape: &Vec<u64>| Operand::new(name, shape.clone(), None, dtype);
    let c = |name: &str| Operand::new(name, vec![m, n], None, dtype);
    let (inputs, outputs) = match gemm.mode {
        GemmMode::Forward => (vec![op("a", &a_shape), op("b", &b_shape)], vec![c("c")]),
        GemmMode::ABackward => (
            vec![c("c_grad"), op("b", &b_shape)],
            vec![op("a_grad", &a_shape)],
        ),
        // BOO's GEMMBackwardB.forward(grad_output, a).
        GemmMode::BBackward => (
            vec![c("c_grad"), op("a", &a_shape)],
            vec![op("b_grad", &b_shape)],
        ),
    };
    OpSignature::new(
        gemm_func_name(gemm),
        gemm.mode.boo_name(),
        dtype,
        inputs,
        outputs,
        product([2, m, n, k]),
        SignatureDetails::Gemm(gemm.clone()),
    )
}

/// The BOO-style function name of a layer norm.
pub fn layernorm_func_name(ln: &LayerNormCommand) -> String {
    let mut items = vec![
        "layer_norm".to_string(),
        format!("{}d", ln.input_shape.len() - ln.normalized_dim),
        ln.dtype.name().to_string(),
        ln.mode.boo_name().to_string(),
        join(&ln.input_shape),
    ];
    if ln.elementwise_affine {
        items.push("w".to_string());
    }
    if ln.bias {
        items.push("b".to_string());
    }
    items.join("_")
}

/// The signature of a layer norm. FLOPs are estimates per input element:
/// forward 6 (mean, variance, normalization) plus one each for weight and
/// bias; input backward 8 (+1 with a weight); weight backward 4; bias
/// backward 1.
pub fn layernorm_signature(ln: &LayerNormCommand) -> OpSignature {
    let dtype = ln.dtype;
    let x_shape = ln.input_shape.clone();
    let normalized = ln.normalized_shape();
    // Mean and reciprocal standard deviation keep the leading dimensions.
    let aggregate: Vec<u64> = x_shape
        .iter()
        .enumerate()
        .map(|(i, &d)| if i < ln.normalized_dim { d } else { 1 })
        .collect();
    let t = |name: &str, shape: &Vec<u64>| Operand::new(name, shape.clone(), None, dtype);
    let elements = product(x_shape.iter().copied());
    let (w, b) = (ln.elementwise_affine, ln.bias);
    let (inputs, outputs, per_element) = match ln.mode {
        LayerNormMode::Forward => {
            let mut inputs = vec![t("input", &x_shape)];
            if w {
                inputs.push(t("weight", &normalized));
            }
            if b {
                inputs.push(t("bias", &normalized));
            }
            let outputs = vec![
                t("output", &x_shape),
                t("mean", &aggregate),
                t("rstd", &aggregate),
            ];
            (inputs, outputs, 6 + u64::from(w) + u64::from(b))
        }
        LayerNormMode::InputBackward => {
            let mut inputs = vec![t("output_grad", &x_shape), t("input", &x_shape)];
            if w {
                inputs.push(t("weight", &normalized));
            }
            inputs.extend([t("mean", &aggregate), t("rstd", &aggregate)]);
            (inputs, vec![t("input_grad", &x_shape)], 8 + u64::from(w))
        }
        LayerNormMode::WeightBackward => (
            vec![
                t("output_grad", &x_shape),
                t("input", &x_shape),
                t("mean", &aggregate),
                t("rstd", &aggregate),
            ],
            vec![t("weight_grad", &normalized)],
            4,
        ),
        LayerNormMode::BiasBackward => (
            vec![t("output_grad", &x_shape)],
            vec![t("bias_grad", &normalized)],
            1,
        ),
    };
    OpSignature::new(
        layernorm_func_name(ln),
        ln.mode.boo_name(),
        dtype,
        inputs,
        outputs,
        per_element.saturating_mul(elements),
        SignatureDetails::LayerNorm(ln.clone()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::miopen::parse_argv;

    fn sigs(line: &str) -> Vec<OpSignature> {
        let words: Vec<&str> = line.split_whitespace().collect();
        signatures(
            &parse_argv(&words)
                .unwrap_or_else(|e| panic!("{line}: {e}"))
                .op,
        )
    }

    fn names(line: &str) -> Vec<String> {
        sigs(line).into_iter().map(|s| s.func_name).collect()
    }

    const EXAMPLE: &str = "convbfp16 -n 16 -c 96 -H 48 -W 32 -k 288 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 \
                           -l 1 -j 1 -m conv -g 1 -F 1 -t 1 --in_layout NHWC --out_layout NHWC \
                           --fil_layout NHWC";

    #[test]
    fn the_boo_example_name() {
        assert_eq!(
            names(EXAMPLE),
            ["conv_2d_bfloat16_forward_16x48x32x96_nhwc_288x1x1x96_fhwc_nhwf_1x1s_0x0p_1x1d_1g"]
        );
        let sig = &sigs(EXAMPLE)[0];
        assert_eq!(sig.mode, "forward");
        assert_eq!(sig.dtype, ElemType::BF16);
        assert_eq!(sig.accumulator, ElemType::F32);
        let SignatureDetails::Conv(conv) = &sig.details else {
            panic!()
        };
        assert_eq!(conv.input_shape, [16, 48, 32, 96]);
        assert_eq!(conv.filter_shape, [288, 1, 1, 96]);
        assert_eq!(conv.output_shape, [16, 48, 32, 288]);
        assert_eq!(sig.inputs.len(), 2);
        assert_eq!(sig.inputs[0].layout.as_deref(), Some("NHWC"));
        assert_eq!(sig.outputs[0].shape, [16, 48, 32, 288]);
        // 2 * N * K * Ho * Wo * C * Y * X
        assert_eq!(sig.flops, 2 * 16 * 288 * 48 * 32 * 96);
        let bytes = 2 * (16 * 48 * 32 * 96 + 288 * 96 + 16 * 48 * 32 * 288);
        assert_eq!(sig.bytes, bytes);
    }

    #[test]
    fn one_signature_per_direction() {
        let line = EXAMPLE.replace("-F 1", "-F 0");
        assert_eq!(
            names(&line),
            [
                "conv_2d_bfloat16_forward_16x48x32x96_nhwc_288x1x1x96_fhwc_nhwf_1x1s_0x0p_1x1d_1g",
                "conv_2d_bfloat16_input_backward_16x48x32x96_nhwc_288x1x1x96_fhwc_nhwf_1x1s_0x0p_1x1d_1g",
                "conv_2d_bfloat16_weight_backward_16x48x32x96_nhwc_288x1x1x96_fhwc_nhwf_1x1s_0x0p_1x1d_1g",
            ]
        );
        let all = sigs(&line);
        // Same work in every direction, same tensors moved.
        assert!(all
            .iter()
            .all(|s| s.flops == all[0].flops && s.bytes == all[0].bytes));
        let bwd = &all[1];
        assert_eq!(bwd.inputs[0].name, "output_grad");
        assert_eq!(bwd.inputs[1].name, "filter");
        assert_eq!(bwd.outputs[0].name, "input_grad");
        assert_eq!(bwd.outputs[0].shape, [16, 48, 32, 96]);
        let wrw = &all[2];
        assert_eq!(wrw.inputs[1].name, "input");
        assert_eq!(wrw.outputs[0].name, "filter_grad");
        assert_eq!(wrw.outputs[0].shape, [288, 1, 1, 96]);
        assert_eq!(names(&line.replace("-F 0", "-F 6")), names(&line)[1..]);
        assert_eq!(
            names(&line.replace("-F 0", "-F 5")),
            [names(&line)[0].clone(), names(&line)[2].clone()]
        );
    }

    #[test]
    fn default_layouts_strides_pads_groups_and_bias() {
        assert_eq!(
            names("convfp16 -n 2 -c 8 -H 9 -W 10 -k 4 -y 3 -x 3 -u 2 -v 1 -p 1 -q 0 -l 1 -j 2 -g 2 -b 1 -F 3"),
            [
                "conv_2d_float16_forward_b_2x8x9x10_nchw_4x4x3x3_fchw_nfhw_2x1s_1x0p_1x2d_2g",
                "conv_2d_float16_input_backward_2x8x9x10_nchw_4x4x3x3_fchw_nfhw_2x1s_1x0p_1x2d_2g",
            ]
        );
        let fwd = &sigs("conv -n 2 -c 8 -H 9 -W 10 -k 4 -y 3 -x 3 -b 1 -F 1")[0];
        assert_eq!(fwd.inputs[2].name, "bias");
        assert_eq!(fwd.inputs[2].shape, [4]);
        // 2*N*K*Ho*Wo*C*Y*X + N*K*Ho*Wo
        assert_eq!(fwd.flops, 2 * 2 * 4 * 7 * 8 * 8 * 9 + 2 * 4 * 7 * 8);
        assert_eq!(fwd.dtype.name(), "float32");
    }

    #[test]
    fn three_d_names() {
        assert_eq!(
            names("conv -_ 3 -n 1 -c 4 -! 5 -H 6 -W 7 -k 8 -@ 1 -y 3 -x 3 -# 1 -u 2 -v 2 -$ 0 -p 1 -q 1 -I NDHWC -f NDHWC -O NDHWC -F 4"),
            ["conv_3d_float32_weight_backward_1x5x6x7x4_ndhwc_8x1x3x3x4_fdhwc_ndhwf_1x2x2s_0x1x1p_1x1x1d_1g"]
        );
    }

    #[test]
    fn one_d_names() {
        // BOO's 1-D default layout is NCH, and its names spell the layouts
        // as given: the filter `fch`, the output `nfh`.
        assert_eq!(
            names("conv -_ 1 -n 2 -c 4 -H 11 -k 8 -y 3 -F 1"),
            ["conv_1d_float32_forward_2x4x11_nch_8x4x3_fch_nfh_1s_0p_1d_1g"]
        );
        let line = "conv -_ 1 -n 2 -c 8 -H 20 -k 4 -y 3 -u 2 -p 1 -l 2 -g 2 -b 1 -F 1";
        let sig = &sigs(line)[0];
        // (20 + 2 - 2*2 - 1)/2 + 1 = 9 output positions.
        assert_eq!(
            sig.func_name,
            "conv_1d_float32_forward_b_2x8x20_nch_4x4x3_fch_nfh_2s_1p_2d_2g"
        );
        assert_eq!(sig.outputs[0].shape, [2, 4, 9]);
        assert_eq!(sig.inputs[2].shape, [4]);
        // 2*N*K*Ho*(C/g)*Y + N*K*Ho
        assert_eq!(sig.flops, 2 * 2 * 4 * 9 * 4 * 3 + 2 * 4 * 9);
        assert_eq!(sig.bytes, 4 * (2 * 8 * 20 + 4 * 4 * 3 + 4 + 2 * 4 * 9));
        let nhc = line.replace("-F 1", "-F 4 -I NHC -f NHC -O NHC");
        assert_eq!(
            names(&nhc),
            ["conv_1d_float32_weight_backward_2x20x8_nhc_4x3x4_fhc_nhf_2s_1p_2d_2g"]
        );
        // The width layouts take the width flags.
        let ncw = "conv -_ 1 -n 2 -c 8 -W 20 -k 4 -x 3 -v 2 -q 1 -j 2 -g 2 -b 1 -F 1 -I NCW -f NCW -O NCW";
        assert_eq!(
            names(ncw),
            ["conv_1d_float32_forward_b_2x8x20_ncw_4x4x3_fcw_nfw_2s_1p_2d_2g"]
        );
        assert_eq!(sigs(ncw)[0].flops, sig.flops);
        let nwc = ncw.replace("-F 1 -I NCW -f NCW -O NCW", "-F 4 -I NWC -f NWC -O NWC");
        assert_eq!(
            names(&nwc),
            ["conv_1d_float32_weight_backward_2x20x8_nwc_4x3x4_fwc_nwf_2s_1p_2d_2g"]
        );
    }

    #[test]
    fn one_d_transposed_names_are_marked() {
        let line = "convbfp16 -m trans -_ 1 -n 1 -c 16 -W 7 -k 8 -x 3 -v 2 -q 1 -X 1 -g 2 -F 1 \
                    -I NWC -f NWC -O NWC";
        let sig = &sigs(line)[0];
        assert_eq!(
            sig.func_name,
            "conv_1d_bfloat16_forward_1x7x16_nwc_16x3x4_fwc_nwf_2s_1p_1d_2g_trans_1op"
        );
        // 2*(7-1) + (3-1) + 1 - 2 + 1 = 14
        assert_eq!(sig.outputs[0].shape, [1, 14, 8]);
        // N * C * W * (K/g) * X multiply-adds.
        assert_eq!(sig.flops, 2 * 16 * 7 * 4 * 3);
    }

    #[test]
    fn transposed_names_are_marked() {
        let line = "convfp16 -m trans -n 2 -c 16 -H 7 -W 9 -k 8 -y 3 -x 3 -u 2 -v 2 -p 1 -q 1 -Y 1 -X 0 -g 2 -F 1";
        let sig = &sigs(line)[0];
        assert_eq!(
            sig.func_name,
            "conv_2d_float16_forward_2x16x7x9_nchw_16x4x3x3_fchw_nfhw_2x2s_1x1p_1x1d_2g_trans_1x0op"
        );
        assert_eq!(sig.outputs[0].shape, [2, 8, 14, 17]);
        // N * C * H * W * (K/g) * Y * X multiply-adds.
        assert_eq!(sig.flops, 2 * 2 * 16 * 7 * 9 * 4 * 3 * 3);
        let plain = line
            .replace("-m trans", "-m conv")
            .replace(" -Y 1 -X 0", "");
        assert!(!names(&plain)[0].contains("trans"));
    }

    #[test]
    fn huge_sizes_saturate_flops_and_bytes() {
        // miopen's `huge_values_are_refused_or_saturate_without_panicking`
        // parses this line; its counts saturate instead of overflowing.
        let big = i32::MAX;
        let sigs = sigs(&format!(
            "conv -n {big} -c {big} -k {big} -H {big} -W {big} -y 1 -x 1 -u {big} -p {big} -F 1"
        ));
        assert_eq!(sigs[0].flops, u64::MAX);
        assert_eq!(sigs[0].bytes, u64::MAX);
    }

    #[test]
    fn int8_accumulates_and_writes_int32() {
        let sig = &sigs("convint8 -n 1 -c 4 -H 8 -W 8 -k 4 -y 1 -x 1 -F 1")[0];
        assert!(sig
            .func_name
            .starts_with("conv_2d_int8_forward_1x4x8x8_nchw"));
        assert_eq!(sig.accumulator, ElemType::I32);
        assert_eq!(sig.outputs[0].elem, ElemType::I32);
        assert_eq!(sig.bytes, 256 + 16 + 256 * 4);
        assert_eq!(sig.dtype.mlir(), "i8");
    }

    #[test]
    fn gemm_signatures() {
        // BOO's parser makes A [a_w, a_h]: M is the -k value, K the -m value.
        let sig = &sigs("gemm -m 8 -k 12 -n 4")[0];
        assert_eq!(sig.func_name, "gemm_float32_forward_12x8x4");
        assert_eq!(sig.outputs[0].shape, [12, 4]);

        let sig = &sigs("gemmfp16 -k 64 -m 32 -n 16")[0];
        assert_eq!(sig.func_name, "gemm_float16_forward_64x32x16");
        assert_eq!(sig.inputs[0].shape, [64, 32]);
        assert_eq!(sig.inputs[1].shape, [32, 16]);
        assert_eq!(sig.outputs[0].shape, [64, 16]);
        assert_eq!(sig.flops, 2 * 64 * 32 * 16);
        assert_eq!(sig.bytes, 2 * (64 * 32 + 32 * 16 + 64 * 16));
        assert_eq!(sig.accumulator, ElemType::F32);

        let sig = &sigs("gemm -k 64 -m 32 -n 16 -u 1 -v 1 -F 2")[0];
        assert_eq!(
            sig.func_name,
            "gemm_float32_a_backward_64x32x16_transA_transB"
        );
        assert_eq!(sig.inputs[0].name, "c_grad");
        assert_eq!(sig.inputs[0].shape, [64, 16]);
        assert_eq!(sig.inputs[1].shape, [16, 32]);
        assert_eq!(sig.outputs[0].shape, [32, 64]);

        // b_backward takes (grad_output, a), as BOO's GEMMBackwardB.
        let sig = &sigs("gemm -k 64 -m 32 -n 16 -u 1 -F 3")[0];
        assert_eq!(sig.func_name, "gemm_float32_b_backward_64x32x16_transA");
        let inputs: Vec<(&str, &[u64])> = sig
            .inputs
            .iter()
            .map(|o| (o.name.as_str(), o.shape.as_slice()))
            .collect();
        assert_eq!(inputs, [("c_grad", &[64, 16][..]), ("a", &[32, 64][..])]);
        assert_eq!(sig.outputs[0].name, "b_grad");
        assert_eq!(sig.outputs[0].shape, [32, 16]);
    }

    #[test]
    fn layernorm_signatures() {
        let sig = &sigs("layernormbfp16 -X 4x8x16 -o 2")[0];
        assert_eq!(sig.func_name, "layer_norm_1d_bfloat16_forward_4x8x16_w_b");
        assert_eq!(sig.inputs.len(), 3);
        assert_eq!(sig.inputs[1].shape, [16]);
        assert_eq!(sig.outputs[1].shape, [4, 8, 1]);
        assert_eq!(sig.flops, 8 * 4 * 8 * 16);
        assert_eq!(
            sig.bytes,
            2 * (4 * 8 * 16 + 16 + 16 + 4 * 8 * 16 + 4 * 8 + 4 * 8)
        );
        let sig = &sigs("layernorm -X 4x8x16 -o 2 -m 1 -F 2")[0];
        assert_eq!(
            sig.func_name,
            "layer_norm_1d_float32_input_backward_4x8x16_b"
        );
        assert_eq!(sig.inputs.len(), 4);
        let sig = &sigs("layernorm -X 4x8x16 -o 2 -F 3")[0];
        assert_eq!(sig.outputs[0].name, "weight_grad");
        let sig = &sigs("layernorm -X 4x8x16 -o 2 -F 4")[0];
        assert_eq!(
            sig.func_name,
            "layer_norm_1d_float32_bias_backward_4x8x16_w_b"
        );
        assert_eq!(sig.outputs[0].shape, [16]);
    }

    #[test]
    fn signatures_round_trip_through_json() {
        for line in [EXAMPLE, "gemm -F 2", "layernorm -X 2x3x4x5"] {
            for sig in sigs(line) {
                let json = serde_json::to_string(&sig).unwrap();
                let back: OpSignature = serde_json::from_str(&json).unwrap();
                assert_eq!(back, sig);
            }
        }
        let json = serde_json::to_value(&sigs(EXAMPLE)[0]).unwrap();
        assert_eq!(json["details"]["op"], "conv");
        assert_eq!(json["details"]["direction"], "forward");
        assert_eq!(json["dtype"], "bf16");
        assert_eq!(json["inputs"][0]["layout"], "NHWC");
    }
}
