"""The admin's Schedules page (issue 15 item 3) and the overview's Redis facts (item 7)."""

from __future__ import annotations

import html
import json
import re
import socket
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from django.contrib.admin.models import ADDITION, LogEntry
from django.test import Client, override_settings
from django.urls import reverse

from django_bullq.admin import schedules
from django_bullq.admin.display import duration_text, time_html
from django_bullq.conf import get_config, get_queue
from django_bullq.core.scheduler import PAUSED_FIELD, PAUSED_SCHEDULERS, JobScheduler
from tests.django.test_admin_csp import Tags, csp_settings  # noqa: F401 - a fixture
from tests.support.admin_users import staff_user
from tests.support.helpers_django import burst

pytestmark = pytest.mark.django_db

ADD, ADD_DATA = "tests.testapp.tasks.add", {"args": [1, 2], "kwargs": {}}
SCHEDULER_PERMS = ["view_bullqqueue", "change_scheduler", "run_scheduler", "remove_scheduler"]


@pytest.fixture
def operator() -> Client:
    client = Client()
    client.force_login(staff_user(*SCHEDULER_PERMS))
    return client


@pytest.fixture
def viewer() -> Client:
    client = Client()
    client.force_login(staff_user("view_bullqqueue"))
    return client


@pytest.fixture
def qname() -> Iterator[str]:
    name = f"sch-{uuid.uuid4().hex[:8]}"
    yield name
    get_queue(name).obliterate(force=True)
    get_queue(name).client.delete(get_queue(name).keys[PAUSED_SCHEDULERS])


def list_url(name: str) -> str:
    return reverse("admin:django_bullq_schedules") + f"?queue={name}"


def act_url(name: str, scheduler: str, action: str) -> str:
    return reverse(
        "admin:django_bullq_scheduler_action",
        kwargs={"queue": name, "scheduler": scheduler, "action": action},
    )


def entries(text: str) -> list[LogEntry]:
    return [e for e in LogEntry.objects.all() if text in e.object_repr]


def pending(name: str, scheduler_id: str) -> str | None:
    """The pending run of a scheduler (``repeat:<id>:<next>``) when it is in Redis, else None."""
    q = get_queue(name)
    score = q.client.zscore(q.keys["repeat"], scheduler_id)
    job_id = None if score is None else f"repeat:{scheduler_id}:{int(score)}"
    return job_id if job_id and q.get_job(job_id) is not None else None


# --- the page ---------------------------------------------------------------------------------


def test_schedules_page_says_each_pattern_in_words_with_zone_and_next_run(
    operator: Client, qname: str
) -> None:
    q = get_queue(qname)
    q.upsert_job_scheduler("tick", {"every": 300_000}, {"name": "tests.testapp.tasks.add"})
    q.upsert_job_scheduler("five", {"pattern": "*/5 * * * *", "tz": "Europe/Paris"}, {})
    q.upsert_job_scheduler("nightly", {"pattern": "0 30 2 * * *"}, {})
    page = operator.get(list_url(qname)).content.decode()
    assert "every 5 min" in page and "every 300000 ms" in page
    assert "Every 5 minutes" in page and "Europe/Paris" in page
    assert "At 02:30" in page  # six fields: seconds first, as cron-parser reads them
    nxt = q.get_job_scheduler("tick")
    assert nxt is not None and nxt.next_millis
    # the next run as display.time_html writes it: local text, UTC on hover
    assert str(time_html(nxt.next_millis)) in page


def test_overview_and_queue_page_link_the_schedules_page(operator: Client, qname: str) -> None:
    get_queue(qname).upsert_job_scheduler("tick", {"every": 60_000}, {})
    overview = operator.get(reverse("admin:django_bullq_bullqqueue_changelist")).content.decode()
    assert f'href="{reverse("admin:django_bullq_schedules")}"' in overview
    queue_page = operator.get(
        reverse("admin:django_bullq_queue", kwargs={"queue": qname})
    ).content.decode()
    assert f'href="{html.escape(list_url(qname))}"' in queue_page


