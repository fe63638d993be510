"""Writes a .safetensors parameter file of about GIB GiB for
scripts/bench-torch-ops: a tensor `w` (4 x float32, all 2.5) that the
benchmark's module reads, and a `pad` tensor of zeros that makes up the size.
Prints the file's sha256."""

import hashlib
import json
import struct
import sys

out, gib = sys.argv[1], float(sys.argv[2])
w = struct.pack("<4f", 2.5, 2.5, 2.5, 2.5)
pad_len = int(gib * (1 << 30)) // 4 * 4
header = {
    "w": {"dtype": "F32", "shape": [4], "data_offsets": [0, len(w)]},
    "pad": {"dtype": "F32", "shape": [pad_len // 4], "data_offsets": [len(w), len(w) + pad_len]},
}
text = json.dumps(header).encode()
text += b" " * ((8 - len(text) % 8) % 8)
digest = hashlib.sha256()
with open(out, "wb") as f:
    for part in (struct.pack("<Q", len(text)), text, w):
        f.write(part)
        digest.update(part)
    zeros = bytes(1 << 24)
    left = pad_len
    while left:
        chunk = zeros[: min(len(zeros), left)]
        f.write(chunk)
        digest.update(chunk)
        left -= len(chunk)
print(digest.hexdigest())
