// Row maxima of an i32 matrix (linalg.reduce with arith.maxsi).
func.func @main(%x: tensor<8x64xi32>) -> tensor<8xi32> {
  %lowest = arith.constant -2147483648 : i32
  %empty = tensor.empty() : tensor<8xi32>
  %init = linalg.fill ins(%lowest : i32) outs(%empty : tensor<8xi32>) -> tensor<8xi32>
  %max = linalg.reduce ins(%x : tensor<8x64xi32>) outs(%init : tensor<8xi32>) dimensions = [1]
    (%in: i32, %acc: i32) {
      %m = arith.maxsi %in, %acc : i32
      linalg.yield %m : i32
    }
  return %max : tensor<8xi32>
}
