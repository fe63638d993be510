//! Version and tag templates: `{base}rc{date}{n:02}` and `{name}-{version}`.
//!
//! A version template is checked before anything uses it, with examples: it
//! must give valid PEP 440 versions without a local part (PyPI refuses
//! them), the counter must be fixed-width when it follows a date (a wider
//! `n` would sort the 100th build of a day above the next day's first:
//! `rc20261125100 > rc2026112601`), and versions must increase with the
//! counter and the date. Rendering refuses a counter that outgrows its
//! width instead of producing a version that sorts wrong.

use std::str::FromStr;

use lockstep_core::Error;
use pep440_rs::Version;

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Base,
    Date,
    /// The per-day (or per-base) counter, zero-padded to `width` (0 = as is).
    Counter {
        width: usize,
    },
}

/// A parsed version template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionTemplate {
    source: String,
    pieces: Vec<Piece>,
}

/// What a rendered version is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot<'a> {
    pub base: &'a str,
    /// `YYYYMMDD`.
    pub date: u32,
    pub n: u64,
}

impl VersionTemplate {
    /// Parses and checks `text` (`key` names it in errors).
    pub fn parse(key: &str, text: &str) -> Result<VersionTemplate, Error> {
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(Error::usage(format!(
                "{key} = \"{}\" holds whitespace or a control character",
                text.escape_debug()
            ))
            .hint(
                "a version has none: remove it (a trailing newline in a multi-line string, say)",
            ));
        }
        let pieces = parse_pieces(key, text)?;
        let counters: Vec<&Piece> = pieces
            .iter()
            .filter(|p| matches!(p, Piece::Counter { .. }))
            .collect();
        if counters.len() != 1 {
            return Err(Error::usage(format!(
                "{key} = \"{text}\" needs exactly one {{n}} counter"
            ))
            .hint("e.g. \"{base}rc{date}{n:02}\": the counter makes each build's version unique"));
        }
        if !pieces.contains(&Piece::Base) {
            return Err(Error::usage(format!("{key} = \"{text}\" has no {{base}}"))
                .hint("versions must sort under the release they lead to: start with {base}"));
        }
        let has_date = pieces.contains(&Piece::Date);
        if has_date && matches!(counters[0], Piece::Counter { width: 0 }) {
            return Err(Error::usage(format!(
                "{key} = \"{text}\" has a date and an unpadded counter"
            ))
            .cause("the 10th build of a day would sort below the next day's first")
            .hint("pad the counter: {n:02} allows 99 builds a day, {n:03} 999"));
        }
        let template = VersionTemplate {
            source: text.to_string(),
            pieces,
        };
        template.check_examples(key)?;
        Ok(template)
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    fn width(&self) -> usize {
        self.pieces
            .iter()
            .find_map(|p| match p {
                Piece::Counter { width } => Some(*width),
                _ => None,
            })
            .unwrap_or(0)
    }

    /// The largest counter the template can render (`None`: unbounded).
    pub fn max_counter(&self) -> Option<u64> {
        match self.width() {
            0 => None,
            w => Some(10u64.saturating_pow(w.min(18) as u32) - 1),
        }
    }

    pub fn uses_date(&self) -> bool {
        self.pieces.contains(&Piece::Date)
    }

