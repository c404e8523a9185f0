"""Sphinx configuration of the docs site: the Markdown pages (MyST) and an autodoc reference.

Build with ``make docs`` (warnings are errors). Django is configured here with the bare
minimum so the Django-layer modules import; nothing connects to Redis or a database.
"""

import sys
from pathlib import Path
from typing import Any

import django
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

settings.configure(
    INSTALLED_APPS=[
        "django_bullq",
        "django.contrib.admin",
        "django.contrib.auth",
        "django.contrib.contenttypes",
        "django.contrib.sessions",
        "django.contrib.messages",
        "channels",
    ],
    DATABASES={},
    USE_TZ=True,
)
django.setup()

import django_bullq  # noqa: E402 - after django.setup()

project = "django_bullq"
author = "django_bullq developers"
copyright = "django_bullq developers"
release = version = django_bullq.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

myst_heading_anchors = 3  # links such as tasks.md#inside-a-transaction
myst_enable_extensions = ["colon_fence"]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

# nitpicky (-n): every cross-reference must resolve. The build is offline (no intersphinx), so
# names from the standard library, Django, redis-py and Channels cannot resolve here.
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(typing|collections|collections\.abc|datetime|asyncio|concurrent|contextvars"
        r"|inspect|threading|logging|pathlib|enum|types|zoneinfo|argparse|_asyncio)(\..*)?",
    ),
    (
        r"py:.*",
        r"(django|redis|channels|asgiref|cronsim|prometheus_client|sentry_sdk)(\..*)?",
    ),
    # django.tasks names re-exported by taskcompat (Django 6, or the django_tasks backport)
    (
        r"py:.*",
        r"(django_tasks(\..*)?|InvalidTask|TaskResultDoesNotExist|TaskResultStatus"
        r"|TaskResult|TaskContext|TaskError)",
    ),
    # type parameters (PEP 695) of the generic steps, Pending and the task decorator, and a
    # type alias autodoc files as data
    (r"py:class", r"(T|R|P|PendingT|OnAdded)"),
    (
        r"py:class",
        r"(Any|Callable|Coroutine|Iterable|Mapping|Sequence|Awaitable|AsyncIterator"
        r"|Iterator|NoReturn|ParamSpec|TypeVar|Generic|datetime|timedelta|Path"
        r"|Enum|Exception|BaseException|ValueError|TypeError|KeyError|RuntimeError"
        r"|TimeoutError|ConnectionError|LookupError|ProcessPoolExecutor)",
    ),
    # type variables of generic helpers (``Call[T]``, ``Steps[R]``) are not documented objects
    (r"py:.*", r"django_bullq\.core\..*\.[TR]"),
    # Task[P, R]'s ParamSpec inside an attribute's Callable[...] type is stringified as "~P"
    (r"py:class", r"~P"),
]

html_theme = "furo"
html_title = f"django_bullq {release}"


def _resolve_short_name(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """Resolve ``Job`` / ``Task.schedule`` / ``django_bullq.FlowProducer`` to the one documented
    object whose full name ends with it (docstrings and string annotations use short names)."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"]
    if target.startswith("django_bullq.") and target.count(".") == 1:
        target = target.split(".", 1)[1]  # re-exports: django_bullq.FlowProducer
    domain = env.get_domain("py")
    matches = sorted(
        name
        for name, obj in domain.objects.items()
        if name.endswith("." + target) and not obj.aliased
    )
    if len(matches) != 1:
        return None
    return domain.resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], matches[0], node, contnode
    )


def _factory_defaults(
    app: Any,
    what: str,
    name: str,
    obj: Any,
    options: Any,
    signature: str | None,
    return_annotation: str | None,
) -> Any:
    """Dataclass fields with a ``default_factory`` show as ``=<factory>``, which Sphinx cannot
    parse as Python (it then splits the annotations at commas): show ``=...`` instead."""
    if signature and "<factory>" in signature:
        return signature.replace("<factory>", "..."), return_annotation
    return None


def setup(app: Any) -> None:
    app.connect("missing-reference", _resolve_short_name)
    app.connect("autodoc-process-signature", _factory_defaults)