def test_the_page_redraws_its_tables_from_a_part_that_follows_redis(
    viewer: Client, qname: str
) -> None:
    # the page was drawn once: a pause or a run elsewhere showed only on reload
    q = get_queue(qname)
    q.upsert_job_scheduler("tick", {"every": 60_000}, {"name": "tick"})
    part_url = reverse("admin:django_bullq_schedules_part") + f"?queue={qname}"
    page = viewer.get(list_url(qname)).content.decode()
    assert f'data-bullq-refresh="{html.escape(part_url)}"' in page
    assert "django_bullq/js/bullq-refresh.js" in page
    assert "paused" not in viewer.get(part_url).content.decode()

    q.pause_job_scheduler("tick")

    part = viewer.get(part_url).content.decode()
    assert 'data-scheduler="tick" class="bullq-paused"' in part
    assert "<html" not in part and "<h2>Queue" in part
    assert 'type="submit"' not in part  # view-only staff: no buttons in the part either
    assert Client().get(part_url).status_code == 302  # and none of it without a login


def test_a_scheduler_that_made_its_last_run_says_over_not_a_past_next_run(
    viewer: Client, qname: str
) -> None:
    q = get_queue(qname)
    run = q.upsert_job_scheduler("once", {"every": 60_000, "limit": 1}, {"name": "tick"})
    assert run is not None
    q.client.lrem(q.keys["wait"], 0, run.id)  # as a worker ran it: its one run is done
    q.client.zadd(q.keys["completed"], {run.id: 1})
    q.client.hset(q.keys.job(run.id), "finishedOn", 1)
    page = viewer.get(list_url(qname)).content.decode()
    row = page[page.index('data-scheduler="once"') :]
    row = row[: row.index("</tr>")]
    assert '<span class="bullq-over">over</span>' in row and "no next run" in row
    assert "Runs made" in page


def test_describe_every_and_unreadable_cron() -> None:
    every = JobScheduler(id="a", name="a", next_millis=None, every=90_000)
    assert schedules.describe(every) == "every 1 min 30 s"
    alias = JobScheduler(id="b", name="b", next_millis=None, pattern="@daily")
    assert schedules.describe(alias) == "@daily"  # cron-descriptor cannot say: the pattern


def test_schedules_page_lists_the_runs_still_in_redis_by_their_iteration_ids(
    operator: Client, qname: str
) -> None:
    q = get_queue(qname)
    q.upsert_job_scheduler("adder", {"every": 3_600_000}, {"name": ADD, "data": ADD_DATA})
    first = pending(qname, "adder")
    assert first is not None
    burst(qname)  # a real worker runs the first run and, starting it, adds the next one
    assert q.get_job_state(first) == "completed"
    nxt = pending(qname, "adder")
    assert nxt is not None and nxt != first
    rows = schedules.rows(q)
    assert [(r.job_id, r.state) for r in rows[0].runs] == [(nxt, "delayed"), (first, "completed")]
    page = operator.get(list_url(qname)).content.decode()
    job_link = reverse("admin:django_bullq_job", kwargs={"queue": qname, "job_id": first})
    assert f'href="{job_link}">completed</a>' in page


# --- actions ----------------------------------------------------------------------------------


def test_pause_takes_the_scheduler_out_of_repeat_and_deletes_its_pending_run(
    operator: Client, qname: str
) -> None:
    q = get_queue(qname)
    q.upsert_job_scheduler("tick", {"every": 3_600_000}, {"name": "tests.testapp.tasks.add"})
    run = pending(qname, "tick")
    assert run is not None
    response = operator.post(act_url(qname, "tick", "pause"))
    assert response.status_code == 302
    assert q.client.zscore(q.keys["repeat"], "tick") is None  # what every BullMQ worker follows
    assert q.get_job(run) is None
    assert q.get_job_schedulers() == []  # a Node getJobSchedulers() does not list it either
    assert q.client.hexists(q.keys["repeat:tick"], PAUSED_FIELD)
    burst(qname)  # a real worker finds nothing to run
    assert q.get_job_counts() == {s: 0 for s in q.get_job_counts()}
    page = operator.get(list_url(qname)).content.decode()
    assert "bullq-paused-label" in page and 'value="Resume"' in page
    assert [e.change_message for e in entries(f"queue {qname} / scheduler tick")] == [
        "Pause scheduler: paused; its next run (" + run + ") removed"
    ]


