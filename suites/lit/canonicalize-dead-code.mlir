// An unused pure operation is erased.
// RUN: iree-opt --canonicalize %s | FileCheck %s
// CHECK-LABEL: func.func @dead
// CHECK-NOT: arith.muli
// CHECK: return %arg0
func.func @dead(%a: i32) -> i32 {
  %unused = arith.muli %a, %a : i32
  return %a : i32
}
