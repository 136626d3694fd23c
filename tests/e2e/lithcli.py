"""lithcli — run the `lith` binary from tests and benchmarks.

Owns: locating the binary (env LITH_BIN, else build/lith), building the
environment a command needs to reach the RGW bed (credentials and endpoint),
and a result type with the exit code, stdout and stderr.
"""

import dataclasses
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def lith_bin():
    path = os.environ.get("LITH_BIN") or os.path.join(ROOT, "build", "lith")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"lith binary not found at {path}: run tools/build.sh")
    return path


@dataclasses.dataclass
class Result:
    rc: int
    out: bytes
    err: str

    @property
    def text(self):
        return self.out.decode()


def bed_env(bed, access_key=None, secret_key=None, extra=None):
    """A clean environment carrying only the bed's credentials."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AWS_") and k != "HOME"}
    env["HOME"] = "/nonexistent"            # no stray ~/.aws files
    env["AWS_ACCESS_KEY_ID"] = access_key or bed.access_key
    env["AWS_SECRET_ACCESS_KEY"] = secret_key or bed.secret_key
    env.update(extra or {})
    return env


def run(args, env=None, timeout=300, check=False):
    p = subprocess.run([lith_bin(), *args], env=env, capture_output=True,
                       timeout=timeout, stdin=subprocess.DEVNULL)
    res = Result(p.returncode, p.stdout, p.stderr.decode(errors="replace"))
    if check and res.rc != 0:
        raise AssertionError(f"lith {' '.join(args)} failed ({res.rc}): {res.err}")
    return res


def s3(bed, *args, endpoint=None, env=None, **kw):
    """`lith s3 ...` against the bed (path-style endpoint unless given)."""
    return run(["s3", *args, "--endpoint", endpoint or bed.endpoint],
               env=env or bed_env(bed), **kw)
