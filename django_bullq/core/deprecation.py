"""Old keyword and attribute names of the public API, still accepted with a DeprecationWarning.

Names of ours that hold a duration carry their unit (``grace_period_s``, ``timeout_s``); where
one was renamed, the old name keeps working for a while: :func:`renamed_kwargs` for a function,
:func:`renamed_fields` for a dataclass's constructor and attributes.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


def rename(where: str, kwargs: dict[str, Any], renames: Mapping[str, str]) -> dict[str, Any]:
    """``kwargs`` with each old name of ``renames`` replaced by its new one, warning for each.

    Args:
        where: the callable's name, for the messages (``"WorkerOptions"``).
        kwargs: the keyword arguments given (changed in place).
        renames: old name -> new name.

    Returns:
        ``kwargs``.

    Raises:
        TypeError: both the old and the new name were given.
    """
    for old, new in renames.items():
        if old in kwargs:
            if new in kwargs:
                raise TypeError(f"{where}() got both {old!r} and its new name {new!r}")
            warnings.warn(
                f"{where}(): {old!r} is deprecated, use {new!r}", DeprecationWarning, stacklevel=3
            )
            kwargs[new] = kwargs.pop(old)
    return kwargs


def renamed_kwargs(**renames: str) -> Callable[[F], F]:
    """Decorator: the function also accepts the old keyword names ``renames`` (old=new).

    Calls that use no old name pay one set intersection.
    """
    old_names = frozenset(renames)

    def decorate(func: F) -> F:
        where = func.__qualname__.removesuffix(".__init__")

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if old_names.intersection(kwargs):
                rename(where, kwargs, renames)
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def renamed_fields(**renames: str) -> Callable[[C], C]:
    """Class decorator (outside ``@dataclass``): the old field names ``renames`` (old=new) are
    still accepted by the constructor and readable as attributes, each with a warning."""

    def decorate(cls: C) -> C:
        setattr(cls, "__init__", renamed_kwargs(**renames)(vars(cls)["__init__"]))  # noqa: B010
        for old, new in renames.items():
            setattr(cls, old, _deprecated_alias(cls.__name__, old, new))
        return cls

    return decorate


def _deprecated_alias(owner: str, old: str, new: str) -> property:
    def read(self: Any) -> Any:
        warnings.warn(f"{owner}.{old} is deprecated, use {new!r}", DeprecationWarning, stacklevel=2)
        return getattr(self, new)

    return property(read, doc=f"Deprecated name of :attr:`{new}`.")
