"""The test settings with the default connection at ``BULLQ_TEST_DOWN_URL`` (a Redis that is
not running), for runworker subprocesses that meet an outage at start."""

import os

from tests.settings import *  # noqa: F403
from tests.settings import BULLQ

BULLQ = {**BULLQ, "CONNECTIONS": {"default": {"URL": os.environ["BULLQ_TEST_DOWN_URL"]}}}
