#!/usr/bin/python3
"""rgwbed — a real single-node Ceph RADOS Gateway for lith's end-to-end tests.

This file owns:
  * RgwBed: starts ceph-mon (cephx), one memstore ceph-osd and radosgw (beast,
    HTTP + HTTPS on 127.0.0.1, tcp_nodelay=1, rgw_dns_name=localhost) from
    Debian's Ceph packages, all inside one directory, all detached; creates
    two S3 users; helpers to make buckets and upload objects with boto3.
  * Ledger: counts the requests the *server* received (GET/HEAD/LIST/OTHER and
    status codes), read from radosgw's own log (see Ledger's docstring).
  * The CLI:  rgwbed.py up --dir D | down --dir D | env --dir D | status --dir D

Run with Debian's /usr/bin/python3 (it has boto3). Nothing here uses an
address other than 127.0.0.1.
"""

import argparse
import base64
import collections
import contextlib
import dataclasses
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid

# SigV4 region. RGW (Pacific) accepts any region name in the credential scope
# (it signs with whatever region the request names), and its zonegroup's
# api_name is "default". "us-east-1" is what S3 clients assume and it makes
# boto3 send CreateBucket without a LocationConstraint.
REGION = "us-east-1"
ZONEGROUP_API_NAME = "default"

# Virtual-hosted style: http(s)://BUCKET.localhost:PORT works over HTTP;
# over HTTPS use https://BUCKET.ceph.localhost:PORT (certificate has
# *.ceph.localhost). curl resolves every *.localhost name to loopback itself.
VHOST_TLS_DOMAIN = "ceph.localhost"

DEFAULT_MEMSTORE_BYTES = 8 << 30
START_TIMEOUT = 120.0

# Fixed test credentials (the bed only ever listens on 127.0.0.1).
USER1 = {"uid": "lith-user1", "access": "LITHTESTUSER1ACCESS0",
         "secret": "lith-test-user1-secret-key-00000000000000"}
USER2 = {"uid": "lith-user2", "access": "LITHTESTUSER2ACCESS0",
         "secret": "lith-test-user2-secret-key-00000000000000"}

# glibc malloc serves the daemons' multi-MiB message buffers with fresh
# mmap()s; every GET then page-faults its way through new memory (a fifth of
# radosgw's CPU). Keeping them on the heap makes a 256 MiB GET ~3x faster.
DAEMON_MALLOC_TUNABLES = ("glibc.malloc.mmap_threshold=33554432:"
                          "glibc.malloc.trim_threshold=268435456")

STATE_FILE = "bed.json"      # machine-readable description of a running bed
ENV_FILE = "env.sh"          # the same as shell exports (source it)
DAEMONS = ("client.rgw", "osd.0", "mon.a")   # stop order


class BedError(RuntimeError):
    """The bed could not be started, reached or stopped."""


class PortTaken(BedError):
    """radosgw found one of its ports already in use."""


# --------------------------------------------------------------------------
# small process / network helpers

def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pid_alive(pid):
    """True when pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def pid_args(pid):
    """The command line of pid as a list (empty if it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def pids_with_arg(arg):
    """Live processes that have arg (our unique conf path) on their command line."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            if arg in pid_args(int(name)) and pid_alive(int(name)):
                found.append(int(name))
    return found


def wait_until(predicate, timeout, interval=0.05, what="condition"):
    """Poll predicate() until it returns a true value; return that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise BedError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)
        interval = min(interval * 1.5, 0.5)


def run(cmd, log=None, timeout=60, check=True):
    """Run a short command; its output goes to log (a path) or is returned."""
    if log:
        with open(log, "ab") as out:
            out.write(("$ " + shlex.join(cmd) + "\n").encode())
            out.flush()
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=timeout)
        output = ""
    else:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=timeout)
        output = proc.stdout
    if check and proc.returncode != 0:
        detail = proc.stderr if not log else f"see {log}"
        raise BedError(f"{shlex.join(cmd)} failed ({proc.returncode}): {detail}")
    return output


