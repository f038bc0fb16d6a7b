//! Several named providers behind one simulated endpoint, as OpenRouter routes one model to many
//! upstreams: each has its own server shape (named by a flavour) and tool-call defect rates, and
//! every answer names its provider in `provider` (whatever the shape). A request's OpenRouter
//! `provider.only` picks the first listed provider that exists; otherwise requests are spread
//! over the providers by request key (round-robin over prompts, the same provider on a retry).
//!
//! `--provider NAME:FLAVOR[:DEFECT=RATE,...]`, e.g. `--provider Chutes:vllm:inreasoning=0.2`;
//! the item `down` instead of a defect makes the provider fail every request (502 "Provider
//! returned error", as OpenRouter answers when the one allowed upstream fails), while OpenRouter's
//! endpoint listing ([`super::endpoints`]) still lists it.

use super::faults::{ToolDefect, ToolDefectRates};
use super::flavor::Flavor;
use crate::server::ServerShape;

/// One simulated upstream.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedProvider {
    pub name: String,
    /// The server shape it answers with.
    pub shape: &'static ServerShape,
    pub defects: ToolDefectRates,
    /// Every request to it fails (the listing still shows it).
    pub down: bool,
}

impl std::str::FromStr for NamedProvider {
    type Err = String;
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let mut parts = spec.splitn(3, ':');
        let name = parts.next().unwrap_or("").trim();
        if name.is_empty() {
            return Err(format!(
                "--provider {spec:?}: expected NAME:FLAVOR[:DEFECT=RATE,...]"
            ));
        }
        let flavor: Flavor = parts
            .next()
            .ok_or_else(|| format!("--provider {spec:?}: no flavour after the name (NAME:FLAVOR)"))?
            .parse()?;
        let mut defects = ToolDefectRates::default();
        let mut down = false;
        for item in parts
            .next()
            .unwrap_or("")
            .split(',')
            .filter(|s| !s.is_empty())
        {
            if item.trim() == "down" {
                down = true;
                continue;
            }
            let (defect, rate) = item.split_once('=').unwrap_or((item, "1"));
            let defect = ToolDefect::from_name(defect.trim()).ok_or_else(|| {
                format!(
                    "--provider {spec:?}: unknown defect {defect:?}: expected one of {}",
                    ToolDefect::ALL.map(ToolDefect::name).join(", ")
                )
            })?;
            let rate: f64 = rate
                .trim()
                .parse()
                .ok()
                .filter(|r: &f64| (0.0..=1.0).contains(r))
                .ok_or_else(|| {
                    format!(
                        "--provider {spec:?}: rate {rate:?} of {} is not a number in 0..1",
                        defect.name()
                    )
                })?;
            defects.set(defect, rate);
        }
        Ok(NamedProvider {
            name: name.to_string(),
            shape: flavor.shape(),
            defects,
            down,
        })
    }
}

/// Why a request found no provider.
#[derive(Debug, Clone, PartialEq)]
pub struct NoProvider(pub String);

/// The provider that answers a request: `only` (its `provider.only`) names the allowed ones.
pub fn route<'a>(
    providers: &'a [NamedProvider],
    only: &[String],
    key: u64,
) -> Result<Option<&'a NamedProvider>, NoProvider> {
    if providers.is_empty() {
        return Ok(None);
    }
    if !only.is_empty() {
        return only
            .iter()
            .find_map(|want| {
                providers
                    .iter()
                    .find(|p| p.name.eq_ignore_ascii_case(want))
            })
            .map(Some)
            .ok_or_else(|| {
                NoProvider(format!(
                    "No endpoints found matching your data policy (provider.only {only:?}; this simulator has {})",
                    providers.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
                ))
            });
    }
    Ok(providers.get((key % providers.len() as u64) as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_errors_say_what_is_wrong() {
        let p: NamedProvider = "Chutes:vllm:inreasoning=0.2,badjson".parse().unwrap();
        assert_eq!(p.name, "Chutes");
        assert_eq!(p.shape, Flavor::Vllm.shape());
        assert_eq!(p.defects.get(ToolDefect::CallInReasoning), 0.2);
        assert_eq!(p.defects.get(ToolDefect::InvalidJson), 1.0);
        let plain: NamedProvider = "A:sglang".parse().unwrap();
        assert!(plain.defects.is_empty());
        assert!(!plain.down);
        assert!("B:vllm:down".parse::<NamedProvider>().unwrap().down);
        assert!("A"
            .parse::<NamedProvider>()
            .unwrap_err()
            .contains("flavour"));
        assert!("A:nope".parse::<NamedProvider>().is_err());
        assert!("A:vllm:oops=1"
            .parse::<NamedProvider>()
            .unwrap_err()
            .contains("unknown defect"));
        assert!("A:vllm:badjson=2"
            .parse::<NamedProvider>()
            .unwrap_err()
            .contains("0..1"));
    }

    #[test]
    fn only_picks_and_otherwise_spreads_by_key() {
        let ps: Vec<NamedProvider> = ["A:vllm", "B:sglang"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(route(&ps, &["b".into()], 0).unwrap().unwrap().name, "B");
        assert!(route(&ps, &["C".into()], 0).is_err());
        assert_eq!(route(&ps, &[], 2).unwrap().unwrap().name, "A");
        assert_eq!(route(&ps, &[], 3).unwrap().unwrap().name, "B");
        assert_eq!(route(&[], &[], 3).unwrap(), None);
    }
}
