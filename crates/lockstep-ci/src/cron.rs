//! GitHub Actions `on.schedule[].cron` expressions: parsing, validation and
//! the next run times.
//!
//! lockstep writes scheduled workflows, so a bad cron line must fail at
//! `lockstep ci generate` rather than on GitHub (which drops the schedule
//! silently) or in actionlint afterwards. [`Schedule::parse`] accepts what
//! actionlint 1.14 accepts: five whitespace-separated fields (minute 0-59,
//! hour 0-23, day-of-month 1-31, month 1-12 or `JAN`-`DEC`, day-of-week 0-6
//! or `SUN`-`SAT`, names in any case); each a comma list of `*`, `?`, `N`,
//! `A-B`, optionally followed by `/STEP`. Like actionlint it rejects runs
//! closer than five minutes apart; unlike actionlint it looks at every pair
//! of consecutive runs (actionlint only at the first two), rejects empty
//! list items, `+N`, `*-N` and `TZ=` prefixes, and reports expressions that
//! never run (`0 0 31 2 *`) as such.
//!
//! Days follow cron (and actionlint's parser): when both day fields are
//! restricted a day matches if either does; when one of them holds a bare
//! `*` or `?` (no step, or step 1) both must match. Times are UTC.

use std::fmt;

use jiff::Timestamp;

/// actionlint's (and GitHub's) shortest interval between runs.
const MIN_GAP_SECONDS: u64 = 300;
/// Months searched for the next matching day: more than the longest gap
/// between matching days (8 years, from 2096-02-29 to 2104-02-29).
const SEARCH_MONTHS: u32 = 12 * 10;
/// Years enumerated for the smallest gap: one 400-year Gregorian cycle
/// (which repeats weekdays) plus the longest gap.
const GAP_YEARS: std::ops::Range<i64> = 2000..2410;
const MINUTES_PER_DAY: i64 = 1440;
const MONTH_NAMES: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAY_NAMES: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// One of the five fields of a cron expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

impl Field {
    const ALL: [Field; 5] = [
        Field::Minute,
        Field::Hour,
        Field::DayOfMonth,
        Field::Month,
        Field::DayOfWeek,
    ];

