//! Inline SVG charts for `report.html`, written by hand: the report must be one self-contained
//! file that opens offline (no CDN, no script), and the few chart shapes it needs — vertical
//! bars, stacked bars, horizontal bars, a line — are a few dozen lines each. Colours come from the
//! page's CSS variables, so every chart follows the light or dark scheme; every mark has a
//! `<title>` tooltip with its exact value.

use std::fmt::Write as _;

/// HTML/XML text escaping (element content and attribute values).
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A short number: 1234 → "1.2k".
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if a == 0.0 || a >= 10.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.1e}")
    }
}

const W: f64 = 640.0;
const H: f64 = 200.0;
const LEFT: f64 = 48.0;
const BOTTOM: f64 = 36.0;
const TOP: f64 = 10.0;

fn open(s: &mut String, w: f64, h: f64, label: &str) {
    let _ = write!(
        s,
        r#"<svg class="chart" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{}">"#,
        esc(label)
    );
}

fn y_axis(s: &mut String, max: f64, plot_h: f64) {
    for k in 0..=4 {
        let v = max * k as f64 / 4.0;
        let y = TOP + plot_h - plot_h * k as f64 / 4.0;
        let _ = write!(
            s,
            r#"<line class="grid" x1="{LEFT}" x2="{W}" y1="{y:.1}" y2="{y:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 4.0,
            y + 3.0,
            short(v)
        );
    }
}

/// Which of `n` x labels to print so that they do not overlap (about 12 at most).
fn label_every(n: usize) -> usize {
    n.div_ceil(12).max(1)
}

/// Vertical bars: one per `(label, value)`, in one colour.
pub fn bars(label: &str, items: &[(String, f64)], colour: &str, unit: &str) -> String {
    stacked(
        label,
        items.iter().map(|(l, _)| l.clone()).collect(),
        &[(
            unit.to_string(),
            colour.to_string(),
            items.iter().map(|(_, v)| *v).collect(),
        )],
    )
}

/// Stacked vertical bars: x labels, then series of `(name, colour, values per x)`.
pub fn stacked(label: &str, xs: Vec<String>, series: &[(String, String, Vec<f64>)]) -> String {
    let n = xs.len().max(1);
    let totals: Vec<f64> = (0..xs.len())
        .map(|i| {
            series
                .iter()
                .map(|s| s.2.get(i).copied().unwrap_or(0.0))
                .sum()
        })
        .collect();
    let max = totals.iter().cloned().fold(0.0, f64::max).max(1e-12);
    let plot_h = H - TOP - BOTTOM;
    let slot = (W - LEFT) / n as f64;
    let bar_w = (slot * 0.8).max(1.0);
    let mut s = String::new();
    open(&mut s, W, H, label);
    y_axis(&mut s, max, plot_h);
    let every = label_every(xs.len());
    for (i, x) in xs.iter().enumerate() {
        let left = LEFT + slot * i as f64 + (slot - bar_w) / 2.0;
        let mut base = TOP + plot_h;
        for (name, colour, values) in series {
            let v = values.get(i).copied().unwrap_or(0.0);
            if v <= 0.0 {
                continue;
            }
            let h = plot_h * v / max;
            base -= h;
            let _ = write!(
                s,
                r#"<rect x="{left:.1}" y="{base:.1}" width="{bar_w:.1}" height="{h:.1}" fill="{colour}"><title>{}: {} {}</title></rect>"#,
                esc(x),
                short(v),
                esc(name)
            );
        }
        if i % every == 0 {
            let _ = write!(
                s,
                r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                left + bar_w / 2.0,
                H - BOTTOM + 14.0,
                esc(x)
            );
        }
    }
    s.push_str("</svg>");
    if series.len() > 1 {
        s.push_str(&legend(
            &series
                .iter()
                .map(|(n, c, _)| (n.clone(), c.clone()))
                .collect::<Vec<_>>(),
        ));
    }
    s
}

