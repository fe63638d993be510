//! `.npy` files (numpy's format, versions 1 to 3): written for the inputs
//! lockstep hands iree-run-module, read for the outputs it writes and the
//! expected outputs a suite names. Reading is strict and bounded: the header
//! is a Python dict literal of `descr`, `fortran_order` and `shape`, at most
//! [`MAX_HEADER`] bytes; the data must be exactly the shape's size;
//! Fortran order, big-endian and object arrays are refused by name.

use crate::dtype::DType;
use crate::NumpyError;

const MAGIC: &[u8] = b"\x93NUMPY";
/// The longest header read (numpy itself refuses past 10,000 bytes by
/// default).
pub const MAX_HEADER: usize = 65_536;
/// The most dimensions read.
pub const MAX_DIMS: usize = 32;

/// An array: its type, shape and little-endian bytes in C order.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

impl Array {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.data.len() / self.dtype.size()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Element `i` as float64 (exact for every type but 64-bit integers
    /// beyond 2^53, which round as numpy rounds them).
    pub fn get_f64(&self, i: usize) -> f64 {
        let size = self.dtype.size();
        let b = &self.data[i * size..(i + 1) * size];
        let mut wide = [0u8; 8];
        wide[..size].copy_from_slice(b);
        match self.dtype {
            DType::Bool => f64::from(u8::from(b[0] != 0)),
            DType::I8 => f64::from(b[0] as i8),
            DType::I16 => f64::from(i16::from_le_bytes([b[0], b[1]])),
            DType::I32 => f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            DType::I64 => i64::from_le_bytes(wide) as f64,
            DType::U8 => f64::from(b[0]),
            DType::U16 => f64::from(u16::from_le_bytes([b[0], b[1]])),
            DType::U32 => f64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            DType::U64 => u64::from_le_bytes(wide) as f64,
            DType::F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
            DType::BF16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f64(),
            DType::F32 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            DType::F64 => f64::from_le_bytes(wide),
        }
    }

    /// The array as a `.npy` file (version 1.0, as `numpy.save` writes
    /// it); an error for bfloat16, which `.npy` has no descriptor for.
    pub fn to_npy(&self) -> Result<Vec<u8>, NumpyError> {
        let descr = self.dtype.descr().ok_or_else(|| {
            NumpyError::new(format!("{} has no .npy descriptor", self.dtype.name()))
        })?;
        let shape = match self.shape.as_slice() {
            [one] => format!("({one},)"),
            dims => format!(
                "({})",
                dims.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        // numpy pads with spaces so the data starts on a 64-byte boundary.
        let unpadded = MAGIC.len() + 2 + 2 + header.len() + 1;
        header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
        header.push('\n');
        let len = u16::try_from(header.len())
            .map_err(|_| NumpyError::new("the .npy header is too long"))?;
        let mut out = Vec::with_capacity(MAGIC.len() + 4 + header.len() + self.data.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(&self.data);
        Ok(out)
    }

    /// Reads a `.npy` file's bytes. Never panics, whatever the bytes.
    pub fn from_npy(bytes: &[u8]) -> Result<Array, NumpyError> {
        let rest = bytes
            .strip_prefix(MAGIC)
            .ok_or_else(|| NumpyError::new("not a .npy file (no \\x93NUMPY magic)"))?;
        let (header, data) = match rest {
            [1, _, a, b, rest @ ..] => split(rest, usize::from(u16::from_le_bytes([*a, *b])))?,
            [2 | 3, _, a, b, c, d, rest @ ..] => {
                let len = u32::from_le_bytes([*a, *b, *c, *d]) as usize;
                split(rest, len)?
            }
            [major, ..] => {
                return Err(NumpyError::new(format!(
                    ".npy format version {major} is not read (1 to 3 are)"
                )))
            }
            [] => return Err(NumpyError::new("the .npy file ends after its magic")),
        };
        let header = std::str::from_utf8(header)
            .map_err(|_| NumpyError::new("the .npy header is not text"))?;
        let fields = parse_header(header)?;
        if fields.fortran_order {
            return Err(NumpyError::new(
                "the array is in Fortran order; lockstep reads C-order arrays (numpy.save(numpy.ascontiguousarray(a)))",
            ));
        }
        let dtype = DType::from_descr(&fields.descr).ok_or_else(|| {
            NumpyError::new(format!(
                "element type `{}` is not read (little-endian bool, ints, uints, float16, float32 and float64 are)",
                crate::dtype::printable(&fields.descr)
            ))
        })?;
        let expected = fields
            .shape
            .iter()
            .try_fold(dtype.size() as u64, |n, &d| n.checked_mul(d))
            .ok_or_else(|| NumpyError::new("the .npy shape's size overflows"))?;
        if expected != data.len() as u64 {
            return Err(NumpyError::new(format!(
                "the .npy data is {} bytes, but shape {:?} of {} needs {expected}",
                data.len(),
                fields.shape,
                dtype.name()
            )));
        }
        Ok(Array {
            dtype,
            shape: fields.shape,
            data: data.to_vec(),
        })
    }
}

fn split(rest: &[u8], len: usize) -> Result<(&[u8], &[u8]), NumpyError> {
    if len > MAX_HEADER {
        return Err(NumpyError::new(format!(
            "the .npy header is {len} bytes, more than {MAX_HEADER}"
        )));
    }
    if rest.len() < len {
        return Err(NumpyError::new("the .npy file ends inside its header"));
    }
    Ok(rest.split_at(len))
}

struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<u64>,
}

/// Parses `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
fn parse_header(text: &str) -> Result<Header, NumpyError> {
    let bad =
        |why: &str| NumpyError::new(format!("the .npy header is not a dict numpy writes: {why}"));
    let mut p = Parser { rest: text.trim() };
    p.eat('{').ok_or_else(|| bad("no `{`"))?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        if p.eat('}').is_some() {
            break;
        }
        let key = p
            .string()
            .ok_or_else(|| bad("a key is not a quoted string"))?;
        p.eat(':').ok_or_else(|| bad("no `:` after a key"))?;
        match key.as_str() {
            "descr" => {
                descr =
                    Some(p.string().ok_or_else(|| {
                        bad("descr is not a string (structured arrays are not read)")
                    })?)
            }
            "fortran_order" => {
                fortran = Some(
                    p.boolean()
                        .ok_or_else(|| bad("fortran_order is not True or False"))?,
                )
            }
            "shape" => {
                shape = Some(
                    p.tuple()
                        .ok_or_else(|| bad("shape is not a tuple of integers"))?,
                )
            }
            _ => return Err(bad("an unknown key")),
        }
        if p.eat(',').is_none() {
            p.eat('}')
                .ok_or_else(|| bad("no `,` or `}` after a value"))?;
            break;
        }
    }
    if !p.rest.trim().is_empty() {
        return Err(bad("text after the dict"));
    }
    match (descr, fortran, shape) {
        (Some(descr), Some(fortran_order), Some(shape)) => Ok(Header {
            descr,
            fortran_order,
            shape,
        }),
        _ => Err(bad("descr, fortran_order and shape are required")),
    }
}

struct Parser<'a> {
    rest: &'a str,
}

impl Parser<'_> {
    fn eat(&mut self, c: char) -> Option<()> {
        self.rest = self.rest.trim_start().strip_prefix(c)?;
        Some(())
    }

