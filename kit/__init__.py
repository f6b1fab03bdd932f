"""The client kit: what the tests, the benchmarks and the tools use to start a lab, fire at it and measure it.

It imports app/ (the registry, settings, the cgroup reader) and nothing of bench/ or tools/; app/ never imports it.
"""
