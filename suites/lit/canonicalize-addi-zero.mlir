// Adding zero folds away.
// RUN: iree-opt --canonicalize %s | FileCheck %s
// CHECK-LABEL: func.func @add_zero
// CHECK-NEXT: return %arg0 : i32
func.func @add_zero(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %r = arith.addi %a, %c0 : i32
  return %r : i32
}
