//! The element types torch_ops tests use, under the names numpy gives them
//! (`float16`), the descriptors `.npy` files carry (`<f2`) and the names
//! IREE's tools take (`f16`).

/// An element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    /// ml_dtypes' bfloat16 (no `.npy` descriptor: written raw for IREE).
    BF16,
    F32,
    F64,
}

/// Every element type, for listing in messages.
pub const ALL: [DType; 13] = [
    DType::Bool,
    DType::I8,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::U16,
    DType::U32,
    DType::U64,
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
];

impl DType {
    /// The type numpy calls `name` (`numpy.dtype(name).name`).
    pub fn from_name(name: &str) -> Option<DType> {
        ALL.into_iter().find(|d| d.name() == name)
    }

    /// numpy's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// The element type as IREE's `--input=2x3xf16=...` names it.
    pub fn iree_name(self) -> &'static str {
        match self {
            DType::Bool => "i1",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "ui8",
            DType::U16 => "ui16",
            DType::U32 => "ui32",
            DType::U64 => "ui64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
        }
    }

    /// The `.npy` descriptor numpy writes for the type, little-endian;
    /// `None` for bfloat16, which `.npy` has no code for.
    pub fn descr(self) -> Option<&'static str> {
        Some(match self {
            DType::Bool => "|b1",
            DType::I8 => "|i1",
            DType::I16 => "<i2",
            DType::I32 => "<i4",
            DType::I64 => "<i8",
            DType::U8 => "|u1",
            DType::U16 => "<u2",
            DType::U32 => "<u4",
            DType::U64 => "<u8",
            DType::F16 => "<f2",
            DType::BF16 => return None,
            DType::F32 => "<f4",
            DType::F64 => "<f8",
        })
    }

    /// The type a `.npy` descriptor names (`<f4`, `|i1`, also `=f4` and
    /// the single-byte codes written with `<`); big-endian descriptors are
    /// not read.
    pub fn from_descr(descr: &str) -> Option<DType> {
        let (order, code) = descr.split_at(descr.char_indices().nth(1).map_or(0, |(i, _)| i));
        if !matches!(order, "<" | "|" | "=") {
            return None;
        }
        ALL.into_iter()
            .find(|d| d.descr().is_some_and(|own| &own[1..] == code))
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    /// The smallest and largest integer of an integer type (bool: 0 and 1).
    pub fn int_range(self) -> Option<(f64, f64)> {
        Some(match self {
            DType::Bool => (0.0, 1.0),
            DType::I8 => (i8::MIN as f64, i8::MAX as f64),
            DType::I16 => (i16::MIN as f64, i16::MAX as f64),
            DType::I32 => (i32::MIN as f64, i32::MAX as f64),
            DType::I64 => (i64::MIN as f64, i64::MAX as f64),
            DType::U8 => (0.0, u8::MAX as f64),
            DType::U16 => (0.0, u16::MAX as f64),
            DType::U32 => (0.0, u32::MAX as f64),
            DType::U64 => (0.0, u64::MAX as f64),
            _ => return None,
        })
    }
}

/// `text` from a file, fit for a one-line message: control characters
/// escaped, at most 40 characters.
pub(crate) fn printable(text: &str) -> String {
    text.chars().take(40).flat_map(char::escape_debug).collect()
}

/// The numpy names of every type, for messages.
pub fn names() -> String {
    ALL.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_descriptors_round_trip() {
        for d in ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
            if let Some(descr) = d.descr() {
                assert_eq!(DType::from_descr(descr), Some(d), "{descr}");
            }
        }
        assert_eq!(DType::from_descr("<i1"), Some(DType::I8));
        assert_eq!(DType::from_descr("=f4"), Some(DType::F32));
        assert_eq!(DType::from_descr(">f4"), None);
        assert_eq!(DType::from_descr(""), None);
        assert_eq!(DType::from_descr("é"), None);
        assert_eq!(DType::from_name("float128"), None);
    }
}
