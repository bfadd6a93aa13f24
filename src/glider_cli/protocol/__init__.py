"""Wire protocols: pure parse, translate and stream conversion. No I/O.

parse.py             client body -> ChatRequest (what the router sees)
translate.py         the entry points the proxy calls for whole bodies: request_to, response_to,
                     response_bytes_to, upstream_path, synthesize_stream, text_reply
translate_stream.py  streams: StreamTranslator, stream_converter (the proxy's byte view of it) and
                     stream_error (the frames that end a failed passthrough stream)
ir.py                the neutral request/reply/stream-event shape every protocol converts through
anthropic.py, openai_chat.py, openai_responses.py, ollama.py
                     one module per wire protocol: parse/build bodies, stream decoder/encoder
openai_chat_request.py
                     Chat request bodies (re-exported by openai_chat)
encoder_base.py      the lifecycle the stream encoders share (start, finish, error, passthrough)
sse.py               SSE and NDJSON framing (incremental decoders, one-event encoders)
errors.py            protocol-shaped error bodies (also the data of the error frames); upstream errors
                     re-shaped for the client
pack.py, pack_shapes.py
                     the pack a local model receives instead of the whole request (same protocol out)
"""
