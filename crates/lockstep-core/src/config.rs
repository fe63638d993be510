//! `lockstep.toml`: found by walking up from the current directory (or named by
//! `--config`), parsed strictly (unknown keys are errors citing `file:line:col`),
//! every key defaulted where a default makes sense.
//!
//! This module knows the file, not its tables: each area's engine crate owns
//! its table as a type implementing [`Section`] (`[integrate]` in
//! lockstep-integrate, `[test]` in lockstep-suite ...), and the binary hands
//! the loader the list of tables it knows ([`SectionSpec`]), so a table no
//! area owns, or a bad key in any table, is an error at load time whichever
//! command runs.

use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::{DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::error::{Error, Result};

/// File name looked up from the current directory upwards.
pub const FILE_NAME: &str = "lockstep.toml";

/// One table of lockstep.toml, owned by the engine crate that defines it.
/// Its `Deserialize` must deny unknown fields and default every key.
pub trait Section: DeserializeOwned + Default {
    /// The table's name (`integrate`).
    const NAME: &'static str;
    /// The docs page that documents its keys (`integrate.md`).
    const DOCS: &'static str;
}

/// What the loader knows of a table: its name, its docs page, and how to
/// check it.
#[derive(Clone, Copy)]
pub struct SectionSpec {
    pub name: &'static str,
    pub docs: &'static str,
    check: fn(&Loaded) -> Result<()>,
}

impl SectionSpec {
    /// The spec of section type `S`.
    pub const fn of<S: Section>() -> SectionSpec {
        SectionSpec {
            name: S::NAME,
            docs: S::DOCS,
            check: |loaded| loaded.section::<S>().map(drop),
        }
    }
}

/// A loaded configuration and where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The file, or `None` when no file was found and defaults are in force.
    pub path: Option<PathBuf>,
    /// The directory relative paths in the file are resolved against.
    pub root: PathBuf,
    /// The file's text (empty without a file).
    text: String,
    /// The tables the file has.
    tables: Vec<String>,
}

impl Loaded {
    /// Defaults only, as if no file were found, relative to `root`.
    pub fn defaults(root: &Path) -> Loaded {
        Loaded {
            path: None,
            root: root.to_path_buf(),
            text: String::new(),
            tables: Vec::new(),
        }
    }

    /// The table `S`, its defaults when the file has none; errors cite
    /// `file:line:col` and the docs page of the table.
    pub fn section<S: Section>(&self) -> Result<S> {
        if !self.has_section(S::NAME) {
            return Ok(S::default());
        }
        let seed = Pick::<S>(S::NAME, PhantomData);
        seed.deserialize(toml::Deserializer::new(&self.text))
            .map_err(|err| {
                self.toml_error(
                    &err,
                    &format!("the [{}] keys are documented in docs/{}", S::NAME, S::DOCS),
                )
            })
    }

    /// Whether the file has the table `name` (a section the user wrote,
    /// even empty, as opposed to one whose defaults are in force).
    pub fn has_section(&self, name: &str) -> bool {
        self.tables.iter().any(|t| t == name)
    }

    /// The file a message should name.
    pub fn origin(&self) -> &Path {
        self.path.as_deref().unwrap_or(Path::new(FILE_NAME))
    }

    fn toml_error(&self, err: &toml::de::Error, docs: &str) -> Error {
        let path = self.origin();
        let location = match err.span() {
            Some(span) => {
                let (line, col) = line_col(&self.text, span.start);
                format!("{}:{line}:{col}", path.display())
            }
            None => path.display().to_string(),
        };
        Error::usage(format!("invalid configuration at {location}"))
            .cause(err.message().to_string())
            .hint(format!("fix {} ({docs})", path.display()))
    }
}

/// Deserializes one key of the document's top-level table with `S`.
struct Pick<S>(&'static str, PhantomData<S>);

impl<'de, S: DeserializeOwned + Default> DeserializeSeed<'de> for Pick<S> {
    type Value = S;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<S, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, S: DeserializeOwned + Default> Visitor<'de> for Pick<S> {
    type Value = S;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a table with a [{}] table", self.0)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<S, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == self.0 {
                found = Some(map.next_value::<S>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found.unwrap_or_default())
    }
}

