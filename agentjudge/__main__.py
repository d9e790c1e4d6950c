from agentjudge.commands.app import main

main()
