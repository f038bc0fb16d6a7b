//! `report.html`: one self-contained page (inline CSS and SVG, no script, no network) with the
//! figures of a [`VerifyReport`] as plots — fidelity classes, the reference compare, the usage
//! deltas, length histograms per dataset, cost, throughput and errors over time, the provider
//! mix, the tool-call audit's section and the divergent samples with their context. Every piece
//! of text that came from the run (ids, dataset and provider names, decoded tokens, error
//! messages) is HTML-escaped. Light and dark follow `prefers-color-scheme`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::figures::GroupFigures;
use super::html_tables::{self, pct};
use super::html_trust;
use super::svg::{self, esc};
use super::timeline::{Minute, Timeline};
use super::VerifyReport;
use crate::reconstruct::FidelityClass;

/// Bars in a time chart at most.
const MAX_TIME_BARS: i64 = 48;

const CSS: &str = r#"
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1d232a; --muted: #5b6672; --grid: #e3e7eb;
  --card: #f6f8fa; --border: #d5dbe1; --ok: #1a7f37; --bad: #cf222e;
  --exact: #1a7f37; --unique: #4ac26b; --trunc: #3b9fb5; --ambiguous: #d4a72c; --lossy: #e16f24; --inconsistent: #cf222e;
  --prompt: #4e79a7; --completion: #8250df; --answers: #57606a; --cost: #1d232a;
  --e0: #a40e26; --e1: #bf3989; --e2: #7d4e24; --e3: #953800; --e4: #6639ba; --e5: #424a53; }
