"""End-to-end tests of lith's S3 client (`lith s3 ...`) against a real Ceph
RGW: listing across pages and delimiters with hostile key names, HEAD,
byte-exact ranged GETs, ETag pinning, authentication and not-found errors,
addressing styles, TLS, anonymous access, shared-credential profiles, and
reads that stay bit-identical through injected faults. Request counts come
from the server's own log (the ledger), never from lith.
"""

import concurrent.futures
import hashlib
import os
import random
import threading
import time
import uuid

import pytest

import lithcli
from s3proxy import S3Proxy

HOSTILE = [
    "space in name.txt", "plus+sign", "percent%20literal", "question?mark",
    "hash#tag", "amp&ersand", "equals=sign", "tilde~", "unicode-é-日本-🙂",
    "comma,semi;colon", "quote'single", "paren(1)", "dollar$", "at@",
    "x" * 1000,                      # a 1,000-byte name
]


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def parse_ls(text):
    """{key: size} and [prefixes] from `lith s3 ls` output."""
    objects, prefixes = {}, []
    for line in text.splitlines():
        parts = line.split(None, 3)
        if parts[0] == "PRE":
            prefixes.append(line.split("PRE ", 1)[1])
        else:
            objects[parts[3]] = int(parts[2])
    return objects, prefixes


@pytest.fixture(scope="module")
def listing_bucket(rgw):
    """2,500 keys over 5 directories, hostile names among them."""
    bucket = rgw.make_bucket(unique("lith-list"))
    keys = {}
    for i in range(2500 - len(HOSTILE)):
        keys[f"dir{i % 5}/obj-{i:05d}"] = i % 97
    for i, name in enumerate(HOSTILE):
        keys[f"dir{i % 5}/{name}"] = i + 1
    client = rgw.client()

    def put(item):
        key, size = item
        client.put_object(Bucket=bucket, Key=key, Body=b"k" * size)

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        list(pool.map(put, keys.items()))
    return bucket, keys


def test_list_all_pages(rgw, listing_bucket):
    bucket, keys = listing_bucket
    with rgw.ledger.window() as w:
        res = lithcli.s3(rgw, "ls", f"s3://{bucket}", "--recursive", check=True)
    objects, prefixes = parse_ls(res.text)
    assert objects == keys
    assert prefixes == []
    # 2,500 keys at 1,000 per page: exactly three LISTs, nothing else.
    assert w.counts["LIST"] == 3
    assert w.counts.total == 3


def test_list_delimiter_and_prefix(rgw, listing_bucket):
    bucket, keys = listing_bucket
    res = lithcli.s3(rgw, "ls", f"s3://{bucket}/", check=True)
    objects, prefixes = parse_ls(res.text)
    assert objects == {}
    assert sorted(prefixes) == [f"dir{i}/" for i in range(5)]
    res = lithcli.s3(rgw, "ls", f"s3://{bucket}/dir3/", check=True)
    objects, _ = parse_ls(res.text)
    assert objects == {k: v for k, v in keys.items() if k.startswith("dir3/")}


def test_list_hostile_prefix(rgw, listing_bucket):
    bucket, keys = listing_bucket
    for name in HOSTILE:
        key = next(k for k in keys if k.endswith("/" + name))
        res = lithcli.s3(rgw, "ls", f"s3://{bucket}/{key}", check=True)
        objects, _ = parse_ls(res.text)
        assert objects == {key: keys[key]}, name


def test_head(rgw, bucket):
    rgw.put(bucket, "a/b c", b"x" * 12345)
    res = lithcli.s3(rgw, "head", f"s3://{bucket}/a/b c", check=True)
    fields = dict(f.split("=", 1) for f in res.text.split())
    want = rgw.client().head_object(Bucket=bucket, Key="a/b c")
    assert int(fields["size"]) == 12345
    assert fields["etag"] == want["ETag"].strip('"')
    assert int(fields["mtime"]) == int(want["LastModified"].timestamp())


@pytest.fixture(scope="module")
def blob(rgw):
    """A 24 MiB random object (multipart, so its ETag has a -N suffix)."""
    data = random.Random(7).randbytes(24 << 20)
    name = rgw.make_bucket(unique("lith-blob"))
    rgw.put_multipart(name, "data/blob.bin", data, part_size=8 << 20)
    return f"s3://{name}/data/blob.bin", data


