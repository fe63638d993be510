// Fused elementwise chain: tanh(a + b) * c + a.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%a: tensor<4x32xf32>, %b: tensor<4x32xf32>, %c: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %empty = tensor.empty() : tensor<4x32xf32>
  %y = linalg.generic
         {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
         ins(%a, %b, %c : tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>) outs(%empty : tensor<4x32xf32>) {
    ^bb0(%va: f32, %vb: f32, %vc: f32, %out: f32):
      %sum = arith.addf %va, %vb : f32
      %t = math.tanh %sum : f32
      %prod = arith.mulf %t, %vc : f32
      %r = arith.addf %prod, %va : f32
      linalg.yield %r : f32
  } -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}
