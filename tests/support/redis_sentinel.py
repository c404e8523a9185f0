"""A Sentinel set on loopback free ports for the failover tests (case B33).

One master, one replica (``--replicaof``) and three sentinels (``redis-server <conf>
--sentinel``) watching the service ``mymaster`` with quorum 2, a 1 s down-after period and a
short failover timeout, each in its own temp directory.
"""

from __future__ import annotations

from typing import Any

from tests.support.redis_nodes import RedisNode, wait_until

SERVICE = "mymaster"


class SentinelSet:
    """The processes of one Sentinel deployment; ``url`` is a ``redis+sentinel://`` URL."""

    def __init__(
        self,
        service: str = SERVICE,
        password: str | None = None,
        sentinel_password: str | None = None,
    ) -> None:
        """``password``: the data nodes' ``requirepass`` (and ``masterauth``), which the
        sentinels are given as ``auth-pass``. ``sentinel_password``: the sentinels' own
        ``requirepass`` (and ``sentinel-pass``, for one another)."""
        self.service = service
        auth = ["--requirepass", password, "--masterauth", password] if password else []
        client_kwargs = {"password": password} if password else {}
        self.master = RedisNode(auth, client_kwargs)
        self.replica = RedisNode(
            ["--replicaof", "127.0.0.1", str(self.master.port), *auth], client_kwargs
        )
        config = (
            f"sentinel monitor {service} 127.0.0.1 {self.master.port} 2\n"
            f"sentinel down-after-milliseconds {service} 1000\n"
            f"sentinel failover-timeout {service} 5000\n"
            f"sentinel parallel-syncs {service} 1\n"
        )
        if password:
            config += f"sentinel auth-pass {service} {password}\n"
        sentinel_kwargs: dict[str, Any] = {}
        if sentinel_password:
            config += f"requirepass {sentinel_password}\n"
            config += f"sentinel sentinel-pass {sentinel_password}\n"
            sentinel_kwargs["password"] = sentinel_password
        self.sentinels = [
            RedisNode(client_kwargs=sentinel_kwargs, config_text=config, mode_args=["--sentinel"])
            for _ in range(3)
        ]

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{self.service}"

    @property
    def nodes(self) -> list[RedisNode]:
        return [self.master, self.replica, *self.sentinels]

    def start(self) -> SentinelSet:
        try:
            self.master.start()
            self.replica.start()
            replica = self.replica.client()
            try:
                wait_until(
                    lambda: replica.info("replication")["master_link_status"] == "up",
                    20,
                    "replica in sync",
                )
            finally:
                replica.close()
            for sentinel in self.sentinels:
                sentinel.start()
            for sentinel in self.sentinels:
                client = sentinel.client()
                try:
                    wait_until(
                        lambda c=client: self._sees_everyone(c),
                        30,
                        f"sentinel {sentinel.port} sees the others and the replica",
                    )
                finally:
                    client.close()
        except BaseException:
            self.cleanup()
            raise
        return self

    def _sees_everyone(self, client: Any) -> bool:
        others = client.execute_command("SENTINEL", "SENTINELS", self.service)
        replicas = client.execute_command("SENTINEL", "REPLICAS", self.service)
        return len(others) == len(self.sentinels) - 1 and len(replicas) == 1

    def master_port(self) -> int:
        """The port of the current master as the first live sentinel reports it."""
        for sentinel in self.sentinels:
            if sentinel.proc is None:
                continue
            client = sentinel.client()
            try:
                _, port = client.execute_command(
                    "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.service
                )
                return int(port)
            finally:
                client.close()
        raise RuntimeError("no sentinel is running")

    def node_on(self, port: int) -> RedisNode:
        return next(n for n in (self.master, self.replica) if n.port == port)

    def cleanup(self) -> None:
        for node in self.nodes:
            node.cleanup()
