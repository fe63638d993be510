// A return whose type differs from the function's is refused.
// RUN: iree-opt --verify-diagnostics %s
func.func @mismatch(%a: f32) -> i32 {
  // expected-error @+1 {{type of return operand 0 ('f32') doesn't match function result type ('i32')}}
  return %a : f32
}
