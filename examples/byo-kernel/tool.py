#!/usr/bin/env python3
# tool.py: the preprocessing tool of the bring-your-own-kernel example.
#
# Reads one hal.executable on stdin (as IREE's
# --iree-hal-preprocess-executables-with= and `lockstep preprocess --with`
# send it), replaces each dispatch that computes out = a * b + a on a static
# 1-D f32 tensor with a call to byo_mul_add() from kernel.c, attaches the
# compiled kernel object to the variant, and prints the executable on stdout.
# An executable with nothing to replace is printed back byte for byte.
#
# It works on IREE's Python bindings: the input is parsed and the result
# verified by iree.compiler.ir, and the replacement is a rewrite pattern
# written in Python and applied by MLIR's walk-based pattern driver
# (iree.compiler.rewrite). Nothing is edited as text.
#
# Run it with a Python that has the iree-base-compiler package:
#   python3 tool.py [--kernel kernel.c] < executable.mlir > rewritten.mlir
# Errors go to stderr and the exit status is 1.

import argparse
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

try:
    from iree.compiler import ir, rewrite
    from iree.compiler.dialects import arith, func, iree_tensor_ext
except ImportError as error:  # reported by main()
    ir = None
    IMPORT_ERROR = error

HERE = Path(__file__).resolve().parent

# The function kernel.c defines. The object gets it under a name with a hash
# of the build inputs appended (see Kernel), and the IR calls that name.
KERNEL_NAME = "byo_mul_add"

# ELF e_machine of the objects each embedded-elf-<arch> format links.
ELF_MACHINES = {"x86_64": 62, "arm_64": 183, "riscv_64": 243}

# Position independent (it is linked into a shared object), freestanding (no
# libc), no stack protector (its guard lives in libc's thread-local storage,
# which an embedded ELF has not got).
BASE_CFLAGS = ["-c", "-fPIC", "-ffreestanding", "-fno-stack-protector", "-O2"]


class ToolError(Exception):
    """A failure reported as one message on stderr, with exit status 1."""


