from agentjudge.cli import main

main()
