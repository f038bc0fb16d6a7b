//! Fault injection: which failure (if any) an attempt gets.
//!
//! Rates are exclusive shares of attempts: with `--fault-429 0.2 --fault-5xx 0.1`, 20% of
//! attempts get a 429, 10% a 5xx and 70% succeed. If the rates add up to more than
//! [`MAX_TOTAL_FAULT_RATE`] they are scaled down together, so some attempts always succeed and a
//! retrying client finishes. The draw depends on (seed, request key, attempt number), so the same
//! run replays the same faults and a retry gets a fresh draw.

use rand::Rng;

use super::seed::{self, Purpose};

/// Above this total, rates are scaled down proportionally.
pub const MAX_TOTAL_FAULT_RATE: f64 = 0.9;

/// One class of injected failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// HTTP 429 with `Retry-After`.
    RateLimited,
    /// HTTP 500, 502 or 503.
    ServerError,
    /// No answer for [`SimConfig::hang`](super::SimConfig::hang) (mid-stream when streaming).
    Hang,
    /// Status 200, then an OpenRouter-shaped `error` chunk and `finish_reason: "error"`.
    MidStream,
    /// Status 200 whose body is an error object.
    ErrorIn200,
    /// Status 200 with a body (or SSE event) that is not valid JSON.
    Malformed,
    /// The connection drops halfway through the body or stream.
    Truncated,
    /// A well-formed answer with no content, no reasoning and no tool calls.
    Empty,
}

impl FaultKind {
    pub const ALL: [FaultKind; 8] = [
        FaultKind::RateLimited,
        FaultKind::ServerError,
        FaultKind::Hang,
        FaultKind::MidStream,
        FaultKind::ErrorIn200,
        FaultKind::Malformed,
        FaultKind::Truncated,
        FaultKind::Empty,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::RateLimited => "429",
            FaultKind::ServerError => "5xx",
            FaultKind::Hang => "hang",
            FaultKind::MidStream => "midstream",
            FaultKind::ErrorIn200 => "error200",
            FaultKind::Malformed => "malformed",
            FaultKind::Truncated => "truncate",
            FaultKind::Empty => "empty",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// Per-class fault rates, each 0..1 of attempts.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FaultRates {
    pub rate_limited: f64,
    pub server_error: f64,
    pub hang: f64,
    pub mid_stream: f64,
    pub error_in_200: f64,
    pub malformed: f64,
    pub truncated: f64,
    pub empty: f64,
}

impl FaultRates {
    /// Every class at `rate` (then scaled down together if they exceed the total cap).
    pub fn all(rate: f64) -> Self {
        FaultRates {
            rate_limited: rate,
            server_error: rate,
            hang: rate,
            mid_stream: rate,
            error_in_200: rate,
            malformed: rate,
            truncated: rate,
            empty: rate,
        }
    }

    pub fn get(&self, kind: FaultKind) -> f64 {
        match kind {
            FaultKind::RateLimited => self.rate_limited,
            FaultKind::ServerError => self.server_error,
            FaultKind::Hang => self.hang,
            FaultKind::MidStream => self.mid_stream,
            FaultKind::ErrorIn200 => self.error_in_200,
            FaultKind::Malformed => self.malformed,
            FaultKind::Truncated => self.truncated,
            FaultKind::Empty => self.empty,
        }
    }

    pub fn set(&mut self, kind: FaultKind, rate: f64) {
        let slot = match kind {
            FaultKind::RateLimited => &mut self.rate_limited,
            FaultKind::ServerError => &mut self.server_error,
            FaultKind::Hang => &mut self.hang,
            FaultKind::MidStream => &mut self.mid_stream,
            FaultKind::ErrorIn200 => &mut self.error_in_200,
            FaultKind::Malformed => &mut self.malformed,
            FaultKind::Truncated => &mut self.truncated,
            FaultKind::Empty => &mut self.empty,
        };
        *slot = rate;
    }

    /// The share of attempts each class actually gets, after clamping to 0..1 and the total cap.
    pub fn effective(&self, kind: FaultKind) -> f64 {
        let total: f64 = FaultKind::ALL.iter().map(|k| clamp(self.get(*k))).sum();
        let scale = if total > MAX_TOTAL_FAULT_RATE {
            MAX_TOTAL_FAULT_RATE / total
        } else {
            1.0
        };
        clamp(self.get(kind)) * scale
    }

