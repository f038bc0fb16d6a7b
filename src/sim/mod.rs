//! A built-in OpenAI-compatible server with provider flavours and fault injection
//! (tests, benchmarks, demo).