    fn name(self) -> &'static str {
        match self {
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::DayOfMonth => "day-of-month",
            Field::Month => "month",
            Field::DayOfWeek => "day-of-week",
        }
    }

    /// The smallest and largest value.
    fn bounds(self) -> (u32, u32) {
        match self {
            Field::Minute => (0, 59),
            Field::Hour => (0, 23),
            Field::DayOfMonth => (1, 31),
            Field::Month => (1, 12),
            Field::DayOfWeek => (0, 6),
        }
    }

    fn range_text(self) -> &'static str {
        match self {
            Field::Minute => "0-59",
            Field::Hour => "0-23",
            Field::DayOfMonth => "1-31",
            Field::Month => "1-12 (JAN-DEC)",
            Field::DayOfWeek => "0-6 (SUN-SAT)",
        }
    }

    /// The value of a three-letter name (any case), if this field has names.
    fn named_value(self, text: &str) -> Option<u32> {
        let (names, first): (&[&str], u32) = match self {
            Field::Month => (&MONTH_NAMES, 1),
            Field::DayOfWeek => (&WEEKDAY_NAMES, 0),
            _ => return None,
        };
        let index = names.iter().position(|n| n.eq_ignore_ascii_case(text))?;
        u32::try_from(index).ok().map(|i| i + first)
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a cron expression was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CronError {
    /// Empty or only whitespace.
    Empty,
    /// `@daily`, `@hourly` ...: GitHub takes only the five fields.
    Descriptor { expr: String },
    /// Not exactly five fields.
    FieldCount { expr: String, found: usize },
    /// An empty item in a comma list (`1,,2`, `1,`).
    EmptyItem { field: Field, text: String },
    /// An item that is not `*`, `?`, `N`, `A-B` with an optional `/STEP`.
    Malformed {
        field: Field,
        item: String,
        why: String,
    },
    /// A value outside the field's range.
    OutOfRange { field: Field, item: String },
    /// A range whose start is after its end (`5-1`).
    Reversed { field: Field, item: String },
    /// `/0`.
    ZeroStep { field: Field, item: String },
    /// No date ever matches (`0 0 31 2 *`, February 31).
    NeverRuns { expr: String },
    /// Two consecutive runs are less than five minutes apart.
    TooFrequent { expr: String, seconds: u64 },
}

impl fmt::Display for CronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CronError::Empty => f.write_str("the cron expression is empty"),
            CronError::Descriptor { expr } => write!(
                f,
                "the cron expression `{expr}` is a descriptor; GitHub Actions takes only \
                 five fields (`0 0 * * *` for @daily)"
            ),
            CronError::FieldCount { expr, found } => write!(
                f,
                "the cron expression `{expr}` has {found} fields; GitHub Actions takes exactly 5 \
                 (minute hour day-of-month month day-of-week)"
            ),
            CronError::EmptyItem { field, text } => {
                write!(
                    f,
                    "the {field} field `{text}` has an empty item in its comma list"
                )
            }
            CronError::Malformed { field, item, why } => {
                write!(f, "the {field} field `{item}` {why}")
            }
            CronError::OutOfRange { field, item } => {
                let range = field.range_text();
                write!(f, "the {field} field `{item}` is out of range {range}")
            }
            CronError::Reversed { field, item } => {
                write!(
                    f,
                    "the {field} field `{item}` is a range whose start is after its end"
                )
            }
            CronError::ZeroStep { field, item } => {
                write!(
                    f,
                    "the {field} field `{item}` has step 0; a step must be at least 1"
                )
            }
            CronError::NeverRuns { expr } => write!(
                f,
                "the cron expression `{expr}` never runs: no date has that day of the month in \
                 those months"
            ),
            CronError::TooFrequent { expr, seconds } => write!(
                f,
                "the cron expression `{expr}` runs too frequently: two runs are {seconds} seconds \
                 apart; GitHub Actions' shortest interval is 5 minutes"
            ),
        }
    }
}

impl std::error::Error for CronError {}

impl From<CronError> for lockstep_core::Error {
    fn from(err: CronError) -> Self {
        lockstep_core::Error::usage(err.to_string()).hint(
            "a GitHub Actions cron is `minute hour day-of-month month day-of-week` in UTC, \
             at most once every 5 minutes",
        )
    }
}

/// The values one field allows (bit `v` for value `v`), and whether it holds
/// a bare `*` or `?` (which decides how the two day fields combine).
#[derive(Debug, Clone, Copy, Default)]
struct FieldSet {
    bits: u64,
    star: bool,
}

/// A parsed, validated cron expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// The run times of a matching day, in minutes after midnight, sorted.
    times: Vec<u16>,
    /// Bits 1..=31.
    days: u32,
    /// Bits 1..=12.
    months: u16,
    /// For each weekday of the 1st (0 = Sunday), the days of that month
    /// (bits 1..=31) whose weekday the day-of-week field allows.
    weekday_days: [u32; 7],
    /// Both day fields restricted: a day matches if either does.
    either_day: bool,
    min_gap: u64,
}

impl std::str::FromStr for Schedule {
    type Err = CronError;

    fn from_str(expr: &str) -> Result<Self, Self::Err> {
        Schedule::parse(expr)
    }
}

impl Schedule {
    /// Parses and validates `expr`: syntax, ranges, that it runs at all and
    /// at most once every five minutes.
    pub fn parse(expr: &str) -> Result<Schedule, CronError> {
        let sets = parse_fields(expr)?;
        let mut schedule = Schedule::from_sets(&sets);
        let Some(min_gap) = schedule.compute_min_gap() else {
            return Err(CronError::NeverRuns {
                expr: expr.trim().to_string(),
            });
        };
        if min_gap < MIN_GAP_SECONDS {
            return Err(CronError::TooFrequent {
                expr: expr.trim().to_string(),
                seconds: min_gap,
            });
        }
        schedule.min_gap = min_gap;
        Ok(schedule)
    }

