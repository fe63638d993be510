//! The variants of an executable as a bring-your-own-compiler tool sees
//! them: selected by target (`--only-target`), the others held back and put
//! back byte for byte around what the tool returns; the variant count a
//! tool must keep; and the objects (`#hal.executable.object<{path}>`) a
//! tool attaches, checked before the compiler ever links them: the file
//! exists, is an ELF relocatable object for the variant's target triple.
//!
//! Why check here: IREE links objects late (its embedded lld, after every
//! executable is translated), so a wrong object fails a whole compile with
//! a linker message that names neither the executable nor the tool.

use std::path::{Path, PathBuf};

use crate::scan::{self, Module, Variant};

/// The variant's target attribute with an alias resolved to its definition
/// in `text` (the original module): what `--only-target` matches.
pub fn resolve_target(target: &str, module: &Module, text: &str) -> String {
    let name = target.trim();
    match module.alias_index.get(name) {
        Some(&i) => text
            .get(module.aliases[i].span.clone())
            .map(|def| {
                def.split_once('=')
                    .map_or(def, |(_, v)| v)
                    .trim()
                    .to_string()
            })
            .unwrap_or_else(|| name.to_string()),
        None => name.to_string(),
    }
}

/// An executable with the variants `--only-target` did not select taken
/// out (they are put back by [`restore`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The executable's text without the held variants.
    pub given: String,
    /// Every original variant in order: `Some(text)` for a held one,
    /// `None` for one the tool gets.
    pub order: Vec<Option<String>>,
}

/// Splits `op` by `re` over its variants' resolved targets; `None` when no
/// variant matches (the executable is not selected).
pub fn hold(
    op: &str,
    re: &regex::Regex,
    module: &Module,
    text: &str,
) -> Result<Option<Held>, String> {
    let found = scan::variants(op).map_err(|e| e.describe(op))?;
    let matches: Vec<bool> = found
        .iter()
        .map(|v| re.is_match(&resolve_target(&v.target, module, text)))
        .collect();
    if !matches.iter().any(|m| *m) {
        return Ok(None);
    }
    let mut given = String::with_capacity(op.len());
    let mut order = Vec::with_capacity(found.len());
    let mut prev = 0;
    for (v, matched) in found.iter().zip(&matches) {
        if *matched {
            order.push(None);
            continue;
        }
        // Cut the variant and the white space before it (its line).
        let start = line_start(op, v.span.start).max(prev);
        given.push_str(&op[prev..start]);
        order.push(Some(op[v.span.clone()].to_string()));
        prev = v.span.end;
    }
    given.push_str(&op[prev..]);
    Ok(Some(Held { given, order }))
}

/// Where the white space before `at` on its line starts.
fn line_start(text: &str, at: usize) -> usize {
    let before = &text[..at];
    let trimmed = before.trim_end_matches([' ', '\t']);
    match trimmed.ends_with('\n') {
        true => trimmed.len() - 1,
        false => at,
    }
}

/// The tool's `output` executable with the held variants back in their
/// original places among the ones it returned.
pub fn restore(output: &str, held: &Held) -> Result<String, String> {
    if held.order.iter().all(Option::is_none) {
        return Ok(output.to_string());
    }
    let returned = scan::variants(output).map_err(|e| e.describe(output))?;
    let (Some(first), Some(last)) = (returned.first(), returned.last()) else {
        return Err("the output holds no hal.executable.variant".into());
    };
    let indent = {
        let start = output[..first.span.start].rfind('\n').map_or(0, |i| i + 1);
        output[start..first.span.start].to_string()
    };
    let mut next = returned.iter();
    let mut pieces = Vec::with_capacity(held.order.len());
    for slot in &held.order {
        match slot {
            Some(text) => pieces.push(text.clone()),
            None => match next.next() {
                Some(v) => pieces.push(output[v.span.clone()].to_string()),
                None => return Err("the output has fewer variants than it was given".into()),
            },
        }
    }
    let mut out =
        String::with_capacity(output.len() + pieces.iter().map(String::len).sum::<usize>());
    out.push_str(&output[..first.span.start]);
    out.push_str(&pieces.join(&format!("\n{}", indent.trim_start_matches('\n'))));
    out.push_str(&output[last.span.end..]);
    Ok(out)
}

