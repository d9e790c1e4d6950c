"""An agent's own recorded conversations as an ordinary run folder (``agentjudge import traces``).

``conversation.py`` reads one conversation (the query, the agent's calls, its episode with tool outputs);
``openai.py`` and ``inspect_log.py`` read the two file formats into conversations; ``importer.py`` writes
the run folder and runs it through the ordinary grid. τ-bench's published trajectories are one more input
format of this path (``tracks/taubench.py``).
"""
