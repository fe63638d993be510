//! The commands `lockstep bench` runs when given none: a few small layers in
//! the shapes of ResNet-50, a depthwise convolution, a 3-D convolution, the
//! backward directions, a transposed (upsampling) convolution, a gemm and a
//! layer norm of a transformer block, sized to finish in seconds on a laptop
//! CPU.

/// The embedded commands file.
pub const COMMANDS: &str = "\
# ResNet-50 (batch 1, reduced spatial sizes): 1x1 reduce, 3x3, 1x1 expand, strided 3x3
conv -n 1 -c 64 -H 28 -W 28 -k 64 -y 1 -x 1 -F 1 -i 10
conv -n 1 -c 64 -H 28 -W 28 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1 -i 10
convbfp16 -n 1 -c 64 -H 28 -W 28 -k 256 -y 1 -x 1 -F 1 -I NHWC -f NHWC -O NHWC -i 10
conv -n 1 -c 128 -H 28 -W 28 -k 128 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 1 -i 10
# depthwise 3x3
conv -n 1 -c 64 -H 28 -W 28 -k 64 -y 3 -x 3 -p 1 -q 1 -g 64 -F 1 -i 10
# 3-D
conv -_ 3 -n 1 -c 8 -! 8 -H 16 -W 16 -k 16 -@ 3 -y 3 -x 3 -$ 1 -p 1 -q 1 -F 1 -i 10
# backward data and backward weights
conv -n 1 -c 32 -H 28 -W 28 -k 32 -y 3 -x 3 -p 1 -q 1 -F 6 -i 10
# transposed 3x3, stride 2 (a decoder's upsampling)
conv -n 1 -c 64 -H 14 -W 14 -k 32 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -m trans -Y 1 -X 1 -F 1 -i 10
# a transformer block's projection and layer norm (128 tokens, width 256);
# as in BOO, gemm's -k is M (the tokens) and -m is K (the contracted width)
gemmfp16 -k 128 -m 256 -n 256 -F 1 -i 10
layernorm -X 128x256 -o 1 -m 0 -F 1 -i 10
";

#[cfg(test)]
mod tests {
    use crate::commands::parse_file;

    #[test]
    fn every_default_line_parses_and_generates_its_kernels() {
        let lines = parse_file(super::COMMANDS, false);
        assert!(lines.len() >= 6);
        for line in lines {
            let command = line
                .parse()
                .unwrap_or_else(|e| panic!("line {}: {e}", line.number));
            for sig in crate::signatures(&command.op) {
                crate::kernel::module(&sig).unwrap_or_else(|e| panic!("line {}: {e}", line.number));
            }
        }
    }
}
