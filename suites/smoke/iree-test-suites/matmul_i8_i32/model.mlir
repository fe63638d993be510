// Integer matmul: i8 operands, sign-extended, accumulated in i32.
func.func @main(%a: tensor<16x32xi8>, %b: tensor<32x16xi8>) -> tensor<16x16xi32> {
  %zero = arith.constant 0 : i32
  %empty = tensor.empty() : tensor<16x16xi32>
  %init = linalg.fill ins(%zero : i32) outs(%empty : tensor<16x16xi32>) -> tensor<16x16xi32>
  %c = linalg.matmul ins(%a, %b : tensor<16x32xi8>, tensor<32x16xi8>) outs(%init : tensor<16x16xi32>) -> tensor<16x16xi32>
  return %c : tensor<16x16xi32>
}
