//! MLIR for convolution signatures: linalg on tensors, one `func.func` named
//! after the signature, its arguments and result as in the signature.
//!
//! Every direction is one `linalg.generic` with explicit indexing maps, which
//! covers any layout the parser accepts (each operand's dimensions are
//! addressed by their layout letters), groups (the grouped channel dimension
//! is expanded to `[G, C/G]` with `tensor.expand_shape` and collapsed back
//! afterwards), strides, dilations, padding and 1-D, 2-D or 3-D spatial
//! sizes:
//!
//! - forward: `y[n, g, k, o] += x_pad[n, g, c, o*s + f*d] * w[g, k, c, f]`,
//!   the input zero-padded with `tensor.pad`;
//! - backward data (`input_backward`): `dx[n, g, c, i] += dy[n, g, k, o] *
//!   w[g, k, c, f]` over `o*s + f*d - p = i`, as one generic whose index
//!   expressions only add (tiling mishandles negative coefficients). Along
//!   each spatial dimension it reduces over the shorter of the filter taps
//!   and dy's positions: over the taps, dy is dilated by the stride and
//!   padded by `(F-1)*d - p` (a strided `tensor.insert_slice` into zeros;
//!   negative padding drops elements) and read at `i + f*d` against the
//!   filter reversed along that dimension; over dy (more taps than dy
//!   positions, as in the transposed convolution of a small input), the
//!   filter is dilated by `d` into zeros and read at
//!   `i + o*s + max(p - (O-1)*s, 0)` against dy reversed. Reversals are a
//!   `linalg.generic` that reads with `tensor.extract` at the mirrored
//!   index, so no op is emitted per tap: the module's size does not depend
//!   on the filter's, and the work is `I*min(F, O)` per dimension;
//! - backward weight (`weight_backward`):
//!   `dw[g, k, c, f] += dy[n, g, k, o] * x_pad[n, g, c, o*s + f*d]`.
//!
//! Products are formed and accumulated in the signature's accumulator type
//! (f32 for f16/bf16, i32 for int8): operands are extended inside the generic
//! body and the result truncated to the output's element type at the end
//! (int8 forward results stay i32, as MIOpen writes them). A forward bias is
//! added in the accumulator type before the truncation.
//!
//! A transposed convolution (`-m trans`) is generated as the plain
//! convolution with the roles of input and output swapped: its input `x`
//! (C channels) is that convolution's output, its output `y` (K channels,
//! `s*(I-1) + d*(F-1) + 1 - 2p + op` per spatial dimension) that
//! convolution's input, and its filter, MIOpen's `C x K/G x F` (the `N`
//! layout letter is C, grouped as `[G, C/G]`), that convolution's `K x C/G`
//! filter. So the transposed forward is the backward data above, `y` taking
//! `dx`'s place (the output padding's `op` elements at the high end of each
//! spatial dimension get whatever taps reach them, zero otherwise), the
//! transposed backward data is the forward, and the transposed backward
//! weight is the backward weight with the operands `dy` and `x` exchanged.
//!
//! The MLIR-text helpers it shares with the other ops are in `mlir_text`;
//! `kernel` picks this generator for convolution signatures.

use crate::miopen::{Axis, ConvMode, Direction, ElemType, Layout};
use crate::mlir_text::{convert, is_float, list, multiply_accumulate, tensor_type, zero, Body};
use crate::signature::{ConvSignature, OpSignature, SignatureDetails};

/// The MLIR module of a convolution signature.
pub fn conv_module(sig: &OpSignature) -> Result<String, String> {
    let SignatureDetails::Conv(conv_sig) = &sig.details else {
        return Err(sig.not_a("convolution"));
    };
    Conv::new(sig, conv_sig)?.module()
}

/// The elements of the padded or dilated copies a convolution's module
/// makes of its operands (saturating), which it needs beside its operands;
/// zero for other signatures or ones the generator refuses.
pub fn conv_scratch_elements(sig: &OpSignature) -> u64 {
    let SignatureDetails::Conv(conv_sig) = &sig.details else {
        return 0;
    };
    Conv::new(sig, conv_sig)
        .and_then(|conv| conv.scratch_elements())
        .unwrap_or(0)
}

/// Which tensor an operand is, for its layout letters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Input or input gradient: `N`, `C` (grouped), spatial.
    Input,
    /// Filter or filter gradient: `N` = K (grouped), `C` = C/G, spatial.
    Filter,
    /// Output or output gradient: `N`, `C` = K (grouped), spatial.
    Output,
}

struct Conv<'a> {
    sig: &'a OpSignature,
    direction: Direction,
    spatial: usize,
    n: u64,
    c: u64,
    k: u64,
    groups: u64,
    input_spatial: Vec<u64>,
    filter_spatial: Vec<u64>,
    output_spatial: Vec<u64>,
    stride: Vec<u64>,
    padding: Vec<u64>,
    dilation: Vec<u64>,
    input_layout: Layout,
    filter_layout: Layout,
    output_layout: Layout,
    dtype: ElemType,
    acc: ElemType,
    /// A forward bias, added to the result's channels (`bias_channels`).
    bias: bool,
    bias_channels: u64,
    /// The arguments read as the generic's first and second data operands:
    /// (x, w) forward, (dy, w) backward data, (dy, x) backward weight.
    operands: [&'static str; 2],
}

/// One affine expression `sum(coef * dim) + constant`, printed for MLIR.
fn affine(terms: &[(usize, i128)], constant: i128) -> String {
    let mut parts: Vec<String> = terms
        .iter()
        .filter(|(_, coef)| *coef != 0)
        .map(|&(dim, coef)| {
            if coef == 1 {
                format!("d{dim}")
            } else {
                format!("d{dim} * {coef}")
            }
        })
        .collect();
    if constant != 0 || parts.is_empty() {
        parts.push(constant.to_string());
    }
    parts.join(" + ")
}

/// An operand of the main generic: its (expanded) shape, the affine
/// expression of each dimension and how the expanded dimensions collapse
/// back to the layout's.
struct Access {
    shape: Vec<u64>,
    exprs: Vec<String>,
    reassociation: Vec<Vec<usize>>,
}

impl Access {
    fn reassociation_text(&self) -> String {
        let groups: Vec<String> = self
            .reassociation
            .iter()
            .map(|g| format!("[{}]", list(g)))
            .collect();
        format!("[{}]", groups.join(", "))
    }

    fn expanded(&self) -> bool {
        self.reassociation.len() != self.shape.len()
    }
}

