//! The f64 reference of convolution kernels: a direct convolution of a
//! signature's inputs that gives each output element and the sum `S` its
//! tolerance scales with (`compare`).
//!
//! The reference matches the MLIR generator ([`crate::conv_mlir`]) exactly:
//! forward `y[n,g,k,o] += x_pad[n,g,c,o*s+f*d] * w[g,k,c,f]` (+ `bias[g*K/G+k]`),
//! backward data and backward weight as its gradients with respect to `x` and
//! `w`. A transposed convolution (`-m trans`) is computed directly as the
//! scatter `y[n,g,k,i*s+f*d-p] += x[n,g,c,i] * w[g,c,k,f]` with MIOpen's
//! transposed filter (`C x K/G`, the group outermost in its `C`) and `y`
//! sized `s*(I-1) + d*(F-1) + 1 - 2p + op` (the output padding `op` extends
//! it at the high end), not by the generator's mapping onto a plain
//! convolution; its backward data and weight are again the gradients with
//! respect to `x` and `w`. Inputs ([`crate::tensor_data`]) are exactly
//! representable in their element type (small integers for int8, multiples
//! of 1/8 in [-2, 2] for floats), so the reference computed in f64 from them
//! is the exact result.

use crate::miopen::{Axis, ConvCommand, ConvMode, Direction, Layout};
use crate::signature::{OpSignature, SignatureDetails};

/// Element strides of a tensor in `layout` with `channels` channels:
/// `(batch, channel, [spatial...])` in `[[D,] H,] W` order.
fn strides(layout: Layout, batch: u64, channels: u64, spatial: &[u64]) -> (u64, u64, Vec<u64>) {
    let shape = layout.arrange(batch, channels, spatial);
    let (mut sn, mut sc, mut ss) = (0, 0, vec![0; spatial.len()]);
    let mut stride = 1;
    for (axis, size) in layout.axes().into_iter().zip(&shape).rev() {
        match axis {
            Axis::Batch => sn = stride,
            Axis::Channel => sc = stride,
            Axis::Spatial(j) => ss[j] = stride,
        }
        stride *= size;
    }
    (sn, sc, ss)
}

/// Calls `visit` with every multi-index below `sizes`, last dimension
/// fastest, one at a time: a window of a million taps is never a million
/// vectors in memory.
fn each_index(sizes: &[u64], mut visit: impl FnMut(&[u64])) {
    if sizes.contains(&0) {
        return;
    }
    let mut index = vec![0u64; sizes.len()];
    loop {
        visit(&index);
        let mut j = sizes.len();
        loop {
            let Some(prev) = j.checked_sub(1) else {
                return;
            };
            j = prev;
            index[j] += 1;
            if index[j] < sizes[j] {
                break;
            }
            index[j] = 0;
        }
    }
}

