"""The judges: the LLM judge with its prompts and answer parser, the offline baselines, the simulated
``simjudge/`` judges and ``imported/`` verdicts replayed (see README.md)."""
