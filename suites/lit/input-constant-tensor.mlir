// A constant tensor stays a constant through input conversion.
// RUN: iree-compile --compile-to=input %s | FileCheck %s
// CHECK: arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
func.func @consts() -> tensor<2xf32> {
  %c = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %c : tensor<2xf32>
}
