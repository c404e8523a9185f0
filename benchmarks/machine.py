"""A description of the machine, the interpreters and the library versions of a bench run."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from typing import Any

from .scenarios import LIBRARIES, node_bullmq_version


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or the platform's processor string."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def python_versions(python: str) -> dict[str, str]:
    """Python and Python library versions, as the adapters' interpreters see them: ``python``
    for the libraries without a venv of their own, each library's venv for the others
    (a venv not built gives "")."""
    by_python: dict[str, list[str]] = {}
    for lib in LIBRARIES:
        if lib.distribution:
            by_python.setdefault(lib.python(python), []).append(lib.distribution)
    out = {"python": _versions(python, [])["python"]}
    for interpreter, names in by_python.items():
        try:
            out.update({k: v for k, v in _versions(interpreter, names).items() if k != "python"})
        except (OSError, subprocess.CalledProcessError):
            out.update(dict.fromkeys(names, ""))
    return out


def _versions(python: str, names: list[str]) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, platform\n"
        "out = {'python': platform.python_version()}\n"
        f"for n in {names!r}:\n"
        "    try: out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: out[n] = ''\n"
        "print(json.dumps(out))"
    )
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    versions: dict[str, str] = json.loads(done.stdout)
    return versions


def node_version(node: str) -> str:
    try:
        return (
            subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
            .stdout.strip()
            .lstrip("v")
        )
    except (OSError, subprocess.CalledProcessError):
        return ""


def describe(python: str, node: str, client: Any) -> dict[str, Any]:
    """Machine, interpreters, Redis and library versions, and the load when the run began."""
    server = client.info("server")
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "os": f"{platform.system()} {platform.release()}",
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "redis": server.get("redis_version", ""),
        "node": node_version(node),
        "node_bullmq": node_bullmq_version(),
        **python_versions(python),
    }
