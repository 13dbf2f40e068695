//! Call-graph recorder (seeds 000, 002).