def test_whole_get_is_byte_exact(rgw, blob, tmp_path):
    uri, data = blob
    out = tmp_path / "blob"
    with rgw.ledger.window() as w:
        lithcli.s3(rgw, "get", uri, "-o", str(out), "--part-size", "1M", check=True)
    assert hashlib.sha256(out.read_bytes()).digest() == hashlib.sha256(data).digest()
    assert w.counts["HEAD"] == 1
    assert w.counts["GET"] == 24


def test_random_ranges_are_byte_exact(rgw, blob):
    uri, data = blob
    rnd = random.Random(1234)
    ranges = []
    for _ in range(200):
        first = rnd.randrange(len(data))
        last = min(len(data) - 1, first + rnd.choice([0, 1, 4095, 65536, 3 << 20]))
        ranges.append((first, last))

    def one(r):
        first, last = r
        res = lithcli.s3(rgw, "get", uri, "--range", f"{first}-{last}")
        return r, res

    with rgw.ledger.window() as w:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(one, ranges))
    for (first, last), res in results:
        assert res.rc == 0, res.err
        assert res.out == data[first:last + 1], (first, last)
    assert w.counts["GET"] >= 200
    assert w.counts.statuses.get(206, 0) == w.counts["GET"]


def test_range_past_end(rgw, blob):
    uri, data = blob
    res = lithcli.s3(rgw, "get", uri, "--range", f"{len(data) - 10}-{len(data) + 100}",
                     check=True)
    assert res.out == data[-10:]
    res = lithcli.s3(rgw, "get", uri, "--range", f"{len(data)}-{len(data) + 1}")
    assert res.rc == 1 and "past the end" in res.err


def test_etag_mismatch_is_estale(rgw, blob, tmp_path):
    uri, _ = blob
    out = tmp_path / "never"
    with rgw.ledger.window() as w:
        res = lithcli.s3(rgw, "get", uri, "--if-match", "0123456789abcdef0123456789abcdef",
                         "-o", str(out))
    assert res.rc == 1
    assert "Stale file handle" in res.err and "412" in res.err
    assert not out.exists()                  # no partial file left behind
    assert w.counts.statuses.get(412, 0) >= 1


def test_object_replaced_mid_read_is_estale(rgw, bucket, tmp_path):
    """The object is overwritten while a slow transfer is running: the
    pinned ETag makes the rest of the read fail, never mix versions."""
    rgw.put(bucket, "obj", b"A" * (16 << 20))
    out = tmp_path / "obj"
    with S3Proxy(rgw.port, profile="none", conn_rate=2e6) as px:
        done = {}

        def read():
            done["res"] = lithcli.s3(rgw, "get", f"s3://{bucket}/obj", "-o", str(out),
                                     "--part-size", "1M", "--concurrency", "2",
                                     endpoint=px.endpoint)

        t = threading.Thread(target=read)
        t.start()
        time.sleep(1.0)
        rgw.put(bucket, "obj", b"B" * (16 << 20))
        t.join(120)
    res = done["res"]
    assert res.rc == 1, "a replaced object must not read back as success"
    assert "Stale file handle" in res.err
    assert not out.exists()


def test_wrong_secret_is_auth_error(rgw, blob):
    uri, _ = blob
    env = lithcli.bed_env(rgw, secret_key="not-the-secret")
    res = lithcli.s3(rgw, "ls", uri.rsplit("/", 2)[0] + "/", env=env)
    assert res.rc == 1
    assert "403 SignatureDoesNotMatch" in res.err
    assert "secret access key is wrong" in res.err
    res = lithcli.s3(rgw, "head", uri, env=env)
    assert res.rc == 1 and "403" in res.err and "Permission denied" in res.err


def test_unknown_access_key(rgw, bucket):
    env = lithcli.bed_env(rgw, access_key="NOSUCHKEY0000000000", secret_key="x")
    res = lithcli.s3(rgw, "ls", f"s3://{bucket}/", env=env)
    assert res.rc == 1 and "403 InvalidAccessKeyId" in res.err


def test_missing_bucket_and_key(rgw, blob):
    uri, _ = blob
    res = lithcli.s3(rgw, "ls", "s3://lith-no-such-bucket/")
    assert res.rc == 1 and "404 NoSuchBucket" in res.err
    res = lithcli.s3(rgw, "get", uri.rsplit("/", 2)[0] + "/no/such/key")
    assert res.rc == 1 and "404" in res.err and "No such file" in res.err


def test_no_credentials_is_clear(rgw, bucket):
    env = {k: v for k, v in lithcli.bed_env(rgw).items() if not k.startswith("AWS_")}
    res = lithcli.s3(rgw, "ls", f"s3://{bucket}/", env=env)
    assert res.rc == 1 and "no credentials found" in res.err


