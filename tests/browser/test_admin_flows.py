"""Browser test of a job page's flow tree (issue 15, item 4), on the example project under
daphne in headless Chromium, as ``test_admin_live`` runs it: a flow across two queues, the tree
drawn on a grandchild's page, every node a link, the page's own job in bold, under the strict
CSP. The screenshot goes to ``test-artifacts/browser/32-job-flow.png``."""

from __future__ import annotations

from typing import Any

from django_bullq import Queue
from django_bullq.core.flow import FlowProducer
from tests.browser.test_admin_live import (  # noqa: F401 - fixtures used by name
    QUEUE,
    Site,
    _wait,
    admin_url,
    browser,
    no_csp_violations,
    queue,
    shot,
    site,
)


def test_browser_job_page_draws_its_flow_across_queues(  # the fixtures imported above
    site: Site,  # noqa: F811
    browser: Any,  # noqa: F811
    queue: Queue,  # noqa: F811
) -> None:
    root = FlowProducer(queue.connection).add(
        {
            "name": "monthly report",
            "queue_name": QUEUE,
            "children": [
                {
                    "name": "fetch <b>feed</b>",
                    "queue_name": "weather-imports",
                    "children": [{"name": "parse day", "queue_name": "weather-imports"}],
                },
                {"name": "notify", "queue_name": QUEUE},
            ],
        }
    )
    fetch = root.children[0]
    parse = fetch.children[0]
    page = admin_url(site, job_id=root.job.id).replace(
        f"/q/{QUEUE}/job/{root.job.id}/", f"/q/weather-imports/job/{parse.job.id}/"
    )
    browser.get(page)
    no_csp_violations(browser, "the grandchild's page")
    items = browser.find_elements("css selector", "ul.bullq-flow li")
    assert [item.get_attribute("class") for item in items] == [
        "bullq-depth-0",
        "bullq-depth-1",
        "bullq-depth-2",
        "bullq-depth-1",
    ]
    texts = [item.text for item in items]
    assert texts[0].startswith("monthly report") and "waiting-children" in texts[0]
    assert texts[1].startswith("fetch <b>feed</b>")  # shown as text, not markup
    bold = browser.find_elements("css selector", "ul.bullq-flow li strong")
    assert [b.text for b in bold] == ["parse day"]
    # the tree indents by depth (the stylesheet, no inline style)
    indents = [int(float(item.value_of_css_property("padding-left")[:-2])) for item in items]
    assert indents[0] < indents[1] < indents[2] and indents[3] == indents[1]
    shot(browser, "32-job-flow")
    items[0].find_element("css selector", "a").click()
    assert f"/job/{root.job.id}/" in browser.current_url
    bold = browser.find_elements("css selector", "ul.bullq-flow li strong")
    assert [b.text for b in bold] == ["monthly report"]
    no_csp_violations(browser, "the root's page")


def test_browser_flow_tree_follows_the_other_nodes_without_reload(  # the fixtures imported above
    site: Site,  # noqa: F811
    browser: Any,  # noqa: F811
    queue: Queue,  # noqa: F811
) -> None:
    root = FlowProducer(queue.connection).add(
        {
            "name": "nightly",
            "queue_name": QUEUE,
            "children": [
                {"name": "later", "queue_name": "weather-imports", "opts": {"delay": 600_000}},
                {"name": "other", "queue_name": QUEUE},
            ],
        }
    )
    later, other = root.children
    browser.get(admin_url(site, job_id=other.job.id))

    def state_of(name: str) -> str:
        # read in one script: the tree may be redrawn between two WebDriver calls
        return str(
            browser.execute_script(
                "var items = document.querySelectorAll('ul.bullq-flow li');"
                "for (var i = 0; i < items.length; i++) {"
                "  if (items[i].textContent.indexOf(arguments[0]) === 0) {"
                "    return items[i].querySelector('.bullq-flow-state').textContent; } }"
                "return '';",
                name,
            )
        )

    assert state_of("later") == "delayed"
    # another job of the flow moves: the socket of this page (job "other") says nothing
    imports = Queue("weather-imports", site.redis_url)
    child = imports.get_job(later.job.id)
    assert child is not None
    child.promote()
    _wait(lambda: state_of("later") == "waiting", "the tree to show the promoted child")
    shot(browser, "33-job-flow-live")
    no_csp_violations(browser, "the live flow tree")
