"""End-to-end tests of `lith index build|inspect` against the RGW bed.

This file owns: a ~3,000-key tree in ~40 directories with hostile names
(`.`/`..` components, `a//b`, a leading `/`, a 300-byte component, `x` next
to `x/y`, zero-byte and non-empty `d/` markers, unicode, spaces, `+ % ? # &
=`), an independent Python model of the index's normalisation rules, and the
checks: the default (hybrid) build, the `--fanout-all` build and the
`--serial` build list the same tree as the model, count the same skipped keys
per reason, and make exactly the LIST requests the listing predicts according
to the server's own ledger.
"""

import concurrent.futures
import math
import os
import re
import threading
import uuid

import pytest

import lithcli

NAME_MAX = 255

HOSTILE = {
    "./dot": b"1", "h/./x": b"2", "h/../y": b"3", "a/b/..": b"4", ".": b"5",
    "a//b": b"6", "/lead": b"7",
    "long/" + "L" * 300: b"8",
    "x": b"shadowed", "x/y": b"file under x",
    "d03/": b"", "emptydir/": b"", "mdata/": b"marker with data",
    "ünïcode/cödé ファイル.txt": b"unicode",
    "with space/file name.txt": b"spaces",
    "sym/+%?#&=.txt": b"symbols", "sym/pct%41": b"percent", "q?x": b"question",
    "hash#tag": b"hash", "amp&er": b"amp", "plus+sign": b"plus",
}


def tree_keys():
    """~3,000 ordinary keys in 30 directories (10 with a sub/ directory)."""
    keys = {}
    for d in range(30):
        for f in range(100):
            sub = "sub/" if d % 3 == 0 and f % 5 == 0 else ""
            keys[f"d{d:02d}/{sub}f{f:03d}.bin"] = bytes([65 + f % 26]) * (f % 17)
    keys.update(HOSTILE)
    return keys


# ---- the model: normalize.h and tree.h rules, written independently ---------

def skip_reason(key):
    """None when the key is kept, else the reason lith must report."""
    if len(key.encode()) > 1024:
        return "key_too_long"
    rel = key[:-1] if key.endswith("/") else key
    for comp in rel.split("/"):
        if comp == "":
            return "empty_component"
        if comp in (".", ".."):
            return "dot_component"
        if len(comp.encode()) > NAME_MAX:
            return "name_too_long"
    return None


def model(objects):
    """(sorted --list lines, skipped counts) the index must hold.
    objects: {key: (size, etag)}."""
    skipped, files, dirs, markers = {}, {}, set(), 0
    for key, (size, etag) in objects.items():
        reason = skip_reason(key)
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        parts = (key[:-1] if key.endswith("/") else key).split("/")
        ndirs = len(parts) if key.endswith("/") else len(parts) - 1
        for i in range(1, ndirs + 1):
            dirs.add("/".join(parts[:i]))
        if key.endswith("/"):
            if size:
                skipped["marker_data"] = skipped.get("marker_data", 0) + 1
            else:
                markers += 1
            continue
        files[key] = (size, etag)
    for key in [k for k in files if k in dirs]:     # the directory wins
        del files[key]
        skipped["shadowed"] = skipped.get("shadowed", 0) + 1
    lines = [f"d\t-\t-\t{escape(d)}/" for d in dirs]
    lines += [f"f\t{s}\t{e}\t{escape(k)}" for k, (s, e) in files.items()]
    return sorted(lines), skipped, markers


def escape(s):
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


def listing_children(keys):
    """{prefix: set of items a delimited listing of it shows}."""
    children = {"": set()}
    for key in keys:
        start = 0
        while True:
            cut = key.find("/", start)
            parent = key[:start]
            if cut < 0:
                children.setdefault(parent, set()).add(key)
                break
            children.setdefault(parent, set()).add(key[:cut + 1])
            children.setdefault(key[:cut + 1], set())
            start = cut + 1
    return children


def expected_fanout_lists(keys, page=1000):
    """LIST requests of a pure fan-out walk (--fanout-all): every prefix is
    listed, its pages (objects + common prefixes, `page` per page) follow
    one another."""
    children = listing_children(keys)
    return sum(max(1, math.ceil(len(c) / page)) for c in children.values())