    /// The first run strictly after `t`, or `None` past the end of
    /// [`Timestamp`]'s range.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        let second = t.as_second() - i64::from(t.subsec_nanosecond() < 0);
        let minute = second.div_euclid(60) + 1;
        let day = minute.div_euclid(MINUTES_PER_DAY);
        let minute_of_day = minute.rem_euclid(MINUTES_PER_DAY);
        if self.matches_day(day) {
            let later = self.times.iter().find(|&&m| i64::from(m) >= minute_of_day);
            if let Some(&m) = later {
                return timestamp(day, m);
            }
        }
        let next_day = self.next_day_from(day + 1)?;
        timestamp(next_day, *self.times.first()?)
    }

    /// The next `n` runs after `after`, fewer only past the end of
    /// [`Timestamp`]'s range.
    pub fn next_runs(&self, after: Timestamp, n: usize) -> Vec<Timestamp> {
        let mut runs = Vec::with_capacity(n.min(1024));
        let mut t = after;
        while runs.len() < n {
            let Some(next) = self.next_after(t) else {
                break;
            };
            runs.push(next);
            t = next;
        }
        runs
    }

    /// The smallest gap between two consecutive runs, in seconds.
    pub fn min_gap_seconds(&self) -> u64 {
        self.min_gap
    }

    fn from_sets(sets: &[FieldSet; 5]) -> Schedule {
        let [minute, hour, dom, month, dow] = *sets;
        let times = (0..24u16)
            .filter(|h| hour.bits & (1 << h) != 0)
            .flat_map(|h| {
                (0..60u16)
                    .filter(|m| minute.bits & (1 << m) != 0)
                    .map(move |m| h * 60 + m)
            })
            .collect();
        let weekdays = dow.bits & 0x7f;
        Schedule {
            times,
            days: (dom.bits & 0xffff_fffe) as u32,
            months: (month.bits & 0x1ffe) as u16,
            weekday_days: std::array::from_fn(|first| weekday_days(weekdays, first as u32)),
            either_day: !dom.star && !dow.star,
            min_gap: 0,
        }
    }

    /// The days of `month` (bits 1..=31) on which the schedule runs.
    fn day_mask(&self, year: i64, month: u32) -> u32 {
        if self.months & (1 << month) == 0 {
            return 0;
        }
        let first = days_from_civil(year, month, 1);
        let by_weekday = self.weekday_days[weekday(first)];
        let matching = if self.either_day {
            self.days | by_weekday
        } else {
            self.days & by_weekday
        };
        matching & month_mask(year, month)
    }

    fn matches_day(&self, day: i64) -> bool {
        let (year, month, d) = civil_from_days(day);
        self.day_mask(year, month) & (1 << d) != 0
    }

    /// The first matching day on or after `day`, searching [`SEARCH_MONTHS`].
    fn next_day_from(&self, day: i64) -> Option<i64> {
        let (mut year, mut month, d) = civil_from_days(day);
        let mut mask = self.day_mask(year, month) & !((1u32 << d) - 1);
        for _ in 0..SEARCH_MONTHS {
            if mask != 0 {
                return Some(
                    days_from_civil(year, month, 1) - 1 + i64::from(mask.trailing_zeros()),
                );
            }
            (year, month) = if month == 12 {
                (year + 1, 1)
            } else {
                (year, month + 1)
            };
            mask = self.day_mask(year, month);
        }
        None
    }

    /// The smallest gap between consecutive runs in seconds; `None` when no
    /// day ever matches.
    fn compute_min_gap(&self) -> Option<u64> {
        let day_gap = self.min_day_gap()?;
        let first = i64::from(*self.times.first()?);
        let last = i64::from(*self.times.last()?);
        let across_days = day_gap * MINUTES_PER_DAY - (last - first);
        let within_day = self
            .times
            .windows(2)
            .map(|w| i64::from(w[1] - w[0]))
            .min()
            .unwrap_or(i64::MAX);
        let minutes = across_days.min(within_day);
        u64::try_from(minutes).ok().map(|m| m * 60)
    }

    /// The smallest number of days between two consecutive matching days
    /// over [`GAP_YEARS`]; `None` when no day matches.
    fn min_day_gap(&self) -> Option<i64> {
        let mut last: Option<i64> = None;
        let mut best: Option<i64> = None;
        for year in GAP_YEARS {
            for month in 1..=12 {
                let mut mask = self.day_mask(year, month);
                let before_first = days_from_civil(year, month, 1) - 1;
                while mask != 0 {
                    let day = before_first + i64::from(mask.trailing_zeros());
                    mask &= mask - 1;
                    if let Some(previous) = last {
                        let gap = day - previous;
                        best = Some(best.map_or(gap, |b| b.min(gap)));
                        if gap == 1 {
                            return best;
                        }
                    }
                    last = Some(day);
                }
            }
        }
        let window = (GAP_YEARS.end - GAP_YEARS.start) * 366;
        last.map(|_| best.unwrap_or(window))
    }
}

