"""Cursor's agent wire protocol (pure: no I/O, no routing): Connect framing (`framing`), the messages
(`cursor.proto`, compiled to `cursor_pb2`), what a request is (`classify`) and the frames a local
answer is made of (`writers`). Importing this package imports `protobuf` (the `glider[cursor]` extra):
only the Cursor proxy does, and only when `cursor.port` is set."""
