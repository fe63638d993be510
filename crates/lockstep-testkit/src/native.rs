//! A new upstream commit for lockstep-sandbox's IREE-shaped fixture
//! ([`lockstep_sandbox::native`]), as an integrate brings: the pipeline and
//! `pkg` native tests rebuild after it.

use lockstep_core::Error;
use lockstep_git::Repo;
use lockstep_sandbox::native::{Native, SUBMODULE_PATH};
use lockstep_sandbox::packages::commit_all;

/// Changes one line of `lib/pass_0.cpp` in minillvm, commits it, and moves
/// the project's submodule to it (committed): a new upstream commit, as an
/// integrate brings.
pub fn touch_upstream(native: &Native, n: u32) -> Result<(), Error> {
    let file = native.minillvm.join("lib/pass_0.cpp");
    let text = fs_err::read_to_string(&file)?;
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    if let Some(line) = lines
        .iter_mut()
        .find(|l| l.starts_with("static const int kTweak"))
    {
        *line = format!("static const int kTweak = {n};");
    }
    fs_err::write(&file, lines.join("\n") + "\n")?;
    commit_all(
        &Repo::new(&native.minillvm),
        &format!("minillvm: tweak {n}"),
    )?;
    let sub = Repo::new(native.project.join(SUBMODULE_PATH));
    sub.git(&[
        "-c",
        "protocol.file.allow=always",
        "pull",
        "--quiet",
        "--ff-only",
        "origin",
        "main",
    ])?;
    commit_all(
        &Repo::new(&native.project),
        &format!("Bump minillvm (tweak {n})"),
    )
}
