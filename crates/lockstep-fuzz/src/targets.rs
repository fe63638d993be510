//! The fuzz targets: one per parser or file format lockstep reads from its
//! users. Each takes arbitrary bytes and calls the same public entry point
//! the commands use. A target returns `Ok` for input the parser accepted,
//! `Err(message)` for input it refused (both fine), and breaks the contract
//! by panicking, by hanging (the runner's time limit), or by refusing input
//! with a message that does not name the file it came from.

use std::path::Path;

use crate::contract::kind_of;
pub use crate::contract::{Outcome, Target};

/// Every target, in the order `scripts/fuzz` runs them.
pub fn all() -> Vec<Target> {
    vec![
        Target {
            name: "config",
            run: config,
            dictionary: &[
                "[integrate]",
                "[test]",
                "[bench]",
                "[preprocess]",
                "[toolchain]",
                "[integrate.export]",
                "[test.targets.cpu]",
                "submodule = ",
                "branch = ",
                "smoke-timeout = ",
                "timeout = ",
                "jobs = ",
                "paths = ",
                "\"",
                "'",
                "=",
                "\n",
                "[",
                "]",
                "{",
                "}",
                "\\u0000",
                "1e400",
                "-1",
                "\"2h\"",
            ],
            heavy: false,
        },
        Target {
            name: "native-suite",
            run: native_suite,
            dictionary: &[
                "[[test]]",
                "name = ",
                "source = ",
                "function = ",
                "inputs = ",
                "outputs = ",
                "[test.targets.cpu]",
                "[test.benchmark]",
                "time-ms = ",
                "expect = ",
                "markers = ",
                "tolerance = ",
                "\"",
                "[",
                "]",
                "\n",
                "nan",
                "inf",
                "-1",
                "\"../x\"",
                "\"\"",
                "\"a b\"",
                "[suite]",
            ],
            heavy: false,
        },
        Target {
            name: "torch-case",
            run: torch_case,
            dictionary: &[
                "{",
                "}",
                "[",
                "]",
                ":",
                ",",
                "\"Formula\"",
                "\"shape\"",
                "\"dtype\"",
                "\"float16\"",
                "\"bfloat16\"",
                "\"int8\"",
                "\"coeff\"",
                "\"offset\"",
                "\"flat_args\"",
                "\"seed\"",
                "\"mode\"",
                "\"benchmark\"",
                "\"compare\"",
                "\"expected_output\"",
                "\"url\"",
                "\"value\"",
                "\"https://h/x.npy\"",
                "\"file_name\"",
                "\"../x\"",
                "-1",
                "1e308",
                "4294967296",
                "null",
            ],
            heavy: false,
        },
        Target {
            name: "pytest-junit",
            run: pytest_junit,
            dictionary: &[
                "<testsuites>",
                "<testsuite name=\"pytest\">",
                "<testcase classname=\"t.test_a\" name=\"test_x[1]\" time=\"0.5\">",
                "<testcase ",
                "/>",
                "</testcase>",
                "<failure message=\"[XPASS(strict)] r\">",
                "</failure>",
                "<error message=\"collection failure\">",
                "<skipped type=\"pytest.xfail\" message=\"m\"/>",
                "<skipped type=\"pytest.skip\"/>",
                "<property name=\"lockstep_outcome\" value=\"xpassed\"/>",
                "<![CDATA[",
                "]]>",
                "&amp;",
                "&#x1F600;",
                "time=\"nan\"",
                "time=\"-1\"",
            ],
            heavy: false,
        },
        Target {
            name: "npy",
            run: npy,
            dictionary: &[
                "\u{93}NUMPY\u{1}\u{0}",
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                "'<f2'",
                "'|b1'",
                "'>f4'",
                "True",
                "(",
                ")",
                ",",
                "18446744073709551615",
            ],
            heavy: false,
        },
        Target {
            name: "suite-config",
            run: suite_config,
            dictionary: &[
                "{",
                "}",
                "[",
                "]",
                "\"config_name\"",
                "\"iree_compile_flags\"",
                "\"iree_run_module_flags\"",
                "\"skip_compile_tests\"",
                "\"expected_compile_failures\"",
                "\"expected_run_failures\"",
                ":",
                ",",
                "// c\n",
                "/* c */",
                "'x'",
                "\"",
                "null",
                "true",
                "1e999",
                "NaN",
            ],
            heavy: false,
        },
        Target {
            name: "markers",
            run: markers,
            dictionary: &[
                "and", "or", "not", "(", ")", " ", "a", "gpu", "slow", "-", ".",
            ],
            heavy: false,
        },
        Target {
            name: "miopen-line",
            run: miopen_line,
            dictionary: &[
                "conv",
                "convbfp16",
                "convfp16",
                "gemm",
                "layernorm",
                " -n ",
                " -c ",
                " -H ",
                " -W ",
                " -k ",
                " -y ",
                " -x ",
                " -p ",
                " -q ",
                " -u ",
                " -v ",
                " -l ",
                " -j ",
                " -m trans",
                " -F ",
                " -t ",
                " -V 1",
                " -i ",
                " 2147483647",
                " -1",
                " 0",
                " 99999999999999999999",
                " 1000000",
                " --in_layout NHWC",
            ],
            heavy: false,
        },
        Target {
            name: "commands-file",
            run: commands_file,
            dictionary: &[
                "conv -n 1 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3\n",
                "gemm -m 4 -n 4 -k 4\n",
                "# c\n",
                "\t",
                "\n",
                "\"",
                "'",
                "\\",
                "-y 2147483647",
                "\u{feff}",
            ],
            heavy: false,
        },
        Target {
            name: "mlir-scan",
            run: mlir_scan,
            dictionary: &[
                "hal.executable private @e {",
                "module {",
                "}",
                "{",
                "(",
                ")",
                "\"",
                "#map = affine_map<(d0) -> (d0)>\n",
                " loc(#loc1)",
                "{-#",
                "#-}",
                "dialect_resources: {",
                "dense_resource<b>",
                "// c {\n",
                "@\"q\"",
            ],
            heavy: false,
        },
        Target {
            name: "state-db",
            run: state_db,
            dictionary: &[
                "SQLite format 3\0",
                "\0\0\0\0",
                "\u{1}\u{1}",
                "CREATE TABLE",
            ],
            heavy: false,
        },
        Target {
            name: "pylock",
            run: pylock,
            dictionary: &[
                "lock-version = \"1.0\"\n",
                "[[packages]]\n",
                "[[packages.wheels]]\n",
                "name = \"demo-c\"\n",
                "version = \"1.0\"\n",
                "path = \"demo_c-1.0-py3-none-any.whl\"\n",
                "path = \"../x-1.0-py3-none-any.whl\"\n",
                "[packages.sdist]\n",
                "path = \"demo_c-1.0.tar.gz\"\n",
                "path = \"demo-c-1.0.tar.gz\"\n",
                "size = 3\n",
                "hashes = { sha256 = \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" }\n",
                "[tool.lockstep]\n",
                "[packages.tool.lockstep]\n",
                "\"",
                "=",
                "\n",
            ],
            heavy: false,
        },
        Target {
            name: "artifact-zip",
            run: artifact_zip,
            dictionary: &["PK\u{3}\u{4}", "PK\u{1}\u{2}", "PK\u{5}\u{6}", "../", "/etc/", "\0", "\u{ff}\u{ff}\u{ff}\u{ff}"],
            heavy: false,
        },
        Target {
            name: "version-template",
            run: version_template,
            dictionary: &["{base}", "{date}", "{n}", "{n:02}", "{n:09}", "{n:0", "rc", ".dev", ".post", "+", "{", "}", "-"],
            heavy: false,
        },
        Target {
            name: "integrate-branch",
            run: integrate_branch,
            dictionary: &[
                "{date}", "{dat}", "{", "}", "/", "origin/", "upstream/", "tags/", "heads/",
                "remotes/", "FETCH_HEAD", "_HEAD", "@", "@{", "..", ".lock", "-", "~", "^", ":",
                " ", "\t", "integrates/llvm-",
            ],
            heavy: false,
        },
        Target {
            name: "integrate-config",
            run: integrate_config,
            dictionary: &[
                "[integrate]\n",
                "[integrate.export]\n",
                "[integrate.github]\n",
                "repository = \"acme/super\"\n",
                "token-env = \"GITHUB_TOKEN\"\n",
                "[[integrate.verdicts]]\n",
                "exit = [134, 139]\n",
                "output = \"device not found\"\n",
                "verdict = \"good\"\n",
                "[[integrate.follow]]\n",
                "name = \"stablehlo\"\n",
                "upstream-pin-file = \"build_tools/llvm_version.txt\"\n",
                "upstream-submodule = \"externals/llvm-project\"\n",
                "branch = ",
                "upstream-branch = ",
                "upstream-remote = ",
                "upstream-url = ",
                "commit-url = ",
                "submodule = ",
                "base = ",
                "smoke = ",
                "track-paths = ",
                "\"{date}\"",
                "\"{unknown}\"",
                "\"{repo}-{branch}\"",
                "\"{sha}\"",
                "\"origin/main\"",
                "\"https://u:p@x/y\"",
                "\"",
                "[",
                "]",
                "\n",
                "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            ],
            heavy: false,
        },
        Target {
            name: "ci-out",
            run: ci_out,
            dictionary: &["..", ".", "/", ".github", "workflows", "/tmp", "~", "\0", "//", "a"],
            heavy: false,
        },
        Target {
            name: "cron",
            run: cron,
            dictionary: &["*", "*/5", "0", "59", "23", "1-5", ",", "/", "-", " ", "MON", "jan", "?", "L", "#", "@daily", "7", "31", "2", "\t"],
            heavy: false,
        },
        Target {
            name: "wheel-members",
            run: wheel_members,
            dictionary: &["PK\u{3}\u{4}", "PK\u{1}\u{2}", "PK\u{5}\u{6}", ".dist-info/", "METADATA", "../", "/", "\\", "\0"],
            heavy: false,
        },
        Target {
            name: "sdist-members",
            run: sdist_members,
            dictionary: &["fuzz_sdist-1.0/", "fuzz_sdist-1.0/PKG-INFO", "Name: fuzz-sdist\n", "Version: 1.0\n", "ustar\u{0}00", "ustar  \u{0}", "../", "/", "\0", "0000644\u{0}", "00000000012\u{0}"],
            heavy: false,
        },
        Target {
            name: "release-config",
            run: release_config,
            dictionary: &[
                "[release]\n",
                "name = \"demo\"\n",
                "version-base = \"3.14.0\"\n",
                "version-base = \"1!2.0rc1.post3+x\"\n",
                "snapshot = \"{base}rc{date}{n:02}\"\n",
                "tag = \"{name}-{version}\"\n",
                "tag = \"refs/tags/{version}\"\n",
                "pin-files = [\"x.version\"]\n",
                "[release.keep]\n",
                "snapshots = 3\n",
                "\\n",
                "\"",
            ],
            heavy: false,
        },
        Target {
            name: "url",
            run: url,
            dictionary: &["https://", "http://", "file://", "127.0.0.1", "localhost", "[::1]", "@", ":", "%40", "#", "?", "/", "api.github.com", "user:pw@"],
            heavy: false,
        },
        Target {
            name: "serve-request",
            run: serve_request,
            dictionary: &["/simple/", "/files/", "%2e%2e/", "..", "//", "%00", "%2F", "\n", "bytes=", "0-", "-5", ",", "=", "99999999999999999999"],
            heavy: false,
        },
        Target {
            name: "pkg-config",
            run: pkg_config,
            dictionary: &[
                "[pkg]\n",
                "manylinux = \"2_28\"\n",
                "manylinux = \"off\"\n",
                "compiler-cache = \"ccache\"\n",
                "submodules = false\n",
                "[pkg.version]\n",
                "write-file = \"version_info.json\"\n",
                "write-file = \"../x\"\n",
                "env = \"IREE_RELEASE_VERSION\"\n",
                "[[pkg.package]]\nname = \"a\"\nsource = \".\"\n",
                "[pkg.variants.asserts]\nname-suffix = \"-asserts\"\n",
                "\"",
                "_",
            ],
            heavy: false,
        },
        Target {
            name: "build-tool-output",
            run: build_tool_output,
            dictionary: &[
                "{\"stats\":{\"cache_hits\":{\"counts\":{\"C/C++\":2}},\"cache_misses\":{\"counts\":{}}}}",
                "direct_cache_hit\t",
                "cache_miss\t",
                "platform tag: \"manylinux_2_5_x86_64\"",
                "The wheel references",
                "lockstep release cut: ",
                "\n\n",
                "pin ",
                "channel: ",
                ": ",
                "manylinux_",
                "_",
            ],
            heavy: false,
        },
        Target {
            name: "history-run",
            run: history_run,
            dictionary: &[
                "{\"schema\":1,\"id\":\"r1\",\"kind\":\"bench\",\"started\":\"2026-11-27T00:00:00Z\",\"source\":{},\"machine\":{},\"results\":{\"rows\":[]}}",
                "\"kind\":\"test\"",
                "\"kind\":\"integrate\"",
                "\"toolchain\":\"",
                "\"started\":\"",
                "\\u001b[2J",
                "\\u0007",
                "\\r",
                "\"tests\":[{\"id\":\"t\",\"steps\":[]}]",
                "\"rows\":[{\"arguments\":\"conv\",\"status\":\"ok\",\"stats\":{\"times_us\":[1.0]}}]",
                "\u{ff}",
                "<script>",
                "&amp",
            ],
            heavy: false,
        },
        Target {
            name: "github-answer",
            run: github_answer,
            dictionary: &[
                FUZZ_TOKEN,
                "\"html_url\":\"https://github.com/o/r/pull/1?t=",
                "\"name\":\"wheels-",
                "\"message\":\"",
                "\"number\":1,\"state\":\"open\"",
                "\"id\":7",
                "{\"total_count\":1,\"artifacts\":[",
                "Bearer ",
                "%5F",
                "\\u005f",
                "\\u0067hp",
                "[",
                "]",
                "{",
                "}",
            ],
            heavy: false,
        },
        Target {
            name: "release-sync",
            run: crate::surface::release_sync,
            dictionary: RELEASE_RECORD_WORDS,
            heavy: false,
        },
        Target {
            name: "release-prune",
            run: crate::surface::release_prune,
            dictionary: RELEASE_RECORD_WORDS,
            heavy: false,
        },
        Target {
            name: "release-promote",
            run: crate::surface::release_promote,
            dictionary: RELEASE_RECORD_WORDS,
            heavy: false,
        },
        Target {
            name: "release-upload-answer",
            run: crate::surface::release_upload_answer,
            dictionary: &[
                "you sent Basic ",
                "YWxpY2U6",
                "fuzz-S3cret-pw",
                "FUZZ-S3CRET-PW",
                "fuzz%2DS3cret%2Dpw",
                "File already exists",
                "status code ",
                "<html><body>",
                "\u{1b}[2J",
                "\r\n",
                "\u{202e}",
            ],
            heavy: true,
        },
        Target {
            name: "bench-bundle",
            run: crate::trees::bench_bundle,
            dictionary: BUNDLE_WORDS,
            heavy: false,
        },
        Target {
            name: "test-bundle",
            run: crate::trees::test_bundle,
            dictionary: BUNDLE_WORDS,
            heavy: false,
        },
        Target {
            name: "init-repo",
            run: crate::trees::init_repo,
            dictionary: &[
                "\nfile ",
                "\nlink ",
                "\nfifo ",
                "\ndir ",
                "\npin ",
                " @outside-fifo",
                " @outside",
                " /dev/zero",
                " /proc/self/status",
                "pyproject.toml",
                "setup.py",
                "workspace.bzl",
                "llvm_version.txt",
                "llvm-hash.txt",
                ".gitmodules",
                ".gitignore",
                "lit.cfg.py",
                "a.suite.toml",
                "config.json",
                "run_module_io_flags.txt",
                "model.mlir",
                "third_party/llvm-project",
                "[project]\\nname = \"demo\"",
                "LLVM_COMMIT = \"0123456789abcdef0123456789abcdef01234567\"",
                "LLVM_SHA256 = \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"",
                "[submodule \"llvm\"]\\n\\tpath = third_party/llvm-project\\n\\turl = https://github.com/llvm/llvm-project.git\\n",
                "{\"config_name\": \"c\", \"iree_compile_flags\": []}",
                "\\n[[integrate.verdicts]]\\nverdict = \"good\"\\n",
                "\\n",
                "\\r",
                "\\e[31m",
                "\\u{202e}",
                "\\u{85}",
                "\\t",
                "\\s",
                "\"",
                "'",
                "/",
            ],
            heavy: true,
        },
        Target {
            name: "lit-config",
            run: crate::lit::lit_config,
            dictionary: &[
                "import sys\nsys.exit(0)\n",
                "import os\nos._exit(0)\n",
                "import lit.formats\n",
                "config.test_format = lit.formats.ShTest()\n",
                "config.suffixes = ['.txt']\n",
                "config.suffixes = []\n",
                "config.excludes = ['b.txt']\n",
                "config.name = ''\n",
                "config.unsupported = True\n",
                "raise ValueError('fuzz')\n",
                "if '-o' in sys.argv:\n    os._exit(0)\n",
                "if '--show-tests' in sys.argv:\n    ",
                "#--- a.txt\n",
                "#--- sub/b.txt\n",
                "#--- lit.local.cfg\n",
                "# RUN: true\n",
                "# RUN: false\n",
                "# RUN: echo x | FileCheck %s\n# CHECK: x\n",
                "# XFAIL: *\n",
                "# REQUIRES: gpu\n",
                "# UNSUPPORTED: true\n",
                "\\e",
                "\n",
            ],
            heavy: true,
        },
        Target {
            name: "ready-answer",
            run: crate::ready::ready_answer,
            dictionary: &[
                "\n--\n",
                "{\"total_count\":1,\"check_runs\":[",
                "{\"id\":1,\"name\":\"build\",\"status\":\"completed\",\"conclusion\":\"success\"}",
                "{\"id\":2,\"name\":null,\"status\":\"completed\",\"conclusion\":\"failure\"}",
                "{\"status\":\"in_progress\",\"conclusion\":null}",
                "\"conclusion\":\"neutral\"",
                "\"conclusion\":\"skipped\"",
                "\"conclusion\":\"cancelled\"",
                "\"conclusion\":\"timed_out\"",
                "\"total_count\":101",
                "<https://api.github.com/repos/o/r/commits/x/check-runs?page=2>; rel=\"next\"",
                "; rel=\"last\", ",
                "rel=next",
                "{\"data\":{\"markPullRequestReadyForReview\":{\"pullRequest\":{\"isDraft\":false}}}}",
                "{\"data\":null}",
                "\"errors\":[{\"message\":\"no\"}]",
                "\"errors\":[]",
                "\"isDraft\":true",
                "\"isDraft\":\"false\"",
                "null",
                "[]",
                "{}",
                ",",
            ],
            heavy: false,
        },
    ]
}

