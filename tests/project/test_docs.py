"""The reference pages of docs/ name every setting, system check id and ``runworker`` flag.

``make docs`` builds the site with warnings as errors (broken links, unresolved references);
these tests keep the hand-written reference tables complete as the code grows.
"""

import argparse
import re
from pathlib import Path

from django_bullq import checks
from django_bullq.conf import DEFAULTS
from django_bullq.core.keys import SUFFIXES
from django_bullq.management.commands.runworker import Command

DOCS = Path(__file__).resolve().parents[2] / "docs"


def table_keys(page: str) -> set[str]:
    """The backquoted first cells of the page's table rows."""
    text = (DOCS / page).read_text()
    return set(re.findall(r"^\| `([^`]+)` \|", text, flags=re.MULTILINE))


def test_configuration_page_lists_every_bullq_key_and_worker_key() -> None:
    keys = table_keys("configuration.md")
    assert set(DEFAULTS) - keys == set()
    assert set(DEFAULTS["WORKER"]) - keys == set()


def test_checks_page_lists_every_check_id() -> None:
    source = "".join(p.read_text() for p in Path(checks.__file__).parent.glob("*.py"))
    ids = {f"django_bullq.E{int(n):03d}" for n in re.findall(r"\berror\(\s*(\d+)", source)}
    ids |= set(re.findall(r'id="(django_bullq\.W\d{3})"', source))
    assert len(ids) >= 11
    assert ids - table_keys("checks.md") == set()


def test_workers_page_lists_every_runworker_flag() -> None:
    parser = argparse.ArgumentParser()
    Command().add_arguments(parser)
    flags = {
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }
    assert "--concurrency" in flags
    documented = {cell.split()[0] for cell in table_keys("workers.md")}
    assert flags - documented == set()


def test_interop_page_lists_every_refused_job_id_and_shares_flows() -> None:
    """docs/interop.md names each queue-key suffix a custom job id may not be (issue 12 item 9)
    and no longer says flows cannot be shared (they are: tests/interop/test_flows.py)."""
    text = (DOCS / "interop.md").read_text()
    section = text[text.index("## Job ids") : text.index("## Key layout")]
    assert {f"`{suffix}`" for suffix in SUFFIXES} <= set(re.findall(r"`[^`]+`", section))
    assert "Not supported yet" not in text
    assert "leaves its parent in `waiting-children` for ever" not in text
