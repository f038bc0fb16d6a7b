//! The probe's terminal table: one block per target (its recognized shape and the `--kind` to
//! declare), one row per scenario.

use std::fmt::Write;

use super::conventions::ConventionsFound;
use super::{Probe, ProbeReport};

const COLUMNS: [&str; 11] = [
    "scenario",
    "status",
    "ms",
    "cost",
    "reasoning",
    "</think>",
    "tool calls",
    "ids",
    "args",
    "spaces",
    "prompt_tokens",
];

fn cells(p: &Probe) -> Vec<String> {
    let dash = || "-".to_string();
    let mut row = vec![p.scenario.name().to_string(), p.status.clone()];
    row.push(p.latency_ms.map_or_else(dash, |ms| ms.to_string()));
    let Some(o) = &p.observed else {
        row.extend(std::iter::repeat_with(dash).take(COLUMNS.len() - row.len()));
        return row;
    };
    row.push(o.cost.map_or_else(dash, |c| format!("{c:.6}")));
    row.push(o.reasoning_field.unwrap_or("-").to_string());
    row.push(o.think_close.unwrap_or("-").to_string());
    row.push(match o.tool_calls {
        "structured" => format!("structured x{}", o.tool_call_count),
        other => other.to_string(),
    });
    row.push(o.call_ids.unwrap_or("-").to_string());
    row.push(o.arguments.unwrap_or("-").to_string());
    row.push(o.spaces_around_markers.map_or_else(dash, |s| s.to_string()));
    row.push(match (o.prompt_tokens, p.our_prompt_tokens) {
        (Some(theirs), Some(ours)) if theirs == ours as u64 => format!("{theirs} = ours"),
        (Some(theirs), Some(ours)) => format!("{theirs} != ours {ours}"),
        (Some(theirs), None) => theirs.to_string(),
        (None, _) => dash(),
    });
    row
}

pub fn render(report: &ProbeReport) -> String {
    let mut out = String::new();
    for target in &report.targets {
        let quantization = target
            .quantization
            .as_ref()
            .map_or_else(String::new, |q| format!(" [{q}]"));
        if target.target == target.base_url {
            let _ = writeln!(out, "{}{quantization}", target.target);
        } else {
            let _ = writeln!(out, "{}{quantization} ({})", target.target, target.base_url);
        }
        match &target.recognized {
            Some(r) => {
                let _ = writeln!(
                    out,
                    "  shape: {} — declare `{}` (fits {} of {} clues{}{})",
                    r.shape,
                    r.declare,
                    r.fits,
                    r.clues,
                    if r.also_fits.is_empty() {
                        String::new()
                    } else {
                        format!("; as well: {}", r.also_fits.join(", "))
                    },
                    if r.contradicted_by.is_empty() {
                        String::new()
                    } else {
                        format!("; not explained: {}", r.contradicted_by.join("; "))
                    }
                );
            }
            None => {
                let _ = writeln!(out, "  shape: unknown (no scenario was answered)");
            }
        }
        let rows: Vec<Vec<String>> = target.probes.iter().map(cells).collect();
        let mut widths: Vec<usize> = COLUMNS.iter().map(|c| c.chars().count()).collect();
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: &mut dyn Iterator<Item = &str>| {
            let mut s = String::from(" ");
            for (cell, w) in cells.zip(&widths) {
                let _ = write!(s, " {cell:<w$}");
            }
            s.trim_end().to_string()
        };
        let _ = writeln!(out, "{}", line(&mut COLUMNS.iter().copied()));
        for row in &rows {
            let _ = writeln!(out, "{}", line(&mut row.iter().map(String::as_str)));
        }
        for p in &target.probes {
            if let Some(e) = &p.error {
                let _ = writeln!(out, "  {}: {}", p.scenario.name(), e);
            }
        }
        out.push('\n');
    }
    verdict_lines(&mut out, report);
    out
}

/// Each target's verdict with its evidence, and the routing line.
fn verdict_lines(out: &mut String, report: &ProbeReport) {
    if report.verdicts.is_empty() {
        return;
    }
    let _ = writeln!(out, "verdicts");
    for v in &report.verdicts {
        let _ = writeln!(out, "  {:<5} {}: {}", v.verdict, v.target, v.reason);
        for line in &v.evidence {
            let _ = writeln!(out, "        {line}");
        }
        if !v.call_ids.is_empty() {
            let _ = writeln!(out, "        tool-call ids: {}", v.call_ids.join(", "));
        }
        convention_lines(out, &v.conventions);
    }
    if let Some(line) = &report.routing {
        let _ = writeln!(out, "routing: paste into the run config: {line}");
    }
}

/// What `build`'s inference finds in a target's answers.
fn convention_lines(out: &mut String, found: &ConventionsFound) {
    if found.evidence_answers == 0 {
        return;
    }
    let adopted = if found.adopted.is_empty() {
        "none".to_string()
    } else {
        found.adopted.join(", ")
    };
    let _ = writeln!(
        out,
        "        conventions inferred from {} answer(s): {adopted}",
        found.evidence_answers
    );
    for line in &found.shown {
        let _ = writeln!(out, "          {line}");
    }
    if let Some(why) = &found.below_minimum {
        let _ = writeln!(out, "          below the minimum: {why}");
    }
    if !found.reasoning_fields.is_empty() {
        let fields: Vec<String> = found
            .reasoning_fields
            .iter()
            .map(|(field, n)| format!("{field} in {n}"))
            .collect();
        let _ = writeln!(out, "          reasoning field: {}", fields.join(", "));
    }
}
