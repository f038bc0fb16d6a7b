//! `json.dumps(x, ensure_ascii=False)` exactly as Python writes it (the `tojson` of transformers'
//! chat-template environment): insertion order, `", "`/`": "` separators unless others are given,
//! no HTML escaping, Python float formatting.