/// Checks the top-level keys against the known tables.
struct Tables<'a>(&'a [SectionSpec]);

impl<'de> DeserializeSeed<'de> for Tables<'_> {
    type Value = Vec<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Vec<String>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Tables<'_> {
    type Value = Vec<String>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a table of tables")
    }
    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Vec<String>, A::Error> {
        let mut names = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if !self.0.iter().any(|s| s.name == key) {
                let known: Vec<String> = self.0.iter().map(|s| format!("[{}]", s.name)).collect();
                return Err(serde::de::Error::custom(format!(
                    "unknown table `{}`: lockstep.toml has {}",
                    crate::error::printable(&key),
                    known.join(", ")
                )));
            }
            map.next_value::<IgnoredAny>()?;
            names.push(key);
        }
        Ok(names)
    }
}

/// Deserializers of values every table uses (`with = "..."` in a section).
pub mod de {
    use super::*;

    /// Accepts an argv array, or a string split like a shell would.
    pub fn argv<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<String>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Argv {
            List(Vec<String>),
            Line(String),
        }
        match Argv::deserialize(d)? {
            Argv::List(v) => Ok(v),
            Argv::Line(s) => shell_words(&s).map_err(serde::de::Error::custom),
        }
    }

    pub fn duration<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        parse_duration(&text).map_err(serde::de::Error::custom)
    }

    pub fn optional_duration<'de, D: Deserializer<'de>>(
        d: D,
    ) -> std::result::Result<Option<Duration>, D::Error> {
        duration(d).map(Some)
    }

    /// A string that reaches a program as an argument (a URL git fetches,
    /// a remote's name), refused when it starts with `-`: the program
    /// would read it as an option. `key` names the setting; the loader
    /// adds the value's `file:line:col`.
    pub fn not_an_option<'de, D: Deserializer<'de>>(
        d: D,
        key: &str,
    ) -> std::result::Result<String, D::Error> {
        let text = String::deserialize(d)?;
        if text.starts_with('-') {
            let shown: String = text.chars().take(60).collect();
            return Err(serde::de::Error::custom(format!(
                "{key} `{}` starts with `-`: git would read it as an option, not a value",
                crate::error::printable_line(&shown)
            )));
        }
        Ok(text)
    }
}

/// A `--timeout SECS`-style flag's value as a duration: a usage error
/// naming `flag` unless it is a finite number of seconds greater than 0
/// that a duration holds (`1e30` is refused, not a panic).
pub fn seconds(flag: &str, secs: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            Error::usage(format!("invalid {flag} {secs}")).hint(format!(
                "give a number of seconds greater than 0, e.g. {flag} 30"
            ))
        })
}

/// Parses `90s`, `5m`, `2h`, `1h 30m` (humantime syntax).
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    humantime::parse_duration(text)
        .map_err(|e| format!("invalid duration `{text}` ({e}); write e.g. `90s`, `20m` or `2h`"))
}

/// Splits a command line like a POSIX shell would (quotes, backslashes).
pub fn shell_words(line: &str) -> std::result::Result<Vec<String>, String> {
    shlex::split(line).ok_or_else(|| format!("cannot split `{line}` into words: unbalanced quotes"))
}

/// TOML's form of `text` as a value (quoted and escaped by the TOML
/// serializer, a literal string where that reads better): how every writer
/// of a configuration (`lockstep init`, the demo, the sandbox) puts a name, a
/// path or a URL into one, never by formatting quotes itself. A name that
/// holds a control character is the writer's to refuse first
/// ([`crate::error::hides_text`]): the serializer escapes it, but a comment
/// or a terminal would not.
pub fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// Finds `lockstep.toml` in `start` or its ancestors.
pub fn discover(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join(FILE_NAME))
        .find(|candidate| candidate.is_file())
}

