// Multiplying by one folds away.
// RUN: iree-opt --canonicalize %s | FileCheck %s
// CHECK-LABEL: func.func @mul_one
// CHECK-NEXT: return %arg0 : i64
func.func @mul_one(%a: i64) -> i64 {
  %c1 = arith.constant 1 : i64
  %r = arith.muli %a, %c1 : i64
  return %r : i64
}
