//! The charts, written as SVG by hand: a line chart (one mark per point,
//! an optional noise band and reference line) and the outcome heatmap.
//!
//! Every chart is `role="img"` with an `aria-label`, a `<title>` and a
//! `<desc>`, labelled axes, and one element carrying `data-point` per data
//! point (with a `<title>` child for the hover text), so the browser tests
//! count marks against the history. Colours come from the page's CSS
//! classes, which follow `prefers-color-scheme`.
//!
//! A chart must read right from a project's first run, when there is one
//! point or two: its y axis follows what the values are ([`Scale`]: a time
//! never below zero, a count in whole numbers from 0), a reference of one
//! point is drawn across the plot and a noise band of one point with a
//! width (a line or polygon over one point draws nothing), and a lone
//! point has one x label, under it.

use std::fmt::Write as _;

use lockstep_core::words::count;
use lockstep_history::analysis::Heatmap;

use crate::html::{esc, esc_short, num, short};

/// One point of a line chart.
pub struct Point {
    /// Its value (the y coordinate).
    pub value: f64,
    /// The hover text (plain, escaped here).
    pub title: String,
    /// Extra CSS class and `data-verdict` (e.g. `regression`); empty for
    /// none.
    pub class: &'static str,
    /// The noise band around this point's expectation: (low, high).
    pub band: Option<(f64, f64)>,
    /// A reference value (a golden) at this point.
    pub reference: Option<f64>,
}

/// What the values of a line chart are, which decides its y axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Any number: the axis spans the data with a margin.
    Any,
    /// Never below zero (a time, a rate): the axis spans the data with a
    /// margin but stops at 0, so no tick reads a negative time.
    NonNegative,
    /// Whole numbers (advances, smoke runs): the axis starts at 0 and its
    /// ticks are integers, so a count of 1 never reads 0.90 to 1.10.
    Count,
}

/// A line chart over points in order (oldest left).
pub struct LineChart<'a> {
    pub title: &'a str,
    pub desc: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    /// Labels of the first and last points (commits); with one point only
    /// `x_first` is shown, under it.
    pub x_first: &'a str,
    pub x_last: &'a str,
    pub scale: Scale,
    pub points: &'a [Point],
}

const W: f64 = 560.0;
const H: f64 = 200.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 44.0;
/// Half the width of the noise band drawn around a lone banded point (a
/// polygon over one point would have no width at all).
const LONE_BAND_HALF: f64 = 14.0;

fn f(x: f64) -> String {
    format!("{x:.1}")
}

/// A y axis: the values at its bottom and top, and its ticks (value and
/// label).
#[derive(Debug, Clone, PartialEq)]
struct Axis {
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
}

impl Axis {
    /// The axis for values between `lo` and `hi` (finite, `lo <= hi`).
    fn new(lo: f64, hi: f64, scale: Scale) -> Axis {
        match scale {
            // Counts beyond what a float holds exactly read as numbers.
            Scale::Count if lo > -1e15 && hi < 1e15 => Axis::counts(lo, hi),
            _ => {
                // A margin, so marks do not sit on the frame; a flat series
                // gets one from its size.
                let pad = if hi > lo {
                    (hi - lo) * 0.08
                } else {
                    lo.abs().max(1.0) * 0.1
                };
                let mut bottom = lo - pad;
                if scale == Scale::NonNegative && lo >= 0.0 {
                    bottom = bottom.max(0.0);
                }
                let top = hi + pad;
                let ticks = [0.0, 0.5, 1.0]
                    .iter()
                    .map(|t| {
                        let v = bottom + (top - bottom) * t;
                        (v, tick_label(v))
                    })
                    .collect();
                Axis {
                    lo: bottom,
                    hi: top,
                    ticks,
                }
            }
        }
    }

    /// From 0 (or the lowest count, if one is negative) to a whole top,
    /// ticked every 1, 2, 5, 10, 20... so that at most 5 ticks show.
    fn counts(lo: f64, hi: f64) -> Axis {
        let bottom = lo.floor().min(0.0);
        let span = (hi.ceil() - bottom).max(1.0);
        let step = count_step(span);
        let top = bottom + (span / step).ceil() * step;
        let ticks = (0..)
            .map(|i| bottom + step * i as f64)
            .take_while(|v| *v <= top + step / 2.0)
            .map(|v| (v, format!("{v:.0}")))
            .collect();
        Axis {
            lo: bottom,
            // A margin above the top tick: marks there stay off the frame.
            hi: top + (top - bottom) * 0.08,
            ticks,
        }
    }
}