    /// The version text for `slot`; an error when the counter outgrows its width.
    pub fn render(&self, slot: Slot) -> Result<String, Error> {
        if self.max_counter().is_some_and(|max| slot.n > max) {
            return Err(Error::failed(format!(
                "the counter of \"{}\" is full: {} builds already",
                self.source,
                self.max_counter().unwrap_or_default()
            ))
            .hint(
                "widen the counter ({n:03}) in [release]; versions made so far keep their order",
            ));
        }
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Base => out.push_str(slot.base),
                Piece::Date => out.push_str(&format!("{:08}", slot.date)),
                Piece::Counter { width } => {
                    out.push_str(&format!("{:0width$}", slot.n, width = *width))
                }
            }
        }
        Ok(out)
    }

    /// The slot a version was rendered from, when it was (same base).
    pub fn match_version(&self, version: &str, base: &str) -> Option<(u32, u64)> {
        let mut rest = version;
        let mut date = 0u32;
        let mut n = None;
        for (i, piece) in self.pieces.iter().enumerate() {
            match piece {
                Piece::Text(t) => rest = rest.strip_prefix(t.as_str())?,
                Piece::Base => rest = rest.strip_prefix(base)?,
                Piece::Date => {
                    let digits = rest.get(..8)?;
                    date = digits
                        .parse()
                        .ok()
                        .filter(|_| digits.bytes().all(|b| b.is_ascii_digit()))?;
                    rest = &rest[8..];
                }
                Piece::Counter { width } => {
                    let take = if *width > 0 && self.pieces.get(i + 1).is_some() {
                        *width
                    } else {
                        rest.bytes().take_while(u8::is_ascii_digit).count()
                    };
                    let digits = rest.get(..take)?;
                    if digits.is_empty()
                        || !digits.bytes().all(|b| b.is_ascii_digit())
                        || (*width > 0 && digits.len() != *width)
                    {
                        return None;
                    }
                    n = Some(digits.parse().ok()?);
                    rest = &rest[take..];
                }
            }
        }
        (rest.is_empty()).then_some((date, n?))
    }

    fn check_examples(&self, key: &str) -> Result<(), Error> {
        let base = "3.14.0";
        let max = self.max_counter().unwrap_or(1000).min(1000);
        let slots: &[(u32, u64)] = if self.uses_date() {
            &[
                (20261125, 1),
                (20261125, 2),
                (20261125, max),
                (20261126, 1),
                (20270101, 1),
            ]
        } else {
            &[
                (20261125, 1),
                (20261125, 2),
                (20261125, 10),
                (20261125, max),
            ]
        };
        let mut previous: Option<(String, Version)> = None;
        for &(date, n) in slots {
            let text = self.render(Slot { base, date, n })?;
            let version = Version::from_str(&text).map_err(|e| {
                Error::usage(format!(
                    "{key} = \"{}\" does not give PEP 440 versions",
                    self.source
                ))
                .cause(format!(
                    "for base {base}, date {date}, n {n} it gives `{text}`: {e}"
                ))
                .hint("e.g. \"{base}rc{date}{n:02}\" or \"{base}.dev{n}\"")
            })?;
            if !version.local().is_empty() {
                return Err(Error::usage(format!(
                    "{key} = \"{}\" gives local versions (`{text}`)",
                    self.source
                ))
                .hint("drop the `+...` part: package indexes refuse local versions"));
            }
            if let Some((prev_text, prev)) = &previous {
                if version <= *prev {
                    return Err(Error::usage(format!(
                        "{key} = \"{}\" does not give increasing versions",
                        self.source
                    ))
                    .cause(format!(
                        "`{text}` (a later build) does not sort above `{prev_text}`"
                    ))
                    .hint("put {date} before {n}, and pad the counter"));
                }
            }
            if Version::from_str(base).is_ok_and(|b| version >= b && text != base) {
                return Err(Error::usage(format!(
                    "{key} = \"{}\" sorts snapshots at or above the release",
                    self.source
                ))
                .cause(format!("`{text}` >= `{base}`"))
                .hint("use a pre-release or dev segment after {base}, e.g. rc or .dev"));
            }
            previous = Some((text, version));
        }
        Ok(())
    }
}

fn parse_pieces(key: &str, text: &str) -> Result<Vec<Piece>, Error> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        match rest.find('{') {
            Some(0) => {
                let end = rest.find('}').ok_or_else(|| unknown(key, text, rest))?;
                let name = &rest[1..end];
                pieces.push(match name {
                    "base" => Piece::Base,
                    "date" => Piece::Date,
                    "n" => Piece::Counter { width: 0 },
                    _ => match name.strip_prefix("n:") {
                        Some(w)
                            if w.len() == 2
                                && w.starts_with('0')
                                && w[1..].parse::<usize>().is_ok_and(|d| (1..=9).contains(&d)) =>
                        {
                            Piece::Counter {
                                width: w[1..].parse().unwrap_or(2),
                            }
                        }
                        _ => return Err(unknown(key, text, &rest[..=end])),
                    },
                });
                rest = &rest[end + 1..];
            }
            Some(i) => {
                pieces.push(Piece::Text(rest[..i].to_string()));
                rest = &rest[i..];
            }
            None => {
                if rest.contains('}') {
                    return Err(unknown(key, text, rest));
                }
                pieces.push(Piece::Text(rest.to_string()));
                rest = "";
            }
        }
    }
    Ok(pieces)
}

fn unknown(key: &str, text: &str, at: &str) -> Error {
    Error::usage(format!("{key} = \"{text}\": cannot read `{at}`"))
        .hint("placeholders: {base}, {date}, {n} or {n:0W} (W = 1..9)")
}

/// The longest tag lockstep makes (git and hosts refuse very long refs).
const MAX_TAG: usize = 200;

/// A tag template: `{version}`, `{name}`, `{channel}`.
pub fn render_tag(
    template: &str,
    name: &str,
    version: &str,
    channel: &str,
) -> Result<String, Error> {
    render_tag_of("[release] tag", template, name, version, channel)
}

