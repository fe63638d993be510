// A call with the wrong number of operands is refused.
// RUN: iree-opt --verify-diagnostics %s
func.func private @callee(i32, i32) -> i32
func.func @caller(%a: i32) -> i32 {
  // expected-error @+1 {{incorrect number of operands for callee}}
  %r = func.call @callee(%a) : (i32) -> i32
  return %r : i32
}
