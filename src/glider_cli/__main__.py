from glider_cli.cli import main

main()
