//! JSON encoding shared by the engines, byte-compatible with Python's `json.dumps` defaults.
