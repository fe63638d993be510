//! Layer-norm kernels (`layernorm`, `layernormfp16`, `layernormbfp16`): the
//! MLIR of each mode and its f64 reference, kept side by side so that one
//! file defines what the op computes.
//!
//! Semantics are PyTorch's `native_layer_norm` and its backward, normalizing
//! over the last dimension (the only one the parser accepts). With the input
//! viewed as rows `x[r, j]` (leading dimensions collapsed, `j < N`):
//!
//! - forward: `mean[r] = sum_j x / N`, `rstd[r] = 1/sqrt(sum_j (x - mean)² / N + eps)`
//!   (biased variance), `output = (x - mean)·rstd·w + b` (`w` only with
//!   `elementwise_affine`); the outputs are `output`, `mean`, `rstd`, the
//!   last two shaped like the input with a 1 for the normalized dimension;
//! - input_backward (inputs `output_grad`, `input`, [`weight`], `mean`,
//!   `rstd`, taken as given): with `g = dy·w` (or `dy`) and
//!   `xhat = (x - mean)·rstd`, `dx = rstd·(g - mean_j(g) - xhat·mean_j(g·xhat))`;
//! - weight_backward: `dw[j] = sum_r dy·xhat`; bias_backward: `db[j] = sum_r dy`.
//!
//! The MLIR views the input as a 2-D `[rows, N]` tensor (`tensor.collapse_shape`
//! or `expand_shape`), computes everything in the accumulator type (f32):
//! operands are extended inside each `linalg.generic`, row statistics are
//! f32 row reductions (the variance in a second pass around the mean, which
//! keeps it accurate when the mean is large; divisions by `N` once per row),
//! and only the final results are truncated to the signature's type, which
//! every output has (`mean` and `rstd` too).
//!
//! Verification: inputs are exact in their type and the f64 reference is the
//! exact formula. Each element passes when `|got - ref| <= rtol·|ref| + atol·S`
//! (tolerances of the output type); `rtol` covers the final rounding, and `S`
//! is the magnitude the f32 computation's own roundings scale with, i.e. the
//! sum of the absolute values of the terms forming the element, each
//! multiplied by the factors later applied to it:
//!
//! - output: `(|x| + |mean|)·|rstd|·|w| + |b|` (`x - mean` may cancel);
//! - mean: `sum_j |x| / N`;
//! - rstd: `|rstd| / 2`: the variance sums non-negative terms, so its f32
//!   error is relative, and a relative error `e` of the variance is `e/2` in
//!   rstd (the rsqrt's own error is within `rtol`);
//! - input_grad: `|rstd|·(|g| + sum_j |g| / N + X·sum_j |g|·X / N)` with
//!   `X = (|x| + |mean|)·|rstd|` the magnitude behind `xhat`;
//! - weight_grad: `sum_r |dy|·X`; bias_grad: `sum_r |dy|`.
//!
//! As for convolutions, `atol·S` is the practical bound of f32 summation
//! (errors grow like `sqrt(N)·2^-24·S`; the worst case `N·2^-24·S` stays
//! below `1e-5·S` up to 160 terms), and an f16/bf16 result's own rounding
//! (`2^-11`, `2^-8` relative) is within its `rtol`.

use crate::compare::Expected;
use crate::miopen::{ElemType, LayerNormCommand, LayerNormMode};
use crate::mlir_text::{convert, list, tensor_type, Body};
use crate::signature::{OpSignature, SignatureDetails};

/// The sizes of a layer norm: the input seen as `rows` rows of `n`.
#[derive(Debug, Clone)]
struct Shapes {
    x: Vec<u64>,
    /// The input's shape with a 1 for the normalized dimension (mean, rstd).
    aggregate: Vec<u64>,
    rows: u64,
    n: u64,
}

impl Shapes {
    fn of(ln: &LayerNormCommand) -> Shapes {
        let x = ln.input_shape.clone();
        let mut aggregate = x.clone();
        let n = aggregate.pop().unwrap_or(1);
        aggregate.push(1);
        Shapes {
            // Saturating: absurd shapes must give an error later, not a panic.
            rows: aggregate.iter().fold(1u64, |a, &d| a.saturating_mul(d)),
            n,
            aggregate,
            x,
        }
    }

    fn rows_x_n(&self) -> Vec<u64> {
        vec![self.rows, self.n]
    }
}

/// The layer norm behind `sig`, once its operands are checked to be the ones
/// the kernel reads and writes, in order, all of the signature's type.
fn checked(sig: &OpSignature) -> Result<(&LayerNormCommand, Shapes), String> {
    let name = &sig.func_name;
    let SignatureDetails::LayerNorm(ln) = &sig.details else {
        return Err(sig.not_a("layer-norm"));
    };
    sig.require_float_in_f32("layer norm", "computed")?;
    if ln.input_shape.is_empty() || ln.normalized_dim + 1 != ln.input_shape.len() {
        return Err(format!(
            "{name}: only the last dimension can be normalized (input {:?}, normalized from {})",
            ln.input_shape, ln.normalized_dim
        ));
    }
    let s = Shapes::of(ln);
    let (x, agg, normalized) = (s.x.clone(), s.aggregate.clone(), vec![s.n]);
    let (inputs, outputs) = match ln.mode {
        LayerNormMode::Forward => {
            let mut inputs = vec![x.clone()];
            inputs.extend(ln.elementwise_affine.then(|| normalized.clone()));
            inputs.extend(ln.bias.then(|| normalized.clone()));
            (inputs, vec![x, agg.clone(), agg])
        }
        LayerNormMode::InputBackward => {
            let mut inputs = vec![x.clone(), x.clone()];
            inputs.extend(ln.elementwise_affine.then(|| normalized.clone()));
            inputs.extend([agg.clone(), agg]);
            (inputs, vec![x])
        }
        LayerNormMode::WeightBackward => (vec![x.clone(), x, agg.clone(), agg], vec![normalized]),
        LayerNormMode::BiasBackward => (vec![x], vec![normalized]),
    };
    let typed = |shapes: Vec<Vec<u64>>| -> Vec<(Vec<u64>, ElemType)> {
        shapes.into_iter().map(|shape| (shape, sig.dtype)).collect()
    };
    let actual = |operands: &[crate::signature::Operand]| -> Vec<(Vec<u64>, ElemType)> {
        operands.iter().map(|o| (o.shape.clone(), o.elem)).collect()
    };
    if actual(&sig.inputs) != typed(inputs) || actual(&sig.outputs) != typed(outputs) {
        return Err(format!(
            "{name}: operands do not match the layer norm ({:?} -> {:?})",
            actual(&sig.inputs),
            actual(&sig.outputs)
        ));
    }
    Ok((ln, s))
}

