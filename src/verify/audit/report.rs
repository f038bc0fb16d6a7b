//! The audit for people: a plain-text table for the terminal and a self-contained HTML
//! `<section>` (inline CSS and SVG bars, no script, no network) for `report.html`.

use std::fmt::Write;

use super::answer::Problem;
use super::{Figures, ToolAudit};
use crate::verify::svg::esc;

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |x| format!("{:.1}%", x * 100.0))
}

/// What the schema-accuracy columns are, by definition.
const LEGEND: &str = "  acc-k2vv: ToolCall-Schema Accuracy as K2-Vendor-Verifier defines it: of the answers ending with finish_reason tool_calls to requests with the tools parameter, those whose calls all pass its validate_tool_call (an answer without calls counts, as all() over none is true)\n  acc-strict: the same, an answer without calls counting as a failure\n";
const LEGEND_SYSTEM: &str = "  sys-k2vv, sys-strict: the same two over answers to requests whose tools are declared only in the system prompt (schemas read from the prompt)\n";
const LEGEND_PROBLEMS: &str = "  problems count each check of a call on its own (name declared, arguments JSON, arguments fit the schema)\n";

/// One row of figures per group, problems as columns (only problems found somewhere).
pub fn terminal_table(audit: &ToolAudit) -> String {
    let problems: Vec<Problem> = Problem::ALL
        .into_iter()
        .filter(|p| audit.all.count(*p) > 0)
        .collect();
    let with_f1 = audit.reference.is_some();
    let mut header = vec![
        "group".to_string(),
        "answers".into(),
        "decl(p/s)".into(),
        "trig".into(),
        "trig%".into(),
        "calls".into(),
        "acc-k2vv".into(),
        "acc-strict".into(),
    ];
    let with_system = audit.all.tools_in_system_prompt > 0;
    if with_system {
        header.extend(["sys-k2vv".to_string(), "sys-strict".into()]);
    }
    if with_f1 {
        header.push("F1".into());
    }
    header.extend(problems.iter().map(|p| p.label().to_string()));
    let mut rows = vec![header];
    let mut row = |name: String, f: &Figures| {
        let mut r = vec![
            name,
            f.answers.to_string(),
            format!(
                "{}({}/{})",
                f.declaring_tools, f.tools_as_parameter, f.tools_in_system_prompt
            ),
            f.triggered.to_string(),
            pct(f.trigger_rate),
            f.calls.to_string(),
            pct(f.schema_accuracy.schema_accuracy),
            pct(f.schema_accuracy.schema_accuracy_calls_required),
        ];
        if with_system {
            let s = &f.schema_accuracy_system_prompt;
            r.extend([
                pct(s.schema_accuracy),
                pct(s.schema_accuracy_calls_required),
            ]);
        }
        if with_f1 {
            r.push(pct(f
                .trigger_similarity
                .as_ref()
                .and_then(|t| t.tool_call_f1)));
        }
        r.extend(problems.iter().map(|p| f.count(*p).to_string()));
        rows.push(r);
    };
    row("all".into(), &audit.all);
    for (name, f) in &audit.by_source {
        row(format!("dataset {name}"), f);
    }
    for (name, f) in &audit.by_provider {
        row(format!("provider {name}"), f);
    }
    // No heading: `verify` prints its own above the table.
    let mut out = aligned(&rows);
    if problems.is_empty() {
        out.push_str("  no tool-call problems found\n");
    }
    out.push_str(LEGEND);
    if with_system {
        out.push_str(LEGEND_SYSTEM);
    }
    out.push_str(LEGEND_PROBLEMS);
    if let Some(t) = &audit.thresholds {
        let _ = writeln!(out, "  thresholds: {}", t.basis);
    }
    out
}

const K2VV_TITLE: &str =
    "answers ending with tool_calls whose calls all pass validate_tool_call, none counting as all";
const STRICT_TITLE: &str = "answers ending with tool_calls with at least one call, all valid";

/// Rows as text columns: the first left-aligned, the rest right-aligned.
fn aligned(rows: &[Vec<String>]) -> String {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, w))| {
                if c == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
    }
    out
}

/// A bar for a rate: an inline SVG, coloured by whether it meets `min`.
fn bar(rate: Option<f64>, min: Option<f64>) -> String {
    let Some(rate) = rate else {
        return "<span class=\"ta-na\">-</span>".to_string();
    };
    let width = (rate.clamp(0.0, 1.0) * 100.0).round();
    let class = match min {
        Some(min) if rate < min => "ta-bad",
        _ => "ta-ok",
    };
    format!(
        "<svg class=\"ta-bar\" width=\"100\" height=\"10\" viewBox=\"0 0 100 10\" role=\"img\" aria-label=\"{p}\"><rect width=\"100\" height=\"10\" class=\"ta-track\"/><rect width=\"{width}\" height=\"10\" class=\"{class}\"/></svg> {p}",
        p = esc(&pct(Some(rate)))
    )
}

