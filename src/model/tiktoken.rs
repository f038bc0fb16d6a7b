//! tiktoken-style rank files (`tiktoken.model`: base64 token + rank per line) and Kimi's
//! pre-splitting of long inputs.