impl<'a> Conv<'a> {
    fn new(sig: &'a OpSignature, cs: &ConvSignature) -> Result<Conv<'a>, String> {
        let conv = &cs.conv;
        let name = &sig.func_name;
        let spatial = conv.spatial_dims;
        let layouts = [conv.input_layout, conv.filter_layout, conv.output_layout];
        if !(1..=3).contains(&spatial) || layouts.iter().any(|l| l.spatial_dims() != spatial) {
            return Err(format!(
                "{name}: layouts {}/{}/{} do not match {spatial} spatial dimensions",
                layouts[0].as_str(),
                layouts[1].as_str(),
                layouts[2].as_str()
            ));
        }
        if !conv.dims_agree() {
            return Err(format!(
                "{name}: per-dimension values do not have {spatial} entries"
            ));
        }
        let positive = [conv.n, conv.c, conv.k, conv.groups]
            .iter()
            .chain(&conv.input_spatial)
            .chain(&conv.filter_spatial)
            .chain(&conv.output_spatial)
            .chain(&conv.stride)
            .chain(&conv.dilation)
            .all(|&v| v > 0);
        if !positive {
            return Err(format!(
                "{name}: sizes, strides and dilations must be positive"
            ));
        }
        if !conv.c.is_multiple_of(conv.groups) || !conv.k.is_multiple_of(conv.groups) {
            return Err(format!(
                "{name}: {} groups do not divide C={} and K={}",
                conv.groups, conv.c, conv.k
            ));
        }
        let acc = sig.dtype.accumulator();
        if sig.accumulator != acc {
            return Err(format!(
                "{name}: accumulator {} for {} is not supported",
                sig.accumulator.mlir(),
                sig.dtype.mlir()
            ));
        }
        let bias = conv.bias && cs.direction == Direction::Forward;
        let this = Conv {
            sig,
            direction: cs.direction,
            spatial,
            n: conv.n,
            c: conv.c,
            k: conv.k,
            groups: conv.groups,
            input_spatial: conv.input_spatial.clone(),
            filter_spatial: conv.filter_spatial.clone(),
            output_spatial: conv.output_spatial.clone(),
            stride: conv.stride.clone(),
            padding: conv.padding.clone(),
            dilation: conv.dilation.clone(),
            input_layout: conv.input_layout,
            filter_layout: conv.filter_layout,
            output_layout: conv.output_layout,
            dtype: sig.dtype,
            acc,
            bias,
            bias_channels: conv.k,
            operands: ["%arg0", "%arg1"],
        };
        this.check_operands(cs)?;
        let this = match conv.mode {
            ConvMode::Conv => this,
            ConvMode::Trans => this.into_plain(),
        };
        this.check_reach()?;
        Ok(this)
    }

    /// The plain convolution that computes this transposed one: input and
    /// output (sizes, layouts, channel counts) exchange places, which makes
    /// MIOpen's transposed `C x K/G` filter the plain `K x C/G` one, and the
    /// directions map as the module documentation says.
    fn into_plain(mut self) -> Conv<'a> {
        std::mem::swap(&mut self.c, &mut self.k);
        std::mem::swap(&mut self.input_spatial, &mut self.output_spatial);
        std::mem::swap(&mut self.input_layout, &mut self.output_layout);
        self.direction = match self.direction {
            Direction::Forward => Direction::BackwardData,
            Direction::BackwardData => Direction::Forward,
            Direction::BackwardWeight => {
                // The plain dy is the transposed x (second argument).
                self.operands = ["%arg1", "%arg0"];
                Direction::BackwardWeight
            }
        };
        self
    }

    /// Every output position's taps must lie in the padded input (the plain
    /// view; a transposed convolution's output size always satisfies it).
    fn check_reach(&self) -> Result<(), String> {
        for j in 0..self.spatial {
            if self.reach(j) > self.wide(&self.input_spatial, j) + 2 * self.wide(&self.padding, j) {
                return Err(format!(
                    "{}: output size {} does not fit the padded input along dimension {j}",
                    self.sig.func_name, self.output_spatial[j]
                ));
            }
            // Every size and offset the generators derive stays below
            // these, so checking them here keeps MLIR's 64-bit shapes.
            self.dimension(self.reach(j), j)?;
            self.dimension(self.reach(j) + self.wide(&self.input_spatial, j), j)?;
        }
        Ok(())
    }

    /// Value `j` of a per-dimension list, widened so that sums and
    /// products of sizes cannot overflow.
    fn wide(&self, values: &[u64], j: usize) -> i128 {
        values.get(j).map_or(0, |&v| i128::from(v))
    }

    /// The extent of the input the plain convolution's taps reach along
    /// dimension `j`: `(O-1)*s + (F-1)*d + 1`.
    fn reach(&self, j: usize) -> i128 {
        (self.wide(&self.output_spatial, j) - 1) * self.wide(&self.stride, j)
            + (self.wide(&self.filter_spatial, j) - 1) * self.wide(&self.dilation, j)
            + 1
    }

    /// The signature's operands must be the tensors this generator reads and
    /// writes (shapes in their layouts, element types), in order. Checked in
    /// the command's own terms, before a transposed convolution is mapped
    /// onto a plain one.
    fn check_operands(&self, cs: &ConvSignature) -> Result<(), String> {
        let x = (cs.input_shape.clone(), self.dtype);
        let w = (cs.filter_shape.clone(), self.dtype);
        let y = (cs.output_shape.clone(), self.dtype);
        let (mut inputs, output) = match self.direction {
            Direction::Forward => {
                let out_elem = if self.dtype == ElemType::I8 {
                    ElemType::I32
                } else {
                    self.dtype
                };
                (vec![x, w], (cs.output_shape.clone(), out_elem))
            }
            Direction::BackwardData => (vec![y, w], x),
            Direction::BackwardWeight => (vec![y, x], w),
        };
        if self.bias {
            inputs.push((vec![self.bias_channels], self.dtype));
        }
        let got_inputs: Vec<(Vec<u64>, ElemType)> = self
            .sig
            .inputs
            .iter()
            .map(|o| (o.shape.clone(), o.elem))
            .collect();
        let got_outputs: Vec<(Vec<u64>, ElemType)> = self
            .sig
            .outputs
            .iter()
            .map(|o| (o.shape.clone(), o.elem))
            .collect();
        if got_inputs != inputs || got_outputs != vec![output] {
            return Err(format!(
                "{}: operands do not match the convolution ({:?} -> {:?})",
                self.sig.func_name, got_inputs, got_outputs
            ));
        }
        // Shapes in layouts must agree with the computed ones; MIOpen's
        // transposed filter is C x K/G.
        let g = self.groups;
        let (filter_outer, filter_inner) = match cs.conv.mode {
            ConvMode::Conv => (self.k, self.c / g),
            ConvMode::Trans => (self.c, self.k / g),
        };
        let expected_x = self.input_layout_shape(&self.input_spatial);
        let expected_w =
            self.filter_layout
                .arrange(filter_outer, filter_inner, &self.filter_spatial);
        let expected_y = self.output_layout_shape(&self.output_spatial);
        if cs.input_shape != expected_x
            || cs.filter_shape != expected_w
            || cs.output_shape != expected_y
        {
            return Err(format!(
                "{}: operand shapes do not match the convolution parameters",
                self.sig.func_name
            ));
        }
        Ok(())
    }

    /// The filter as every direction reads or writes it: loops `g`, `k`
    /// and `c` index its group, output and input channels, `f(j)` its
    /// taps.
    fn filter_access(&self, g: usize, k: usize, c: usize, f: &dyn Fn(usize) -> usize) -> Access {
        let taps: Vec<String> = (0..self.spatial).map(|j| format!("d{}", f(j))).collect();
        self.access(
            self.filter_layout,
            Role::Filter,
            None,
            g,
            k,
            Some(c),
            &self.filter_spatial,
            &taps,
        )
    }

