"""`SilentServer`: a backend on 127.0.0.1 that accepts connections and reads what they send, and never
answers (a hung local model server, or a LAN host that takes the connection and stalls)."""

from __future__ import annotations

import socket
import threading


class SilentServer:
    """Accepts, reads the first bytes of each connection (`heads`), never answers; a context manager."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.heads: list[bytes] = []
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def chats(self) -> int:
        """The Ollama chat requests it was sent."""
        with self._lock:
            return sum(1 for head in self.heads if head.startswith(b"POST /api/chat"))

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self._lock:
                self._held.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        try:
            head = conn.recv(65536)
        except OSError:
            return
        with self._lock:
            self.heads.append(head)

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
        with self._lock:
            for c in self._held:
                c.close()
