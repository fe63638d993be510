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
//! - backward data (`input_backward`): the output gradient is dilated by the
//!   stride and padded by `(F-1)*d - p` (a strided `tensor.insert_slice` into
//!   zeros; negative padding drops elements), the filter is flipped along its
//!   spatial dimensions (`tensor.extract_slice` + `tensor.concat`), then
//!   `dx[n, g, c, i] += dy_pad[n, g, k, i + f*d] * w_flip[g, k, c, f]`;
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
use crate::mlir_text::{convert, is_float, list, tensor_type, zero, Body};
use crate::signature::{ConvSignature, OpSignature, SignatureDetails};

/// The MLIR module of a convolution signature.
pub fn conv_module(sig: &OpSignature) -> Result<String, String> {
    let SignatureDetails::Conv(conv_sig) = &sig.details else {
        return Err(format!(
            "{}: not a convolution signature (mode `{}`)",
            sig.func_name, sig.mode
        ));
    };
    Conv::new(sig, conv_sig)?.module()
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
fn affine(terms: &[(usize, u64)], constant: i64) -> String {
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
        let per_dim = [
            &conv.input_spatial,
            &conv.filter_spatial,
            &conv.output_spatial,
            &conv.stride,
            &conv.padding,
            &conv.dilation,
        ];
        if per_dim.iter().any(|v| v.len() != spatial) {
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
            let reach = (self.output_spatial[j] - 1) * self.stride[j]
                + (self.filter_spatial[j] - 1) * self.dilation[j]
                + 1;
            if reach > self.input_spatial[j] + 2 * self.padding[j] {
                return Err(format!(
                    "{}: output size {} does not fit the padded input along dimension {j}",
                    self.sig.func_name, self.output_spatial[j]
                ));
            }
        }
        Ok(())
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
    fn pad_input(&self, body: &mut Body, arg: &str) -> (String, Vec<u64>) {
        let mut low = Vec::new();
        let mut high = Vec::new();
        let mut padded = Vec::new();
        for j in 0..self.spatial {
            let reach = (self.output_spatial[j] - 1) * self.stride[j]
                + (self.filter_spatial[j] - 1) * self.dilation[j]
                + 1;
            let lo = self.padding[j];
            let hi = reach.saturating_sub(self.input_spatial[j] + lo);
            low.push(lo);
            high.push(hi);
            padded.push(self.input_spatial[j] + lo + hi);
        }
        if low.iter().chain(&high).all(|&p| p == 0) {
            return (arg.to_string(), padded);
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
        (value, padded)
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
        body.line(&format!(
            "^bb0(%lhs: {}, %rhs: {}, %acc: {}):",
            dtype.mlir(),
            dtype.mlir(),
            acc.mlir()
        ));
        let lhs = convert(body, "%lhs", dtype, acc)?;
        let rhs = convert(body, "%rhs", dtype, acc)?;
        let (mul, add) = if is_float(acc) {
            ("arith.mulf", "arith.addf")
        } else {
            ("arith.muli", "arith.addi")
        };
        let product = body.fresh("v");
        body.line(&format!(
            "  {product} = {mul} {lhs}, {rhs} : {}",
            acc.mlir()
        ));
        let sum = body.fresh("v");
        body.line(&format!("  {sum} = {add} %acc, {product} : {}", acc.mlir()));
        body.line(&format!("  linalg.yield {sum} : {}", acc.mlir()));
        body.line(&format!("}} -> {acc_type}"));
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

    /// Iteration dims: n, g, k, o..., c, f... (reduction from c).
    fn forward(&self, body: &mut Body) -> Result<String, String> {
        let s = self.spatial;
        let (n, g, k) = (0, 1, 2);
        let o = |j: usize| 3 + j;
        let c = 3 + s;
        let f = |j: usize| 4 + s + j;
        let dims = 4 + 2 * s;
        let (x, padded) = self.pad_input(body, self.operands[0]);
        let x_exprs: Vec<String> = (0..s)
            .map(|j| affine(&[(o(j), self.stride[j]), (f(j), self.dilation[j])], 0))
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
        let w_acc = self.filter_access(g, k, c, &f);
        let o_exprs: Vec<String> = (0..s).map(|j| format!("d{}", o(j))).collect();
        let y_acc = self.access(
            self.output_layout,
            Role::Output,
            Some(n),
            g,
            k,
            None,
            &self.output_spatial,
            &o_exprs,
        );
        let x = self.expand(
            body,
            &x,
            &self.input_layout_shape(&padded),
            &x_acc,
            self.dtype,
        );
        let w = self.expand(
            body,
            self.operands[1],
            &self.filter_layout_shape(),
            &w_acc,
            self.dtype,
        );
        let y_shape = self.output_layout_shape(&self.output_spatial);
        let y = self.contraction(
            body,
            dims,
            3 + s,
            (&x, &x_acc),
            (&w, &w_acc),
            &y_acc,
            &y_shape,
        )?;
        self.finish(body, &y, self.output_layout, &y_shape)
    }

    /// Iteration dims: g, k, c, f..., n, o... (reduction from n).
    fn backward_weight(&self, body: &mut Body) -> Result<String, String> {
        let s = self.spatial;
        let (g, k, c) = (0, 1, 2);
        let f = |j: usize| 3 + j;
        let n = 3 + s;
        let o = |j: usize| 4 + s + j;
        let dims = 4 + 2 * s;
        let (x, padded) = self.pad_input(body, self.operands[1]);
        let x_exprs: Vec<String> = (0..s)
            .map(|j| affine(&[(o(j), self.stride[j]), (f(j), self.dilation[j])], 0))
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
        let o_exprs: Vec<String> = (0..s).map(|j| format!("d{}", o(j))).collect();
        let dy_acc = self.access(
            self.output_layout,
            Role::Output,
            Some(n),
            g,
            k,
            None,
            &self.output_spatial,
            &o_exprs,
        );
        let dw_acc = self.filter_access(g, k, c, &f);
        let dy = self.expand(
            body,
            self.operands[0],
            &self.output_layout_shape(&self.output_spatial),
            &dy_acc,
            self.dtype,
        );
        let x = self.expand(
            body,
            &x,
            &self.input_layout_shape(&padded),
            &x_acc,
            self.dtype,
        );
        let w_shape = self.filter_layout_shape();
        let dw = self.contraction(
            body,
            dims,
            3 + s,
            (&dy, &dy_acc),
            (&x, &x_acc),
            &dw_acc,
            &w_shape,
        )?;
        self.finish(body, &dw, self.filter_layout, &w_shape)
    }

    /// Iteration dims: n, g, c, i..., k, f... (reduction from k).
    fn backward_data(&self, body: &mut Body) -> Result<String, String> {
        let s = self.spatial;
        let (n, g, c) = (0, 1, 2);
        let i = |j: usize| 3 + j;
        let k = 3 + s;
        let f = |j: usize| 4 + s + j;
        let dims = 4 + 2 * s;

        // dy dilated by the stride and padded by (F-1)*d - p on both sides,
        // to (I + (F-1)*d) per spatial dimension.
        let dy_shape = self.output_layout_shape(&self.output_spatial);
        let mut p_sizes = Vec::new();
        let mut offsets = vec![0u64; s];
        let mut first = vec![0u64; s];
        let mut counts = vec![0u64; s];
        let mut empty_range = false;
        for j in 0..s {
            let (fs, d, st) = (
                self.filter_spatial[j] as i64,
                self.dilation[j] as i64,
                self.stride[j] as i64,
            );
            let size = self.input_spatial[j] as i64 + (fs - 1) * d;
            let low = (fs - 1) * d - self.padding[j] as i64;
            let o_min = if low < 0 { (-low + st - 1) / st } else { 0 };
            let o_last = (self.output_spatial[j] as i64 - 1).min((size - 1 - low).div_euclid(st));
            if o_last < o_min {
                empty_range = true;
            } else {
                first[j] = o_min as u64;
                counts[j] = (o_last - o_min + 1) as u64;
                offsets[j] = (o_min * st + low) as u64;
            }
            p_sizes.push(size as u64);
        }
        let p_shape = self.output_layout_shape(&p_sizes);
        let p_type = tensor_type(&p_shape, self.dtype);
        let zeros = body.zeros(&p_shape, self.dtype);
        let per_letter = |values: &[u64], batch: u64, channel: u64| -> Vec<u64> {
            self.output_layout.arrange(batch, channel, values)
        };
        let dy_padded = if empty_range {
            zeros
        } else {
            let dy = self.operands[0];
            let mut src = dy.to_string();
            if first.iter().any(|&v| v != 0) || counts != self.output_spatial {
                let sliced = body.fresh("dy_slice");
                let slice_shape = per_letter(&counts, self.n, self.k);
                body.line(&format!(
                    "{sliced} = tensor.extract_slice {dy}[{}] [{}] [{}] : {} to {}",
                    list(per_letter(&first, 0, 0)),
                    list(&slice_shape),
                    list(per_letter(&vec![1; s], 1, 1)),
                    tensor_type(&dy_shape, self.dtype),
                    tensor_type(&slice_shape, self.dtype)
                ));
                src = sliced;
            }
            let inserted = body.fresh("dy_padded");
            let slice_shape = per_letter(&counts, self.n, self.k);
            body.line(&format!(
                "{inserted} = tensor.insert_slice {src} into {zeros}[{}] [{}] [{}] : {} into {p_type}",
                list(per_letter(&offsets, 0, 0)),
                list(&slice_shape),
                list(per_letter(&self.stride, 1, 1)),
                tensor_type(&slice_shape, self.dtype),
            ));
            inserted
        };

        // The filter flipped along its spatial dimensions.
        let w_shape = self.filter_layout_shape();
        let w_type = tensor_type(&w_shape, self.dtype);
        let mut w = self.operands[1].to_string();
        for (pos, axis) in self.filter_layout.axes().into_iter().enumerate() {
            if !matches!(axis, Axis::Spatial(_)) {
                continue;
            }
            let taps = w_shape[pos];
            if taps == 1 {
                continue;
            }
            let mut slice_shape = w_shape.clone();
            slice_shape[pos] = 1;
            let slice_type = tensor_type(&slice_shape, self.dtype);
            let mut slices = Vec::new();
            for t in 0..taps {
                let mut offs = vec![0u64; w_shape.len()];
                offs[pos] = taps - 1 - t;
                let sl = body.fresh("tap");
                body.line(&format!(
                    "{sl} = tensor.extract_slice {w}[{}] [{}] [{}] : {w_type} to {slice_type}",
                    list(offs),
                    list(&slice_shape),
                    list(vec![1; w_shape.len()])
                ));
                slices.push(sl);
            }
            let flipped = body.fresh("flipped");
            body.line(&format!(
                "{flipped} = tensor.concat dim({pos}) {} : ({}) -> {w_type}",
                list(&slices),
                list(vec![slice_type.clone(); slices.len()])
            ));
            w = flipped;
        }

        let p_exprs: Vec<String> = (0..s)
            .map(|j| affine(&[(i(j), 1), (f(j), self.dilation[j])], 0))
            .collect();
        let p_acc = self.access(
            self.output_layout,
            Role::Output,
            Some(n),
            g,
            k,
            None,
            &p_sizes,
            &p_exprs,
        );
        let w_acc = self.filter_access(g, k, c, &f);
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
        let p = self.expand(body, &dy_padded, &p_shape, &p_acc, self.dtype);
        let w = self.expand(body, &w, &w_shape, &w_acc, self.dtype);
        let dx_shape = self.input_layout_shape(&self.input_spatial);
        let dx = self.contraction(
            body,
            dims,
            3 + s,
            (&p, &p_acc),
            (&w, &w_acc),
            &dx_acc,
            &dx_shape,
        )?;
        self.finish(body, &dx, self.input_layout, &dx_shape)
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
        assert!(text.contains("tensor.concat"), "{text}");
        assert!(!text.contains("tensor.pad"), "{text}");
        // Backward data is the plain forward over the padded dy.
        let text = conv_module(&sig(&format!("{line} -F 2"))).unwrap();
        assert!(text.contains("tensor.pad %arg0 low[0, 0, 1, 1]"), "{text}");
        assert!(text.contains("-> tensor<1x4x5x5xf16>"), "{text}");
        assert!(!text.contains("tensor.concat"), "{text}");
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
}
