// Each split is its own module.
// RUN: iree-opt --split-input-file --canonicalize %s | FileCheck %s
// CHECK-LABEL: func.func @first
// CHECK-NEXT: return %arg0
func.func @first(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %r = arith.addi %a, %c0 : i32
  return %r : i32
}
// -----
// CHECK-LABEL: func.func @second
// CHECK-NEXT: return %arg0
func.func @second(%a: i32) -> i32 {
  %c1 = arith.constant 1 : i32
  %r = arith.muli %a, %c1 : i32
  return %r : i32
}
