//! The test-only workflow runner on hand-made workflows: job order and
//! outputs, matrices, skipping, file commands, cache across runs,
//! artifacts, unknown actions, templates, working directories, checkout and
//! push, Pages, github-script, timeouts, setup-python, fail-fast.

// Test code starts its fixtures' processes directly; product code goes
// through lockstep_core::process (clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use lockstep_actions::{run_workflow, seed_cache, Conclusion, JobReport, RunReport, RunnerConfig};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=x", "-c", "user.email=x@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A bare origin with two commits (the first tagged v0); its head's sha.
fn origin(tmp: &Path) -> (PathBuf, String) {
    let work = tmp.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    std::fs::write(work.join("lock.txt"), "v1\n").unwrap();
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "first"]);
    git(&work, &["tag", "v0"]);
    std::fs::create_dir_all(work.join("sub")).unwrap();
    std::fs::write(work.join("sub/file.txt"), "in sub\n").unwrap();
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "second"]);
    let bare = tmp.join("origin.git");
    git(
        tmp,
        &[
            "clone",
            "-q",
            "--bare",
            work.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    let sha = git(&bare, &["rev-parse", "HEAD"]);
    (bare, sha)
}

fn config(tmp: &Path) -> RunnerConfig {
    let (repo, sha) = origin(tmp);
    RunnerConfig {
        repo,
        repository: "octo/proj".into(),
        sha,
        git_ref: "refs/heads/main".into(),
        event_name: "push".into(),
        inputs: BTreeMap::new(),
        root: tmp.join("root"),
        run_id: 1,
        token: "tok-123".into(),
        api_url: "http://127.0.0.1:9/api".into(),
        server_url: "http://127.0.0.1:9".into(),
        pages_url: "https://octo.example/proj/".into(),
        pythons: Vec::new(),
        env: BTreeMap::from([("SHARED_SETTING".to_string(), "from-cfg".to_string())]),
        secrets: BTreeMap::new(),
        vars: BTreeMap::new(),
        max_parallel: 2,
    }
}

fn run(tmp: &Path, name: &str, yaml: &str, cfg: &RunnerConfig) -> RunReport {
    let file = tmp.join(format!("{name}.yml"));
    std::fs::write(&file, yaml).unwrap();
    run_workflow(&file, cfg).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn one<'r>(report: &'r RunReport, id: &str) -> &'r JobReport {
    let jobs = report.job(id);
    assert_eq!(jobs.len(), 1, "{}", report.describe());
    jobs[0]
}

fn log_of(job: &JobReport, step: usize) -> String {
    std::fs::read_to_string(&job.steps[step].log).unwrap_or_default()
}

#[test]
fn needs_order_and_outputs_across_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let yaml = r#"
name: order
on: push
jobs:
  c:
    needs: [b]
    runs-on: ubuntu-latest
    steps:
      - run: test "${{ needs.b.result }}" = success && test "${{ needs.b.outputs.doubled }}" = hello-hello
  a:
    runs-on: ubuntu-latest
    outputs:
      word: ${{ steps.w.outputs.word }}
    steps:
      - id: w
        run: echo "word=hello" >> "$GITHUB_OUTPUT"
  b:
    needs: a
    if: needs.a.outputs.word == 'HELLO'
    runs-on: ubuntu-latest
    outputs:
      doubled: ${{ steps.d.outputs.v }}
    steps:
      - id: d
        run: echo "v=${{ needs.a.outputs.word }}-${{ needs.a.outputs.word }}" >> "$GITHUB_OUTPUT"
"#;
    let report = run(tmp.path(), "order", yaml, &cfg);
    assert_eq!(
        report.conclusion,
        Conclusion::Success,
        "{}",
        report.describe()
    );
    let order: Vec<&str> = report.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(order, ["a", "b", "c"]);
    assert_eq!(one(&report, "b").outputs["doubled"], "hello-hello");
}

