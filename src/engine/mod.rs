//! Scheduling: adaptive concurrency, retries, rate limits, budget, progress, shutdown.