    /// The access of a tensor in `layout` with role `role`: `batch` is the
    /// iteration dimension of N (for the input and output), `group`, `outer`
    /// (K for filter/output, C/G for input) and `inner` (C/G, filter only),
    /// `spatial_sizes` its spatial sizes and `spatial_exprs` their expressions.
    #[allow(clippy::too_many_arguments)]
    fn access(
        &self,
        layout: Layout,
        role: Role,
        batch: Option<usize>,
        group: usize,
        grouped: usize,
        inner: Option<usize>,
        spatial_sizes: &[u64],
        spatial_exprs: &[String],
    ) -> Access {
        let mut shape = Vec::new();
        let mut exprs = Vec::new();
        let mut reassociation = Vec::new();
        let g = self.groups;
        for axis in layout.axes() {
            let start = shape.len();
            match (axis, role) {
                (Axis::Batch, Role::Filter) => {
                    shape.extend([g, self.k / g]);
                    exprs.extend([format!("d{group}"), format!("d{grouped}")]);
                }
                (Axis::Channel, Role::Filter) => {
                    shape.push(self.c / g);
                    exprs.push(format!("d{}", inner.expect("filter inner dim")));
                }
                (Axis::Batch, _) => {
                    shape.push(self.n);
                    exprs.push(format!("d{}", batch.expect("batch dim")));
                }
                (Axis::Channel, Role::Input) => {
                    shape.extend([g, self.c / g]);
                    exprs.extend([format!("d{group}"), format!("d{grouped}")]);
                }
                (Axis::Channel, _) => {
                    shape.extend([g, self.k / g]);
                    exprs.extend([format!("d{group}"), format!("d{grouped}")]);
                }
                (Axis::Spatial(j), _) => {
                    shape.push(spatial_sizes[j]);
                    exprs.push(spatial_exprs[j].clone());
                }
            }
            reassociation.push((start..shape.len()).collect());
        }
        Access {
            shape,
            exprs,
            reassociation,
        }
    }

    fn module(&self) -> Result<String, String> {
        let mut body = Body::default();
        let args: Vec<String> = self
            .sig
            .inputs
            .iter()
            .enumerate()
            .map(|(i, o)| format!("%arg{i}: {}", tensor_type(&o.shape, o.elem)))
            .collect();
        let out = &self.sig.outputs[0];
        let result = match self.direction {
            Direction::Forward => self.forward(&mut body)?,
            Direction::BackwardData => self.backward_data(&mut body)?,
            Direction::BackwardWeight => self.backward_weight(&mut body)?,
        };
        let result_type = tensor_type(&out.shape, out.elem);
        body.line(&format!("return {result} : {result_type}"));
        Ok(format!(
            "module {{\n  func.func @{}({}) -> {result_type} {{\n{}  }}\n}}\n",
            self.sig.func_name,
            list(args),
            body.text
        ))
    }

    /// Zero-pads the input (`%arg` in the input layout) for forward and
    /// backward-weight; returns the padded value and its spatial sizes.
    fn pad_input(&self, body: &mut Body, arg: &str) -> Result<(String, Vec<u64>), String> {
        let mut low = Vec::new();
        let mut high = Vec::new();
        let mut padded = Vec::new();
        for j in 0..self.spatial {
            let (size, lo) = (
                self.wide(&self.input_spatial, j),
                self.wide(&self.padding, j),
            );
            let hi = (self.reach(j) - size - lo).max(0);
            low.push(self.dimension(lo, j)?);
            high.push(self.dimension(hi, j)?);
            padded.push(self.dimension(size + lo + hi, j)?);
        }
        if low.iter().chain(&high).all(|&p| p == 0) {
            return Ok((arg.to_string(), padded));
        }
        let per_letter = |values: &[u64]| self.input_layout.arrange(0, 0, values);
        let src = tensor_type(&self.input_layout_shape(&self.input_spatial), self.dtype);
        let dst = tensor_type(&self.input_layout_shape(&padded), self.dtype);
        let cst = body.fresh("pad_value");
        body.line(&format!("{cst} = arith.constant {}", zero(self.dtype)));
        let value = body.fresh("padded");
        let rank = self.input_layout.axes().len();
        let block_args = list((0..rank).map(|i| format!("%i{i}: index")));
        body.line(&format!(
            "{value} = tensor.pad {arg} low[{}] high[{}] {{",
            list(per_letter(&low)),
            list(per_letter(&high))
        ));
        body.line(&format!("^bb0({block_args}):"));
        body.line(&format!("  tensor.yield {cst} : {}", self.dtype.mlir()));
        body.line(&format!("}} : {src} to {dst}"));
        Ok((value, padded))
    }

    /// `tensor.expand_shape` of `value` (in `layout_shape`) to the access's
    /// expanded shape, when it has a grouped dimension.
    fn expand(
        &self,
        body: &mut Body,
        value: &str,
        layout_shape: &[u64],
        access: &Access,
        elem: ElemType,
    ) -> String {
        if !access.expanded() {
            return value.to_string();
        }
        let out = body.fresh("expanded");
        body.line(&format!(
            "{out} = tensor.expand_shape {value} {} output_shape [{}] : {} into {}",
            access.reassociation_text(),
            list(&access.shape),
            tensor_type(layout_shape, elem),
            tensor_type(&access.shape, elem)
        ));
        out
    }

    /// Both operands `(value, layout shape, access)` expanded to their
    /// access's shape, contracted over `(dims, parallel)` iteration dims into
    /// the output `(access, layout, layout shape)`, and converted to the
    /// output's layout and type.
    fn expand_and_contract(
        &self,
        body: &mut Body,
        (dims, parallel): (usize, usize),
        a: (&str, &[u64], &Access),
        b: (&str, &[u64], &Access),
        (out, layout, out_shape): (&Access, Layout, &[u64]),
    ) -> Result<String, String> {
        let a_value = self.expand(body, a.0, a.1, a.2, self.dtype);
        let b_value = self.expand(body, b.0, b.1, b.2, self.dtype);
        let result = self.contraction(
            body,
            dims,
            parallel,
            (&a_value, a.2),
            (&b_value, b.2),
            out,
            out_shape,
        )?;
        self.finish(body, &result, layout, out_shape)
    }

    /// The main generic: `result[out] += a[..] * b[..]` over `dims`
    /// iteration dimensions, the first `parallel` of them parallel. Returns
    /// the accumulator-typed result collapsed back to `out_layout_shape`.
    #[allow(clippy::too_many_arguments)]
    fn contraction(
        &self,
        body: &mut Body,
        dims: usize,
        parallel: usize,
        a: (&str, &Access),
        b: (&str, &Access),
        out: &Access,
        out_layout_shape: &[u64],
    ) -> Result<String, String> {
        let (dtype, acc) = (self.dtype, self.acc);
        let acc_type = tensor_type(&out.shape, acc);
        let init = body.zeros(&out.shape, acc);
        let dim_list = list((0..dims).map(|d| format!("d{d}")));
        let map = |acc: &Access| format!("affine_map<({dim_list}) -> ({})>", list(&acc.exprs));
        let iterators = list((0..dims).map(|d| {
            if d < parallel {
                "\"parallel\""
            } else {
                "\"reduction\""
            }
        }));
        let result = body.fresh("conv");
        body.line(&format!(
            "{result} = linalg.generic {{indexing_maps = [{}, {}, {}], iterator_types = [{iterators}]}} ins({}, {} : {}, {}) outs({init} : {acc_type}) {{",
            map(a.1),
            map(b.1),
            map(out),
            a.0,
            b.0,
            tensor_type(&a.1.shape, dtype),
            tensor_type(&b.1.shape, dtype),
        ));
        multiply_accumulate(body, dtype, acc, &acc_type)?;
        if !out.expanded() {
            return Ok(result);
        }
        let collapsed = body.fresh("collapsed");
        body.line(&format!(
            "{collapsed} = tensor.collapse_shape {result} {} : {acc_type} into {}",
            out.reassociation_text(),
            tensor_type(out_layout_shape, acc)
        ));
        Ok(collapsed)
    }