@media (prefers-color-scheme: dark) { :root { --bg: #0f1419; --fg: #e6edf3; --muted: #9aa7b3;
  --grid: #2a323b; --card: #161c23; --border: #30363d; --ok: #3fb950; --bad: #ff7b72;
  --exact: #3fb950; --unique: #7ee787; --trunc: #76c7de; --ambiguous: #e3b341; --lossy: #f0883e; --inconsistent: #ff7b72;
  --prompt: #6f9fd8; --completion: #b392f0; --answers: #9aa7b3; --cost: #e6edf3;
  --e0: #ff6a69; --e1: #ff80c8; --e2: #c9a27e; --e3: #d2691e; --e4: #a371f7; --e5: #8b949e; } }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1360px; margin: 0 auto; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 10px; }
h3 { font-size: 14px; margin: 12px 0 6px; color: var(--muted); font-weight: 600; }
.sub { color: var(--muted); margin-bottom: 12px; word-break: break-all; }
.badge { display: inline-block; padding: 2px 10px; border-radius: 12px; font-weight: 600; color: #fff; }
.ok { background: var(--ok); } .bad { background: var(--bad); }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
.card { background: var(--card); border: 1px solid var(--border); border-radius: 8px; padding: 10px 14px; min-width: 150px; }
.card b { display: block; font-size: 22px; } .card.alert { border-color: var(--bad); } .card.alert b { color: var(--bad); } .card span { color: var(--muted); font-size: 12px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 16px; }
.panel { background: var(--card); border: 1px solid var(--border); border-radius: 8px; padding: 10px 12px; overflow-x: auto; }
svg.chart { max-width: 100%; height: auto; display: block; font-size: 11px; }
svg.chart .grid { stroke: var(--grid); stroke-width: 1; }
svg.chart text { fill: var(--muted); } svg.chart text.label { fill: var(--fg); }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12px; color: var(--muted); margin-top: 4px; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 5px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--border); vertical-align: top; }
th { color: var(--muted); font-weight: 600; } td.name { overflow-wrap: anywhere; min-width: 8em; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.warn { color: var(--bad); font-weight: 600; }
pre { margin: 0; white-space: pre-wrap; word-break: break-all; font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
.muted { color: var(--muted); }
.sbar { display: flex; height: 16px; min-width: 200px; border-radius: 3px; overflow: hidden; background: var(--grid); }
.sbar i { display: block; height: 100%; }
table.bars td:last-child { width: 60%; }
table.heat td.n { min-width: 3em; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
"#;

/// The whole page.
pub fn render(r: &VerifyReport) -> String {
    let mut s = String::with_capacity(64 * 1024);
    let _ = write!(
        s,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>draftgen verify — {}</title><style>{CSS}</style></head><body><main>"#,
        esc(&r.run)
    );
    header(&mut s, r);
    html_trust::classes(&mut s, r);
    html_trust::providers(&mut s, r);
    html_tables::fidelity_per_dataset(&mut s, r);
    reference(&mut s, r);
    html_tables::usage(&mut s, r);
    html_tables::lengths(&mut s, r);
    over_time(&mut s, &r.attempts);
    providers(&mut s, r);
    groups_table(&mut s, "Per dataset (source)", &r.by_source);
    groups_table(&mut s, "Per provider", &r.by_provider);
    // The audit's own self-contained section, with its heading and red flags
    // (`ToolAudit::html_section`), led by the share rebuilt exactly.
    s.push_str(&html_trust::tool_call_section(
        r,
        r.tool_calls.html_section(),
    ));
    conversations(&mut s, r);
    divergent(&mut s, r);
    problems(&mut s, r);
    html_trust::glossary(&mut s);
    let _ = write!(
        s,
        r#"<p class="muted">draftgen {} · verify.json beside this file has every figure.</p></main></body></html>"#,
        esc(&r.draftgen_version)
    );
    s
}

fn header(s: &mut String, r: &VerifyReport) {
    let (badge, text) = if r.gate.ok {
        ("ok", "verification passed".to_string())
    } else {
        ("bad", format!("FAILED: {}", r.gate.reasons.join("; ")))
    };
    let _ = write!(
        s,
        r#"<h1>draftgen verify <span class="badge {badge}">{}</span></h1><div class="sub">{} ({}) · model {}</div>"#,
        esc(&text),
        esc(&r.run),
        r.input,
        esc(&r.model)
    );
    let exact = r
        .samples
        .by_fidelity
        .get("exact_by_server_ids")
        .copied()
        .unwrap_or(0)
        + r.samples.by_fidelity.get("unique").copied().unwrap_or(0);
    let cards = [
        ("samples", r.samples.total.to_string()),
        ("exact ids (server or unique)", pct(exact, r.samples.total)),
        ("compared with reference", r.reference.compared.to_string()),
        ("divergent", r.reference.divergent.to_string()),
        ("attempts", r.attempts.attempts.to_string()),
        ("failed attempts", r.attempts.failed.to_string()),
        ("cost", format!("${:.4}", r.attempts.cost_usd)),
    ];
    s.push_str(r#"<div class="cards">"#);
    for (i, (label, value)) in cards.into_iter().enumerate() {
        if i == 1 {
            s.push_str(&answer_card(&Completeness::of_report(r)));
        }
        let _ = write!(
            s,
            r#"<div class="card"><b>{}</b><span>{}</span></div>"#,
            esc(&value),
            esc(label)
        );
    }
    s.push_str("</div>");
}

/// What the answer card shows of the run's completeness (`journal/completeness.rs`).
#[derive(Debug, Default, PartialEq)]
struct Completeness {
    prompts: Option<u64>,
    no_answer: Option<u64>,
    locked_by_writer: bool,
}

impl Completeness {
    fn of_report(r: &VerifyReport) -> Completeness {
        r.completeness
            .as_ref()
            .map_or_else(Completeness::default, |c| Completeness {
                prompts: c.prompts,
                no_answer: c.no_answer,
                locked_by_writer: c.locked_by_writer,
            })
    }
}

/// The card for prompts without an answer: red while any is missing or a writer holds the run,
/// "unknown" when nothing says how many prompts the run had.
fn answer_card(c: &Completeness) -> String {
    let (value, label, alert) = match (c.no_answer, c.prompts) {
        (Some(missing), Some(total)) => (
            missing.to_string(),
            format!("prompts without an answer (of {total})"),
            missing > 0,
        ),
        _ => (
            "unknown".to_string(),
            "prompts without an answer (no input size recorded)".to_string(),
            false,
        ),
    };
    let writer = if c.locked_by_writer {
        "; a writer is still appending"
    } else {
        ""
    };
    format!(
        r#"<div class="card{}"><b>{}</b><span>{}{writer}</span></div>"#,
        if alert || c.locked_by_writer {
            " alert"
        } else {
            ""
        },
        esc(&value),
        esc(&label)
    )
}

fn reference(s: &mut String, r: &VerifyReport) {
    let f = &r.reference;
    s.push_str("<h2>Ids rebuilt from text vs reference ids</h2>");
    if f.compared == 0 {
        s.push_str(r#"<p class="muted">No reference ids: the journal has no server token ids and no <code>--reference</code> file was given.</p>"#);
        return;
    }
    let source = serde_json::to_value(f.source)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    if f.exact == f.compared {
        let _ = write!(
            s,
            "<p>All {} compared samples have exactly the reference ids (reference: {}); {} without reference.</p>",
            f.compared,
            esc(&source),
            f.without_reference
        );
        return;
    }
    let _ = write!(
        s,
        r#"<div class="panel"><h3>{} compared (reference: {}); {} without reference</h3>"#,
        f.compared,
        esc(&source),
        f.without_reference
    );
    let items = vec![
        (
            "exact".to_string(),
            f.exact as f64,
            "var(--exact)".to_string(),
        ),
        (
            "bpe-benign (same bytes)".to_string(),
            f.bpe_benign as f64,
            "var(--unique)".to_string(),
        ),
        (
            "truncated mid-character".to_string(),
            f.truncated_mid_character as f64,
            "var(--trunc)".to_string(),
        ),
        (
            "divergent".to_string(),
            f.divergent as f64,
            "var(--inconsistent)".to_string(),
        ),
    ];
    s.push_str(&svg::hbars("reference comparison", &items));
    s.push_str("</div>");
}

/// The timeline regrouped into at most [`MAX_TIME_BARS`] buckets: (label, minutes, merged).
fn buckets(t: &Timeline) -> Vec<(String, i64, Minute)> {
    let (Some(first), Some(last)) = (t.minutes.keys().next(), t.minutes.keys().next_back()) else {
        return Vec::new();
    };
    let span = last - first + 1;
    let width = ((span + MAX_TIME_BARS - 1) / MAX_TIME_BARS).max(1);
    let mut out: BTreeMap<i64, Minute> = BTreeMap::new();
    for (minute, m) in &t.minutes {
        let b = out.entry((minute - first) / width).or_default();
        b.attempts += m.attempts;
        b.successes += m.successes;
        b.cost_usd += m.cost_usd;
        b.completion_tokens += m.completion_tokens;
        for (class, n) in &m.errors {
            *b.errors.entry(class.clone()).or_default() += n;
        }
    }
    let n = (span + width - 1) / width;
    let multi_day = span > 24 * 60;
    (0..n)
        .map(|k| {
            let start = first + k * width;
            let label = chrono::DateTime::from_timestamp(start * 60, 0)
                .map(|t| {
                    t.format(if multi_day { "%m-%d %H:%M" } else { "%H:%M" })
                        .to_string()
                })
                .unwrap_or_default();
            (label, width, out.remove(&k).unwrap_or_default())
        })
        .collect()
}

fn over_time(s: &mut String, t: &Timeline) {
    s.push_str("<h2>Over time (all attempts, UTC)</h2>");
    let b = buckets(t);
    if b.is_empty() {
        s.push_str(
            r#"<p class="muted">No attempts with a start time (a build directory has none).</p>"#,
        );
        return;
    }
    if let [(label, width, m)] = b.as_slice() {
        one_bucket(s, t, label, *width, m);
        return;
    }
    let xs: Vec<String> = b.iter().map(|(l, _, _)| l.clone()).collect();
    let width = b[0].1;
    let mut cumulative = 0.0;
    let cost: Vec<f64> = b
        .iter()
        .map(|(_, _, m)| {
            cumulative += m.cost_usd;
            cumulative
        })
        .collect();
    let tokens_per_s: Vec<(String, f64)> = b
        .iter()
        .map(|(l, w, m)| (l.clone(), m.completion_tokens as f64 / (*w as f64 * 60.0)))
        .collect();
    let answers: Vec<(String, f64)> = b
        .iter()
        .map(|(l, w, m)| (l.clone(), m.successes as f64 / *w as f64))
        .collect();
    let classes: std::collections::BTreeSet<&String> =
        t.minutes.values().flat_map(|m| m.errors.keys()).collect();
    let series: Vec<(String, String, Vec<f64>)> = classes
        .iter()
        .enumerate()
        .map(|(i, class)| {
            (
                (*class).clone(),
                error_colour(i),
                b.iter()
                    .map(|(_, _, m)| m.errors.get(*class).copied().unwrap_or(0) as f64)
                    .collect(),
            )
        })
        .collect();
    let _ = write!(
        s,
        r#"<p class="muted">{} attempts, {} failed, ${:.4} in total; one bar = {} minute(s).</p><div class="grid">"#,
        t.attempts, t.failed, t.cost_usd, width
    );
    let _ = write!(
        s,
        r#"<div class="panel"><h3>cumulative cost (USD)</h3>{}</div>"#,
        svg::line("cumulative cost", &xs, &cost, "var(--cost)", "USD")
    );
    let _ = write!(
        s,
        r#"<div class="panel"><h3>throughput: completion tokens per second</h3>{}</div>"#,
        svg::bars(
            "completion tokens per second",
            &tokens_per_s,
            "var(--completion)",
            "tokens/s"
        )
    );
    let _ = write!(
        s,
        r#"<div class="panel"><h3>answers per minute</h3>{}</div>"#,
        svg::bars(
            "answers per minute",
            &answers,
            "var(--answers)",
            "answers/min"
        )
    );
    if series.is_empty() {
        s.push_str(r#"<div class="panel"><h3>errors by class</h3><p class="muted">No failed attempts.</p></div>"#);
    } else {
        let _ = write!(
            s,
            r#"<div class="panel"><h3>errors by class</h3>{}</div>"#,
            svg::stacked("errors by class", xs.clone(), &series)
        );
    }
    s.push_str("</div>");
}

/// A run that fits in one time bucket: its figures in a line, not four single-bar charts.
fn one_bucket(s: &mut String, t: &Timeline, label: &str, width: i64, m: &Minute) {
    let mut errors: Vec<(&String, &u64)> = m.errors.iter().collect();
    errors.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let errors = errors
        .iter()
        .map(|(class, n)| format!("{class} {n}"))
        .collect::<Vec<_>>()
        .join(" · ");
    let _ = write!(
        s,
        "<p>The whole run fell within {width} minute(s) from {}: {} attempts, {} answers, {} failed{}; {:.0} completion tokens per second; ${:.4} in total.</p>",
        esc(label),
        t.attempts,
        m.successes,
        t.failed,
        if errors.is_empty() {
            String::new()
        } else {
            format!(" (errors by class: {})", esc(&errors))
        },
        m.completion_tokens as f64 / (width as f64 * 60.0),
        t.cost_usd
    );
}

/// Error classes in a palette of their own (never a fidelity class's colour, never green),
/// by their place in the one chart that shows them.
fn error_colour(i: usize) -> String {
    format!("var(--e{})", i % 6)
}

fn providers(s: &mut String, r: &VerifyReport) {
    s.push_str("<h2>Provider mix</h2>");
    if r.by_provider.len() <= 1 {
        let (name, samples) = r
            .by_provider
            .iter()
            .next()
            .map_or(("no provider", 0), |(n, g)| (n.as_str(), g.samples));
        let _ = write!(
            s,
            "<p>All {samples} samples were answered by one provider: <b>{}</b>.</p>",
            esc(name)
        );
        return;
    }
    // HTML rows rather than an SVG axis: a long provider name wraps instead of being clipped.
    s.push_str(r#"<div class="panel"><table class="bars"><tr><th>provider</th><th>samples</th><th>share of samples</th></tr>"#);
    let total: u64 = r.by_provider.values().map(|g| g.samples).sum();
    for (name, g) in &r.by_provider {
        let share = pct(g.samples, total);
        let _ = write!(
            s,
            r#"<tr><td class="name">{}</td><td class="n">{} ({share})</td><td><div class="sbar"><i style="width:{share};background:var(--answers)" title="{share}"></i></div></td></tr>"#,
            esc(name),
            g.samples
        );
    }
    s.push_str("</table></div>");
}

/// One row per group with every figure; the reference columns only when some group was
/// compared with reference ids (a run without any would show four columns of zeros).
fn groups_table(s: &mut String, title: &str, groups: &BTreeMap<String, GroupFigures>) {
    let with_reference = groups.values().any(|g| g.reference.compared > 0);
    let _ = write!(
        s,
        r#"<h2>{}</h2><div class="panel"><table><tr><th>name</th><th>samples</th><th>exact ids</th>{}{}<th>prompt Δ=0</th><th>prompt in KVV band</th><th>completion Δ=0</th></tr>"#,
        esc(title),
        FidelityClass::ALL
            .iter()
            .skip(2)
            .map(|c| format!("<th>{}</th>", c.name().replace('_', "_<wbr>")))
            .collect::<String>(),
        if with_reference {
            "<th>compared</th><th>bpe-benign</th><th>trunc. mid-char</th><th>divergent</th>"
        } else {
            ""
        }
    );
    for (name, g) in groups {
        let exact = g.class(FidelityClass::ExactByServerIds) + g.class(FidelityClass::Unique);
        let _ = write!(
            s,
            r#"<tr><td class="name">{}</td><td class="n">{}</td><td class="n">{}</td>"#,
            esc(name),
            g.samples,
            pct(exact, g.samples)
        );
        for c in FidelityClass::ALL.iter().skip(2) {
            let n = g.class(*c);
            let warn = *c == FidelityClass::Inconsistent && n > 0;
            let _ = write!(
                s,
                r#"<td class="n{}">{}</td>"#,
                if warn { " warn" } else { "" },
                n
            );
        }
        let f = &g.reference;
        if with_reference {
            let _ = write!(
                s,
                r#"<td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n{}">{}</td>"#,
                f.compared,
                f.bpe_benign,
                f.truncated_mid_character,
                if f.divergent > 0 { " warn" } else { "" },
                f.divergent,
            );
        }
        let u = &g.usage;
        let _ = write!(
            s,
            r#"<td class="n">{}</td><td class="n">{}</td><td class="n">{}</td></tr>"#,
            pct(u.prompt_tokens.equal, u.prompt_tokens.compared),
            pct(u.prompt_tokens_within_kvv_band, u.prompt_tokens.compared),
            pct(u.completion_tokens.equal, u.completion_tokens.compared),
        );
    }
    s.push_str("</table></div>");
}

/// Multi-turn runs: each conversation listed turn by turn (nothing when the run had none).
fn conversations(s: &mut String, r: &VerifyReport) {
    let c = &r.conversations;
    if c.conversations == 0 && c.incomplete == 0 {
        return;
    }
    let _ = write!(
        s,
        r#"<h2>Conversations (multi-turn)</h2><p>{} conversation(s), one sample each, {} turn(s) checked one by one{}{}.</p><div class="panel"><table><tr><th>conversation</th><th>fidelity</th><th>turn</th><th>turn fidelity</th><th>reference</th><th>prompt Δ</th><th>completion Δ</th></tr>"#,
        c.conversations,
        c.turns,
        if c.incomplete > 0 {
            format!("; {} incomplete (not verified)", c.incomplete)
        } else {
            String::new()
        },
        if (c.conversations as usize) > c.listed.len() {
            format!("; the first {} listed", c.listed.len())
        } else {
            String::new()
        }
    );
    let delta = |d: Option<i64>| d.map_or_else(|| "-".to_string(), |d| d.to_string());
    for conv in &c.listed {
        for (i, t) in conv.turns.iter().enumerate() {
            let head = if i == 0 {
                format!(
                    r#"<td rowspan="{}"><pre>{}</pre></td><td rowspan="{}">{}</td>"#,
                    conv.turns.len(),
                    esc(&conv.id),
                    conv.turns.len(),
                    esc(conv.fidelity)
                )
            } else {
                String::new()
            };
            let bad = t.fidelity == "inconsistent" || t.reference == Some("divergent");
            let _ = write!(
                s,
                r#"<tr>{head}<td class="n">{}</td><td{}>{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td></tr>"#,
                t.turn,
                if bad { r#" class="warn""# } else { "" },
                esc(t.fidelity),
                esc(t.reference.unwrap_or("-")),
                delta(t.prompt_tokens_delta),
                delta(t.completion_tokens_delta)
            );
        }
    }
    s.push_str("</table></div>");
}

fn divergent(s: &mut String, r: &VerifyReport) {
    let f = &r.reference;
    s.push_str("<h2>Divergent samples</h2>");
    if f.divergent == 0 {
        s.push_str(r#"<p class="muted">None.</p>"#);
        return;
    }
    let _ = write!(
        s,
        r#"<p>{} divergent sample(s){}; the context is decoded around the first differing token, marked │.</p><div class="panel"><table><tr><th>id</th><th>dataset / provider</th><th>token</th><th>ours (rebuilt from text)</th><th>reference</th></tr>"#,
        f.divergent,
        if f.divergent as usize > f.divergent_samples.len() {
            format!(", the first {} shown", f.divergent_samples.len())
        } else {
            String::new()
        }
    );
    for d in &f.divergent_samples {
        let _ = write!(
            s,
            r#"<tr><td><pre>{}</pre></td><td>{}<br><span class="muted">{}</span></td><td class="n">{}</td><td><pre>{}</pre></td><td><pre>{}</pre></td></tr>"#,
            esc(&d.id),
            esc(d.source.as_deref().unwrap_or("")),
            esc(d.provider.as_deref().unwrap_or("")),
            d.position,
            esc(&d.ours),
            esc(&d.reference)
        );
    }
    s.push_str("</table></div>");
}

fn problems(s: &mut String, r: &VerifyReport) {
    if r.problems.is_empty() {
        return;
    }
    let _ = write!(
        s,
        r#"<h2>Problems</h2><p>{} record(s) or line(s) could not be checked.</p><div class="panel">"#,
        r.unchecked
    );
    for p in &r.problems {
        let _ = write!(s, "<pre>{}</pre>", esc(p));
    }
    s.push_str("</div>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::figures::DivergentSample;
    use crate::verify::{audit, Gate, Timeline};

    fn report() -> VerifyReport {
        let mut by_source = BTreeMap::new();
        by_source.insert("<img onerror=x>".to_string(), GroupFigures::default());
        VerifyReport {
            draftgen_version: "0".into(),
            run: "/r<un>".into(),
            input: "run",
            model: "m&m".into(),
            samples: Default::default(),
            fidelity_reasons: Default::default(),
            reference: Default::default(),
            usage: Default::default(),
            prompt_lengths: Default::default(),
            completion_lengths: Default::default(),
            by_source,
            by_provider: BTreeMap::new(),
            providers: Default::default(),
            failures: Default::default(),
            inconsistent_samples: Vec::new(),
            build_drops: Default::default(),
            tool_calls: audit::ToolAudit::default(),
            conversations: Default::default(),
            attempts: Timeline::default(),
            run_settings: None,
            problems: vec!["f:1: <bad>".into()],
            unchecked: 1,
            gate: Gate {
                ok: false,
                reasons: vec!["<why>".into()],
            },
            completeness: None,
        }
    }

    #[test]
    fn everything_from_the_run_is_escaped() {
        let mut r = report();
        r.reference.divergent = 1;
        r.reference.divergent_samples.push(DivergentSample {
            id: "<id>".into(),
            source: Some("<s>".into()),
            provider: Some("<prov>".into()),
            position: 3,
            ours: "</pre><script>alert(1)</script>".into(),
            reference: "\"quoted\" & <bold>".into(),
        });
        r.by_provider.insert(
            "<evil>".into(),
            GroupFigures {
                samples: 1,
                ..GroupFigures::default()
            },
        );
        r.failures.total = 1;
        r.failures.caused_by = Some("<cause>".into());
        r.providers =
            crate::verify::providers::table(&r.by_provider, &r.failures, &[], &BTreeMap::new());
        r.inconsistent_samples
            .push(crate::verify::InconsistentSample {
                id: "<inc>".into(),
                provider: Some("<evil>".into()),
                source: None,
                reasons: vec!["<r>".into()],
                first_difference: "<diff>".into(),
            });
        let html = render(&r);
        for raw in [
            "<script", "<img", "<id>", "<s>", "<prov>", "<bad>", "<why>", "<bold>", "<un>",
            "<evil>", "<cause>", "<inc>", "<r>", "<diff>",
        ] {
            assert!(!html.contains(raw), "{raw} reached the page unescaped");
        }
        assert!(html.contains("&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("m&amp;m"));
        assert!(
            !html.contains("Conversations (multi-turn)"),
            "no section without any"
        );
    }

    #[test]
    fn conversations_are_listed_turn_by_turn() {
        use crate::verify::conversations::{ConversationFigures, TurnFigures};
        let mut r = report();
        let turn =
            |n: usize, fidelity: &'static str, reference: Option<&'static str>| TurnFigures {
                id: format!("<c>:turn{n}/2"),
                turn: n,
                fidelity,
                reference,
                divergent_at: None,
                prompt_tokens_delta: Some(0),
                completion_tokens_delta: None,
            };
        r.conversations.add(ConversationFigures {
            id: "<c>".into(),
            source: None,
            provider: None,
            fidelity: "inconsistent",
            fidelity_reasons: Vec::new(),
            turns: vec![
                turn(1, "exact_by_server_ids", Some("exact")),
                turn(2, "inconsistent", None),
            ],
        });
        let html = render(&r);
        assert!(html.contains("Conversations (multi-turn)"));
        assert!(html.contains(r#"<td rowspan="2"><pre>&lt;c&gt;</pre></td>"#));
        assert!(html.contains(r#"<td class="warn">inconsistent</td>"#));
        assert!(!html.contains("<c>"));
    }

    #[test]
    fn all_equal_is_one_line_and_dataset_names_stay_whole() {
        let mut r = report();
        r.by_source.clear();
        let (a, b) = (
            "reason_tool_use_demo_15_part_one.jsonl",
            "reason_tool_use_demo_15_part_two.jsonl",
        );
        for (name, class) in [(a, "unique"), (b, "lossy")] {
            let mut g = GroupFigures {
                samples: 2,
                ..GroupFigures::default()
            };
            g.by_fidelity.insert(class.into(), 2);
            g.prompt_lengths.add(5);
            g.prompt_lengths.add(40);
            r.by_source.insert(name.into(), g);
        }
        r.samples.total = 4;
        r.samples.by_fidelity.insert("unique".into(), 2);
        r.samples.by_fidelity.insert("lossy".into(), 2);
        for _ in 0..4 {
            r.usage.prompt_tokens.add(7, 7);
            r.usage.completion_tokens.add(9, 9);
        }
        let html = render(&r);
        // Each name whole, in the fidelity rows and both length tables.
        assert_eq!(html.matches(a).count(), 3, "{html}");
        assert_eq!(html.matches(b).count(), 3);
        assert!(html.contains("all 4 prompt(s) and all 4 completion(s)"));
        assert!(
            !html.contains("prompts compared"),
            "no usage table when all agree"
        );
        // Lengths 5 and 40: buckets 4, 8, 16, 32, with no gap.
        assert!(html.contains(
            r#"<th class="n">4</th><th class="n">8</th><th class="n">16</th><th class="n">32</th></tr>"#
        ));
        r.by_source.remove(b);
        r.samples.by_fidelity.insert("lossy".into(), 0);
        r.samples.total = 2;
        assert!(render(&r).contains("All 2 samples are <b>unique</b>"));
    }

    /// `--name: #rrggbb` values of the page's CSS (light and dark).
    fn css_colours(prefix: &str) -> Vec<(String, [u8; 3])> {
        CSS.split(';')
            .filter_map(|decl| {
                let (name, value) = decl.trim().rsplit_once(':')?;
                let name = name.rsplit(['{', ' ', '\n']).next()?.trim();
                let hex = value.trim().strip_prefix('#')?;
                let rgb = |i: usize| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok();
                name.starts_with(prefix)
                    .then_some((name.to_string(), [rgb(0)?, rgb(2)?, rgb(4)?]))
            })
            .collect()
    }

    #[test]
    fn error_classes_have_their_own_colours_and_none_is_green() {
        let errors: Vec<(String, [u8; 3])> = css_colours("--e")
            .into_iter()
            .filter(|(name, _)| name[3..].parse::<u8>().is_ok())
            .collect();
        assert_eq!(
            errors.len(),
            12,
            "six error colours, light and dark: {errors:?}"
        );
        for (name, [r, g, b]) in &errors {
            assert!(g < r.max(b), "{name} is green");
        }
        let classes: Vec<[u8; 3]> = FidelityClass::ALL
            .iter()
            .flat_map(|c| {
                let var = html_tables::class_colour(*c)
                    .trim_start_matches("var(")
                    .trim_end_matches(')');
                css_colours(var)
                    .into_iter()
                    .filter(move |(name, _)| name == var)
                    .map(|(_, rgb)| rgb)
            })
            .collect();
        assert_eq!(classes.len(), 12);
        assert!(errors.iter().all(|(_, rgb)| !classes.contains(rgb)));

        // The errors chart of a two-minute run draws its classes in those colours only.
        let mut r = report();
        for minute in [0i64, 1] {
            let mut m = Minute {
                attempts: 3,
                ..Minute::default()
            };
            m.errors.insert("server_error".into(), 1);
            m.errors.insert("rate_limited".into(), 1);
            r.attempts.minutes.insert(minute, m);
        }
        let html = render(&r);
        let chart = html
            .split_once(r#"aria-label="errors by class""#)
            .map(|(_, rest)| rest.split_once("</svg>").map_or(rest, |(c, _)| c))
            .expect("an errors chart");
        assert!(chart.contains(r#"fill="var(--e0)""#) && chart.contains(r#"fill="var(--e1)""#));
        assert!(!chart.contains("var(--exact)") && !chart.contains("var(--unique)"));
    }

    #[test]
    fn the_answer_card_says_what_is_missing_or_that_it_is_unknown() {
        let card = answer_card(&Completeness {
            prompts: Some(458),
            no_answer: Some(409),
            locked_by_writer: true,
        });
        assert!(card.contains(r#"class="card alert"><b>409</b>"#), "{card}");
        assert!(
            card.contains("(of 458); a writer is still appending"),
            "{card}"
        );
        let done = answer_card(&Completeness {
            prompts: Some(3),
            no_answer: Some(0),
            locked_by_writer: false,
        });
        assert!(done.contains(r#"class="card"><b>0</b>"#), "{done}");
        let unknown = answer_card(&Completeness::default());
        assert!(unknown.contains("<b>unknown</b>"), "{unknown}");
        assert_eq!(Completeness::of_report(&report()), Completeness::default());
    }

    #[test]
    fn time_buckets_cover_the_whole_span() {
        let mut t = Timeline::default();
        for minute in [0i64, 1, 100, 200] {
            t.minutes.insert(
                minute,
                Minute {
                    attempts: 1,
                    ..Minute::default()
                },
            );
        }
        let b = buckets(&t);
        assert!(b.len() as i64 <= MAX_TIME_BARS);
        assert_eq!(b.iter().map(|(_, _, m)| m.attempts).sum::<u64>(), 4);
    }
}