def parse_args(argv):
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    parser = argparse.ArgumentParser(
        description="IREE executable preprocessing tool (stdin to stdout): "
        "replace a*b+a dispatches with a call to a C kernel."
    )
    parser.add_argument(
        "--kernel",
        default=str(HERE / "kernel.c"),
        help="C source of the kernel (default: kernel.c beside this script)",
    )
    parser.add_argument(
        "--cc",
        default=os.environ.get("BYO_KERNEL_CC") or os.environ.get("CC") or "cc",
        help="C compiler command, split as a shell would "
        "(default: $BYO_KERNEL_CC, else $CC, else cc)",
    )
    parser.add_argument(
        "--cflags",
        default=os.environ.get("BYO_KERNEL_CFLAGS", ""),
        help="extra compiler flags (default: $BYO_KERNEL_CFLAGS)",
    )
    parser.add_argument(
        "--format",
        default="embedded-elf-x86_64",
        help="rewrite the llvm-cpu variants of this format only "
        "(default: embedded-elf-x86_64)",
    )
    parser.add_argument(
        "--object-dir",
        default=os.environ.get("BYO_KERNEL_OBJECT_DIR")
        or os.path.join(cache, "byo-kernel"),
        help="where kernel objects are kept (default: $BYO_KERNEL_OBJECT_DIR, "
        "else ~/.cache/byo-kernel)",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="say what was rewritten"
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    text = sys.stdin.read()
    try:
        if ir is None:
            raise ToolError(
                f"cannot import iree.compiler ({IMPORT_ERROR}); run this tool "
                "with a Python that has iree-base-compiler installed"
            )
        result = preprocess(text, args)
    except ToolError as error:
        print(f"byo-kernel tool: error: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(result)
    return 0


def note(args, message):
    if args.verbose:
        print(f"byo-kernel tool: {message}", file=sys.stderr)


# ---------------------------------------------------------------------------
# The executable and its variants


def preprocess(text, args):
    # ir.Context() comes with IREE's dialects (hal, iree_tensor_ext, ...) and
    # the upstream ones registered: nothing is parsed as an unknown op.
    with ir.Context(), ir.Location.unknown():
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as error:
            raise ToolError(f"cannot parse the executable on stdin: {error}")
        executables = children(module.operation, "hal.executable")
        if len(executables) != 1:
            raise ToolError(
                f"expected one hal.executable on stdin, found {len(executables)}"
            )
        executable = executables[0]

        changed = False
        for variant in children(executable, "hal.executable.variant"):
            changed |= rewrite_variant(variant, args)
        if not changed:
            return text  # nothing replaced: the input, byte for byte

        try:
            executable.verify()
        except ir.MLIRError as error:
            raise ToolError(f"the rewritten executable does not verify: {error}")
        # Keep the locations IREE sent (its errors point at them); print every
        # attribute in place (no #alias lines), so the output stands alone.
        asm = executable.get_asm(enable_debug_info="loc(" in text, use_local_scope=True)
        return asm + "\n"


def children(op, name):
    """The ops called `name` directly inside op's regions."""
    return [
        child.operation
        for region in op.regions
        for block in region.blocks
        for child in block.operations
        if child.operation.name == name
    ]


def symbol_name(op):
    return ir.StringAttr(op.attributes["sym_name"]).value


def read_target(variant):
    """(backend, format, target_triple) of a hal.executable.variant. The
    bindings have no class for #hal.executable.target, so they are read from
    the attribute's printed form."""
    target = str(variant.attributes["target"])
    match = re.match(r'#hal\.executable\.target<"([^"]*)", "([^"]*)"', target)
    if not match:
        raise ToolError(f"cannot read a variant's target: {target[:200]}")
    triple = re.search(r'target_triple = "([^"]*)"', target)
    return match.group(1), match.group(2), triple.group(1) if triple else ""


def rewrite_variant(variant, args):
    """Rewrite one variant in place; returns whether anything changed."""
    name = "@" + symbol_name(variant)
    backend, fmt, triple = read_target(variant)
    if backend != "llvm-cpu" or fmt != args.format:
        note(args, f"variant {name} ({backend}, {fmt}) left alone")
        return False
    arch = fmt.removeprefix("embedded-elf-")
    if arch not in ELF_MACHINES:
        raise ToolError(
            f"variant {name}: format {fmt} is none of the embedded ELF formats "
            f"this tool knows ({', '.join('embedded-elf-' + a for a in ELF_MACHINES)})"
        )
    inner = children(variant, "builtin.module")
    if len(inner) != 1:
        return False

    stores = ir.get_ops_of_type(inner[0], iree_tensor_ext.DispatchTensorStoreOp)
    if not any(match_mul_add(store) for store in stores):
        note(args, f"variant {name}: no a*b+a dispatch")
        return False
    kernel = Kernel(args, arch, triple)
    rewritten = replace_mul_add(inner[0], kernel.symbol)
    declare_kernel(inner[0], kernel.symbol)
    for export in children(variant, "hal.executable.export"):
        if symbol_name(export) in rewritten:
            use_one_workgroup(export)
    attach_object(variant, kernel.build())
    for function in sorted(rewritten):
        note(args, f"variant {name}: @{function} calls {kernel.symbol} in {kernel.path}")
    return True


# ---------------------------------------------------------------------------
# The rewrite pattern
#
# Before (what IREE hands over: tensors, one dispatch function per export):
#   %a = hal.interface.binding.subspan ... binding(0) ... : !iree_tensor_ext.dispatch.tensor<readonly:tensor<64xf32>>
#   %x = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0], sizes = [64], strides = [1] ...
#   (the same for %b / %y)
#   %r = linalg.generic ins(%x, %y) ... { mulf(x, y); addf(product, x); yield }
#   iree_tensor_ext.dispatch.tensor.store %r, %out, offsets = [0], sizes = [64], strides = [1] ...
#
# After (memrefs and a call; nothing left for IREE's code generation to tile):
#   %a = hal.interface.binding.subspan ... binding(0) ... : memref<f32>
#   (the same for %b and %out)
#   %n = arith.constant 64 : index
#   call @byo_mul_add_<hash>(%a, %b, %out, %n) : (memref<f32>, memref<f32>, memref<f32>, index) -> ()
#
# A memref<f32> subspan is the address of the binding's first element (plus
# its offset); with llvm.bareptr on the callee it is passed as a bare float*.


def replace_mul_add(inner_module, symbol):
    """Apply the pattern to the ops of a variant's module; returns the names
    of the dispatch functions it rewrote."""
    rewritten = set()

    def pattern(store, rewriter):
        match = match_mul_add(store)
        if match is None:
            return True  # truthy: no match
        function = ir.get_parent_of_type(store, func.FuncOp)
        rewritten.add(symbol_name(function))
        replace_with_call(store, match, rewriter, symbol)
        return False  # falsy: matched and rewritten

    patterns = rewrite.RewritePatternSet()
    patterns.add("iree_tensor_ext.dispatch.tensor.store", pattern)
    # The walk-based driver visits each op once and neither folds nor moves
    # other ops, so what the pattern does not touch stays as it was.
    rewrite.walk_and_apply_patterns(inner_module, patterns.freeze())
    return rewritten


def match_mul_add(store):
    """If `store` writes a * b + a (whole static 1-D f32 tensors loaded from
    and stored to bindings), return (n, subspans of a, b and out, the ops to
    erase, users first); else None."""
    value, target = store.operands[0], store.operands[1]
    generic = defining_op(value, "linalg.generic")
    if generic is None or not whole_tensor(store):
        return None
    # The dispatch must do nothing else: its workgroup count becomes 1x1x1,
    # which would leave any other work in it to a single workgroup.
    function = ir.get_parent_of_type(store, func.FuncOp)
    if function is None or len(ir.get_ops_of_type(function, iree_tensor_ext.DispatchTensorStoreOp)) != 1:
        return None
    inputs, outputs = list(generic.inputs), list(generic.outputs)
    if len(inputs) != 2 or len(outputs) != 1 or len(generic.results) != 1:
        return None
    tensor = value.type
    if (
        not isinstance(tensor, ir.RankedTensorType)
        or tensor.rank != 1
        or not tensor.has_static_shape
        or not isinstance(tensor.element_type, ir.F32Type)
        or any(operand.type != tensor for operand in inputs + outputs)
    ):
        return None
    if any(str(m) != "affine_map<(d0) -> (d0)>" for m in generic.indexing_maps):
        return None
    if [str(t) for t in generic.iterator_types] != ["#linalg.iterator_type<parallel>"]:
        return None
    if not body_is_mul_add(generic):
        return None

    loads = [defining_op(x, "iree_tensor_ext.dispatch.tensor.load") for x in inputs]
    if any(load is None or not whole_tensor(load) for load in loads):
        return None
    subspans = [defining_op(load.operands[0], "hal.interface.binding.subspan") for load in loads]
    subspans.append(defining_op(target, "hal.interface.binding.subspan"))
    if any(subspan is None for subspan in subspans):
        return None
    init = defining_op(outputs[0], "tensor.empty")
    dead = []  # each op once (a * a + a loads one binding twice), users first
    for op in [store, generic, *loads, init, *subspans]:
        if op is not None and not any(op == seen for seen in dead):
            dead.append(op)
    return tensor.shape[0], subspans, dead


def body_is_mul_add(generic):
    """Whether the body is exactly mulf(x, y), addf(product, x), yield(sum),
    in either operand order."""
    block = generic.region.blocks[0]
    x, y = block.arguments[0], block.arguments[1]
    ops = list(block.operations)
    if [op.operation.name for op in ops] != ["arith.mulf", "arith.addf", "linalg.yield"]:
        return False
    mul, add, done = ops
    return (
        list(mul.operands) in ([x, y], [y, x])
        and list(add.operands) in ([mul.result, x], [x, mul.result])
        and list(done.operands) == [add.result]
    )


def defining_op(value, name):
    owner = value.owner
    if isinstance(owner, ir.OpView) and owner.operation.name == name:
        return owner
    return None


def whole_tensor(op):
    """Whether a dispatch.tensor.load/store moves the whole static tensor."""
    attr = lambda name: list(ir.DenseI64ArrayAttr(op.attributes[name]))
    tensor = op.results[0].type if op.operation.name.endswith(".load") else op.operands[0].type
    shape = list(tensor.shape)
    return (
        attr("static_offsets") == [0] * len(shape)
        and attr("static_sizes") == shape
        and attr("static_strides") == [1] * len(shape)
    )


def replace_with_call(store, match, rewriter, symbol):
    n, subspans, dead = match
    pointer = ir.MemRefType.get([], ir.F32Type.get())
    with rewriter.ip, store.location:  # the new ops go right before the store
        views = [memref_subspan(subspan, pointer) for subspan in subspans]
        count = arith.ConstantOp(ir.IndexType.get(), n)
        func.CallOp([], symbol, [*views, count.result])
    for op in dead:
        if all(not list(result.uses) for result in op.results):
            rewriter.erase_op(op)


def memref_subspan(subspan, memref_type):
    """A copy of a binding subspan (same binding, layout, offset, alignment,
    flags) that yields `memref_type` instead of a dispatch tensor."""
    attributes = {name: subspan.attributes[name] for name in subspan.attributes}
    offset_count = list(ir.DenseI32ArrayAttr(attributes["operandSegmentSizes"]))[0]
    attributes["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get([offset_count, 0])
    return ir.Operation.create(
        "hal.interface.binding.subspan",
        results=[memref_type],
        operands=list(subspan.operands)[:offset_count],
        attributes=attributes,
    ).result


def declare_kernel(inner_module, symbol):
    """Add `func.func private @<symbol>(...)` to the variant's module."""
    pointer = ir.MemRefType.get([], ir.F32Type.get())
    signature = ir.FunctionType.get([pointer, pointer, pointer, ir.IndexType.get()], [])
    block = inner_module.regions[0].blocks[0]
    if any(symbol_name(op) == symbol for op in children(inner_module, "func.func")):
        return
    with ir.InsertionPoint.at_block_begin(block), inner_module.location:
        declaration = func.FuncOp(symbol, signature, visibility="private")
    # llvm.bareptr: each memref is passed as a plain pointer, not a descriptor.
    # hal.import.static: the linker resolves the symbol from the attached
    # object; without it the call becomes a runtime import that no loader
    # provides ("no executable loader registered for ... embedded-elf-x86_64").
    declaration.attributes["llvm.bareptr"] = ir.BoolAttr.get(True)
    declaration.attributes["hal.import.static"] = ir.UnitAttr.get()


def use_one_workgroup(export):
    """The C function covers the whole tensor, so the export dispatches one
    workgroup: a second pattern replaces workgroup_count_from_slice() with 1s."""

    def pattern(op, rewriter):
        with rewriter.ip, op.location:
            one = arith.ConstantOp(ir.IndexType.get(), 1).result
        rewriter.replace_op(op, [one] * len(op.results))
        return False

    patterns = rewrite.RewritePatternSet()
    patterns.add("iree_tensor_ext.dispatch.workgroup_count_from_slice", pattern)
    rewrite.walk_and_apply_patterns(export, patterns.freeze())


def attach_object(variant, path):
    """Add #hal.executable.object<{path = "..."}> to the variant's objects."""
    # A printed StringAttr is quoted and escaped, whatever the path holds.
    obj = ir.Attribute.parse(f"#hal.executable.object<{{path = {ir.StringAttr.get(str(path))}}}>")
    objects = []
    if "objects" in variant.attributes:
        objects = list(ir.ArrayAttr(variant.attributes["objects"]))
    if obj not in objects:
        objects.append(obj)
    variant.attributes["objects"] = ir.ArrayAttr.get(objects)


# ---------------------------------------------------------------------------
# The kernel object


class Kernel:
    """kernel.c built for one target.

    Everything that goes into the object (the source, the compiler and its
    version, the flags, the target triple) is hashed, and the hash names both
    the object file and the symbol: the compiler is run with
    -Dbyo_mul_add=byo_mul_add_<hash>. So the same input always gives the same
    output text, an edit to kernel.c gives a new object and a new call in the
    IR, and two different builds of the kernel can never be mistaken for one
    another when IREE links all executables of a target into one ELF (its lld
    runs with --allow-multiple-definition: a clash would not be an error, the
    first definition would silently win)."""

    def __init__(self, args, arch, triple):
        self.arch = arch
        self.source = Path(args.kernel).resolve()
        try:
            source = self.source.read_bytes()
        except OSError as error:
            raise ToolError(f"cannot read the kernel source: {error}")
        command = shlex.split(args.cc)
        found = shutil.which(command[0]) if command else None
        if found is None:
            raise ToolError(
                f"no C compiler: `{args.cc}` was not found. Set CC or BYO_KERNEL_CC, "
                "e.g. BYO_KERNEL_CC='python3 -m ziglang cc -target x86_64-linux-none'"
            )
        self.command = [found] + command[1:]
        self.flags = BASE_CFLAGS + shlex.split(args.cflags)
        version = run(self.command + ["--version"], "ask the C compiler its version").stdout

        digest = hashlib.sha256()
        for part in (source, "\0".join(self.command + self.flags).encode(), version, triple.encode()):
            digest.update(hashlib.sha256(part).digest())
        self.symbol = f"{KERNEL_NAME}_{digest.hexdigest()[:16]}"
        self.path = Path(args.object_dir).resolve() / f"{self.symbol}.{arch}.o"

    def build(self):
        """Compile unless the object is already there; its absolute path."""
        if self.path.exists():
            return self.path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # IREE runs one tool per executable at once: build under a private
        # name and rename, so no run ever sees half an object.
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        try:
            run(
                self.command + self.flags + [f"-D{KERNEL_NAME}={self.symbol}", str(self.source), "-o", str(partial)],
                f"compile {self.source}",
            )
            self.check_elf(partial)
            os.replace(partial, self.path)
        finally:
            partial.unlink(missing_ok=True)
        return self.path

    def check_elf(self, path):
        """A host compiler builds for the host; another target needs a cross
        compiler. Catch the mismatch here rather than in IREE's linker."""
        header = path.read_bytes()[:20]
        if header[:4] != b"\x7fELF" or header[4] != 2:
            raise ToolError(f"{self.command[0]} did not produce a 64-bit ELF object")
        machine = int.from_bytes(header[18:20], "little")
        if machine != ELF_MACHINES[self.arch]:
            raise ToolError(
                f"{self.command[0]} built an object for ELF machine {machine}; the "
                f"variant needs {self.arch} (machine {ELF_MACHINES[self.arch]}). "
                "Set BYO_KERNEL_CC to a compiler for that target."
            )


def run(command, what):
    try:
        result = subprocess.run(command, capture_output=True, stdin=subprocess.DEVNULL)
    except OSError as error:
        raise ToolError(f"cannot {what}: {error}")
    if result.returncode != 0:
        stderr = result.stderr.decode(errors="replace").strip()
        raise ToolError(f"cannot {what}: `{shlex.join(command)}` exited with status {result.returncode}\n{stderr}")
    return result


if __name__ == "__main__":
    sys.exit(main())