    /// Adds the bias (forward) and converts the accumulator-typed result to
    /// the output's element type.
    fn finish(
        &self,
        body: &mut Body,
        value: &str,
        layout: Layout,
        shape: &[u64],
    ) -> Result<String, String> {
        let out_elem = self.sig.outputs[0].elem;
        let acc = self.acc;
        if out_elem == acc && !self.bias {
            return Ok(value.to_string());
        }
        let rank = shape.len();
        let dim_list = list((0..rank).map(|d| format!("d{d}")));
        let identity = format!("affine_map<({dim_list}) -> ({dim_list})>");
        let mut maps = vec![identity.clone()];
        let mut ins = vec![value.to_string()];
        let mut types = vec![tensor_type(shape, acc)];
        if self.bias {
            let channel = layout
                .axes()
                .iter()
                .position(|axis| *axis == Axis::Channel)
                .ok_or_else(|| format!("layout {layout} has no channels"))?;
            maps.push(format!("affine_map<({dim_list}) -> (d{channel})>"));
            ins.push(format!("%arg{}", self.sig.inputs.len() - 1));
            types.push(tensor_type(&[self.bias_channels], self.dtype));
        }
        maps.push(identity);
        let out_type = tensor_type(shape, out_elem);
        let empty = body.fresh("empty");
        body.line(&format!("{empty} = tensor.empty() : {out_type}"));
        let result = body.fresh("result");
        body.line(&format!(
            "{result} = linalg.generic {{indexing_maps = [{}], iterator_types = [{}]}} ins({} : {}) outs({empty} : {out_type}) {{",
            list(&maps),
            list((0..rank).map(|_| "\"parallel\"")),
            list(&ins),
            list(&types)
        ));
        let mut block_args = vec![format!("%sum: {}", acc.mlir())];
        if self.bias {
            block_args.push(format!("%bias: {}", self.dtype.mlir()));
        }
        block_args.push(format!("%unused: {}", out_elem.mlir()));
        body.line(&format!("^bb0({}):", list(&block_args)));
        let mut v = "%sum".to_string();
        if self.bias {
            let b = convert(body, "%bias", self.dtype, acc)?;
            let add = if is_float(acc) {
                "arith.addf"
            } else {
                "arith.addi"
            };
            let s = body.fresh("v");
            body.line(&format!("  {s} = {add} {v}, {b} : {}", acc.mlir()));
            v = s;
        }
        let converted = convert(body, &v, acc, out_elem)?;
        body.line(&format!("  linalg.yield {converted} : {}", out_elem.mlir()));
        body.line(&format!("}} -> {out_type}"));
        Ok(result)
    }

    fn input_layout_shape(&self, spatial: &[u64]) -> Vec<u64> {
        self.input_layout.arrange(self.n, self.c, spatial)
    }

    fn filter_layout_shape(&self) -> Vec<u64> {
        self.filter_layout
            .arrange(self.k, self.c / self.groups, &self.filter_spatial)
    }

    fn output_layout_shape(&self, spatial: &[u64]) -> Vec<u64> {
        self.output_layout.arrange(self.n, self.k, spatial)
    }

    /// The input `arg` padded, its padded spatial sizes, and its access over
    /// iteration dims `[n, g, c]`, `o(j)` and `f(j)`: input position
    /// `o*stride + f*dilation` in each spatial dimension (forward and
    /// backward-weight read the input the same way).
    fn padded_input(
        &self,
        body: &mut Body,
        arg: &str,
        [n, g, c]: [usize; 3],
        o: &dyn Fn(usize) -> usize,
        f: &dyn Fn(usize) -> usize,
    ) -> Result<(String, Vec<u64>, Access), String> {
        let (x, padded) = self.pad_input(body, arg)?;
        let x_exprs: Vec<String> = (0..self.spatial)
            .map(|j| {
                affine(
                    &[
                        (o(j), i128::from(self.stride[j])),
                        (f(j), i128::from(self.dilation[j])),
                    ],
                    0,
                )
            })
            .collect();
        let x_acc = self.access(
            self.input_layout,
            Role::Input,
            Some(n),
            g,
            c,
            None,
            &padded,
            &x_exprs,
        );
        Ok((x, padded, x_acc))
    }

    /// The output's access over iteration dims `[n, g, k]` and `o(j)`, the
    /// output position in each spatial dimension.
    fn output_access(&self, [n, g, k]: [usize; 3], o: &dyn Fn(usize) -> usize) -> Access {
        let o_exprs: Vec<String> = (0..self.spatial).map(|j| format!("d{}", o(j))).collect();
        self.access(
            self.output_layout,
            Role::Output,
            Some(n),
            g,
            k,
            None,
            &self.output_spatial,
            &o_exprs,
        )
    }

    /// Iteration dims: n, g, k, o..., c, f... (reduction from c).
    fn forward(&self, body: &mut Body) -> Result<String, String> {
        let s = self.spatial;
        let (n, g, k) = (0, 1, 2);
        let o = |j: usize| 3 + j;
        let c = 3 + s;
        let f = |j: usize| 4 + s + j;
        let dims = 4 + 2 * s;
        let (x, padded, x_acc) = self.padded_input(body, self.operands[0], [n, g, c], &o, &f)?;
        let w_acc = self.filter_access(g, k, c, &f);
        let y_acc = self.output_access([n, g, k], &o);
        self.expand_and_contract(
            body,
            (dims, 3 + s),
            (&x, &self.input_layout_shape(&padded), &x_acc),
            (self.operands[1], &self.filter_layout_shape(), &w_acc),
            (
                &y_acc,
                self.output_layout,
                &self.output_layout_shape(&self.output_spatial),
            ),
        )
    }

    /// Iteration dims: g, k, c, f..., n, o... (reduction from n).
    fn backward_weight(&self, body: &mut Body) -> Result<String, String> {
        let s = self.spatial;
        let (g, k, c) = (0, 1, 2);
        let f = |j: usize| 3 + j;
        let n = 3 + s;
        let o = |j: usize| 4 + s + j;
        let dims = 4 + 2 * s;
        let (x, padded, x_acc) = self.padded_input(body, self.operands[1], [n, g, c], &o, &f)?;
        let dy_acc = self.output_access([n, g, k], &o);
        let dw_acc = self.filter_access(g, k, c, &f);
        self.expand_and_contract(
            body,
            (dims, 3 + s),
            (
                self.operands[0],
                &self.output_layout_shape(&self.output_spatial),
                &dy_acc,
            ),
            (&x, &self.input_layout_shape(&padded), &x_acc),
            (&dw_acc, self.filter_layout, &self.filter_layout_shape()),
        )
    }