/// What the bundle targets' programs are made of: operations, the hostile
/// things a bundle holds, and a manifest's fields.
const BUNDLE_WORDS: &[&str] = &[
    "\nfile ",
    "\nfifo ",
    "\nlink ",
    "\ndir ",
    "\ndeep 70",
    "\nsparse ",
    "\nrm ",
    "\nlisting",
    "\nkernel gemm_2x2 ",
    "\nmanifest ",
    " /dev/zero",
    " /dev/urandom",
    " /proc/self/status",
    " @outside",
    " @outside-fifo",
    " @outside-dir",
    "bundle.json",
    "commands.txt",
    "lockstep.toml",
    "kernels/",
    "suites/s/",
    ".locks/",
    "{FILES}",
    "{KERNELS}",
    "\"schema\":2",
    "\"schema\":1",
    "\"kind\":\"bench\"",
    "\"kind\":\"test\"",
    "\"files\":{}",
    "\"files\":{\"../x\":{\"size\":1,\"sha256\":\"00\"}}",
    "\"size\":18446744073709551615",
    "\"flags\":[\"--iree-llvmcpu-target-cpu=host\"]",
    "[test]\\npaths = [\"suites/s\"]",
    "\\n",
    "\\e",
    "\"",
];

/// What the release targets' records are made of: placeholders for the
/// Release's own base, tag and asset digest, and the shapes a hostile
/// record tries.
const RELEASE_RECORD_WORDS: &[&str] = &[
    "{BASE}",
    "{TAG}",
    "{SHA}",
    "\"version\":\"3.14.0rc1\"",
    "\"version\":\"3.14.0rc1 \"",
    "\"version\":\"3.14.0RC1\"",
    "\"tag\":\"v3.14.0\"",
    "\"hosted\":\"javascript:alert(1)//\"",
    "\"hosted\":\"data:text/html,x/\"",
    "\"hosted\":\"file:///etc/\"",
    "\"hosted\":\"https://ghp_x@github.com/o/r/releases/download/t/\"",
    "\"hosted\":\"https://evil.example/o/r/releases/download/t/\"",
    "\"filename\":\"../x.whl\"",
    "\"filename\":\"a/b.whl\"",
    "\"yanked\":\"<script>\"",
    "\"requires_python\":\"\\\">=3\"",
    "\"size\":-1",
    "\"files\":[]",
    "null",
    "\u{0}",
    "\\u202e",
    "?token=",
    "#",
    "%2F",
    "..",
];

