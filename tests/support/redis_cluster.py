"""A 3-master Redis Cluster on loopback free ports for the cluster tests (case B32).

Three ``redis-server --cluster-enabled yes`` nodes in temp directories (each with its own
cluster bus port, so ``port + 10000`` need not be free), joined by
``redis-cli --cluster create ... --cluster-replicas 0 --cluster-yes``.
"""

from __future__ import annotations

import shutil
import subprocess

from tests.support.redis_nodes import RedisNode, wait_until
from tests.support.redis_server import free_port


class RedisCluster:
    """Three masters sharing the 16384 slots; ``url`` is a ``redis+cluster://`` seed URL."""

    def __init__(self, masters: int = 3) -> None:
        self.nodes = [
            RedisNode(
                [
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-port",
                    str(free_port()),
                    "--cluster-node-timeout",
                    "5000",
                ]
            )
            for _ in range(masters)
        ]

    @property
    def url(self) -> str:
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port}"

    def start(self) -> RedisCluster:
        try:
            for node in self.nodes:
                node.start()
            cli = shutil.which("redis-cli") or "/usr/bin/redis-cli"
            subprocess.run(
                [
                    cli,
                    "--cluster",
                    "create",
                    *(f"127.0.0.1:{n.port}" for n in self.nodes),
                    "--cluster-replicas",
                    "0",
                    "--cluster-yes",
                ],
                check=True,
                capture_output=True,
                timeout=60,
            )
            for node in self.nodes:
                client = node.client()
                try:
                    wait_until(
                        lambda c=client: (
                            c.cluster("info")["cluster_state"] == "ok"
                            and len(c.cluster("nodes")) == len(self.nodes)
                        ),
                        30,
                        f"cluster state ok on port {node.port}",
                    )
                finally:
                    client.close()
        except BaseException:
            self.cleanup()
            raise
        return self

    def cleanup(self) -> None:
        for node in self.nodes:
            node.cleanup()