    /// Iteration dims: n, g, c, i..., k, r... (reduction from k), where
    /// each `r` is the filter tap or the dy position of its dimension
    /// ([`DataDim`]).
    fn backward_data(&self, body: &mut Body) -> Result<String, String> {
        let s = self.spatial;
        let (n, g, c) = (0, 1, 2);
        let i = |j: usize| 3 + j;
        let k = 3 + s;
        let r = |j: usize| 4 + s + j;
        let dims = 4 + 2 * s;
        let plan = (0..s)
            .map(|j| self.data_dim(j, i(j), r(j)))
            .collect::<Result<Vec<DataDim>, String>>()?;

        let dy_sizes: Vec<u64> = plan.iter().map(|d| d.dy.size).collect();
        let dy_place: Vec<&Placement> = plan.iter().map(|d| &d.dy).collect();
        let dy_reversed: Vec<usize> = (0..s).filter(|&j| !plan[j].over_taps).collect();
        let dy = self.reverse(
            body,
            self.operands[0],
            self.output_layout,
            &self.output_layout_shape(&self.output_spatial),
            &dy_reversed,
        );
        let dy = self.place(
            body,
            &dy,
            self.output_layout,
            (self.n, self.k),
            &self.output_spatial,
            &dy_place,
        );
        let w_sizes: Vec<u64> = plan.iter().map(|d| d.w.size).collect();
        let w_place: Vec<&Placement> = plan.iter().map(|d| &d.w).collect();
        let w_reversed: Vec<usize> = (0..s).filter(|&j| plan[j].over_taps).collect();
        let w = self.reverse(
            body,
            self.operands[1],
            self.filter_layout,
            &self.filter_layout_shape(),
            &w_reversed,
        );
        let w = self.place(
            body,
            &w,
            self.filter_layout,
            (self.k, self.c / self.groups),
            &self.filter_spatial,
            &w_place,
        );

        let dy_exprs: Vec<String> = plan.iter().map(|d| d.dy_expr.clone()).collect();
        let dy_acc = self.access(
            self.output_layout,
            Role::Output,
            Some(n),
            g,
            k,
            None,
            &dy_sizes,
            &dy_exprs,
        );
        let w_exprs: Vec<String> = plan.iter().map(|d| d.w_expr.clone()).collect();
        let w_acc = self.access(
            self.filter_layout,
            Role::Filter,
            None,
            g,
            k,
            Some(c),
            &w_sizes,
            &w_exprs,
        );
        let i_exprs: Vec<String> = (0..s).map(|j| format!("d{}", i(j))).collect();
        let dx_acc = self.access(
            self.input_layout,
            Role::Input,
            Some(n),
            g,
            c,
            None,
            &self.input_spatial,
            &i_exprs,
        );
        let dy_layout_shape = self.output_layout_shape(&dy_sizes);
        let dy = self.expand(body, &dy, &dy_layout_shape, &dy_acc, self.dtype);
        let w_layout_shape = self
            .filter_layout
            .arrange(self.k, self.c / self.groups, &w_sizes);
        let w = self.expand(body, &w, &w_layout_shape, &w_acc, self.dtype);
        let dx_shape = self.input_layout_shape(&self.input_spatial);
        let dx = self.contraction(
            body,
            dims,
            3 + s,
            (&dy, &dy_acc),
            (&w, &w_acc),
            &dx_acc,
            &dx_shape,
        )?;
        self.finish(body, &dx, self.input_layout, &dx_shape)
    }

    /// How backward data covers spatial dimension `j` (loop `i` over dx,
    /// loop `r` reduced), in the plain view: `dx[i] = sum dy[o] * w[f]`
    /// over `o*s + f*d - p = i`.
    ///
    /// With no more taps than dy positions (`F <= O`, every usual
    /// convolution) `r` is the tap: dy is dilated by the stride into zeros
    /// padded by `(F-1)*d - p` (elements that fall outside are dropped) and
    /// read at `i + r*d` against the reversed filter. Otherwise (a huge
    /// filter, as in a transposed convolution of a small input) `r` is dy's
    /// position counted from the end: the filter is dilated by `d` into
    /// zeros and read at `i + r*s + max(p - (O-1)*s, 0)` against the
    /// reversed dy, so the work is `I*O` rather than `I*F`. Either way the
    /// MLIR does not grow with `F`, and the index expressions only add:
    /// tiling does not handle negative coefficients, so flips are done on
    /// the smaller tensor ([`Conv::reverse`]).
    fn data_dim(&self, j: usize, i: usize, r: usize) -> Result<DataDim, String> {
        let wide = |v: u64| i128::from(v);
        let (size_i, size_o, taps) = (
            wide(self.input_spatial[j]),
            wide(self.output_spatial[j]),
            wide(self.filter_spatial[j]),
        );
        let (st, pad, dil) = (
            wide(self.stride[j]),
            wide(self.padding[j]),
            wide(self.dilation[j]),
        );
        let dim = |v: i128| self.dimension(v, j);
        // The tap form's work and dilated dy against the other's: the
        // shorter reduction usually decides, but a huge padding can make
        // either copy huge, and the smaller total wins.
        let dy_size = size_i + (taps - 1) * dil;
        let w_low = ((size_o - 1) * st - pad).max(0);
        let w_size = w_low + (size_i + pad).max((taps - 1) * dil + 1);
        if size_i * taps + dy_size <= size_i * size_o + w_size {
            let size = size_i + (taps - 1) * dil;
            let low = (taps - 1) * dil - pad;
            let first = if low < 0 { (-low + st - 1) / st } else { 0 };
            let last = (size_o - 1).min((size - 1 - low).div_euclid(st));
            let count = (last - first + 1).max(0);
            let offset = if count > 0 { first * st + low } else { 0 };
            return Ok(DataDim {
                over_taps: true,
                dy: Placement {
                    size: dim(size)?,
                    first: dim(first)?,
                    count: dim(count)?,
                    offset: dim(offset)?,
                    stride: dim(st)?,
                },
                w: Placement::whole(dim(taps)?),
                dy_expr: affine(&[(i, 1), (r, dil)], 0),
                w_expr: format!("d{r}"),
            });
        }
        let (low, size) = (w_low, w_size);
        Ok(DataDim {
            over_taps: false,
            dy: Placement::whole(dim(size_o)?),
            w: Placement {
                size: dim(size)?,
                first: 0,
                count: dim(taps)?,
                offset: dim(low)?,
                stride: dim(dil)?,
            },
            dy_expr: format!("d{r}"),
            w_expr: affine(&[(i, 1), (r, st)], (pad - (size_o - 1) * st).max(0)),
        })
    }

    /// `src` (in `layout`, shape `shape`) reversed along spatial
    /// dimensions `dims`: one `linalg.generic` that reads each element
    /// with `tensor.extract` at the mirrored index.
    fn reverse(
        &self,
        body: &mut Body,
        src: &str,
        layout: Layout,
        shape: &[u64],
        dims: &[usize],
    ) -> String {
        let axes = layout.axes();
        let mirrored: Vec<usize> = (0..axes.len())
            .filter(|&pos| {
                matches!(axes[pos], Axis::Spatial(j) if dims.contains(&j))
                    && shape.get(pos).is_some_and(|&size| size > 1)
            })
            .collect();
        if mirrored.is_empty() {
            return src.to_string();
        }
        let rank = shape.len();
        let ty = tensor_type(shape, self.dtype);
        let empty = body.fresh("empty");
        body.line(&format!("{empty} = tensor.empty() : {ty}"));
        let reversed = body.fresh("reversed");
        let dim_list = list((0..rank).map(|d| format!("d{d}")));
        body.line(&format!(
            "{reversed} = linalg.generic {{indexing_maps = [affine_map<({dim_list}) -> ({dim_list})>], iterator_types = [{}]}} outs({empty} : {ty}) {{",
            list((0..rank).map(|_| "\"parallel\""))
        ));
        body.line(&format!("^bb0(%unused: {}):", self.dtype.mlir()));
        let mut indices = Vec::new();
        for (pos, size) in shape.iter().enumerate() {
            let index = body.fresh("i");
            body.line(&format!("  {index} = linalg.index {pos} : index"));
            if !mirrored.contains(&pos) {
                indices.push(index);
                continue;
            }
            let last = body.fresh("last");
            body.line(&format!("  {last} = arith.constant {} : index", size - 1));
            let flipped = body.fresh("flipped");
            body.line(&format!("  {flipped} = arith.subi {last}, {index} : index"));
            indices.push(flipped);
        }
        let value = body.fresh("v");
        body.line(&format!(
            "  {value} = tensor.extract {src}[{}] : {ty}",
            list(&indices)
        ));
        body.line(&format!("  linalg.yield {value} : {}", self.dtype.mlir()));
        body.line(&format!("}} -> {ty}"));
        reversed
    }

