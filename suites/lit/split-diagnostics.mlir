// Diagnostics checked split by split.
// RUN: iree-opt --split-input-file --verify-diagnostics %s
func.func @ok() { return }
// -----
func.func @bad(%a: i32) -> i64 {
  // expected-error @+1 {{type of return operand 0 ('i32') doesn't match function result type ('i64')}}
  return %a : i32
}
