"""The `codeagent` command: one package for every subcommand's flags, rendering and waiting
(`main.py` is the entry point: `codeagent = codeagent.cli.main:main`).
"""
