// The size of a static dimension is a constant.
// RUN: iree-opt --canonicalize %s | FileCheck %s
// CHECK-LABEL: func.func @dim
// CHECK: %[[C4:.+]] = arith.constant 4 : index
// CHECK: return %[[C4]]
func.func @dim(%t: tensor<4x?xf32>) -> index {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %t, %c0 : tensor<4x?xf32>
  return %d : index
}
