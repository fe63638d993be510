//! `lockstep bench` refuses what it cannot run before compiling: a kernel
//! whose tensors need more bytes than the limit fails its row with the
//! sizes (nothing is written to $TMPDIR), and 0/1 switches take 0 or 1
//! (`-u 2` is not "transposed"; `-t -1` is not "time it").

use crate::common::{stderr, stdout, Project};

#[test]
fn a_kernel_larger_than_the_limit_fails_its_row_with_the_sizes() {
    let p = Project::new();
    let out = p.run(
        &["bench", "gemm", "-m", "1000000", "-k", "1000000", "-n", "1"],
        1,
    );
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(text.contains("too large"), "{text}");
    assert!(text.contains("a 1000000x1000000xfloat32"), "{text}");
    assert!(text.contains("0 compiled"), "{text}");
    // A configured limit applies to small kernels too; --max-bytes wins.
    p.write("lockstep.toml", "[bench]\nmax-bytes = \"100\"\n");
    let out = p.run(&["bench", "gemm", "-m", "4", "-k", "4", "-n", "4"], 1);
    assert!(
        stdout(&out).contains("more than the limit of 100 bytes"),
        "{}",
        stdout(&out)
    );
    p.run(
        &[
            "bench",
            "--max-bytes",
            "1M",
            "gemm",
            "-m",
            "4",
            "-k",
            "4",
            "-n",
            "4",
        ],
        0,
    );
    let out = p.run(&["bench", "--max-bytes", "lots", "gemm", "-m", "4"], 2);
    assert!(stderr(&out).contains("--max-bytes"), "{}", stderr(&out));
    p.write("lockstep.toml", "[bench]\nmax-bytes = \"-3G\"\n");
    let out = p.run(&["bench", "gemm", "-m", "4", "-k", "4", "-n", "4"], 2);
    assert!(
        stderr(&out).contains("[bench] max-bytes `-3G`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn switches_take_zero_or_one() {
    let p = Project::new();
    for (flag, value, name) in [
        ("-u", "2", "-u/--transA"),
        ("-v", "-1", "-v/--transB"),
        ("-t", "-1", "-t/--time"),
        ("-V", "7", "-V/--verify"),
    ] {
        let out = p.run(
            &[
                "bench", "gemm", flag, value, "-m", "4", "-n", "4", "-k", "4",
            ],
            2,
        );
        let err = stderr(&out);
        assert!(
            err.contains(&format!("bad value for {name}: 0 or 1, found {value}")),
            "{flag}: {err}"
        );
    }
}
