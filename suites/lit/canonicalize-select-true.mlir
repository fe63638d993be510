// A select on a constant true picks its first operand.
// RUN: iree-opt --canonicalize %s | FileCheck %s
// CHECK-LABEL: func.func @select_true
// CHECK-NEXT: return %arg0 : f32
func.func @select_true(%a: f32, %b: f32) -> f32 {
  %true = arith.constant true
  %r = arith.select %true, %a, %b : f32
  return %r : f32
}
