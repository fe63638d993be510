// Row sums (linalg.reduce with arith.addf).
func.func @main(%x: tensor<8x64xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.reduce ins(%x : tensor<8x64xf32>) outs(%init : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %sum : tensor<8xf32>
}
