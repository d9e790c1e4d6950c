"""Tasks, verdicts and agents' conversations from elsewhere: BFCL tasks as records, an agent's own traces
(and τ-bench's trajectories, one more input format of that path) and the AgentJudgeBench release as run
folders (see README.md)."""
