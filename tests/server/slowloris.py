"""A hostile local process for the overload tests: `python slowloris.py PORT` holds open, from one
loopback process, 40 connections trickling a request head (a byte every 0.3 s), 20 with a request
head and half a body that never completes, and 10 with half a request head that then sit idle. A
connection the server closes is opened again in the same role, so the 70 stay open until stdin
closes. Prints `ready` once all 70 are open, and on exit how many it had to reopen."""

from __future__ import annotations

import socket
import sys
import threading
import time

DRIBBLERS, BODIES, HALVES = 40, 20, 10


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.setblocking(False)
    return s


def _opening(role: str, port: int) -> bytes:
    head = f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
    if role == "body":
        return (head + "content-length: 4000\r\n\r\n").encode() + b'{"model": "claude-x", "messages": ['
    if role == "half":
        return head.encode()
    return b"POST /v1/messages HTTP/1.1\r\nx-padding: "


def main() -> None:
    port = int(sys.argv[1])
    roles = ["dribble"] * DRIBBLERS + ["body"] * BODIES + ["half"] * HALVES
    socks: list[socket.socket | None] = [None] * len(roles)
    reopened = 0
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    ready = False
    while not stop.is_set():
        for i, role in enumerate(roles):
            s = socks[i]
            if s is not None:
                try:
                    if s.recv(4096) == b"":
                        raise ConnectionError
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    s = socks[i] = None
                    reopened += 1
            if s is None:
                try:
                    s = socks[i] = _connect(port)
                    s.send(_opening(role, port))
                except OSError:
                    socks[i] = None
                    continue
            elif role == "dribble":
                try:
                    s.send(b"a")
                except OSError:
                    pass
        if not ready and all(s is not None for s in socks):
            ready = True
            print("ready", flush=True)
        time.sleep(0.3)
    for s in socks:
        if s is not None:
            s.close()
    print(f"reopened {reopened}", flush=True)


if __name__ == "__main__":
    main()
