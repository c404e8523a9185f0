"""Queue names and job ids in admin URLs (case B25).

A name is percent-encoded with no safe characters (``a#b`` -> ``a%23b``,
``test/x`` -> ``test%2Fx``, ``.`` -> ``%2E``) and Django's reverse() escapes the ``%`` once
more, so the segment never holds a raw ``/``, ``#``, ``?`` or space. The converter decodes
strictly: a segment that is not the
canonical encoding of a valid UTF-8 string does not match (404).
"""

from __future__ import annotations

from urllib.parse import quote, unquote


def encode_name(name: str) -> str:
    """``name`` percent-encoded as one URL path segment (UTF-8, nothing left unescaped).

    ``.`` and ``..`` are encoded as ``%2E`` / ``%2E%2E`` (which reverse() escapes to
    ``%252E``): left as dots, browsers would resolve them as relative path segments.
    """
    if name in (".", ".."):
        return "%2E" * len(name)
    return quote(name, safe="")


def decode_name(segment: str) -> str:
    """Strict inverse of :func:`encode_name`.

    Raises:
        ValueError: the segment is not a canonical encoding (bad UTF-8, unencoded characters).
    """
    name = unquote(segment, errors="strict")
    if not name or encode_name(name) != segment:
        raise ValueError(f"not a canonical encoded name: {segment!r}")
    return name


class EncodedNameConverter:
    """URL converter ``<bullqname:...>``: one encoded segment, decoded with :func:`decode_name`."""

    regex = r"[A-Za-z0-9_.~%-]+"

    def to_python(self, value: str) -> str:
        return decode_name(value)

    def to_url(self, value: str) -> str:
        return encode_name(value)
