"""The data: ``seattle-weather.csv`` as shipped by the vega-datasets package (not written here).

Seattle, 2012-01-01 to 2015-12-31, one row a day (1461 rows): ``date``, ``precipitation`` (mm),
``temp_max`` and ``temp_min`` (°C), ``wind`` (m/s), ``weather`` (drizzle, rain, sun, snow, fog).
"""

from __future__ import annotations

import csv
import datetime as dt
import importlib.resources
import io
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources.abc import Traversable

CSV_NAME = "seattle-weather.csv"


@dataclass(frozen=True, slots=True)
class DayRow:
    """One parsed row of the CSV."""

    date: dt.date
    precipitation: float
    temp_max: float
    temp_min: float
    wind: float
    weather: str


def csv_file() -> Traversable:
    """The CSV inside the installed vega_datasets package (``pip install -e '.[example]'``)."""
    return importlib.resources.files("vega_datasets") / "_data" / CSV_NAME


def _parse_date(text: str) -> dt.date:
    # vega-datasets 0.9 writes 2012/01/01; other releases of the file use 2012-01-01.
    return dt.date.fromisoformat(text.strip().replace("/", "-"))


@lru_cache(maxsize=1)
def read_rows() -> tuple[DayRow, ...]:
    """All rows of the CSV in file order (read once per process)."""
    with io.StringIO(csv_file().read_text(encoding="utf-8"), newline="") as handle:
        return tuple(
            DayRow(
                date=_parse_date(row["date"]),
                precipitation=float(row["precipitation"]),
                temp_max=float(row["temp_max"]),
                temp_min=float(row["temp_min"]),
                wind=float(row["wind"]),
                weather=row["weather"].strip(),
            )
            for row in csv.DictReader(handle)
        )


def chunks(size: int) -> list[tuple[int, int]]:
    """``[start, stop)`` row ranges of at most ``size`` rows covering the whole file."""
    if size < 1:
        raise ValueError("chunk size must be >= 1")
    total = len(read_rows())
    return [(start, min(start + size, total)) for start in range(0, total, size)]
