//! The report's trust sections: every fidelity class with its reasons counted, what `build`
//! drops, the inconsistent samples by name, the provider table with its verdicts and routing
//! line, the tool-call section's heading (tool-call samples rebuilt exactly, per provider) and
//! the glossary of classes. Text from the run is escaped ([`esc`]).

use std::fmt::Write as _;

use super::svg::esc;
use super::trust::{counted, GLOSSARY};
use super::{Verdict, VerifyReport};
use crate::reconstruct::FidelityClass;

fn pct(n: u64, of: u64) -> String {
    if of == 0 {
        "–".into()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / of as f64)
    }
}

/// Every class with its share and its reasons, what build drops, the inconsistent samples.
pub fn classes(s: &mut String, r: &VerifyReport) {
    s.push_str(r#"<h2>What to trust</h2><div class="panel"><table><tr><th>fidelity class</th><th>samples</th><th>share</th><th>reasons (samples)</th></tr>"#);
    for class in FidelityClass::ALL {
        let n = r
            .samples
            .by_fidelity
            .get(class.name())
            .copied()
            .unwrap_or(0);
        let reasons = r
            .fidelity_reasons
            .get(class.name())
            .map(|m| counted(m.iter()))
            .unwrap_or_default();
        let warn = class == FidelityClass::Inconsistent && n > 0;
        let _ = write!(
            s,
            r#"<tr><td>{}</td><td class="n{}">{n}</td><td class="n">{}</td><td>{}</td></tr>"#,
            class.name(),
            if warn { " warn" } else { "" },
            pct(n, r.samples.total),
            esc(&reasons)
        );
    }
    let _ = write!(s, "</table><p>{}.</p>", esc(&r.build_drops.note));
    if !r.inconsistent_samples.is_empty() {
        s.push_str(r#"<h3>inconsistent samples</h3><table><tr><th>id</th><th>provider</th><th>reasons</th><th>first difference</th></tr>"#);
        for i in &r.inconsistent_samples {
            let _ = write!(
                s,
                "<tr><td><pre>{}</pre></td><td>{}</td><td>{}</td><td><pre>{}</pre></td></tr>",
                esc(&i.id),
                esc(i.provider.as_deref().unwrap_or("–")),
                esc(&i.reasons.join(", ")),
                esc(&i.first_difference)
            );
        }
        s.push_str("</table>");
    }
    s.push_str("</div>");
}

/// The provider table with verdicts, the routing line and the failures' cause.
pub fn providers(s: &mut String, r: &VerifyReport) {
    s.push_str(r#"<h2>Providers and verdicts</h2><div class="panel"><table><tr><th>provider</th><th>verdict</th><th>answers</th><th>failures</th><th>conventions (evidence)</th><th>exact</th><th>ambiguous</th><th>lossy</th><th>dropped</th><th>tool-call ids</th></tr>"#);
    for p in &r.providers.rows {
        let badge = match p.verdict {
            Verdict::Use => "ok",
            Verdict::Avoid => "bad",
        };
        let conventions = p
            .conventions
            .iter()
            .map(|c| format!("{} ({})", c.name, c.evidence))
            .collect::<Vec<_>>()
            .join("; ");
        let _ = write!(
            s,
            r#"<tr><td>{}</td><td><span class="badge {badge}">{}</span> {}</td><td class="n">{}</td><td>{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n{}">{}</td><td>{}</td></tr>"#,
            esc(&p.provider),
            p.verdict.name(),
            esc(&p.reason),
            p.answers,
            esc(&if p.failed == 0 {
                "0".to_string()
            } else {
                format!("{} ({})", p.failed, counted(p.failures_by_class.iter()))
            }),
            esc(if conventions.is_empty() {
                "–"
            } else {
                &conventions
            }),
            pct(p.exact, p.samples),
            pct(p.ambiguous, p.samples),
            pct(p.lossy, p.samples),
            if p.dropped > 0 { " warn" } else { "" },
            pct(p.dropped, p.samples),
            esc(p.call_id_form.as_deref().unwrap_or("–")),
        );
    }
    s.push_str("</table>");
    match &r.providers.routing {
        Some(line) => {
            let _ = write!(
                s,
                "<p>Routing for the run config:</p><pre>{}</pre>",
                esc(line)
            );
        }
        None => s.push_str(r#"<p class="muted">No provider to route around.</p>"#),
    }
    if let Some(cause) = &r.failures.caused_by {
        let failed = r.failures.by_provider.get(cause).map_or(0, |a| a.failed);
        let _ = write!(
            s,
            r#"<p class="warn">{} of {} failed attempts came from {} (failures.caused_by).</p>"#,
            failed,
            r.failures.total,
            esc(cause)
        );
    }
    s.push_str("</div>");
}

/// The audit's section (`ToolAudit::html_section`, which brings its own heading) led by the
/// share of tool-call samples rebuilt exactly, per provider: one heading for one section.
pub fn tool_call_section(r: &VerifyReport, audit: String) -> String {
    let shares: Vec<String> = r
        .by_provider
        .iter()
        .filter(|(_, g)| g.tool_call_samples > 0)
        .map(|(name, g)| {
            format!(
                "{} {} of {} ({})",
                name,
                g.tool_call_exact,
                g.tool_call_samples,
                pct(g.tool_call_exact, g.tool_call_samples)
            )
        })
        .collect();
    if shares.is_empty() {
        return audit;
    }
    let lead = format!(
        r#"<p class="lead"><b>Tool-call samples rebuilt exactly:</b> {}</p>"#,
        esc(&shares.join(" · "))
    );
    const HEADING: &str = "<h2>Tool calls</h2>";
    match audit.find(HEADING) {
        Some(at) => {
            let end = at + HEADING.len();
            format!("{}{lead}{}", &audit[..end], &audit[end..])
        }
        None => format!("{lead}{audit}"),
    }
}

/// What each fidelity class means.
pub fn glossary(s: &mut String) {
    s.push_str(r#"<h2>Glossary of fidelity classes</h2><div class="panel"><table>"#);
    for (class, meaning) in GLOSSARY {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td></tr>",
            class.name(),
            esc(meaning)
        );
    }
    s.push_str("</table></div>");
}
