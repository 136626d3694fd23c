"""End-to-end tests of `lith mount` on Ceph RGW: a real FUSE mount over a
real `lith cached`.

This file owns: a ~2,100-object tree (sizes 0, 1, block-1, block, block+1,
several MiB up to 100 MiB; hostile names) uploaded once per module and
mounted through one shared cache daemon; and the checks of issue 4:
byte-exact reads (sha256 of every file, `cp -r`, 8 concurrent random
readers, mmap), zero HEAD/LIST for metadata walks (server ledger), a file
replaced in S3 under an open handle (an error, never mixed bytes), EROFS
for every write, modes and owners, the fill kinds and one GET per small
file, `lith umount` (clean, busy, lazy), SIGTERM, the cache daemon killed
and restarted (or replaced by one with an empty cache) under a mount, the
private daemon, and serving a FUSE connection passed as an fd.

Tests assert bytes, request counts and errno, never timings.
"""

import concurrent.futures
import ctypes
import errno
import hashlib
import math
import mmap
import os
import random
import signal
import subprocess
import threading
import time

import pytest

import lithcli
from cachedd import Cached
from lithmount import Mount, mounted, wait_for

MIB = 1 << 20
BS = MIB  # lith cached's default block size
SMALL = 4 * MIB  # lith mount's default whole-file threshold

SIZES = {
    "sizes/zero": 0, "sizes/one": 1, "sizes/block-1": BS - 1, "sizes/block": BS,
    "sizes/block+1": BS + 1, "sizes/small-limit": SMALL, "sizes/small-limit+1": SMALL + 1,
    "sizes/7MiB+3": 7 * MIB + 3, "sizes/33MiB+12345": 33 * MIB + 12345,
    "sizes/100MiB": 100 * MIB,
}
HOSTILE = {
    "hostile/with space.txt": b"spaces",
    "hostile/ leading and trailing ": b"edges",
    "hostile/\u00fcn\u00efc\u00f6d\u00e9 \u30d5\u30a1\u30a4\u30eb.txt": b"unicode",
    "hostile/+%?#&=.txt": b"symbols",
    "hostile/pct%41%2F": b"percent",
    "hostile/q?x#y&z+w": b"mixed",
    "hostile/" + "L" * 255: b"longest name",
    "hostile/deep/a/b/c/d/e/f/g/h/i/j/leaf": b"deep",
    "hostile/tab\tand\nnewline": b"control characters",
}
SKIPPED = {"hostile/" + "X" * 256: b"name too long", "hostile/a//b": b"empty component"}
NBULK = 2000


def sha(b):
    return hashlib.sha256(b).hexdigest()


def bulk_tree(rng):
    keys = {}
    for i in range(NBULK):
        size = rng.choice((0, 1, 17, 512, 4095, 4096, 4097, 9000))
        keys[f"bulk/d{i % 25:02d}/f{i:04d}.dat"] = rng.randbytes(size)
    return keys


def upload(rgw, bucket, objects):
    s3 = rgw.client()

    def put(item):
        k, v = item
        if len(v) > 16 * MIB:
            rgw.put_multipart(bucket, k, v, part_size=16 * MIB, client=s3)
        else:
            s3.put_object(Bucket=bucket, Key=k, Body=v)
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(put, objects.items()))


def delete_bucket(rgw, name):
    s3 = rgw.client()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=name, Delete={"Objects": keys, "Quiet": True})
    s3.delete_bucket(Bucket=name)


@pytest.fixture(scope="module")
def tree(rgw):
    rng = random.Random(4)
    data = bulk_tree(rng)
    data.update({k: rng.randbytes(n) for k, n in SIZES.items()})
    data.update(HOSTILE)
    name = f"mount-tree-{os.getpid()}-{rng.randrange(1 << 30):x}"
    rgw.make_bucket(name)
    upload(rgw, name, {**data, **SKIPPED})
    yield name, data
    delete_bucket(rgw, name)


@pytest.fixture(scope="module")
def node_cached(tmp_path_factory):
    d = Cached(tmp_path_factory.mktemp("node-cached"), cache_size="1G")
    d.start()
    yield d
    d.stop()


@pytest.fixture(scope="module")
def tree_mount(rgw, tree, node_cached, tmp_path_factory):
    m = Mount(rgw, tree[0], tmp_path_factory.mktemp("tree") / "mnt", socket=node_cached.socket)
    m.mount()
    yield m
    m.cleanup()


