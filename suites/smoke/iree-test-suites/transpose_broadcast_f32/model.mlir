// y = transpose(x) + broadcast(bias): y[j, i] = x[i, j] + bias[i].
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%x: tensor<8x16xf32>, %bias: tensor<8xf32>) -> tensor<16x8xf32> {
  %empty = tensor.empty() : tensor<16x8xf32>
  %xt = linalg.transpose ins(%x : tensor<8x16xf32>) outs(%empty : tensor<16x8xf32>) permutation = [1, 0]
  %b = linalg.broadcast ins(%bias : tensor<8xf32>) outs(%empty : tensor<16x8xf32>) dimensions = [0]
  %y = linalg.generic
         {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
         ins(%xt, %b : tensor<16x8xf32>, tensor<16x8xf32>) outs(%empty : tensor<16x8xf32>) {
    ^bb0(%u: f32, %v: f32, %out: f32):
      %s = arith.addf %u, %v : f32
      linalg.yield %s : f32
  } -> tensor<16x8xf32>
  return %y : tensor<16x8xf32>
}