/// The variants of `given` (what the tool got) and of `output` (what it
/// returned) must be as many: a tool that splits or drops a variant
/// changes what the runtime can select. Returns the output's variants
/// (for [`check_objects`]: scanned once).
pub fn check_count(given: &str, output: &str) -> Result<Vec<Variant>, String> {
    let before = scan::variants(given).map_err(|e| e.describe(given))?;
    let after = scan::variants(output).map_err(|e| e.describe(output))?;
    if before.len() == after.len() {
        return Ok(after);
    }
    let names = |vs: &[Variant]| {
        vs.iter()
            .map(|v| format!("@{}", v.symbol))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(format!(
        "the tool returned {} ({}) where {} ({}) {} given: a tool rewrites the variants it gets, it does not add or drop them",
        lockstep_core::words::count(after.len(), "variant", "variants"),
        names(&after),
        lockstep_core::words::count(before.len(), "variant", "variants"),
        names(&before),
        if before.len() == 1 { "was" } else { "were" }
    ))
}

/// An object the output references, checked: where it is and its sha256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// As written in the output.
    pub path: String,
    /// Resolved against the working directory.
    pub file: PathBuf,
    pub sha256: String,
}

/// The largest object file read for its checks and hash.
const MAX_OBJECT_BYTES: u64 = 1 << 30;

/// Every object the `output` executable's variants (`found`, from
/// [`check_count`]) reference, new or not, each checked: a regular file
/// (relative paths against `cwd`), and for an ELF target format an ELF
/// relocatable (`ET_REL`) for the target triple's machine and class.
pub fn check_objects(
    output: &str,
    found: &[Variant],
    module: &Module,
    text: &str,
    cwd: &Path,
) -> Result<Vec<Object>, String> {
    let mut objects = Vec::new();
    for v in found {
        let target = resolve_target(&v.target, module, text);
        let target = match v.target.starts_with('#') && target == v.target {
            // An alias the tool defined itself: read it from its output.
            true => resolve_in(output, &v.target).unwrap_or(target),
            false => target,
        };
        for path in &v.objects {
            let file = cwd.join(path);
            let bytes =
                lockstep_core::fs::read_input("an executable object", &file, MAX_OBJECT_BYTES)
                    .map_err(|e| {
                        format!(
                            "variant @{} references the object {path:?}, which cannot be read: {}",
                            v.symbol, e.message
                        )
                    })?;
            if target.contains("elf") {
                check_elf(&bytes, &target).map_err(|why| {
                    format!(
                        "variant @{} references the object {path:?} ({}), which {why}",
                        v.symbol,
                        file.display()
                    )
                })?;
            }
            objects.push(Object {
                path: path.clone(),
                file,
                sha256: lockstep_core::hash::sha256_bytes(&bytes),
            });
        }
    }
    Ok(objects)
}

/// An alias's definition inside a tool's own output.
fn resolve_in(output: &str, alias: &str) -> Option<String> {
    let module = scan::scan(output).ok()?;
    let i = *module.alias_index.get(alias)?;
    let def = output.get(module.aliases[i].span.clone())?;
    Some(
        def.split_once('=')
            .map_or(def, |(_, v)| v)
            .trim()
            .to_string(),
    )
}

/// The ELF machine (`e_machine`) and class (1: 32-bit, 2: 64-bit) a target
/// triple's architecture needs; `None` for one lockstep does not know.
fn machine_of(triple: &str) -> Option<(u16, u8)> {
    let arch = triple.split('-').next()?;
    Some(match arch {
        "x86_64" => (62, 2),
        "i386" | "i486" | "i586" | "i686" => (3, 1),
        "aarch64" | "arm64" => (183, 2),
        "riscv64" => (243, 2),
        "riscv32" => (243, 1),
        _ => return None,
    })
}

/// The `target_triple = "..."` of a target attribute's text.
fn triple_of(target: &str) -> Option<String> {
    let at = target.find("target_triple")?;
    let rest = &target[at..];
    let open = rest.find('"')?;
    let close = rest[open + 1..].find('"')?;
    Some(rest[open + 1..open + 1 + close].to_string())
}