/// The smallest of 1, 2, 5, 10, 20, 50... that ticks `span` at most 4
/// times.
fn count_step(span: f64) -> f64 {
    let mut decade = 1.0;
    loop {
        for m in [1.0, 2.0, 5.0] {
            let step = m * decade;
            if (span / step).ceil() <= 4.0 {
                return step;
            }
        }
        decade *= 10.0;
    }
}

/// A tick's label: `0` for zero (not `0.000`), else a few digits.
fn tick_label(v: f64) -> String {
    if v.abs() < 1e-12 {
        "0".into()
    } else {
        num(v)
    }
}

impl LineChart<'_> {
    /// The lowest and highest finite values drawn (marks, references and
    /// bands); `(0, 1)` when there are none.
    fn extent(&self) -> (f64, f64) {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for p in self.points {
            for v in [
                Some(p.value),
                p.reference,
                p.band.map(|b| b.0),
                p.band.map(|b| b.1),
            ]
            .into_iter()
            .flatten()
            .filter(|v| v.is_finite())
            {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        if lo.is_finite() && hi.is_finite() {
            (lo, hi)
        } else {
            (0.0, 1.0)
        }
    }

    pub fn render(&self) -> String {
        let (lo, hi) = self.extent();
        let axis = Axis::new(lo, hi, self.scale);
        let (lo, hi) = (axis.lo, axis.hi);
        let plot_w = W - LEFT - RIGHT;
        let plot_h = H - TOP - BOTTOM;
        let n = self.points.len();
        let x = |i: usize| {
            if n <= 1 {
                LEFT + plot_w / 2.0
            } else {
                LEFT + plot_w * i as f64 / (n - 1) as f64
            }
        };
        let y = |v: f64| {
            let v = if v.is_finite() { v } else { lo };
            TOP + plot_h * (1.0 - (v - lo) / (hi - lo))
        };
        let label = format!("{}: {}", self.title, self.desc);
        let mut s = String::with_capacity(256 + n * 160);
        let _ = write!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\" aria-label=\"{}\"><title>{}</title><desc>{}</desc>",
            esc(&label),
            esc(self.title),
            esc(self.desc)
        );
        // Grid and y ticks.
        for (v, text) in &axis.ticks {
            let yy = y(*v);
            let _ = write!(
                s,
                "<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/><text class=\"ytick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                f(LEFT),
                f(W - RIGHT),
                f(yy),
                f(yy),
                f(LEFT - 4.0),
                f(yy + 4.0),
                esc(text)
            );
        }
        let _ = write!(
            s,
            "<line class=\"axis\" x1=\"{l}\" x2=\"{l}\" y1=\"{t}\" y2=\"{b}\"/><line class=\"axis\" x1=\"{l}\" x2=\"{r}\" y1=\"{b}\" y2=\"{b}\"/>",
            l = f(LEFT),
            r = f(W - RIGHT),
            t = f(TOP),
            b = f(H - BOTTOM)
        );
        // Axis labels.
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text><text transform=\"translate(12 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            f(LEFT + plot_w / 2.0),
            f(H - 6.0),
            esc(self.x_label),
            f(TOP + plot_h / 2.0),
            esc(self.y_label)
        );
        self.x_ticks(&mut s);
        self.band(&mut s, &x, &y);
        self.reference(&mut s, &x, &y);
        if n > 1 {
            s.push_str("<polyline class=\"line\" points=\"");
            for (i, p) in self.points.iter().enumerate() {
                let _ = write!(s, "{},{} ", f(x(i)), f(y(p.value)));
            }
            s.push_str("\"/>");
        }
        for (i, p) in self.points.iter().enumerate() {
            let (class, r) = if p.class.is_empty() {
                (String::from("pt"), 3.0)
            } else {
                (format!("pt {}", p.class), 4.5)
            };
            let _ = write!(
                s,
                "<circle class=\"{class}\" cx=\"{}\" cy=\"{}\" r=\"{r}\" data-point=\"{i}\"",
                f(x(i)),
                f(y(p.value))
            );
            if !p.class.is_empty() {
                let _ = write!(s, " data-verdict=\"{}\"", p.class);
            }
            let _ = write!(s, "><title>{}</title></circle>", esc(&p.title));
        }
        s.push_str("</svg>");
        s
    }

    /// The x labels: the first point's at the left and the last one's at
    /// the right, or, for a lone point, its label under it (the same
    /// label at both ends would read as two runs).
    fn x_ticks(&self, s: &mut String) {
        let y = f(H - BOTTOM + 14.0);
        if self.points.len() <= 1 {
            let _ = write!(
                s,
                "<text class=\"xtick\" x=\"{}\" y=\"{y}\" text-anchor=\"middle\">{}</text>",
                f(LEFT + (W - LEFT - RIGHT) / 2.0),
                esc(self.x_first)
            );
            return;
        }
        let _ = write!(
            s,
            "<text class=\"xtick\" x=\"{}\" y=\"{y}\" text-anchor=\"start\">{}</text><text class=\"xtick\" x=\"{}\" y=\"{y}\" text-anchor=\"end\">{}</text>",
            f(LEFT),
            esc(self.x_first),
            f(W - RIGHT),
            esc(self.x_last)
        );
    }

    /// The noise band: one polygon over the points that have one. A lone
    /// banded point (the second run of a kernel, the first one compared)
    /// gets a band of a visible width around it, kept inside the plot.
    fn band(&self, s: &mut String, x: &dyn Fn(usize) -> f64, y: &dyn Fn(f64) -> f64) {
        let banded: Vec<(usize, (f64, f64))> = self
            .points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.band.map(|b| (i, b)))
            .collect();
        let corners: Vec<(f64, f64, f64)> = match banded.as_slice() {
            [] => return,
            [(i, (l, h))] => {
                let left = (x(*i) - LONE_BAND_HALF).max(LEFT);
                let right = (x(*i) + LONE_BAND_HALF).min(W - RIGHT);
                vec![(left, *l, *h), (right, *l, *h)]
            }
            many => many.iter().map(|(i, (l, h))| (x(*i), *l, *h)).collect(),
        };
        s.push_str("<polygon class=\"band\" points=\"");
        for (xx, _, h) in &corners {
            let _ = write!(s, "{},{} ", f(*xx), f(y(*h)));
        }
        for (xx, l, _) in corners.iter().rev() {
            let _ = write!(s, "{},{} ", f(*xx), f(y(*l)));
        }
        s.push_str("\"><title>noise band</title></polygon>");
    }

    /// The reference (golden) line through the points that have one; a
    /// lone reference is drawn across the whole plot (a line of one point
    /// would not show).
    fn reference(&self, s: &mut String, x: &dyn Fn(usize) -> f64, y: &dyn Fn(f64) -> f64) {
        let refs: Vec<(f64, f64)> = self
            .points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some((x(i), y(p.reference.filter(|r| r.is_finite())?))))
            .collect();
        let line: Vec<(f64, f64)> = match refs.as_slice() {
            [] => return,
            [(_, yy)] => vec![(LEFT, *yy), (W - RIGHT, *yy)],
            many => many.to_vec(),
        };
        let points: Vec<String> = line
            .iter()
            .map(|(xx, yy)| format!("{},{}", f(*xx), f(*yy)))
            .collect();
        let _ = write!(
            s,
            "<polyline class=\"golden\" points=\"{}\"><title>golden</title></polyline>",
            points.join(" ")
        );
    }
}