/// Splits `expr` into its five fields and parses each.
fn parse_fields(expr: &str) -> Result<[FieldSet; 5], CronError> {
    let trimmed = expr.trim();
    if trimmed.is_empty() {
        return Err(CronError::Empty);
    }
    if trimmed.starts_with('@') {
        return Err(CronError::Descriptor {
            expr: trimmed.to_string(),
        });
    }
    let fields: Vec<&str> = trimmed.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(CronError::FieldCount {
            expr: trimmed.to_string(),
            found: fields.len(),
        });
    }
    let mut sets = [FieldSet::default(); 5];
    for ((set, field), text) in sets.iter_mut().zip(Field::ALL).zip(fields) {
        *set = parse_field(field, text)?;
    }
    Ok(sets)
}

/// One field: a comma list of items.
fn parse_field(field: Field, text: &str) -> Result<FieldSet, CronError> {
    let mut set = FieldSet::default();
    for item in text.split(',') {
        if item.is_empty() {
            return Err(CronError::EmptyItem {
                field,
                text: text.to_string(),
            });
        }
        let parsed = parse_item(field, item)?;
        set.bits |= parsed.bits;
        set.star |= parsed.star;
    }
    Ok(set)
}

/// One item: `*`, `?`, `N` or `A-B`, with an optional `/STEP`.
fn parse_item(field: Field, item: &str) -> Result<FieldSet, CronError> {
    let (base, step) = match item.split_once('/') {
        None => (item, None),
        Some((_, step)) if step.contains('/') => {
            return Err(malformed(field, item, "has more than one `/`".to_string()))
        }
        Some((base, step)) => (base, Some(parse_step(field, item, step)?)),
    };
    let (low, high, star) = parse_base(field, item, base, step.is_some())?;
    let step = step.unwrap_or(1);
    let mut bits = 0u64;
    let mut value = low;
    while value <= high {
        bits |= 1 << value;
        value = value.saturating_add(step);
    }
    Ok(FieldSet {
        bits,
        star: star && step == 1,
    })
}

/// The step after `/`: at least 1 (a step beyond the range is allowed and
/// saturates, as actionlint allows any step up to `i64::MAX`).
fn parse_step(field: Field, item: &str, step: &str) -> Result<u32, CronError> {
    if step.is_empty() {
        return Err(malformed(
            field,
            item,
            "is missing a step after `/`".to_string(),
        ));
    }
    if !step.bytes().all(|b| b.is_ascii_digit()) {
        let why = format!("has step `{step}`, which is not a number");
        return Err(malformed(field, item, why));
    }
    match step.parse::<i64>() {
        Ok(0) => Err(CronError::ZeroStep {
            field,
            item: item.to_string(),
        }),
        Ok(n) => Ok(u32::try_from(n).unwrap_or(u32::MAX)),
        Err(_) => Err(malformed(field, item, "has a step too large".to_string())),
    }
}

