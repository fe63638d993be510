//! lockstep-numpy against numpy itself (the one in the provisioned IREE
//! toolchain, with ml_dtypes for bfloat16): torch_ops inputs must be the
//! bytes the reference runner makes, and allclose must give its verdicts.

use std::process::Command;

use lockstep_numpy::{allclose, formula, npy::Array, DType, Formula, Tolerance, Verdict};

use crate::common::{expect, iree_bin, stdout};

/// The toolchain's Python (its venv has numpy and ml_dtypes).
fn python() -> std::path::PathBuf {
    iree_bin().parent().unwrap().join("venv/bin/python3")
}

fn run_python(script: &str) -> String {
    let out = expect(Command::new(python()).args(["-c", script]), 0);
    stdout(&out)
}

/// (seed, formulas) cases covering every dtype torch_ops uses and more,
/// with coefficients and offsets that keep integer casts in range.
fn cases() -> Vec<(u32, Vec<Formula>)> {
    let f = |shape: &[u64], dtype: DType, coeff: f64, offset: f64| Formula {
        shape: shape.to_vec(),
        dtype,
        coeff,
        offset,
    };
    vec![
        (
            0,
            vec![
                f(&[64, 64], DType::F32, 1.0, 0.0),
                f(&[64, 64], DType::F32, 1.0, 0.0),
            ],
        ),
        (
            1,
            vec![
                f(&[64, 64], DType::F16, 1.0, 0.0),
                f(&[64, 64], DType::F16, 1.0, 0.0),
            ],
        ),
        (
            16,
            vec![
                f(&[97, 13], DType::I8, 1.0, 0.0),
                f(&[5, 7, 3], DType::I8, 255.0, -127.5),
            ],
        ),
        (
            7,
            vec![
                f(&[1000], DType::F16, 70000.0, -35000.0),
                f(&[1000], DType::F16, 1e-4, 0.0),
            ],
        ),
        (
            3,
            vec![
                f(&[513], DType::BF16, 3.0, -1.5),
                f(&[2, 2], DType::BF16, 1e6, 0.0),
            ],
        ),
        (4_294_967_295, vec![f(&[300], DType::F64, 2.5, 0.25)]),
        (
            12,
            vec![
                f(&[200], DType::I16, 60000.0, -30000.0),
                f(&[200], DType::I32, 4e9, -2e9),
            ],
        ),
        (
            13,
            vec![
                f(&[200], DType::I64, 1e15, -5e14),
                f(&[200], DType::U8, 255.9, 0.0),
            ],
        ),
        (
            14,
            vec![
                f(&[200], DType::U16, 65535.0, 0.0),
                f(&[200], DType::U32, 4e9, 0.0),
            ],
        ),
        (
            15,
            vec![
                f(&[200], DType::Bool, 2.0, -1.0),
                f(&[2000], DType::F32, 1e-30, 0.0),
            ],
        ),
    ]
}

fn python_formula(f: &Formula) -> String {
    let dtype = match f.dtype {
        DType::BF16 => "ml_dtypes.bfloat16".to_string(),
        d => format!("numpy.dtype('{}')", d.name()),
    };
    format!(
        "(({} * numpy.random.rand(*{:?}) + {}).astype({dtype}))",
        PyFloat(f.coeff),
        f.shape,
        PyFloat(f.offset)
    )
}

/// A float as Python reads it back exactly.
struct PyFloat(f64);

impl std::fmt::Display for PyFloat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "float.fromhex('{}')", hexfloat(self.0))
    }
}

fn hexfloat(v: f64) -> String {
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0x0p+0".into()
        } else {
            "0x0p+0".into()
        };
    }
    let bits = v.to_bits();
    let sign = if bits >> 63 == 1 { "-" } else { "" };
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let mantissa = bits & ((1 << 52) - 1);
    if exp == 0 {
        format!("{sign}0x0.{mantissa:013x}p-1022")
    } else {
        format!("{sign}0x1.{mantissa:013x}p{}", exp - 1023)
    }
}

