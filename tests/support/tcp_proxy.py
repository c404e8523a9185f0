"""A TCP proxy in front of a Redis port that tests can cut (a partition) or freeze (a hang)."""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpProxy:
    """Forwards 127.0.0.1:<port> to ``target_port`` on loopback.

    ``cut()`` resets every connection and refuses new ones until ``restore()`` (a network
    partition as the client sees it). ``freeze()`` stops forwarding both ways without closing
    anything (a hung network: no RST, no FIN) until ``thaw()``.
    """

    def __init__(self, target_port: int) -> None:
        self.target = target_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.open = threading.Event()
        self.open.set()
        self.flowing = threading.Event()
        self.flowing.set()
        self.closed = False
        self.socks: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.open.is_set():
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                self.socks += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                self.flowing.wait()
                chunk = src.recv(65536)
                if not chunk or self.closed:
                    break
                self.flowing.wait()
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def _reset_all(self) -> None:
        with self.lock:
            for s in self.socks:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self.socks.clear()

    def cut(self) -> None:
        self.open.clear()
        self._reset_all()

    def restore(self) -> None:
        self.open.set()

    def freeze(self) -> None:
        self.flowing.clear()

    def thaw(self) -> None:
        self.flowing.set()

    def close(self) -> None:
        self.closed = True
        self.open.clear()
        self.flowing.set()
        self.listener.close()
        self._reset_all()