def test_resume_upserts_the_paused_definition_and_keeps_its_iteration_count(
    operator: Client, qname: str
) -> None:
    q = get_queue(qname)
    q.upsert_job_scheduler(
        "tick",
        {"every": 3_600_000},
        {"name": ADD, "data": ADD_DATA, "opts": {"attempts": 4}},
    )
    burst(qname)  # iteration 1 ran, iteration 2 pending
    before = q.get_job_scheduler("tick")
    assert before is not None and before.iteration_count == 2
    operator.post(act_url(qname, "tick", "pause"))
    operator.post(act_url(qname, "tick", "resume"))
    after = q.get_job_scheduler("tick")
    assert after is not None and after.next_millis is not None
    assert after.iteration_count == 2 and after.offset == before.offset
    assert after.data == ADD_DATA and after.opts.get("attempts") == 4
    assert not q.client.hexists(q.keys["repeat:tick"], PAUSED_FIELD)
    assert not q.client.sismember(q.keys[PAUSED_SCHEDULERS], "tick")
    assert pending(qname, "tick") is not None
    assert len(entries(f"queue {qname} / scheduler tick")) == 2


def test_run_now_adds_one_job_of_the_template_and_leaves_the_schedule(
    operator: Client, qname: str
) -> None:
    q = get_queue(qname)
    q.upsert_job_scheduler(
        "tick",
        {"every": 3_600_000},
        {"name": "report", "data": {"x": 1}, "opts": {"attempts": 3, "remove_on_complete": 5}},
    )
    before = q.get_job_scheduler("tick")
    operator.post(act_url(qname, "tick", "run"))
    waiting = [j for j in q.get_jobs("waiting") if not j.id.startswith("repeat:")]
    assert [(j.name, j.data, j.opts.get("attempts")) for j in waiting] == [("report", {"x": 1}, 3)]
    assert waiting[0].opts.get("removeOnComplete") == 5
    assert q.get_job_scheduler("tick") == before
    (entry,) = entries(f"queue {qname} / scheduler tick")
    assert entry.change_message == f"Run now scheduler: job {waiting[0].id} added"


def test_remove_asks_first_then_removes_the_scheduler_and_its_pending_run(
    operator: Client, qname: str
) -> None:
    q = get_queue(qname)
    q.upsert_job_scheduler("tick", {"every": 3_600_000}, {})
    run = pending(qname, "tick")
    confirm = operator.post(act_url(qname, "tick", "remove"))
    assert confirm.status_code == 200 and b"Yes, I'm sure" in confirm.content
    assert q.get_job_scheduler("tick") is not None and entries(f"queue {qname} /") == []
    operator.post(act_url(qname, "tick", "remove"), {"confirm": "yes"})
    assert q.get_job_scheduler("tick") is None and run and q.get_job(run) is None
    (entry,) = entries(f"queue {qname} / scheduler tick")
    assert entry.change_message == "Remove scheduler: removed"


def test_create_goes_through_a_form_validated_like_upsert_job_scheduler(
    operator: Client, qname: str
) -> None:
    url = reverse("admin:django_bullq_scheduler_new")
    base = {"queue": qname, "scheduler_id": "new", "name": "job", "job_data": "{}", "options": ""}
    refused = {
        "both": {"every": "1000", "pattern": "* * * * *"},
        "neither": {},
        "bad cron": {"pattern": "61 * * * *"},
        "bad zone": {"pattern": "* * * * *", "tz": "Mars/Olympus"},
        "bad data": {"every": "1000", "job_data": "{nope"},
        "bad option": {"every": "1000", "options": '{"attempts": -1}'},
        "delay": {"every": "1000", "options": '{"priority": "high"}'},
    }
    for what, fields in refused.items():
        response = operator.post(url, {**base, **fields})
        assert response.status_code == 200, what
        assert response.context["form"].errors, what
    assert get_queue(qname).get_job_scheduler("new") is None
    created = operator.post(
        url,
        {**base, "pattern": "0 9 * * MON", "tz": "Europe/Paris", "options": '{"attempts": 2}'},
    )
    assert created.status_code == 302
    made = get_queue(qname).get_job_scheduler("new")
    assert made is not None and (made.pattern, made.tz) == ("0 9 * * MON", "Europe/Paris")
    assert made.opts.get("attempts") == 2
    again = operator.post(url, {**base, "every": "1000"})
    assert "exists in this queue" in again.content.decode()
    (entry,) = entries(f"queue {qname} / scheduler new")
    assert entry.change_message.startswith("Create scheduler: next run repeat:new:")
    assert entry.action_flag == ADDITION


