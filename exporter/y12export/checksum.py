"""The checksum of a version-2 .y12 file: an XXH64 tree over 64 KiB chunks, in numpy.

    chunks   = the covered bytes split into 65,536-byte chunks (the last one shorter, never empty)
    d_i      = XXH64(chunk_i, seed 0)
    checksum = XXH64(d_0 d_1 ... as 8 little-endian bytes each, seed = number of covered bytes)

XXH64 is written here from its published description (Yann Collet's xxHash specification): four
64-bit lanes each take one 8-byte word of every 32-byte stripe (acc = rotl(acc + word * P2, 31) * P1),
the lanes are merged, the last < 32 bytes are mixed in 8, 4 and 1 byte steps, and a final avalanche
spreads the bits. Chunks are independent, so `xxh64_rows` hashes all chunks of a file at once: one
Python loop over the 2,048 stripes of a chunk, each step vectorised over the chunk index.
"""

import numpy as np

P1 = np.uint64(0x9E3779B185EBCA87)
P2 = np.uint64(0xC2B2AE3D27D4EB4F)
P3 = np.uint64(0x165667B19E3779F9)
P4 = np.uint64(0x85EBCA77C2B2AE63)
P5 = np.uint64(0x27D4EB2F165667C5)
CHUNK = 65536


def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc, word):
    """acc, word: uint64 arrays of one shape; returns rotl(acc + word * P2, 31) * P1."""
    return _rotl(acc + word * P2, 31) * P1


def _merge(acc, v):
    return (acc ^ _round(np.zeros_like(v), v)) * P1 + P4


def xxh64_rows(rows, seeds):
    """XXH64 of each row of `rows` (uint8, shape (N, L), C-contiguous: N inputs of the same length L)
    with its seed (uint64, shape (N,)). Returns uint64, shape (N,)."""
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    n, length = rows.shape
    seeds = np.asarray(seeds, dtype=np.uint64).reshape(n)
    with np.errstate(over="ignore"):
        stripes = length // 32
        if stripes:
            words = rows[:, :stripes * 32].view("<u8").reshape(n, stripes, 4)  # (N, stripes, 4 lanes)
            v = np.stack([seeds + P1 + P2, seeds + P2, seeds.copy(), seeds - P1], axis=1)  # (N, 4)
            for s in range(stripes):
                v = _round(v, words[:, s, :])
            acc = _rotl(v[:, 0], 1) + _rotl(v[:, 1], 7) + _rotl(v[:, 2], 12) + _rotl(v[:, 3], 18)
            for lane in range(4):
                acc = _merge(acc, v[:, lane])
        else:
            acc = seeds + P5
        acc = acc + np.uint64(length)
        pos = stripes * 32
        while pos + 8 <= length:
            word = rows[:, pos:pos + 8].copy().view("<u8").reshape(n)
            acc = _rotl(acc ^ _round(np.zeros_like(acc), word), 27) * P1 + P4
            pos += 8
        if pos + 4 <= length:
            word = rows[:, pos:pos + 4].copy().view("<u4").reshape(n).astype(np.uint64)
            acc = _rotl(acc ^ (word * P1), 23) * P2 + P3
            pos += 4
        while pos < length:
            acc = _rotl(acc ^ (rows[:, pos].astype(np.uint64) * P5), 11) * P1
            pos += 1
        acc ^= acc >> np.uint64(33)
        acc *= P2
        acc ^= acc >> np.uint64(29)
        acc *= P3
        acc ^= acc >> np.uint64(32)
    return acc


def xxh64(data, seed=0):
    """XXH64 of one bytes-like input."""
    row = np.frombuffer(bytes(data), dtype=np.uint8).reshape(1, -1)
    return int(xxh64_rows(row, np.array([seed], dtype=np.uint64))[0])


def tree_checksum(covered):
    """The file checksum of format version 2 over `covered` (a uint8 array: every byte before the
    trailer)."""
    covered = np.asarray(covered, dtype=np.uint8).reshape(-1)
    total = covered.size
    full = total // CHUNK
    digests = []
    if full:
        digests.append(xxh64_rows(covered[:full * CHUNK].reshape(full, CHUNK), np.zeros(full, dtype=np.uint64)))
    if total % CHUNK:
        digests.append(xxh64_rows(covered[full * CHUNK:].reshape(1, -1), np.zeros(1, dtype=np.uint64)))
    tree = np.concatenate(digests).astype("<u8") if digests else np.zeros(0, dtype="<u8")
    return xxh64(tree.tobytes(), seed=total)
