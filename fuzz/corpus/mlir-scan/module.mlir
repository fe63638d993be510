#map = affine_map<(d0) -> (d0)>
#loc1 = loc("a.mlir":1:1)
module {
  util.global private @g = dense_resource<blob1> : tensor<2xi32>
  hal.executable private @ex_a {
    hal.executable.variant public @v target(#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64">) {
      hal.executable.export public @ex_a ordinal(0) layout(#hal.pipeline.layout<bindings = [#hal.pipeline.binding<storage_buffer>]>)
      builtin.module {
        func.func @ex_a() {
          %0 = "a.b"() {s = "}}{"} : () -> () loc(#loc1)
          return
        }
      }
    }
  } loc(#loc1)
  func.func @main() { return }
}
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000100000002000000"
    }
  }
#-}
