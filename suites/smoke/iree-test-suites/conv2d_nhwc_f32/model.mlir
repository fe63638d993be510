// 3x3 "same" convolution, NHWC input, HWCF filter, stride 1, zero padding 1.
func.func @main(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x8x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x4xf32> to tensor<1x10x10x4xf32>
  %empty = tensor.empty() : tensor<1x8x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %y = linalg.conv_2d_nhwc_hwcf
         {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%padded, %w : tensor<1x10x10x4xf32>, tensor<3x3x4x8xf32>) outs(%init : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %y : tensor<1x8x8x8xf32>
}
