// f16 matmul accumulated in f32 (operands extended by linalg.matmul).
func.func @main(%a: tensor<16x32xf16>, %b: tensor<32x16xf16>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<16x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<16x16xf32>) -> tensor<16x16xf32>
  %c = linalg.matmul ins(%a, %b : tensor<16x32xf16>, tensor<32x16xf16>) outs(%init : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}
