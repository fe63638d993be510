// C = A @ B, f32, zero-filled accumulator.
func.func @main(%a: tensor<16x32xf32>, %b: tensor<32x24xf32>) -> tensor<16x24xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<16x24xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<16x24xf32>) -> tensor<16x24xf32>
  %c = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x24xf32>) outs(%init : tensor<16x24xf32>) -> tensor<16x24xf32>
  return %c : tensor<16x24xf32>
}
