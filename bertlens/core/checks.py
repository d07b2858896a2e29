"""Checks of the values a user passes (numbers, seeds, flags), shared by the library functions that take them.

Each raises InputError naming the value and saying what to give. A name that is a Python argument (`seed`, or `k (the
number of senses)`) is said by its placeholder, with the argument in the error's `arguments` (core/errors.py), so that
the command line names its flag instead (`--seed`); another name (`text id`, or a flag the CLI passes itself) is said
as it is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from numbers import Integral, Real
from typing import Any

from .errors import NAME, InputError

MAX_SEED = 2**32 - 1  # numpy's legacy RandomState, scikit-learn and UMAP take seeds in [0, 2**32)


def named(name: str) -> str:
    """`name` with the Python argument it is said by as its placeholder: "seed" -> "{seed}", "k (the number of senses)"
    -> "{k} (the number of senses)"; any other name ("text id", "--seed") as it is.

    >>> named("k (the number of senses)"), named("text id")
    ('{k} (the number of senses)', 'text id')
    """
    head, space, rest = name.partition(" ")
    if head.isidentifier() and (not space or rest.startswith("(")):
        return f"{{{head}}}{space}{rest}"
    return name


def arguments_of(name: str) -> dict[str, object]:
    """The `arguments` of an error about `name`: its Python argument, said without a value (none for another name).

    >>> arguments_of("seed"), arguments_of("text id")
    ({'seed': NAME}, {})
    """
    head = named(name).partition(" ")[0]
    return {head[1:-1]: NAME} if head.startswith("{") else {}


def whole_number(value: object, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """`value` as an int in [minimum, maximum]; booleans and floats are refused."""
    arguments, name = arguments_of(name), named(name)
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise InputError(
            f"{name} must be a whole number, got {value!r}.", f"Give an integer for {name}.", arguments=arguments
        )
    number = int(value)
    if minimum is not None and number < minimum:
        raise InputError(
            f"{name} must be at least {minimum}, got {number}.",
            _range_hint(name, minimum, maximum),
            arguments=arguments,
        )
    if maximum is not None and number > maximum:
        raise InputError(
            f"{name} must be at most {maximum:,}, got {number:,}.",
            _range_hint(name, minimum, maximum),
            arguments=arguments,
        )
    return number


def real_number(value: object, name: str, *, positive: bool = False) -> float:
    """`value` as a finite float (strictly positive if asked); booleans are refused."""
    arguments, name = arguments_of(name), named(name)
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise InputError(
            f"{name} must be a finite number, got {value!r}.",
            f"Give a number for {name}, e.g. 0.1.",
            arguments=arguments,
        )
    if positive and float(value) <= 0:
        raise InputError(
            f"{name} must be positive, got {value!r}.",
            f"Give a number above 0 for {name}, e.g. 0.1.",
            arguments=arguments,
        )
    return float(value)


def seed(value: object, name: str = "seed") -> int:
    """A random seed: a whole number in [0, 2**32 - 1]."""
    return whole_number(value, name, minimum=0, maximum=MAX_SEED)


def flag(value: object, name: str) -> bool:
    """A yes/no option: True or False only (a string such as "false" would be true)."""
    if not isinstance(value, bool):
        raise InputError(
            f"{named(name)} must be True or False, got {value!r}.",
            f"Pass {name}=True or {name}=False.",  # Python's two values: a command line's switch gives only these
            arguments=arguments_of(name),
        )
    return value


def items(value: object, name: str, example: str) -> list[Any]:
    """`value` as a list: any iterable but a string, bytes or a mapping (which would be read item by item)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InputError(
            f"{named(name)} must be a list, got {type(value).__name__}.",
            f"Example: {example}.",
            arguments=arguments_of(name),
        )
    return list(value)


def _range_hint(name: str, minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"Give {name} from {minimum} to {maximum:,}."
    if minimum is not None:
        return f"Give {name} of {minimum} or more."
    return f"Give {name} of at most {maximum:,}."


def layer_numbers(layers: object, count: int) -> tuple[int, ...]:
    """Layer numbers that exist among `count` hidden states (0 = embedding output, -1 = the last), as a tuple of ints.

    One number is taken as a list of one; anything else that is not a non-empty list of whole numbers is refused.
    The one check of `layers` (and `layer`) for every function that takes them, before any forward pass."""
    if isinstance(layers, Integral) and not isinstance(layers, bool):
        layers = [int(layers)]
    if isinstance(layers, (str, bytes)) or not isinstance(layers, Sequence) or not layers:
        raise InputError(
            f"No layers were chosen: layers must be a non-empty list of layer numbers, got {layers!r}.",
            f"Give layer numbers from 0 to {count - 1}, or -1 for the last (e.g. layers=[-1]).",
        )
    for layer in layers:
        whole = isinstance(layer, Integral) and not isinstance(layer, bool)
        if not whole or not -count <= int(layer) < count:
            shown = int(layer) if whole else repr(layer)
            raise InputError(
                f"Layer {shown} does not exist: this model has layers 0 (embedding output) to {count - 1}.",
                f"Use 0..{count - 1}, or negative numbers counting from the last (-1).",
            )
    return tuple(int(layer) for layer in layers)
