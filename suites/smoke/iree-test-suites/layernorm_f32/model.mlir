// Layer normalization over the last dimension:
// (x - mean) * rsqrt(var + eps) * gamma + beta, composed from linalg.reduce
// and linalg.generic with math.rsqrt.
#x2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @main(%x: tensor<4x32xf32>, %gamma: tensor<32xf32>, %beta: tensor<32xf32>) -> tensor<4x32xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 3.200000e+01 : f32
  %eps = arith.constant 1.000000e-05 : f32
  %r_empty = tensor.empty() : tensor<4xf32>
  %r_init = linalg.fill ins(%zero : f32) outs(%r_empty : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%x : tensor<4x32xf32>) outs(%r_init : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %x_empty = tensor.empty() : tensor<4x32xf32>
  %centered = linalg.generic
      {indexing_maps = [#x2, #row, #x2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<4x32xf32>, tensor<4xf32>) outs(%x_empty : tensor<4x32xf32>) {
    ^bb0(%v: f32, %s: f32, %out: f32):
      %mean = arith.divf %s, %n : f32
      %c = arith.subf %v, %mean : f32
      linalg.yield %c : f32
  } -> tensor<4x32xf32>
  %sqsum = linalg.generic
      {indexing_maps = [#x2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%centered : tensor<4x32xf32>) outs(%r_init : tensor<4xf32>) {
    ^bb0(%c: f32, %acc: f32):
      %sq = arith.mulf %c, %c : f32
      %a = arith.addf %sq, %acc : f32
      linalg.yield %a : f32
  } -> tensor<4xf32>
  %y = linalg.generic
      {indexing_maps = [#x2, #row, #col, #col, #x2], iterator_types = ["parallel", "parallel"]}
      ins(%centered, %sqsum, %gamma, %beta : tensor<4x32xf32>, tensor<4xf32>, tensor<32xf32>, tensor<32xf32>) outs(%x_empty : tensor<4x32xf32>) {
    ^bb0(%c: f32, %ss: f32, %g: f32, %b: f32, %out: f32):
      %var = arith.divf %ss, %n : f32
      %ve = arith.addf %var, %eps : f32
      %inv = math.rsqrt %ve : f32
      %norm = arith.mulf %c, %inv : f32
      %scaled = arith.mulf %norm, %g : f32
      %r = arith.addf %scaled, %b : f32
      linalg.yield %r : f32
  } -> tensor<4x32xf32>
  return %y : tensor<4x32xf32>
}
