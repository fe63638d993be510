// An elementwise add becomes one dispatch.
// RUN: iree-compile --compile-to=flow %s | FileCheck %s
// CHECK: flow.executable private @add_dispatch_0
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: util.func public @add
// CHECK: flow.dispatch @add_dispatch_0
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
