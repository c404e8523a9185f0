"""ScriptRegistry: finds ``lua/``, expands ``-- @include`` lines and runs scripts by SHA.

Script files are named ``verbNoun-N.lua`` where N is the number of KEYS. Redis-py's
``register_script`` gives EVALSHA with a re-load on NOSCRIPT, for sync, asyncio, pipeline and
cluster clients alike. redis-py refuses EVALSHA inside a Redis Cluster pipeline (it could not
load a missing script on the node mid-transaction), so there a script is sent as EVAL with its
source: never NOSCRIPT, at the cost of the script's bytes per call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypedDict, Unpack

from .clients import is_cluster_pipeline
from .errors import BullqError, script_error
from .errors import ScriptSourceError as ScriptSourceError  # re-exported: its old path

_INCLUDE = re.compile(r"^--\s*@include\s+(\w+)\s*$", re.MULTILINE)
_INCLUDE_ANY = re.compile(r"^--\s*@include\b.*$", re.MULTILINE)
_NAME = re.compile(r"^(?P<name>[A-Za-z]+)-(?P<keys>\d+)\.lua$")


def lua_dir() -> Path:
    """Directory of the Lua scripts: ``django_bullq/lua`` in a wheel, ``lua/`` in a checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "lua", here.parent / "lua"):
        if candidate.is_dir():
            return candidate
    raise BullqError(f"Lua scripts not found next to {here}")


def expand(
    source: str, includes: Path, seen: set[str] | None = None, stack: tuple[str, ...] = ()
) -> str:
    """Replace each ``-- @include name`` with ``includes/name.lua`` (each file once, deps first).

    Raises:
        ScriptSourceError: an include is missing or includes itself through a cycle.
    """
    seen = set() if seen is None else seen

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in stack:
            raise ScriptSourceError(f"include cycle: {' -> '.join((*stack, name))}")
        if name in seen:
            return ""
        path = includes / f"{name}.lua"
        if not path.is_file():
            raise ScriptSourceError(f"missing include {name!r} (looked for {path})")
        seen.add(name)
        return expand(path.read_text(), includes, seen, (*stack, name))

    return _INCLUDE.sub(replace, source)


@dataclass(frozen=True, slots=True)
class ScriptSource:
    """One Lua script: its name (``moveToActive``), KEYS count and expanded source."""

    name: str
    num_keys: int
    source: str


@cache
def load_sources() -> dict[str, ScriptSource]:
    """Read and expand every ``verbNoun-N.lua`` in :func:`lua_dir`; keyed by ``verbNoun``."""
    root = lua_dir()
    sources: dict[str, ScriptSource] = {}
    for path in sorted(root.glob("*.lua")):
        match = _NAME.match(path.name)
        if not match:
            raise ScriptSourceError(f"{path.name}: script files are named verbNoun-N.lua")
        name = match.group("name")
        source = expand(path.read_text(), root / "includes")
        leftover = _INCLUDE_ANY.search(source)
        if leftover:
            raise ScriptSourceError(
                f"{path.name}: malformed include line {leftover.group(0).strip()!r} "
                "(expected `-- @include name`, name of letters, digits and _)"
            )
        sources[name] = ScriptSource(name, int(match.group("keys")), source)
    return sources


class RunOptions(TypedDict, total=False):
    """Keyword options of :meth:`Scripts.run` and :meth:`Scripts.arun`.

    Attributes:
        job_id: the job the :class:`~django_bullq.core.errors.ScriptError` of a negative
            answer names.
        client: a pipeline to queue the call on (its answer then comes from ``execute``,
            unchecked); default the scripts' own client.
        raise_codes: raise a negative integer answer as its ScriptError (default True).
    """

    job_id: str | None
    client: Any
    raise_codes: bool