/// Loads the configuration: `explicit` (from `--config`) or the file found from
/// `cwd` upwards, or defaults when there is none; every table in `sections`
/// is checked, and a table not among them is an error.
pub fn load(explicit: Option<&Path>, cwd: &Path, sections: &[SectionSpec]) -> Result<Loaded> {
    // --config names a file that must be one: a directory or a device is
    // refused by read_input with what it is.
    let path = explicit.map(Path::to_path_buf).or_else(|| discover(cwd));
    let what = if explicit.is_some() {
        "--config"
    } else {
        "the configuration"
    };
    let Some(path) = path else {
        return Ok(Loaded::defaults(cwd));
    };
    let text = crate::fs::read_input_text(what, &path, MAX_CONFIG_BYTES)?;
    let root = match path.parent() {
        Some(root) if !root.as_os_str().is_empty() => root.to_path_buf(),
        _ => cwd.to_path_buf(),
    };
    parse(text, Some(path), root, sections)
}

/// Parses configuration text that came from `path` (`None`: given in
/// memory), checking every table.
pub fn parse(
    text: String,
    path: Option<PathBuf>,
    root: PathBuf,
    sections: &[SectionSpec],
) -> Result<Loaded> {
    let mut loaded = Loaded {
        path,
        root,
        text,
        tables: Vec::new(),
    };
    let docs: Vec<String> = sections
        .iter()
        .map(|s| format!("[{}] in {}", s.name, s.docs))
        .collect();
    let docs = format!(
        "each table's keys are documented in docs/: {}",
        docs.join(", ")
    );
    loaded.tables = Tables(sections)
        .deserialize(toml::Deserializer::new(&loaded.text))
        .map_err(|err| loaded.toml_error(&err, &docs))?;
    for spec in sections {
        (spec.check)(&loaded)?;
    }
    refuse_nul(&loaded.text, loaded.origin())?;
    Ok(loaded)
}

