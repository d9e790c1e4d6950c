from agentjudge.cli import app

app()