@pytest.fixture
def mounts():
    made = []

    def make(*args, **kw):
        m = Mount(*args, **kw)
        made.append(m)
        return m
    yield make
    for m in made:
        m.cleanup()


def walk_files(root):
    """{relative path: absolute path} of every regular file below root."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = p
    return out


def read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- bytes ----------------------------------------------------------------

def test_tree_matches_the_bucket_byte_for_byte(tree, tree_mount, tmp_path):
    _, data = tree
    root = tree_mount.mountpoint
    files = walk_files(root)
    assert set(files) == set(data)                 # skipped keys are absent
    assert len(files) >= 2000
    dst = tmp_path / "copy"
    subprocess.run(["cp", "-r", root, str(dst)], check=True)
    copied = walk_files(dst)
    assert set(copied) == set(data)
    for rel, want in data.items():
        assert sha(read(copied[rel])) == sha(want), rel
        assert sha(read(files[rel])) == sha(want), rel
        assert os.stat(files[rel]).st_size == len(want), rel


def test_eight_threads_random_offsets(tree, tree_mount):
    _, data = tree
    names = ["sizes/100MiB", "sizes/33MiB+12345", "sizes/7MiB+3", "sizes/block+1"]

    def reader(seed):
        rng = random.Random(seed)
        fds = {n: os.open(os.path.join(tree_mount.mountpoint, n), os.O_RDONLY) for n in names}
        try:
            for _ in range(60):
                n = rng.choice(names)
                off = rng.randrange(len(data[n]) + 10)
                ln = rng.choice((1, 4096, 65536, BS, 2 * BS + 7))
                got = os.pread(fds[n], ln, off)
                assert got == data[n][off:off + ln], (n, off, ln)
        finally:
            for fd in fds.values():
                os.close(fd)
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        for f in [ex.submit(reader, s) for s in range(8)]:
            f.result()


def test_mmap_reads(tree, tree_mount):
    _, data = tree
    rng = random.Random(7)
    for name in ("sizes/33MiB+12345", "sizes/block-1", "sizes/one"):
        want = data[name]
        with open(os.path.join(tree_mount.mountpoint, name), "rb") as f:
            with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
                for _ in range(50):
                    off = rng.randrange(len(want))
                    ln = rng.randrange(1, 3 * BS)
                    assert m[off:off + ln] == want[off:off + ln], (name, off, ln)
                assert sha(m[:]) == sha(want), name


def test_attributes_and_xattrs(rgw, tree, tree_mount):
    name, data = tree
    root = tree_mount.mountpoint
    st = os.stat(os.path.join(root, "sizes/7MiB+3"))
    assert st.st_mode & 0o7777 == 0o444 and st.st_nlink == 1
    assert st.st_uid == os.getuid() and st.st_gid == os.getgid()
    assert os.stat(os.path.join(root, "bulk")).st_mode & 0o7777 == 0o555
    assert os.stat(root).st_nlink == 2 + 3              # bulk, hostile, sizes
    p = os.path.join(root, "hostile/+%?#&=.txt")
    head = rgw.client().head_object(Bucket=name, Key="hostile/+%?#&=.txt")
    assert os.getxattr(p, "user.lith.key") == b"hostile/+%?#&=.txt"
    assert os.getxattr(p, "user.lith.etag") == head["ETag"].strip('"').encode()
    assert sorted(os.listxattr(p)) == ["user.lith.etag", "user.lith.key"]
    assert os.getxattr(os.path.join(root, "hostile"), "user.lith.key") == b"hostile/"
    assert os.listxattr(os.path.join(root, "hostile")) == ["user.lith.key"]
    with pytest.raises(OSError) as e:
        os.getxattr(p, "user.other")
    assert e.value.errno == errno.ENODATA
    sv = os.statvfs(root)
    assert sv.f_blocks * sv.f_frsize >= sum(len(v) for v in data.values())
    assert sv.f_flag & os.ST_RDONLY


def test_metadata_walks_make_no_head_or_list(rgw, tree, mounts, node_cached, tmp_path):
    name, data = tree
    m = mounts(rgw, name, tmp_path / "mnt", socket=node_cached.socket)
    m.mount()                                   # registration's LIST happens here
    root = m.mountpoint
    with rgw.ledger.window() as w:
        ls = subprocess.run(["ls", "-lR", root], capture_output=True, check=True)
        find = subprocess.run(f"find {root} -type f -print0 | xargs -0 stat --format=%s",
                              shell=True, capture_output=True, check=True)
        du = subprocess.run(["du", "-s", root], capture_output=True, check=True)
    assert w.counts["HEAD"] == 0, w.counts.entries
    assert w.counts["LIST"] == 0, w.counts.entries
    assert len(find.stdout.split()) == len(data)
    assert sorted(int(s) for s in find.stdout.split()) == sorted(len(v) for v in data.values())
    blocks = sum(math.ceil(len(v) / 512) for v in data.values())
    assert int(du.stdout.split()[0]) == math.ceil(blocks / 2)
    assert b"f1999.dat" in ls.stdout


# ---- pinning ------------------------------------------------------------------

def test_replaced_object_errors_never_mixes(rgw, bucket, mounts, node_cached, tmp_path):
    old, new = os.urandom(48 * MIB), os.urandom(48 * MIB)
    small_old = os.urandom(2 * MIB)
    rgw.put(bucket, "big.bin", old)
    rgw.put(bucket, "small.bin", small_old)
    m = mounts(rgw, bucket, tmp_path / "mnt", socket=node_cached.socket)
    m.mount()
    big = os.open(os.path.join(m.mountpoint, "big.bin"), os.O_RDONLY)
    small = os.open(os.path.join(m.mountpoint, "small.bin"), os.O_RDONLY)
    try:
        assert os.pread(big, 4096, 0) == old[:4096]
        assert os.pread(small, 4096, 0) == small_old[:4096]   # fetched whole
        rgw.put(bucket, "big.bin", new)
        rgw.put(bucket, "small.bin", os.urandom(2 * MIB))
        with pytest.raises(OSError) as e:
            os.pread(big, 4096, 40 * MIB)                     # not cached: refused
        assert e.value.errno in (errno.EIO, errno.ESTALE)
        errors = 0
        for off in range(0, len(old), MIB):                   # never a byte of `new`
            try:
                got = os.pread(big, MIB, off)
            except OSError as e2:
                assert e2.errno in (errno.EIO, errno.ESTALE)
                errors += 1
                continue
            assert got == old[off:off + MIB], off
        assert errors > 0
        assert read(os.path.join(m.mountpoint, "small.bin")) == small_old
    finally:
        os.close(big)
        os.close(small)


# ---- read only ----------------------------------------------------------------

def test_every_write_is_erofs(tree, tree_mount):
    root = tree_mount.mountpoint
    f = os.path.join(root, "sizes/one")
    d = os.path.join(root, "hostile")
    attempts = {
        "open for write": lambda: os.open(f, os.O_WRONLY),
        "open rdwr": lambda: os.open(f, os.O_RDWR),
        "truncate": lambda: os.truncate(f, 0),
        "create": lambda: os.open(os.path.join(root, "new"), os.O_CREAT | os.O_WRONLY, 0o644),
        "mkdir": lambda: os.mkdir(os.path.join(root, "newdir")),
        "rmdir": lambda: os.rmdir(os.path.join(d, "deep/a/b/c/d/e/f/g/h/i/j")),
        "unlink": lambda: os.unlink(f),
        "rename": lambda: os.rename(f, os.path.join(root, "renamed")),
        "link": lambda: os.link(f, os.path.join(root, "hard")),
        "symlink": lambda: os.symlink("x", os.path.join(root, "sym")),
        "chmod": lambda: os.chmod(f, 0o644),
        "chown": lambda: os.chown(f, 1, 1),
        "utime": lambda: os.utime(f, (1, 1)),
        "setxattr": lambda: os.setxattr(f, "user.x", b"1"),
        "removexattr": lambda: os.removexattr(f, "user.lith.key"),
    }
    for what, fn in attempts.items():
        with pytest.raises(OSError) as e:
            fn()
        assert e.value.errno == errno.EROFS, what
    assert read(f) == tree[1]["sizes/one"]


def test_modes_uid_gid_exec(rgw, bucket, mounts, node_cached, tmp_path):
    rgw.put(bucket, "bin/tool", b"#!/bin/sh\necho ran\n")
    m = mounts(rgw, bucket, tmp_path / "mnt", socket=node_cached.socket,
               extra=["--uid", "1234", "--gid", "4321", "--exec"])
    m.mount()
    st = os.stat(os.path.join(m.mountpoint, "bin/tool"))
    assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (0o555, 1234, 4321)
    st = os.stat(os.path.join(m.mountpoint, "bin"))
    assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (0o555, 1234, 4321)
    out = subprocess.run([os.path.join(m.mountpoint, "bin/tool")], capture_output=True)
    assert out.stdout == b"ran\n"


# ---- fills and requests -----------------------------------------------------

def view_kinds(d):
    """{kind: (fills, bytes)} summed over views from `lith cached stats`."""
    out = {}
    for line in (d.stats_text() or "").splitlines():
        p = line.split()
        if p[:1] == ["view"] and len(p) == 7:
            f, b = out.get(p[2], (0, 0))
            out[p[2]] = (f + int(p[4]), b + int(p[6]))
    return out


def test_small_files_one_get_each_and_fill_kinds(rgw, bucket, mounts, tmp_path):
    rng = random.Random(11)
    small = {f"s/{i}.bin": rng.randbytes(rng.randrange(100_000, SMALL)) for i in range(10)}
    seq, rnd = rng.randbytes(24 * MIB), rng.randbytes(64 * MIB)
    upload(rgw, bucket, {**small, "seq.bin": seq, "rnd.bin": rnd})
    d = Cached(tmp_path / "cached")
    d.start()
    try:
        m = mounts(rgw, bucket, tmp_path / "mnt", socket=d.socket)
        m.mount()
        with rgw.ledger.window() as w:
            for k, v in small.items():
                assert read(os.path.join(m.mountpoint, k)) == v
        gets = w.counts.of("GET")
        assert len(gets) == len(small), [(e.path, e.status) for e in gets]
        assert w.counts["HEAD"] == 0
        assert view_kinds(d)["whole"][0] == len(small)

        assert read(os.path.join(m.mountpoint, "seq.bin")) == seq
        k = view_kinds(d)
        assert k["whole"][1] >= len(seq) - 2 * BS + sum(map(len, small.values()))
        assert k["demand"][1] <= 2 * BS

        offs = [i * 6 * MIB + rng.randrange(MIB) for i in range(10)]
        rng.shuffle(offs)
        with rgw.ledger.window() as w, open(os.path.join(m.mountpoint, "rnd.bin"), "rb") as f:
            for off in offs:
                assert os.pread(f.fileno(), 4096, off) == rnd[off:off + 4096]
        # random faults are fetched exact: one small ranged GET each, no
        # whole blocks, nothing prefetched
        gets = w.counts.of("GET")
        assert len(gets) == len(offs), [(e.path, e.bytes) for e in gets]
        assert all(e.status == 206 and e.bytes <= 64 * 1024 for e in gets), \
            [(e.status, e.bytes) for e in gets]
        assert view_kinds(d)["demand"][0] >= len(offs)
    finally:
        d.stop()


def settled(d, timeout=60):
    """Waits until the daemon's GET count stops moving (prefetches done)."""
    last, stable = None, 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and stable < 3:
        now = d.stats().get("s3_get")
        stable = stable + 1 if now == last else 0
        last = now
        time.sleep(0.2)


