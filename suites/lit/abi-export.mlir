// Public functions get buffer-view ABI wrappers.
// RUN: iree-compile --compile-to=abi %s | FileCheck %s
// CHECK: util.func public @neg(%{{.+}}: !hal.buffer_view) -> !hal.buffer_view
// CHECK: hal.tensor.import
// CHECK: hal.tensor.export
func.func @neg(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.negf %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
