# The embedded lit suite: tests of the IREE compiler in LLVM's lit format,
# run by `lockstep test` (docs/test.md, "lit suites"). lockstep puts
# FileCheck, lit and the IREE tools on the RUN lines' PATH.
import lit.formats

config.name = "iree-lit"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir"]