/// [`render_tag`] of the setting `key` (`[release] final-tag`), named in errors.
pub fn render_tag_of(
    key: &str,
    template: &str,
    name: &str,
    version: &str,
    channel: &str,
) -> Result<String, Error> {
    if template.starts_with("refs/") {
        return Err(Error::usage(format!(
            "{key} = \"{template}\" starts with refs/"
        ))
        .hint("write the tag's name only (e.g. \"{name}-{version}\"): lockstep puts it under refs/tags/"));
    }
    if !template.contains("{version}") {
        return Err(
            Error::usage(format!("{key} = \"{template}\" has no {{version}}"))
                .hint("tags must be unique per version, e.g. \"snapshot-{version}\""),
        );
    }
    let tag = template
        .replace("{version}", version)
        .replace("{name}", name)
        .replace("{channel}", channel);
    let ok = !tag.is_empty()
        && !tag.starts_with('-')
        && !tag.contains("..")
        && !tag.ends_with(".lock")
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '+'));
    if tag.len() > MAX_TAG {
        return Err(Error::usage(format!(
            "{key} = \"{template}\" gives a tag of {} bytes, more than {MAX_TAG}",
            tag.len()
        ))
        .hint("shorten [release] name or the tag template"));
    }
    if !ok || tag.contains('{') {
        return Err(Error::usage(format!("{key} = \"{template}\" gives `{tag}`, not a tag name git accepts"))
            .hint("use letters, digits, `.`, `_`, `-`, `/`, and the placeholders {version}, {name}, {channel}"));
    }
    Ok(tag)
}

/// The longest tag name taken (GitHub's limit on a ref's name).
const MAX_TAG_TAKEN: usize = 255;

/// `--tag` names a tag git could hold (`git check-ref-format
/// refs/tags/NAME`) and a page can show as it is: not empty, not an option,
/// no whitespace, control character or markup. Exit 2 before anything is
/// published.
pub fn check_tag_name(tag: &str) -> Result<(), Error> {
    let plain = !tag.is_empty()
        && tag.len() <= MAX_TAG_TAKEN
        && !tag.starts_with('-')
        && !tag.chars().any(|c| c.is_whitespace() || c.is_control())
        && !tag.contains(['<', '>', '"', '\'', '`', '$'])
        && lockstep_git::ref_name_ok(&format!("refs/tags/{tag}"));
    if plain {
        return Ok(());
    }
    Err(Error::usage(format!(
        "--tag `{}` is not a tag name",
        lockstep_core::error::printable_line(tag)
    ))
    .hint("pass the tag `release cut` printed (e.g. v1.2.0rc3); nothing was published"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(text: &str) -> Result<VersionTemplate, Error> {
        VersionTemplate::parse("[release] snapshot", text)
    }

    #[test]
    fn the_default_gives_unique_increasing_versions() {
        let t = t("{base}rc{date}{n:02}").unwrap();
        let v = |date, n| {
            t.render(Slot {
                base: "3.14.0",
                date,
                n,
            })
            .unwrap()
        };
        assert_eq!(v(20261125, 1), "3.14.0rc2026112501");
        assert_eq!(
            t.match_version("3.14.0rc2026112507", "3.14.0"),
            Some((20261125, 7))
        );
        assert_eq!(t.match_version("3.14.0rc20261125", "3.14.0"), None);
        assert_eq!(t.match_version("3.15.0rc2026112507", "3.14.0"), None);
        assert!(t
            .render(Slot {
                base: "3.14.0",
                date: 20261125,
                n: 100
            })
            .is_err());
    }

    #[test]
    fn bad_templates_are_refused_with_an_example() {
        let e = t("{base}rc{date}.{n}").unwrap_err().render();
        assert!(e.contains("unpadded counter"), "{e}");
        let e = t("{base}rc{date}").unwrap_err().render();
        assert!(e.contains("exactly one {n}"), "{e}");
        let e = t("{base}-nightly-{n:02}").unwrap_err().render();
        assert!(e.contains("PEP 440") || e.contains("sorts"), "{e}");
        let e = t("{base}+{n:02}").unwrap_err().render();
        assert!(e.contains("local versions"), "{e}");
        let e = t("{base}.post{n:02}").unwrap_err().render();
        assert!(e.contains("at or above the release"), "{e}");
        let e = t("{base}rc{n:02}{date}").unwrap_err().render();
        assert!(e.contains("increasing"), "{e}");
        let e = t("{base}rc{when}{n:02}").unwrap_err().render();
        assert!(e.contains("cannot read `{when}`"), "{e}");
        assert!(t("{base}.dev{n}").is_ok());
    }

    #[test]
    fn tags_are_checked() {
        assert_eq!(
            render_tag(
                "snapshot-{version}",
                "demo",
                "3.14.0rc2026112501",
                "snapshot"
            )
            .unwrap(),
            "snapshot-3.14.0rc2026112501"
        );
        assert!(render_tag("snap", "d", "1", "s").is_err());
        assert!(render_tag("{name} {version}", "d", "1", "s").is_err());
    }

    proptest! {
        #[test]
        fn any_template_text_never_panics(text in "[{}a-z:0-9.+-]{0,24}") {
            let _ = t(&text);
        }

        #[test]
        fn render_then_match_round_trips(date in 20000101u32..29991231, n in 1u64..99) {
            let t = t("{base}rc{date}{n:02}").unwrap();
            let v = t.render(Slot { base: "1.2.3", date, n }).unwrap();
            prop_assert_eq!(t.match_version(&v, "1.2.3"), Some((date, n)));
        }
    }
}
