// Common subexpressions are computed once.
// RUN: iree-opt --cse %s | FileCheck %s
// CHECK-LABEL: func.func @twice
// CHECK-COUNT-1: arith.muli
// CHECK-NOT: arith.muli
func.func @twice(%a: i32, %b: i32) -> i32 {
  %x = arith.muli %a, %b : i32
  %y = arith.muli %a, %b : i32
  %r = arith.addi %x, %y : i32
  return %r : i32
}