def expected_hybrid_lists(keys, flat_at, page=1000, prefix=""):
    """(LIST requests, prefixes listed flat) of the default walk: a delimited
    page whose new common prefixes (plus one when it is truncated) reach
    flat_at sends them to flat listings (all keys below, `page` per page).
    The builder also counts work pending or in flight elsewhere: this is
    exact when that changes no decision (here: the root's one page, or a
    prefix listed alone)."""
    children = listing_children(keys)

    def walk(p):
        items = sorted(children[p])     # code point order = UTF-8 byte order
        requests, flat = 0, 0
        for start in range(0, max(1, len(items)), page):
            chunk = items[start:start + page]
            cps = [i for i in chunk if i.endswith("/") and i != p]   # p: a marker
            more = start + page < len(items)
            requests += 1
            if len(cps) + more >= flat_at:
                flat += len(cps)
                requests += sum(max(1, math.ceil(sum(k.startswith(c) for k in keys) / page))
                                for c in cps)
            else:
                for c in cps:
                    r, f = walk(c)
                    requests, flat = requests + r, flat + f
        return requests, flat

    return walk(prefix)


# ---- fixtures -----------------------------------------------------------------

@pytest.fixture(scope="module")
def tree(rgw):
    """A bucket holding tree_keys() plus one multipart object."""
    name = f"idx-{uuid.uuid4().hex[:10]}"
    rgw.make_bucket(name)
    keys = tree_keys()
    local = threading.local()

    def put(item):
        if not hasattr(local, "s3"):
            local.s3 = rgw.client()
        key, data = item
        return key, rgw.put(name, key, data, client=local.s3).strip('"')

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        etags = dict(pool.map(put, keys.items()))
    big = os.urandom(6 << 20)
    etags["d07/multipart.bin"] = rgw.put_multipart(name, "d07/multipart.bin", big,
                                                   part_size=5 << 20).strip('"')
    keys["d07/multipart.bin"] = big
    objects = {k: (len(v), etags[k]) for k, v in keys.items()}
    yield name, objects
    s3 = rgw.client()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
        batch = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if batch:
            s3.delete_objects(Bucket=name, Delete={"Objects": batch, "Quiet": True})
    s3.delete_bucket(Bucket=name)


def build(rgw, uri, out, *extra):
    res = lithcli.run(["index", "build", uri, "-o", str(out), "--endpoint", rgw.endpoint,
                       *extra], env=lithcli.bed_env(rgw))
    assert res.rc == 0, res.err
    fields = dict(re.findall(r"(\w+)=(\S+)", res.text))
    return fields


def inspect(path, *extra):
    res = lithcli.run(["index", "inspect", str(path), *extra], check=True)
    return res.text


def summary(text):
    """'name: value' lines and '  reason: N' skip lines of inspect."""
    top = dict(re.findall(r"^([a-z ]+): (.*)$", text, re.M))
    skips = {k: int(v) for k, v in re.findall(r"^  (\w+): (\d+)$", text, re.M)}
    return top, skips


# ---- tests --------------------------------------------------------------------

