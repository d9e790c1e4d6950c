"""agentjudge: how far can you trust an LLM judge of agents' tool calls?"""

__version__ = "0.1.0"
DATASET_VERSION = "agentjudge-1.0"