/// The token the `github-answer` target's server echoes.
const FUZZ_TOKEN: &str = "ghp_fuzz_canary_T0KEN";

/// The bytes as a run file of a history directory (and its name as a file
/// name that need not be UTF-8), read as `history list` and `report site`
/// read it: never a panic, a JSON listing that always serializes, and a
/// skipped file named in its warning.
fn history_run(input: &[u8]) -> Outcome {
    use std::os::unix::ffi::OsStrExt;
    let Ok(dir) = tempfile::tempdir() else {
        return Outcome::Accepted;
    };
    // The first 12 bytes (up to a newline) name the file: names need not
    // be UTF-8 and may hold escapes.
    let name: Vec<u8> = b"bench-"
        .iter()
        .chain(
            input
                .iter()
                .take_while(|b| **b != b'\n' && **b != b'/' && **b != 0)
                .take(12),
        )
        .chain(b".json")
        .copied()
        .collect();
    let file = dir.path().join(std::ffi::OsStr::from_bytes(&name));
    if std::fs::write(&file, input).is_err() {
        return Outcome::Accepted;
    }
    let loaded = match lockstep_history::load(dir.path()) {
        Ok(loaded) => loaded,
        Err(e) => return refused(&e.render(), dir.path()),
    };
    if let Some(s) = loaded.skipped.first() {
        let message = format!("skipped {}: {}", s.path.to_string_lossy(), s.reason);
        let listed = lockstep_history::list::Listed::of(loaded);
        if serde_json::to_string(&listed).is_err() {
            return Outcome::Unnamed("the listing does not serialize".into());
        }
        return refused(&message, &file);
    }
    let listed = lockstep_history::list::Listed::of(loaded);
    if serde_json::to_string(&listed).is_err() {
        return Outcome::Unnamed("the listing does not serialize".into());
    }
    let _ = lockstep_history::human::listed(&listed, dir.path());
    Outcome::Accepted
}

