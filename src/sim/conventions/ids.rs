//! The form of a provider's tool-call ids (real traffic through OpenRouter, which passes them
//! on): the model's own `functions.NAME:N` (`native`: Chutes, Fireworks, Groq), `NAME:N`
//! without the prefix (`no_prefix`: Moonshot AI, AtlasCloud), the number N alone (`index`:
//! DeepInfra's `"0"`, `"1"`; the measured answers had no earlier calls, where N and the call's
//! place in the answer agree, and `tests/data/provider_conventions` takes N, so the sim does too),
//! or an id of its own (`minted`: Together's `call_…`).

/// How a provider writes a call's id.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IdForm {
    #[default]
    Native,
    NoPrefix,
    Index,
    Minted,
}

const FORMS: [(IdForm, &str); 4] = [
    (IdForm::Native, "native"),
    (IdForm::NoPrefix, "no_prefix"),
    (IdForm::Index, "index"),
    (IdForm::Minted, "minted"),
];

impl IdForm {
    pub fn parse(value: &str) -> Result<IdForm, String> {
        FORMS
            .iter()
            .find(|(_, name)| *name == value)
            .map(|(form, _)| *form)
            .ok_or_else(|| {
                format!(
                    "ids={value:?}: expected ids=native, ids=no_prefix, ids=index or ids=minted"
                )
            })
    }

    pub fn name(self) -> &'static str {
        FORMS
            .iter()
            .find(|(form, _)| *form == self)
            .map_or("native", |(_, name)| name)
    }

    /// The id the provider sends for call `index` whose id text the model wrote as `native`
    /// (`minted`: the id it mints, if the turn has one).
    pub fn apply(self, native: &str, index: usize, minted: Option<&str>) -> String {
        match self {
            IdForm::Native => native.to_string(),
            IdForm::NoPrefix => native
                .strip_prefix("functions.")
                .unwrap_or(native)
                .to_string(),
            IdForm::Index => native
                .rsplit_once(':')
                .map_or_else(|| index.to_string(), |(_, n)| n.to_string()),
            IdForm::Minted => minted.map_or_else(|| format!("call_{index:024}"), str::to_string),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_as_measured() {
        let id = "functions.get_news:1";
        assert_eq!(IdForm::Native.apply(id, 1, None), id);
        assert_eq!(IdForm::NoPrefix.apply(id, 1, None), "get_news:1");
        assert_eq!(IdForm::Index.apply(id, 1, None), "1");
        assert_eq!(IdForm::Index.apply("functions.get_news:3", 0, None), "3");
        assert_eq!(IdForm::Minted.apply(id, 1, Some("call_abc")), "call_abc");
        for (form, name) in FORMS {
            assert_eq!(IdForm::parse(name), Ok(form));
        }
    }
}
