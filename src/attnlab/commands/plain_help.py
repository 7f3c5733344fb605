"""``--help`` in plain words: the type column says what a value is ("integer", "folder", "key=value"),
never Python's annotation (typer's ``<int>``, ``<bool>``, ``<list[str]>``), and a flag shows none.

Every command is a :class:`PlainCommand` (the group a :class:`PlainGroup`). An option's ``metavar``
names its value (``--out`` "folder", ``--set`` "key=value"); one without gets the word of its type
(:data:`WORDS`). typer shows an argument's ``metavar`` as its name and ignores it as its type, so an
argument becomes a :class:`PlainArgument`: its name stays its parameter's name, its ``metavar`` (or
the word of its type) is its type.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import click
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

WORDS: dict[Any, str] = {int: "integer", float: "number", str: "text", bool: "true/false", Path: "path"}


def help_words(param: click.Parameter) -> str | None:
    """What ``param`` takes, in words: its metavar, else the word of its type (of one item for a list);
    None for a flag, which takes no value."""
    if getattr(param, "is_flag", False):
        return None
    if param.metavar:
        return param.metavar
    descriptor = getattr(param, "type_descriptor", None)
    tp = getattr(descriptor, "annotation", None)
    if typing.get_origin(tp) in (list, tuple):
        tp = (typing.get_args(tp) or (str,))[0]
    return WORDS.get(tp, "value")


class PlainOption(TyperOption):
    """An option whose type column is :func:`help_words`."""

    def display_type_rich(self, ctx: click.Context) -> str | None:
        return help_words(self)


class PlainArgument(TyperArgument):
    """An argument named by its parameter's name (``papers``, ``run_dir``) whose type column is its
    ``metavar`` or the word of its type (:func:`help_words`)."""

    @property
    def display_name_raw(self) -> str:
        return self.name or ""

    def _rich_display_name(self) -> str:
        return self.display_name_raw + ("..." if self.nargs != 1 else "")

    def display_type_rich(self, ctx: click.Context) -> str | None:
        return help_words(self)


def plain(params: list[click.Parameter]) -> list[click.Parameter]:
    """``params`` with typer's options and arguments made :class:`PlainOption` and :class:`PlainArgument`
    (in place: a parameter is the same object, its class the subclass that only changes what help shows)."""
    for p in params:
        if type(p) is TyperOption:
            p.__class__ = PlainOption
        elif type(p) is TyperArgument:
            p.__class__ = PlainArgument
    return params


class PlainCommand(TyperCommand):
    """A command whose help names every value in words (module docstring)."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        return plain(super().get_params(ctx))


class PlainGroup(TyperGroup):
    """The ``attnlab`` group, its own options (``--version``, ``--help``) in words as every command's."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        return plain(super().get_params(ctx))


def unwrapped(doc: str | None) -> str | None:
    """A docstring as flowing paragraphs: the source's hard line breaks joined, so that
    ``--help`` wraps it at the terminal's width without orphan words; list items
    (``- ...``) and indented lines keep their own lines."""
    if not doc:
        return doc
    import inspect

    paragraphs = []
    for par in inspect.cleandoc(doc).split("\n\n"):
        lines = par.splitlines()
        if any(line.lstrip().startswith("- ") or line.startswith(" ") for line in lines):
            paragraphs.append(par)
        else:
            paragraphs.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(paragraphs)


class ConstructHelp(PlainCommand):
    """`attnlab construct --help`, which ends with every registered construction and its parameters."""

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_help(ctx, formatter)
        from attnlab.commands.catalogue import print_construction_help
        from attnlab.commands.console import console

        print_construction_help(console)
