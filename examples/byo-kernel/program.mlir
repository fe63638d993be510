// program.mlir: the program of the bring-your-own-kernel example. It becomes
// two dispatches: @main_dispatch_0 computes a * b + a (the one tool.py hands to
// kernel.c) and @main_dispatch_1 sums b (left to IREE's own code generation).
//
//   iree-compile program.mlir --iree-hal-target-device=local \
//     --iree-hal-local-target-device-backends=llvm-cpu --compile-to=executable-sources
//
// shows both dispatches as the preprocessing tool receives them.

#elementwise = affine_map<(d0) -> (d0)>
#to_scalar = affine_map<(d0) -> ()>

func.func @main(%a: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<64xf32>, tensor<f32>) {
  // a * b + a: replaced by byo_mul_add() from kernel.c.
  %empty = tensor.empty() : tensor<64xf32>
  %mul_add = linalg.generic {
      indexing_maps = [#elementwise, #elementwise, #elementwise],
      iterator_types = ["parallel"]}
      ins(%a, %b : tensor<64xf32>, tensor<64xf32>) outs(%empty : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %unused: f32):
    %product = arith.mulf %x, %y : f32
    %sum = arith.addf %product, %x : f32
    linalg.yield %sum : f32
  } -> tensor<64xf32>

  // sum(b): a reduction, so IREE keeps it out of the first dispatch; the tool
  // does not match it and leaves it to the compiler.
  %zero = arith.constant 0.0 : f32
  %scalar = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%scalar : tensor<f32>) -> tensor<f32>
  %total = linalg.generic {
      indexing_maps = [#elementwise, #to_scalar],
      iterator_types = ["reduction"]}
      ins(%b : tensor<64xf32>) outs(%init : tensor<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %next = arith.addf %x, %acc : f32
    linalg.yield %next : f32
  } -> tensor<f32>

  return %mul_add, %total : tensor<64xf32>, tensor<f32>
}