fn table(out: &mut String, title: &str, groups: &[(String, &Figures)], audit: &ToolAudit) {
    let min_acc = audit.thresholds.as_ref().map(|t| t.schema_accuracy_min);
    let min_f1 = audit.thresholds.as_ref().map(|t| t.tool_call_f1_min);
    let problems: Vec<Problem> = Problem::ALL
        .into_iter()
        .filter(|p| audit.all.count(*p) > 0)
        .collect();
    let _ = write!(
        out,
        "<h3>{}</h3><table class=\"ta-table\"><thead><tr><th>{}</th><th>answers</th><th>declare tools (parameter / system prompt)</th><th>triggered</th><th title=\"{K2VV_TITLE}\">schema accuracy as K2-Vendor-Verifier defines it, tools parameter (acc-k2vv)</th><th title=\"{STRICT_TITLE}\">schema accuracy, calls required, tools parameter (acc-strict)</th><th title=\"{K2VV_TITLE}\">schema accuracy as K2-Vendor-Verifier defines it, tools only in the system prompt (sys-k2vv)</th><th title=\"{STRICT_TITLE}\">schema accuracy, calls required, tools only in the system prompt (sys-strict)</th>",
        esc(title),
        esc(title)
    );
    if audit.reference.is_some() {
        out.push_str("<th>trigger F1</th>");
    }
    for p in &problems {
        let _ = write!(out, "<th>{}</th>", esc(p.name()));
    }
    out.push_str("</tr></thead><tbody>");
    for (name, f) in groups {
        let never = f.callable > 0 && f.triggered == 0;
        let _ = write!(
            out,
            "<tr{}><td>{}</td><td>{}</td><td>{} ({} / {})</td><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            if never { " class=\"ta-flag\"" } else { "" },
            esc(name),
            f.answers,
            f.declaring_tools,
            f.tools_as_parameter,
            f.tools_in_system_prompt,
            f.triggered,
            bar(f.trigger_rate, None),
            bar(f.schema_accuracy.schema_accuracy, min_acc),
            bar(f.schema_accuracy.schema_accuracy_calls_required, min_acc),
            bar(f.schema_accuracy_system_prompt.schema_accuracy, min_acc),
            bar(
                f.schema_accuracy_system_prompt
                    .schema_accuracy_calls_required,
                min_acc
            ),
        );
        if audit.reference.is_some() {
            let f1 = f.trigger_similarity.as_ref().and_then(|t| t.tool_call_f1);
            let _ = write!(out, "<td>{}</td>", bar(f1, min_f1));
        }
        for p in &problems {
            let n = f.count(*p);
            let _ = write!(
                out,
                "<td{}>{n}</td>",
                if n > 0 { " class=\"ta-bad-text\"" } else { "" }
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
}

/// The `<section>` for `report.html`.
pub fn html_section(audit: &ToolAudit) -> String {
    let mut out = String::from(
        "<section class=\"tool-audit\"><style>\
.tool-audit table{border-collapse:collapse;margin:.5em 0 1em}\
.tool-audit th,.tool-audit td{border:1px solid color-mix(in srgb,currentColor 25%,transparent);padding:.2em .5em;text-align:right;font-variant-numeric:tabular-nums}\
.tool-audit td:first-child,.tool-audit th:first-child{text-align:left}\
.tool-audit .ta-track{fill:color-mix(in srgb,currentColor 15%,transparent)}\
.tool-audit .ta-ok{fill:#2e9e5b}.tool-audit .ta-bad{fill:#d1382f}\
.tool-audit .ta-bad-text{color:#d1382f;font-weight:600}\
.tool-audit tr.ta-flag td{background:color-mix(in srgb,#d1382f 18%,transparent)}\
.tool-audit .ta-flags li{color:#d1382f;font-weight:600}\
.tool-audit code{font-size:.9em}\
</style><h2>Tool calls</h2>",
    );
    let flags = audit.red_flags();
    if !flags.is_empty() {
        out.push_str("<ul class=\"ta-flags\">");
        for flag in &flags {
            let _ = write!(out, "<li>{}</li>", esc(flag));
        }
        out.push_str("</ul>");
    }
    let sources: Vec<(String, &Figures)> = audit
        .by_source
        .iter()
        .map(|(k, v)| (k.clone(), v))
        .collect();
    let providers: Vec<(String, &Figures)> = audit
        .by_provider
        .iter()
        .map(|(k, v)| (k.clone(), v))
        .collect();
    table(&mut out, "dataset", &sources, audit);
    table(&mut out, "provider", &providers, audit);
    let _ = write!(
        out,
        "<pre>{}{}{}</pre>",
        esc(LEGEND),
        esc(LEGEND_SYSTEM),
        esc(LEGEND_PROBLEMS)
    );
    if let Some(t) = &audit.thresholds {
        let _ = write!(out, "<p>Thresholds: {}.</p>", esc(&t.basis));
    }
    if let Some(r) = &audit.reference {
        let _ = write!(
            out,
            "<p>Reference run <code>{}</code>: {} prompts answered in both runs, {} only here, {} only there.</p>",
            esc(&r.run),
            r.paired,
            r.only_here,
            r.only_in_reference
        );
    }
    if !audit.examples.is_empty() {
        out.push_str("<h3>Examples</h3><table class=\"ta-table\"><thead><tr><th>problem</th><th>prompt</th><th>dataset</th><th>provider</th><th>call</th><th>detail</th></tr></thead><tbody>");
        for e in &audit.examples {
            let _ = write!(
                out,
                "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td style=\"text-align:left\">{}</td></tr>",
                esc(e.problem.name()),
                esc(&e.id),
                esc(&e.source),
                esc(&e.provider),
                e.call.map_or_else(String::new, |c| c.to_string()),
                esc(&e.detail)
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</section>");
    out
}