/// The bytes as an answer of GitHub's API to a client holding
/// [`FUZZ_TOKEN`], decoded as lockstep decodes pull requests, runs and
/// artifacts: the token never survives into a decoded value, however the
/// server hides it (escapes, percent-encoding, case).
fn github_answer(input: &[u8]) -> Outcome {
    let mut scrub = lockstep_http::Scrubber::new();
    scrub.add_token(FUZZ_TOKEN);
    let leaked = |shown: String| {
        shown
            .to_ascii_lowercase()
            .contains(&FUZZ_TOKEN.to_ascii_lowercase())
    };
    let mut accepted = false;
    let mut first_refusal = None;
    macro_rules! decode {
        ($t:ty) => {
            match lockstep_github::client::parse::<$t>(input, "the fuzz answer", &scrub) {
                Ok(v) => {
                    if leaked(format!("{v:?}")) {
                        return Outcome::Unnamed(format!("the token survived: {v:?}"));
                    }
                    accepted = true;
                }
                Err(e) => {
                    first_refusal.get_or_insert(e.render());
                }
            }
        };
    }
    decode!(Vec<lockstep_github::pulls::PullRequest>);
    decode!(lockstep_github::pulls::PullRequest);
    decode!(lockstep_github::Run);
    decode!(lockstep_github::Artifact);
    decode!(serde_json::Value);
    match (accepted, first_refusal) {
        (true, _) => Outcome::Accepted,
        (false, Some(message)) => Outcome::Refused(message.lines().next().unwrap_or("").into()),
        (false, None) => Outcome::Accepted,
    }
}

