//! The `ready-answer` target: what a hostile GitHub answers while
//! `integrate publish --ready` decides whether a pull request is ready and
//! marks it so, decoded by the same pure functions the command uses (no
//! server): a page of check runs (`checks::check_run_page`, then
//! `publish::readiness_of_checks`), the `Link` header that would name its
//! next page (`client::next_link`), and the GraphQL answer to
//! `markPullRequestReadyForReview` (`client::graphql_field`, then
//! `pulls::ready_answer`).
//!
//! The input is the three parts one after another, split at lines that are
//! exactly `--` (a part left out is empty). The contract, beyond no panic:
//! "ready" only from a whole list (no `rel="next"` link, no `total_count`
//! above the runs given) of completed runs that all passed (`success`,
//! `neutral`, `skipped`), read from the raw JSON; "marked ready" only from
//! an answer without `errors`, with `data` an object whose field says
//! `isDraft: false`; a `next` link is one the header holds between `<` and
//! `>`; a refusal names what it was reading.

use serde_json::Value;

use crate::contract::Outcome;

const CHECKS: &str = "the check runs of 0123456789ab in o/r";
const MARKING: &str = "marking pull request #1 of o/r ready for review";
const FIELD: &str = "markPullRequestReadyForReview";

/// Whether the raw page says every run completed and passed (and there is
/// at least one): what "ready" needs.
fn all_passed(page: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<Value>(page) else {
        return false;
    };
    let Some(runs) = value.get("check_runs").and_then(Value::as_array) else {
        return false;
    };
    !runs.is_empty()
        && runs.iter().all(|r| {
            r.get("status").and_then(Value::as_str) == Some("completed")
                && matches!(
                    r.get("conclusion").and_then(Value::as_str),
                    Some("success" | "neutral" | "skipped")
                )
        })
}

/// Whether the raw answer says, without errors, that the pull request is
/// no longer a draft.
fn says_ready(answer: &Value) -> bool {
    let no_errors = match answer.get("errors") {
        None | Some(Value::Null) => true,
        Some(Value::Array(errors)) => errors.is_empty(),
        Some(_) => false,
    };
    no_errors
        && answer
            .get("data")
            .and_then(|d| d.get(FIELD))
            .and_then(|f| f.get("pullRequest"))
            .and_then(|p| p.get("isDraft"))
            == Some(&Value::Bool(false))
}

fn refusal(text: &str, what: &str) -> Outcome {
    let first = crate::contract::kind_of(text);
    match text.contains(what) {
        true => Outcome::Refused(first),
        false => Outcome::Unnamed(first),
    }
}

pub fn ready_answer(input: &[u8]) -> Outcome {
    let mut parts = input
        .split(|b| *b == b'\n')
        .fold(vec![Vec::new()], |mut parts, line| {
            if line == b"--" {
                parts.push(Vec::new());
            } else {
                let last = parts.last_mut().expect("one part at least");
                if !last.is_empty() {
                    last.push(b'\n');
                }
                last.extend_from_slice(line);
            }
            parts
        })
        .into_iter();
    let page = parts.next().unwrap_or_default();
    let link = String::from_utf8_lossy(&parts.next().unwrap_or_default()).into_owned();
    let answer = parts.next().unwrap_or_default();
    let scrub = lockstep_http::Scrubber::new();
    let mut ready = false;
    let mut refused = None;

    let next = lockstep_github::client::next_link(&link);
    if let Some(next) = &next {
        if !link.contains(&format!("<{next}")) && !link.contains(next.as_str()) {
            return Outcome::Unnamed(format!("a next link {next:?} the header does not hold"));
        }
    }
    match lockstep_github::checks::check_run_page(&page, CHECKS, &scrub) {
        Ok(listed) => {
            let whole = next.is_none()
                && listed
                    .total
                    .is_none_or(|total| total <= listed.items.len() as u64);
            // A partial list is never decided on (Client::list reads on,
            // or fails); only a whole one is.
            if whole {
                match lockstep_integrate::publish::readiness_of_checks(&listed.items) {
                    lockstep_integrate::publish::Readiness::Ready => {
                        if !all_passed(&page) {
                            return Outcome::Unnamed(
                                "ready although a check run did not pass".into(),
                            );
                        }
                        ready = true;
                    }
                    other => {
                        if all_passed(&page) {
                            return Outcome::Unnamed(format!(
                                "every check run passed, yet {other:?}"
                            ));
                        }
                    }
                }
            }
        }
        Err(e) => refused = Some(refusal(&e.render(), CHECKS)),
    }
    match lockstep_github::client::parse::<Value>(&answer, MARKING, &scrub) {
        Ok(value) => {
            let raw = value.clone();
            let marked = lockstep_github::client::graphql_field(value, FIELD, MARKING)
                .and_then(|done| lockstep_github::pulls::ready_answer(&done, MARKING));
            match marked {
                Ok(()) if !says_ready(&raw) => {
                    return Outcome::Unnamed(format!("marked ready on {raw}"));
                }
                Ok(()) => ready = true,
                Err(e) => {
                    let r = refusal(&e.render(), MARKING);
                    if matches!(r, Outcome::Unnamed(_)) || refused.is_none() {
                        refused = Some(r);
                    }
                }
            }
        }
        Err(e) => {
            if refused.is_none() {
                refused = Some(refusal(&e.render(), MARKING));
            }
        }
    }
    match refused {
        Some(Outcome::Unnamed(m)) => Outcome::Unnamed(m),
        _ if ready => Outcome::Accepted,
        Some(r) => r,
        None => Outcome::Refused("not ready".into()),
    }
}