/// A legend of `(name, colour)` swatches.
pub fn legend(items: &[(String, String)]) -> String {
    let mut s = String::from(r#"<div class="legend">"#);
    for (name, colour) in items {
        let _ = write!(
            s,
            r#"<span><i style="background:{colour}"></i>{}</span>"#,
            esc(name)
        );
    }
    s.push_str("</div>");
    s
}

/// Horizontal bars, one row per `(label, value, colour)`, with the value and its share.
pub fn hbars(label: &str, items: &[(String, f64, String)]) -> String {
    let row = 22.0;
    let label_w = 220.0;
    let h = row * items.len().max(1) as f64 + 4.0;
    let max = items.iter().map(|i| i.1).fold(0.0, f64::max).max(1e-12);
    let total: f64 = items.iter().map(|i| i.1).sum();
    let mut s = String::new();
    open(&mut s, W, h, label);
    for (k, (name, v, colour)) in items.iter().enumerate() {
        let y = 2.0 + row * k as f64;
        let w = (W - label_w - 110.0) * v / max;
        let share = if total > 0.0 { 100.0 * v / total } else { 0.0 };
        let _ = write!(
            s,
            r#"<text class="label" x="{:.1}" y="{:.1}" text-anchor="end">{}</text><rect x="{label_w}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="{colour}"><title>{}: {} ({share:.1}%)</title></rect><text class="tick" x="{:.1}" y="{:.1}">{} ({share:.1}%)</text>"#,
            label_w - 6.0,
            y + 14.0,
            esc(name),
            row - 6.0,
            esc(name),
            short(*v),
            label_w + w + 4.0,
            y + 14.0,
            short(*v)
        );
    }
    s.push_str("</svg>");
    s
}

/// A line over `xs`, with dots carrying tooltips.
pub fn line(label: &str, xs: &[String], values: &[f64], colour: &str, unit: &str) -> String {
    let n = xs.len().max(2);
    let max = values.iter().cloned().fold(0.0, f64::max).max(1e-12);
    let plot_h = H - TOP - BOTTOM;
    let step = (W - LEFT - 10.0) / (n - 1) as f64;
    let mut s = String::new();
    open(&mut s, W, H, label);
    y_axis(&mut s, max, plot_h);
    let point = |i: usize, v: f64| (LEFT + step * i as f64, TOP + plot_h - plot_h * v / max);
    let path: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let (x, y) = point(i, *v);
            format!("{x:.1},{y:.1}")
        })
        .collect();
    let _ = write!(
        s,
        r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
        path.join(" ")
    );
    let every = label_every(xs.len());
    for (i, v) in values.iter().enumerate() {
        let (x, y) = point(i, *v);
        let _ = write!(
            s,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="2.5" fill="{colour}"><title>{}: {} {}</title></circle>"#,
            esc(xs.get(i).map_or("", String::as_str)),
            short(*v),
            esc(unit)
        );
        if i % every == 0 {
            let _ = write!(
                s,
                r#"<text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                H - BOTTOM + 14.0,
                esc(xs.get(i).map_or("", String::as_str))
            );
        }
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc(r#"<script>"a"&'b'</script>"#),
            "&lt;script&gt;&quot;a&quot;&amp;&#39;b&#39;&lt;/script&gt;"
        );
    }

    #[test]
    fn labels_are_escaped_in_charts() {
        let svg = bars("x", &[("<b>".into(), 1.0)], "red", "n");
        assert!(svg.contains("&lt;b&gt;") && !svg.contains("<b>"));
        let svg = hbars("x", &[("</svg>".into(), 2.0, "red".into())]);
        assert_eq!(svg.matches("</svg>").count(), 1);
    }

    #[test]
    fn short_numbers() {
        assert_eq!(short(1234.0), "1.2k");
        assert_eq!(short(12.0), "12");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(0.0001), "1.0e-4");
    }
}