#[test]
fn matrix_include_exclude_with_per_cell_artifacts() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let yaml = r#"
on: push
jobs:
  build:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        os: [a, b]
        py: ['3.11', '3.12']
        exclude:
          - {os: b, py: '3.11'}
        include:
          - {py: '3.12', extra: yes}
          - {os: c, py: '3.13'}
    steps:
      - run: |
          mkdir -p dist
          echo "${{ matrix.os }} ${{ matrix.py }} ${{ matrix.extra }} ${{ strategy.job-index }}/${{ strategy.job-total }}" > dist/w-${{ matrix.os }}-${{ matrix.py }}.txt
      - uses: actions/upload-artifact@v4
        with:
          name: wheel-${{ matrix.os }}-${{ matrix.py }}
          path: dist/*.txt
  collect:
    needs: build
    runs-on: ubuntu-latest
    steps:
      - uses: actions/download-artifact@v4
        with:
          pattern: wheel-*
          path: all
          merge-multiple: true
      - uses: actions/download-artifact@v4
        with:
          name: wheel-c-3.13
          path: one
      - run: |
          ls all
          test "$(ls all | wc -l)" = 4
          grep -q "a 3.12 yes 1/4" all/w-a-3.12.txt
          test -f one/w-c-3.13.txt
"#;
    let report = run(tmp.path(), "matrix", yaml, &cfg);
    assert_eq!(
        report.conclusion,
        Conclusion::Success,
        "{}",
        report.describe()
    );
    let cells = report.job("build");
    assert_eq!(cells.len(), 4);
    let mut names: Vec<&str> = cells.iter().map(|c| c.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "build (a, 3.11)",
            "build (a, 3.12, yes)",
            "build (b, 3.12, yes)",
            "build (c, 3.13)"
        ]
    );
    assert!(report
        .run_dir
        .join("artifacts/wheel-b-3.12/w-b-3.12.txt")
        .is_file());
}

#[test]
fn a_failing_job_skips_dependents_and_always_jobs_see_needs() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let yaml = r#"
on: push
jobs:
  bad:
    runs-on: ubuntu-latest
    steps:
      - id: soft
        continue-on-error: true
        run: exit 4
      - run: test "${{ steps.soft.outcome }}/${{ steps.soft.conclusion }}" = failure/success
      - run: echo broken; exit 3
      - run: echo never
      - if: failure()
        run: echo "cleanup ran"
  dep:
    needs: bad
    runs-on: ubuntu-latest
    steps: [{run: 'true'}]
  dep2:
    needs: dep
    runs-on: ubuntu-latest
    steps: [{run: 'true'}]
  summary:
    needs: [bad, dep]
    if: always()
    runs-on: ubuntu-latest
    steps:
      - run: |
          cat >> "$GITHUB_STEP_SUMMARY" <<'EOF'
          ${{ toJSON(needs) }}
          EOF
      - if: contains(needs.*.result, 'failure')
        run: echo "saw failure" >> "$GITHUB_STEP_SUMMARY"
"#;
    let report = run(tmp.path(), "skip", yaml, &cfg);
    assert_eq!(report.conclusion, Conclusion::Failure);
    let bad = one(&report, "bad");
    assert_eq!(bad.result, Conclusion::Failure);
    let outcomes: Vec<Conclusion> = bad.steps.iter().map(|s| s.outcome).collect();
    use Conclusion::*;
    assert_eq!(outcomes, [Failure, Success, Failure, Skipped, Success]);
    assert!(log_of(bad, 4).contains("cleanup ran"));
    assert_eq!(one(&report, "dep").result, Skipped);
    assert_eq!(one(&report, "dep2").result, Skipped);
    let summary = one(&report, "summary");
    assert_eq!(summary.result, Success, "{}", report.describe());
    assert!(
        summary.summary.contains("\"result\": \"failure\""),
        "{}",
        summary.summary
    );
    assert!(
        summary.summary.contains("\"result\": \"skipped\""),
        "{}",
        summary.summary
    );
    assert!(summary.summary.contains("saw failure"));
    let described = report.describe();
    assert!(described.contains("broken"), "{described}");
}

#[test]
fn file_commands_env_layers_and_path() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let yaml = r#"
on: push
env:
  LAYER: workflow
  WF_ONLY: wf
jobs:
  j:
    runs-on: ubuntu-latest
    env:
      LAYER: job
    steps:
      - id: s1
        run: |
          {
            echo "MULTI<<EOF"
            echo "line one"
            echo "line=two"
            echo "EOF"
            echo "PLAIN=a=b"
          } >> "$GITHUB_ENV"
          {
            echo "text<<XYZ"
            printf 'first\nsecond\n'
            echo "XYZ"
          } >> "$GITHUB_OUTPUT"
          mkdir -p "$RUNNER_TEMP/bin"
          printf '#!/bin/sh\necho from-path\n' > "$RUNNER_TEMP/bin/hello-tool"
          chmod +x "$RUNNER_TEMP/bin/hello-tool"
          echo "$RUNNER_TEMP/bin" >> "$GITHUB_PATH"
      - env:
          LAYER: step
          TEXT: ${{ steps.s1.outputs.text }}
        run: |
          test "$MULTI" = "$(printf 'line one\nline=two')"
          test "$PLAIN" = a=b
          test "$TEXT" = "$(printf 'first\nsecond')"
          test "$LAYER" = step && test "$WF_ONLY" = wf
          test "${{ env.MULTI }}" != ""
          test "$(hello-tool)" = from-path
          test -z "${GITHUB_TOKEN:-}"
          test "${{ github.token }}" = tok-123 && test "${{ secrets.GITHUB_TOKEN }}" = tok-123
          test "$SHARED_SETTING" = from-cfg
          test "$CI" = true && test "$GITHUB_ACTIONS" = true && test "$RUNNER_OS" = Linux
          test "$GITHUB_REPOSITORY_OWNER" = octo && test "$GITHUB_REF_NAME" = main
          test "$HOME" != "" && test "$LOCKSTEP_HOME" = "$HOME/.lockstep"
          test "$PWD" = "$GITHUB_WORKSPACE"
      - run: test "$LAYER" = job
"#;
    let report = run(tmp.path(), "env", yaml, &cfg);
    assert_eq!(
        report.conclusion,
        Conclusion::Success,
        "{}",
        report.describe()
    );
    let j = one(&report, "j");
    assert!(j.home.starts_with(&report.run_dir));
}

fn cache_yaml(key: &str, restore: &str) -> String {
    format!(
        r#"
on: schedule
jobs:
  c:
    runs-on: ubuntu-latest
    steps:
      - id: cache
        uses: actions/cache@0400d5f644dc74513175e3cd8d07132dd4860809
        with:
          key: {key}
          restore-keys: |
            {restore}
          path: |
            ~/.cache/tool
            ${{{{ github.workspace }}}}/out
      - if: steps.cache.outputs.cache-hit != 'true'
        run: |
          mkdir -p ~/.cache/tool out
          echo "built on run $GITHUB_RUN_ID" > ~/.cache/tool/data
          echo artefact > out/a.txt
      - run: |
          echo "hit=${{{{ steps.cache.outputs.cache-hit }}}}"
          cat ~/.cache/tool/data out/a.txt
"#
    )
}

#[test]
fn cache_saves_and_restores_across_runs_sharing_a_root() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    let first = run(tmp.path(), "c1", &cache_yaml("tool-v1", "tool-"), &cfg);
    assert_eq!(
        first.conclusion,
        Conclusion::Success,
        "{}",
        first.describe()
    );
    let c = one(&first, "c");
    assert_eq!(c.steps[1].outcome, Conclusion::Success);
    assert_eq!(c.steps.last().unwrap().name, "Post step 1");
    assert!(log_of(c, 3).contains("cache saved"), "{}", log_of(c, 3));

    cfg.run_id = 2;
    let second = run(tmp.path(), "c2", &cache_yaml("tool-v1", "tool-"), &cfg);
    let c = one(&second, "c");
    assert_eq!(
        c.steps[1].outcome,
        Conclusion::Skipped,
        "{}",
        second.describe()
    );
    let log = log_of(c, 2);
    assert!(
        log.contains("hit=true") && log.contains("built on run 1"),
        "{log}"
    );
    assert_eq!(c.steps.len(), 3, "an exact hit saves nothing");

    cfg.run_id = 3;
    let third = run(tmp.path(), "c3", &cache_yaml("tool-v2", "tool-"), &cfg);
    let c = one(&third, "c");
    assert!(log_of(c, 2).contains("hit=false"), "{}", third.describe());
    assert!(log_of(c, 3).contains("cache saved with key: tool-v2"));
}

#[test]
fn seeded_cache_entries_restore_into_home() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let tool = tmp.path().join("lockstep-bin");
    std::fs::write(&tool, "#!/bin/sh\necho seeded-tool \"$@\"\n").unwrap();
    Command::new("chmod").arg("+x").arg(&tool).status().unwrap();
    seed_cache(
        &cfg.root,
        "lockstep-bin-1",
        &[("~/.cargo/bin/lockstep", &tool)],
    )
    .unwrap();
    assert!(seed_cache(
        &cfg.root,
        "lockstep-bin-1",
        &[("~/.cargo/bin/lockstep", &tool)]
    )
    .is_err());
    let yaml = r#"
on: push
jobs:
  j:
    runs-on: ubuntu-latest
    steps:
      - id: c
        uses: actions/cache@v4
        with:
          key: lockstep-bin-1
          path: ~/.cargo/bin/lockstep
      - run: test "${{ steps.c.outputs.cache-hit }}" = true && lockstep hi | grep -q "seeded-tool hi"
"#;
    let report = run(tmp.path(), "seed", yaml, &cfg);
    assert_eq!(
        report.conclusion,
        Conclusion::Success,
        "{}",
        report.describe()
    );
}

#[test]
fn upload_artifact_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let yaml = r#"
on: push
jobs:
  strict:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/upload-artifact@v4
        with:
          name: nothing
          path: missing/
          if-no-files-found: error
  lenient:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/upload-artifact@v4
        with:
          path: missing/
      - run: mkdir -p d/.hidden && echo x > d/.hidden/h && echo y > d/.dot && echo z > d/v.txt
      - uses: actions/upload-artifact@v4
        with:
          name: dir
          path: d
      - uses: actions/upload-artifact@v4
        with:
          name: dir
          path: d
"#;
    let report = run(tmp.path(), "upload", yaml, &cfg);
    let strict = one(&report, "strict");
    assert_eq!(strict.result, Conclusion::Failure);
    assert!(
        log_of(strict, 0).contains("No files were found"),
        "{}",
        log_of(strict, 0)
    );
    let lenient = one(&report, "lenient");
    let outcomes: Vec<Conclusion> = lenient.steps.iter().map(|s| s.outcome).collect();
    use Conclusion::*;
    assert_eq!(
        outcomes,
        [Success, Success, Success, Failure],
        "{}",
        report.describe()
    );
    assert!(log_of(lenient, 3).contains("already uploaded"));
    let stored = report.run_dir.join("artifacts/dir");
    assert!(stored.join("v.txt").is_file());
    assert!(!stored.join(".dot").exists() && !stored.join(".hidden").exists());
    assert!(!report.run_dir.join("artifacts/artifact").exists());
}

#[test]
fn unknown_actions_fail_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let yaml = r#"
on: push
jobs:
  a:
    runs-on: ubuntu-latest
    steps:
      - uses: someone/else-action@v1
      - if: always()
        uses: docker://alpine:3
      - if: always()
        uses: actions/checkout@v4
        with:
          sparse-checkout: src
  b:
    runs-on: ubuntu-latest
    steps:
      - run: echo "${{ nosuchfunction(1) }}"
      - if: always()
        run: echo typo
        wiht: {x: 1}
  reusable:
    uses: octo/proj/.github/workflows/other.yml@main
"#;
    let report = run(tmp.path(), "unknown", yaml, &cfg);
    let a = one(&report, "a");
    assert_eq!(a.result, Conclusion::Failure);
    assert!(a.steps.iter().all(|s| s.outcome == Conclusion::Failure));
    assert!(
        log_of(a, 0).contains("someone/else-action@v1") && log_of(a, 0).contains("not emulated")
    );
    assert!(log_of(a, 1).contains("docker://alpine:3"));
    assert!(log_of(a, 2).contains("sparse-checkout"));
    let b = one(&report, "b");
    assert_eq!(b.result, Conclusion::Failure);
    assert!(log_of(b, 0).contains("nosuchfunction"), "{}", log_of(b, 0));
    assert!(
        log_of(b, 1).contains("unknown key `wiht`"),
        "{}",
        log_of(b, 1)
    );
    let reusable = one(&report, "reusable");
    assert_eq!(reusable.result, Conclusion::Failure);
    assert!(log_of(reusable, 0).contains("reusable workflow"));
}

#[test]
fn templates_inputs_and_working_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    cfg.event_name = "workflow_dispatch".into();
    cfg.inputs.insert("level".into(), "3".into());
    let yaml = r#"
on:
  workflow_dispatch:
    inputs:
      level: {type: string, default: '1'}
      dry: {type: boolean, default: true}
      label: {default: 'nightly build'}
defaults:
  run:
    working-directory: wf-dir
jobs:
  prep:
    runs-on: ubuntu-latest
    defaults:
      run:
        working-directory: .
    steps:
      - run: mkdir -p wf-dir job-dir/deeper
      - run: test "$(basename "$PWD")" = workspace
  j:
    if: inputs.dry && github.event.inputs.dry == 'true' && inputs.level > 2
    runs-on: ubuntu-latest
    defaults:
      run:
        working-directory: job-dir
    steps:
      - run: mkdir -p job-dir/deeper
        working-directory: .
      - run: test "$(basename "$PWD")" = job-dir
      - working-directory: job-dir/deeper
        run: |
          test "$(basename "$PWD")" = deeper
          test "${{ format('{0}-{1}', inputs.label, inputs.level) }}" = "nightly build-3"
          test "${{ github.event_name }}/${{ github.ref_name }}/${{ runner.os }}" = workflow_dispatch/main/Linux
          test '${{ toJSON(inputs.dry) }}' = true
          test "${{ inputs.missing || 'fallback' }}" = fallback
          test "${{ startsWith(github.ref, 'refs/heads/') && 'branch' || 'other' }}" = branch
  wf:
    runs-on: ubuntu-latest
    steps:
      - run: pwd
"#;
    let report = run(tmp.path(), "templates", yaml, &cfg);
    assert_eq!(
        one(&report, "prep").result,
        Conclusion::Success,
        "{}",
        report.describe()
    );
    assert_eq!(
        one(&report, "j").result,
        Conclusion::Success,
        "{}",
        report.describe()
    );
    // The workflow default names a directory that job's workspace lacks.
    assert_eq!(one(&report, "wf").result, Conclusion::Failure);

    let mut schedule = config(&tmp.path().join("sched"));
    schedule.event_name = "schedule".into();
    let report = run(tmp.path(), "templates2", yaml, &schedule);
    assert_eq!(
        one(&report, "j").result,
        Conclusion::Skipped,
        "no defaults on a schedule"
    );
}

#[test]
fn checkout_clones_the_event_commit_and_pushes_reach_origin() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let yaml = r#"
on: push
jobs:
  shallow:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683
        with:
          persist-credentials: false
      - run: |
          test "$(git rev-parse HEAD)" = "$GITHUB_SHA"
          test "$(git rev-parse --is-shallow-repository)" = true
          test -z "$(git tag)"
          test "$(git branch --show-current)" = main
          test -f sub/file.txt
          git -c user.name=ci -c user.email=ci@example.com tag -a v1 -m release
          git push origin v1
  full:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0
          path: src
      - working-directory: src
        run: |
          test "$(git rev-list --count HEAD)" = 2
          git tag | grep -qx v0
  by-tag:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          ref: v0
      - run: test ! -e sub/file.txt && test -f lock.txt
"#;
    let report = run(tmp.path(), "checkout", yaml, &cfg);
    assert_eq!(
        report.conclusion,
        Conclusion::Success,
        "{}",
        report.describe()
    );
    let tagged = git(&cfg.repo, &["rev-parse", "v1^{commit}"]);
    assert_eq!(tagged, cfg.sha);
}

#[test]
fn deploy_pages_checks_permissions_and_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let yaml = r#"
on: push
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - run: mkdir -p _site/.git _site/docs && echo '<h1>hi</h1>' > _site/index.html && echo x > _site/.git/config && echo d > _site/docs/a.html
      - uses: actions/upload-pages-artifact@v3
  no-rights:
    needs: build
    runs-on: ubuntu-latest
    permissions:
      contents: read
    steps:
      - uses: actions/deploy-pages@v4
  deploy:
    needs: build
    runs-on: ubuntu-latest
    permissions:
      pages: write
      id-token: write
    environment:
      name: github-pages
      url: ${{ steps.d.outputs.page_url }}
    outputs:
      url: ${{ steps.d.outputs.page_url }}
    steps:
      - id: d
        uses: actions/deploy-pages@v4
"#;
    let report = run(tmp.path(), "pages", yaml, &cfg);
    let bad = one(&report, "no-rights");
    assert_eq!(bad.result, Conclusion::Failure);
    let log = log_of(bad, 0);
    assert!(
        log.contains("pages: write")
            && log.contains("id-token: write")
            && log.contains("github-pages"),
        "{log}"
    );
    let good = one(&report, "deploy");
    assert_eq!(good.result, Conclusion::Success, "{}", report.describe());
    assert_eq!(good.outputs["url"], cfg.pages_url);
    let site = report.site.clone().expect("a deployed site");
    assert!(site.join("index.html").is_file() && site.join("docs/a.html").is_file());
    assert!(!site.join(".git").exists());
}

#[test]
fn github_script_exports_variables_and_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let yaml = r#"
on: push
jobs:
  j:
    runs-on: ubuntu-latest
    steps:
      - id: s
        uses: actions/github-script@60a0d83039c74a4aee543508d2ffcb1c3799cdea
        with:
          script: |
            core.exportVariable('FROM_SCRIPT', `multi\nline ${context.repo.owner}`);
            core.setOutput('n', 42);
            core.info(`sha ${context.sha}`);
            return { repo: context.repo.repo };
      - id: str
        uses: actions/github-script@v7
        with:
          result-encoding: string
          script: return process.env.FROM_SCRIPT.split('\n')[0]
      - run: |
          test "$FROM_SCRIPT" = "$(printf 'multi\nline octo')"
          test "${{ steps.s.outputs.n }}" = 42
          test '${{ steps.s.outputs.result }}' = '{"repo":"proj"}'
          test "${{ steps.str.outputs.result }}" = multi
      - uses: actions/github-script@v7
        with:
          script: core.setFailed('told to fail')
"#;
    let report = run(tmp.path(), "script", yaml, &cfg);
    let j = one(&report, "j");
    let outcomes: Vec<Conclusion> = j.steps.iter().map(|s| s.outcome).collect();
    use Conclusion::*;
    assert_eq!(
        outcomes,
        [Success, Success, Success, Failure],
        "{}",
        report.describe()
    );
    assert!(log_of(j, 3).contains("told to fail"));
}

#[test]
fn timeouts_kill_the_step_quickly() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let yaml = r#"
on: push
jobs:
  slow:
    runs-on: ubuntu-latest
    steps:
      - timeout-minutes: 0.02
        run: sleep 600
      - if: always()
        run: echo after
  slow-job:
    runs-on: ubuntu-latest
    timeout-minutes: 0.02
    steps:
      - run: sleep 600 & sleep 600
      - run: echo skipped
      - if: always()
        run: echo after-timeout
"#;
    let start = Instant::now();
    let report = run(tmp.path(), "timeout", yaml, &cfg);
    // Far below the steps' own 600 s, whatever the load.
    assert!(
        start.elapsed() < Duration::from_secs(300),
        "{}",
        report.describe()
    );
    let slow = one(&report, "slow");
    assert_eq!(slow.result, Conclusion::Failure);
    assert!(log_of(slow, 0).contains("timed out"), "{}", log_of(slow, 0));
    assert_eq!(slow.steps[1].outcome, Conclusion::Success);
    let job = one(&report, "slow-job");
    assert_eq!(job.result, Conclusion::Failure);
    assert_eq!(job.steps[1].outcome, Conclusion::Skipped);
    assert_eq!(
        job.steps[2].outcome,
        Conclusion::Success,
        "always() runs after a timeout"
    );
}

fn host_python() -> PathBuf {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 is on PATH (the tests need an interpreter for setup-python)");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

#[test]
fn setup_python_provides_the_configured_interpreter() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    let python = host_python();
    let out = Command::new(&python)
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let second = other_python(&version);
    cfg.pythons = vec![python];
    cfg.pythons.extend(second.clone());
    let yaml = format!(
        r#"
on: push
jobs:
  ok:
    runs-on: ubuntu-latest
    steps:
      - id: py
        uses: actions/setup-python@v5
        with:
          python-version: '{version}'
      - run: |
          python -c 'import sys; assert sys.version.startswith("{version}")'
          python3 --version
          case "${{{{ steps.py.outputs.python-version }}}}" in {version}.*) ;; *) exit 1 ;; esac
  wrong:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/setup-python@v5
        with:
          python-version: '2.7'
"#
    );
    let report = run(tmp.path(), "python", &yaml, &cfg);
    assert_eq!(
        one(&report, "ok").result,
        Conclusion::Success,
        "{}",
        report.describe()
    );
    let wrong = one(&report, "wrong");
    assert_eq!(wrong.result, Conclusion::Failure);
    let log = log_of(wrong, 0);
    assert!(log.contains("2.7") && log.contains(&version), "{log}");

    // Several versions, one per line: each on PATH as pythonX.Y, the last
    // the default `python`.
    let Some(second) = second else {
        panic!("the runner test needs a second Python beside {version} (pyenv's 3.12)");
    };
    let out = Command::new(&second)
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output()
        .unwrap();
    let other = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let yaml = format!(
        r#"
on: push
jobs:
  both:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/setup-python@v5
        with:
          python-version: |
            {version}
            {other}
      - run: |
          python{version} -c 'import sys; assert sys.version.startswith("{version}")'
          python{other} -c 'import sys; assert sys.version.startswith("{other}")'
          python -c 'import sys; assert sys.version.startswith("{other}")'
"#
    );
    cfg.run_id += 1;
    let report = run(tmp.path(), "pythons", &yaml, &cfg);
    assert_eq!(
        one(&report, "both").result,
        Conclusion::Success,
        "{}",
        report.describe()
    );
}

/// An interpreter of another minor version than `version` (pyenv's 3.12
/// or 3.11 on the test image), if the machine has one.
fn other_python(version: &str) -> Option<PathBuf> {
    let want = if version == "3.12" { "3.11" } else { "3.12" };
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".pyenv"));
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("versions"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .filter(|d| {
            d.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{want}.")))
        })
        .map(|d| d.join("bin").join(format!("python{want}")))
        .find(|p| p.exists())
}

#[test]
fn fail_fast_cancels_pending_cells() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = config(tmp.path());
    cfg.max_parallel = 1;
    let yaml = r#"
on: push
jobs:
  fast:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        n: [1, 2, 3]
    steps:
      - run: test ${{ matrix.n }} != 1
  patient:
    runs-on: ubuntu-latest
    strategy:
      fail-fast: false
      matrix:
        n: [1, 2, 3]
    outputs:
      last: ${{ steps.o.outputs.n }}
    steps:
      - id: o
        run: echo "n=${{ matrix.n }}" >> "$GITHUB_OUTPUT"
      - run: test ${{ matrix.n }} != 1
  after:
    needs: patient
    if: always()
    runs-on: ubuntu-latest
    steps:
      - run: test "${{ needs.patient.result }}" = failure && test "${{ needs.patient.outputs.last }}" = 3
"#;
    let report = run(tmp.path(), "failfast", yaml, &cfg);
    let fast: Vec<Conclusion> = report.job("fast").iter().map(|j| j.result).collect();
    assert_eq!(
        fast,
        [
            Conclusion::Failure,
            Conclusion::Cancelled,
            Conclusion::Cancelled
        ]
    );
    let patient: Vec<Conclusion> = report.job("patient").iter().map(|j| j.result).collect();
    assert_eq!(
        patient,
        [
            Conclusion::Failure,
            Conclusion::Success,
            Conclusion::Success
        ]
    );
    assert_eq!(
        one(&report, "after").result,
        Conclusion::Success,
        "{}",
        report.describe()
    );
}

#[test]
fn bad_workflows_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let cycle = "on: push\njobs:\n  a: {needs: b, steps: [{run: 'true'}]}\n  b: {needs: a, steps: [{run: 'true'}]}\n";
    let file = tmp.path().join("cycle.yml");
    std::fs::write(&file, cycle).unwrap();
    let err = run_workflow(&file, &cfg).unwrap_err().to_string();
    assert!(err.contains("cycle"), "{err}");
    std::fs::write(&file, "on: push\njobs:\n  a: {needs: zzz, steps: []}\n").unwrap();
    assert!(run_workflow(&file, &cfg)
        .unwrap_err()
        .to_string()
        .contains("zzz"));
    assert!(run_workflow(&tmp.path().join("missing.yml"), &cfg).is_err());
}