class Scripts:
    """The registered scripts of one Redis client (sync or asyncio).

    ``run``/``arun`` check the KEYS count, execute by SHA, and turn negative integer answers into
    typed :class:`~django_bullq.core.errors.ScriptError` s when ``raise_codes`` is true.
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self._scripts = {
            name: client.register_script(src.source) for name, src in load_sources().items()
        }

    def sha(self, name: str) -> str:
        """SHA1 of script ``name``'s source (what ``EVALSHA`` takes)."""
        sha: str = self._scripts[name].sha
        return sha

    def evalsha_command(
        self, name: str, keys: Sequence[str], args: Sequence[Any]
    ) -> tuple[Any, ...]:
        """The ``EVALSHA`` command of one call of script ``name``, as a pipeline sends it.

        Raises:
            BullqError: ``keys`` is not the script's number of KEYS.
        """
        self.check_keys(name, keys)
        return ("EVALSHA", self.sha(name), len(keys), *keys, *args)

    def load(self, name: str) -> None:
        """``SCRIPT LOAD`` script ``name`` (sync client), e.g. after NOSCRIPT."""
        self._client.script_load(self._scripts[name].script)

    async def aload(self, name: str) -> None:
        """Async twin of :meth:`load` (asyncio client)."""
        await self._client.script_load(self._scripts[name].script)

    def eval_evalsha(self, name: str, command: tuple[Any, ...]) -> Any:
        """Run an :meth:`evalsha_command` of script ``name`` as ``EVAL`` of its source (sync
        client): never NOSCRIPT, whatever happens to the script cache. Returns the raw answer."""
        return self._client.execute_command("EVAL", load_sources()[name].source, *command[2:])

    async def aeval(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Run script ``name`` as ``EVAL`` of its source (asyncio client): never NOSCRIPT,
        whatever happens to the script cache meanwhile. Returns the raw answer."""
        command = self.evalsha_command(name, keys, args)
        return await self._client.execute_command("EVAL", load_sources()[name].source, *command[2:])

    def check_keys(self, name: str, keys: Sequence[str]) -> None:
        """Raise :class:`BullqError` unless ``keys`` has as many KEYS as script ``name`` takes."""
        expected = load_sources()[name].num_keys
        if len(keys) != expected:
            raise BullqError(f"script {name} takes {expected} KEYS, got {len(keys)}")

    def run(
        self, name: str, keys: Sequence[str], args: Sequence[Any], **opts: Unpack[RunOptions]
    ) -> Any:
        """Run script ``name`` (``client`` may be a pipeline); returns its raw answer."""
        client = opts.get("client")
        return self._checked(self._start(name, keys, args, client), name, client, opts)

    async def arun(
        self, name: str, keys: Sequence[str], args: Sequence[Any], **opts: Unpack[RunOptions]
    ) -> Any:
        """Asyncio twin of :meth:`run` (``client`` may be an asyncio pipeline: await queues it)."""
        client = opts.get("client")
        started = self._start(name, keys, args, client)
        if _is_cluster_pipeline(client):
            return started  # queued on the cluster pipeline; nothing to await or check
        return self._checked(await started, name, client, opts)

    @staticmethod
    def _checked(result: Any, name: str, client: Any, opts: RunOptions) -> Any:
        """``result``, or its code's error when codes are checked (never on a pipeline)."""
        if client is None and opts.get("raise_codes", True):
            return raise_on_code(result, name, opts.get("job_id"))
        return result

    def _start(self, name: str, keys: Sequence[str], args: Sequence[Any], client: Any) -> Any:
        """Check the KEYS count and start script ``name``: on a cluster pipeline, queue it as
        EVAL; else call the registered script (a coroutine on an asyncio client)."""
        self.check_keys(name, keys)
        if _is_cluster_pipeline(client):
            return _eval_in_cluster_pipeline(client, name, keys, args)
        return self._scripts[name](keys=list(keys), args=list(args), client=client)


def _is_cluster_pipeline(client: Any) -> bool:
    return is_cluster_pipeline(client)


def _eval_in_cluster_pipeline(
    pipe: Any, name: str, keys: Sequence[str], args: Sequence[Any]
) -> Any:
    """Queue script ``name`` as EVAL on a cluster pipeline (its reply comes from ``execute``)."""
    return pipe.execute_command("EVAL", load_sources()[name].source, len(keys), *keys, *args)


def settle_replies(replies: Sequence[Any], name: str) -> list[Any]:
    """The results of calls of script ``name`` sent in one write (``run_many``).

    Args:
        replies: each call's raw reply, or the exception it met, in order.

    Returns:
        The replies, each checked by :func:`raise_on_code`.

    Raises:
        Exception: the first error among them (a ScriptError, a Redis error), once all are
            read; the other calls have run.
    """
    results: list[Any] = []
    error: BaseException | None = None
    for reply in replies:
        try:
            if isinstance(reply, BaseException):
                raise reply
            results.append(raise_on_code(reply, name, None))
        except Exception as exc:  # noqa: BLE001 - the first one is raised below
            error = error or exc
            results.append(None)
    if error is not None:
        raise error
    return results


def raise_on_code(result: Any, name: str, job_id: str | None) -> Any:
    """``result``, or the :class:`ScriptError` its negative integer code stands for."""
    if isinstance(result, int) and result < 0:
        raise script_error(result, job_id, name)
    return result
