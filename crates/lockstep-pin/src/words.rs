//! How a pin is named and reproduced: its description in status and
//! reports, the variables a smoke gets, the shell lines a halt report
//! prints to put the pin at a commit in a copy of the superproject (and
//! back), and its configuration form (what `lockstep init` writes and
//! [`Pin::from_settings`] reads back).

use lockstep_core::Error;
use lockstep_git::Repo;

use crate::{one_match, Checksums, Kind, Pin};

/// The lines of a halt report's Reproduce block that move the pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reproduce {
    /// Puts the pin at the commit (in the superproject's directory).
    pub set: String,
    /// Puts the pin back where the superproject's HEAD has it.
    pub back: String,
}

impl Pin {
    /// The pin in words: `the submodule third_party/llvm-project`, `the pin
    /// file llvm-project.version`, `the pin in third_party/llvm/workspace.bzl`.
    pub fn describe(&self) -> String {
        match self.kind {
            Kind::Submodule => format!("the submodule {}", self.path),
            Kind::File => format!("the pin file {}", self.path),
            Kind::Pattern { .. } => format!("the pin in {}", self.path),
        }
    }

    /// Where upstream's history lives, in words: `the submodule PATH`, or
    /// `lockstep's clone of upstream` for a pin kept in a file.
    pub fn history_name(&self) -> String {
        match self.kind {
            Kind::Submodule => format!("the submodule {}", self.path),
            _ => "lockstep's clone of upstream".to_string(),
        }
    }

    /// What to do when the work tree's pin is not the one the superproject's
    /// HEAD records.
    pub fn restore_hint(&self) -> String {
        let path = quote(&self.path);
        match self.kind {
            Kind::Submodule => format!(
                "run `git submodule update -- {path}` (or commit the submodule change) first"
            ),
            _ => format!("restore it (`git checkout -- {path}`) or commit the change first"),
        }
    }

    /// The variables a smoke (and its reproduce line) gets naming the pin:
    /// `LOCKSTEP_SUBMODULE` for a submodule, `LOCKSTEP_PIN_FILE` for a pin
    /// kept in a file.
    pub fn smoke_env(&self) -> Vec<(String, String)> {
        let name = match self.kind {
            Kind::Submodule => "LOCKSTEP_SUBMODULE",
            _ => "LOCKSTEP_PIN_FILE",
        };
        vec![(name.to_string(), self.path.clone())]
    }

    /// The shell lines (run in the superproject's top, as `rev` of
    /// `superproject` has it checked out) that put the pin at `commit` and
    /// back: the submodule checked out there; a pin file rewritten; for a
    /// pin inside a larger file, only the matched values replaced (the
    /// commit, and its archive's checksum from `checksums`), each required
    /// to occur once, every other byte kept. `note` ends the first line as
    /// a comment.
    pub fn reproduce(
        &self,
        superproject: &Repo,
        rev: &str,
        commit: &str,
        checksums: &dyn Checksums,
        note: &str,
    ) -> Result<Reproduce, Error> {
        let path = quote(&self.path);
        Ok(match &self.kind {
            Kind::Submodule => Reproduce {
                set: format!("git -C {path} checkout --detach {commit}   # {note}"),
                back: format!("git submodule update -- {path}   # back to the pin"),
            },
            Kind::File => Reproduce {
                set: format!("printf '%s\\n' {commit} > {path}   # {note}"),
                back: format!("git checkout -- {path}   # back to the pin"),
            },
            Kind::Pattern {
                commit: pattern,
                sha256,
            } => {
                let text = self.text_at(superproject, rev)?;
                let (old, _) = one_match(pattern, &text, &self.path, "pattern")?;
                let mut values = vec![old, commit.to_string()];
                if let Some(archive) = sha256 {
                    let (old_sum, _) =
                        one_match(&archive.pattern, &text, &self.path, "sha256 pattern")?;
                    let sum = checksums.sha256(&archive.url.replace("{commit}", commit))?;
                    values.extend([old_sum, sum]);
                }
                let args: Vec<String> = values.iter().map(|v| quote(v)).collect();
                Reproduce {
                    set: format!(
                        "python3 -c {} {path} {}   # {note}",
                        quote(REPLACE_ONCE),
                        args.join(" ")
                    ),
                    back: format!("git checkout -- {path}   # back to the pin"),
                }
            }
        })
    }

    /// The pin as `[integrate]` settings (TOML lines): what `lockstep init`
    /// writes and [`Pin::from_settings`] reads back.
    pub fn settings_toml(&self) -> String {
        let value = |text: &str| toml::Value::String(text.to_string()).to_string();
        match &self.kind {
            Kind::Submodule => format!("submodule = {}\n", value(&self.path)),
            Kind::File => format!("pin-file = {}\n", value(&self.path)),
            Kind::Pattern { commit, sha256 } => {
                let mut line = format!(
                    "pin = {{ file = {}, pattern = {}",
                    value(&self.path),
                    value(commit.as_str())
                );
                if let Some(a) = sha256 {
                    line.push_str(&format!(
                        ", sha256 = {{ pattern = {}, archive = {} }}",
                        value(a.pattern.as_str()),
                        value(&a.url)
                    ));
                }
                line.push_str(" }\n");
                line
            }
        }
    }
}

/// A Python one-liner: in the file `argv[1]`, each `OLD NEW` pair of the
/// arguments after it replaced, every OLD required to occur exactly once
/// (else nothing is written and it says so).
const REPLACE_ONCE: &str = "import sys;p=sys.argv[1];v=sys.argv[2:];t=open(p).read();bad=[a for a in v[0::2] if t.count(a)!=1];sys.exit(p+': not exactly one '+' '.join(bad)) if bad else None;[t:=t.replace(a,b) for a,b in zip(v[0::2],v[1::2])];open(p,'w').write(t)";

/// `word` quoted for a POSIX shell when it needs it.
fn quote(word: &str) -> String {
    lockstep_core::process::quote(word)
}
