"""``python -m attnlab ...``: the same command line as ``attnlab ...``."""

from attnlab.cli import main

if __name__ == "__main__":  # worker processes import this module again; they must not run the command
    main()
