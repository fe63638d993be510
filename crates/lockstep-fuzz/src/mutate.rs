//! Input mutation: byte-level edits (flip, insert, delete, duplicate,
//! splice two inputs) and dictionary words (keywords, flags, huge numbers)
//! spliced in, so that random inputs reach past a parser's first check.

use rand::rngs::StdRng;
use rand::Rng;

/// The longest input the mutator produces.
pub const MAX_LEN: usize = 64 * 1024;

/// A new input made from `base` (and sometimes `other`) by 1 to 8 edits.
pub fn mutate(rng: &mut StdRng, base: &[u8], other: &[u8], dictionary: &[&str]) -> Vec<u8> {
    let mut out = base.to_vec();
    let edits = rng.gen_range(1..=8);
    for _ in 0..edits {
        edit(rng, &mut out, other, dictionary);
    }
    out.truncate(MAX_LEN);
    out
}

fn edit(rng: &mut StdRng, out: &mut Vec<u8>, other: &[u8], dictionary: &[&str]) {
    let at = |rng: &mut StdRng, len: usize| rng.gen_range(0..=len);
    match rng.gen_range(0..8) {
        0 if !out.is_empty() => {
            let i = rng.gen_range(0..out.len());
            out[i] ^= 1 << rng.gen_range(0..8);
        }
        1 => {
            let i = at(rng, out.len());
            out.insert(i, rng.gen());
        }
        2 if !out.is_empty() => {
            let i = rng.gen_range(0..out.len());
            let n = rng.gen_range(1..=16).min(out.len() - i);
            out.drain(i..i + n);
        }
        3 if !out.is_empty() => {
            // Duplicate a chunk: deep nesting, repeated keys, long names.
            let i = rng.gen_range(0..out.len());
            let n = rng.gen_range(1..=64).min(out.len() - i);
            let chunk = out[i..i + n].to_vec();
            let times = rng.gen_range(1..=32);
            let j = at(rng, out.len());
            for _ in 0..times {
                out.splice(j..j, chunk.iter().copied());
            }
        }
        4 if !other.is_empty() => {
            // Splice: the head of this input, the tail of another.
            let i = at(rng, out.len());
            let j = rng.gen_range(0..other.len());
            out.truncate(i);
            out.extend_from_slice(&other[j..]);
        }
        5 if !dictionary.is_empty() => {
            let word = dictionary[rng.gen_range(0..dictionary.len())];
            let i = at(rng, out.len());
            out.splice(i..i, word.bytes());
        }
        6 => {
            let numbers = [
                "0",
                "-1",
                "1e309",
                "nan",
                "18446744073709551616",
                "4294967296",
            ];
            let word = numbers[rng.gen_range(0..numbers.len())];
            let i = at(rng, out.len());
            out.splice(i..i, word.bytes());
        }
        _ => {
            // A control or multi-byte character.
            let chars = ["\0", "\u{1b}[31m", "\r", "\u{2028}", "é", "𞋥", "\u{feff}"];
            let word = chars[rng.gen_range(0..chars.len())];
            let i = at(rng, out.len());
            out.splice(i..i, word.bytes());
        }
    }
}
