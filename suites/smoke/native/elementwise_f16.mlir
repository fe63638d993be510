// f16 elementwise: (a + b) * c.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%a: tensor<8x32xf16>, %b: tensor<8x32xf16>, %c: tensor<8x32xf16>) -> tensor<8x32xf16> {
  %empty = tensor.empty() : tensor<8x32xf16>
  %y = linalg.generic
         {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
         ins(%a, %b, %c : tensor<8x32xf16>, tensor<8x32xf16>, tensor<8x32xf16>) outs(%empty : tensor<8x32xf16>) {
    ^bb0(%va: f16, %vb: f16, %vc: f16, %out: f16):
      %sum = arith.addf %va, %vb : f16
      %r = arith.mulf %sum, %vc : f16
      linalg.yield %r : f16
  } -> tensor<8x32xf16>
  return %y : tensor<8x32xf16>
}