def test_key_order_scan_prefetches_siblings(rgw, bucket, mounts, tmp_path):
    files = {f"shards/{i:03d}.bin": os.urandom(16384) for i in range(100)}
    upload(rgw, bucket, files)
    d = Cached(tmp_path / "cached")
    d.start()
    try:
        m = mounts(rgw, bucket, tmp_path / "mnt", socket=d.socket)
        m.mount()
        with rgw.ledger.window() as w:
            for i in range(10):                 # a job reading shards in key order
                k = f"shards/{i:03d}.bin"
                assert read(os.path.join(m.mountpoint, k)) == files[k]
            settled(d)
        keys = [e.path.rsplit("/", 2)[-2] + "/" + e.path.rsplit("/", 1)[-1]
                for e in w.counts.of("GET")]
        assert len(keys) == len(set(keys))      # never two GETs for one file
        # the files it read, and the next ones ahead of it (sibling readahead),
        # bounded by the window: 32 files past the scan's last read
        assert {f"shards/{i:03d}.bin" for i in range(10)} <= set(keys)
        assert 10 + 20 <= len(keys) <= 10 + 33, sorted(keys)
        assert max(keys) <= "shards/042.bin"
        with rgw.ledger.window() as w:          # random opens: no prefetch
            for i in (80, 60, 70):
                k = f"shards/{i:03d}.bin"
                assert read(os.path.join(m.mountpoint, k)) == files[k]
            settled(d)
        assert w.counts["GET"] == 3, [e.path for e in w.counts.of("GET")]
    finally:
        d.stop()