@override_settings(TIME_ZONE="Europe/Paris")
def test_start_and_end_are_date_times_in_the_site_zone_not_epoch_ms(
    operator: Client, qname: str
) -> None:
    url = reverse("admin:django_bullq_scheduler_new")
    form = operator.get(url).content.decode()
    assert 'type="datetime-local"' in form and "ms since epoch" not in form
    assert "Europe/Paris" in form  # the label says the zone they are read in
    created = operator.post(
        url,
        {
            "queue": qname,
            "scheduler_id": "dated",
            "every": "60000",
            "start_date": "2031-07-01T09:30",
            "end_date": "2031-07-02T18:00:15",
        },
    )
    assert created.status_code == 302, created.content.decode()[:2000]
    made = get_queue(qname).get_job_scheduler("dated")
    assert made is not None
    paris_summer = 2 * 3600_000  # CEST, UTC+2
    assert made.start_date == int(datetime(2031, 7, 1, 9, 30, tzinfo=UTC).timestamp() * 1000) - (
        paris_summer
    )
    assert made.end_date == (
        int(datetime(2031, 7, 2, 18, 0, 15, tzinfo=UTC).timestamp() * 1000) - paris_summer
    )
    edit = reverse("admin:django_bullq_scheduler_edit", args=[qname, "dated"])
    page = operator.get(edit).content.decode()
    assert 'value="2031-07-01T09:30:00"' in page and 'value="2031-07-02T18:00:15"' in page


@override_settings(USE_TZ=False, TIME_ZONE="UTC")
def test_start_date_of_a_site_without_use_tz_is_read_in_its_time_zone(
    operator: Client, qname: str
) -> None:
    created = operator.post(
        reverse("admin:django_bullq_scheduler_new"),
        {
            "queue": qname,
            "scheduler_id": "naive",
            "every": "60000",
            "start_date": "2031-01-05T08:00",
        },
    )
    assert created.status_code == 302, created.content.decode()[:2000]
    made = get_queue(qname).get_job_scheduler("naive")
    assert made is not None
    assert made.start_date == int(datetime(2031, 1, 5, 8, tzinfo=UTC).timestamp() * 1000)


def test_a_schedule_with_no_run_to_make_is_a_form_error_not_saved(
    operator: Client, qname: str
) -> None:
    # the page said "saved, nothing to run" and nothing was stored
    response = operator.post(
        reverse("admin:django_bullq_scheduler_new"),
        {"queue": qname, "scheduler_id": "past", "every": "60000", "end_date": "2020-01-01T10:00"},
    )
    assert response.status_code == 200
    assert "Not saved: this schedule has no run to make" in response.content.decode()
    assert get_queue(qname).get_job_scheduler("past") is None
    assert entries(f"queue {qname} / scheduler past") == []


def test_a_template_that_is_no_call_of_its_task_is_refused(operator: Client, qname: str) -> None:
    # accepted, then every run failed: "job data does not match the signature of task ..."
    url = reverse("admin:django_bullq_scheduler_new")
    base = {"queue": qname, "scheduler_id": "bad", "every": "60000", "name": ADD}
    for data, words in (
        ('{"args": [1, 2, 3], "kwargs": {}}', "too many positional arguments"),
        ('{"x": 1}', "takes data"),
    ):
        response = operator.post(url, {**base, "job_data": data})
        assert response.status_code == 200
        assert "not a call of the task" in response.content.decode() and words in (
            html.unescape(response.content.decode())
        )
    assert get_queue(qname).get_job_scheduler("bad") is None
    ok = operator.post(url, {**base, "job_data": json.dumps(ADD_DATA)})
    assert ok.status_code == 302
    # a name no task of this project has is a Node or PyPI worker's job: allowed, with a word
    other = operator.post(
        url,
        {**base, "scheduler_id": "node", "name": "node-report", "job_data": "{}"},
        follow=True,
    )
    assert "No task of this project is named" in other.content.decode()
    assert get_queue(qname).get_job_scheduler("node") is not None


def test_edit_replaces_the_schedule_and_keeps_the_url_queue_and_id(
    operator: Client, qname: str
) -> None:
    q = get_queue(qname)
    q.upsert_job_scheduler("tick", {"every": 60_000}, {"name": "job", "data": {"a": 1}})
    url = reverse("admin:django_bullq_scheduler_edit", kwargs={"queue": qname, "scheduler": "tick"})
    form = operator.get(url)
    assert form.status_code == 200 and "60000" in form.content.decode()
    response = operator.post(
        url,
        {"queue": "elsewhere", "scheduler_id": "other", "name": "job", "every": "120000",
         "job_data": '{"a": 2}'},
    )  # fmt: skip
    assert response.status_code == 302
    edited = q.get_job_scheduler("tick")
    assert edited is not None and (edited.every, edited.data) == (120_000, {"a": 2})
    assert q.get_job_scheduler("other") is None
    assert entries(f"queue {qname} / scheduler tick")[0].change_message.startswith("Edit")