/// Direct convolution in f64 of `inputs` (one vector per operand of
/// `sig.inputs`, in layout order, already rounded to their types): the
/// reference output of the signature's direction, and for each output element
/// the sum `S` of the absolute values of its products (`|x*w|`, `|dy*w|` or
/// `|dy*x|`, plus `|bias|` for a forward convolution with bias).
pub fn conv_reference(
    sig: &OpSignature,
    inputs: &[Vec<f64>],
) -> Result<(Vec<f64>, Vec<f64>), String> {
    let name = &sig.func_name;
    let SignatureDetails::Conv(cs) = &sig.details else {
        return Err(sig.not_a("convolution"));
    };
    let conv = &cs.conv;
    let s = conv.spatial_dims;
    if !conv.dims_agree() {
        return Err(format!(
            "{name}: per-dimension values or layouts do not match {s} spatial dimensions"
        ));
    }
    if conv.groups == 0
        || !conv.c.is_multiple_of(conv.groups)
        || !conv.k.is_multiple_of(conv.groups)
    {
        return Err(format!(
            "{name}: {} groups do not divide C={} and K={}",
            conv.groups, conv.c, conv.k
        ));
    }
    let (cg, kg) = (conv.c / conv.groups, conv.k / conv.groups);
    // The filter's outer (layout letter N) and inner (letter C) channels:
    // K x C/G, or MIOpen's transposed C x K/G.
    let (w_outer, w_inner) = match conv.mode {
        ConvMode::Conv => (conv.k, cg),
        ConvMode::Trans => (conv.c, kg),
    };
    let x_shape = conv
        .input_layout
        .arrange(conv.n, conv.c, &conv.input_spatial);
    let w_shape = conv
        .filter_layout
        .arrange(w_outer, w_inner, &conv.filter_spatial);
    let y_shape = conv
        .output_layout
        .arrange(conv.n, conv.k, &conv.output_spatial);
    if cs.input_shape != x_shape || cs.filter_shape != w_shape || cs.output_shape != y_shape {
        return Err(format!(
            "{name}: operand shapes do not match the convolution parameters"
        ));
    }
    let bias = conv.bias && cs.direction == Direction::Forward;
    let (a_shape, b_shape, out_shape) = match cs.direction {
        Direction::Forward => (&x_shape, &w_shape, &y_shape),
        Direction::BackwardData => (&y_shape, &w_shape, &x_shape),
        Direction::BackwardWeight => (&y_shape, &x_shape, &w_shape),
    };
    // Saturating: a shape too large to hold can never match the inputs.
    let count = |shape: &[u64]| {
        let elements = shape.iter().fold(1u64, |a, &b| a.saturating_mul(b));
        usize::try_from(elements).unwrap_or(usize::MAX)
    };
    let mut expected = vec![a_shape.clone(), b_shape.clone()];
    if bias {
        expected.push(vec![conv.k]);
    }
    let operands: Vec<&Vec<u64>> = sig.inputs.iter().map(|o| &o.shape).collect();
    if operands.len() != expected.len()
        || operands.iter().zip(&expected).any(|(a, b)| *a != b)
        || sig.outputs.len() != 1
        || sig.outputs[0].shape != *out_shape
    {
        return Err(format!("{name}: operands do not match the convolution"));
    }
    if inputs.len() != expected.len() {
        return Err(format!(
            "{name}: {} input vectors for {} operands",
            inputs.len(),
            expected.len()
        ));
    }
    for (i, (values, shape)) in inputs.iter().zip(&expected).enumerate() {
        if values.len() != count(shape) {
            return Err(format!(
                "{name}: input {i} has {} values, its operand {} elements",
                values.len(),
                count(shape)
            ));
        }
    }

    let (xn, xc, xs) = strides(conv.input_layout, conv.n, conv.c, &conv.input_spatial);
    let (wo_stride, wi_stride, ws) =
        strides(conv.filter_layout, w_outer, w_inner, &conv.filter_spatial);
    let (yn, yk, ys) = strides(conv.output_layout, conv.n, conv.k, &conv.output_spatial);
    let dot = |coords: &[u64], strides: &[u64]| -> u64 {
        coords.iter().zip(strides).map(|(c, s)| c * s).sum()
    };
    // The filter element joining input channel c and output channel k of
    // group g.
    let filter_channels = |g: u64, c: u64, k: u64| -> u64 {
        match conv.mode {
            ConvMode::Conv => (g * kg + k) * wo_stride + c * wi_stride,
            ConvMode::Trans => (g * cg + c) * wo_stride + k * wi_stride,
        }
    };
    let out_elements = out_shape.iter().fold(1u64, |a, &b| a.saturating_mul(b));
    let mut out = crate::compare::zeros(out_elements, name)?;
    let mut sums = crate::compare::zeros(out_elements, name)?;
    let (a, b) = (&inputs[0], &inputs[1]);
    for_each_tap(conv, |x_pos, y_pos, f| {
        let (x_sp, y_sp, w_sp) = (dot(x_pos, &xs), dot(y_pos, &ys), dot(f, &ws));
        for n in 0..conv.n {
            for g in 0..conv.groups {
                for k in 0..kg {
                    let yo = (n * yn + (g * kg + k) * yk + y_sp) as usize;
                    for c in 0..cg {
                        let xo = (n * xn + (g * cg + c) * xc + x_sp) as usize;
                        let wo = (filter_channels(g, c, k) + w_sp) as usize;
                        let (ai, bi, oi) = match cs.direction {
                            Direction::Forward => (xo, wo, yo),
                            Direction::BackwardData => (yo, wo, xo),
                            Direction::BackwardWeight => (yo, xo, wo),
                        };
                        let product = a[ai] * b[bi];
                        out[oi] += product;
                        sums[oi] += product.abs();
                    }
                }
            }
        }
    });
    if bias {
        let mut positions = Vec::new();
        each_index(&conv.output_spatial, |o| positions.push(dot(o, &ys)));
        for n in 0..conv.n {
            for k in 0..conv.k {
                for y_sp in &positions {
                    let yo = (n * yn + k * yk + y_sp) as usize;
                    out[yo] += inputs[2][k as usize];
                    sums[yo] += inputs[2][k as usize].abs();
                }
            }
        }
    }
    Ok((out, sums))
}

