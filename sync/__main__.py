from sync.commands.main import main

main()
