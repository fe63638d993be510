// Truncating a sign extension gives back the original value.
// RUN: iree-opt --canonicalize %s | FileCheck %s
// CHECK-LABEL: func.func @roundtrip
// CHECK-NEXT: return %arg0 : i8
func.func @roundtrip(%a: i8) -> i8 {
  %w = arith.extsi %a : i8 to i32
  %n = arith.trunci %w : i32 to i8
  return %n : i8
}