    /// The fault for attempt `attempt` of the request `key`, if any.
    pub fn decide(&self, seed: u64, key: u64, attempt: u32) -> Option<FaultKind> {
        let draw: f64 = seed::rng(seed, key, Purpose::Fault, attempt).random();
        let mut upper = 0.0;
        for kind in FaultKind::ALL {
            upper += self.effective(kind);
            if draw < upper {
                return Some(kind);
            }
        }
        None
    }
}

fn clamp(rate: f64) -> f64 {
    if rate.is_nan() {
        0.0
    } else {
        rate.clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_rates_no_faults() {
        let rates = FaultRates::default();
        assert!((0..1000).all(|k| rates.decide(7, k, 0).is_none()));
    }

    #[test]
    fn rates_above_the_cap_are_scaled_together() {
        let rates = FaultRates::all(0.5);
        let total: f64 = FaultKind::ALL.iter().map(|k| rates.effective(*k)).sum();
        assert!((total - MAX_TOTAL_FAULT_RATE).abs() < 1e-9);
        let shares: Vec<f64> = FaultKind::ALL.iter().map(|k| rates.effective(*k)).collect();
        assert!(shares.windows(2).all(|w| (w[0] - w[1]).abs() < 1e-12));
    }

    #[test]
    fn each_class_occurs_at_about_its_rate() {
        let rates = FaultRates {
            rate_limited: 0.2,
            truncated: 0.1,
            ..FaultRates::default()
        };
        let n = 20_000;
        let mut counts = [0usize; 8];
        for key in 0..n {
            if let Some(kind) = rates.decide(3, key, 0) {
                counts[kind.index()] += 1;
            }
        }
        let share = |k: FaultKind| counts[k.index()] as f64 / n as f64;
        assert!((share(FaultKind::RateLimited) - 0.2).abs() < 0.02);
        assert!((share(FaultKind::Truncated) - 0.1).abs() < 0.02);
        assert_eq!(counts[FaultKind::Hang.index()], 0);
    }

    #[test]
    fn a_retry_gets_a_fresh_draw_and_a_rerun_the_same_one() {
        let rates = FaultRates::all(0.1);
        let first: Vec<_> = (0..200).map(|a| rates.decide(1, 42, a)).collect();
        let again: Vec<_> = (0..200).map(|a| rates.decide(1, 42, a)).collect();
        assert_eq!(first, again);
        assert!(first.iter().any(|f| f.is_none()));
        assert!(first.iter().any(|f| f.is_some()));
    }
}

/// A tool-call defect a provider injects into an answer that is otherwise fine (what
/// the tool-call audit must find). Unlike [`FaultKind`]s, defects are not exclusive and depend on
/// the request only, not the attempt: a retry gets the same defective answer, as from a provider
/// whose parser or model is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolDefect {
    /// The first call names a tool the request did not declare (its native id follows the name).
    UndeclaredName,
    /// The first call's arguments lose their last character: not JSON any more.
    InvalidJson,
    /// The first call's arguments become `[]`: JSON, but not the object the schema declares.
    SchemaViolation,
    /// The first call's id is sanitized to `functions_NAME_N` (a client's rewrite, exo #2281).
    /// Only visible on flavours that pass the model's ids through (`openrouter` passes its
    /// upstream's; not vLLM 0.11's non-streamed answers, which mint `chatcmpl-tool-…` ids).
    WrongIdFormat,
    /// A stray `<|tool_calls_section_end|>` is left in `content` of an answer with calls.
    MarkersInContent,
    /// The calls are written into the reasoning as native text instead of being parsed
    /// (`finish_reason` `stop`, no `tool_calls`), as seen from Chutes.
    CallInReasoning,
    /// `native_finish_reason` is `stop` where `finish_reason` is `tool_calls` (vLLM PR #43155);
    /// only the `openrouter` flavour sends `native_finish_reason`.
    FinishDisagreement,
    /// The model never calls a tool, although tools are declared.
    NeverCalls,
}

impl ToolDefect {
    pub const ALL: [ToolDefect; 8] = [
        ToolDefect::UndeclaredName,
        ToolDefect::InvalidJson,
        ToolDefect::SchemaViolation,
        ToolDefect::WrongIdFormat,
        ToolDefect::MarkersInContent,
        ToolDefect::CallInReasoning,
        ToolDefect::FinishDisagreement,
        ToolDefect::NeverCalls,
    ];

    /// The name in `--provider NAME:FLAVOR:DEFECT=RATE,…`.
    pub fn name(self) -> &'static str {
        match self {
            ToolDefect::UndeclaredName => "undeclared",
            ToolDefect::InvalidJson => "badjson",
            ToolDefect::SchemaViolation => "schema",
            ToolDefect::WrongIdFormat => "badid",
            ToolDefect::MarkersInContent => "markers",
            ToolDefect::CallInReasoning => "inreasoning",
            ToolDefect::FinishDisagreement => "finish",
            ToolDefect::NeverCalls => "nocall",
        }
    }

    pub fn from_name(name: &str) -> Option<ToolDefect> {
        ToolDefect::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// Per-defect rates, each 0..1 of answers, drawn independently.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ToolDefectRates {
    rates: [f64; 8],
}

impl ToolDefectRates {
    pub fn get(&self, defect: ToolDefect) -> f64 {
        self.rates[defect as usize]
    }

    pub fn set(&mut self, defect: ToolDefect, rate: f64) {
        self.rates[defect as usize] = rate;
    }

    pub fn is_empty(&self) -> bool {
        self.rates.iter().all(|r| clamp(*r) == 0.0)
    }

    /// The defects the answer to request `key` gets (same for every attempt).
    pub fn decide(&self, seed: u64, key: u64) -> Vec<ToolDefect> {
        ToolDefect::ALL
            .into_iter()
            .filter(|d| {
                let rate = clamp(self.get(*d));
                rate > 0.0 && {
                    let draw: f64 = seed::rng(seed, key, Purpose::Defect, *d as u32).random();
                    draw < rate
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod defect_tests {
    use super::*;

    #[test]
    fn defects_are_per_request_and_at_their_rate() {
        let mut rates = ToolDefectRates::default();
        rates.set(ToolDefect::InvalidJson, 1.0);
        rates.set(ToolDefect::NeverCalls, 0.5);
        let n = 4000;
        let mut never = 0;
        for key in 0..n {
            let d = rates.decide(1, key);
            assert!(d.contains(&ToolDefect::InvalidJson));
            never += usize::from(d.contains(&ToolDefect::NeverCalls));
            assert_eq!(d, rates.decide(1, key));
        }
        assert!((never as f64 / n as f64 - 0.5).abs() < 0.05);
        assert!(ToolDefectRates::default().decide(1, 2).is_empty());
    }
}