/// The largest lockstep.toml read (a real one is a few KB).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// A NUL character cannot be part of a path, a command argument or a git
/// name, so a string holding one (`"\u0000"`) is refused with its key
/// rather than failing later in some command that uses it.
fn refuse_nul(text: &str, path: &Path) -> Result<()> {
    fn find(value: &toml::Value, key: &mut Vec<String>) -> Option<String> {
        match value {
            toml::Value::String(s) if s.contains('\0') => Some(key.join(".")),
            toml::Value::Table(table) => table.iter().find_map(|(k, v)| {
                key.push(k.clone());
                let found = find(v, key);
                key.pop();
                found
            }),
            toml::Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
                key.push(i.to_string());
                let found = find(v, key);
                key.pop();
                found
            }),
            _ => None,
        }
    }
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(());
    };
    match find(&toml::Value::Table(table), &mut Vec::new()) {
        None => Ok(()),
        Some(key) => Err(Error::usage(format!(
            "invalid configuration in {}: `{key}` contains a NUL character",
            path.display()
        ))
        .hint("remove the \\u0000 from that string")),
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table as an engine would define one.
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
    struct Demo {
        name: String,
        #[serde(deserialize_with = "de::duration")]
        timeout: Duration,
        #[serde(deserialize_with = "de::argv")]
        smoke: Vec<String>,
    }

    impl Default for Demo {
        fn default() -> Self {
            Demo {
                name: "x".into(),
                timeout: Duration::from_secs(60),
                smoke: Vec::new(),
            }
        }
    }

    impl Section for Demo {
        const NAME: &'static str = "demo";
        const DOCS: &'static str = "demo.md";
    }

    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Other {
        jobs: Option<usize>,
    }

    impl Section for Other {
        const NAME: &'static str = "other";
        const DOCS: &'static str = "other.md";
    }

    const SECTIONS: &[SectionSpec] = &[SectionSpec::of::<Demo>(), SectionSpec::of::<Other>()];

    fn parsed(text: &str) -> Result<Loaded> {
        parse(
            text.into(),
            Some("lockstep.toml".into()),
            ".".into(),
            SECTIONS,
        )
    }

    #[test]
    fn bad_config_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = load(Some(dir.path()), dir.path(), SECTIONS).unwrap_err();
        assert!(err.message.contains("is a directory"), "{}", err.message);
        let err = load(Some(Path::new("/dev/zero")), dir.path(), SECTIONS).unwrap_err();
        assert!(err.message.contains("larger than"), "{}", err.message);
        let err = load(Some(&dir.path().join("none.toml")), dir.path(), SECTIONS).unwrap_err();
        assert!(err.message.contains("does not exist"), "{}", err.message);
        let file = dir.path().join("lockstep.toml");
        std::fs::write(&file, "[demo]\nname = \"third_party/\\u0000x\"\n").unwrap();
        let err = load(None, dir.path(), SECTIONS).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.message.contains("`demo.name` contains a NUL"),
            "{}",
            err.message
        );
    }

    #[test]
    fn sections_default_and_parse() {
        let loaded = parsed("[demo]\nsmoke = \"./x.sh 'a b'\"\ntimeout = \"2m\"\n").unwrap();
        let demo = loaded.section::<Demo>().unwrap();
        assert_eq!(demo.smoke, vec!["./x.sh", "a b"]);
        assert_eq!(demo.timeout, Duration::from_secs(120));
        assert_eq!(demo.name, "x");
        assert!(loaded.has_section("demo") && !loaded.has_section("other"));
        assert_eq!(loaded.section::<Other>().unwrap().jobs, None);
        let none = Loaded::defaults(Path::new("."));
        assert_eq!(none.section::<Demo>().unwrap().name, "x");
    }

    #[test]
    fn unknown_keys_and_tables_cite_line_column_and_docs() {
        let err = parsed("[demo]\nname = \"a\"\n  timout = \"2h\"\n").unwrap_err();
        assert!(err.message.contains("lockstep.toml:3:3"), "{}", err.message);
        assert!(err.causes[0].contains("timout"), "{:?}", err.causes);
        assert!(err.render().contains("docs/demo.md"), "{}", err.render());
        assert_eq!(err.exit_code(), 2);
        let err = parsed("[other]\njobs = 1\n[bogus]\nx = 1\n").unwrap_err();
        assert!(
            err.causes[0].contains("unknown table `bogus`"),
            "{:?}",
            err.causes
        );
        assert!(
            err.render().contains("[demo] in demo.md"),
            "{}",
            err.render()
        );
        let err = parsed("[demo]\ntimeout = \"soon\"\n").unwrap_err();
        assert!(err.causes[0].contains("soon"), "{:?}", err.causes);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Any text: a configuration or an error naming the file, never a panic.
        #[test]
        fn any_text_parses_or_names_the_file(text in "(\\PC|\n|\\[|\\]|=|\"){0,200}") {
            if let Err(e) = parsed(&text) {
                proptest::prop_assert!(e.message.contains("lockstep.toml"), "{}", e.message);
                proptest::prop_assert_eq!(e.exit_code(), 2);
            }
        }

        /// Known keys with arbitrary values.
        #[test]
        fn known_keys_with_any_values(
            (table, key) in proptest::sample::select(vec![
                ("demo", "name"), ("demo", "timeout"), ("demo", "smoke"), ("other", "jobs"), ("other", "nonsense"),
            ]),
            value in proptest::prop_oneof![
                "\"(\\PC){0,30}\"",
                "-?[0-9]{1,25}(\\.[0-9]{0,5})?(e[0-9]{1,3})?",
                proptest::strategy::Just("nan".to_string()),
                proptest::strategy::Just("inf".to_string()),
                proptest::strategy::Just("[1, \"a\"]".to_string()),
            ],
        ) {
            if let Err(e) = parsed(&format!("[{table}]\n{key} = {value}\n")) {
                proptest::prop_assert!(e.message.contains("lockstep.toml"), "{}", e.message);
            }
        }
    }
}