# ---- unmounting ---------------------------------------------------------------

def test_umount_leaves_no_mount_and_no_process(rgw, bucket, mounts, tmp_path):
    rgw.put(bucket, "f", b"data")
    m = mounts(rgw, bucket, tmp_path / "mnt", cache_dir=tmp_path / "pcache")
    m.mount()
    assert read(os.path.join(m.mountpoint, "f")) == b"data"
    assert len(m.mounter_pids()) == 1 and len(m.daemon_pids()) == 1
    res = m.umount()
    assert res.rc == 0
    assert not mounted(m.mountpoint)
    assert m.mounter_pids() == []                  # `lith umount` waited for it
    assert wait_for(lambda: m.daemon_pids() == [])


def fnv1a64(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001b3) & (2**64 - 1)
    return f"{h:016x}"


def test_no_daemon_starts_a_private_one_with_a_mount_long_cache(rgw, bucket, mounts,
                                                                tmp_path):
    rgw.put(bucket, "f", b"private")
    m = mounts(rgw, bucket, tmp_path / "mnt", socket=tmp_path / "nobody-listens.sock")
    m.mount()
    m.cache_dir = f"/var/cache/lith-private/{fnv1a64(m.mountpoint)}"   # the default
    assert read(os.path.join(m.mountpoint, "f")) == b"private"
    assert len(m.daemon_pids()) == 1
    assert os.path.isdir(m.cache_dir)
    m.umount()
    assert wait_for(lambda: m.daemon_pids() == [])
    assert not os.path.exists(m.cache_dir)             # removed with the mount


