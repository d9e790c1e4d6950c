"""The grid of ``agentjudge run`` and ``agentjudge infer``: predict -> score -> judge over run.sqlite,
resumable, with the run folder's export and the dry run (see README.md; ``sampling/`` for sampled stages)."""
