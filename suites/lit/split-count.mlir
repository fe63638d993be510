// Three splits give three modules, separated as the tool prints them.
// RUN: iree-opt --split-input-file %s | FileCheck %s
// CHECK-COUNT-2: // -----
func.func @a() { return }
// -----
func.func @b() { return }
// -----
func.func @c() { return }
