// x == x is true.
// RUN: iree-opt --canonicalize %s | FileCheck %s
// CHECK-LABEL: func.func @cmp_self
// CHECK: %[[TRUE:.+]] = arith.constant true
// CHECK: return %[[TRUE]]
func.func @cmp_self(%a: i32) -> i1 {
  %r = arith.cmpi eq, %a, %a : i32
  return %r : i1
}