// ---------------------------------------------------------------------------
// MLIR

/// Indexing maps of the 2-D loops (d0 = row, d1 = normalized index).
const ROW_COL: &str = "affine_map<(d0, d1) -> (d0, d1)>";
const ROW: &str = "affine_map<(d0, d1) -> (d0)>";
const COL: &str = "affine_map<(d0, d1) -> (d1)>";
/// The 1-D identity, for per-row or per-column element-wise work.
const IDENTITY_1D: &str = "affine_map<(d0) -> (d0)>";

const PARALLEL: &str = "\"parallel\"";
const REDUCTION: &str = "\"reduction\"";

/// A tensor value with what a generic needs to read or write it.
#[derive(Debug, Clone)]
struct Tensor {
    value: String,
    shape: Vec<u64>,
    elem: ElemType,
}

impl Tensor {
    fn new(value: impl Into<String>, shape: Vec<u64>, elem: ElemType) -> Tensor {
        Tensor {
            value: value.into(),
            shape,
            elem,
        }
    }

    fn ty(&self) -> String {
        tensor_type(&self.shape, self.elem)
    }
}

/// Emits the function body of one layer-norm kernel.
struct Kernel<'a> {
    ln: &'a LayerNormCommand,
    s: Shapes,
    dtype: ElemType,
    body: Body,
    /// `N` as an f32 constant, for the means.
    n: String,
}

/// The accumulator type of every kernel (checked by [`checked`]).
const ACC: ElemType = ElemType::F32;

/// An f32 literal MLIR reads back to exactly `value as f32`.
fn f32_literal(value: f64) -> String {
    format!("{:.8e} : f32", value as f32)
}