    /// The elements of the copies [`Conv::module`] makes: the padded
    /// input (forward, backward weight), or the dilated dy and filter and
    /// the reversed ones (backward data).
    fn scratch_elements(&self) -> Result<u64, String> {
        let product = |values: &[u64]| values.iter().fold(1u64, |a, &b| a.saturating_mul(b));
        let channels = |outer: u64, inner: u64| outer.saturating_mul(inner);
        if self.direction != Direction::BackwardData {
            let mut padded = Vec::new();
            for j in 0..self.spatial {
                let size = self.wide(&self.input_spatial, j);
                let lo = self.wide(&self.padding, j);
                let hi = (self.reach(j) - size - lo).max(0);
                padded.push(self.dimension(size + lo + hi, j)?);
            }
            return Ok(channels(self.n, self.c).saturating_mul(product(&padded)));
        }
        let s = self.spatial;
        let plan = (0..s)
            .map(|j| self.data_dim(j, 0, 0))
            .collect::<Result<Vec<DataDim>, String>>()?;
        let (dy_channels, w_channels) = (
            channels(self.n, self.k),
            channels(self.k, self.c / self.groups),
        );
        // A copy is made when some dimension moves (placed) or is read
        // reversed, as `backward_data` does.
        let copy = |channels: u64, sizes: &[u64], moved: bool| {
            if moved {
                channels.saturating_mul(product(sizes))
            } else {
                0
            }
        };
        let dy: Vec<u64> = plan.iter().map(|d| d.dy.size).collect();
        let w: Vec<u64> = plan.iter().map(|d| d.w.size).collect();
        let dy_placed = copy(dy_channels, &dy, dy != self.output_spatial);
        let w_placed = copy(w_channels, &w, w != self.filter_spatial);
        let dy_reversed = copy(
            dy_channels,
            &self.output_spatial,
            plan.iter().any(|d| !d.over_taps),
        );
        let w_reversed = copy(
            w_channels,
            &self.filter_spatial,
            plan.iter().any(|d| d.over_taps),
        );
        Ok([dy_placed, w_placed, dy_reversed, w_reversed]
            .into_iter()
            .fold(0u64, u64::saturating_add))
    }

    /// A size or offset along spatial dimension `j`, which MLIR's shapes
    /// hold in 64 bits.
    fn dimension(&self, value: i128, j: usize) -> Result<u64, String> {
        u64::try_from(value)
            .ok()
            .filter(|&v| i64::try_from(v).is_ok())
            .ok_or_else(|| {
                format!(
                    "{}: a size along spatial dimension {j} is {value}, beyond MLIR's 64-bit shapes",
                    self.sig.func_name
                )
            })
    }

    /// `src` (in `layout`, channels `outer` x `inner`, spatial sizes
    /// `spatial`) placed into zeros as `dims` say; `src` itself when that
    /// changes nothing.
    fn place(
        &self,
        body: &mut Body,
        src: &str,
        layout: Layout,
        (outer, inner): (u64, u64),
        spatial: &[u64],
        dims: &[&Placement],
    ) -> String {
        let whole = dims
            .iter()
            .zip(spatial)
            .all(|(d, &size)| d.size == size && d.first == 0 && d.count == size && d.offset == 0);
        if whole {
            return src.to_string();
        }
        let field = |f: fn(&Placement) -> u64| -> Vec<u64> { dims.iter().map(|d| f(d)).collect() };
        let sizes = field(|d| d.size);
        let zeros = body.zeros(&layout.arrange(outer, inner, &sizes), self.dtype);
        let counts = field(|d| d.count);
        if counts.contains(&0) {
            return zeros;
        }
        let src_shape = layout.arrange(outer, inner, spatial);
        let slice_shape = layout.arrange(outer, inner, &counts);
        let ones = vec![1u64; spatial.len()];
        let mut value = src.to_string();
        if slice_shape != src_shape {
            let sliced = body.fresh("slice");
            body.line(&format!(
                "{sliced} = tensor.extract_slice {src}[{}] [{}] [{}] : {} to {}",
                list(layout.arrange(0, 0, &field(|d| d.first))),
                list(&slice_shape),
                list(layout.arrange(1, 1, &ones)),
                tensor_type(&src_shape, self.dtype),
                tensor_type(&slice_shape, self.dtype)
            ));
            value = sliced;
        }
        let placed = body.fresh("placed");
        body.line(&format!(
            "{placed} = tensor.insert_slice {value} into {zeros}[{}] [{}] [{}] : {} into {}",
            list(layout.arrange(0, 0, &field(|d| d.offset))),
            list(&slice_shape),
            list(layout.arrange(1, 1, &field(|d| d.stride))),
            tensor_type(&slice_shape, self.dtype),
            tensor_type(&layout.arrange(outer, inner, &sizes), self.dtype)
        ));
        placed
    }
}

/// One spatial dimension of a backward-data generic (`Conv::data_dim`):
/// how dy and the filter are laid into zeros and the index expressions
/// the generic reads them at.
struct DataDim {
    /// Reduced over the filter taps (else over dy's positions).
    over_taps: bool,
    dy: Placement,
    w: Placement,
    dy_expr: String,
    w_expr: String,
}

/// A tensor's elements `first .. first+count` along one dimension, put at
/// `offset, offset+stride, ...` of a zero tensor `size` long.
struct Placement {
    size: u64,
    first: u64,
    count: u64,
    offset: u64,
    stride: u64,
}

