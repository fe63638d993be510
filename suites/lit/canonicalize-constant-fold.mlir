// Constants fold: 3 + 4 = 7.
// RUN: iree-opt --canonicalize %s | FileCheck %s
// CHECK-LABEL: func.func @fold
// CHECK: arith.constant 7 : i32
// CHECK-NOT: arith.addi
func.func @fold() -> i32 {
  %a = arith.constant 3 : i32
  %b = arith.constant 4 : i32
  %r = arith.addi %a, %b : i32
  return %r : i32
}
