//! The output specification of a command line ([`Spec`], whose rules
//! lockstep-reporters checks), derived from clap's own definitions: the
//! command's name (`integrate loop`), every output flag given (those under
//! the [`OUTPUT`] heading, plus the global `--events`) and every input file
//! named (those under [`INPUT`], plus `--config`). The headings say it
//! once, so no table has to agree with them.

use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::ArgMatches;
use lockstep_reporters::spec::{Named, Spec};

use crate::cli::{INPUT, OUTPUT};

/// The specification of the parsed command line `matches` of `cli`.
pub fn derive(cli: &clap::Command, matches: &ArgMatches) -> Spec {
    let mut spec = Spec::default();
    collect(cli, matches, &mut spec);
    let mut names = Vec::new();
    let (mut cmd, mut m) = (cli, matches);
    while let Some((name, sub)) = m.subcommand() {
        names.push(name.to_string());
        match cmd.find_subcommand(name) {
            Some(c) => cmd = c,
            None => break,
        }
        m = sub;
        collect(cmd, m, &mut spec);
    }
    spec.command = names.join(" ");
    spec
}
/// Adds the outputs and inputs `matches` gives among `cmd`'s own arguments.
fn collect(cmd: &clap::Command, matches: &ArgMatches, spec: &mut Spec) {
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        let kind = match arg.get_help_heading() {
            Some(OUTPUT) => &mut spec.outputs,
            Some(INPUT) => &mut spec.inputs,
            _ if id == "events" => &mut spec.outputs,
            _ if id == "config" => &mut spec.inputs,
            _ => continue,
        };
        if matches.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        // A global given after the subcommand shows in the parent's matches
        // too: count it once.
        let flag = flag_name(arg);
        if kind.iter().any(|n| n.flag == flag) && arg.is_global_set() {
            continue;
        }
        if !arg.get_action().takes_values() {
            kind.push(Named { flag, path: None });
            continue;
        }
        for raw in matches.get_raw(id).into_iter().flatten() {
            kind.push(Named {
                flag: flag.clone(),
                path: Some(PathBuf::from(raw)),
            });
        }
    }
}

/// `-o` (a short name wins: it is what people type), `--json`, or the
/// positional's value name (`PATH`).
fn flag_name(arg: &clap::Arg) -> String {
    if let Some(short) = arg.get_short() {
        return format!("-{short}");
    }
    if let Some(long) = arg.get_long() {
        return format!("--{long}");
    }
    arg.get_value_names()
        .and_then(|names| names.first())
        .map(|n| n.to_string())
        .unwrap_or_else(|| arg.get_id().to_string())
}
