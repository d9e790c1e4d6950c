"""The programmatic reference every judge is compared with: the scorer in ``paper`` and ``strict`` modes
with the outcome checks (``scorer.py``), and the ``score`` verb's files (``files.py``; see README.md)."""
