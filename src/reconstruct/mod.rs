//! From a request and the server's answer to the exact prompt and completion token ids.