/// The target named `name`.
pub fn find(name: &str) -> Option<Target> {
    all().into_iter().find(|t| t.name == name)
}

/// A refusal's first line, checked to name `file`.
fn refused(message: &str, file: &Path) -> Outcome {
    let first = message.lines().next().unwrap_or("").to_string();
    let name = lockstep_core::fs::file_name(file);
    if message.contains(&name) {
        Outcome::Refused(first)
    } else {
        Outcome::Unnamed(first)
    }
}

fn text(input: &[u8]) -> String {
    String::from_utf8_lossy(input).into_owned()
}

fn config(input: &[u8]) -> Outcome {
    let file = Path::new("fuzz-lockstep.toml");
    match lockstep_core::config::parse(
        text(input),
        Some(file.into()),
        ".".into(),
        crate::lockstep_config::SECTIONS,
    ) {
        Ok(_) => Outcome::Accepted,
        Err(e) => refused(&e.to_string(), file),
    }
}

fn native_suite(input: &[u8]) -> Outcome {
    let file = Path::new("fuzz.suite.toml");
    match lockstep_suite::sources::NativeSuite::parse(&text(input), file) {
        Ok(_) => Outcome::Accepted,
        Err(e) => refused(&e.to_string(), file),
    }
}

fn suite_config(input: &[u8]) -> Outcome {
    let file = Path::new("fuzz-config.json");
    match lockstep_suite::sources::SuiteConfig::parse(&text(input), file) {
        Ok(_) => Outcome::Accepted,
        Err(e) => refused(&e.to_string(), file),
    }
}