/// The heatmap: one row per test, one column per commit, one `rect` with
/// `data-point` per cell that has a result.
pub fn heatmap(map: &Heatmap) -> String {
    const CELL: f64 = 10.0;
    const STEP: f64 = 11.0;
    const LABEL_W: f64 = 300.0;
    const HEAD: f64 = 70.0;
    let cols = map.columns.len();
    let width = LABEL_W + STEP * cols as f64 + 10.0;
    let height = HEAD + STEP * map.rows.len() as f64 + 24.0;
    let mut s = String::with_capacity(1024 + map.rows.len() * cols * 90);
    let desc = format!(
        "{} that failed, flaked or xpassed (rows) on the last {} tested (columns, oldest left)",
        count(map.rows.len(), "test", "tests"),
        count(cols, "commit", "commits")
    );
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"Test outcomes per commit: {d}\"><title>Test outcomes per commit</title><desc>{d}</desc>",
        w = f(width),
        h = f(height),
        d = esc(&desc)
    );
    let _ = write!(
        s,
        "<text x=\"4\" y=\"14\">test (rows) × commit (columns, oldest → newest)</text><text x=\"{}\" y=\"{}\" text-anchor=\"middle\">commit</text>",
        f(LABEL_W + STEP * cols as f64 / 2.0),
        f(height - 6.0)
    );
    for (c, column) in map.columns.iter().enumerate() {
        let cx = LABEL_W + STEP * c as f64 + CELL / 2.0;
        let label = match &column.commit {
            // Cut before escaping: a cut after could split an entity.
            Some(commit) => esc(&commit.chars().take(7).collect::<String>()),
            None => "(none)".into(),
        };
        let _ = write!(
            s,
            "<text transform=\"translate({} {}) rotate(-90)\" font-size=\"9\">{}<title>{}</title></text>",
            f(cx + 3.0),
            f(HEAD - 4.0),
            label,
            esc(column.commit.as_deref().unwrap_or("no commit recorded"))
        );
    }
    for (r, row) in map.rows.iter().enumerate() {
        let y = HEAD + STEP * r as f64;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"10\">{}<title>{}</title></text>",
            f(LABEL_W - 6.0),
            f(y + 9.0),
            esc_short(&row.test, 48),
            esc(&row.test)
        );
        for (c, cell) in row.cells.iter().enumerate() {
            let Some(cell) = cell else { continue };
            let commit = map.columns[c].commit.as_deref();
            let _ = write!(
                s,
                "<rect class=\"c-{st}\" x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" data-point=\"{r},{c}\"><title>{} {st}: {} green, {} red</title></rect>",
                f(LABEL_W + STEP * c as f64),
                f(y),
                short(commit),
                cell.passes,
                cell.failures,
                st = cell.state.name(),
            );
        }
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_history::analysis::{Column, HeatRow, Heatmap};

    fn point(value: f64) -> Point {
        Point {
            value,
            title: String::new(),
            class: "",
            band: None,
            reference: None,
        }
    }

    fn chart<'a>(points: &'a [Point], scale: Scale, ends: (&'a str, &'a str)) -> LineChart<'a> {
        LineChart {
            title: "t",
            desc: "d",
            x_label: "x",
            y_label: "y",
            x_first: ends.0,
            x_last: ends.1,
            scale,
            points,
        }
    }

    /// The texts of the elements of `class` in `svg`, in order.
    fn texts(svg: &str, class: &str) -> Vec<String> {
        let open = format!("<text class=\"{class}\"");
        svg.match_indices(&open)
            .map(|(i, _)| {
                let rest = &svg[i..];
                let start = rest.find('>').unwrap() + 1;
                let end = rest.find("</text>").unwrap();
                rest[start..end].to_string()
            })
            .collect()
    }

    /// The `points` of the first element of `class` in `svg`.
    fn points_of(svg: &str, class: &str) -> Vec<(f64, f64)> {
        let at = svg.find(&format!("class=\"{class}\" points=\"")).unwrap();
        let rest = &svg[at..];
        let start = rest.find("points=\"").unwrap() + 8;
        let end = start + rest[start..].find('"').unwrap();
        rest[start..end]
            .split_whitespace()
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn a_time_axis_never_goes_below_zero() {
        // A step far under its golden: the margin once reached -0.12 ms.
        let mut p = point(0.04);
        p.reference = Some(2.0);
        let points = [p];
        let svg = chart(&points, Scale::NonNegative, ("a", "a")).render();
        let ticks = texts(&svg, "ytick");
        assert_eq!(ticks.first().map(String::as_str), Some("0"), "{ticks:?}");
        assert!(ticks.iter().all(|t| !t.starts_with('-')), "{ticks:?}");
        // A lone value keeps its margin above and below (not clamped).
        let points = [point(100.0)];
        let ticks = texts(
            &chart(&points, Scale::NonNegative, ("a", "a")).render(),
            "ytick",
        );
        assert_eq!(ticks, ["90.0", "100.0", "110.0"]);
        // Any scale: a negative value keeps its negative axis.
        let points = [point(-5.0), point(5.0)];
        let ticks = texts(&chart(&points, Scale::Any, ("a", "b")).render(), "ytick");
        assert!(ticks[0].starts_with('-'), "{ticks:?}");
    }

    #[test]
    fn counts_get_whole_ticks_from_zero() {
        let ones = [point(1.0), point(1.0)];
        let ticks = texts(&chart(&ones, Scale::Count, ("a", "b")).render(), "ytick");
        assert_eq!(ticks, ["0", "1"]);
        let zeros = [point(0.0)];
        let ticks = texts(&chart(&zeros, Scale::Count, ("a", "a")).render(), "ytick");
        assert_eq!(ticks, ["0", "1"]);
        let many = [point(3.0), point(17.0)];
        let ticks = texts(&chart(&many, Scale::Count, ("a", "b")).render(), "ytick");
        assert_eq!(ticks, ["0", "5", "10", "15", "20"]);
        let huge = [point(1234.0)];
        let ticks = texts(&chart(&huge, Scale::Count, ("a", "a")).render(), "ytick");
        assert_eq!(ticks, ["0", "500", "1000", "1500"]);
    }

    #[test]
    fn a_lone_golden_is_drawn_across_the_plot() {
        let mut p = point(1.0);
        p.reference = Some(1.5);
        let points = [p];
        let svg = chart(&points, Scale::NonNegative, ("a", "a")).render();
        let line = points_of(&svg, "golden");
        assert_eq!(line.len(), 2, "{svg}");
        assert_eq!(line[0].1, line[1].1);
        assert_eq!((line[0].0, line[1].0), (LEFT, W - RIGHT));
    }

    #[test]
    fn a_lone_band_has_a_width_inside_the_plot() {
        // Two runs: only the second is compared, so only it has a band.
        let mut second = point(100.0);
        second.band = Some((95.0, 105.0));
        let points = [point(100.0), second];
        let svg = chart(&points, Scale::NonNegative, ("a", "b")).render();
        let band = points_of(&svg, "band");
        let xs: Vec<f64> = band.iter().map(|p| p.0).collect();
        let ys: Vec<f64> = band.iter().map(|p| p.1).collect();
        let (left, right) = (
            xs.iter().cloned().fold(f64::INFINITY, f64::min),
            xs.iter().cloned().fold(0.0, f64::max),
        );
        assert!(right - left >= LONE_BAND_HALF - 0.1, "{band:?}");
        assert!(right <= W - RIGHT && left >= LEFT, "{band:?}");
        let height = ys.iter().cloned().fold(0.0, f64::max)
            - ys.iter().cloned().fold(f64::INFINITY, f64::min);
        assert!(height > 1.0, "{band:?}");
    }

    #[test]
    fn a_lone_point_has_one_x_label_under_it() {
        let points = [point(1.0)];
        let svg = chart(&points, Scale::Any, ("abc", "abc")).render();
        assert_eq!(texts(&svg, "xtick"), ["abc"]);
        let points = [point(1.0), point(2.0)];
        let svg = chart(&points, Scale::Any, ("abc", "def")).render();
        assert_eq!(texts(&svg, "xtick"), ["abc", "def"]);
    }

    #[test]
    fn heatmap_labels_are_cut_before_they_are_escaped() {
        let map = Heatmap {
            columns: vec![Column {
                commit: Some("ab&<\"d&&&&&&".into()),
                runs: vec![0],
            }],
            rows: vec![HeatRow {
                test: "t".into(),
                cells: vec![None],
                bad: 0,
            }],
            green_tests: 0,
            hidden_rows: 0,
            older_commits: 0,
        };
        let svg = heatmap(&map);
        assert!(svg.contains(">ab&amp;&lt;&quot;d&amp;<title>"), "{svg}");
        // Every `&` starts a whole entity.
        for (i, _) in svg.match_indices('&') {
            let rest = &svg[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;", "&#x27;"]
                    .iter()
                    .any(|e| rest.starts_with(e)),
                "a cut entity at {i}: {}",
                &rest[..rest.len().min(12)]
            );
        }
    }
}
