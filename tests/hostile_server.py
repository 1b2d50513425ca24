"""A hostile OpenAI-compatible server on 127.0.0.1: one behaviour for every request, GET /models included.

Modes: ``drip`` (a valid reply sent one byte every ``drip_s`` seconds), ``hang`` (accepts, reads the request, never
answers), ``500`` (HTTP 500 forever), ``badjson`` (HTTP 200 with a body that is not JSON), ``nochoices`` (HTTP 200 with
a JSON body without ``choices``). Raw sockets (a thread per connection, daemon), so the drip really is byte by byte.
"""
from __future__ import annotations

import json
import socket
import threading
import time


class HostileServer:
    def __init__(self, mode: str, drip_s: float = 0.5):
        self.mode, self.drip_s = mode, drip_s
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)
        for c in self._conns:
            try:
                c.close()
            except OSError:
                pass
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            self._conns.append(conn)
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _reply(self, status: str, body: bytes) -> bytes:
        return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                f"Connection: close\r\n\r\n").encode() + body

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(0.5)
        data = b""
        try:
            while b"\r\n\r\n" not in data and not self._stop.is_set():
                try:
                    chunk = conn.recv(65536)
                except TimeoutError:
                    continue
                if not chunk:
                    return
                data += chunk
            if self.mode == "hang":
                self._stop.wait()
                return
            ok = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
            reply = {"drip": self._reply("200 OK", ok), "500": self._reply("500 Internal Server Error",
                                                                          b'{"error": {"message": "broken"}}'),
                     "badjson": self._reply("200 OK", b'{"choices": [{"message": '),
                     "nochoices": self._reply("200 OK", b'{"id": "x", "object": "chat.completion"}')}[self.mode]
            if self.mode == "drip":
                for i in range(len(reply)):
                    if self._stop.is_set():
                        return
                    conn.sendall(reply[i:i + 1])
                    time.sleep(self.drip_s)
            else:
                conn.sendall(reply)
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass
