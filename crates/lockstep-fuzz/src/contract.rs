//! What every fuzz target is and returns ([`Target`], [`Outcome`]), and how
//! a refusal's text is cut to its kind ([`kind_of`], [`kind_of_named`]):
//! below the targets' modules and the list of them.

/// A fuzz target: a name, the function under test and its seed inputs.
pub struct Target {
    pub name: &'static str,
    /// Runs one input.
    pub run: fn(&[u8]) -> Outcome,
    /// Words the mutator splices in (keywords, flags, delimiters).
    pub dictionary: &'static [&'static str],
    /// Each input starts a process or a server exchange that takes a tenth
    /// of a second or more: the contract test in `scripts/test` tries fewer
    /// of its mutations (`scripts/fuzz` as many as its time allows).
    pub heavy: bool,
}

/// What one input did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Accepted,
    /// Refused, with the first line of the message.
    Refused(String),
    /// Refused without naming the input (a contract failure).
    Unnamed(String),
}

/// The kind of a refusal: its first line up to the first quote, where the
/// quoted input begins (the runner tells outcomes apart by their text, and
/// the input's own quote characters would make every refusal look new).
pub(crate) fn kind_of(message: &str) -> String {
    let first = message.lines().next().unwrap_or("");
    let end = first.find(['`', '"', '\'']).unwrap_or(first.len());
    first[..end].to_string()
}

/// [`kind_of`] for refusals that name what the input made (paths, keys,
/// names, values from a hostile tree or answer): every word the input
/// holds (of 3 characters or more), and every word holding a `/`, a `.`,
/// a backslash, a character outside ASCII or a digit, becomes `P` (a run
/// of them one `P`), and only the first 16 words count, so that the runner
/// tells refusals apart by the product's own words, not by the names in
/// them.
pub(crate) fn kind_of_named(message: &str, input: &[u8]) -> String {
    let kind = kind_of(message);
    let mut words: Vec<&str> = Vec::new();
    for word in kind.split_whitespace() {
        let bare = word.trim_matches(|c: char| c.is_ascii_punctuation());
        let named = word.contains(['/', '.', '\\'])
            || !word.is_ascii()
            || word.contains(|c: char| c.is_ascii_digit())
            || (bare.len() >= 3 && input.windows(bare.len()).any(|w| w == bare.as_bytes()));
        let word = if named { "P" } else { word };
        if !(word == "P" && words.last() == Some(&"P")) {
            words.push(word);
        }
    }
    words.truncate(16);
    words.join(" ")
}
