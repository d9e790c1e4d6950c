"""The agents whose tool calls are judged: LLM generators (single-shot or interactive), the simulated
``sim/`` generators and agents, and ``imported/`` outputs replayed (see README.md)."""
