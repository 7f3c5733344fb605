"""``python -m attnlab ...``: the same command line as ``attnlab ...``."""

from attnlab.cli import main

main()
