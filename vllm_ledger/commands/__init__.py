"""One module per CLI command: ``NAME``, ``HELP``, ``configure(parser)``, ``run(args)``."""
