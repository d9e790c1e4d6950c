"""Tasks and verdicts from elsewhere: BFCL tasks as records, τ-bench trajectories judged against their
reward, and the AgentJudgeBench release as a run folder (see README.md)."""