def test_umount_busy_then_lazy(rgw, bucket, mounts, tmp_path):
    data = os.urandom(12 * MIB)
    rgw.put(bucket, "f", data)
    m = mounts(rgw, bucket, tmp_path / "mnt", cache_dir=tmp_path / "pcache")
    m.mount()
    with open(os.path.join(m.mountpoint, "f"), "rb") as f:
        head = f.read(MIB)
        res = m.umount(check=False)                # in use: refused, still serving
        assert res.rc == 1 and "in use" in res.err
        assert mounted(m.mountpoint)
        assert m.umount("--lazy").rc == 0          # detached at once
        assert not mounted(m.mountpoint)
        assert head + f.read() == data             # the open file reads on
        assert len(m.mounter_pids()) == 1
    assert wait_for(lambda: m.mounter_pids() == [] and m.daemon_pids() == [])


def test_sigterm_unmounts_cleanly(rgw, bucket, mounts, tmp_path):
    rgw.put(bucket, "f", b"x")
    m = mounts(rgw, bucket, tmp_path / "mnt", cache_dir=tmp_path / "pcache")
    m.mount()
    [pid] = m.mounter_pids()
    os.kill(pid, signal.SIGTERM)
    assert wait_for(lambda: not mounted(m.mountpoint) and m.mounter_pids() == []
                    and m.daemon_pids() == [])


def test_killed_mounter_takes_its_private_daemon_along(rgw, bucket, mounts, tmp_path):
    rgw.put(bucket, "f", b"x")
    m = mounts(rgw, bucket, tmp_path / "mnt", cache_dir=tmp_path / "pcache")
    m.mount()
    [pid] = m.mounter_pids()
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: m.mounter_pids() == [] and m.daemon_pids() == [])
    with pytest.raises(OSError) as e:                 # nobody serves it any more
        os.listdir(m.mountpoint)
    # ENOTCONN once the connection is gone; ECONNABORTED when the request
    # met the kernel's abort of it (a race with the release of the fd)
    assert e.value.errno in (errno.ENOTCONN, errno.ECONNABORTED)
    assert m.umount().rc == 0                         # and it can be cleared
    assert not mounted(m.mountpoint)


def test_mount_failure_is_reported(rgw, mounts, tmp_path, node_cached):
    m = mounts(rgw, "lith-no-such-bucket-m", tmp_path / "mnt", socket=node_cached.socket)
    res = m.mount(check=False)
    assert res.rc == 1 and "NoSuchBucket" in res.err
    assert not mounted(m.mountpoint) and m.mounter_pids() == []


# ---- the cache daemon goes away ----------------------------------------------