def test_virtual_hosted_style(rgw, blob):
    uri, data = blob
    with rgw.ledger.window() as w:
        res = lithcli.s3(rgw, "get", uri, "--range", "0-99", "--virtual-host",
                         endpoint=rgw.vhost_endpoint, check=True)
    assert res.out == data[:100]
    assert w.counts["GET"] == 1 and w.counts["HEAD"] == 1
    # virtual-hosted requests carry no bucket in the path
    bucket = uri.split("/")[2]
    assert all(not e.path.startswith("/" + bucket) for e in w.counts.entries)


def test_https_with_ca_bundle(rgw, blob):
    uri, data = blob
    res = lithcli.s3(rgw, "get", uri, "--range", "5-9", "--ca-bundle", rgw.ca_file,
                     endpoint=rgw.https_endpoint, check=True)
    assert res.out == data[5:10]
    res = lithcli.s3(rgw, "head", uri, endpoint=rgw.https_endpoint)
    assert res.rc == 1 and "certificate" in res.err


def test_anonymous_access(rgw, make_bucket):
    public, private = make_bucket("lith-public"), make_bucket("lith-private")
    rgw.put(public, "open.txt", b"public bytes")
    client = rgw.client()
    client.put_bucket_acl(Bucket=public, ACL="public-read")
    client.put_object_acl(Bucket=public, Key="open.txt", ACL="public-read")
    env = {k: v for k, v in lithcli.bed_env(rgw).items() if not k.startswith("AWS_")}
    res = lithcli.s3(rgw, "get", f"s3://{public}/open.txt", "--no-sign-request",
                     env=env, check=True)
    assert res.out == b"public bytes"
    res = lithcli.s3(rgw, "ls", f"s3://{private}/", "--no-sign-request", env=env)
    assert res.rc == 1 and "403" in res.err


def test_profile_from_shared_files(rgw, blob, tmp_path):
    uri, data = blob
    creds = tmp_path / "credentials"
    creds.write_text(f"[default]\naws_access_key_id = WRONG\naws_secret_access_key = x\n"
                     f"[bed]\naws_access_key_id = {rgw.access_key}\n"
                     f"aws_secret_access_key = {rgw.secret_key}\n")
    env = {k: v for k, v in lithcli.bed_env(rgw).items() if not k.startswith("AWS_")}
    env["AWS_SHARED_CREDENTIALS_FILE"] = str(creds)
    env["AWS_CONFIG_FILE"] = str(tmp_path / "none")
    res = lithcli.s3(rgw, "get", uri, "--range", "0-9", "--profile", "bed", env=env,
                     check=True)
    assert res.out == data[:10]
    res = lithcli.s3(rgw, "get", uri, "--range", "0-9", env=env)   # [default]: WRONG
    assert res.rc == 1 and "403" in res.err


def test_second_user_cannot_read(rgw, blob):
    uri, _ = blob
    env = lithcli.bed_env(rgw, rgw.user2_access_key, rgw.user2_secret_key)
    res = lithcli.s3(rgw, "get", uri, "--range", "0-9", env=env)
    assert res.rc == 1 and "403" in res.err


def test_faults_do_not_change_bytes(rgw, bucket, tmp_path):
    """256 MiB through 10% 503 SlowDown, 5% connection resets and 4%
    truncated bodies: the object reads back bit-identical, and the proxy's
    counters prove the faults happened."""
    data = os.urandom(256 << 20)
    rgw.put_multipart(bucket, "big.bin", data, part_size=64 << 20)
    out = tmp_path / "big.bin"
    faults = {"503": {"rate": 0.10, "match": ["GET"]},
              "reset": {"rate": 0.05, "match": ["GET"]},
              "truncate": {"rate": 0.04, "match": ["GET"]}}
    with S3Proxy(rgw.port, profile="none", faults=faults, seed=5) as px:
        res = lithcli.s3(rgw, "get", f"s3://{bucket}/big.bin", "-o", str(out),
                         "--part-size", "1M", "--concurrency", "16",
                         endpoint=px.endpoint, timeout=600)
        counters = px.counters()
    assert res.rc == 0, res.err
    assert hashlib.sha256(out.read_bytes()).digest() == hashlib.sha256(data).digest()
    injected = counters["faults"]
    assert injected.get("503", 0) >= 5, counters
    assert injected.get("reset", 0) >= 2, counters
    assert injected.get("truncate", 0) >= 2, counters