/// Why `bytes` is not an ELF relocatable object for `target`'s triple.
fn check_elf(bytes: &[u8], target: &str) -> Result<(), String> {
    if bytes.len() < 20 || &bytes[..4] != b"\x7fELF" {
        return Err("is not an ELF file (compile it with `cc -c -fPIC`)".into());
    }
    let class = bytes[4];
    let little = bytes[5] == 1;
    let u16_at = |at: usize| {
        let pair = [bytes[at], bytes[at + 1]];
        if little {
            u16::from_le_bytes(pair)
        } else {
            u16::from_be_bytes(pair)
        }
    };
    let (e_type, machine) = (u16_at(16), u16_at(18));
    if e_type != 1 {
        return Err(format!(
            "is an ELF file of type {e_type}, not a relocatable object (type 1: what `cc -c` makes; a shared library or executable cannot be linked in)"
        ));
    }
    let Some(triple) = triple_of(target) else {
        return Ok(());
    };
    let Some((want, want_class)) = machine_of(&triple) else {
        return Ok(());
    };
    if machine != want || class != want_class {
        return Err(format!(
            "is an ELF object for machine {machine} ({}-bit), not for the variant's triple {triple} (machine {want}, {}-bit)",
            if class == 2 { 64 } else { 32 },
            if want_class == 2 { 64 } else { 32 }
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = r#"#x86 = #hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {target_triple = "x86_64-unknown-unknown-eabi-elf"}>
#arm = #hal.executable.target<"llvm-cpu", "embedded-elf-arm_64", {target_triple = "aarch64-unknown-unknown-eabi-elf"}>
hal.executable private @ex {
  hal.executable.variant public @a target(#x86) {
    builtin.module { }
  }
  hal.executable.variant public @b target(#arm) {
    builtin.module { }
  }
}
"#;

    fn exe(module: &Module) -> &str {
        &MODULE[module.executables[0].span.clone()]
    }

    #[test]
    fn held_variants_come_back_in_their_places() {
        let module = scan::scan(MODULE).unwrap();
        let op = exe(&module);
        let re = regex::Regex::new("aarch64").unwrap();
        let held = hold(op, &re, &module, MODULE).unwrap().unwrap();
        assert!(!held.given.contains("@a target") && held.given.contains("@b target"));
        assert_eq!(held.order.len(), 2);
        // The tool rewrites what it got; the held variant comes back first.
        let output = held.given.replace(
            "builtin.module { }",
            "builtin.module { func.func private @k() }",
        );
        let restored = restore(&output, &held).unwrap();
        let vs = scan::variants(&restored).unwrap();
        assert_eq!(
            vs.iter().map(|v| v.symbol.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert!(restored[vs[0].span.clone()] == op[scan::variants(op).unwrap()[0].span.clone()]);
        assert!(restored[vs[1].span.clone()].contains("@k"));
        assert!(
            hold(op, &regex::Regex::new("riscv").unwrap(), &module, MODULE)
                .unwrap()
                .is_none()
        );
        assert!(check_count(op, &held.given).is_err());
        assert!(check_count(op, &restored).is_ok());
    }

    #[test]
    fn objects_are_checked_against_the_triple() {
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        elf[16] = 1;
        elf[18] = 62;
        let x86 = r#"#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {target_triple = "x86_64-unknown-unknown-eabi-elf"}>"#;
        let arm = x86.replace("x86_64-unknown", "aarch64-unknown");
        assert!(check_elf(&elf, x86).is_ok());
        assert!(check_elf(&elf, &arm)
            .unwrap_err()
            .contains("not for the variant's triple aarch64"));
        let mut shared = elf.clone();
        shared[16] = 3;
        assert!(check_elf(&shared, x86)
            .unwrap_err()
            .contains("not a relocatable object"));
        assert!(check_elf(b"garbage", x86)
            .unwrap_err()
            .contains("not an ELF file"));
        assert!(check_elf(
            &elf,
            "#hal.executable.target<\"llvm-cpu\", \"embedded-elf-x86_64\">"
        )
        .is_ok());
    }

    proptest::proptest! {
        #[test]
        fn elf_checks_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80), target in "\\PC{0,80}") {
            let _ = check_elf(&bytes, &target);
            let _ = triple_of(&target);
        }
    }
}
