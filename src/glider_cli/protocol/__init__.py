"""Wire protocols: pure readers and writers of what clients and backends send. No I/O, no routing,
no turn meaning (what a request means for its turn is `turns/`).

parse.py             client body -> ChatRequest (what the router sees); inbound_types.py and
                     type_specs.py check the JSON type of every field it reads
translate.py         the entry points the proxy calls for whole bodies: request_to, response_to,
                     response_bytes_to, upstream_path, synthesize_stream, text_reply
translate_stream.py  streams: StreamTranslator, stream_converter (the proxy's byte view of it) and
                     stream_error (the frames that end a failed passthrough stream)
ir.py                the neutral request/reply/stream-event shape every protocol converts through
anthropic.py (+ anthropic_stream.py), openai_chat.py, openai_responses.py (+ openai_responses_stream.py),
gemini.py (+ gemini_request.py: the URL target and call linking), ollama.py
                     one module per wire protocol: parse/build bodies, stream decoder/encoder
encoder_base.py      the lifecycle the stream encoders share (start, finish, error, passthrough)
sse.py               SSE and NDJSON framing (incremental decoders, one-event encoders)
error_bodies.py      protocol-shaped error bodies (also the data of the error frames); upstream errors
                     re-shaped for the client
token_counts.py      token counts read out of any protocol's reply bytes; tokens.py: the bytes/4 estimate
reply_tap.py         the tool calls a reply issued, read from the bytes the client receives
structured.py        structured output (a JSON reply to a schema) in each client's and server's words
guess.py             which protocol a request speaks, from its path
cursor/              Cursor's agent wire protocol (Connect framing, protobuf messages, frames)
"""