#[test]
fn formula_inputs_are_numpys_bytes_for_every_dtype() {
    let cases = cases();
    let mut script = String::from("import numpy, ml_dtypes\n");
    for (seed, formulas) in &cases {
        script.push_str(&format!("numpy.random.seed({seed})\n"));
        for f in formulas {
            script.push_str(&format!("print({}.tobytes().hex())\n", python_formula(f)));
        }
    }
    let numpy = run_python(&script);
    let mut lines = numpy.lines();
    for (seed, formulas) in &cases {
        let ours = formula::generate_all(*seed, formulas).expect("generate");
        for (f, array) in formulas.iter().zip(ours) {
            let theirs = lines.next().expect("a line per formula");
            let ours = hex(&array.data);
            let width = 2 * f.dtype.size();
            let first = (0..ours.len().min(theirs.len()) / width)
                .find(|i| ours[i * width..(i + 1) * width] != theirs[i * width..(i + 1) * width]);
            assert!(
                ours == theirs,
                "seed {seed}, {} {:?} x{} +{}: lockstep's bytes differ from numpy's ({} and {} hex digits), first at element {first:?}: {:?} vs {:?}",
                f.dtype.name(),
                f.shape,
                f.coeff,
                f.offset,
                ours.len(),
                theirs.len(),
                first.map(|i| &ours[i * width..(i + 1) * width]),
                first.map(|i| &theirs[i * width..(i + 1) * width]),
            );
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn npy_files_round_trip_through_numpy() {
    let dir = tempfile::tempdir().unwrap();
    let ours = formula::generate_all(
        5,
        &[Formula {
            shape: vec![3, 4, 5],
            dtype: DType::F16,
            coeff: 2.0,
            offset: -1.0,
        }],
    )
    .unwrap()
    .remove(0);
    let written = dir.path().join("ours.npy");
    std::fs::write(&written, ours.to_npy().unwrap()).unwrap();
    let theirs = dir.path().join("theirs.npy");
    run_python(&format!(
        "import numpy\na = numpy.load({w:?})\nnumpy.random.seed(5)\nb = (2.0 * numpy.random.rand(3, 4, 5) - 1.0).astype('float16')\nassert a.dtype == b.dtype and a.shape == b.shape and (a.view('u2') == b.view('u2')).all()\nnumpy.save({t:?}, numpy.arange(24, dtype='int8').reshape(2, 3, 4))",
        w = written.to_str().unwrap(),
        t = theirs.to_str().unwrap()
    ));
    let read = Array::from_npy(&std::fs::read(&theirs).unwrap()).unwrap();
    assert_eq!((read.dtype, read.shape.clone()), (DType::I8, vec![2, 3, 4]));
    assert_eq!(read.data, (0..24u8).collect::<Vec<_>>());
}

#[test]
fn allclose_gives_numpys_verdicts_in_numpys_dtypes() {
    // Pairs (observed dtype, expected dtype, rtol, atol, equal_nan): the
    // arrays come from numpy (values near each other, infinities, NaNs),
    // numpy counts the elements not close, and lockstep must count the same.
    let pairs = [
        ("float16", "float16", 1e-3, 1e-3, false),
        ("float16", "float16", 0.0, 5e-8, false),
        ("float32", "float32", 1e-5, 1e-8, false),
        ("float32", "float32", 1e-5, 1e-8, true),
        ("float32", "float16", 1e-3, 1e-5, false),
        ("int8", "int8", 1e-5, 1e-8, false),
        ("float64", "float32", 1e-7, 0.0, false),
        ("int16", "float16", 1e-2, 0.5, false),
        ("bfloat16", "bfloat16", 1e-2, 1e-2, false),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut script = String::from("import numpy, ml_dtypes\nrng = numpy.random.RandomState(99)\n");
    for (i, (x, y, rtol, atol, equal_nan)) in pairs.iter().enumerate() {
        let t = |d: &str| {
            if d == "bfloat16" {
                "ml_dtypes.bfloat16".to_string()
            } else {
                format!("'{d}'")
            }
        };
        script.push_str(&format!(
            "e = rng.uniform(-4, 4, 4000)\n\
             e[:40] = numpy.inf; e[40:60] = numpy.nan; e[60:100] = 0.0\n\
             o = e + rng.normal(0, 1, 4000) * rng.choice([0, 1e-6, 1e-4, 1e-3, 1e-2, 1], 4000)\n\
             o[50:55] = numpy.nan; o[20:30] = -numpy.inf\n\
             if {int}: e = numpy.nan_to_num(e * 20, posinf=100, neginf=-100); o = numpy.nan_to_num(o * 20, posinf=100, neginf=-100)\n\
             o = o.astype({xt}); e = e.astype({yt})\n\
             numpy.save({op:?}, o) if {xt} != ml_dtypes.bfloat16 else open({op:?}, 'wb').write(o.tobytes())\n\
             numpy.save({ep:?}, e) if {yt} != ml_dtypes.bfloat16 else open({ep:?}, 'wb').write(e.tobytes())\n\
             print(int((~numpy.isclose(o, e, rtol={rtol}, atol={atol}, equal_nan={eq})).sum()), bool(numpy.allclose(o, e, rtol={rtol}, atol={atol}, equal_nan={eq})))\n",
            int = if x.starts_with("int") || y.starts_with("int") { "True" } else { "False" },
            xt = t(x),
            yt = t(y),
            op = dir.path().join(format!("o{i}.npy")).to_str().unwrap(),
            ep = dir.path().join(format!("e{i}.npy")).to_str().unwrap(),
            eq = if *equal_nan { "True" } else { "False" },
        ));
    }
    let numpy = run_python(&script);
    let load = |path: std::path::PathBuf, dtype: &str| {
        let bytes = std::fs::read(&path).unwrap();
        if dtype == "bfloat16" {
            Array {
                dtype: DType::BF16,
                shape: vec![4000],
                data: bytes,
            }
        } else {
            Array::from_npy(&bytes).unwrap()
        }
    };
    for (i, ((x, y, rtol, atol, equal_nan), line)) in pairs.iter().zip(numpy.lines()).enumerate() {
        let o = load(dir.path().join(format!("o{i}.npy")), x);
        let e = load(dir.path().join(format!("e{i}.npy")), y);
        let tol = Tolerance {
            rtol: *rtol,
            atol: *atol,
            equal_nan: *equal_nan,
        };
        let ours = match allclose(&o, &e, tol).unwrap() {
            Verdict::Close => "0 True".to_string(),
            Verdict::Differ { mismatched, .. } => format!("{mismatched} False"),
        };
        assert_eq!(
            ours, line,
            "{x} vs {y}, rtol {rtol}, atol {atol}, equal_nan {equal_nan}"
        );
    }
}
