// Two elementwise ops fuse into one dispatch.
// RUN: iree-compile --compile-to=flow %s | FileCheck %s
// CHECK-COUNT-1: flow.executable private
// CHECK-NOT: flow.executable private
func.func @mul_add(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = arith.mulf %a, %b : tensor<8xf32>
  %1 = arith.addf %0, %a : tensor<8xf32>
  return %1 : tensor<8xf32>
}
