"""``chainwarden bench``: containment and recording overhead measured on the user's machine (docs/bench.md).

Standard library only (``time.perf_counter_ns`` and RSS): no pytest-benchmark, no dev toolchain."""
