#!/usr/bin/python3
"""Writes lith's small sample dataset into a directory: a few text and CSV
files, names with spaces and unicode, an empty file, and one 64 MiB binary
— deterministic content so runs are comparable."""

import os
import random
import sys


def main(root):
    rnd = random.Random(2026)
    files = {
        "README.txt": b"lith sample dataset\n",
        "empty.dat": b"",
        "tables/cities.csv": "".join(f"{i},city-{i},{rnd.random():.6f}\n"
                                     for i in range(5000)).encode(),
        "tables/notes with spaces.txt": b"keys may contain spaces\n" * 100,
        "tables/unicod\u00e9-\u65e5\u672c.txt": "unicode names work\n".encode() * 10,
        "genomes/chr1.fa": b">chr1\n" + bytes(rnd.choice(b"ACGT") for _ in range(1 << 20)),
        "genomes/reads.bin": rnd.randbytes(64 << 20),
    }
    for rel, data in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1])