/// Calls `visit(input position, output position, filter tap)` for every
/// pair of positions the convolution multiplies together; positions in the
/// zero padding are left out.
///
/// A convolution's output `o` reads input `o*s + f*d - p`; a transposed
/// convolution's input `i` scatters into output `i*s + f*d - p` (its output
/// padding only makes the output longer at the high end).
fn for_each_tap(conv: &ConvCommand, mut visit: impl FnMut(&[u64], &[u64], &[u64])) {
    let s = conv.spatial_dims;
    let (from, to) = match conv.mode {
        ConvMode::Conv => (&conv.output_spatial, &conv.input_spatial),
        ConvMode::Trans => (&conv.input_spatial, &conv.output_spatial),
    };
    each_index(from, |a| {
        each_index(&conv.filter_spatial, |f| {
            let reached: Option<Vec<u64>> = (0..s)
                .map(|j| {
                    let pos = i128::from(a[j]) * i128::from(conv.stride[j])
                        + i128::from(f[j]) * i128::from(conv.dilation[j])
                        - i128::from(conv.padding[j]);
                    u64::try_from(pos).ok().filter(|&p| p < to[j])
                })
                .collect();
            let Some(b) = reached else { return };
            match conv.mode {
                ConvMode::Conv => visit(&b, a, f),
                ConvMode::Trans => visit(a, &b, f),
            }
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor_data::inputs;
    use crate::testing::sig;

    fn run(line: &str, inputs: &[Vec<f64>]) -> (Vec<f64>, Vec<f64>) {
        conv_reference(&sig(line), inputs).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn seq(n: usize) -> Vec<f64> {
        (1..=n).map(|v| v as f64).collect()
    }

    const BASE: &str = "conv -n 1 -c 1 -H 3 -W 3 -k 1 -y 2 -x 2 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1";

    #[test]
    fn forward_by_hand() {
        // x = 1..9 (3x3), w = 1..4 (2x2): y[i,j] = sum x[i+a, j+b] * w[a, b].
        let (y, s) = run(&format!("{BASE} -F 1"), &[seq(9), seq(4)]);
        assert_eq!(y, [37.0, 47.0, 67.0, 77.0]);
        assert_eq!(s, y);
        // Negative values: S sums magnitudes.
        let x = vec![1.0, -2.0, 3.0, -4.0, 5.0, -6.0, 7.0, -8.0, 9.0];
        let (y, s) = run(&format!("{BASE} -F 1"), &[x, seq(4)]);
        // y00 = 1*1 - 2*2 - 4*3 + 5*4
        assert_eq!(y[0], 1.0 - 4.0 - 12.0 + 20.0);
        assert_eq!(s[0], 1.0 + 4.0 + 12.0 + 20.0);
    }

    #[test]
    fn backward_data_by_hand() {
        // dx[i] = sum over o + f = i of dy[o] * w[f] (a full correlation).
        let (dx, s) = run(&format!("{BASE} -F 2"), &[seq(4), seq(4)]);
        assert_eq!(dx, [1.0, 4.0, 4.0, 6.0, 20.0, 16.0, 9.0, 24.0, 16.0]);
        assert_eq!(s, dx);
    }

    #[test]
    fn backward_weight_by_hand() {
        // dw[f] = sum_o dy[o] * x[o + f]; inputs are (dy, x).
        let (dw, _) = run(&format!("{BASE} -F 4"), &[seq(4), seq(9)]);
        assert_eq!(dw, [37.0, 47.0, 67.0, 77.0]);
    }

    #[test]
    fn stride_pad_dilation_by_hand() {
        // Pad 1, stride 2: rows/cols read are {-1, 0} and {1, 2}.
        let line = BASE.replace("-p 0 -q 0 -u 1 -v 1", "-p 1 -q 1 -u 2 -v 2");
        let (y, _) = run(&format!("{line} -F 1"), &[seq(9), seq(4)]);
        assert_eq!(y, [4.0, 2.0 * 3.0 + 3.0 * 4.0, 4.0 * 2.0 + 7.0 * 4.0, 77.0]);
        // Dilation 2: the taps are the four corners.
        let line = BASE.replace("-l 1 -j 1", "-l 2 -j 2");
        let (y, _) = run(&format!("{line} -F 1"), &[seq(9), seq(4)]);
        assert_eq!(y, [1.0 + 3.0 * 2.0 + 7.0 * 3.0 + 9.0 * 4.0]);
        // Backward data with stride 2 and pad 1 is the transpose of the
        // forward: <y(x), dy> == <x, dx(dy)> for any x and dy.
        let line = "conv -n 1 -c 2 -H 5 -W 4 -k 3 -y 3 -x 2 -p 1 -q 1 -u 2 -v 1 -l 1 -j 2";
        assert_adjoint(line);
    }

    /// The three directions of `line` (without `-F`) are each other's
    /// adjoints: <y(x), dy> == <x, dx(dy)> == <w, dw(dy, x)>, and not
    /// trivially (all zero).
    fn assert_adjoint(line: &str) {
        let fwd = sig(&format!("{line} -F 1"));
        let data = inputs(&fwd, 7);
        let (y, _) = conv_reference(&fwd, &data).unwrap();
        let dy = inputs(&fwd, 8)[0].clone();
        let dy: Vec<f64> = dy.iter().cycle().take(y.len()).copied().collect();
        let (dx, _) = run(&format!("{line} -F 2"), &[dy.clone(), data[1].clone()]);
        let (dw, _) = run(&format!("{line} -F 4"), &[dy.clone(), data[0].clone()]);
        let inner = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f64>();
        assert_ne!(inner(&y, &dy), 0.0, "{line}");
        assert_eq!(inner(&y, &dy), inner(&data[0], &dx), "{line}");
        assert_eq!(inner(&y, &dy), inner(&data[1], &dw), "{line}");
    }

    #[test]
    fn groups_and_bias() {
        // Two groups of one channel with 1x1 filters: y[k] = x[k] * w[k] + b[k].
        let line = "conv -n 1 -c 2 -H 1 -W 1 -k 2 -y 1 -x 1 -g 2 -F 1";
        let (y, _) = run(line, &[vec![3.0, 5.0], vec![2.0, 7.0]]);
        assert_eq!(y, [6.0, 35.0]);
        let (y, s) = run(
            &format!("{line} -b 1"),
            &[vec![3.0, 5.0], vec![2.0, 7.0], vec![-1.0, 0.5]],
        );
        assert_eq!(y, [5.0, 35.5]);
        assert_eq!(s, [7.0, 35.5]);
        // One group mixes channels: w is 2x2 (K x C).
        let line = "conv -n 1 -c 2 -H 1 -W 1 -k 2 -y 1 -x 1 -g 1 -F 1";
        let (y, _) = run(line, &[vec![3.0, 5.0], vec![1.0, 2.0, 3.0, 4.0]]);
        assert_eq!(y, [3.0 + 10.0, 9.0 + 20.0]);
    }

    /// A 1-D convolution along W is a 2-D one of height 1, and NCW and NWC
    /// hold their elements in the order of NCHW and NHWC with H = 1; one
    /// along H is a 2-D one of width 1, NCH and NHC in the order of NCHW and
    /// NHWC with W = 1: both references agree on the same data in every
    /// direction, plain and transposed.
    #[test]
    fn one_d_is_two_d_of_size_one() {
        let along_w = [("-_ 1", "-H 1 -y 1"), ("NWC", "NHWC"), ("NCW", "NCHW")];
        let along_h = [("-_ 1", "-W 1 -x 1"), ("NHC", "NHWC"), ("NCH", "NCHW")];
        let lines = [
            (
                "conv -_ 1 -n 2 -c 4 -W 9 -k 6 -x 3 -v 2 -q 1 -j 2 -g 2 -b 1 -I NWC -f NCW -O NWC",
                along_w,
            ),
            (
                "conv -_ 1 -m trans -n 2 -c 4 -W 5 -k 6 -x 3 -v 2 -q 1 -X 1 -g 2 -b 1 -I NCW -f NWC -O NCW",
                along_w,
            ),
            (
                "conv -_ 1 -n 2 -c 4 -H 9 -k 6 -y 3 -u 2 -p 1 -l 2 -g 2 -b 1 -I NHC -f NCH -O NHC",
                along_h,
            ),
            (
                "conv -_ 1 -m trans -n 2 -c 4 -H 5 -k 6 -y 3 -u 2 -p 1 -Y 1 -g 2 -b 1 -I NCH -f NHC -O NCH",
                along_h,
            ),
        ];
        for (line, replacements) in lines {
            for forw in [1, 2, 4] {
                let one_d = format!("{line} -F {forw}");
                let two_d = replacements
                    .iter()
                    .fold(one_d.clone(), |l, (from, to)| l.replace(from, to));
                let one = sig(&one_d);
                let data = inputs(&one, 3);
                let (values, sums) = run(&one_d, &data);
                assert!(values.iter().any(|v| *v != 0.0), "{one_d}: trivial");
                assert_eq!((values, sums), run(&two_d, &data), "{one_d}");
            }
        }
    }

    /// A transposed convolution along W only (H = 1): x = [1, 2, 3].
    const TRANS: &str = "conv -m trans -n 1 -c 1 -H 1 -W 3 -k 1 -y 1 -p 0 -u 1 -l 1";

    #[test]
    fn transposed_forward_by_hand() {
        let x = vec![1.0, 2.0, 3.0];
        let w = vec![1.0, 2.0];
        // Stride 2: y[2i + f] += x[i] * w[f], out = 2*(3-1) + (2-1) + 1 = 6.
        let (y, s) = run(
            &format!("{TRANS} -x 2 -v 2 -q 0 -F 1"),
            &[x.clone(), w.clone()],
        );
        assert_eq!(y, [1.0, 2.0, 2.0, 4.0, 3.0, 6.0]);
        assert_eq!(s, y);
        // Padding 1 drops y[-1] and y[5]: out = 6 - 2 = 4.
        let (y, _) = run(
            &format!("{TRANS} -x 2 -v 2 -q 1 -F 1"),
            &[x.clone(), w.clone()],
        );
        assert_eq!(y, [2.0, 2.0, 4.0, 3.0]);
        // Output padding 1 adds y[4] at the high end, which x[2]*w[1] reaches ...
        let (y, _) = run(
            &format!("{TRANS} -x 2 -v 2 -q 1 -X 1 -F 1"),
            &[x.clone(), w.clone()],
        );
        assert_eq!(y, [2.0, 2.0, 4.0, 3.0, 6.0]);
        // ... and without padding a new element no tap reaches, left zero.
        let (y, _) = run(
            &format!("{TRANS} -x 2 -v 2 -q 0 -X 1 -F 1"),
            &[x.clone(), w.clone()],
        );
        assert_eq!(y, [1.0, 2.0, 2.0, 4.0, 3.0, 6.0, 0.0]);
        // Dilation 2, stride 1: y[i + 2f] += x[i] * w[f], out = 2 + 2 + 1 = 5.
        let (y, _) = run(&format!("{TRANS} -x 2 -v 1 -j 2 -q 0 -F 1"), &[x, w]);
        assert_eq!(y, [1.0, 2.0, 3.0 + 2.0, 4.0, 6.0]);
    }

    #[test]
    fn transposed_backward_by_hand() {
        let line = format!("{TRANS} -x 2 -v 2 -q 0");
        // Backward data gathers what the forward scattered:
        // dx[i] = dy[2i] * w[0] + dy[2i + 1] * w[1].
        let (dx, s) = run(&format!("{line} -F 2"), &[seq(6), vec![1.0, 2.0]]);
        assert_eq!(dx, [1.0 + 4.0, 3.0 + 8.0, 5.0 + 12.0]);
        assert_eq!(s, dx);
        // dw[f] = sum_i x[i] * dy[2i + f]; inputs are (dy, x).
        let (dw, _) = run(&format!("{line} -F 4"), &[seq(6), vec![1.0, 2.0, 3.0]]);
        assert_eq!(dw, [1.0 + 6.0 + 15.0, 2.0 + 8.0 + 18.0]);
    }

    #[test]
    fn transposed_filter_is_c_by_k_per_group() {
        // One group: w is C x K, y[k] = sum_c x[c] * w[c, k] (a plain
        // convolution's K x C filter would give [13, 29]).
        let line = "conv -m trans -n 1 -c 2 -H 1 -W 1 -k 2 -y 1 -x 1 -g 1 -F 1";
        let (y, _) = run(line, &[vec![3.0, 5.0], vec![1.0, 2.0, 3.0, 4.0]]);
        assert_eq!(y, [3.0 + 15.0, 6.0 + 20.0]);
        // Two groups, C = 2, K = 4: w is C x K/G = 2 x 2, channel c of x
        // feeds outputs 2c and 2c + 1: y[2g + k] = x[g] * w[g, k].
        let line = "conv -m trans -n 1 -c 2 -H 1 -W 1 -k 4 -y 1 -x 1 -g 2 -F 1";
        let (y, _) = run(line, &[vec![3.0, 5.0], vec![1.0, 2.0, 3.0, 4.0]]);
        assert_eq!(y, [3.0, 6.0, 15.0, 20.0]);
        // With a bias of K entries.
        let (y, s) = run(
            &format!("{line} -b 1"),
            &[
                vec![3.0, 5.0],
                vec![1.0, 2.0, 3.0, 4.0],
                vec![1.0, -1.0, 0.5, 0.0],
            ],
        );
        assert_eq!(y, [4.0, 5.0, 15.5, 20.0]);
        assert_eq!(s, [4.0, 7.0, 15.5, 20.0]);
    }

    #[test]
    fn transposed_directions_are_adjoint() {
        // <y(x), dy> == <x, dx(dy)> == <w, dw(dy, x)>, with stride, padding,
        // dilation, output padding (reached by taps in H, not in W) and groups.
        let line = "conv -m trans -_ 3 -n 2 -c 4 -! 2 -H 3 -W 4 -k 6 -@ 2 -y 3 -x 2 \
                    -# 1 -u 2 -v 2 -$ 0 -p 2 -q 0 -^ 2 -l 1 -j 1 -% 1 -Y 1 -X 1 -g 2 \
                    -I NDHWC -f NCDHW -O NDHWC";
        assert_adjoint(line);
    }

    #[test]
    fn transposed_forward_is_plain_backward_data() {
        // x [2, 6, 4, 5] -> y [2, 4, 8, 10] with filter 6 x 2 x 3 x 3 is the
        // plain convolution's backward data with 4 input channels of 8 x 10
        // (output padding 1 < stride 2 keeps its output at 4 x 5).
        let trans = "conv -m trans -n 2 -c 6 -H 4 -W 5 -k 4 -y 3 -x 3 -u 2 -v 2 -p 1 -q 1 \
                     -Y 1 -X 1 -g 2 -F 1";
        let plain = "conv -n 2 -c 4 -H 8 -W 10 -k 6 -y 3 -x 3 -u 2 -v 2 -p 1 -q 1 -g 2 -F 2";
        let t = sig(trans);
        let p = sig(plain);
        assert_eq!(p.inputs[0].shape, t.inputs[0].shape);
        assert_eq!(p.inputs[1].shape, t.inputs[1].shape);
        let data = inputs(&t, 3);
        let (y, sums) = conv_reference(&t, &data).unwrap();
        assert_eq!(conv_reference(&p, &data).unwrap(), (y.clone(), sums));
        // The high-end output-padding row and column are reached (pad 1).
        let last_row = &y[8 * 10 - 10..8 * 10];
        assert!(last_row.iter().any(|v| *v != 0.0), "{last_row:?}");
    }

    /// Reorders a tensor given in NCHW to NHWC.
    fn nchw_to_nhwc(values: &[f64], c: usize, h: usize, w: usize) -> Vec<f64> {
        let mut out = vec![0.0; values.len()];
        for (i, v) in values.iter().enumerate() {
            let (b, ch, y, x) = (i / (c * h * w), i / (h * w) % c, i / w % h, i % w);
            out[((b * h + y) * w + x) * c + ch] = *v;
        }
        out
    }

    #[test]
    fn layouts_permute_the_same_values() {
        let params = "-n 2 -c 4 -H 5 -W 6 -k 6 -y 3 -x 2 -p 1 -q 0 -u 2 -v 1 -l 1 -j 2 -g 2";
        let trans = "-m trans -n 2 -c 4 -H 3 -W 4 -k 6 -y 3 -x 2 -p 1 -q 0 -u 2 -v 1 -l 1 -j 2 \
                     -Y 1 -X 1 -g 2";
        for (params, dir) in [params, trans]
            .into_iter()
            .flat_map(|p| ["1", "2", "4"].map(|d| (p, d)))
        {
            let nchw = format!("conv {params} -I NCHW -f NCHW -O NCHW");
            let nhwc = format!("conv {params} -I NHWC -f NHWC -O NHWC");
            let s1 = sig(&format!("{nchw} -F {dir}"));
            let s2 = sig(&format!("{nhwc} -F {dir}"));
            let data = inputs(&s1, 3);
            let perm = |v: &[f64], shape: &[u64]| {
                let d: Vec<usize> = shape.iter().map(|&x| x as usize).collect();
                nchw_to_nhwc(v, d[1], d[2], d[3])
            };
            let (a_shape, b_shape) = (&s1.inputs[0].shape, &s1.inputs[1].shape);
            let out_shape = &s1.outputs[0].shape;
            let (r1, sum1) = conv_reference(&s1, &data).unwrap();
            let (r2, sum2) =
                conv_reference(&s2, &[perm(&data[0], a_shape), perm(&data[1], b_shape)]).unwrap();
            assert_eq!(perm(&r1, out_shape), r2, "{params} -F {dir}");
            assert_eq!(perm(&sum1, out_shape), sum2, "{params} -F {dir}");
            assert!(r1.iter().any(|v| *v != 0.0));
        }
    }

    #[test]
    fn wrong_signatures_and_inputs_are_errors() {
        let s = sig(&format!("{BASE} -F 1"));
        assert!(conv_reference(&s, &[seq(9)])
            .unwrap_err()
            .contains("input vectors"));
        assert!(conv_reference(&s, &[seq(8), seq(4)])
            .unwrap_err()
            .contains("8 values"));
        let err = conv_reference(&sig("gemm -m 4 -k 4 -n 4"), &[]).unwrap_err();
        assert!(err.contains("not a convolution"), "{err}");
        // A transposed convolution's filter is C x K/G: the plain K x C/G
        // shape is refused.
        let mut t = sig("conv -m trans -n 1 -c 4 -H 5 -W 5 -k 8 -y 3 -x 3 -u 2 -v 2 -g 2 -F 1");
        assert_eq!(t.inputs[1].shape, [4, 4, 3, 3]);
        let data = inputs(&t, 0);
        assert!(conv_reference(&t, &data).is_ok());
        let SignatureDetails::Conv(cs) = &mut t.details else {
            panic!()
        };
        cs.filter_shape = vec![8, 2, 3, 3];
        t.inputs[1].shape = vec![8, 2, 3, 3];
        let err = conv_reference(&t, &data).unwrap_err();
        assert!(err.contains("shapes do not match"), "{err}");
    }

    /// End to end with the real tools: generated modules compiled for the
    /// host CPU and run on encoded inputs must pass `compare`.
    mod iree {
        use super::*;
        use crate::compare::{compare, OutputCheck};
        use crate::conv_mlir::conv_module;
        use crate::miopen::ElemType;

        /// Compiles and runs `sig` on `inputs(sig, seed)`; returns the
        /// decoded output and the reference with its sums.
        fn execute(sig: &OpSignature, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
            let name = &sig.func_name;
            let text = conv_module(sig).unwrap_or_else(|e| panic!("{name}: {e}"));
            let data = inputs(sig, seed);
            let got = crate::testing::execute(sig, &text, &data).remove(0);
            let (reference, sums) = conv_reference(sig, &data).unwrap();
            (got, reference, sums)
        }

        fn check(line: &str) -> (OpSignature, Vec<f64>, Vec<f64>, OutputCheck) {
            let sig = sig(line);
            let (got, reference, sums) = execute(&sig, 42);
            assert_eq!(got.len(), reference.len(), "{line}: output size");
            let verdict = compare(&sig, &got, &reference, &sums);
            assert!(verdict.passed, "{line}: {verdict:?}");
            assert!(reference.iter().any(|v| *v != 0.0), "{line}: trivial");
            (sig, got, reference, verdict)
        }

        #[test]
        fn f32_directions_pass() {
            let lines = [
                // forward with groups, stride, padding, dilation and bias
                "conv -n 2 -c 4 -H 7 -W 6 -k 6 -y 3 -x 3 -u 2 -v 1 -p 1 -q 1 -l 1 -j 2 -g 2 -b 1 -F 1 -I NHWC -f NHWC -O NCHW",
                // backward data, strided with groups
                "conv -n 2 -c 4 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 2 -F 2",
                // backward weight, strided and dilated
                "conv -n 2 -c 4 -H 7 -W 7 -k 4 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -l 2 -j 2 -F 4 -I NHWC -f NHWC -O NHWC",
            ];
            std::thread::scope(|scope| {
                let jobs: Vec<_> = lines
                    .iter()
                    .map(|line| scope.spawn(move || check(line)))
                    .collect();
                for job in jobs {
                    let (_, got, reference, verdict) = job.join().unwrap();
                    // Exact inputs, f32 accumulation: the results are exact.
                    assert_eq!(got, reference, "{verdict:?}");
                }
            });
        }

        /// Checks every line and requires results equal to the reference:
        /// exact inputs and f32 accumulation leave nothing to round.
        fn assert_exact(lines: &[&str]) {
            for (line, (got, reference, verdict)) in lines.iter().zip(check_all(lines)) {
                assert_eq!(got, reference, "{line}: {verdict:?}");
            }
        }

        /// Checks every line in its own thread (compiles dominate).
        fn check_all(lines: &[&str]) -> Vec<(Vec<f64>, Vec<f64>, OutputCheck)> {
            std::thread::scope(|scope| {
                let jobs: Vec<_> = lines
                    .iter()
                    .map(|line| scope.spawn(move || check(line)))
                    .collect();
                jobs.into_iter()
                    .map(|job| {
                        let (_, got, reference, verdict) = job.join().unwrap();
                        (got, reference, verdict)
                    })
                    .collect()
            })
        }

        #[test]
        fn transposed_f32_directions_pass() {
            let lines = [
                // forward: stride 2, padding, output padding reached by taps,
                // groups, bias, NHWC
                "conv -m trans -n 2 -c 4 -H 4 -W 5 -k 6 -y 3 -x 3 -u 2 -v 2 -p 1 -q 1 -Y 1 -X 1 -g 2 -b 1 -F 1 -I NHWC -f NHWC -O NHWC",
                // forward: dilation, output padding beyond the stride (below
                // the dilation) that no tap reaches, padding past the filter's
                // reach in W, mixed layouts
                "conv -m trans -n 1 -c 4 -H 5 -W 4 -k 4 -y 3 -x 2 -u 1 -v 2 -p 2 -q 2 -l 2 -j 1 -Y 1 -X 0 -F 1 -I NCHW -f NHWC -O NHWC",
                // backward data: stride 2, groups, output padding, NCHW
                "conv -m trans -n 2 -c 4 -H 4 -W 4 -k 6 -y 3 -x 3 -u 2 -v 2 -p 1 -q 0 -Y 1 -X 0 -g 2 -F 2",
                // backward weight: stride, dilation, output padding, groups
                "conv -m trans -n 2 -c 4 -H 4 -W 3 -k 4 -y 3 -x 2 -u 2 -v 1 -p 1 -q 1 -l 1 -j 2 -Y 1 -X 1 -g 2 -F 4 -I NHWC -f NHWC -O NHWC",
                // backward weight, NCHW with depthwise groups
                "conv -m trans -n 2 -c 4 -H 3 -W 4 -k 8 -y 2 -x 3 -u 2 -v 2 -p 0 -q 1 -X 1 -g 4 -F 4",
                // 3-D forward with output padding in depth and height
                "conv -_ 3 -m trans -n 1 -c 4 -! 3 -H 3 -W 4 -k 4 -@ 2 -y 3 -x 3 -# 2 -u 2 -v 1 -$ 0 -p 1 -q 1 -% 1 -Y 1 -X 0 -g 2 -F 1 -I NDHWC -f NDHWC -O NDHWC",
                // 3-D backward data and weight, NCDHW
                "conv -_ 3 -m trans -n 1 -c 4 -! 2 -H 3 -W 3 -k 4 -@ 2 -y 2 -x 3 -# 2 -u 1 -v 2 -$ 1 -p 0 -q 1 -X 1 -F 2",
                "conv -_ 3 -m trans -n 2 -c 4 -! 2 -H 3 -W 3 -k 2 -@ 2 -y 2 -x 3 -# 2 -u 1 -v 2 -$ 0 -p 1 -q 1 -% 1 -F 4",
            ];
            assert_exact(&lines);
        }

        /// Transposed convolutions with long filters (more taps than input
        /// positions: the generator reduces over the input, not the taps),
        /// in one or both dimensions, with strides, padding, dilation,
        /// output padding and groups; and a 5,000-tap 1-D one.
        #[test]
        fn transposed_wide_windows_pass() {
            assert_exact(&[
                "conv -m trans -n 1 -c 2 -H 3 -W 2 -k 2 -y 40 -x 3 -u 3 -v 1 -p 2 -q 1 -l 2 -j 1 -F 1",
                "conv -m trans -n 2 -c 4 -H 2 -W 1 -k 4 -y 9 -x 17 -u 2 -v 2 -p 1 -q 3 -g 2 -Y 1 -F 1 -I NHWC -f NHWC -O NHWC",
                "conv -_ 1 -m trans -n 1 -c 2 -W 2 -k 2 -x 5000 -v 3 -q 7 -F 1 -I NCW -f NCW -O NCW",
            ]);
        }

        #[test]
        fn transposed_low_precision_passes() {
            let lines = [
                "convfp16 -m trans -n 1 -c 8 -H 4 -W 4 -k 8 -y 3 -x 3 -u 2 -v 2 -p 1 -q 1 -Y 1 -X 1 -g 2 -b 1 -F 1 -I NHWC -f NHWC -O NHWC",
                "convbfp16 -m trans -n 1 -c 8 -H 5 -W 5 -k 4 -y 3 -x 3 -u 2 -v 2 -p 1 -q 1 -Y 1 -F 2",
                "convbfp16 -m trans -n 2 -c 4 -H 4 -W 4 -k 4 -y 2 -x 2 -u 2 -v 2 -X 1 -F 4 -I NHWC -f NHWC -O NHWC",
                "convfp16 -_ 3 -m trans -n 1 -c 4 -! 2 -H 3 -W 3 -k 4 -@ 2 -y 3 -x 2 -# 2 -u 2 -v 1 -$ 1 -p 1 -q 0 -F 4",
                "convint8 -m trans -n 1 -c 8 -H 4 -W 4 -k 4 -y 3 -x 3 -u 2 -v 2 -p 1 -q 1 -Y 1 -X 1 -g 2 -b 1 -F 1 -I NHWC -f NHWC -O NHWC",
            ];
            let results = check_all(&lines);
            // int8 accumulates in i32 and writes i32: exact.
            let (got, reference, _) = &results[4];
            assert_eq!(got, reference);
        }

        #[test]
        fn bf16_forward_passes_within_its_tolerance() {
            let line = "convbfp16 -n 2 -c 16 -H 8 -W 8 -k 8 -y 3 -x 3 -p 1 -q 1 -F 1 -I NHWC -f NHWC -O NHWC";
            let (mut sig, got, reference, verdict) = check(line);
            // The output really was rounded to bf16 ...
            assert!(verdict.max_abs > 0.0, "{verdict:?}");
            assert!(verdict.max_rel <= 2f64.powi(-8), "{verdict:?}");
            // ... so f32's tolerance would reject it.
            sig.outputs[0].elem = ElemType::F32;
            let strict = compare(&sig, &got, &reference, &vec![0.0; got.len()]);
            assert!(!strict.passed, "{strict:?}");
        }

        #[test]
        fn one_d_f32_directions_pass() {
            let lines = [
                // forward: stride, padding, dilation, groups, bias; NWC in, NCW out
                "conv -_ 1 -n 2 -c 4 -W 11 -k 6 -x 3 -v 2 -q 1 -j 2 -g 2 -b 1 -F 1 -I NWC -f NWC -O NCW",
                // forward, NCW implied by the layouts
                "conv -n 2 -c 3 -W 8 -k 4 -x 3 -q 1 -F 1 -I NCW -f NCW -O NCW",
                // backward data: stride, padding, groups, NCW (the other
                // layouts implied)
                "conv -_ 1 -n 2 -c 4 -W 10 -k 4 -x 3 -v 2 -q 1 -g 2 -F 2 -I NCW",
                // backward data: dilation, padding beyond the filter's reach
                // (dy is cropped, not padded), NWC
                "conv -_ 1 -n 1 -c 4 -W 9 -k 2 -x 3 -v 2 -q 5 -j 2 -F 2 -I NWC -f NCW -O NWC",
                // backward weight: stride, padding, dilation, groups, NWC
                "conv -_ 1 -n 2 -c 4 -W 12 -k 4 -x 3 -v 2 -q 1 -j 2 -g 2 -F 4 -I NWC -f NWC -O NWC",
                // backward weight, NCW
                "conv -_ 1 -n 2 -c 4 -W 9 -k 6 -x 2 -q 1 -F 4 -I NCW -f NCW -O NCW",
            ];
            assert_exact(&lines);
        }

        /// 1-D along H: NCH (BOO's 1-D default) and NHC, with the height
        /// flags.
        #[test]
        fn one_d_along_h_f32_directions_pass() {
            let lines = [
                // forward: stride, padding, dilation, groups, bias; NCH by default
                "conv -_ 1 -n 2 -c 4 -H 11 -k 6 -y 3 -u 2 -p 1 -l 2 -g 2 -b 1 -F 1",
                // forward, NHC implied by the layout given
                "conv -n 2 -c 3 -H 8 -k 4 -y 3 -p 1 -F 1 -I NHC",
                // backward data: stride, padding, groups, NHC in, NCH filter
                "conv -_ 1 -n 2 -c 4 -H 10 -k 4 -y 3 -u 2 -p 1 -g 2 -F 2 -I NHC -f NCH -O NHC",
                // backward weight: stride, padding, dilation, NHC
                "conv -_ 1 -n 2 -c 4 -H 12 -k 4 -y 3 -u 2 -p 1 -l 2 -F 4 -I NHC -f NHC -O NHC",
            ];
            assert_exact(&lines);
        }

        #[test]
        fn one_d_transposed_f32_directions_pass() {
            let lines = [
                // forward: stride, padding, output padding, groups, bias, NWC
                "conv -_ 1 -m trans -n 2 -c 4 -W 5 -k 6 -x 3 -v 2 -q 1 -X 1 -g 2 -b 1 -F 1 -I NWC -f NWC -O NWC",
                // backward data: dilation, output padding, groups, NCH
                "conv -_ 1 -m trans -n 2 -c 4 -H 4 -k 4 -y 3 -u 2 -p 1 -l 2 -Y 1 -g 2 -F 2",
                // backward weight: output padding below a stride of 3, mixed layouts
                "conv -_ 1 -m trans -n 2 -c 4 -W 4 -k 6 -x 2 -v 3 -X 2 -F 4 -I NCW -f NWC -O NWC",
            ];
            assert_exact(&lines);
        }

        #[test]
        fn one_d_bf16_and_int8_pass() {
            let lines = [
                "convbfp16 -_ 1 -n 2 -c 16 -W 16 -k 8 -x 5 -q 2 -b 1 -F 1 -I NWC -f NWC -O NWC",
                "convint8 -_ 1 -n 1 -c 8 -H 10 -k 4 -y 3 -p 1 -l 2 -g 2 -F 1",
            ];
            let results = check_all(&lines);
            // The bf16 output really was rounded ...
            assert!(results[0].2.max_abs > 0.0, "{:?}", results[0].2);
            // ... and int8 accumulates in i32 and writes i32: exact.
            let (got, reference, _) = &results[1];
            assert_eq!(got, reference);
        }

        #[test]
        fn f16_and_int8_pass() {
            for line in [
                "convfp16 -n 1 -c 8 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1 -g 2 -F 4",
                "convint8 -n 1 -c 8 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1 -F 1 -I NHWC -f NHWC -O NHWC",
            ] {
                check(line);
            }
        }
    }
}