def test_cache_daemon_killed_and_restarted(rgw, bucket, mounts, tmp_path):
    files = {f"f{i}": os.urandom(6 * MIB + i) for i in range(4)}
    upload(rgw, bucket, files)
    d = Cached(tmp_path / "cached")
    d.start()
    try:
        m = mounts(rgw, bucket, tmp_path / "mnt", socket=d.socket,
                   extra=["--daemon-wait", "60"])
        m.mount()
        p = lambda k: os.path.join(m.mountpoint, k)  # noqa: E731
        assert read(p("f0")) == files["f0"]
        d.proc.kill()
        d.proc.wait()
        result = {}
        t = threading.Thread(target=lambda: result.update(f1=read(p("f1"))))
        t.start()                                  # waits for the daemon
        d.start()
        t.join(90)
        assert result.get("f1") == files["f1"]
        assert read(p("f2")) == files["f2"]

        # A daemon with an empty cache and a freshly built index (another
        # file) on the same socket: inodes are mapped by path and ETag.
        d.stop()
        d2 = Cached(tmp_path / "cached2", socket=d.socket)
        d2.start()
        try:
            assert read(p("f3")) == files["f3"]
        finally:
            d2.stop()
    finally:
        d.stop()


def test_reads_fail_with_eio_after_the_bounded_wait(rgw, bucket, mounts, tmp_path):
    files = {f"f{i}": os.urandom(2 * MIB + i) for i in range(2)}
    upload(rgw, bucket, files)
    d = Cached(tmp_path / "cached")
    d.start()
    try:
        m = mounts(rgw, bucket, tmp_path / "mnt", socket=d.socket,
                   extra=["--daemon-wait", "1"])
        m.mount()
        d.stop()
        with pytest.raises(OSError) as e:
            read(os.path.join(m.mountpoint, "f0"))
        assert e.value.errno == errno.EIO
        d.start()
        assert wait_for(lambda: _reads(os.path.join(m.mountpoint, "f1"), files["f1"]))
        assert read(os.path.join(m.mountpoint, "f0")) == files["f0"]
    finally:
        d.stop()


def _reads(path, want):
    try:
        return read(path) == want
    except OSError:
        return False


def test_private_daemon_is_restarted(rgw, bucket, mounts, tmp_path):
    files = {f"f{i}": os.urandom(3 * MIB + i) for i in range(2)}
    upload(rgw, bucket, files)
    m = mounts(rgw, bucket, tmp_path / "mnt", cache_dir=tmp_path / "pcache")
    m.mount()
    assert read(os.path.join(m.mountpoint, "f0")) == files["f0"]
    [pid] = m.daemon_pids()
    os.kill(pid, signal.SIGKILL)
    assert read(os.path.join(m.mountpoint, "f1")) == files["f1"]
    assert wait_for(lambda: len(m.daemon_pids()) == 1)
    assert m.daemon_pids() != [pid]
    m.umount()
    assert wait_for(lambda: m.daemon_pids() == [])


# ---- a FUSE connection passed as an fd (how lith csi starts the mounter) -------

MS_NOSUID, MS_NODEV = 2, 4


def test_serves_a_connection_passed_as_fd(rgw, bucket, node_cached, tmp_path):
    data = os.urandom(5 * MIB)
    rgw.put(bucket, "dir/f", data)
    mp = tmp_path / "mnt"
    mp.mkdir()
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/dev/fuse", os.O_RDWR)
    opts = f"fd={fd},rootmode=40000,user_id=0,group_id=0,default_permissions,max_read={MIB}"
    # mounted read-write on purpose: the EROFS answers below are lith's own
    if libc.mount(f"lith:{bucket}".encode(), str(mp).encode(), b"fuse.lith",
                  MS_NOSUID | MS_NODEV, opts.encode()) != 0:
        os.close(fd)
        pytest.fail(f"mount(2): {os.strerror(ctypes.get_errno())}")
    proc = None
    try:
        proc = subprocess.Popen(
            [lithcli.lith_bin(), "mount", "--fuse-fd", str(fd), "--foreground",
             "--endpoint", rgw.endpoint, "--cache-socket", node_cached.socket,
             f"s3://{bucket}", str(mp)],
            pass_fds=(fd,), env=lithcli.bed_env(rgw), stderr=subprocess.PIPE)
        os.close(fd)                                # the mounter holds it now
        assert read(mp / "dir" / "f") == data
        assert os.listdir(mp) == ["dir"]
        for what, fn in {
            "open for write": lambda: os.open(mp / "dir" / "f", os.O_WRONLY),
            "create": lambda: os.open(mp / "new", os.O_CREAT | os.O_WRONLY, 0o644),
            "mkdir": lambda: os.mkdir(mp / "newdir"),
            "unlink": lambda: os.unlink(mp / "dir" / "f"),
            "rename": lambda: os.rename(mp / "dir", mp / "moved"),
            "chmod": lambda: os.chmod(mp / "dir" / "f", 0o644),
            "setxattr": lambda: os.setxattr(mp / "dir" / "f", "user.x", b"1"),
        }.items():
            with pytest.raises(OSError) as e:
                fn()
            assert e.value.errno == errno.EROFS, what
        assert libc.umount2(str(mp).encode(), 0) == 0
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        if mounted(mp):
            libc.umount2(str(mp).encode(), 2)


