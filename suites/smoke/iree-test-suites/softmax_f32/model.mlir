// Row-wise softmax (linalg.softmax over the last dimension).
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %empty = tensor.empty() : tensor<4x16xf32>
  %y = linalg.softmax dimension(1) ins(%x : tensor<4x16xf32>) outs(%empty : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
