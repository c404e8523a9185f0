"""mypy checks calls of a task against the decorated function (``Task[P, R]``, ParamSpec).

``make test`` also runs ``make typecheck`` (mypy --strict over the package and
``tests/typecheck/sample.py``); this test shows the errors a user gets for wrong calls.
"""

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[2]

WRONG_CALLS = """\
from django_bullq import task


@task(attempts=3)
def add(a: int, b: int = 0) -> int:
    return a + b


add.enqueue("1")
add.enqueue(1, c=2)
add.using(priority=1).enqueue(1, 2, 3)
reveal_type(add(1))
"""


def test_mypy_reports_enqueue_calls_that_do_not_match_the_function(tmp_path: Path) -> None:
    module = tmp_path / "wrong_calls.py"
    module.write_text(WRONG_CALLS)
    out, err, status = api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-error-summary",
            "--hide-error-context",
            "--show-error-codes",
            str(module),
        ]
    )
    reports = [line.split("wrong_calls.py:", 1)[1] for line in out.splitlines()]
    errors = [
        (int(r.split(":")[0]), r.rsplit("[", 1)[1].rstrip("]")) for r in reports if ": error: " in r
    ]
    assert errors == [(9, "arg-type"), (10, "call-arg"), (11, "call-arg")], out + err
    assert 'incompatible type "str"; expected "int"' in reports[0]
    assert 'keyword argument "c"' in reports[1]
    assert [r for r in reports if "Revealed type" in r] == ['12: note: Revealed type is "int"']
    assert status == 1