# ---- taking over a live connection; what the caller is told (lith csi) -------

def fuse_mount(mp, bucket):
    """mount(2) a FUSE connection on mp with our own /dev/fuse fd (as lith
    csi does); returns the fd, which keeps the connection alive."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/dev/fuse", os.O_RDWR)
    opts = f"fd={fd},rootmode=40000,user_id=0,group_id=0,default_permissions,max_read={MIB}"
    if libc.mount(f"lith:{bucket}".encode(), str(mp).encode(), b"fuse.lith",
                  MS_NOSUID | MS_NODEV, opts.encode()) != 0:
        os.close(fd)
        pytest.fail(f"mount(2): {os.strerror(ctypes.get_errno())}")
    return fd


def fuse_umount(mp, flags=0):
    ctypes.CDLL(None, use_errno=True).umount2(str(mp).encode(), flags)


def read_status(r, timeout=120):
    """The mounter's --status-fd line, split into (errno, message)."""
    import select
    data, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([r], [], [], 1)
        if ready:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
    os.close(r)
    assert data.endswith(b"\n") and data.count(b"\n") == 1, data
    code, msg = data.decode().rstrip("\n").split("\t", 1)
    return int(code), msg


def start_fd_mounter(rgw, fd, src, mp, log, *extra, endpoint=None):
    """`lith mount --fuse-fd` in the foreground; returns (proc, status)."""
    r, w = os.pipe()
    proc = subprocess.Popen(
        [lithcli.lith_bin(), "mount", "--fuse-fd", str(fd), "--status-fd", str(w),
         "--foreground", "--endpoint", endpoint or rgw.endpoint, *extra, src] + ([str(mp)] if mp else []),
        pass_fds=(fd, w), env=lithcli.bed_env(rgw), stdout=log, stderr=log,
        stdin=subprocess.DEVNULL)
    os.close(w)
    return proc, read_status(r)


READER = r"""
import hashlib, sys, time
h, n = hashlib.sha256(), 0
with open(sys.argv[1], "rb", buffering=0) as f:
    while True:
        b = f.read(1 << 20)
        if not b:
            break
        h.update(b)
        n += len(b)
        if n % (4 << 20) == 0:
            print(n, flush=True)
print("done", n, h.hexdigest(), flush=True)
"""


