//! `verify`: what tells a user whether a run is worth training on (helper `verify` owns this
//! file; this minimal version only declares the tool-call audit).

pub mod audit;