/// The range before `/`: `(low, high, is a bare * or ?)`. A single value
/// with a step runs to the field's maximum.
fn parse_base(
    field: Field,
    item: &str,
    base: &str,
    stepped: bool,
) -> Result<(u32, u32, bool), CronError> {
    let (min, max) = field.bounds();
    if base == "*" || base == "?" {
        return Ok((min, max, true));
    }
    let (low, high) = match base.split_once('-') {
        Some((_, high)) if high.contains('-') => {
            return Err(malformed(field, item, "has more than one `-`".to_string()))
        }
        Some((low, high)) => (value(field, item, low)?, value(field, item, high)?),
        None => {
            let low = value(field, item, base)?;
            (low, if stepped { max } else { low })
        }
    };
    let item = item.to_string();
    if low < min || high > max {
        return Err(CronError::OutOfRange { field, item });
    }
    if low > high {
        return Err(CronError::Reversed { field, item });
    }
    Ok((low, high, false))
}

/// A number (ASCII digits) or a name; too large a number is out of range.
fn value(field: Field, item: &str, text: &str) -> Result<u32, CronError> {
    if text.is_empty() {
        return Err(malformed(field, item, "is missing a number".to_string()));
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse::<u32>().map_err(|_| CronError::OutOfRange {
            field,
            item: item.to_string(),
        });
    }
    if let Some(v) = field.named_value(text) {
        return Ok(v);
    }
    Err(malformed(field, item, not_a_value(field, text)))
}

/// Why `text` is not a value of `field`.
fn not_a_value(field: Field, text: &str) -> String {
    let core = text.trim_start_matches(|c: char| c.is_ascii_digit());
    let extension = matches!(core.to_ascii_uppercase().as_str(), "L" | "W" | "LW");
    if extension || text.contains('#') {
        return "uses `L`, `W` or `#`, which GitHub Actions does not support".to_string();
    }
    let names = match field {
        Field::Month => " or a month name (JAN-DEC)",
        Field::DayOfWeek => " or a weekday name (SUN-SAT)",
        _ => "",
    };
    format!("has `{text}`, which is not a number{names}")
}

fn malformed(field: Field, item: &str, why: String) -> CronError {
    CronError::Malformed {
        field,
        item: item.to_string(),
        why,
    }
}

/// Days 1..=31 of a month starting on weekday `first` (0 = Sunday) whose
/// weekday is in `weekdays` (bit 0 = Sunday).
fn weekday_days(weekdays: u64, first: u32) -> u32 {
    (1..=31u32)
        .filter(|d| weekdays & (1 << ((first + d - 1) % 7)) != 0)
        .fold(0, |mask, d| mask | (1 << d))
}

/// Bits 1..=n for the n days of the month.
fn month_mask(year: i64, month: u32) -> u32 {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    ((1u64 << (days + 1)) - 2) as u32
}

/// Midnight UTC of `day` (days since 1970-01-01) plus `minute`.
fn timestamp(day: i64, minute: u16) -> Option<Timestamp> {
    let second = day
        .checked_mul(86_400)?
        .checked_add(i64::from(minute) * 60)?;
    Timestamp::from_second(second).ok()
}