impl<'a> Kernel<'a> {
    fn new(ln: &'a LayerNormCommand, s: Shapes, dtype: ElemType) -> Kernel<'a> {
        let mut body = Body::default();
        let n = body.fresh("n");
        body.line(&format!("{n} = arith.constant {}", f32_literal(s.n as f64)));
        Kernel {
            ln,
            s,
            dtype,
            body,
            n,
        }
    }

    /// `%out = {op} {a}, {b}` in f32 inside a region.
    fn arith(&mut self, op: &str, a: &str, b: &str) -> String {
        let out = self.body.fresh("v");
        self.body
            .line(&format!("  {out} = {op} {a}, {b} : {}", ACC.mlir()));
        out
    }

    fn extend(&mut self, value: &str) -> Result<String, String> {
        convert(&mut self.body, value, self.dtype, ACC)
    }

    /// A zero-filled f32 tensor, the initial value of a reduction.
    fn zeros(&mut self, shape: &[u64]) -> Tensor {
        let filled = self.body.zeros(shape, ACC);
        Tensor::new(filled, shape.to_vec(), ACC)
    }

    fn empty(&mut self, shape: &[u64], elem: ElemType) -> Tensor {
        let t = Tensor::new(self.body.fresh("empty"), shape.to_vec(), elem);
        self.body
            .line(&format!("{} = tensor.empty() : {}", t.value, t.ty()));
        t
    }

    /// One `linalg.generic`: `ins` and `outs` with their maps, `iterators`
    /// per loop; `region` gets the block arguments (inputs then outputs) and
    /// returns the values to yield. Returns the results.
    fn generic(
        &mut self,
        iterators: &[&str],
        ins: &[(&Tensor, &str)],
        outs: &[(&Tensor, &str)],
        region: impl FnOnce(&mut Self, &[String]) -> Result<Vec<String>, String>,
    ) -> Result<Vec<Tensor>, String> {
        let maps = list(ins.iter().chain(outs).map(|(_, map)| *map));
        let operands = |all: &[(&Tensor, &str)]| {
            format!(
                "{} : {}",
                list(all.iter().map(|(t, _)| t.value.clone())),
                list(all.iter().map(|(t, _)| t.ty()))
            )
        };
        let results = self.body.fresh("r");
        let head = if outs.len() == 1 {
            results.clone()
        } else {
            format!("{results}:{}", outs.len())
        };
        self.body.line(&format!(
            "{head} = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{}]}} ins({}) outs({}) {{",
            list(iterators),
            operands(ins),
            operands(outs)
        ));
        let args: Vec<String> = (0..ins.len())
            .map(|i| format!("%in{i}"))
            .chain((0..outs.len()).map(|i| format!("%out{i}")))
            .collect();
        let typed_args = args
            .iter()
            .zip(ins.iter().chain(outs))
            .map(|(arg, (t, _))| format!("{arg}: {}", t.elem.mlir()));
        self.body.line(&format!("^bb0({}):", list(typed_args)));
        let yields = region(self, &args)?;
        self.body.line(&format!(
            "  linalg.yield {} : {}",
            list(&yields),
            list(outs.iter().map(|(t, _)| t.elem.mlir()))
        ));
        let out_types = list(outs.iter().map(|(t, _)| t.ty()));
        if outs.len() == 1 {
            self.body.line(&format!("}} -> {out_types}"));
            return Ok(vec![Tensor::new(
                results,
                outs[0].0.shape.clone(),
                outs[0].0.elem,
            )]);
        }
        self.body.line(&format!("}} -> ({out_types})"));
        Ok(outs
            .iter()
            .enumerate()
            .map(|(i, (t, _))| Tensor::new(format!("{results}#{i}"), t.shape.clone(), t.elem))
            .collect())
    }

    /// `tensor.collapse_shape` or `expand_shape` of `t` to `shape` with
    /// `groups` (nothing when the shapes are equal).
    fn reshape(&mut self, t: &Tensor, shape: &[u64], groups: &[Vec<usize>]) -> Tensor {
        if t.shape == shape {
            return t.clone();
        }
        let out = Tensor::new(self.body.fresh("reshaped"), shape.to_vec(), t.elem);
        let groups = format!(
            "[{}]",
            list(groups.iter().map(|g| format!("[{}]", list(g))))
        );
        let line = if shape.len() < t.shape.len() {
            format!(
                "{} = tensor.collapse_shape {} {groups} : {} into {}",
                out.value,
                t.value,
                t.ty(),
                out.ty()
            )
        } else {
            format!(
                "{} = tensor.expand_shape {} {groups} output_shape [{}] : {} into {}",
                out.value,
                t.value,
                list(shape),
                t.ty(),
                out.ty()
            )
        };
        self.body.line(&line);
        out
    }

    /// How the input's dimensions group into `[rows, N]`.
    fn x_groups(&self) -> Vec<Vec<usize>> {
        let r = self.s.x.len();
        if r == 1 {
            vec![vec![0, 1]]
        } else {
            vec![(0..r - 1).collect(), vec![r - 1]]
        }
    }

    /// How the aggregate's dimensions group into `[rows]`.
    fn aggregate_groups(&self) -> Vec<Vec<usize>> {
        vec![(0..self.s.aggregate.len()).collect()]
    }

    fn x_in(&mut self, arg: usize) -> Tensor {
        let t = Tensor::new(format!("%arg{arg}"), self.s.x.clone(), self.dtype);
        self.reshape(&t, &self.s.rows_x_n(), &self.x_groups())
    }

    fn aggregate_in(&mut self, arg: usize) -> Tensor {
        let t = Tensor::new(format!("%arg{arg}"), self.s.aggregate.clone(), self.dtype);
        self.reshape(&t, &[self.s.rows], &self.aggregate_groups())
    }

    fn normalized_in(&self, arg: usize) -> Tensor {
        Tensor::new(format!("%arg{arg}"), vec![self.s.n], self.dtype)
    }

    fn x_out(&mut self, t: &Tensor) -> Tensor {
        let shape = self.s.x.clone();
        self.reshape(t, &shape, &self.x_groups())
    }

    fn aggregate_out(&mut self, t: &Tensor) -> Tensor {
        let shape = self.s.aggregate.clone();
        self.reshape(t, &shape, &self.aggregate_groups())
    }

    /// Truncates 1-D f32 tensors to the kernel's type, in one generic.
    fn truncate_1d(&mut self, values: &[&Tensor]) -> Result<Vec<Tensor>, String> {
        if self.dtype == ACC {
            return Ok(values.iter().map(|t| (*t).clone()).collect());
        }
        let outs: Vec<Tensor> = values
            .iter()
            .map(|t| self.empty(&t.shape, self.dtype))
            .collect();
        let ins: Vec<(&Tensor, &str)> = values.iter().map(|t| (*t, IDENTITY_1D)).collect();
        let outs: Vec<(&Tensor, &str)> = outs.iter().map(|t| (t, IDENTITY_1D)).collect();
        let count = ins.len();
        self.generic(&[PARALLEL], &ins, &outs, |k, args| {
            args[..count]
                .iter()
                .map(|a| convert(&mut k.body, a, ACC, k.dtype))
                .collect()
        })
    }

    /// Per-row f32 sums divided by `N`, once per row rather than inside the
    /// element-wise loops that use them.
    fn means(&mut self, sums: &[&Tensor]) -> Result<Vec<Tensor>, String> {
        let outs: Vec<Tensor> = sums.iter().map(|t| self.empty(&t.shape, ACC)).collect();
        let ins: Vec<(&Tensor, &str)> = sums.iter().map(|t| (*t, IDENTITY_1D)).collect();
        let outs: Vec<(&Tensor, &str)> = outs.iter().map(|t| (t, IDENTITY_1D)).collect();
        let count = ins.len();
        self.generic(&[PARALLEL], &ins, &outs, |k, args| {
            let n = k.n.clone();
            Ok(args[..count]
                .iter()
                .map(|sum| k.arith("arith.divf", sum, &n))
                .collect())
        })
    }

    /// `g = dy·w` (or `dy`), extended, from block arguments.
    fn gradient(&mut self, dy: &str, w: Option<&str>) -> Result<String, String> {
        let dy = self.extend(dy)?;
        match w {
            Some(w) => {
                let w = self.extend(w)?;
                Ok(self.arith("arith.mulf", &dy, &w))
            }
            None => Ok(dy),
        }
    }

    /// `xhat = (x - mean)·rstd`, extended, from block arguments.
    fn normalized(&mut self, x: &str, mean: &str, rstd: &str) -> Result<String, String> {
        let x = self.extend(x)?;
        let mean = self.extend(mean)?;
        let rstd = self.extend(rstd)?;
        let centered = self.arith("arith.subf", &x, &mean);
        Ok(self.arith("arith.mulf", &centered, &rstd))
    }

    /// Forward: the row statistics, then the normalized output.
    fn forward(&mut self) -> Result<Vec<Tensor>, String> {
        let x = self.x_in(0);
        let (mean, rstd) = self.statistics(&x)?;
        let y = self.normalize(&x, &mean, &rstd)?;
        let stats = self.truncate_1d(&[&mean, &rstd])?;
        Ok(vec![
            self.x_out(&y),
            self.aggregate_out(&stats[0]),
            self.aggregate_out(&stats[1]),
        ])
    }

    /// Per-row f32 mean and rstd of the `[rows, N]` input: the row sums, the
    /// squared deviations around the mean, then rsqrt of the biased variance
    /// plus eps.
    fn statistics(&mut self, x: &Tensor) -> Result<(Tensor, Tensor), String> {
        let rows = [self.s.rows];
        let zeros = self.zeros(&rows);
        let row_reduction = [PARALLEL, REDUCTION];
        let sum = self.generic(&row_reduction, &[(x, ROW_COL)], &[(&zeros, ROW)], |k, a| {
            let x = k.extend(&a[0])?;
            Ok(vec![k.arith("arith.addf", &a[1], &x)])
        })?;
        let mean = self.means(&[&sum[0]])?.remove(0);
        let deviations = self.generic(
            &row_reduction,
            &[(x, ROW_COL), (&mean, ROW)],
            &[(&zeros, ROW)],
            |k, a| {
                let x = k.extend(&a[0])?;
                let d = k.arith("arith.subf", &x, &a[1]);
                let square = k.arith("arith.mulf", &d, &d);
                Ok(vec![k.arith("arith.addf", &a[2], &square)])
            },
        )?;
        let eps = self.body.fresh("eps");
        let eps_value = f32_literal(self.ln.eps);
        self.body
            .line(&format!("{eps} = arith.constant {eps_value}"));
        let r0 = self.empty(&rows, ACC);
        let rstd = self.generic(
            &[PARALLEL],
            &[(&deviations[0], IDENTITY_1D)],
            &[(&r0, IDENTITY_1D)],
            |k, a| {
                let n = k.n.clone();
                let variance = k.arith("arith.divf", &a[0], &n);
                let shifted = k.arith("arith.addf", &variance, &eps);
                let rstd = k.body.fresh("v");
                k.body
                    .line(&format!("  {rstd} = math.rsqrt {shifted} : {}", ACC.mlir()));
                Ok(vec![rstd])
            },
        )?;
        Ok((mean, rstd[0].clone()))
    }

    /// `(x - mean)·rstd·w + b` in the kernel's type, `w` and `b` the inputs
    /// after `x` when the command has them.
    fn normalize(&mut self, x: &Tensor, mean: &Tensor, rstd: &Tensor) -> Result<Tensor, String> {
        let has_w = self.ln.elementwise_affine;
        let w = has_w.then(|| self.normalized_in(1));
        let b = self
            .ln
            .bias
            .then(|| self.normalized_in(1 + usize::from(has_w)));
        let mut ins = vec![(x, ROW_COL), (mean, ROW), (rstd, ROW)];
        ins.extend(w.as_ref().map(|w| (w, COL)));
        ins.extend(b.as_ref().map(|b| (b, COL)));
        let y0 = self.empty(&self.s.rows_x_n(), self.dtype);
        let has_b = b.is_some();
        let y = self.generic(&[PARALLEL, PARALLEL], &ins, &[(&y0, ROW_COL)], |k, a| {
            let x = k.extend(&a[0])?;
            let centered = k.arith("arith.subf", &x, &a[1]);
            let mut v = k.arith("arith.mulf", &centered, &a[2]);
            if has_w {
                let w = k.extend(&a[3])?;
                v = k.arith("arith.mulf", &v, &w);
            }
            if has_b {
                let b = k.extend(&a[3 + usize::from(has_w)])?;
                v = k.arith("arith.addf", &v, &b);
            }
            Ok(vec![convert(&mut k.body, &v, ACC, k.dtype)?])
        })?;
        Ok(y[0].clone())
    }

    /// Input backward: the row sums of `g` and `g·xhat`, then `dx`.
    fn input_backward(&mut self) -> Result<Vec<Tensor>, String> {
        let dy = self.x_in(0);
        let x = self.x_in(1);
        let has_w = self.ln.elementwise_affine;
        let w = has_w.then(|| self.normalized_in(2));
        let mean = self.aggregate_in(2 + usize::from(has_w));
        let rstd = self.aggregate_in(3 + usize::from(has_w));
        // Block arguments: dy, x, mean, rstd, [w], then anything else.
        let mut ins = vec![(&dy, ROW_COL), (&x, ROW_COL), (&mean, ROW), (&rstd, ROW)];
        ins.extend(w.as_ref().map(|w| (w, COL)));
        let (zeros_g, zeros_gx) = (self.zeros(&[self.s.rows]), self.zeros(&[self.s.rows]));
        let sums = self.generic(
            &[PARALLEL, REDUCTION],
            &ins,
            &[(&zeros_g, ROW), (&zeros_gx, ROW)],
            |k, a| {
                let g = k.gradient(&a[0], has_w.then(|| a[4].as_str()))?;
                let xhat = k.normalized(&a[1], &a[2], &a[3])?;
                let gx = k.arith("arith.mulf", &g, &xhat);
                let outs = &a[a.len() - 2..];
                Ok(vec![
                    k.arith("arith.addf", &outs[0], &g),
                    k.arith("arith.addf", &outs[1], &gx),
                ])
            },
        )?;
        let means = self.means(&[&sums[0], &sums[1]])?;
        ins.extend([(&means[0], ROW), (&means[1], ROW)]);
        let dx0 = self.empty(&self.s.rows_x_n(), self.dtype);
        let dx = self.generic(&[PARALLEL, PARALLEL], &ins, &[(&dx0, ROW_COL)], |k, a| {
            let g = k.gradient(&a[0], has_w.then(|| a[4].as_str()))?;
            let xhat = k.normalized(&a[1], &a[2], &a[3])?;
            let first = 4 + usize::from(has_w);
            let (mean_g, mean_gx) = (&a[first], &a[first + 1]);
            let projected = k.arith("arith.mulf", &xhat, mean_gx);
            let centered = k.arith("arith.subf", &g, mean_g);
            let inner = k.arith("arith.subf", &centered, &projected);
            let rstd = k.extend(&a[3])?;
            let dx = k.arith("arith.mulf", &rstd, &inner);
            Ok(vec![convert(&mut k.body, &dx, ACC, k.dtype)?])
        })?;
        Ok(vec![self.x_out(&dx[0])])
    }

    /// Weight backward: column sums of `dy·xhat` over the rows.
    fn weight_backward(&mut self) -> Result<Vec<Tensor>, String> {
        let dy = self.x_in(0);
        let x = self.x_in(1);
        let mean = self.aggregate_in(2);
        let rstd = self.aggregate_in(3);
        let zeros = self.zeros(&[self.s.n]);
        let dw = self.generic(
            &[REDUCTION, PARALLEL],
            &[(&dy, ROW_COL), (&x, ROW_COL), (&mean, ROW), (&rstd, ROW)],
            &[(&zeros, COL)],
            |k, a| {
                let dy = k.extend(&a[0])?;
                let xhat = k.normalized(&a[1], &a[2], &a[3])?;
                let term = k.arith("arith.mulf", &dy, &xhat);
                Ok(vec![k.arith("arith.addf", &a[4], &term)])
            },
        )?;
        self.truncate_1d(&[&dw[0]])
    }

    /// Bias backward: column sums of `dy` over the rows.
    fn bias_backward(&mut self) -> Result<Vec<Tensor>, String> {
        let dy = self.x_in(0);
        let zeros = self.zeros(&[self.s.n]);
        let db = self.generic(
            &[REDUCTION, PARALLEL],
            &[(&dy, ROW_COL)],
            &[(&zeros, COL)],
            |k, a| {
                let dy = k.extend(&a[0])?;
                Ok(vec![k.arith("arith.addf", &a[1], &dy)])
            },
        )?;
        self.truncate_1d(&[&db[0]])
    }
}

/// The MLIR module of a layer-norm signature.
pub fn module(sig: &OpSignature) -> Result<String, String> {
    let (ln, s) = checked(sig)?;
    let mut kernel = Kernel::new(ln, s, sig.dtype);
    let results = match ln.mode {
        LayerNormMode::Forward => kernel.forward()?,
        LayerNormMode::InputBackward => kernel.input_backward()?,
        LayerNormMode::WeightBackward => kernel.weight_backward()?,
        LayerNormMode::BiasBackward => kernel.bias_backward()?,
    };
    let types = list(results.iter().map(Tensor::ty));
    kernel.body.line(&format!(
        "return {} : {types}",
        list(results.iter().map(|t| t.value.clone()))
    ));
    let args = list(
        sig.inputs
            .iter()
            .enumerate()
            .map(|(i, o)| format!("%arg{i}: {}", tensor_type(&o.shape, o.elem))),
    );
    let result_types = if results.len() == 1 {
        types
    } else {
        format!("({types})")
    };
    Ok(format!(
        "module {{\n  func.func @{}({args}) -> {result_types} {{\n{}  }}\n}}\n",
        sig.func_name, kernel.body.text
    ))
}

// ---------------------------------------------------------------------------
// Reference

/// The reference of each output of a layer-norm signature.
pub fn reference(sig: &OpSignature, inputs: &[Vec<f64>]) -> Result<Vec<Expected>, String> {
    let (ln, s) = checked(sig)?;
    let name = &sig.func_name;
    if inputs.len() != sig.inputs.len() {
        return Err(format!(
            "{name}: {} input vectors for {} operands",
            inputs.len(),
            sig.inputs.len()
        ));
    }
    for (i, (values, operand)) in inputs.iter().zip(&sig.inputs).enumerate() {
        if values.len() as u64 != operand.elements() {
            return Err(format!(
                "{name}: input {i} has {} values, its operand {} elements",
                values.len(),
                operand.elements()
            ));
        }
    }
    let rows = Rows {
        rows: s.rows as usize,
        n: s.n as usize,
    };
    let w = ln.elementwise_affine;
    Ok(match ln.mode {
        LayerNormMode::Forward => {
            let weight = w.then(|| inputs[1].as_slice());
            let bias = ln.bias.then(|| inputs[1 + usize::from(w)].as_slice());
            rows.forward(&inputs[0], weight, bias, ln.eps)
        }
        LayerNormMode::InputBackward => {
            let weight = w.then(|| inputs[2].as_slice());
            let stats = &inputs[2 + usize::from(w)..];
            vec![rows.input_backward(&inputs[0], &inputs[1], weight, &stats[0], &stats[1])]
        }
        LayerNormMode::WeightBackward => {
            vec![rows.weight_backward(&inputs[0], &inputs[1], &inputs[2], &inputs[3])]
        }
        LayerNormMode::BiasBackward => vec![rows.bias_backward(&inputs[0])],
    })
}

/// The input as `rows` rows of `n` normalized elements (row-major).
struct Rows {
    rows: usize,
    n: usize,
}

/// `(|x| + |mean|)·|rstd|`: the magnitude of `xhat` before `x - mean` cancels.
fn xhat_magnitude(x: f64, mean: f64, rstd: f64) -> f64 {
    (x.abs() + mean.abs()) * rstd.abs()
}

impl Rows {
    fn row<'v>(&self, values: &'v [f64], r: usize) -> &'v [f64] {
        &values[r * self.n..(r + 1) * self.n]
    }

    fn forward(
        &self,
        x: &[f64],
        weight: Option<&[f64]>,
        bias: Option<&[f64]>,
        eps: f64,
    ) -> Vec<Expected> {
        let n = self.n as f64;
        let mut y = Expected::zeros(x.len());
        let mut mean = Expected::zeros(self.rows);
        let mut rstd = Expected::zeros(self.rows);
        for r in 0..self.rows {
            let xs = self.row(x, r);
            let m = xs.iter().sum::<f64>() / n;
            let variance = xs.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n;
            let rs = 1.0 / (variance + eps).sqrt();
            mean.set(r, m, xs.iter().map(|v| v.abs()).sum::<f64>() / n);
            rstd.set(r, rs, rs.abs() / 2.0);
            for (j, &xv) in xs.iter().enumerate() {
                let w = weight.map_or(1.0, |w| w[j]);
                let b = bias.map_or(0.0, |b| b[j]);
                let value = (xv - m) * rs * w + b;
                let magnitude = xhat_magnitude(xv, m, rs) * w.abs() + b.abs();
                y.set(r * self.n + j, value, magnitude);
            }
        }
        vec![y, mean, rstd]
    }

    fn input_backward(
        &self,
        dy: &[f64],
        x: &[f64],
        weight: Option<&[f64]>,
        mean: &[f64],
        rstd: &[f64],
    ) -> Expected {
        let n = self.n as f64;
        let mut dx = Expected::zeros(x.len());
        for r in 0..self.rows {
            let (m, rs) = (mean[r], rstd[r]);
            let g: Vec<f64> = self
                .row(dy, r)
                .iter()
                .enumerate()
                .map(|(j, d)| d * weight.map_or(1.0, |w| w[j]))
                .collect();
            let xs = self.row(x, r);
            let xhat: Vec<f64> = xs.iter().map(|v| (v - m) * rs).collect();
            let magnitude: Vec<f64> = xs.iter().map(|&v| xhat_magnitude(v, m, rs)).collect();
            let mean_g = g.iter().sum::<f64>() / n;
            let mean_gx = g.iter().zip(&xhat).map(|(a, b)| a * b).sum::<f64>() / n;
            let mean_abs_g = g.iter().map(|v| v.abs()).sum::<f64>() / n;
            let mean_abs_gx = g
                .iter()
                .zip(&magnitude)
                .map(|(a, b)| a.abs() * b)
                .sum::<f64>()
                / n;
            for j in 0..self.n {
                let value = rs * (g[j] - mean_g - xhat[j] * mean_gx);
                let s = rs.abs() * (g[j].abs() + mean_abs_g + magnitude[j] * mean_abs_gx);
                dx.set(r * self.n + j, value, s);
            }
        }
        dx
    }

    fn weight_backward(&self, dy: &[f64], x: &[f64], mean: &[f64], rstd: &[f64]) -> Expected {
        let mut dw = Expected::zeros(self.n);
        for r in 0..self.rows {
            let (m, rs) = (mean[r], rstd[r]);
            for (j, (d, v)) in self.row(dy, r).iter().zip(self.row(x, r)).enumerate() {
                dw.values[j] += d * (v - m) * rs;
                dw.sums[j] += d.abs() * xhat_magnitude(*v, m, rs);
            }
        }
        dw
    }

    fn bias_backward(&self, dy: &[f64]) -> Expected {
        let mut db = Expected::zeros(self.n);
        for r in 0..self.rows {
            for (j, d) in self.row(dy, r).iter().enumerate() {
                db.values[j] += d;
                db.sums[j] += d.abs();
            }
        }
        db
    }
}

