//! A named provider's conventions: how its stack counts and shapes an answer where stacks
//! measured on real traffic differ (tests/data/provider_conventions, made by
//! tests/data/gen/make_provider_conventions.py), so tests can run against providers that
//! behave so. One file per convention; `--provider NAME:FLAVOR:conv1,conv2,…` names them
//! ([`Conventions::set`]):
//!
//! | item | file | what the provider does |
//! |---|---|---|
//! | `usage_excludes_end_token` | [`usage_excludes_end_token`] | `completion_tokens` leaves out the end token |
//! | `generates_think` | [`generates_think`] | its template ends the prompt before `<think>`; the model writes it |
//! | `spaces_special_tokens` | [`spaces_special_tokens`] | a space on each side of every added token |
//! | `compacts_arguments[=ascii]` | [`compacts_arguments`] | arguments re-serialized as compact JSON |
//! | `ids=native\|no_prefix\|index\|minted` | [`ids`] | the form of its tool-call ids |
//! | `strips=BOUNDARY+…` | [`strips`] | the whitespace at those boundaries of the text fields stripped |

pub mod compacts_arguments;
pub mod generates_think;
pub mod ids;
pub mod spaces_special_tokens;
pub mod strips;
pub mod usage_excludes_end_token;

pub use compacts_arguments::Compaction;
pub use ids::IdForm;
pub use strips::Strips;

use crate::server::{Parsed, ServerShape};

/// Every convention a provider spec may name (for error messages).
pub const NAMES: [&str; 6] = [
    "usage_excludes_end_token",
    "generates_think",
    "spaces_special_tokens",
    "compacts_arguments[=ascii]",
    "ids=native|no_prefix|index|minted",
    "strips=reasoning_start+reasoning_end+content_start+content_end_before_calls+content_end",
];

/// One provider's conventions; the default is none (the model's own answer as the shape sends
/// it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Conventions {
    pub usage_excludes_end_token: bool,
    pub generates_think: bool,
    pub spaces_special_tokens: bool,
    pub compacts_arguments: Option<Compaction>,
    pub ids: IdForm,
    pub strips: Strips,
}

impl Conventions {
    /// Read one spec item. `Ok(false)`: the item names no convention (it may be something else
    /// the spec knows); `Err`: it names one with a value that is not one of its own.
    pub fn set(&mut self, item: &str) -> Result<bool, String> {
        let (name, value) = match item.split_once('=') {
            Some((name, value)) => (name.trim(), Some(value.trim())),
            None => (item.trim(), None),
        };
        let flag = |value: Option<&str>| match value {
            None => Ok(true),
            Some(v) => Err(format!("convention {name} takes no value (got {v:?})")),
        };
        match name {
            "usage_excludes_end_token" => self.usage_excludes_end_token = flag(value)?,
            "generates_think" => self.generates_think = flag(value)?,
            "spaces_special_tokens" => self.spaces_special_tokens = flag(value)?,
            "compacts_arguments" => self.compacts_arguments = Some(Compaction::parse(value)?),
            "ids" => {
                self.ids = IdForm::parse(value.unwrap_or_default())?;
            }
            "strips" => self.strips.add(value.unwrap_or_default())?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The names of the conventions set, as a spec writes them.
    pub fn names(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (on, name) in [
            (self.usage_excludes_end_token, "usage_excludes_end_token"),
            (self.generates_think, "generates_think"),
            (self.spaces_special_tokens, "spaces_special_tokens"),
        ] {
            if on {
                out.push(name.to_string());
            }
        }
        if let Some(c) = self.compacts_arguments {
            out.push(c.name().to_string());
        }
        if self.ids != IdForm::Native {
            out.push(format!("ids={}", self.ids.name()));
        }
        if self.strips.any() {
            out.push(self.strips.name());
        }
        out
    }

    /// The server shape a provider of flavour shape `shape` answers with under these
    /// conventions (`Err`: a convention the shape cannot carry).
    pub fn shape(&self, shape: &'static ServerShape) -> Result<&'static ServerShape, String> {
        let shape = if self.spaces_special_tokens {
            spaces_special_tokens::shape(shape)?
        } else {
            shape
        };
        Ok(self.strips.shape(shape))
    }

    /// What the provider does to the parsed calls: their arguments re-serialized, their ids in
    /// its form (`minted`: the ids the turn minted, one per call).
    pub fn calls(&self, parsed: &mut Parsed, minted: &[String]) {
        for (i, call) in parsed.calls.iter_mut().enumerate() {
            if let Some(compaction) = self.compacts_arguments {
                call.arguments = compaction.apply(&call.arguments);
            }
            call.id = self
                .ids
                .apply(&call.id, i, minted.get(i).map(String::as_str));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_parse_and_bad_values_say_what_is_wrong() {
        let mut c = Conventions::default();
        for item in [
            "usage_excludes_end_token",
            "generates_think",
            "spaces_special_tokens",
            "compacts_arguments=ascii",
            "ids=index",
        ] {
            assert_eq!(c.set(item), Ok(true), "{item}");
        }
        assert_eq!(c.ids, IdForm::Index);
        assert_eq!(c.compacts_arguments, Some(Compaction::Ascii));
        assert_eq!(c.names().len(), 5);
        assert_eq!(c.set("badjson"), Ok(false));
        assert!(c.set("ids=uuid").unwrap_err().contains("no_prefix"));
        assert!(c.set("generates_think=2").unwrap_err().contains("no value"));
        assert!(c.set("compacts_arguments=x").unwrap_err().contains("ascii"));
    }
}