/// 0 = Sunday (1970-01-01 was a Thursday).
fn weekday(day: i64) -> usize {
    (day + 4).rem_euclid(7) as usize
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let (month, day) = (i64::from(month), i64::from(day));
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let shifted_month = if month > 2 { month - 3 } else { month + 9 };
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of `days` since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ts(text: &str) -> Timestamp {
        text.parse().expect("test timestamp")
    }

    /// Expressions and whether we accept them. Every verdict matches
    /// actionlint 1.14 except the ones marked "stricter".
    const TABLE: &[(&str, bool)] = &[
        ("0 5 * * *", true),
        ("30 2 * * 1-5", true),
        ("*/5 * * * *", true),
        ("0 0 * * MON-FRI", true),
        ("0 0 1 JAN,JUL *", true),
        ("0 0 * * sun", true),
        ("0 0 1 jan *", true),
        ("0 0 * * sAt", true),
        ("0 0 1 Jan-Mar *", true),
        ("0 0 * 1-DEC *", true),
        ("0 0 ? * *", true),
        ("0 0 * * ?", true),
        ("5/10 * * * *", true),
        ("0-59/5 * * * *", true),
        ("*/60 * * * *", true),
        ("0/100 * * * *", true),
        ("?/5 * * * *", true),
        ("5-5/1 * * * *", true),
        ("0 0 * * SUN/2", true),
        ("0 0 * JAN/2 *", true),
        ("0 0 1-31/2 * *", true),
        ("0 0 * * 6,0", true),
        ("0 0 29 2 *", true),
        ("0 0 1,15 * 1", true),
        ("00 00 01 01 00", true),
        ("005 * * * *", true),
        (" 0 0 * * * ", true),
        ("0\t0  * * *", true),
        ("*-5 * * * *", false),
        ("0,57 * * * *", false),
        ("* * * * *", false),
        ("? ? ? ? ?", false),
        ("*/1 * * * *", false),
        ("*/4 * * * *", false),
        ("1,2-9/3 * * * *", false),
        ("1-5/2 * * * *", false),
        ("0 0 * * * *", false),
        ("@daily", false),
        ("0 0 L * *", false),
        ("0 0 1W * *", false),
        ("0 0 * * 5L", false),
        ("0 0 * * 1#2", false),
        ("0 0 * * 7", false),
        ("0 0 * * 0-7", false),
        ("0 0 * * MON-7", false),
        ("0 0 * * 6-0", false),
        ("0 0 * * Monday", false),
        ("0 0 * * JAN", false),
        ("0 0 * MON *", false),
        ("JAN * * * *", false),
        ("61 * * * *", false),
        ("0 24 * * *", false),
        ("0 0 0 * *", false),
        ("0 0 32 * *", false),
        ("0 0 * 0 *", false),
        ("0 0 * 13 *", false),
        ("0 0 * DEC-JAN *", false),
        ("*/0 * * * *", false),
        ("1-5/0 * * * *", false),
        ("*/-1 * * * *", false),
        ("*/1.5 * * * *", false),
        ("", false),
        (" ", false),
        (",", false),
        ("5-1 * * * *", false),
        ("-5 * * * *", false),
        ("5- * * * *", false),
        ("*/ * * * *", false),
        ("/5 * * * *", false),
        ("5/ * * * *", false),
        ("1-2-3 * * * *", false),
        ("5/2/3 * * * *", false),
        ("*/5-10 * * * *", false),
        ("0x5 * * * *", false),
        ("99999999999999999999 * * * *", false),
        ("0 0 31 2 *", false),
        ("0 0 30 2 *", false),
        // stricter than actionlint, which accepts these:
        ("0,58 0,23 * * *", false),
        ("0,,5 * * * *", false),
        ("0, * * * *", false),
        ("+5 * * * *", false),
        ("0 */+6 * * *", false),
        ("0 0 *-5 * *", false),
        ("TZ=UTC 0 0 * * *", false),
    ];

    #[test]
    fn accepts_and_rejects_like_actionlint() {
        for &(expr, ok) in TABLE {
            let got = Schedule::parse(expr);
            assert_eq!(got.is_ok(), ok, "{expr:?}: {got:?}");
        }
    }

    #[test]
    fn errors_name_field_and_reason() {
        let message = |e: &str| Schedule::parse(e).map(|_| ()).unwrap_err().to_string();
        assert_eq!(
            message("0 0 * * 7"),
            "the day-of-week field `7` is out of range 0-6 (SUN-SAT)"
        );
        assert!(message("0,57 * * * *").contains("180 seconds"));
        assert!(message("* * * * *").contains("60 seconds"));
        assert!(message("*/4 * * * *").contains("240 seconds"));
        assert!(message("1,2-9/3 * * * *").contains("60 seconds"));
        assert!(message("0 0 31 2 *").contains("never runs"));
        assert!(message("0 0 * * 1#2").contains("`#`"));
        assert!(message("*/0 * * * *").contains("step 0"));
        assert!(message("5-1 * * * *").contains("start is after its end"));
        assert!(message("0 0 * * * *").contains("6 fields"));
        assert!(message("1,,2 * * * *").contains("empty item"));
        assert!(matches!(
            Schedule::parse("@daily"),
            Err(CronError::Descriptor { .. })
        ));
    }

    #[test]
    fn min_gaps() {
        let gap = |e: &str| Schedule::parse(e).map(|s| s.min_gap_seconds());
        assert_eq!(gap("*/5 * * * *"), Ok(300));
        assert_eq!(gap("0 5 * * *"), Ok(86_400));
        assert_eq!(gap("0,30 23 * * *"), Ok(1800));
        assert_eq!(gap("0 0 * * MON-FRI"), Ok(86_400));
        assert_eq!(gap("0 0 * * 1"), Ok(7 * 86_400));
        assert_eq!(gap("0 0 29 2 *"), Ok(1461 * 86_400));
        // Across midnight: 23:55 to 00:00.
        assert_eq!(gap("0,55 0,23 * * *"), Ok(300));
        assert!(matches!(
            gap("0,56 0,23 * * *"),
            Err(CronError::TooFrequent { seconds: 240, .. })
        ));
    }

    #[test]
    fn next_after_daily() {
        let s = Schedule::parse("0 5 * * *").expect("valid");
        let next = s.next_after(ts("2026-11-26T20:00:00Z"));
        assert_eq!(next, Some(ts("2026-11-27T05:00:00Z")));
        let exact = s.next_after(ts("2026-11-27T05:00:00Z"));
        assert_eq!(exact, Some(ts("2026-11-28T05:00:00Z")));
        let just_before = s.next_after(ts("2026-11-27T04:59:59.999Z"));
        assert_eq!(just_before, Some(ts("2026-11-27T05:00:00Z")));
    }

    #[test]
    fn next_after_day_fields_or_when_both_restricted() {
        // The 13th or any Friday.
        let s = Schedule::parse("0 0 13 * 5").expect("valid");
        let runs = s.next_runs(ts("2026-11-26T00:00:00Z"), 4);
        let want = ["2026-11-27", "2026-12-04", "2026-12-11", "2026-12-13"];
        let want: Vec<Timestamp> = want.iter().map(|d| ts(&format!("{d}T00:00Z"))).collect();
        assert_eq!(runs, want);
        // Only the 13th when day-of-week is `*`; only Fridays when day-of-month is.
        let thirteenth = Schedule::parse("0 0 13 * *").expect("valid");
        let next = thirteenth.next_after(ts("2026-11-26T00:00:00Z"));
        assert_eq!(next, Some(ts("2026-12-13T00:00:00Z")));
        let fridays = Schedule::parse("0 0 ? * FRI").expect("valid");
        let next = fridays.next_runs(ts("2026-11-27T00:00:00Z"), 1);
        assert_eq!(next, vec![ts("2026-12-04T00:00:00Z")]);
    }

    #[test]
    fn next_after_leap_day() {
        let s = Schedule::parse("0 0 29 2 *").expect("valid");
        let next = s.next_after(ts("2025-03-01T00:00:00Z"));
        assert_eq!(next, Some(ts("2028-02-29T00:00:00Z")));
        // 2100 is not a leap year.
        let next = s.next_after(ts("2096-03-01T00:00:00Z"));
        assert_eq!(next, Some(ts("2104-02-29T00:00:00Z")));
    }

    #[test]
    fn next_after_at_the_ends_of_time() {
        let s = Schedule::parse("0 0 29 2 *").expect("valid");
        assert_eq!(s.next_after(Timestamp::MAX), None);
        assert!(s
            .next_after(Timestamp::MIN)
            .is_some_and(|t| t > Timestamp::MIN));
        assert!(s.next_runs(Timestamp::MAX, usize::MAX).is_empty());
    }

    #[test]
    fn calendar_round_trips() {
        for day in -800_000..800_000i64 {
            let (y, m, d) = civil_from_days(day);
            assert_eq!(days_from_civil(y, m, d), day);
        }
    }

    /// Whether `t` is a run, by the definition, using jiff's calendar.
    fn naive_matches(s: &Schedule, t: Timestamp) -> bool {
        let z = t.to_zoned(jiff::tz::TimeZone::UTC);
        let minute =
            u16::try_from(z.hour()).unwrap_or(0) * 60 + u16::try_from(z.minute()).unwrap_or(0);
        let weekday = z.weekday().to_sunday_zero_offset();
        let dom = s.days & (1 << z.day()) != 0;
        let dow = s.weekday_days[0] & (1 << (weekday + 1)) != 0;
        let day = if s.either_day { dom || dow } else { dom && dow };
        s.times.contains(&minute) && s.months & (1 << z.month()) != 0 && day
    }

    fn item(field: Field) -> impl Strategy<Value = String> {
        let (min, max) = field.bounds();
        let value = min..=max;
        prop_oneof![
            Just("*".to_string()),
            Just("?".to_string()),
            value.clone().prop_map(|v| v.to_string()),
            (value.clone(), value.clone()).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
            (value.clone(), 1..20u32).prop_map(|(v, s)| format!("{v}/{s}")),
            (1..20u32).prop_map(|s| format!("*/{s}")),
            (value.clone(), value, 1..20u32).prop_map(|(a, b, s)| format!(
                "{}-{}/{s}",
                a.min(b),
                a.max(b)
            )),
        ]
    }

    fn expression() -> impl Strategy<Value = String> {
        let field = |f| proptest::collection::vec(item(f), 1..3).prop_map(|v| v.join(","));
        (
            field(Field::Minute),
            field(Field::Hour),
            field(Field::DayOfMonth),
            field(Field::Month),
            field(Field::DayOfWeek),
        )
            .prop_map(|(a, b, c, d, e)| format!("{a} {b} {c} {d} {e}"))
    }

    fn instant() -> impl Strategy<Value = Timestamp> {
        (-2_000_000_000..5_000_000_000i64, 0..1_000_000_000i32)
            .prop_map(|(s, n)| Timestamp::new(s, n).unwrap_or(Timestamp::UNIX_EPOCH))
    }

    proptest! {
        #[test]
        fn parse_never_panics(text in "\\PC{0,60}") {
            let _ = Schedule::parse(&text);
        }

        #[test]
        fn parse_never_panics_on_cron_alphabet(text in "[0-9*?,/ LW#@A-Za-z-]{0,60}") {
            let _ = Schedule::parse(&text);
        }

        #[test]
        fn runs_are_after_and_apart(expr in expression(), t in instant()) {
            let Ok(s) = Schedule::parse(&expr) else { return Ok(()) };
            let runs = s.next_runs(t, 8);
            prop_assert_eq!(runs.len(), 8);
            prop_assert!(runs[0] > t);
            for pair in runs.windows(2) {
                let gap = pair[1].as_second() - pair[0].as_second();
                prop_assert!(gap >= 300 && gap.unsigned_abs() >= s.min_gap_seconds());
            }
            for run in &runs {
                prop_assert!(naive_matches(&s, *run));
            }
        }

        #[test]
        fn next_after_skips_no_run(expr in expression(), t in instant()) {
            let Ok(s) = Schedule::parse(&expr) else { return Ok(()) };
            let next = s.next_after(t).map(|n| n.as_second());
            let start = t.as_second() - i64::from(t.subsec_nanosecond() < 0);
            let first_minute = (start.div_euclid(60) + 1) * 60;
            let naive = (0..3 * 1440)
                .map(|i| first_minute + i * 60)
                .find(|&sec| Timestamp::from_second(sec).is_ok_and(|x| naive_matches(&s, x)));
            if let Some(naive) = naive {
                prop_assert_eq!(next, Some(naive));
            }
        }
    }
}
