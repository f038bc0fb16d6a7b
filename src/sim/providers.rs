//! Several named providers behind one simulated endpoint, as OpenRouter routes one model to many
//! upstreams: each has its own server shape (named by a flavour), conventions
//! ([`super::conventions`]), tool-call defect rates, price, throughput and latency, and every
//! answer names its provider in `provider` (whatever the shape). Which one answers a request is
//! OpenRouter's routing ([`super::routing`]).
//!
//! `--provider NAME:FLAVOR[:ITEM,...]`, e.g. `--provider Chutes:vllm:inreasoning=0.2` or
//! `--provider DeepInfra:openrouter:usage_excludes_end_token,ids=index`. An item is a defect
//! (`DEFECT=RATE`, a bare name meaning rate 1), a convention, `price=F` (a multiple of the
//! simulator's prices, default 1), `throughput=TPS` and `latency=MS` (what `provider.sort` ranks
//! by), or `down`: the provider fails every request (502 "Provider returned error", as
//! OpenRouter answers when an upstream fails and no fallback is left), while OpenRouter's
//! endpoint listing ([`super::endpoints`]) still lists it.

use super::conventions::{self, Conventions};
use super::faults::{ToolDefect, ToolDefectRates};
use super::flavor::Flavor;
use crate::server::ServerShape;

/// One simulated upstream.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedProvider {
    pub name: String,
    /// The server shape it answers with (its flavour's, as its conventions change it).
    pub shape: &'static ServerShape,
    pub defects: ToolDefectRates,
    pub conventions: Conventions,
    /// Every request to it fails (the listing still shows it).
    pub down: bool,
    /// Its price as a multiple of the simulator's.
    pub price: f64,
    /// Tokens per second (`provider.sort = "throughput"`).
    pub throughput: f64,
    /// Milliseconds to the first token (`provider.sort = "latency"`).
    pub latency_ms: f64,
}

impl NamedProvider {
    /// A provider of `flavor` with `conventions` and nothing else special.
    pub fn new(name: &str, flavor: Flavor, conventions: Conventions) -> Result<Self, String> {
        Ok(NamedProvider {
            name: name.to_string(),
            shape: conventions.shape(flavor.shape())?,
            defects: ToolDefectRates::default(),
            conventions,
            down: false,
            price: 1.0,
            throughput: 50.0,
            latency_ms: 500.0,
        })
    }

    /// Read one spec item that is neither `down` nor a convention: an attribute or a defect.
    fn set(&mut self, spec: &str, item: &str) -> Result<(), String> {
        let (name, value) = item.split_once('=').unwrap_or((item, "1"));
        let (name, value) = (name.trim(), value.trim());
        let number = |what: &str| -> Result<f64, String> {
            value
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| format!("--provider {spec:?}: {what} {value:?} is not a number ≥ 0"))
        };
        match name {
            "price" => self.price = number("price")?,
            "throughput" => self.throughput = number("throughput")?,
            "latency" => self.latency_ms = number("latency")?,
            _ => {
                let defect = ToolDefect::from_name(name).ok_or_else(|| {
                    format!(
                        "--provider {spec:?}: unknown item {name:?}: expected `down`, price=F, throughput=TPS, latency=MS, a convention ({}) or a defect ({})",
                        conventions::NAMES.join(", "),
                        ToolDefect::ALL.map(ToolDefect::name).join(", ")
                    )
                })?;
                let rate = number("rate").ok().filter(|r| *r <= 1.0).ok_or_else(|| {
                    format!(
                        "--provider {spec:?}: rate {value:?} of {} is not a number in 0..1",
                        defect.name()
                    )
                })?;
                self.defects.set(defect, rate);
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for NamedProvider {
    type Err = String;
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let mut parts = spec.splitn(3, ':');
        let name = parts.next().unwrap_or("").trim();
        if name.is_empty() {
            return Err(format!(
                "--provider {spec:?}: expected NAME:FLAVOR[:ITEM,...]"
            ));
        }
        let flavor: Flavor = parts
            .next()
            .ok_or_else(|| format!("--provider {spec:?}: no flavour after the name (NAME:FLAVOR)"))?
            .parse()
            .map_err(|e| format!("--provider {spec:?}: {e}"))?;
        let items: Vec<&str> = parts
            .next()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let mut conventions = Conventions::default();
        let mut rest = Vec::new();
        for item in items {
            if !conventions
                .set(item)
                .map_err(|e| format!("--provider {spec:?}: {e}"))?
            {
                rest.push(item);
            }
        }
        let mut provider = NamedProvider::new(name, flavor, conventions)
            .map_err(|e| format!("--provider {spec:?}: {e}"))?;
        for item in rest {
            if item == "down" {
                provider.down = true;
            } else {
                provider.set(spec, item)?;
            }
        }
        Ok(provider)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::conventions::IdForm;

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
        assert_eq!(plain.conventions, Conventions::default());
        assert!("B:vllm:down".parse::<NamedProvider>().unwrap().down);
        assert!("A"
            .parse::<NamedProvider>()
            .unwrap_err()
            .contains("flavour"));
        assert!("A:nope".parse::<NamedProvider>().is_err());
        assert!("A:vllm:oops=1"
            .parse::<NamedProvider>()
            .unwrap_err()
            .contains("unknown item"));
        assert!("A:vllm:badjson=2"
            .parse::<NamedProvider>()
            .unwrap_err()
            .contains("0..1"));
    }

    #[test]
    fn conventions_and_attributes_parse() {
        let p: NamedProvider =
            "DeepInfra:openrouter:usage_excludes_end_token,ids=index,price=0.5,latency=80"
                .parse()
                .unwrap();
        assert!(p.conventions.usage_excludes_end_token);
        assert_eq!(p.conventions.ids, IdForm::Index);
        assert_eq!((p.price, p.latency_ms), (0.5, 80.0));
        let spaced: NamedProvider = "Chutes:openrouter:spaces_special_tokens".parse().unwrap();
        assert_ne!(spaced.shape, Flavor::OpenRouter.shape());
        for bad in [
            "X:openrouter:ids=uuid",
            "X:sglang:spaces_special_tokens",
            "X:openrouter:generates_think=1",
            "X:openrouter:price=cheap",
        ] {
            let err = bad.parse::<NamedProvider>().unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
    }
}