/// A torch_ops case file; an accepted one's small formulas are generated
/// too (the bound on what a case can make lockstep allocate is the
/// formula's, checked at parse time).
fn torch_case(input: &[u8]) -> Outcome {
    match lockstep_suite::torch_ops::parse(&text(input)) {
        Ok(spec) => {
            let mut random = lockstep_numpy::LegacyRandom::seed(spec.seed);
            for arg in &spec.args {
                if let lockstep_suite::torch_ops::Arg::Formula(f) = arg {
                    if f.elements().is_ok_and(|n| n <= 4096) {
                        let _ = f.generate(&mut random);
                    }
                }
            }
            Outcome::Accepted
        }
        // The caller names the file; the message says what is wrong in it.
        Err(e) if e.is_empty() => Outcome::Unnamed(e),
        Err(e) => Outcome::Refused(e.lines().next().unwrap_or("").to_string()),
    }
}

/// pytest's JUnit report: every case read back has an outcome and a
/// finite, non-negative time.
fn pytest_junit(input: &[u8]) -> Outcome {
    match lockstep_suite::pytest::parse_junit(&text(input)) {
        Ok(cases) => {
            for case in cases {
                let reported = case.reported();
                if !(reported.seconds.is_finite() && reported.seconds >= 0.0) {
                    return Outcome::Unnamed(format!("a time of {}", reported.seconds));
                }
                let _ = lockstep_suite::pytest::junit_address(&case.name);
            }
            Outcome::Accepted
        }
        Err(e) => Outcome::Refused(e),
    }
}

/// A `.npy` file; an accepted one is compared with itself (allclose must
/// find it close wherever it holds no NaN).
fn npy(input: &[u8]) -> Outcome {
    match lockstep_numpy::Array::from_npy(input) {
        Ok(array) => {
            let same = lockstep_numpy::allclose(
                &array,
                &array,
                lockstep_numpy::Tolerance {
                    equal_nan: true,
                    ..Default::default()
                },
            );
            match same {
                Ok(lockstep_numpy::Verdict::Close) | Err(_) => Outcome::Accepted,
                Ok(v) => Outcome::Unnamed(format!("an array is not close to itself: {v:?}")),
            }
        }
        Err(e) => Outcome::Refused(e.to_string()),
    }
}

fn markers(input: &[u8]) -> Outcome {
    // Errors quote the expression itself, which is the input here.
    match lockstep_suite::markers::MarkerExpr::parse(&text(input)) {
        Ok(expr) => {
            let _ = expr.matches(&["a".to_string(), "gpu".to_string()]);
            Outcome::Accepted
        }
        Err(e) => Outcome::Refused(e.message.lines().next().unwrap_or("").to_string()),
    }
}

fn miopen_line(input: &[u8]) -> Outcome {
    match lockstep_kernels::commands::parse_line(&text(input)) {
        Ok(_) => Outcome::Accepted,
        Err(e) => Outcome::Refused(e),
    }
}

/// Every line is parsed; each refused line's error must name the file.
fn commands_file(input: &[u8]) -> Outcome {
    let file = if input.contains(&b'\t') {
        Path::new("fuzz-commands.tsv")
    } else {
        Path::new("fuzz-commands.txt")
    };
    let lines = match lockstep_kernels::commands::parse_commands(input, file) {
        Ok(lines) => lines,
        Err(e) => return refused(&e, file),
    };
    match lines.into_iter().find_map(|(_, parsed)| parsed.err()) {
        None => Outcome::Accepted,
        Some(e) => refused(&e, file),
    }
}

fn mlir_scan(input: &[u8]) -> Outcome {
    let text = text(input);
    match lockstep_preprocess::scan::scan(&text) {
        Ok(module) => {
            // The variants, their targets and objects as --only-target and
            // the object checks read them.
            let x86 = regex::Regex::new("x86_64").ok();
            for (i, exe) in module.executables.iter().enumerate() {
                let _ = lockstep_preprocess::scan::self_contained(&text, &module, i);
                let op = &text[exe.span.clone()];
                if let Some(re) = &x86 {
                    if let Ok(Some(held)) =
                        lockstep_preprocess::variants::hold(op, re, &module, &text)
                    {
                        let _ = lockstep_preprocess::variants::restore(&held.given, &held);
                    }
                }
                let _ = lockstep_preprocess::variants::check_count(op, op);
            }
            Outcome::Accepted
        }
        Err(e) => Outcome::Refused(e.describe(&text)),
    }
}

/// A PEP 751 manifest as `pkg venv --manifest` reads it.
fn pylock(input: &[u8]) -> Outcome {
    let file = Path::new("fuzz-pylock.toml");
    match lockstep_python::pylock::Lock::parse(&text(input), file) {
        Ok(_) => Outcome::Accepted,
        Err(e) => refused(&e.to_string(), file),
    }
}

/// The bytes as a downloaded artifact, extracted as `pkg fetch` does (into
/// a fresh temporary directory; nothing may land outside it).
fn artifact_zip(input: &[u8]) -> Outcome {
    let Ok(dir) = tempfile::tempdir() else {
        return Outcome::Accepted;
    };
    let zip = dir.path().join("fuzz-artifact.zip");
    if std::fs::write(&zip, input).is_err() {
        return Outcome::Accepted;
    }
    let dest = dir.path().join("out");
    match lockstep_github::extract_zip(&zip, &dest, 1 << 20) {
        Ok(()) => Outcome::Accepted,
        Err(e) => refused(&e.render(), &zip),
    }
}

/// A `[release] snapshot` template, checked with its examples.
fn version_template(input: &[u8]) -> Outcome {
    let key = "fuzz-template.toml [release] snapshot";
    match lockstep_release::template::VersionTemplate::parse(key, &text(input)) {
        Ok(_) => Outcome::Accepted,
        Err(e) => refused(&e.render(), Path::new("fuzz-template.toml")),
    }
}

