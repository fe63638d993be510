//! Several dependencies in step: `[[integrate.follow]]` names submodules of
//! the superproject that pin the same upstream themselves (StableHLO and
//! Torch-MLIR pin LLVM), so an upstream change can break them and they
//! sometimes have to move with the integrate. `status` shows how far each
//! follower's upstream pin is from the integrate's; the loop says which
//! followers pin an older upstream than the new pin; `loop
//! --bump-followers` moves each follower to its own branch head in one
//! superproject commit before the search, so every smoke covers both.

use lockstep_core::Error;
use lockstep_git::{Oid, Repo};
use serde::Serialize;

use crate::config::FollowConfig;
use crate::halt::short;
use crate::Integrate;

/// Where a follower stands.
#[derive(Debug, Clone, Serialize)]
pub struct Follower {
    pub name: String,
    pub submodule: String,
    /// The follower's commit the superproject pins.
    pub commit: Option<Oid>,
    /// The upstream commit the follower pins.
    pub upstream_pin: Option<Oid>,
    /// Upstream commits the integrate's pin has that the follower's lacks.
    pub behind: Option<usize>,
    /// Upstream commits the follower's pin has that the integrate's lacks.
    pub ahead: Option<usize>,
    /// Why the above could not be found.
    pub problem: Option<String>,
}

/// A follower moved by `--bump-followers`.
#[derive(Debug, Clone, Serialize)]
pub struct Bumped {
    pub name: String,
    pub from: Oid,
    pub to: Oid,
    pub upstream_pin: Option<Oid>,
}

/// Every follower's position against the upstream commit `ours`.
pub fn followers(ig: &Integrate, ours: &str) -> Result<Vec<Follower>, Error> {
    ig.cfg
        .follow
        .iter()
        .map(|f| crate::follow::follower(ig, f, "HEAD", ours))
        .collect()
}

fn follower(ig: &Integrate, f: &FollowConfig, rev: &str, ours: &str) -> Result<Follower, Error> {
    let mut out = Follower {
        name: f.name.clone(),
        submodule: f.submodule.clone(),
        commit: None,
        upstream_pin: None,
        behind: None,
        ahead: None,
        problem: None,
    };
    let commit = match f.pin()?.read_at(&ig.superproject, rev) {
        Ok(commit) => commit,
        Err(e) => {
            out.problem = Some(e.message);
            return Ok(out);
        }
    };
    out.commit = Some(commit.clone());
    let repo = Repo::new(ig.superproject.dir().join(&f.submodule));
    match follower_pin(&repo, f, &commit) {
        Ok(pin) => out.upstream_pin = Some(pin),
        Err(why) => {
            out.problem = Some(why);
            return Ok(out);
        }
    }
    let pin = out.upstream_pin.clone().unwrap_or_default();
    if !ig.sub.has_commit(&pin)? {
        out.problem = Some(format!(
            "its upstream pin {} is not in the upstream history here (fetch upstream)",
            short(&pin)
        ));
        return Ok(out);
    }
    out.behind = Some(ig.sub.rev_list(&[&format!("{pin}..{ours}")])?.len());
    out.ahead = Some(ig.sub.rev_list(&[&format!("{ours}..{pin}")])?.len());
    Ok(out)
}

/// Says which followers pin an older upstream than `ours` (a warning
/// each): they may need to move with the integrate.
pub fn report_followers(ig: &Integrate, ours: &str) -> Result<Vec<Follower>, Error> {
    let all = crate::follow::followers(ig, ours)?;
    for f in &all {
        match (&f.problem, f.behind) {
            (Some(why), _) => ig.warn(format!("follower {}: {why}", f.name)),
            (None, Some(n)) if n > 0 => ig.warn(format!(
                "follower {} pins an upstream {} older than the integrate's ({}); `loop --bump-followers` moves it to its {} head",
                f.name,
                lockstep_core::words::count(n, "commit", "commits"),
                short(f.upstream_pin.as_deref().unwrap_or_default()),
                ig.cfg.follow.iter().find(|c| c.name == f.name).map(|c| c.branch.as_str()).unwrap_or("main")
            )),
            _ => {}
        }
    }
    Ok(all)
}

