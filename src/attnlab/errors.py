"""Errors a user can act on.

Every exception raised for bad input derives from :class:`AttnlabError`; the
command line prints its message as one line and exits with status 2.
"""


class AttnlabError(Exception):
    """Base class: the message says what to change."""


class ConfigError(AttnlabError, ValueError):
    """An impossible configuration, shape or option value."""


class UnknownNameError(AttnlabError, KeyError):
    """An unknown paper, claim, experiment or variant name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class RunDirError(AttnlabError):
    """A run directory that is missing, not a run directory, or corrupt."""