    fn string(&mut self) -> Option<String> {
        self.rest = self.rest.trim_start();
        let quote = self
            .rest
            .chars()
            .next()
            .filter(|c| *c == '\'' || *c == '"')?;
        let body = &self.rest[1..];
        let end = body.find(quote)?;
        let value = body[..end].to_string();
        self.rest = &body[end + 1..];
        (!value.contains('\\')).then_some(value)
    }

    fn boolean(&mut self) -> Option<bool> {
        self.rest = self.rest.trim_start();
        for (word, value) in [("True", true), ("False", false)] {
            if let Some(rest) = self.rest.strip_prefix(word) {
                self.rest = rest;
                return Some(value);
            }
        }
        None
    }

    fn tuple(&mut self) -> Option<Vec<u64>> {
        self.eat('(')?;
        let mut dims = Vec::new();
        loop {
            if self.eat(')').is_some() {
                return Some(dims);
            }
            self.rest = self.rest.trim_start();
            let digits = self.rest.len()
                - self
                    .rest
                    .trim_start_matches(|c: char| c.is_ascii_digit())
                    .len();
            let value = self.rest[..digits].parse::<u64>().ok()?;
            self.rest = &self.rest[digits..];
            dims.push(value);
            if dims.len() > MAX_DIMS {
                return None;
            }
            if self.eat(',').is_none() {
                self.eat(')')?;
                return Some(dims);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn numpy_writes_and_reads_this_header() {
        // numpy.save of numpy.zeros((2, 3), "float32"): the header numpy writes.
        let a = Array {
            dtype: DType::F32,
            shape: vec![2, 3],
            data: vec![0; 24],
        };
        let bytes = a.to_npy().unwrap();
        assert_eq!(bytes.len(), 128 + 24);
        assert_eq!(
            std::str::from_utf8(&bytes[10..128]).unwrap().trim_end(),
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
        );
        assert_eq!(Array::from_npy(&bytes).unwrap(), a);
        let one = Array {
            shape: vec![6],
            ..a
        };
        assert!(String::from_utf8_lossy(&one.to_npy().unwrap()).contains("'shape': (6,)"));
    }

    #[test]
    fn what_is_not_read_is_named() {
        let npy = |header: &str, data: &[u8]| {
            let mut b = b"\x93NUMPY\x01\x00".to_vec();
            b.extend_from_slice(&(header.len() as u16).to_le_bytes());
            b.extend_from_slice(header.as_bytes());
            b.extend_from_slice(data);
            b
        };
        for (bytes, needle) in [
            (b"PK\x03\x04".to_vec(), "magic"),
            (
                npy(
                    "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }",
                    &[0; 4],
                ),
                "Fortran",
            ),
            (
                npy(
                    "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                    &[0; 4],
                ),
                "`>f4`",
            ),
            (
                npy(
                    "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
                    &[0; 8],
                ),
                "`|O`",
            ),
            (
                npy(
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                    &[0; 4],
                ),
                "needs 8",
            ),
            (
                npy(
                    "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                    &[0; 4],
                ),
                "structured",
            ),
            (
                npy("{'descr': '<f4', 'shape': (1,), }", &[0; 4]),
                "required",
            ),
            (b"\x93NUMPY\x09\x00".to_vec(), "version 9"),
            (b"\x93NUMPY\x01\x00\xff\x00{".to_vec(), "inside its header"),
        ] {
            let e = Array::from_npy(&bytes).unwrap_err();
            assert!(e.0.contains(needle), "{needle}: {e}");
        }
    }

    proptest! {
        #[test]
        fn reading_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut with_magic = b"\x93NUMPY\x01\x00".to_vec();
            with_magic.extend_from_slice(&bytes);
            let _ = Array::from_npy(&bytes);
            let _ = Array::from_npy(&with_magic);
        }

        #[test]
        fn what_is_written_reads_back(dims in proptest::collection::vec(0u64..5, 1..4), d in 0usize..13) {
            let dtype = crate::dtype::ALL[d];
            prop_assume!(dtype.descr().is_some());
            let n: u64 = dims.iter().product();
            let a = Array { dtype, shape: dims, data: vec![1; n as usize * dtype.size()] };
            prop_assert_eq!(Array::from_npy(&a.to_npy().unwrap()).unwrap(), a);
        }
    }
}
