// Compiling to the VM gives a vm.module with the exported function.
// RUN: iree-compile --iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu --compile-to=vm %s | FileCheck %s
// CHECK: vm.module public @module
// CHECK: vm.export @sub
func.func @sub(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = arith.subi %a, %b : tensor<4xi32>
  return %0 : tensor<4xi32>
}