def test_view_only_staff_see_the_schedules_without_buttons_and_get_403(
    viewer: Client, qname: str
) -> None:
    q = get_queue(qname)
    q.upsert_job_scheduler("tick", {"every": 60_000}, {})
    page = viewer.get(list_url(qname)).content.decode()
    assert "tick" in page and "every 1 min" in page
    for button in ('value="Pause"', 'value="Run now"', 'value="Remove"', ">Edit<", "New job"):
        assert button not in page
    for action in ("pause", "resume", "run", "remove"):
        assert viewer.post(act_url(qname, "tick", action), {"confirm": "yes"}).status_code == 403
    new = reverse("admin:django_bullq_scheduler_new")
    assert viewer.get(new).status_code == 403
    assert viewer.post(new, {"queue": qname, "scheduler_id": "x", "every": "1"}).status_code == 403
    assert q.get_job_scheduler("tick") is not None and q.get_job_scheduler("x") is None
    assert entries(f"queue {qname} /") == []


def test_scheduler_actions_are_post_only(operator: Client, qname: str) -> None:
    get_queue(qname).upsert_job_scheduler("tick", {"every": 60_000}, {})
    assert operator.get(act_url(qname, "tick", "remove")).status_code == 405


def test_hostile_scheduler_from_a_node_producer_renders_escaped(
    operator: Client, qname: str
) -> None:
    q = get_queue(qname)
    hostile = '<script>alert("id")</script>'
    # as a Node producer could write it: raw hash and zset entry, a name and pattern of markup
    q.client.hset(
        q.keys[f"repeat:{hostile}"],
        mapping={
            "name": "<img src=x onerror=alert(1)>",
            "pattern": "<b>*/5</b> * * * *",
            "tz": "<i>tz</i>",
            "data": json.dumps({"html": "</td><script>alert(2)</script>"}),
            "ic": 1,
        },
    )
    q.client.zadd(q.keys["repeat"], {hostile: 1_900_000_000_000})
    page = operator.get(list_url(qname)).content.decode()
    assert "<script>alert" not in page and "<img src=x" not in page and "<b>*/5" not in page
    assert "&lt;script&gt;alert(&quot;id&quot;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&lt;i&gt;tz&lt;/i&gt;" in page


# --- item 7: Redis facts on the overview ------------------------------------------------------


def test_overview_shows_each_connections_server_memory_policy_clients_uptime(
    operator: Client,
) -> None:
    info = get_queue("default").client.info()
    page = operator.get(reverse("admin:django_bullq_bullqqueue_changelist")).content.decode()
    row = re.search(r'<tr data-connection="default">(.*?)</tr>', page, re.S)
    assert row is not None
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)
    assert len(cells) == 8
    assert cells[1] in (f"Redis {info['redis_version']}", f"Valkey {info.get('valkey_version')}")
    # used_memory moves between two INFO calls: its shape, and "no limit" for maxmemory 0
    memory = re.fullmatch(r'<span title="(\d+) bytes">([\d.]+[BKMGT]?)</span> / no limit', cells[2])
    assert memory is not None and int(memory.group(1)) > 0, cells[2]
    assert memory.group(2)[-1] == info["used_memory_human"][-1]
    assert cells[3] == "noeviction" and "data-bullq-eviction-warning" not in page
    assert cells[4] == "AOF off, RDB save off" and cells[5] == "1 (inactive)"
    assert cells[6].isdigit() and int(cells[6]) >= 1
    uptime = re.fullmatch(r'<span title="(\d+) ms">(.+)</span>', cells[7])
    assert uptime is not None and int(uptime.group(1)) % 1000 == 0
    assert uptime.group(2) == duration_text(int(uptime.group(1)))


def test_overview_warns_unless_the_eviction_policy_is_noeviction(operator: Client) -> None:
    client = get_queue("default").client
    client.config_set("maxmemory-policy", "allkeys-lru")
    try:
        page = operator.get(reverse("admin:django_bullq_bullqqueue_changelist")).content.decode()
    finally:
        client.config_set("maxmemory-policy", "noeviction")
    assert "data-bullq-eviction-warning" in page
    assert "allkeys-lru: keys may be evicted; BullMQ needs noeviction" in page


