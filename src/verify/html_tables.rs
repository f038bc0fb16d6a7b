//! The report's distributions drawn as HTML rather than charts: fidelity classes per dataset as
//! one stacked bar per row (full dataset names, wrapping, never truncated), the usage
//! cross-check as one table (or one line when every count agrees), and token lengths per dataset
//! as two heat tables (one row per dataset, one column per log₂ bucket). One figure answers one
//! question, and HTML wraps at any width where an SVG axis would overflow or shrink its text.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::figures::{GroupFigures, LengthHistogram, UsageDelta};
use super::svg::{self, esc};
use super::VerifyReport;
use crate::reconstruct::FidelityClass;

/// Deltas listed per cell of the usage table; the rest are summed into "… N more".
const MAX_DELTAS: usize = 6;

pub fn pct(n: u64, of: u64) -> String {
    if of == 0 {
        "–".into()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / of as f64)
    }
}

/// The page's colour for a fidelity class (the same in every figure and table).
pub fn class_colour(class: FidelityClass) -> &'static str {
    match class {
        FidelityClass::ExactByServerIds => "var(--exact)",
        FidelityClass::Unique => "var(--unique)",
        FidelityClass::TruncatedMidCharacter => "var(--trunc)",
        FidelityClass::Ambiguous => "var(--ambiguous)",
        FidelityClass::Lossy => "var(--lossy)",
        FidelityClass::Inconsistent => "var(--inconsistent)",
    }
}