/// `--bump-followers`: each follower at its remote branch head, in one
/// superproject commit (none when all are there). A follower that is
/// not checked out, has local changes, or whose head has no upstream
/// pin is an error naming it, before anything moves.
pub fn bump_followers(ig: &Integrate) -> Result<Vec<Bumped>, Error> {
    let mut moves = Vec::new();
    for f in &ig.cfg.follow {
        let dir = ig.superproject.dir().join(&f.submodule);
        if !dir.join(".git").exists() {
            return Err(Error::usage(format!(
                "follower {}: {} is not checked out",
                f.name, f.submodule
            ))
            .hint(format!("run `git submodule update --init {}`", f.submodule)));
        }
        let repo = Repo::new(&dir);
        if !repo.dirty()?.is_empty() {
            return Err(Error::usage(format!(
                "follower {}: {} has uncommitted changes; lockstep never discards them",
                f.name, f.submodule
            ))
            .hint("commit or stash them in the follower, then rerun"));
        }
        let current = f.pin()?.read_at(&ig.superproject, "HEAD").map_err(|e| {
            e.context(format!("follower {}", f.name))
                .hint("fix [[integrate.follow]] submodule in lockstep.toml")
        })?;
        let tracking = format!("refs/remotes/{}/{}", f.remote, f.branch);
        let fetched = repo.try_git(&[
            "fetch",
            "--quiet",
            "--",
            &f.remote,
            &format!("+refs/heads/{}:{tracking}", f.branch),
        ])?;
        if fetched.code != 0 {
            return Err(Error::failed(format!(
                "follower {}: cannot fetch {} {}",
                f.name, f.remote, f.branch
            ))
            .cause(fetched.stderr.trim().to_string())
            .hint("fix [[integrate.follow]] remote / branch, or the follower's remote"));
        }
        let head = repo.must_resolve(&tracking)?;
        let pin = follower_pin(&repo, f, &head).map_err(|why| {
            Error::usage(format!("follower {}: its {} head {}: {why}", f.name, f.branch, short(&head)))
                .hint("point [[integrate.follow]] upstream-pin-file / upstream-submodule / upstream-pin at where it pins the upstream")
        })?;
        if head != current {
            moves.push((f, repo, current, head, pin));
        }
    }
    if moves.is_empty() {
        return Ok(Vec::new());
    }
    let mut bumped = Vec::new();
    let mut message = String::from("Bump followers with the integrate\n\n");
    let mut moved = Vec::new();
    let staged = (|| -> Result<Oid, Error> {
        for (f, repo, from, to, pin) in &moves {
            repo.checkout_detached(to)?;
            moved.push((f, repo, from));
            f.pin()?.stage(&ig.superproject, to, &ig.checksums())?;
            message.push_str(&format!(
                "{}: {} -> {} (pins {} {})\n",
                f.name,
                short(from),
                short(to),
                ig.cfg.upstream_name,
                short(pin)
            ));
            bumped.push(Bumped {
                name: f.name.clone(),
                from: from.clone(),
                to: to.clone(),
                upstream_pin: Some(pin.clone()),
            });
        }
        ig.superproject.commit_staged(&message, false)
    })();
    // Nothing half-done: a failed checkout or commit puts every moved
    // follower back and unstages its pin.
    let commit = match staged {
        Ok(commit) => commit,
        Err(e) => {
            for (f, repo, from) in moved {
                let _ = repo.checkout_detached(from);
                let _ = ig
                    .superproject
                    .try_git(&["reset", "--quiet", "--", &f.submodule]);
            }
            return Err(e);
        }
    };
    ig.info(format!(
        "{} bumped {}",
        short(&commit),
        bumped
            .iter()
            .map(|b| format!("{} to {}", b.name, short(&b.to)))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Ok(bumped)
}

/// The upstream commit a follower pins at its commit `at` (in its
/// checkout `repo`), by its `[[integrate.follow]]` pin of any kind.
fn follower_pin(repo: &Repo, f: &FollowConfig, at: &str) -> Result<Oid, String> {
    if !repo.dir().join(".git").exists() {
        return Err(format!("{} is not checked out", f.submodule));
    }
    let pin = f.upstream_pin().map_err(|e| e.message)?;
    pin.read_at(repo, at).map_err(|e| {
        format!(
            "it has no upstream {}: {}",
            pin.describe().trim_start_matches("the "),
            e.message
        )
    })
}
