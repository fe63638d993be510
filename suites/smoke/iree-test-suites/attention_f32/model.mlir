// Single-head scaled dot-product attention: softmax(Q @ K^T * scale) @ V,
// composed from linalg.transpose, linalg.batch_matmul, linalg.generic and
// linalg.softmax.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @main(%q: tensor<1x8x16xf32>, %k: tensor<1x8x16xf32>, %v: tensor<1x8x16xf32>) -> tensor<1x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 2.500000e-01 : f32
  %kt_empty = tensor.empty() : tensor<1x16x8xf32>
  %kt = linalg.transpose ins(%k : tensor<1x8x16xf32>) outs(%kt_empty : tensor<1x16x8xf32>) permutation = [0, 2, 1]
  %s_empty = tensor.empty() : tensor<1x8x8xf32>
  %s_init = linalg.fill ins(%zero : f32) outs(%s_empty : tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<1x8x16xf32>, tensor<1x16x8xf32>) outs(%s_init : tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  %scaled = linalg.generic
              {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
              ins(%s : tensor<1x8x8xf32>) outs(%s_empty : tensor<1x8x8xf32>) {
    ^bb0(%x: f32, %out: f32):
      %y = arith.mulf %x, %scale : f32
      linalg.yield %y : f32
  } -> tensor<1x8x8xf32>
  %p = linalg.softmax dimension(2) ins(%scaled : tensor<1x8x8xf32>) outs(%s_empty : tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  %o_empty = tensor.empty() : tensor<1x8x16xf32>
  %o_init = linalg.fill ins(%zero : f32) outs(%o_empty : tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<1x8x8xf32>, tensor<1x8x16xf32>) outs(%o_init : tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  return %o : tensor<1x8x16xf32>
}