/// Every table and row of the bytes as a state database.
fn state_db(input: &[u8]) -> Outcome {
    let file = Path::new("fuzz-state.db");
    match lockstep_store::parse_state_db(input, file) {
        Ok(_) => Outcome::Accepted,
        Err(e) => refused(&e.to_string(), file),
    }
}

/// A `[integrate] branch` template as `integrate start` takes it: its
/// placeholders, then the dated name as a branch of a superproject with the
/// remotes `origin` and `upstream`.
fn integrate_branch(input: &[u8]) -> Outcome {
    use lockstep_integrate::{start, validate};
    let template = text(input);
    if let Err(e) = validate::placeholders("branch", &template, validate::BRANCH_PLACEHOLDERS) {
        return named_key(&e.message, "[integrate] branch");
    }
    let name = template.replace("{date}", "20261124");
    match start::branch_problem(&name, &["origin", "upstream"]) {
        None => Outcome::Accepted,
        Some(problem) => Outcome::Refused(kind_of(&problem)),
    }
}

/// A lockstep.toml through the loader and `[integrate]`'s validation (no
/// repository needed): accepted, or refused naming the file or the key.
fn integrate_config(input: &[u8]) -> Outcome {
    let file = Path::new("lockstep.toml");
    let loaded = match lockstep_core::config::parse(
        text(input),
        Some(file.into()),
        ".".into(),
        crate::lockstep_config::SECTIONS,
    ) {
        Ok(loaded) => loaded,
        Err(e) => return refused_kind(&e.to_string(), file),
    };
    let cfg: lockstep_integrate::config::IntegrateConfig = match loaded.section() {
        Ok(cfg) => cfg,
        Err(e) => return refused_kind(&e.to_string(), file),
    };
    match lockstep_integrate::validate::config(&cfg) {
        Ok(()) => Outcome::Accepted,
        Err(e) => {
            // Bounded whatever the value's length.
            assert!(
                e.message.len() < 1000,
                "an unbounded message: {} bytes",
                e.message.len()
            );
            refused_kind(&e.to_string(), file)
        }
    }
}

/// `[ci] out` resolved against a repository's top: refused naming the key,
/// or a directory strictly inside the top whose parent (where the linters'
/// files go) is inside too; anything else is a contract failure.
fn ci_out(input: &[u8]) -> Outcome {
    let top = Path::new("/nonexistent-lockstep-fuzz/repo");
    let out = text(input);
    match lockstep_ci::plan::resolve_configured_out(Path::new(&out), top) {
        Ok(dir) => {
            let inside = dir.starts_with(top)
                && dir != top
                && dir.parent().is_some_and(|p| p.starts_with(top));
            assert!(inside, "[ci] out {out:?} resolved to {}", dir.display());
            Outcome::Accepted
        }
        Err(e) => named_key(&e.message, "[ci] out"),
    }
}

/// A `[ci.release] schedule` as `ci generate` checks it: accepted ones
/// have a next run after now, at least 5 minutes after the one before;
/// refusals name the field at fault or the rule.
fn cron(input: &[u8]) -> Outcome {
    let expr = text(input);
    match lockstep_ci::cron::Schedule::parse(&expr) {
        Ok(schedule) => {
            let now = jiff::Timestamp::now();
            let runs = schedule.next_runs(now, 3);
            assert!(!runs.is_empty(), "{expr:?} parsed but never runs");
            assert!(runs[0] > now, "{expr:?}");
            for pair in runs.windows(2) {
                let gap = pair[1].as_second() - pair[0].as_second();
                assert!(gap >= 300, "{expr:?}: runs {gap} s apart");
            }
            Outcome::Accepted
        }
        Err(e) => Outcome::Refused(kind_of(&e.to_string())),
    }
}

/// A refusal whose message must name `key` (inputs that are not files).
fn named_key(message: &str, key: &str) -> Outcome {
    if message.contains(key) {
        Outcome::Refused(kind_of(message))
    } else {
        Outcome::Unnamed(kind_of(message))
    }
}

/// [`refused`], with the outcome's text cut by [`kind_of`].
fn refused_kind(message: &str, file: &Path) -> Outcome {
    match refused(message, file) {
        Outcome::Refused(_) => Outcome::Refused(kind_of(message)),
        other => other,
    }
}

/// The bytes as a wheel, read as `release publish`, `promote` and `index`
/// do (members checked before anything else).
fn wheel_members(input: &[u8]) -> Outcome {
    let Ok(dir) = tempfile::tempdir() else {
        return Outcome::Accepted;
    };
    let wheel = dir.path().join("fuzz_wheel-1.0-py3-none-any.whl");
    if std::fs::write(&wheel, input).is_err() {
        return Outcome::Accepted;
    }
    match lockstep_python::wheel::wheel_facts(&wheel) {
        Ok(_) => Outcome::Accepted,
        Err(e) => refused(&e.render(), &wheel),
    }
}

