"""`python -m glider_cli`: the `glider` command."""

from glider_cli.cli import main

if __name__ == "__main__":
    main()
