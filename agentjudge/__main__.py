from agentjudge.commands import main

main()