def test_takeover_of_a_live_connection_mid_read(rgw, bucket, node_cached, proxy, tmp_path):
    data = os.urandom(200 * MIB + 12345)
    rgw.put_multipart(bucket, "big", data, part_size=16 * MIB)
    # a slow S3 (~3 s for the file): each kill finds reads the mounter holds
    px = proxy(ttfb_ms=50, rtt_ms=1, total_rate=60e6)
    mp, init, logp = tmp_path / "mnt", tmp_path / "init", tmp_path / "mounter.log"
    mp.mkdir()
    fd = fuse_mount(mp, bucket)
    log = open(logp, "ab")
    common = ["--cache-socket", node_cached.socket, "--init-file", str(init)]
    procs, reader = [], None
    try:
        proc, st = start_fd_mounter(rgw, fd, f"s3://{bucket}", mp, log, *common,
                                    endpoint=px.endpoint)
        procs.append(proc)
        assert st == (0, "ok")
        assert os.stat(init).st_mode & 0o777 == 0o600
        assert 104 <= os.path.getsize(init) <= 4096       # fuse_in_header + fuse_init_in
        stuck = []                                        # (reader state, where it waits)
        reader = subprocess.Popen(["/usr/bin/python3", "-c", READER, str(mp / "big")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # SIGKILL, then a graceful handoff (SIGTERM: the loop drops what it
        # read while exiting), then SIGKILL again
        for kill_at, sig in ((30 * MIB, signal.SIGKILL), (90 * MIB, signal.SIGTERM),
                             (150 * MIB, signal.SIGKILL)):
            while True:
                line = reader.stdout.readline()
                assert line and not line.startswith("done"), (line, reader.stderr.read())
                if int(line) >= kill_at:
                    break
            procs[-1].send_signal(sig)
            procs[-1].wait(30)
            time.sleep(0.5)
            assert reader.poll() is None                  # blocked, not failed
            with open(f"/proc/{reader.pid}/stat") as f, open(f"/proc/{reader.pid}/wchan") as w:
                stuck.append((f.read().rsplit(")", 1)[1].split()[0], w.read()))
            proc, st = start_fd_mounter(rgw, fd, f"s3://{bucket}", mp, log, *common,
                                        "--takeover", endpoint=px.endpoint)
            procs.append(proc)
            assert st == (0, "ok"), open(logp, errors="replace").read()[-3000:]
        out, err = reader.communicate(timeout=300)
        assert reader.returncode == 0, err
        assert out.splitlines()[-1] == f"done {len(data)} {sha(data)}"
        # the kills hit the reader waiting on the dead server, not between reads
        assert any(state == "D" for state, _ in stuck), stuck
        assert read(mp / "big")[:MIB] == data[:MIB]
        fuse_umount(mp)
        procs[-1].wait(30)
        assert procs[-1].returncode == 0
    finally:
        for p in procs + ([reader] if reader else []):
            if p.poll() is None:
                p.kill()
                p.wait()
        if mounted(mp):
            fuse_umount(mp, 2)
        os.close(fd)
        log.close()


def test_takeover_needs_an_initialised_connection_and_a_saved_init(rgw, bucket, node_cached,
                                                                   tmp_path):
    mp = tmp_path / "mnt"
    mp.mkdir()
    fd = fuse_mount(mp, bucket)
    try:
        with open(tmp_path / "log", "ab") as log:
            proc, st = start_fd_mounter(rgw, fd, f"s3://{bucket}", None, log,
                                        "--cache-socket", node_cached.socket, "--takeover",
                                        "--init-file", str(tmp_path / "missing"))
        assert st[0] == errno.ENOENT and "saved INIT" in st[1]
        assert proc.wait(30) == 1
    finally:
        fuse_umount(mp, 2)
        os.close(fd)


def test_registration_error_is_no_reason_for_a_private_daemon(rgw, node_cached, tmp_path):
    mp, pcache = tmp_path / "mnt", tmp_path / "pcache"
    mp.mkdir()
    fd = fuse_mount(mp, "lith-no-such-bucket-t")
    try:
        with open(tmp_path / "log", "ab") as log:
            proc, st = start_fd_mounter(rgw, fd, "s3://lith-no-such-bucket-t", mp, log,
                                        "--cache-socket", node_cached.socket,
                                        "--cache-dir", str(pcache))
        assert st[0] == errno.ENOENT and "NoSuchBucket" in st[1], st
        assert proc.wait(30) == 1
        assert not pcache.exists()                       # no private daemon was started
        assert "private" not in open(tmp_path / "log", errors="replace").read()
    finally:
        fuse_umount(mp, 2)
        os.close(fd)
    # the same for a path mount
    m = Mount(rgw, "lith-no-such-bucket-t", tmp_path / "mnt2", socket=node_cached.socket,
              cache_dir=tmp_path / "pcache2")
    try:
        res = m.mount(check=False)
        assert res.rc == 1 and "NoSuchBucket" in res.err
        assert not (tmp_path / "pcache2").exists()
    finally:
        m.cleanup()


def test_no_private_cache_and_no_daemon_is_an_error(rgw, bucket, tmp_path):
    mp, pcache = tmp_path / "mnt", tmp_path / "pcache"
    mp.mkdir()
    fd = fuse_mount(mp, bucket)
    try:
        with open(tmp_path / "log", "ab") as log:
            proc, st = start_fd_mounter(rgw, fd, f"s3://{bucket}", mp, log,
                                        "--cache-socket", str(tmp_path / "nobody.sock"),
                                        "--cache-dir", str(pcache), "--no-private-cache")
        assert st[0] == errno.ENOENT and "no cache daemon" in st[1], st
        assert proc.wait(30) == 1
        assert not pcache.exists()
    finally:
        fuse_umount(mp, 2)
        os.close(fd)