def test_hybrid_fanout_and_serial_build_the_modelled_tree(rgw, tree, tmp_path):
    name, objects = tree
    want_lines, want_skips, want_markers = model(objects)
    assert want_skips == {"dot_component": 5, "empty_component": 2, "name_too_long": 1,
                          "shadowed": 1, "marker_data": 1}
    assert sum(1 for k in objects if k.endswith("/")) == 3

    with rgw.ledger.window() as hyb_w:
        hyb = build(rgw, f"s3://{name}", tmp_path / "hyb.idx")
    with rgw.ledger.window() as fan_w:
        fan = build(rgw, f"s3://{name}", tmp_path / "fan.idx", "--fanout-all")
    with rgw.ledger.window() as ser_w:
        ser = build(rgw, f"s3://{name}", tmp_path / "ser.idx", "--serial")

    # requests: the server's ledger, lith's own count and the prediction agree
    want_hyb, want_flat = expected_hybrid_lists(objects, flat_at=32 // 2)
    root_prefixes = sum(1 for c in listing_children(objects)[""] if c.endswith("/"))
    assert want_flat == root_prefixes > 16      # the root's one page goes flat
    assert hyb_w.counts["LIST"] == int(hyb["requests"]) == want_hyb == 1 + root_prefixes
    assert int(hyb["flat"]) == want_flat
    assert fan_w.counts["LIST"] == int(fan["requests"]) == expected_fanout_lists(objects)
    assert ser_w.counts["LIST"] == int(ser["requests"]) == math.ceil(len(objects) / 1000)
    assert int(hyb["requests"]) < int(fan["requests"])
    for w in (hyb_w, fan_w, ser_w):
        assert w.counts["GET"] == w.counts["HEAD"] == w.counts["OTHER"] == 0
        assert set(w.counts.statuses) == {200}
    assert int(hyb["max_inflight"]) > 1 and int(fan["max_inflight"]) > 1
    assert (hyb["mode"], fan["mode"], ser["mode"]) == ("hybrid", "fanout-all", "serial")

    hyb_list = inspect(tmp_path / "hyb.idx", "--list").splitlines()
    fan_list = inspect(tmp_path / "fan.idx", "--list").splitlines()
    ser_list = inspect(tmp_path / "ser.idx", "--list").splitlines()
    assert sorted(hyb_list) == sorted(fan_list) == sorted(ser_list) == want_lines
    assert len(hyb_list) > 3000

    for path, mode in ((tmp_path / "hyb.idx", "fanout"), (tmp_path / "fan.idx", "fanout"),
                       (tmp_path / "ser.idx", "serial")):
        top, skips = summary(inspect(path))
        assert skips == want_skips
        assert top["build mode"] == mode
        assert top["format version"] == "1"
        assert top["source"] == f"s3://{name}/"
        assert top["endpoint"] == rgw.endpoint
        assert int(top["keys listed"]) == len(objects)
        assert int(top["markers"]) == want_markers == 2
        assert int(top["files"]) == sum(1 for line in want_lines if line[0] == "f")
        assert int(top["directories"]) == sum(1 for line in want_lines if line[0] == "d") + 1
        assert int(top["total bytes"]) == sum(int(line.split("\t")[1])
                                              for line in want_lines if line[0] == "f")
        assert int(top["skipped"]) == sum(want_skips.values())
        assert float(top["build seconds"]) > 0


def test_inspect_shows_samples_and_multipart_etag(rgw, tree, tmp_path):
    name, objects = tree
    build(rgw, f"s3://{name}", tmp_path / "i.idx")
    text = inspect(tmp_path / "i.idx")
    for sample in ("./dot", "a//b", "/lead", "mdata/"):
        assert f"\n    {sample}\n" in text
    assert "\n  shadowed: 1\n    x\n" in text
    listing = inspect(tmp_path / "i.idx", "--list")
    etag = objects["d07/multipart.bin"][1]
    assert re.fullmatch(r"[0-9a-f]{32}-2", etag)
    assert f"f\t{6 << 20}\t{etag}\td07/multipart.bin\n" in listing


def test_prefix_build(rgw, tree, tmp_path):
    name, objects = tree
    with rgw.ledger.window() as w:
        res = build(rgw, f"s3://{name}/d03", tmp_path / "p.idx", "--concurrency", "4")
    assert int(res["files"]) == 100
    # d03/ and d03/sub/: one prefix alone stays below --concurrency / 2
    assert w.counts["LIST"] == int(res["requests"]) == 2
    assert expected_hybrid_lists(objects, 2, prefix="d03/") == (2, 0)
    assert int(res["flat"]) == 0
    top, _ = summary(inspect(tmp_path / "p.idx"))
    assert top["source"] == f"s3://{name}/d03/"
    assert int(top["markers"]) == 1                   # the "d03/" marker is the root's
    lines = inspect(tmp_path / "p.idx", "--list").splitlines()
    assert "d\t-\t-\tsub/" in lines and len(lines) == 101


def test_limits_and_errors(rgw, tree, tmp_path):
    name, _ = tree
    env = lithcli.bed_env(rgw)
    out = tmp_path / "x.idx"
    res = lithcli.run(["index", "build", f"s3://{name}", "-o", str(out), "--endpoint",
                       rgw.endpoint, "--max-keys", "500"], env=env)
    assert res.rc == 1 and "max keys" in res.err and not out.exists()
    res = lithcli.run(["index", "build", "s3://no-such-bucket-lith", "-o", str(out),
                       "--endpoint", rgw.endpoint], env=env)
    assert res.rc == 1 and "no-such-bucket-lith" in res.err and not out.exists()
    res = lithcli.run(["index", "build", f"s3://{name}", "-o", str(out), "--endpoint",
                       rgw.endpoint], env=lithcli.bed_env(rgw, rgw.user2_access_key,
                                                          rgw.user2_secret_key))
    assert res.rc == 1 and not out.exists()
    assert lithcli.run(["index", "build", f"s3://{name}"], env=env).rc == 2
    res = lithcli.run(["index", "build", f"s3://{name}", "-o", str(out), "--serial",
                       "--fanout-all"], env=env)
    assert res.rc == 2 and "exclude each other" in res.err and not out.exists()

    build(rgw, f"s3://{name}/d01", out)
    data = bytearray(out.read_bytes())
    data[len(data) // 2] ^= 0x40
    bad = tmp_path / "bad.idx"
    bad.write_bytes(bytes(data))
    res = lithcli.run(["index", "inspect", str(bad)])
    assert res.rc == 1 and "not a valid index file" in res.err
    bad.write_bytes(out.read_bytes()[:1000])
    assert lithcli.run(["index", "inspect", str(bad)]).rc == 1
