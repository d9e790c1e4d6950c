"""The records and their quality gates: fifteen executable domains, the scenario builder, the query realiser,
Gate 1 and Gate 2, and the work of ``generate``, ``validate`` and ``audit`` (see README.md)."""
