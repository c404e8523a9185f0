"""One module per library; each runs one measurement as a child process of the harness.

Protocol (shared by ``node/bench.mjs``): the child gets a JSON spec as its only argument, does
its set-up (fills the queue for processing scenarios), prints ``{"ready": true}``, waits for a
line on stdin, runs, and prints one JSON result line (see :mod:`benchmarks.adapters.common`).
A library that cannot run the scenario prints ``{"na": "<reason>"}`` instead of ready.
"""