/// One row per dataset (and the whole run first): a bar split by fidelity class.
pub fn fidelity_per_dataset(s: &mut String, r: &VerifyReport) {
    s.push_str("<h2>Fidelity classes per dataset</h2>");
    let total = r.samples.total;
    let only = FidelityClass::ALL
        .into_iter()
        .find(|c| total > 0 && r.samples.by_fidelity.get(c.name()).copied().unwrap_or(0) == total);
    if let Some(class) = only {
        let _ = write!(
            s,
            r#"<p><i class="swatch" style="background:{}"></i>All {total} samples are <b>{}</b>, in each of the {} dataset(s).</p>"#,
            class_colour(class),
            class.name(),
            r.by_source.len()
        );
        return;
    }
    s.push_str(r#"<div class="panel"><table class="bars"><tr><th>dataset</th><th>samples</th><th>fidelity classes</th></tr>"#);
    let whole = GroupFigures {
        samples: total,
        by_fidelity: r.samples.by_fidelity.clone(),
        ..GroupFigures::default()
    };
    bar_row(s, "all datasets", &whole);
    for (name, g) in &r.by_source {
        bar_row(s, name, g);
    }
    s.push_str("</table>");
    let present: Vec<(String, String)> = FidelityClass::ALL
        .iter()
        .filter(|c| r.samples.by_fidelity.get(c.name()).copied().unwrap_or(0) > 0)
        .map(|c| (c.name().to_string(), class_colour(*c).to_string()))
        .collect();
    s.push_str(&svg::legend(&present));
    s.push_str("</div>");
}

fn bar_row(s: &mut String, name: &str, g: &GroupFigures) {
    let _ = write!(
        s,
        r#"<tr><td class="name">{}</td><td class="n">{}</td><td><div class="sbar">"#,
        esc(name),
        g.samples
    );
    for class in FidelityClass::ALL {
        let n = g.class(class);
        if n == 0 {
            continue;
        }
        let _ = write!(
            s,
            r#"<i style="width:{:.2}%;background:{}" title="{}: {n} ({})"></i>"#,
            100.0 * n as f64 / g.samples.max(1) as f64,
            class_colour(class),
            class.name(),
            pct(n, g.samples)
        );
    }
    s.push_str("</div></td></tr>");
}

/// "−1 ×3 · +2 ×1", most frequent first, at most [`MAX_DELTAS`] named.
fn deltas(u: &UsageDelta) -> String {
    let mut v: Vec<(i64, u64)> = u.sorted().into_iter().filter(|(d, _)| *d != 0).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut parts: Vec<String> = v
        .iter()
        .take(MAX_DELTAS)
        .map(|(d, n)| format!("{d:+} ×{n}"))
        .collect();
    let rest: u64 = v.iter().skip(MAX_DELTAS).map(|(_, n)| n).sum();
    if rest > 0 {
        parts.push(format!("… {rest} more"));
    }
    if parts.is_empty() {
        "–".into()
    } else {
        parts.join(" · ")
    }
}

fn all_equal(u: &UsageDelta) -> bool {
    u.equal == u.compared
}

/// The usage cross-check: a line when every reported count equals the rebuilt one, else one
/// table (the whole run, then each provider when there are several).
pub fn usage(s: &mut String, r: &VerifyReport) {
    s.push_str("<h2>Usage cross-check</h2>");
    let (p, c) = (&r.usage.prompt_tokens, &r.usage.completion_tokens);
    if p.compared == 0 && c.compared == 0 {
        s.push_str(r#"<p class="muted">The server reported no usage counts to compare.</p>"#);
        return;
    }
    if all_equal(p) && all_equal(c) {
        let _ = write!(
            s,
            "<p>The reported <code>usage</code> equals the rebuilt count for all {} prompt(s) and all {} completion(s).</p>",
            p.compared, c.compared
        );
        return;
    }
    let _ = write!(
        s,
        r#"<p>Reported − rebuilt token counts. Prompt tokens within Kimi-Vendor-Verifier's band (expected ≤ reported ≤ expected + 3): <b>{}/{}</b>.</p><div class="panel"><table><tr><th>samples of</th><th>prompts compared</th><th>prompt Δ=0</th><th>in KVV band</th><th>prompt Δ (samples)</th><th>completions compared</th><th>completion Δ=0</th><th>completion Δ (samples)</th></tr>"#,
        r.usage.prompt_tokens_within_kvv_band, p.compared
    );
    usage_row(s, "the whole run", &r.usage);
    if r.by_provider.len() > 1 {
        for (name, g) in &r.by_provider {
            usage_row(s, name, &g.usage);
        }
    }
    s.push_str("</table></div>");
}

fn usage_row(s: &mut String, name: &str, u: &super::figures::UsageFigures) {
    let (p, c) = (&u.prompt_tokens, &u.completion_tokens);
    let _ = write!(
        s,
        r#"<tr><td class="name">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td>{}</td></tr>"#,
        esc(name),
        p.compared,
        pct(p.equal, p.compared),
        pct(u.prompt_tokens_within_kvv_band, p.compared),
        esc(&deltas(p)),
        c.compared,
        pct(c.equal, c.compared),
        esc(&deltas(c)),
    );
}

/// Prompt and completion lengths per dataset: two heat tables.
pub fn lengths(s: &mut String, r: &VerifyReport) {
    s.push_str(r#"<h2>Prompt and completion lengths per dataset</h2><p class="muted">Samples per length in tokens, log₂ buckets (a column headed 512 holds lengths 512–1023); the shade is the share of the dataset's row.</p>"#);
    if r.by_source.is_empty() {
        s.push_str(r#"<p class="muted">No samples.</p>"#);
        return;
    }
    heat_table(s, "prompt tokens", "var(--prompt)", &r.by_source, |g| {
        &g.prompt_lengths
    });
    heat_table(
        s,
        "completion tokens",
        "var(--completion)",
        &r.by_source,
        |g| &g.completion_lengths,
    );
}

fn heat_table(
    s: &mut String,
    what: &str,
    colour: &str,
    groups: &BTreeMap<String, GroupFigures>,
    hist: impl Fn(&GroupFigures) -> &LengthHistogram,
) {
    let keys = groups
        .values()
        .flat_map(|g| hist(g).buckets.keys().copied());
    let (Some(lo), Some(hi)) = (keys.clone().min(), keys.max()) else {
        return;
    };
    // Every power of two between the extremes, so the columns are a continuous axis.
    let mut columns = vec![lo];
    while let Some(&last) = columns.last() {
        if last >= hi {
            break;
        }
        columns.push(if last == 0 { 2 } else { last * 2 });
    }
    let _ = write!(
        s,
        r#"<div class="panel"><h3>{}</h3><table class="heat"><tr><th>dataset</th>{}</tr>"#,
        esc(what),
        columns
            .iter()
            .map(|k| format!(r#"<th class="n">{}</th>"#, svg::short(*k as f64)))
            .collect::<String>()
    );
    for (name, g) in groups {
        let h = hist(g);
        let row_max = h.buckets.values().copied().max().unwrap_or(0).max(1);
        let _ = write!(s, r#"<tr><td class="name">{}</td>"#, esc(name));
        for k in &columns {
            match h.buckets.get(k).copied().unwrap_or(0) {
                0 => s.push_str("<td></td>"),
                n => {
                    let _ = write!(
                        s,
                        r#"<td class="n" style="background:color-mix(in srgb,{colour} {}%,transparent)">{n}</td>"#,
                        10 + 60 * n / row_max
                    );
                }
            }
        }
        s.push_str("</tr>");
    }
    s.push_str("</table></div>");
}
