//! One server failure, one class: an `error` object in a 200 answer and an error in the middle of
//! a generation are classed the same whether the answer is streamed or not (the simulator sends
//! each fault both ways, as OpenRouter does).

use std::time::Duration;

use draftgen::api::{Client, ClientConfig, Endpoint, ErrorClass, Timeouts};
use draftgen::sim::{spawn, FaultRates, SimConfig};
use serde_json::json;

async fn class_of(fault: FaultRates, stream: bool) -> ErrorClass {
    let sim = spawn(SimConfig {
        faults: fault,
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let endpoint = Endpoint {
        name: "sim".into(),
        base_url: sim.base_url(),
        api_key: None,
        weight: 1,
    };
    let body = serde_json::value::to_raw_value(&json!({
        "model": "moonshotai/kimi-k2.5",
        "messages": [{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}],
        "stream": stream,
    }))
    .unwrap();
    let timeouts = Timeouts {
        connect: Duration::from_secs(30),
        first_byte: Duration::from_secs(60),
        idle: Duration::from_secs(60),
        total: Duration::from_secs(120),
    };
    let client = Client::new(ClientConfig::default()).unwrap();
    client
        .chat_raw(&endpoint, &body, &timeouts)
        .await
        .expect_err("the fault is certain")
        .class
}

#[tokio::test]
async fn error_classes_do_not_depend_on_streaming() {
    let error_in_200 = FaultRates {
        error_in_200: 1.0,
        ..FaultRates::default()
    };
    let mid_stream = FaultRates {
        mid_stream: 1.0,
        ..FaultRates::default()
    };
    for stream in [false, true] {
        assert_eq!(
            class_of(error_in_200, stream).await,
            ErrorClass::ErrorIn200,
            "error object before anything was generated, stream={stream}"
        );
        assert_eq!(
            class_of(mid_stream, stream).await,
            ErrorClass::MidStream,
            "generation broke after it started, stream={stream}"
        );
    }
}
