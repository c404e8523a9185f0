"""The job index on a real PostgreSQL: the GIN and trigram indexes the migration creates, each
filter's answer, and the plans that use them (issue 15 item 2)."""

from __future__ import annotations

from typing import Any

from django_bullq.conf import get_queue
from tests.support.pg_server import PostgresServer, run_pg_script


def run(postgres: PostgresServer, queue_name: str, **env_vars: str) -> dict[str, Any]:
    return run_pg_script(postgres, "tests.support.job_index_pg", queue_name, **env_vars)


def test_the_job_index_on_postgresql_answers_each_filter_from_its_indexes(
    postgres: PostgresServer, queue_name: str
) -> None:
    report = run(postgres, queue_name)
    get_queue(queue_name).obliterate(force=True)
    assert report["written"] == 3
    assert "pg_trgm" in report["extensions"]
    assert {"bullq_record_data_gin", "bullq_record_text_trgm"} <= set(report["indexes"])
    assert report["found"] == {
        "path_int": ["a"],
        "path_str": ["b"],
        "path_exists": ["b"],
        "path_list": ["b"],
        "text": ["a"],  # case-folded: ß is ss
        "text_escaped": ["c"],
        "name": ["c"],
    }
    assert report["nul_data"] is None  # jsonb refuses \u0000: the row keeps its text only
    plans = report["plans"]
    assert "bullq_record_data_gin" in plans["path_int"]
    assert "bullq_record_data_gin" in plans["path_list"]  # a list index too
    assert "bullq_record_text_trgm" in plans["text"]
    assert "bullq_record_name" in plans["name"]


def test_the_migration_passes_without_the_right_to_create_pg_trgm(
    postgres: PostgresServer, queue_name: str
) -> None:
    """A database user who may create tables but not extensions: the trigram index is left
    out (docs/search.md gives the manual step), the rest is made, text search still answers."""
    import psycopg

    with psycopg.connect(postgres.dsn, autocommit=True) as admin:
        admin.execute("CREATE ROLE limited LOGIN")
        admin.execute("CREATE DATABASE limited_db")
    with psycopg.connect(postgres.dsn.replace("postgres", "limited_db"), autocommit=True) as db:
        db.execute("REVOKE CREATE ON DATABASE limited_db FROM PUBLIC")
        db.execute("GRANT USAGE, CREATE ON SCHEMA public TO limited")
    report = run(
        postgres, queue_name, BULLQ_TEST_PG_USER="limited", BULLQ_TEST_PG_NAME="limited_db"
    )
    get_queue(queue_name).obliterate(force=True)
    assert "pg_trgm" not in report["extensions"]
    assert "bullq_record_data_gin" in report["indexes"]
    assert "bullq_record_text_trgm" not in report["indexes"]
    assert report["found"]["text"] == ["a"] and report["found"]["path_int"] == ["a"]
