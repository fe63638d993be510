//! The per-step files a step writes to talk to the runner: GITHUB_ENV,
//! GITHUB_OUTPUT, GITHUB_PATH and GITHUB_STEP_SUMMARY, with GitHub's
//! `NAME=value` and `NAME<<DELIMITER` ... `DELIMITER` forms.
//!
//! Why: outputs and exported variables are how steps and jobs pass values;
//! a multi-line value must arrive exactly as GitHub would deliver it.

use std::path::{Path, PathBuf};

/// The four files of one step (created empty before it runs).
#[derive(Debug, Clone)]
pub(crate) struct FileCommands {
    pub env: PathBuf,
    pub output: PathBuf,
    pub path: PathBuf,
    pub summary: PathBuf,
}

/// What a step wrote to its files.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    pub env: Vec<(String, String)>,
    pub outputs: Vec<(String, String)>,
    pub paths: Vec<String>,
    pub summary: String,
}

impl FileCommands {
    /// Creates the empty files for step `tag` under `dir`.
    pub(crate) fn create(dir: &Path, tag: &str) -> std::io::Result<FileCommands> {
        fs_err::create_dir_all(dir)?;
        let file = |kind: &str| dir.join(format!("{kind}_{tag}"));
        let fc = FileCommands {
            env: file("set_env"),
            output: file("set_output"),
            path: file("add_path"),
            summary: file("step_summary"),
        };
        for p in [&fc.env, &fc.output, &fc.path, &fc.summary] {
            fs_err::write(p, "")?;
        }
        Ok(fc)
    }

    /// The variables naming the files.
    pub(crate) fn vars(&self) -> Vec<(String, String)> {
        [
            ("GITHUB_ENV", &self.env),
            ("GITHUB_OUTPUT", &self.output),
            ("GITHUB_PATH", &self.path),
            ("GITHUB_STEP_SUMMARY", &self.summary),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.display().to_string()))
        .collect()
    }

    /// Reads back what the step wrote.
    pub(crate) fn collect(&self) -> Result<Collected, String> {
        let read = |p: &Path| {
            fs_err::read(p)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(|e| e.to_string())
        };
        Ok(Collected {
            env: parse(&read(&self.env)?).map_err(|e| format!("GITHUB_ENV: {e}"))?,
            outputs: parse(&read(&self.output)?).map_err(|e| format!("GITHUB_OUTPUT: {e}"))?,
            paths: read(&self.path)?
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect(),
            summary: read(&self.summary)?,
        })
    }
}

/// Parses `NAME=value` lines and `NAME<<DELIM` heredocs.
pub(crate) fn parse(text: &str) -> Result<Vec<(String, String)>, String> {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.is_empty() {
            continue;
        }
        let heredoc = line
            .find("<<")
            .filter(|&h| line.find('=').is_none_or(|eq| h < eq));
        match heredoc {
            Some(h) => {
                let (name, delim) = (&line[..h], &line[h + 2..]);
                let end = lines[i..]
                    .iter()
                    .position(|l| *l == delim)
                    .ok_or_else(|| format!("no line `{delim}` closes `{line}`"))?;
                out.push((checked_name(name)?, lines[i..i + end].join("\n")));
                i += end + 1;
            }
            None => {
                let (name, value) = line.split_once('=').ok_or_else(|| {
                    format!("invalid line `{line}` (expected NAME=value or NAME<<DELIMITER)")
                })?;
                out.push((checked_name(name)?, value.to_string()));
            }
        }
    }
    Ok(out)
}

fn checked_name(name: &str) -> Result<String, String> {
    if name.is_empty() {
        return Err("a line has an empty name".to_string());
    }
    Ok(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_forms() {
        let text = "A=1\nB<<EOF\nline 1\nline=2\nEOF\nC=x=y\n\nD<<X\nX\n";
        let got = parse(text).unwrap();
        assert_eq!(
            got,
            vec![
                ("A".to_string(), "1".to_string()),
                ("B".to_string(), "line 1\nline=2".to_string()),
                ("C".to_string(), "x=y".to_string()),
                ("D".to_string(), String::new()),
            ]
        );
        assert!(parse("E<<EOF\nno end\n").is_err());
        assert!(parse("novalue\n").is_err());
    }
}
