//! One file per model family: its template quirks, pre-processing and native output syntax.
