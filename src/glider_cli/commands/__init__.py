"""One module per subcommand. Each owns a `typer.Typer()`; `cli.py` composes them."""