impl Expected {
    fn zeros(len: usize) -> Expected {
        Expected {
            values: vec![0.0; len],
            sums: vec![0.0; len],
        }
    }

    fn set(&mut self, i: usize, value: f64, sum: f64) {
        self.values[i] = value;
        self.sums[i] = sum;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{compare_as, tolerance, OutputCheck};
    use crate::tensor_data::inputs;
    use crate::testing::sig;

    fn refs(line: &str, inputs: &[Vec<f64>]) -> Vec<Expected> {
        reference(&sig(line), inputs).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                "{got:?} vs {want:?}"
            );
        }
    }

    #[test]
    fn forward_by_hand() {
        // Row 0 = [1, 3, 1, 3]: mean 2, variance 1; row 1 constant: variance 0.
        let x = vec![1.0, 3.0, 1.0, 3.0, 2.0, 2.0, 2.0, 2.0];
        let (w, b) = (vec![1.0, 2.0, -1.0, 0.5], vec![0.0, 1.0, 0.0, -2.0]);
        let out = refs("layernorm -X 2x4 -o 1 -e 1e-5", &[x, w, b]);
        let (r0, r1) = (1.0 / (1.0f64 + 1e-5).sqrt(), 1.0 / 1e-5f64.sqrt());
        // (x - mean)·rstd·w + b; row 1 normalizes to 0 and leaves b.
        close(
            &out[0].values,
            &[-r0, 2.0 * r0 + 1.0, r0, 0.5 * r0 - 2.0, 0.0, 1.0, 0.0, -2.0],
        );
        close(&out[1].values, &[2.0, 2.0]);
        close(&out[2].values, &[r0, r1]);
        // S: (|x| + |mean|)·rstd·|w| + |b|, mean |x|, rstd / 2.
        close(
            &out[0].sums[..4],
            &[3.0 * r0, 10.0 * r0 + 1.0, 3.0 * r0, 2.5 * r0 + 2.0],
        );
        close(&out[1].sums, &[2.0, 2.0]);
        close(&out[2].sums, &[r0 / 2.0, r1 / 2.0]);
        // Without a weight (-m 1) the bias is the second input.
        let out = refs(
            "layernorm -X 1x4 -o 1 -m 1 -e 1e-5",
            &[vec![1.0, 3.0, 1.0, 3.0], vec![1.0; 4]],
        );
        close(&out[0].values, &[1.0 - r0, 1.0 + r0, 1.0 - r0, 1.0 + r0]);
    }

    #[test]
    fn input_backward_by_hand() {
        // x = [0, 2] with mean 1 and rstd 2 as given: xhat = [-2, 2].
        // With w = [2, -1]: g = dy·w = [2, -3], mean(g) = -0.5,
        // mean(g·xhat) = mean([-4, -6]) = -5, dx = 2·(g + 0.5 - xhat·(-5)).
        let (dy, x) = (vec![1.0, 3.0], vec![0.0, 2.0]);
        let (mean, rstd) = (vec![1.0], vec![2.0]);
        let out = refs(
            "layernorm -X 1x2 -o 1 -F 2",
            &[
                dy.clone(),
                x.clone(),
                vec![2.0, -1.0],
                mean.clone(),
                rstd.clone(),
            ],
        );
        close(&out[0].values, &[-15.0, 15.0]);
        // S = |rstd|·(|g| + mean|g| + X·mean(|g|·X)), X = (|x| + |mean|)·|rstd| = [2, 6].
        close(
            &out[0].sums,
            &[
                2.0 * (2.0 + 2.5 + 2.0 * 11.0),
                2.0 * (3.0 + 2.5 + 6.0 * 11.0),
            ],
        );
        // Without a weight g = dy: mean(g) = 2, mean(g·xhat) = mean([-2, 6]) = 2.
        let out = refs("layernorm -X 1x2 -o 1 -m 1 -F 2", &[dy, x, mean, rstd]);
        close(&out[0].values, &[6.0, -6.0]);
        // A zero rstd (possible for given inputs) zeroes the gradient.
        let out = refs(
            "layernorm -X 1x2 -o 1 -m 1 -F 2",
            &[vec![1.0, 3.0], vec![0.0, 2.0], vec![1.0], vec![0.0]],
        );
        assert_eq!(out[0].values, [0.0, 0.0]);
    }

    #[test]
    fn weight_and_bias_backward_by_hand() {
        // Rows [0, 2] (mean 1, rstd 2: xhat [-2, 2]) and [1, 1] (mean 0,
        // rstd -1: xhat [-1, -1]); dy rows [1, 3] and [2, -1].
        let dy = vec![1.0, 3.0, 2.0, -1.0];
        let x = vec![0.0, 2.0, 1.0, 1.0];
        let out = refs(
            "layernorm -X 2x2 -o 1 -F 3",
            &[dy.clone(), x, vec![1.0, 0.0], vec![2.0, -1.0]],
        );
        close(&out[0].values, &[-2.0 - 2.0, 6.0 + 1.0]);
        close(
            &out[0].sums,
            &[1.0 * 2.0 + 2.0 * 1.0, 3.0 * 6.0 + 1.0 * 1.0],
        );
        let out = refs("layernorm -X 2x2 -o 1 -F 4", &[dy]);
        close(&out[0].values, &[3.0, 2.0]);
        close(&out[0].sums, &[3.0, 4.0]);
    }

    /// The backward modes are the derivatives of the forward output: with
    /// `L = <y(x, w, b), dy>`, `dx`, `dw` and `db` must match central finite
    /// differences of `L` (input_backward given the forward's mean and rstd).
    #[test]
    fn backward_modes_are_the_forward_derivatives() {
        let shape = "-X 3x5 -o 1 -e 1e-3";
        let fwd = format!("layernorm {shape}");
        let data = inputs(&sig(&fwd), 5);
        let dy = inputs(&sig(&format!("{fwd} -F 4")), 6).remove(0);
        let loss = |data: &[Vec<f64>]| -> f64 {
            let y = &refs(&fwd, data)[0].values;
            y.iter().zip(&dy).map(|(a, b)| a * b).sum()
        };
        let derivative = |operand: usize| -> Vec<f64> {
            let h = 1e-6;
            (0..data[operand].len())
                .map(|i| {
                    let (mut up, mut down) = (data.to_vec(), data.to_vec());
                    up[operand][i] += h;
                    down[operand][i] -= h;
                    (loss(&up) - loss(&down)) / (2.0 * h)
                })
                .collect()
        };
        let forward = refs(&fwd, &data);
        let (mean, rstd) = (forward[1].values.clone(), forward[2].values.clone());
        let (x, w) = (data[0].clone(), data[1].clone());
        let dx = refs(
            &format!("{fwd} -F 2"),
            &[dy.clone(), x.clone(), w, mean.clone(), rstd.clone()],
        );
        let dw = refs(&format!("{fwd} -F 3"), &[dy.clone(), x, mean, rstd]);
        let db = refs(&format!("{fwd} -F 4"), std::slice::from_ref(&dy));
        for (name, analytic, numeric) in [
            ("dx", &dx[0].values, derivative(0)),
            ("dw", &dw[0].values, derivative(1)),
            ("db", &db[0].values, derivative(2)),
        ] {
            for (a, n) in analytic.iter().zip(&numeric) {
                assert!(
                    (a - n).abs() <= 1e-6 * a.abs().max(1.0),
                    "{name}: {a} vs {n}"
                );
            }
            assert!(
                analytic.iter().any(|v| v.abs() > 0.1),
                "{name}: {analytic:?}"
            );
        }
    }

    #[test]
    fn module_text() {
        let text = module(&sig("layernormbfp16 -X 2x3x4x8 -o 3")).unwrap();
        assert!(text.contains(
            "func.func @layer_norm_1d_bfloat16_forward_2x3x4x8_w_b(%arg0: tensor<2x3x4x8xbf16>, %arg1: tensor<8xbf16>, %arg2: tensor<8xbf16>) -> (tensor<2x3x4x8xbf16>, tensor<2x3x4x1xbf16>, tensor<2x3x4x1xbf16>)"
        ));
        assert!(text.contains("tensor.collapse_shape %arg0 [[0, 1, 2], [3]]"));
        assert!(text.contains("math.rsqrt"));
        assert!(text.contains("arith.constant 8.00000000e0 : f32"));
        assert!(text.contains("arith.constant 9.99999975e-6 : f32"));
        assert!(text.contains("arith.truncf"));
        // One-dimensional input: one row.
        let text = module(&sig("layernorm -X 24 -o 0 -m 1 -F 2")).unwrap();
        assert!(text.contains("tensor.expand_shape %arg0 [[0, 1]] output_shape [1, 24]"));
        assert!(!text.contains("truncf") && !text.contains("extf"));
    }

    #[test]
    fn wrong_signatures_and_inputs_are_errors() {
        let s = sig("layernorm -X 2x4 -o 1");
        let err = reference(&s, &[vec![0.0; 8]]).unwrap_err();
        assert!(err.contains("input vectors"), "{err}");
        let err = reference(&s, &[vec![0.0; 8], vec![0.0; 4], vec![0.0; 3]]).unwrap_err();
        assert!(err.contains("3 values"), "{err}");
        let mut bad = s.clone();
        bad.outputs[1].shape = vec![2];
        assert!(module(&bad).unwrap_err().contains("do not match"));
        // An output of another type than the signature's.
        let mut bad = s.clone();
        bad.outputs[1].elem = ElemType::F16;
        assert!(module(&bad).unwrap_err().contains("do not match"));
        let gemm = sig("gemm -m 2 -k 2 -n 2");
        assert!(module(&gemm).unwrap_err().contains("not a layer-norm"));
    }

    /// Compiles and runs `line` on `inputs(sig, seed)` with the real tools;
    /// returns the signature, its inputs, every output, the references and
    /// the verdict of each output.
    fn execute(line: &str, seed: u64) -> Run {
        let sig = sig(line);
        let text = module(&sig).unwrap_or_else(|e| panic!("{line}: {e}"));
        let data = inputs(&sig, seed);
        let got = crate::testing::execute(&sig, &text, &data);
        let want = refs(line, &data);
        let verdicts = sig
            .outputs
            .iter()
            .zip(&got)
            .zip(&want)
            .map(|((o, g), w)| compare_as(o.elem, g, &w.values, &w.sums))
            .collect();
        Run {
            sig,
            data,
            got,
            want,
            verdicts,
        }
    }

    struct Run {
        sig: OpSignature,
        data: Vec<Vec<f64>>,
        got: Vec<Vec<f64>>,
        want: Vec<Expected>,
        verdicts: Vec<OutputCheck>,
    }

    /// Every mode, with and without weight, f32, f16 and bf16, 1-D, 2-D and
    /// 4-D inputs.
    const MATRIX: &[&str] = &[
        "layernorm -X 4x16 -o 1",
        "layernorm -X 24 -o 0 -m 1 -e 1e-3",
        "layernormfp16 -X 3x40 -o 1",
        "layernormfp16 -X 2x3x4x8 -o 3 -m 1",
        "layernormbfp16 -X 2x2x3x16 -o 3",
        "layernorm -X 2x3x4x8 -o 3 -F 2",
        "layernormfp16 -X 6x16 -o 1 -m 1 -F 2",
        "layernormbfp16 -X 2x3x4x8 -o 3 -F 2",
        "layernorm -X 2x3x4x8 -o 3 -F 3",
        "layernormbfp16 -X 12x8 -o 1 -F 3",
        "layernormfp16 -X 2x3x2x8 -o 3 -m 1 -F 3",
        "layernorm -X 5x6 -o 1 -F 4",
        "layernormfp16 -X 2x3x4x8 -o 3 -F 4",
        "layernormbfp16 -X 7x8 -o 1 -F 4",
    ];

    #[test]
    fn the_matrix_runs_and_passes() {
        std::thread::scope(|scope| {
            let jobs: Vec<_> = MATRIX
                .iter()
                .map(|line| scope.spawn(move || (line, execute(line, 42))))
                .collect();
            for job in jobs {
                let (line, run) = job.join().unwrap();
                assert_eq!(run.got.len(), run.sig.outputs.len(), "{line}");
                for ((operand, verdict), want) in
                    run.sig.outputs.iter().zip(&run.verdicts).zip(&run.want)
                {
                    assert!(verdict.passed, "{line}: {}: {verdict:?}", operand.name);
                    assert!(
                        want.values.iter().any(|v| *v != 0.0),
                        "{line}: {}: trivial",
                        operand.name
                    );
                }
            }
        });
    }

    fn passes(elem: ElemType, got: &[f64], want: &Expected) -> bool {
        compare_as(elem, got, &want.values, &want.sums).passed
    }

    fn scaled(values: &[f64], factor: f64) -> Vec<f64> {
        values.iter().map(|v| v * factor).collect()
    }

    /// Real outputs fail against plausible wrong kernels (a dropped bias,
    /// weight, projection term or rstd factor) and when scaled by a few
    /// times their tolerance: the per-element bounds are not loose.
    #[test]
    fn wrong_results_fail() {
        let lines = [
            "layernormbfp16 -X 2x2x3x16 -o 3",
            "layernorm -X 4x16 -o 1",
            "layernormfp16 -X 6x16 -o 1 -F 2",
            "layernormbfp16 -X 12x8 -o 1 -F 3",
        ];
        let runs: Vec<Run> = std::thread::scope(|scope| {
            let jobs: Vec<_> = lines
                .iter()
                .map(|line| scope.spawn(move || execute(line, 7)))
                .collect();
            jobs.into_iter().map(|job| job.join().unwrap()).collect()
        });
        for (line, run) in lines.iter().zip(&runs) {
            assert!(
                run.verdicts.iter().all(|v| v.passed),
                "{line}: {:?}",
                run.verdicts
            );
        }

        // Forward: output and rstd scaled by 1 + 4·tol, a dropped bias.
        for (line, run) in lines.iter().zip(&runs).take(2) {
            let elem = run.sig.dtype;
            let (rtol, _) = tolerance(elem);
            for i in [0, 2] {
                let off = scaled(&run.got[i], 1.0 + 4.0 * rtol);
                assert!(!passes(elem, &off, &run.want[i]), "{line}: output {i}");
            }
            let mut no_bias = run.data.clone();
            no_bias[2].fill(0.0);
            let want = &refs(line, &no_bias)[0];
            assert!(!passes(elem, &run.got[0], want), "{line}: bias");
        }

        // Input backward: scaled, without the weight, without the
        // projection term rstd·xhat·mean(g·xhat).
        let (line, run) = (lines[2], &runs[2]);
        let elem = run.sig.dtype;
        let off = scaled(&run.got[0], 1.0 + 4.0 * tolerance(elem).0);
        assert!(!passes(elem, &off, &run.want[0]), "{line}: scaled");
        let mut no_weight = run.data.clone();
        no_weight[2].fill(1.0);
        assert!(
            !passes(elem, &run.got[0], &refs(line, &no_weight)[0]),
            "{line}: weight"
        );
        let [dy, x, w, mean, rstd] = &run.data[..] else {
            panic!("{line}: five inputs")
        };
        let n = w.len();
        let mut unprojected = run.got[0].clone();
        for (r, row) in unprojected.chunks_mut(n).enumerate() {
            let xhat: Vec<f64> = (0..n).map(|j| (x[r * n + j] - mean[r]) * rstd[r]).collect();
            let mean_gx = (0..n).map(|j| dy[r * n + j] * w[j] * xhat[j]).sum::<f64>() / n as f64;
            for (v, xh) in row.iter_mut().zip(&xhat) {
                *v += rstd[r] * xh * mean_gx;
            }
        }
        assert!(
            !passes(elem, &unprojected, &run.want[0]),
            "{line}: projection"
        );

        // Weight backward: scaled, and a kernel forgetting rstd.
        let (line, run) = (lines[3], &runs[3]);
        let elem = run.sig.dtype;
        let off = scaled(&run.got[0], 1.0 + 4.0 * tolerance(elem).0);
        assert!(!passes(elem, &off, &run.want[0]), "{line}: scaled");
        let mut no_rstd = run.data.clone();
        no_rstd[3].fill(1.0);
        assert!(
            !passes(elem, &run.got[0], &refs(line, &no_rstd)[0]),
            "{line}: rstd"
        );
    }
}