impl Placement {
    /// The tensor as it is: `size` elements, nothing moved.
    fn whole(size: u64) -> Placement {
        Placement {
            size,
            first: 0,
            count: size,
            offset: 0,
            stride: 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::sig;
    use std::path::PathBuf;

    fn temp(name: &str, ext: &str) -> PathBuf {
        std::env::temp_dir().join(format!("lockstep-mlir-{}-{name}.{ext}", std::process::id()))
    }

    /// Compiles the module of `line` for the host CPU; returns the .vmfb.
    fn compile(line: &str, tag: &str) -> (OpSignature, PathBuf) {
        let sig = sig(line);
        let text = conv_module(&sig).unwrap_or_else(|e| panic!("{line}: {e}"));
        let vmfb = temp(tag, "vmfb");
        crate::testing::compile(&text, &vmfb, line);
        (sig, vmfb)
    }

    /// Signatures for a moderate matrix of directions, layouts, groups,
    /// strides, paddings, dilations, 2-D/3-D and element types.
    const MATRIX: &[&str] = &[
        // forward
        "conv -n 2 -c 4 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1 -F 1",
        "convfp16 -n 1 -c 8 -H 9 -W 10 -k 6 -y 3 -x 3 -u 2 -v 1 -p 1 -q 0 -l 1 -j 2 -g 2 -F 1 -I NHWC -f NHWC -O NHWC",
        "convbfp16 -n 2 -c 4 -H 7 -W 7 -k 8 -y 1 -x 1 -b 1 -F 1 -I NHWC -f NCHW -O NCHW",
        "convint8 -n 1 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -F 1",
        "conv -_ 3 -n 1 -c 4 -! 5 -H 6 -W 7 -k 4 -@ 3 -y 3 -x 3 -# 2 -u 1 -v 2 -$ 1 -p 1 -q 1 -F 1",
        // backward data
        "conv -n 2 -c 4 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 2 -F 2",
        "convbfp16 -n 1 -c 4 -H 6 -W 5 -k 4 -y 3 -x 3 -p 3 -q 1 -F 2 -I NHWC -f NHWC -O NHWC",
        "convfp16 -_ 3 -n 1 -c 4 -! 4 -H 5 -W 6 -k 6 -@ 2 -y 3 -x 3 -# 2 -u 2 -v 1 -$ 1 -p 1 -q 0 -^ 1 -l 2 -j 1 -g 2 -F 2 -I NDHWC -f NDHWC -O NDHWC",
        // backward weight
        "conv -n 2 -c 4 -H 7 -W 7 -k 4 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -l 2 -j 2 -F 4 -I NHWC -f NHWC -O NHWC",
        "convfp16 -n 2 -c 8 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1 -g 2 -F 4",
        "convbfp16 -_ 3 -n 1 -c 4 -! 5 -H 5 -W 5 -k 4 -@ 3 -y 3 -x 3 -^ 2 -l 1 -j 1 -F 4",
        // int8 is forward-only in the parser
        "convint8 -_ 3 -n 1 -c 4 -! 4 -H 6 -W 6 -k 4 -@ 1 -y 3 -x 3 -# 1 -u 2 -v 2 -$ 0 -p 1 -q 1 -g 2 -F 1 -I NDHWC -f NDHWC -O NDHWC",
    ];

    #[test]
    fn the_matrix_compiles() {
        let failures: Vec<String> = std::thread::scope(|scope| {
            let jobs: Vec<_> = MATRIX
                .iter()
                .enumerate()
                .map(|(i, line)| {
                    scope.spawn(move || {
                        let (_, vmfb) = compile(line, &format!("matrix{i}"));
                        let _ = std::fs::remove_file(vmfb);
                    })
                })
                .collect();
            jobs.into_iter()
                .zip(MATRIX)
                .filter_map(|(job, line)| job.join().err().map(|_| line.to_string()))
                .collect()
        });
        assert!(failures.is_empty(), "failed to compile: {failures:#?}");
    }

    #[test]
    fn module_shape_and_types() {
        let text = conv_module(&sig(MATRIX[1])).unwrap();
        assert!(text.contains(
            "func.func @conv_2d_float16_forward_1x9x10x8_nhwc_6x3x3x4_fhwc_nhwf_2x1s_1x0p_1x2d_2g("
        ));
        assert!(text.contains("arith.extf %lhs : f16 to f32"));
        assert!(text.contains("arith.truncf"));
        let text = conv_module(&sig(MATRIX[3])).unwrap();
        assert!(text.contains("arith.extsi %lhs : i8 to i32"));
        assert!(text.contains("-> tensor<1x4x8x8xi32>"));
        assert!(!text.contains("trunci"));
        let text = conv_module(&sig(MATRIX[10])).unwrap();
        assert!(text.contains("arith.truncf %sum : f32 to bf16"));
    }

    #[test]
    fn one_d_module_text() {
        let line = "conv -_ 1 -n 2 -c 4 -W 10 -k 6 -x 3 -v 2 -q 1 -g 2 -F 1 -I NWC -f NWC -O NWC";
        let text = conv_module(&sig(line)).unwrap();
        let func = "func.func @conv_1d_float32_forward_2x10x4_nwc_6x3x2_fwc_nwf_2s_1p_1d_2g(\
                    %arg0: tensor<2x10x4xf32>, %arg1: tensor<6x3x2xf32>) -> tensor<2x5x6xf32>";
        assert!(text.contains(func), "{text}");
        assert!(
            text.contains("tensor.pad %arg0 low[0, 1, 0] high[0, 0, 0]"),
            "{text}"
        );
        // n, g, k, o, c, f: x (N W C) reads n, o*s + f*d, [g, c].
        assert!(
            text.contains("affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3 * 2 + d5, d1, d4)>"),
            "{text}"
        );
        // The transposed backward data is a plain forward over dy; NCH (the
        // 1-D default) takes the height flags.
        let trans = "conv -_ 1 -m trans -n 1 -c 4 -H 5 -k 6 -y 3 -u 2 -p 1 -Y 1 -F 2";
        let text = conv_module(&sig(trans)).unwrap();
        assert!(text.contains("tensor.pad %arg0 low[0, 0, 1]"), "{text}");
        assert!(text.contains("-> tensor<1x4x5xf32>"), "{text}");
        assert!(
            text.contains("func.func @conv_1d_float32_input_backward_1x4x5_nch_4x6x3_fch_nfh_2s_1p_1d_1g_trans_1op("),
            "{text}"
        );
    }

    #[test]
    fn other_ops_are_refused() {
        let err = conv_module(&sig("gemm -m 4 -k 4 -n 4")).unwrap_err();
        assert!(err.contains("not a convolution"), "{err}");
    }

    #[test]
    fn transposed_directions_map_onto_plain_ones() {
        let line = "convfp16 -m trans -n 1 -c 4 -H 5 -W 5 -k 8 -y 3 -x 3 -u 2 -v 2 -p 1 -q 1 -Y 1 -X 0 -g 2";
        // Forward is the plain backward data: x dilated into zeros, the
        // filter flipped, y (with its output padding) the result; the bias
        // has K entries.
        let text = conv_module(&sig(&format!("{line} -b 1 -F 1"))).unwrap();
        assert!(text.contains(
            "func.func @conv_2d_float16_forward_b_1x4x5x5_nchw_4x4x3x3_fchw_nfhw_2x2s_1x1p_1x1d_2g_trans_1x0op(\
             %arg0: tensor<1x4x5x5xf16>, %arg1: tensor<4x4x3x3xf16>, %arg2: tensor<8xf16>) -> tensor<1x8x10x9xf16>"
        ), "{text}");
        assert!(text.contains("tensor.insert_slice %arg0 into"), "{text}");
        assert!(text.contains("tensor.extract %arg1["), "{text}");
        assert!(!text.contains("tensor.concat"), "{text}");
        assert!(!text.contains("tensor.pad"), "{text}");
        // Backward data is the plain forward over the padded dy.
        let text = conv_module(&sig(&format!("{line} -F 2"))).unwrap();
        assert!(text.contains("tensor.pad %arg0 low[0, 0, 1, 1]"), "{text}");
        assert!(text.contains("-> tensor<1x4x5x5xf16>"), "{text}");
        assert!(!text.contains("tensor.extract "), "{text}");
        // Backward weight reads x (argument 1) as the plain dy and pads dy.
        let text = conv_module(&sig(&format!("{line} -F 4"))).unwrap();
        assert!(text.contains("tensor.pad %arg0 low[0, 0, 1, 1]"), "{text}");
        assert!(text.contains("tensor.expand_shape %arg1"), "{text}");
        assert!(text.contains("-> tensor<4x4x3x3xf16>"), "{text}");
    }

    #[test]
    fn transposed_operands_must_have_the_transposed_filter() {
        let mut s = sig("conv -m trans -n 1 -c 4 -H 5 -W 5 -k 8 -y 3 -x 3 -g 2 -F 1");
        assert!(conv_module(&s).is_ok());
        // The plain convolution's K x C/G filter is not the transposed one.
        let SignatureDetails::Conv(cs) = &mut s.details else {
            panic!()
        };
        cs.filter_shape = vec![8, 2, 3, 3];
        s.inputs[1].shape = vec![8, 2, 3, 3];
        let err = conv_module(&s).unwrap_err();
        assert!(err.contains("do not match"), "{err}");
    }

    /// Offset of logical element (batch, channel, spatial) in a layout.
    fn offset(layout: Layout, shape: &[u64], batch: u64, channel: u64, sp: &[u64]) -> usize {
        layout
            .arrange(batch, channel, sp)
            .iter()
            .zip(shape)
            .fold(0u64, |acc, (coord, &size)| acc * size + coord) as usize
    }

    fn multi_index(sizes: &[u64]) -> Vec<Vec<u64>> {
        let mut all = vec![vec![]];
        for &size in sizes {
            all = all
                .into_iter()
                .flat_map(|prefix: Vec<u64>| {
                    (0..size).map(move |v| {
                        let mut p = prefix.clone();
                        p.push(v);
                        p
                    })
                })
                .collect();
        }
        all
    }

    /// Runs an f32 signature on deterministic small-integer inputs and
    /// compares every output element with a direct convolution.
    fn run_and_check(line: &str) {
        let sig = sig(line);
        let text = conv_module(&sig).unwrap_or_else(|e| panic!("{line}: {e}"));
        let SignatureDetails::Conv(cs) = &sig.details else {
            panic!()
        };
        let conv = &cs.conv;
        assert_eq!(sig.dtype, ElemType::F32);
        let data: Vec<Vec<f64>> = sig
            .inputs
            .iter()
            .enumerate()
            .map(|(a, o)| {
                (0..o.elements())
                    .map(|i| ((i * 7 + 3 + a as u64) % 5) as f64 - 2.0)
                    .collect()
            })
            .collect();
        let got = crate::testing::execute(&sig, &text, &data).remove(0);

        // Direct reference: one scatter over (n, g, k, c, o, f).
        let (il, fl, ol) = (conv.input_layout, conv.filter_layout, conv.output_layout);
        let (xs, ws, ys) = (&cs.input_shape, &cs.filter_shape, &cs.output_shape);
        let (cg, kg) = (conv.c / conv.groups, conv.k / conv.groups);
        let mut expected = vec![0f64; sig.outputs[0].elements() as usize];
        let outs = multi_index(&conv.output_spatial);
        let taps = multi_index(&conv.filter_spatial);
        for n in 0..conv.n {
            for g in 0..conv.groups {
                for k in 0..kg {
                    for c in 0..cg {
                        for o in &outs {
                            for f in &taps {
                                let i: Option<Vec<u64>> = (0..o.len())
                                    .map(|j| {
                                        let pos = (o[j] * conv.stride[j] + f[j] * conv.dilation[j])
                                            as i64
                                            - conv.padding[j] as i64;
                                        (pos >= 0 && pos < conv.input_spatial[j] as i64)
                                            .then_some(pos as u64)
                                    })
                                    .collect();
                                let Some(i) = i else { continue };
                                let xo = offset(il, xs, n, g * cg + c, &i);
                                let wo = offset(fl, ws, g * kg + k, c, f);
                                let yo = offset(ol, ys, n, g * kg + k, o);
                                match cs.direction {
                                    Direction::Forward => expected[yo] += data[0][xo] * data[1][wo],
                                    Direction::BackwardData => {
                                        expected[xo] += data[0][yo] * data[1][wo]
                                    }
                                    Direction::BackwardWeight => {
                                        expected[wo] += data[0][yo] * data[1][xo]
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(got.len(), expected.len(), "{line}: output size");
        for (idx, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert!(
                (g - e).abs() < 1e-3,
                "{line}: element {idx}: got {g}, expected {e}"
            );
        }
    }

    #[test]
    fn forward_runs_and_matches_reference() {
        run_and_check(MATRIX[0]);
        run_and_check("conv -n 1 -c 4 -H 7 -W 6 -k 6 -y 3 -x 2 -u 2 -v 1 -p 1 -q 1 -l 1 -j 2 -g 2 -F 1 -I NHWC -f NHWC -O NCHW");
    }

    #[test]
    fn backward_data_runs_and_matches_reference() {
        run_and_check(MATRIX[5]);
        run_and_check("conv -n 1 -c 4 -H 6 -W 5 -k 2 -y 3 -x 3 -p 3 -q 1 -u 1 -v 2 -l 1 -j 2 -F 2 -I NHWC -f NHWC -O NHWC");
    }

    #[test]
    fn backward_weight_runs_and_matches_reference() {
        run_and_check(MATRIX[8]);
        run_and_check("conv -_ 3 -n 2 -c 4 -! 4 -H 5 -W 5 -k 4 -@ 2 -y 3 -x 3 -# 1 -u 2 -v 2 -$ 1 -p 1 -q 0 -g 2 -F 4");
    }

    /// A plain backward data with more taps than dy positions along H
    /// (reduced over dy, the filter dilated into zeros) and fewer along W;
    /// the transposed ones are in `conv_reference`'s IREE tests.
    #[test]
    fn wide_window_backward_data_matches_reference() {
        run_and_check(
            "conv -n 1 -c 2 -H 30 -W 5 -k 3 -y 25 -x 2 -p 4 -q 0 -u 5 -v 1 -l 1 -j 2 -F 2",
        );
        run_and_check("conv -n 2 -c 4 -H 9 -W 12 -k 2 -y 3 -x 6 -p 0 -q 2 -u 1 -v 3 -l 3 -j 1 -g 2 -F 2 -I NHWC -f NHWC -O NHWC");
    }

    /// The generated module does not grow with the filter: a million taps
    /// and the largest filter MIOpen's 32-bit flags allow give modules of
    /// the same size as three taps.
    #[test]
    fn module_size_does_not_depend_on_the_filter() {
        let size = |y: &str| {
            let line = format!("conv -m trans -n 1 -c 1 -H 1 -W 1 -k 1 -y {y} -x 1 -F 1");
            conv_module(&sig(&line))
                .unwrap_or_else(|e| panic!("{line}: {e}"))
                .len()
        };
        let small = size("3");
        assert!(small < 4096, "{small}");
        for y in ["1000000", "2147483647"] {
            let len = size(y);
            assert!(len < 2 * small, "-y {y}: {len} bytes, 3 taps: {small}");
        }
        let text = conv_module(&sig("conv -n 1 -c 1 -H 2147483647 -W 1 -k 1 -y 2147483647 -x 1 -u 2147483647 -p 2147483647 -F 2")).unwrap();
        assert!(text.len() < 8192, "{}", text.len());
    }

    /// A million-tap transposed convolution compiles (its run is the CLI
    /// test's): nothing is unrolled.
    #[test]
    fn million_tap_transposed_convolution_compiles() {
        let line = "conv -m trans -n 1 -c 1 -H 1 -W 1 -k 1 -y 1000000 -x 1 -F 1";
        let (_, vmfb) = compile(line, "million");
        assert!(vmfb.exists());
        let _ = std::fs::remove_file(vmfb);
    }

    /// A huge padding around a tiny input does not make a huge padded copy:
    /// backward data picks the form whose copies are small, and the byte
    /// limit sees the copies every direction makes.
    #[test]
    fn huge_padding_makes_no_huge_copies() {
        let line = "conv -n 1 -c 1 -H 1 -W 1 -k 1 -y 3 -x 1 -p 1073741824 -u 2147483647 -F 2";
        assert!(conv_scratch_elements(&sig(line)) < 100);
        // Forward pads x by p on both sides: that copy is counted.
        let fwd = line.replace("-F 2", "-F 1");
        assert!(conv_scratch_elements(&sig(&fwd)) > 1 << 30);
        // The same shapes at a size that runs, checked against the reference.
        run_and_check("conv -n 1 -c 2 -H 2 -W 3 -k 2 -y 3 -x 2 -p 40 -q 1 -u 60 -v 1 -F 2");
    }
}
