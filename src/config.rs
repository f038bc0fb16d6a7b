//! Run configuration: a TOML file, overridden by flags and environment; validated with clear errors.