def http_status(host, port, path="/", timeout=2.0, method="GET"):
    """Status code of one plain request, or None if nothing answered."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except OSError:
        return None
    finally:
        conn.close()


def cephx_key():
    """A new cephx secret as ceph-authtool --gen-key writes it: base64 of
    type (1 = AES), creation time (sec, nsec), length, 16 random bytes."""
    now = time.time()
    raw = struct.pack("<HIIH", 1, int(now), int(now % 1 * 1e9), 16) + os.urandom(16)
    return base64.b64encode(raw).decode()


def keyring_section(name, key, caps):
    lines = [f"[{name}]", f"\tkey = {key}"]
    lines += [f'\tcaps {svc} = "{cap}"' for svc, cap in caps.items()]
    return "\n".join(lines) + "\n"


def tail(path, lines=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)"


# --------------------------------------------------------------------------
# the request ledger

@dataclasses.dataclass
class Entry:
    """One request as radosgw logged it."""
    method: str
    path: str
    query: str
    status: int
    bytes: int          # response body bytes radosgw sent
    op: str             # radosgw op name, e.g. "get_obj", "list_bucket"; "" if none
    kind: str           # GET | HEAD | LIST | OTHER
    user: str
    time: str
    thread: str


class Counts(dict):
    """{'GET': n, 'HEAD': n, 'LIST': n, 'OTHER': n} plus .entries,
    .statuses (Counter of HTTP status codes) and .total."""

    def __init__(self, entries):
        super().__init__(GET=0, HEAD=0, LIST=0, OTHER=0)
        for e in entries:
            self[e.kind] += 1
        self.entries = list(entries)
        self.statuses = collections.Counter(e.status for e in entries)
        self.total = len(self.entries)

    def of(self, kind, status=None):
        """Entries of one kind (and optionally one status)."""
        return [e for e in self.entries
                if e.kind == kind and (status is None or e.status == status)]


@dataclasses.dataclass(frozen=True)
class Mark:
    offset: int         # log offset just past the sentinel line of mark()


LIST_OPS = {"list_bucket", "list_bucket_versions"}
SENTINEL = "lith-ledger-sentinel"

# 2026-12-02T09:16:29.407+0000 7fbdf37066c0  1 beast: 0x7fbecc45d6e0: 127.0.0.1 -
#   u1 [02/Dec/2026:09:16:29.399 +0000] "GET /b?list-type=2 HTTP/1.1" 200 496 -
#   "Boto3/..." - latency=0.008000000s
BEAST_RE = re.compile(
    r'^(?P<ts>\S+) (?P<thread>[0-9a-f]+)\s+1 beast: 0x[0-9a-f]+: \S+ - (?P<user>\S+) '
    r'\[[^\]]*\] "(?P<method>[A-Z]+) (?P<target>\S+) HTTP/[0-9.]+" '
    r'(?P<status>\d+) (?P<bytes>\d+) ')
# ... 7fbdf37066c0  2 req 3408818798154962928 0.008000000s s3:list_bucket http status=200
STATUS_RE = re.compile(
    r'^\S+ (?P<thread>[0-9a-f]+)\s+2 req \d+ \S+ (?:(?P<dialect>\w+):(?P<op>\S+) )?'
    r'http status=(?P<status>\d+)$')


def classify(method, path, op):
    """GET (object data), HEAD (any HEAD), LIST (object listing) or OTHER."""
    if method == "HEAD":
        return "HEAD"
    if method != "GET":
        return "OTHER"
    if op:
        if op == "get_obj":
            return "GET"
        return "LIST" if op in LIST_OPS else "OTHER"
    # No op name (request rejected before radosgw chose an op): guess from a
    # path-style target. Virtual-hosted requests cannot be told apart here.
    parts = path.lstrip("/").split("/", 1)
    if not parts[0]:
        return "OTHER"
    return "GET" if len(parts) == 2 and parts[1] else "LIST"


class Ledger:
    """Counts the requests radosgw received, from radosgw's own log file.

    Source: with debug_rgw >= 1 the beast frontend writes one access line per
    request after the response is complete ("beast: ... "GET /b/k HTTP/1.1"
    200 5 ..."); with debug_rgw = 2 the same thread writes, just before it,
    "req N ... s3:OPNAME http status=NNN". Both lines come from one coroutine
    with no yield between them, so the op name is paired with the access line
    by thread id. The op name tells GET object (get_obj) from LIST
    (list_bucket) for virtual-hosted requests too, whose access line shows
    only "/key" or "/".

    Lines are written after the response is sent, so mark() and since() each
    send a sentinel request straight to radosgw and wait until its line is in
    the log; everything before the sentinel is then complete. Sentinel lines
    are never counted.
    """

    def __init__(self, log_path, host, port):
        self.log_path = log_path
        self.host, self.port = host, port

    def mark(self):
        return Mark(self._sentinel())

    def since(self, mark):
        """Counts of the requests logged between mark and now."""
        end = self._sentinel()
        return Counts(self._entries(mark.offset, end))

    @contextlib.contextmanager
    def window(self):
        """with bed.ledger.window() as w: ...   then w.counts is a Counts."""
        holder = _Window()
        mark = self.mark()
        yield holder
        holder.counts = self.since(mark)

    # -- internals

    def _sentinel(self, timeout=15.0):
        """Send a sentinel request; return the log offset just past its line."""
        token = f"{SENTINEL}={uuid.uuid4().hex}"
        start = os.path.getsize(self.log_path)
        if http_status(self.host, self.port, "/?" + token, timeout=timeout) is None:
            raise BedError("ledger sentinel request got no answer")
        return wait_until(lambda: self._find(token, start), timeout,
                          interval=0.002, what="the ledger sentinel's log line")

    def _find(self, token, start):
        with open(self.log_path, "rb") as f:
            f.seek(start)
            data = f.read()
        at = data.find(f"{token} HTTP/".encode())      # the access line
        if at < 0:
            return None
        nl = data.find(b"\n", at)
        return start + nl + 1 if nl >= 0 else None

    def _entries(self, start, end, warmup=1 << 20):
        """Access entries whose beast line lies in [start, end)."""
        begin = max(0, start - warmup)     # earlier lines only prime op state
        with open(self.log_path, "rb") as f:
            f.seek(begin)
            data = f.read(end - begin)
        ops, entries, pos = {}, [], begin
        for raw in data.split(b"\n"):
            line_start, pos = pos, pos + len(raw) + 1
            line = raw.decode(errors="replace")
            m = STATUS_RE.match(line)
            if m:
                ops[m["thread"]] = (m["op"] or "", int(m["status"]))
                continue
            m = BEAST_RE.match(line)
            if not m:
                continue
            op, op_status = ops.pop(m["thread"], ("", None))
            if line_start < start or SENTINEL in m["target"]:
                continue
            if op_status is not None and op_status != int(m["status"]):
                op = ""      # pairing looks wrong: do not trust the op name
            entries.append(self._entry(m, op))
        return entries

    @staticmethod
    def _entry(m, op):
        path, _, query = m["target"].partition("?")
        return Entry(method=m["method"], path=path, query=query,
                     status=int(m["status"]), bytes=int(m["bytes"]), op=op,
                     kind=classify(m["method"], path, op), user=m["user"],
                     time=m["ts"], thread=m["thread"])


class _Window:
    """Attribute holder filled by Ledger.window()."""
    counts = None


# --------------------------------------------------------------------------
# the bed

class RgwBed:
    """A single-node Ceph cluster with radosgw, living in one directory.

    bed = RgwBed("/tmp/x"); bed.start(); ...; bed.stop()
    RgwBed.attach("/tmp/x") returns a handle on a bed another process started.
    """

    def __init__(self, directory, memstore_bytes=DEFAULT_MEMSTORE_BYTES,
                 debug_rgw=2, extra_conf=None):
        self.dir = os.path.abspath(directory)
        self.extra_conf = dict(extra_conf or {})   # "section/option": value
        self.memstore_bytes = int(memstore_bytes)
        self.debug_rgw = debug_rgw
        self.state = {}
        self._s3 = None
        self.start_seconds = None

    # -- paths

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    @property
    def conf(self):
        return self.path("ceph.conf")

    @property
    def rgw_log(self):
        return self.path("log", "client.rgw.log")

    # -- public properties

    @property
    def port(self):
        return self.state["http_port"]

    @property
    def https_port(self):
        return self.state["https_port"]

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def https_endpoint(self):
        return f"https://localhost:{self.https_port}"

    @property
    def vhost_endpoint(self):
        """Use with addressing_style='virtual': requests go to BUCKET.localhost."""
        return f"http://localhost:{self.port}"

    @property
    def https_vhost_endpoint(self):
        """With addressing_style='virtual': https://BUCKET.ceph.localhost:PORT."""
        return f"https://{VHOST_TLS_DOMAIN}:{self.https_port}"

    @property
    def ca_file(self):
        return self.path("tls", "ca.pem")

    region = REGION
    access_key = USER1["access"]
    secret_key = USER1["secret"]
    user2_access_key = USER2["access"]
    user2_secret_key = USER2["secret"]

    @property
    def ledger(self):
        return Ledger(self.rgw_log, "127.0.0.1", self.port)

    # -- lifecycle

    def start(self, timeout=START_TIMEOUT):
        """Create everything from scratch in self.dir and start the daemons."""
        t0 = time.monotonic()
        self.stop()
        self._fresh_dir()
        self.state = {"dir": self.dir, "mon_port": free_port(),
                      "http_port": free_port(), "https_port": free_port(),
                      "fsid": str(uuid.uuid4())}
        steps = [("conf", self._write_conf), ("tls", self._make_tls),
                 ("keyrings", self._make_keyrings),
                 ("mon", lambda: self._start_mon(timeout)),
                 ("osd", lambda: self._start_osd(timeout)),
                 ("users", self._create_users), ("hostnames", self._set_hostnames),
                 ("rgw", lambda: self._start_rgw(timeout)), ("warm-up", self._warm_up)]
        self.state["step_seconds"] = {}
        try:
            for name, step in steps:
                t = time.monotonic()
                step()
                self.state["step_seconds"][name] = round(time.monotonic() - t, 2)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = round(time.monotonic() - t0, 1)
        self.state["start_seconds"] = self.start_seconds
        self._write_state()
        return self

    def stop(self, timeout=30.0):
        """Kill every daemon of this bed (SIGKILL: memstore needs no flush)."""
        self._s3 = None
        pids = set()
        for name in DAEMONS:
            pid = self._pidfile(name)
            if pid and self.conf in pid_args(pid):
                pids.add(pid)
        pids.update(pids_with_arg(self.conf))
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not any(pid_alive(p) for p in pids), timeout,
                   what="bed processes to exit")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path(STATE_FILE))

    def is_running(self):
        return bool(self.state) and \
            http_status("127.0.0.1", self.port, "/") is not None

    @classmethod
    def attach(cls, directory):
        """A handle on a running bed in directory (started elsewhere)."""
        bed = cls(directory)
        try:
            with open(bed.path(STATE_FILE)) as f:
                bed.state = json.load(f)
        except FileNotFoundError:
            raise BedError(f"no bed in {directory} ({STATE_FILE} missing)")
        bed.memstore_bytes = bed.state.get("memstore_bytes", bed.memstore_bytes)
        bed.start_seconds = bed.state.get("start_seconds")
        if not bed.is_running():
            raise BedError(f"bed in {directory} does not answer on {bed.endpoint}")
        return bed

    # -- S3 helpers

    def client(self, access_key=None, secret_key=None, *, endpoint=None,
               addressing_style="path", max_attempts=None, verify=None,
               **config):
        """A boto3 S3 client for this bed (user 1 unless keys are given).

        max_attempts is the TOTAL number of attempts (1 = no retries). Note
        botocore's own Config(retries={"max_attempts": 1}) means one *retry*.
        config: further botocore Config arguments (read_timeout=...)."""
        import boto3
        from botocore.config import Config
        endpoint = endpoint or self.endpoint
        if verify is None and endpoint.startswith("https:"):
            verify = self.ca_file
        cfg = {"s3": {"addressing_style": addressing_style},
               "signature_version": "s3v4", **config}
        if max_attempts is not None:
            cfg["retries"] = {"total_max_attempts": max_attempts, "mode": "standard"}
        return boto3.client(
            "s3", endpoint_url=endpoint, region_name=self.region,
            aws_access_key_id=access_key or self.access_key,
            aws_secret_access_key=secret_key or self.secret_key,
            verify=verify, config=Config(**cfg))

    @property
    def s3(self):
        if self._s3 is None:
            self._s3 = self.client()
        return self._s3

    def make_bucket(self, name, client=None):
        """Create bucket name (owned by user 1 unless client says otherwise)."""
        (client or self.s3).create_bucket(Bucket=name)
        return name

    def put(self, bucket, key, data, client=None, **extra):
        """Upload data as one PUT (plain MD5 ETag); returns the ETag."""
        resp = (client or self.s3).put_object(Bucket=bucket, Key=key,
                                              Body=data, **extra)
        return resp["ETag"]

    def put_multipart(self, bucket, key, data, part_size=8 << 20, client=None):
        """Upload data as a multipart object ("md5-N" ETag); returns the ETag."""
        s3 = client or self.s3
        up = s3.create_multipart_upload(Bucket=bucket, Key=key)
        parts = []
        for n, off in enumerate(range(0, max(len(data), 1), part_size), 1):
            r = s3.upload_part(Bucket=bucket, Key=key, UploadId=up["UploadId"],
                               PartNumber=n, Body=data[off:off + part_size])
            parts.append({"ETag": r["ETag"], "PartNumber": n})
        resp = s3.complete_multipart_upload(
            Bucket=bucket, Key=key, UploadId=up["UploadId"],
            MultipartUpload={"Parts": parts})
        # Pacific answers CompleteMultipartUpload with an empty <ETag/>
        return resp["ETag"] or s3.head_object(Bucket=bucket, Key=key)["ETag"]

    def env(self):
        """Environment variables describing this bed (for C tests, shells)."""
        return {
            "LITH_RGW_DIR": self.dir,
            "LITH_S3_ENDPOINT": self.endpoint,
            "LITH_S3_VHOST_ENDPOINT": self.vhost_endpoint,
            "LITH_S3_HTTPS_ENDPOINT": self.https_endpoint,
            "LITH_S3_HTTPS_VHOST_ENDPOINT": self.https_vhost_endpoint,
            "LITH_S3_CA_FILE": self.ca_file,
            "LITH_S3_REGION": self.region,
            "LITH_S3_ACCESS_KEY": self.access_key,
            "LITH_S3_SECRET_KEY": self.secret_key,
            "LITH_S3_USER2_ACCESS_KEY": self.user2_access_key,
            "LITH_S3_USER2_SECRET_KEY": self.user2_secret_key,
            "LITH_RGW_LOG": self.rgw_log,
            "LITH_CEPH_CONF": self.conf,
        }

    def admin(self, *args, timeout=60):
        """Run radosgw-admin against this bed; returns its stdout."""
        return run(["radosgw-admin", "-c", self.conf, *args], timeout=timeout)

    # -- start steps

    def _fresh_dir(self):
        if os.path.isdir(self.dir):
            for name in os.listdir(self.dir):
                p = self.path(name)
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p)
                else:
                    os.unlink(p)
        for sub in ("run", "log", "mon", "osd0", "rgw", "tls", "keys"):
            os.makedirs(self.path(sub), exist_ok=True)

    def _write_conf(self):
        d, s = self.dir, self.state
        frontend = (f"beast endpoint=127.0.0.1:{s['http_port']} "
                    f"ssl_endpoint=127.0.0.1:{s['https_port']} "
                    f"ssl_certificate={d}/tls/server.pem "
                    f"ssl_private_key={d}/tls/server.key tcp_nodelay=1")
        text = f"""\
# Generated by tests/e2e/rgwbed.py. Single node, loopback only.
[global]
fsid = {s['fsid']}
mon host = v1:127.0.0.1:{s['mon_port']}
public network = 127.0.0.0/8
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = {d}/keys/$name.keyring
run dir = {d}/run
admin socket = {d}/run/$name.asok
pid file = {d}/run/$name.pid
log file = {d}/log/$name.log
log to stderr = false
err to stderr = true
mon cluster log file = {d}/log/cluster.log
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon warn on insecure global id reclaim allowed = false
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon max pg per osd = 1000
osd crush chooseleaf type = 0
# pool creation waits for a paxos round; the 1 s default makes start slow
paxos propose interval = 0.05
# Throughput: msgr v1 without CRCs or message signing (msgr2 checksums every
# frame: crc32c was a quarter of radosgw's CPU on large GETs).
ms bind msgr2 = false
ms crc data = false
ms crc header = false
cephx sign messages = false

[mon]
mon data = {d}/mon
keyring = {d}/mon/keyring

[osd]
osd data = {d}/osd$id
osd objectstore = memstore
memstore device bytes = {self.memstore_bytes}
# a killed radosgw's watches stall the next one's metadata writes until they
# time out (30 s by default)
osd client watch timeout = 5

[client.rgw]
rgw frontends = {frontend}
rgw dns name = localhost
rgw data = {d}/rgw
# deleted objects' data is freed by radosgw's GC: do it soon (memstore is RAM)
rgw gc obj min wait = 30
rgw gc processor period = 30
# debug_rgw 2 writes "req N ... s3:OP http status" before each beast access
# line: the ledger pairs them (see Ledger).
debug rgw = {self.debug_rgw}
"""
        with open(self.conf, "w") as f:
            f.write(text)
            for key, value in self.extra_conf.items():
                section, _, option = key.rpartition("/")
                f.write(f"[{section or 'global'}]\n{option} = {value}\n")

    def _make_tls(self):
        """A throw-away CA and a server certificate for localhost/127.0.0.1."""
        t, log = self.path("tls"), self.path("log", "setup.log")
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        run(["openssl", "req", "-x509", *ec, "-keyout", f"{t}/ca.key",
             "-out", f"{t}/ca.pem", "-days", "3650", "-subj", "/CN=lith test CA",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign"], log=log)
        run(["openssl", "req", *ec, "-keyout", f"{t}/server.key",
             "-out", f"{t}/server.csr", "-subj", "/CN=localhost"], log=log)
        with open(f"{t}/server.ext", "w") as f:
            f.write(f"subjectAltName=DNS:localhost,DNS:*.{VHOST_TLS_DOMAIN},DNS:*.localhost,IP:127.0.0.1\n"
                    "basicConstraints=CA:FALSE\n"
                    "keyUsage=critical,digitalSignature,keyEncipherment\n"
                    "extendedKeyUsage=serverAuth\n")
        run(["openssl", "x509", "-req", "-in", f"{t}/server.csr",
             "-CA", f"{t}/ca.pem", "-CAkey", f"{t}/ca.key", "-CAcreateserial",
             "-days", "3650", "-out", f"{t}/server.pem",
             "-extfile", f"{t}/server.ext"], log=log)

    def _make_keyrings(self):
        """One keyring per entity, plus init.keyring (all of them, with caps)
        that seeds the monitor's auth database at mkfs."""
        caps = {
            "mon.": {"mon": "allow *"},
            "client.admin": {"mon": "allow *", "osd": "allow *", "mgr": "allow *"},
            "osd.0": {"mon": "allow profile osd", "osd": "allow *",
                      "mgr": "allow profile osd"},
            "client.rgw": {"mon": "allow rw", "osd": "allow rwx", "mgr": "allow rw"},
        }
        sections = {name: keyring_section(name, cephx_key(), c)
                    for name, c in caps.items()}
        for name, text in sections.items():
            if name != "mon.":
                with open(self.path("keys", f"{name}.keyring"), "w") as f:
                    f.write(text)
        with open(self.path("keys", "init.keyring"), "w") as f:
            f.write("".join(sections.values()))

    def _daemon(self, args, log):
        """Start a ceph daemon; it forks into the background by itself."""
        env = dict(os.environ, GLIBC_TUNABLES=DAEMON_MALLOC_TUNABLES)
        with open(log, "ab") as out:
            out.write(("$ " + shlex.join(args) + "\n").encode())
            out.flush()
            proc = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=60,
                                  start_new_session=True, env=env)
        if proc.returncode != 0:
            raise BedError(f"{args[0]} failed to start: see {log}\n{tail(log)}")

    def _ceph(self, *args, timeout=30):
        return run(["ceph", "-c", self.conf, "--connect-timeout", "20", *args],
                   timeout=timeout)

    def _start_mon(self, timeout):
        s, log = self.state, self.path("log", "setup.log")
        monmap = self.path("keys", "monmap")
        run(["monmaptool", "--create", "--addv", "a",
             f"[v1:127.0.0.1:{s['mon_port']}]", "--fsid", s["fsid"], monmap],
            log=log)
        run(["ceph-mon", "-c", self.conf, "--mkfs", "-i", "a", "--monmap",
             monmap, "--keyring", self.path("keys", "init.keyring")], log=log)
        self._daemon(["ceph-mon", "-c", self.conf, "-i", "a"],
                     self.path("log", "mon.a.stdout"))

    def _start_osd(self, timeout):
        osd_uuid, log = str(uuid.uuid4()), self.path("log", "setup.log")
        self._ceph("osd", "new", osd_uuid, "0")
        run(["ceph-osd", "-c", self.conf, "-i", "0", "--mkfs", "--osd-uuid",
             osd_uuid], log=log)
        self._daemon(["ceph-osd", "-c", self.conf, "-i", "0"],
                     self.path("log", "osd.0.stdout"))

    def _start_rgw(self, timeout, attempts=3):
        """Start radosgw; if a port was taken meanwhile, retry on new ones."""
        for attempt in range(attempts):
            if attempt:
                self.state["http_port"] = free_port()
                self.state["https_port"] = free_port()
                self._write_conf()
            log_start = os.path.getsize(self.rgw_log) \
                if os.path.exists(self.rgw_log) else 0
            self._daemon(["radosgw", "-c", self.conf, "-n", "client.rgw"],
                         self.path("log", "client.rgw.stdout"))
            try:
                wait_until(lambda: self._rgw_ready(log_start), timeout,
                           what="radosgw to answer HTTP")
                return
            except PortTaken:
                self._kill_daemon("client.rgw")
            except BedError as e:
                raise BedError(f"{e}\n--- {self.rgw_log}:\n{tail(self.rgw_log)}"
                               f"\n--- osd.0.log:\n{tail(self.path('log', 'osd.0.log'))}")
        raise BedError(f"radosgw could not bind its ports {attempts} times")

    def _rgw_ready(self, log_start):
        with open(self.rgw_log, "rb") as f:
            f.seek(log_start)
            if b"failed to bind address" in f.read():
                raise PortTaken()
        pid = self._pidfile("client.rgw")
        if pid and not pid_alive(pid):
            raise BedError("radosgw exited during start")
        return http_status("127.0.0.1", self.port, "/") == 200

    def _kill_daemon(self, name):
        pid = self._pidfile(name)
        if pid and self.conf in pid_args(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            wait_until(lambda: not pid_alive(pid), 10, what=f"{name} to exit")

    def _create_users(self):
        for user in (USER1, USER2):
            self.admin("user", "create", "--uid", user["uid"],
                       "--display-name", user["uid"], "--access-key",
                       user["access"], "--secret", user["secret"])

    def _set_hostnames(self):
        """Virtual-hosted names: BUCKET.localhost (rgw_dns_name) and
        BUCKET.ceph.localhost (zonegroup hostname, for HTTPS: TLS wildcards
        need two labels after the '*', so *.localhost never matches).
        radosgw takes the first name in sorted order that is a suffix of the
        Host header, so the second domain must sort before "localhost"."""
        zg = json.loads(self.admin("zonegroup", "get"))
        zg["hostnames"] = ["localhost", VHOST_TLS_DOMAIN]
        path = self.path("keys", "zonegroup.json")
        with open(path, "w") as f:
            json.dump(zg, f)
        self.admin("zonegroup", "set", "--infile", path)

    def _warm_up(self):
        """Make radosgw create its index/data pools now, not in a test."""
        name = "lith-bed-warmup"
        self.s3.create_bucket(Bucket=name)
        self.s3.put_object(Bucket=name, Key="warmup", Body=b"x")
        self.s3.delete_object(Bucket=name, Key="warmup")
        self.s3.delete_bucket(Bucket=name)

    def _pidfile(self, name):
        try:
            with open(self.path("run", f"{name}.pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def _write_state(self):
        self.state["memstore_bytes"] = self.memstore_bytes
        with open(self.path(STATE_FILE), "w") as f:
            json.dump(self.state, f, indent=2)
        with open(self.path(ENV_FILE), "w") as f:
            f.write(self.exports())

    def exports(self):
        return "".join(f"export {k}={shlex.quote(v)}\n"
                       for k, v in self.env().items())


# --------------------------------------------------------------------------
# virtual-hosted style from Python: *.localhost must resolve

@contextlib.contextmanager
def localhost_subdomains():
    """Resolve NAME.localhost to 127.0.0.1 inside this process (glibc here
    does not; curl does it by itself). Needed for boto3 virtual-hosted style."""
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".localhost"):
            host = "127.0.0.1"
        return real(host, *args, **kwargs)
    socket.getaddrinfo = getaddrinfo
    try:
        yield
    finally:
        socket.getaddrinfo = real


# --------------------------------------------------------------------------
# CLI

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start a bed in --dir (wipes it first)")
    up.add_argument("--dir", required=True)
    up.add_argument("--memstore-bytes", type=int, default=DEFAULT_MEMSTORE_BYTES)
    up.add_argument("--timeout", type=float, default=START_TIMEOUT)
    for name, text in (("down", "kill the bed's processes"),
                       ("env", "print shell exports for a running bed"),
                       ("status", "exit 0 if the bed answers")):
        sub.add_parser(name, help=text).add_argument("--dir", required=True)
    args = ap.parse_args(argv)

    if args.cmd == "up":
        bed = RgwBed(args.dir, memstore_bytes=args.memstore_bytes)
        bed.start(timeout=args.timeout)
        print(f"rgwbed: up in {bed.start_seconds}s at {bed.endpoint} "
              f"and {bed.https_endpoint}", file=sys.stderr)
        print(bed.exports(), end="")
    elif args.cmd == "down":
        RgwBed(args.dir).stop()
    elif args.cmd == "env":
        print(RgwBed.attach(args.dir).exports(), end="")
    elif args.cmd == "status":
        bed = RgwBed.attach(args.dir)
        print(f"rgwbed: running at {bed.endpoint}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BedError as e:
        print(f"rgwbed: {e}", file=sys.stderr)
        sys.exit(1)