def test_an_unreachable_connection_is_a_row_saying_so_not_an_error_page(
    operator: Client,
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nothing listens once the socket is closed
    bullq = get_config()
    connections = {
        **bullq["CONNECTIONS"],
        "down": {"URL": f"redis://user:secret@127.0.0.1:{closed}/3"},
    }
    with override_settings(BULLQ={**bullq, "CONNECTIONS": connections}):
        response = operator.get(reverse("admin:django_bullq_bullqqueue_changelist"))
    page = response.content.decode()
    assert response.status_code == 200
    assert 'data-connection="down"' in page and "unreachable" in page
    assert f"redis://127.0.0.1:{closed}/3" in page and "secret" not in page
    assert 'data-connection="default"' in page


@pytest.mark.usefixtures("csp_settings")
def test_schedules_pages_need_no_inline_script_style_or_handler(
    operator: Client, qname: str
) -> None:
    q = get_queue(qname)
    q.upsert_job_scheduler("tick", {"every": 60_000}, {})
    q.upsert_job_scheduler("held", {"pattern": "0 9 * * *"}, {})
    schedules.pause(q, "held")
    got = {
        "list": operator.get(list_url(qname)),
        "all queues": operator.get(reverse("admin:django_bullq_schedules")),
        "new": operator.get(reverse("admin:django_bullq_scheduler_new")),
        "edit": operator.get(
            reverse(
                "admin:django_bullq_scheduler_edit", kwargs={"queue": qname, "scheduler": "tick"}
            )
        ),
        "confirm remove": operator.post(act_url(qname, "tick", "remove")),
        "overview": operator.get(reverse("admin:django_bullq_bullqqueue_changelist")),
    }
    for page, response in got.items():
        assert response.status_code == 200, page
        parsed = Tags()
        parsed.feed(response.content.decode())
        assert parsed.inline == [], f"{page}: inline script or style"
        for tag, attrs in parsed.tags:
            assert tag != "script" or attrs.get("src"), f"{page}: <{tag} {attrs}>"
            assert "style" not in attrs and not [a for a in attrs if a.startswith("on")], page


def test_the_schedules_page_writes_nothing_on_get(operator: Client, qname: str) -> None:
    """A paused-set member resumed elsewhere (a Node upsert) is not listed as paused, and the
    GET leaves Redis as it was."""
    q = get_queue(qname)
    q.upsert_job_scheduler("tick", {"every": 60_000}, {})
    schedules.pause(q, "tick")
    q.upsert_job_scheduler("tick", {"every": 60_000}, {})  # as a Node upsert would resume it
    before = {k: q.client.dump(k) for k in q.client.keys(f"{q.prefix}:{qname}:*")}
    page = operator.get(list_url(qname)).content.decode()
    assert page.count('data-scheduler="tick"') == 1 and "bullq-paused-label" not in page
    assert {k: q.client.dump(k) for k in q.client.keys(f"{q.prefix}:{qname}:*")} == before


def test_a_valkey_server_is_named_with_its_own_version() -> None:
    """Valkey answers ``redis_version:7.2.4`` for compatibility, its own in ``valkey_version``
    (fields as Valkey 8's INFO writes them)."""
    from django_bullq.admin.server import from_info

    info = {
        "redis_version": "7.2.4",
        "server_name": "valkey",
        "valkey_version": "8.0.2",
        "used_memory": 1048576,
        "used_memory_human": "1.00M",
        "maxmemory": 0,
        "maxmemory_policy": "allkeys-lru",
        "connected_clients": 3,
        "uptime_in_seconds": 90061,
    }
    facts = from_info("cache", "redis://:pw@valkey.example:6380/2", info)
    assert facts.info is not None
    assert (facts.info.server, facts.info.version, facts.where) == (
        "Valkey",
        "8.0.2",
        "redis://valkey.example:6380/2",
    )
    assert facts.info.policy_warning and facts.uptime_ms == 90_061_000
    assert duration_text(facts.uptime_ms) == "1 d 1 h"
    plain = from_info("default", "redis://h/0", {"redis_version": "7.0.15"})
    assert plain.info is not None
    assert (plain.info.server, plain.info.version, plain.info.policy_warning) == (
        "Redis",
        "7.0.15",
        False,
    )