/// The bytes as an sdist's tar (gzip'd here, so mutations reach the tar
/// headers): read as `release publish` and `index` read it, then promoted.
fn sdist_members(input: &[u8]) -> Outcome {
    use std::io::Write;
    let Ok(dir) = tempfile::tempdir() else {
        return Outcome::Accepted;
    };
    let sdist = dir.path().join("fuzz_sdist-1.0.tar.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let bytes = gz.write_all(input).and_then(|_| gz.finish());
    if bytes.and_then(|b| std::fs::write(&sdist, b)).is_err() {
        return Outcome::Accepted;
    }
    if let Err(e) = lockstep_release::store::sdist_facts(&sdist) {
        return refused(&e.render(), &sdist);
    }
    let out = dir.path().join("out");
    if std::fs::create_dir(&out).is_err() {
        return Outcome::Accepted;
    }
    match lockstep_release::promote::rewrite_sdist(&sdist, &out, "1.0", "1.1", true) {
        Ok(_) => Outcome::Accepted,
        Err(e) => refused(&e.render(), &sdist),
    }
}

/// The bytes as lockstep.toml's `[release]` table, resolved as every
/// release command starts (settings, then the base version).
fn release_config(input: &[u8]) -> Outcome {
    checked_section(input, "fuzz-release.toml", "[release]", |loaded| {
        let release = loaded.section::<lockstep_release::config::ReleaseConfig>()?;
        lockstep_release::settings::settings(&release, &loaded.root)?;
        lockstep_release::settings::base_version(&release, &loaded.root).map(drop)
    })
}

/// `[pkg]` with its native-build settings: parsed, then the manylinux
/// policy checked as `pkg build` and `ci generate` check it.
fn pkg_config(input: &[u8]) -> Outcome {
    checked_section(input, "fuzz-pkg.toml", "[pkg]", |loaded| {
        let pkg = loaded.section::<lockstep_pkg::config::PkgConfig>()?;
        lockstep_pkg::repair::Policy::parse(pkg.manylinux.as_deref()).map(drop)
    })
}

/// The bytes as lockstep.toml (`file`), then `check` on what was loaded: a
/// refusal must name the file or the table (`key`), as settings errors
/// name their key rather than the file.
fn checked_section(
    input: &[u8],
    file: &str,
    key: &str,
    check: impl FnOnce(&lockstep_core::config::Loaded) -> Result<(), lockstep_core::Error>,
) -> Outcome {
    let file = Path::new(file);
    let loaded = match lockstep_core::config::parse(
        text(input),
        Some(file.into()),
        std::env::temp_dir(),
        crate::lockstep_config::SECTIONS,
    ) {
        Ok(loaded) => loaded,
        Err(e) => return refused(&e.to_string(), file),
    };
    match check(&loaded) {
        Ok(()) => Outcome::Accepted,
        Err(e) if e.render().contains(key) || e.render().contains(&file.display().to_string()) => {
            Outcome::Refused(e.message)
        }
        Err(e) => Outcome::Unnamed(e.message),
    }
}

/// What the native-build tools print and what a cut tag says, as lockstep
/// reads them: sccache's and ccache's statistics, `auditwheel show`, a tag
/// annotation. Accepted when some reader understood it, refused when none
/// did; only a panic or a hang breaks the contract.
fn build_tool_output(input: &[u8]) -> Outcome {
    let text = text(input);
    let understood = [
        lockstep_pkg::compiler_cache::parse_sccache_stats(&text).is_some(),
        lockstep_pkg::compiler_cache::parse_ccache_stats(&text)
            != lockstep_pkg::compiler_cache::Stats::default(),
        lockstep_pkg::repair::lowest_policy(&text).is_some(),
        lockstep_pkg::repair::Policy::parse(Some(&text)).is_ok(),
        lockstep_release::cut::parse_tag_message(&text).is_some(),
    ];
    if understood.contains(&true) {
        Outcome::Accepted
    } else {
        Outcome::Refused("no tool output lockstep reads".into())
    }
}

/// The bytes as a URL lockstep would send a credential to, and as one it
/// would download checked content from.
fn url(input: &[u8]) -> Outcome {
    use lockstep_http::UrlRules;
    let text = text(input);
    let strict = lockstep_http::parse_url(&text, UrlRules::CREDENTIALED);
    let content = lockstep_http::parse_url(&text, UrlRules::CHECKED_CONTENT);
    if let Ok(url) = &strict {
        // Accepted for a credential: no userinfo, plain http only on loopback.
        let loopback = url
            .host()
            .is_some_and(|host| lockstep_http::address::is_loopback_host(&host));
        if !url.username().is_empty()
            || url.password().is_some()
            || (url.scheme() == "http" && !loopback)
        {
            return Outcome::Unnamed(format!("accepted for a credential: {url}"));
        }
    }
    match (strict, content) {
        (Ok(_), _) | (_, Ok(_)) => Outcome::Accepted,
        (Err(e), _) => Outcome::Refused(e.to_string()),
    }
}

/// The bytes as a request line's path and a Range header, read as `release
/// serve` reads them: a path it serves stays inside the index, a range it
/// answers stays inside the file.
fn serve_request(input: &[u8]) -> Outcome {
    let text = text(input);
    let (path, range) = text.split_once('\n').unwrap_or((&text, ""));
    let length = 1000;
    let (file, range) = lockstep_release::serve::read_request(path, Some(range), length);
    if let Some(file) = &file {
        if !file
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
        {
            return Outcome::Unnamed(format!("served outside the index: {}", file.display()));
        }
    }
    if let Some(Ok(Some((start, end)))) = range {
        if start > end || end >= length {
            return Outcome::Unnamed(format!("range {start}-{end} of {length} bytes"));
        }
    }
    match file {
        Some(_) => Outcome::Accepted,
        None => Outcome::Refused("refused".into()),
    }
}
