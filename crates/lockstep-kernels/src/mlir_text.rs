//! Writing MLIR text, shared by the op generators (`conv_mlir`, `gemm`,
//! `layernorm`): a `Body` that hands out fresh SSA names and indents the
//! lines of a function or region, tensor types, comma-separated lists, zero
//! constants, and the element-type conversions (`arith.extf`, `truncf`,
//! `extsi`, `trunci`) used inside `linalg.generic` regions.
//!
//! It knows no op, so every generator can use it and none uses another.

use std::fmt::Write as _;

use crate::miopen::ElemType;

/// Emits SSA names and lines.
#[derive(Default)]
pub(crate) struct Body {
    pub(crate) text: String,
    next: usize,
}

impl Body {
    pub(crate) fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("%{prefix}{}", self.next)
    }

    pub(crate) fn line(&mut self, line: &str) {
        self.text.push_str("    ");
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// A zero-filled tensor (the initial value of a reduction, or padding);
    /// returns its SSA name.
    pub(crate) fn zeros(&mut self, shape: &[u64], elem: ElemType) -> String {
        let ty = tensor_type(shape, elem);
        let empty = self.fresh("empty");
        self.line(&format!("{empty} = tensor.empty() : {ty}"));
        let zero_value = self.fresh("zero");
        self.line(&format!("{zero_value} = arith.constant {}", zero(elem)));
        let filled = self.fresh("init");
        self.line(&format!(
            "{filled} = linalg.fill ins({zero_value} : {}) outs({empty} : {ty}) -> {ty}",
            elem.mlir()
        ));
        filled
    }
}

pub(crate) fn tensor_type(shape: &[u64], elem: ElemType) -> String {
    let mut s = String::from("tensor<");
    for d in shape {
        let _ = write!(s, "{d}x");
    }
    s.push_str(elem.mlir());
    s.push('>');
    s
}

pub(crate) fn list(values: impl IntoIterator<Item = impl ToString>) -> String {
    values
        .into_iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn is_float(elem: ElemType) -> bool {
    matches!(elem, ElemType::F32 | ElemType::F16 | ElemType::BF16)
}

pub(crate) fn zero(elem: ElemType) -> String {
    if is_float(elem) {
        format!("0.000000e+00 : {}", elem.mlir())
    } else {
        format!("0 : {}", elem.mlir())
    }
}

fn bits(elem: ElemType) -> u64 {
    elem.bytes() * 8
}

/// The region of a multiply-accumulate `linalg.generic` (a convolution or a
/// matrix product): both operands of type `dtype` converted to `acc`,
/// multiplied and added to the accumulator, which the region yields; then
/// the op's closing line with its result type `acc_type`.
pub(crate) fn multiply_accumulate(
    body: &mut Body,
    dtype: ElemType,
    acc: ElemType,
    acc_type: &str,
) -> Result<(), String> {
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
    Ok(())
}

/// Converts `value` from one element type to another inside a region.
pub(crate) fn convert(
    body: &mut Body,
    value: &str,
    from: ElemType,
    to: ElemType,
) -> Result<String, String> {
    if from == to {
        return Ok(value.to_string());
    }
    let op = match (is_float(from), is_float(to)) {
        (true, true) if bits(from) < bits(to) => "arith.extf",
        (true, true) => "arith.truncf",
        (false, false) if bits(from) < bits(to) => "arith.extsi",
        (false, false) => "arith.trunci",
        _ => {
            return Err(format!(
                "no conversion from {} to {}",
                from.mlir(),
                to.mlir()
            ))
        }
    };
    let out = body.fresh("v");
    body.line(&format!(
        "  {out} = {op} {value} : {} to {}",
        from.mlir(),
        to.mlir()
    ));
    Ok(out)
}
