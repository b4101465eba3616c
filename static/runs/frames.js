/* GridWeb's binary frames (gridweb/runs/frames.py): "GWF1", a uint32 header length, a JSON
 * header, padding to 8 bytes, then little-endian arrays each at a multiple of 8 bytes. Every
 * array is read as a typed array over the received buffer: no copy, no per-row work.
 *
 * GridwebFrames.decode(arrayBuffer) -> {header, arrays}; GridwebFrames.rows(arrays, "s")
 * gives the segment columns of a frame (s: closed rows, o: open rows).
 */
(function () {
  "use strict";

  const TYPES = {
    "<f8": Float64Array, "<f4": Float32Array, "<i4": Int32Array, "<i2": Int16Array, "|i1": Int8Array,
    "|u1": Uint8Array, "<u2": Uint16Array, "<u4": Uint32Array,
  };
  const COLUMNS = ["cluster", "first_processor", "processors", "t0", "t1", "kind", "component", "job_id", "stream"];
  const EMPTY = {
    cluster: Int16Array, first_processor: Int32Array, processors: Int32Array, t0: Float64Array, t1: Float64Array,
    kind: Int8Array, component: Int16Array, job_id: Float64Array, stream: Int32Array,
  };
  const decoder = new TextDecoder();

  function decode(buffer) {
    const bytes = new Uint8Array(buffer);
    if (bytes[0] !== 0x47 || bytes[1] !== 0x57 || bytes[2] !== 0x46 || bytes[3] !== 0x31) {
      throw new Error("not a GridWeb frame");
    }
    const length = new DataView(buffer).getUint32(4, true);
    const header = JSON.parse(decoder.decode(bytes.subarray(8, 8 + length)));
    const body = 8 + length + ((8 - ((8 + length) % 8)) % 8);
    const arrays = {};
    for (const [name, dtype, offset, shape] of header.arrays) {
      const Type = TYPES[dtype];
      if (!Type) throw new Error(`frame array ${name}: unknown dtype ${dtype}`);
      const count = shape.reduce((a, b) => a * b, 1);
      arrays[name] = new Type(buffer, body + offset, count);
      arrays[name].shape = shape;
    }
    delete header.arrays;
    return { header, arrays };
  }

  function rows(arrays, prefix) {
    const out = {};
    for (const name of COLUMNS) out[name] = arrays[`${prefix}.${name}`] || new EMPTY[name](0);
    return out;
  }

  window.GridwebFrames = { decode, rows, COLUMNS, EMPTY };
})();
