// x - x is zero.
// RUN: iree-opt --canonicalize %s | FileCheck %s
// CHECK-LABEL: func.func @sub_self
// CHECK: %[[ZERO:.+]] = arith.constant 0 : i32
// CHECK: return %[[ZERO]]
func.func @sub_self(%a: i32) -> i32 {
  %r = arith.subi %a, %a : i32
  return %r : i32
}
