use std::path::Path;
use std::time::Duration;

use super::*;
use crate::api::ServerKind;

fn parse(text: &str) -> Result<RunConfig, ConfigError> {
    RunConfig::from_toml(text, Path::new("run.toml"))
}

const GOOD: &str = r#"
    grace_s = 5
    [[endpoints]]
    name = "or"
    base_url = "https://openrouter.ai/api/v1/"
    kind = "openrouter"
    [[endpoints]]
    name = "local"
    base_url = "http://127.0.0.1:8000/v1"
    kind = "vllm"
    weight = 3
    [request]
    model = "moonshotai/kimi-k2.5"
    max_tokens = 512
    [concurrency]
    initial = 10
    max = 10000
    requests_per_minute = 600
    [budget]
    max_cost_usd = 2.5
"#;

#[test]
fn parses_a_full_config() {
    let config = parse(GOOD).unwrap();
    config.validate().unwrap();
    assert_eq!(config.endpoints.len(), 2);
    assert_eq!(config.endpoints[1].kind, ServerKind::Vllm);
    assert_eq!(config.endpoints[1].weight, 3);
    assert_eq!(config.concurrency.max, 10_000);
    assert_eq!(config.request.max_tokens, Some(512));
    assert!(config.request.tools_as_parameter);
    assert_eq!(config.grace(), Duration::from_secs(5));
}

#[test]
fn inline_key_is_refused() {
    let text = GOOD.replace(
        "kind = \"openrouter\"",
        "kind = \"openrouter\"\napi_key = \"sk-or-v1-x\"",
    );
    let err = parse(&text).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ConfigError::InlineKey { .. }), "{msg}");
    assert!(!msg.contains("sk-or-v1-x"), "{msg}");
    assert!(msg.contains("api_key_file"), "{msg}");
}

#[test]
fn unknown_key_is_an_error_naming_it() {
    let err = parse("[concurrency]\nmaxx = 3\n").unwrap_err().to_string();
    assert!(err.contains("maxx"), "{err}");
    assert!(err.contains("run.toml"), "{err}");
}

#[test]
fn validation_names_the_key() {
    let mut config = parse(GOOD).unwrap();
    config.concurrency.min = 20;
    let err = config.validate().unwrap_err().to_string();
    assert!(err.starts_with("concurrency."), "{err}");
    let mut config = parse(GOOD).unwrap();
    config.endpoints[0].base_url = "openrouter.ai".into();
    let err = config.validate().unwrap_err().to_string();
    assert!(err.starts_with("endpoints[0].base_url"), "{err}");
    let config = RunConfig::default();
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("--base-url"), "{err}");
}

#[test]
fn overrides_replace_file_settings() {
    let mut config = parse(GOOD).unwrap();
    config.apply(Overrides {
        base_url: Some("http://127.0.0.1:9/v1".into()),
        model: Some("m".into()),
        concurrency: Some(20_000),
        max_cost_usd: Some(1.0),
        server_token_ids: Some(true),
        ..Overrides::default()
    });
    assert_eq!(config.endpoints.len(), 1);
    assert_eq!(config.endpoints[0].kind, ServerKind::Generic);
    assert_eq!(config.request.model, "m");
    assert_eq!(config.concurrency.initial, 20_000);
    assert_eq!(config.concurrency.max, 20_000);
    assert_eq!(config.budget.max_cost_usd, Some(1.0));
    assert!(config.request.server_token_ids);
    // A generic endpoint cannot return its ids: the override is checked like the file.
    assert!(config.validate().is_err());
    config.endpoints[0].kind = ServerKind::Vllm;
    config.validate().unwrap();
}

#[test]
fn keys_come_from_env_or_file_only_where_configured() {
    let config = parse(GOOD).unwrap();
    let env = |name: &str| (name == OPENROUTER_KEY_ENV).then(|| "sk-or-v1-env\n".to_string());
    let resolved = config.resolve_endpoints(env).unwrap();
    assert_eq!(
        resolved[0].endpoint.api_key.as_ref().unwrap().expose(),
        "sk-or-v1-env"
    );
    assert_eq!(
        resolved[0].endpoint.base_url,
        "https://openrouter.ai/api/v1"
    );
    // A self-hosted endpoint never gets the OpenRouter key by default.
    assert!(resolved[1].endpoint.api_key.is_none());
    assert_eq!(resolved[1].options.server_kind, ServerKind::Vllm);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("key");
    std::fs::write(&file, "sk-or-v1-file\n").unwrap();
    let mut config = config;
    config.apply(Overrides {
        api_key_file: Some(file),
        ..Overrides::default()
    });
    let resolved = config.resolve_endpoints(|_| None).unwrap();
    assert!(resolved
        .iter()
        .all(|r| r.endpoint.api_key.as_ref().unwrap().expose() == "sk-or-v1-file"));
}

#[test]
fn a_misspelt_key_is_answered_with_the_nearest_one_and_the_valid_ones_once() {
    let text = GOOD.replace("max = 10000", "maxx = 10000");
    let msg = parse(&text).unwrap_err().to_string();
    assert!(msg.contains("did you mean `max`?"), "{msg}");
    assert_eq!(msg.matches("requests_per_minute").count(), 1, "{msg}");
    let text = GOOD.replace("max_tokens = 512", "max_tokens = 512\ntemprature = 0.5");
    let msg = parse(&text).unwrap_err().to_string();
    assert!(msg.contains("did you mean `temperature`?"), "{msg}");
    let text = GOOD.replace(
        "max_tokens = 512",
        "max_tokens = 512\nprovider = { only = [\"a\"], allow_fallback = false }",
    );
    let config = parse(&text).unwrap();
    let msg = config.validate().unwrap_err().to_string();
    assert!(msg.contains("did you mean `allow_fallbacks`?"), "{msg}");
    assert_eq!(msg.matches("require_parameters").count(), 1, "{msg}");
}

#[test]
fn a_missing_key_is_named_only_where_one_is_required() {
    let config = parse(GOOD).unwrap();
    let msg = config.missing_key(|_| None).unwrap();
    assert!(msg.contains("OPENROUTER_API_KEY is not set"), "{msg}");
    assert_eq!(msg.lines().count(), 1);
    assert_eq!(config.missing_key(|_| Some("sk-or-v1-x".into())), None);
    // An OpenRouter-speaking proxy or simulator elsewhere may need no key.
    let local = GOOD.replace("https://openrouter.ai/api/v1/", "http://127.0.0.1:9/v1");
    assert_eq!(parse(&local).unwrap().missing_key(|_| None), None);
    // A variable named in the config must be set.
    let named = local.replace("weight = 3", "weight = 3\napi_key_env = \"VLLM_KEY\"");
    let msg = parse(&named).unwrap().missing_key(|_| None).unwrap();
    assert!(msg.contains("VLLM_KEY is not set"), "{msg}");
}

#[test]
fn a_base_url_with_the_path_draftgen_adds_is_refused_with_the_right_one() {
    let text = GOOD.replace(
        "http://127.0.0.1:8000/v1",
        "http://127.0.0.1:8000/v1/chat/completions",
    );
    let err = parse(&text).unwrap().validate().unwrap_err().to_string();
    assert!(err.starts_with("endpoints[1].base_url"), "{err}");
    assert!(err.ends_with("use http://127.0.0.1:8000/v1"), "{err}");
}
