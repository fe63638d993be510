/* kernel.c: the hand-written kernel of the bring-your-own-kernel example.
 *
 * tool.py compiles this file to an object and the rewritten dispatch calls
 * byo_mul_add() in place of IREE's generated code for out = a * b + a.
 * (tool.py adds -Dbyo_mul_add=byo_mul_add_<hash of the build>, so that every
 * build of this file has a symbol of its own; see README.md.)
 *
 * It is linked into an IREE "embedded ELF" executable by IREE's own lld, so it
 * must be freestanding: no libc calls (no printf, malloc, memcpy, math.h),
 * no thread-local or mutable global data, no system calls.
 *
 * ABI (what the rewritten MLIR passes; see tool.py):
 *   func.func private @byo_mul_add_<hash>(memref<f32>, memref<f32>, memref<f32>, index)
 *       attributes {llvm.bareptr = true, hal.import.static}
 * llvm.bareptr turns each memref into a plain pointer to its first element,
 * and index is a 64-bit integer on a 64-bit target.
 */
#include <stdint.h>

/* Added to every result so that check.py can tell this code ran rather than
 * IREE's generated code (which computes a * b + a exactly). Set it to 0.0f
 * for the plain math; check.py reads the value from this line. */
#define BYO_MARKER 1.0f

void byo_mul_add(const float *restrict a, const float *restrict b,
                 float *restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = a[i] * b[i] + a[i] + BYO_MARKER;
  }
}
