"""shapes — the access shapes, run against a directory that shows the bucket.

Each Shape knows which objects it reads (`needs`, for copy-then-read), how
many bytes it touches, and run(root) -> {"bytes": n, "ops": n}: it reads
under root exactly as an application would (coreutils or os.pread), checks
what it can (the stream digest, file counts, short reads) and raises on any
error. Offsets are drawn from fixed seeds, so every system reads the same
bytes in the same order.

  stream-cat     cat OBJECT > /dev/null                      (1 GiB)
  stream-sha256  sha256sum OBJECT, digest checked            (1 GiB)
  selective      5% of a 2 GiB object in 64 KiB preads at random offsets,
                 issued in ascending offset order by one reader
  batch          8 objects of 256 MiB, one `cat` per object, all at once
  random-qd1     4 KiB preads at random offsets, one at a time
  random-qd64    the same with 64 threads (os.pread releases the GIL)
                 (random probes land in distinct 1 MiB regions of the 2 GiB
                 object, so no probe is served by another probe's fill)
  tree-walk      ls -lR of the tree, then stat() of each of its files
  small-files    open/read/close every file of the tree, in key order
"""

import concurrent.futures
import os
import random
import subprocess

import dataset

PROBE = 4096
REGION = 1 << 20
TIMEOUT = 1800        # subprocess backstop; the cell watchdog acts first


class Shape:
    name = "?"
    needs = {}
    touched = 0          # bytes the shape reads (0: metadata only)
    ops = 0              # reads (or files) the shape issues

    def __init__(self, sizes, digests):
        self.sizes, self.digests = sizes, digests
        self.setup()

    def setup(self):
        pass


def _run(cmd):
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({p.returncode}): "
                           f"{p.stderr.decode(errors='replace')[-300:]}")
    return p.stdout


def _pread_all(path, offsets, size, threads=1):
    fd = os.open(path, os.O_RDONLY)
    try:
        def one(off):
            got = os.pread(fd, size, off)
            if len(got) != size:
                raise RuntimeError(f"short read at {off}: {len(got)} of {size}")
            return len(got)
        if threads == 1:
            return sum(one(o) for o in offsets)
        with concurrent.futures.ThreadPoolExecutor(threads) as ex:
            return sum(ex.map(one, offsets))
    finally:
        os.close(fd)


class StreamCat(Shape):
    name = "stream-cat"

    def setup(self):
        self.needs = {"keys": [dataset.STREAM_KEY]}
        self.touched, self.ops = self.sizes.stream, 1

    def run(self, root):
        p = subprocess.run(["cat", os.path.join(root, dataset.STREAM_KEY)],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
        if p.returncode != 0:
            raise RuntimeError(f"cat failed: {p.stderr.decode(errors='replace')[-300:]}")
        return {"bytes": self.touched, "ops": 1}


class StreamSha(StreamCat):
    name = "stream-sha256"

    def run(self, root):
        out = _run(["sha256sum", os.path.join(root, dataset.STREAM_KEY)]).split()[0]
        want = self.digests[dataset.STREAM_KEY]
        if out.decode() != want:
            raise RuntimeError(f"sha256 mismatch: {out.decode()} != {want}")
        return {"bytes": self.touched, "ops": 1}


class Selective(Shape):
    name = "selective"

    def setup(self):
        s = self.sizes
        pieces = s.big // s.selective_piece
        n = int(pieces * s.selective_frac)
        rng = random.Random(7)
        self.offsets = sorted(i * s.selective_piece for i in rng.sample(range(pieces), n))
        self.needs = {"keys": [dataset.BIG_KEY]}
        self.touched, self.ops = n * s.selective_piece, n

    def run(self, root):
        got = _pread_all(os.path.join(root, dataset.BIG_KEY), self.offsets,
                         self.sizes.selective_piece)
        return {"bytes": got, "ops": len(self.offsets)}


class Batch(Shape):
    name = "batch"

    def setup(self):
        keys = dataset.batch_keys(self.sizes)
        self.needs = {"prefixes": ["batch/"]}
        self.touched, self.ops = len(keys) * self.sizes.batch_size, len(keys)

    def run(self, root):
        procs = [subprocess.Popen(["cat", os.path.join(root, k)], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for k in dataset.batch_keys(self.sizes)]
        bad = []
        for p in procs:
            _, err = p.communicate(timeout=TIMEOUT)
            if p.returncode != 0:
                bad.append(err.decode(errors="replace")[-200:])
        if bad:
            raise RuntimeError(f"{len(bad)} readers failed: {bad[0]}")
        return {"bytes": self.touched, "ops": len(procs)}


class Random(Shape):
    depth, seed = 1, 11

    def setup(self):
        s = self.sizes
        n = s.random_qd1 if self.depth == 1 else s.random_qd64
        regions = s.big // REGION
        rng = random.Random(self.seed)
        self.offsets = [r * REGION + rng.randrange(REGION // PROBE) * PROBE
                        for r in rng.sample(range(regions), min(n, regions))]
        self.needs = {"keys": [dataset.BIG_KEY]}
        self.touched, self.ops = len(self.offsets) * PROBE, len(self.offsets)

    def run(self, root):
        got = _pread_all(os.path.join(root, dataset.BIG_KEY), self.offsets, PROBE,
                         threads=self.depth)
        return {"bytes": got, "ops": len(self.offsets)}


class RandomQd1(Random):
    name, depth, seed = "random-qd1", 1, 11


class RandomQd64(Random):
    name, depth, seed = "random-qd64", 64, 13


class TreeWalk(Shape):
    name = "tree-walk"

    def setup(self):
        self.keys = dataset.tree_keys(self.sizes)
        self.needs = {"prefixes": ["tree/"]}
        self.touched, self.ops = 0, len(self.keys)

    def run(self, root):
        out = _run(["ls", "-lR", os.path.join(root, "tree")])
        listed = sum(1 for line in out.splitlines() if line.startswith(b"-"))
        if listed != len(self.keys):
            raise RuntimeError(f"ls -lR listed {listed} files, expected {len(self.keys)}")
        for k in self.keys:
            os.stat(os.path.join(root, k))
        return {"bytes": 0, "ops": len(self.keys)}


class SmallFiles(Shape):
    name = "small-files"

    def setup(self):
        self.keys = dataset.tree_keys(self.sizes)
        self.needs = {"prefixes": ["tree/"]}
        self.touched, self.ops = len(self.keys) * self.sizes.file_size, len(self.keys)

    def run(self, root):
        total = 0
        for k in self.keys:
            with open(os.path.join(root, k), "rb", buffering=0) as f:
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        break
                    total += len(b)
        if total != self.touched:
            raise RuntimeError(f"read {total} bytes, expected {self.touched}")
        return {"bytes": total, "ops": len(self.keys)}


ALL = [StreamCat, StreamSha, Selective, Batch, RandomQd1, RandomQd64, TreeWalk,
       SmallFiles]
