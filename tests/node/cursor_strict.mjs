// Strict decoding of Cursor frames with protobuf-es, the protobuf runtime of Cursor's own client.
//
// Usage: node cursor_strict.mjs DESCRIPTOR_SET_FILE
// DESCRIPTOR_SET_FILE: a serialized google.protobuf.FileDescriptorSet of the project's cursor.proto
// (tests/cursor/strict_decoder.py writes it from the compiled Python module's descriptor), loaded at
// run time with protobuf-es's registry: no generated JavaScript.
//
// Reads JSON lines on stdin, {"type": "glider.cursor.AgentServerMessage", "payloads": [base64, ...]},
// and answers one JSON line each, {"results": [{"ok": true, "json": ...} | {"ok": false, "error": "..."}]}.
// A payload decodes when protobuf-es's fromBinary reads it (what Cursor's client does: it rejects the
// whole frame on bytes it cannot read) AND every field the schema declares was written with the wire
// type its type has (fromBinary reads a declared scalar by its type whatever the wire type says, so a
// mistyped field can be misread without an error; the walk below makes that an error too).
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { createFileRegistry, fromBinary, toJson, ScalarType } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";

const set = fromBinary(FileDescriptorSetSchema, readFileSync(process.argv[2]));
const registry = createFileRegistry(set);

const WIRE_NAMES = ["VARINT", "I64", "LEN", "SGROUP", "EGROUP", "I32"];

function scalarWire(scalar) {
  switch (scalar) {
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return WireType.Bit64;
    case ScalarType.FLOAT:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
      return WireType.Bit32;
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return WireType.LengthDelimited;
    default:
      return WireType.Varint;
  }
}

function fail(desc, field, got, want) {
  const name = `${desc.typeName}.${field.name} (${field.number})`;
  throw new Error(`${name}: wire type ${WIRE_NAMES[got]} where its type wants ${WIRE_NAMES[want]}`);
}

// Walks `bytes` as message `desc`, checking the wire type of every declared field, into sub-messages.
function walk(desc, bytes, depth) {
  if (depth > 64) throw new Error(`${desc.typeName}: nested too deep`);
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [no, wt] = reader.tag();
    const field = desc.fields.find((f) => f.number === no);
    if (field === undefined) {
      reader.skip(wt, no);
      continue;
    }
    switch (field.fieldKind) {
      case "scalar":
        if (wt !== scalarWire(field.scalar)) fail(desc, field, wt, scalarWire(field.scalar));
        reader.skip(wt, no);
        break;
      case "enum":
        if (wt !== WireType.Varint) fail(desc, field, wt, WireType.Varint);
        reader.skip(wt, no);
        break;
      case "message":
        if (wt !== WireType.LengthDelimited) fail(desc, field, wt, WireType.LengthDelimited);
        walk(field.message, reader.bytes(), depth + 1);
        break;
      case "list":
        if (field.listKind === "message") {
          if (wt !== WireType.LengthDelimited) fail(desc, field, wt, WireType.LengthDelimited);
          walk(field.message, reader.bytes(), depth + 1);
        } else {
          // packed (LEN) or one element at a time
          const one = field.listKind === "enum" ? WireType.Varint : scalarWire(field.scalar);
          if (wt !== WireType.LengthDelimited && wt !== one) fail(desc, field, wt, one);
          reader.skip(wt, no);
        }
        break;
      case "map": {
        if (wt !== WireType.LengthDelimited) fail(desc, field, wt, WireType.LengthDelimited);
        const entry = new BinaryReader(reader.bytes());
        while (entry.pos < entry.len) {
          const [eno, ewt] = entry.tag();
          if (eno === 1) {
            if (ewt !== scalarWire(field.mapKey)) fail(desc, field, ewt, scalarWire(field.mapKey));
            entry.skip(ewt, eno);
          } else if (eno === 2 && field.mapKind === "message") {
            if (ewt !== WireType.LengthDelimited) fail(desc, field, ewt, WireType.LengthDelimited);
            walk(field.message, entry.bytes(), depth + 1);
          } else if (eno === 2) {
            const want = field.mapKind === "enum" ? WireType.Varint : scalarWire(field.scalar);
            if (ewt !== want) fail(desc, field, ewt, want);
            entry.skip(ewt, eno);
          } else {
            entry.skip(ewt, eno);
          }
        }
        break;
      }
    }
  }
}

function decode(desc, b64) {
  const bytes = Buffer.from(b64, "base64");
  try {
    const message = fromBinary(desc, bytes);
    walk(desc, bytes, 0);
    return { ok: true, json: toJson(desc, message, { registry }) };
  } catch (err) {
    return { ok: false, error: String(err && err.message ? err.message : err) };
  }
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  let out;
  try {
    const req = JSON.parse(line);
    const desc = registry.getMessage(req.type);
    if (desc === undefined) throw new Error(`no message ${req.type} in the descriptor set`);
    out = { results: req.payloads.map((p) => decode(desc, p)) };
  } catch (err) {
    out = { error: String(err && err.message ? err.message : err) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
});
