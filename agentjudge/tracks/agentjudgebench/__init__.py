"""Importers of published results as ordinary run folders (``agentjudge import agentjudgebench``)."""
