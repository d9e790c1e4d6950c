"""Model strings: which generator or judge a string builds (``factory.py``), its kind (``model_strings.py``)
and the preflight of a run's models before anything is spent (``preflight.py``; see README.md)."""
