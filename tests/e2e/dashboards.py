#!/usr/bin/python3
"""dashboards — the Grafana dashboards' queries, made evaluable by a plain Prometheus.

This file owns:
  * loading deploy/grafana/lith-*.json and walking every panel (also those
    nested in collapsed rows);
  * queries(volume=...): every panel query as a Query (dashboard, panel
    title, refId, expr) with Grafana's variables substituted the way Grafana
    would: $volume / ${volume} -> the volume id, $node -> ".*" (All),
    $__rate_interval / $__interval / $__range (and their _s/_ms forms) -> the
    given durations. Datasource variables are not part of expressions and
    are ignored. An unknown variable is an error (UnknownVariable), so a
    dashboard cannot quietly reference something Prometheus would reject;
  * variable_queries(): the template variables' label_values() queries as
    PromQL;
  * metric_names(): every lith_* metric family the dashboards use;
  * evaluate(prom, ...): run them all against a prombed.Prometheus;
  * the CLI: dashboards.py list [--volume V] | eval --url URL --volume V

Run with Debian's /usr/bin/python3.
"""

import argparse
import dataclasses
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD_DIR = os.path.join(ROOT, "deploy", "grafana")
FILES = ("lith-node.json", "lith-volume.json")

# Grafana variables that are data sources, never part of an expression.
DATASOURCE_VARS = {"DS_PROMETHEUS", "datasource"}
# Multi-value variables whose "All" is a regex (allValue ".*").
ALL_DEFAULTS = {"node": ".*"}

_VAR_RE = re.compile(r"\$\{(\w+)(?::[\w]+)?\}|\$(\w+)|\[\[(\w+)(?::[\w]+)?\]\]")
_DURATION_RE = re.compile(r"^(\d+)(ms|s|m|h|d)$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
_METRIC_RE = re.compile(r"\b(lith_[a-zA-Z0-9_]+)")
_HIST_SUFFIX = re.compile(r"_(bucket|sum|count)$")


class UnknownVariable(KeyError):
    """An expression names a Grafana variable we have no value for."""


@dataclasses.dataclass
class Query:
    file: str           # lith-node.json
    dashboard: str      # "lith / Node"
    panel: str          # panel title
    panel_id: int
    ref_id: str         # "A"
    expr: str           # substituted: plain PromQL
    raw: str            # as written in the dashboard
    instant: bool       # the panel asks for an instant query
    legend: str

    def __str__(self):
        return f"{self.dashboard} / {self.panel} [{self.ref_id}]"


def seconds(duration):
    """'1m' -> 60.0 (Prometheus-style single-unit durations)."""
    m = _DURATION_RE.match(duration)
    if not m:
        raise ValueError(f"unsupported duration {duration!r} (use e.g. 15s, 1m, 5m)")
    return int(m[1]) * _UNIT_SECONDS[m[2]]


def load(name):
    """One dashboard's JSON (name is a file in deploy/grafana or a path)."""
    path = name if os.path.sep in name else os.path.join(DASHBOARD_DIR, name)
    with open(path) as f:
        return json.load(f)


def panels(dash):
    """Every non-row panel, including those inside collapsed rows."""
    for p in dash.get("panels", []):
        if p.get("type") == "row":
            yield from (q for q in p.get("panels", []) if q.get("type") != "row")
        else:
            yield p


def values(volume=None, rate_interval="1m", interval="15s", range_="5m", variables=None):
    """The substitution table for substitute()."""
    table = dict(ALL_DEFAULTS)
    if volume is not None:
        table["volume"] = volume
    for name, d in (("__rate_interval", rate_interval), ("__interval", interval),
                    ("__range", range_)):
        table[name] = d
        table[name + "_ms"] = str(int(seconds(d) * 1000))
        if name == "__range":
            table["__range_s"] = str(int(seconds(d)))
    table.update(variables or {})
    return table


def substitute(expr, table):
    """Replace $var, ${var}, ${var:fmt} and [[var]] from table."""
    def repl(m):
        name = m[1] or m[2] or m[3]
        if name in DATASOURCE_VARS:
            return m[0]
        if name not in table:
            raise UnknownVariable(f"variable ${name} in {expr!r} has no value "
                                  f"(known: {sorted(table)})")
        return str(table[name])
    return _VAR_RE.sub(repl, expr)


def queries(volume="vol-a", rate_interval="1m", interval="15s", range_="5m",
            variables=None, files=FILES):
    """Yield a Query for every target of every panel of the dashboards."""
    table = values(volume, rate_interval, interval, range_, variables)
    for name in files:
        dash = load(name)
        for p in panels(dash):
            for t in p.get("targets", []):
                raw = t.get("expr", "")
                yield Query(file=os.path.basename(name), dashboard=dash["title"],
                            panel=p.get("title", ""), panel_id=p.get("id"),
                            ref_id=t.get("refId", ""), expr=substitute(raw, table), raw=raw,
                            instant=bool(t.get("instant")), legend=t.get("legendFormat", ""))


def variable_queries(files=FILES, variables=None):
    """{(file, variable name): PromQL} for the query variables: label_values(m, l)
    becomes count by (l) (m), which has one series per value Grafana would list."""
    out = {}
    table = values(variables=variables)
    for name in files:
        for v in load(name).get("templating", {}).get("list", []):
            if v.get("type") != "query":
                continue
            q = v.get("query")
            q = q.get("query", "") if isinstance(q, dict) else q or ""
            m = re.fullmatch(r"\s*label_values\((.+),\s*(\w+)\s*\)\s*", q)
            if not m:
                raise ValueError(f"{name}: variable {v['name']}: unsupported query {q!r}")
            out[(name, v["name"])] = substitute(f"count by ({m[2]}) ({m[1]})", table)
    return out


def metric_names(files=FILES):
    """Every lith_* metric family the dashboards reference (histogram series
    folded to their family: lith_fill_seconds_bucket -> lith_fill_seconds)."""
    names = set()
    for q in queries(files=files):
        names.update(_HIST_SUFFIX.sub("", n) for n in _METRIC_RE.findall(q.expr))
    for expr in variable_queries(files).values():
        names.update(_HIST_SUFFIX.sub("", n) for n in _METRIC_RE.findall(expr))
    return names


def evaluate(prom, **kw):
    """[(Query, Result or Exception)] for every query, evaluated at now."""
    out = []
    for q in queries(**kw):
        try:
            out.append((q, prom.query(q.expr)))
        except Exception as e:       # report every failing query, not only the first
            out.append((q, e))
    return out


# --------------------------------------------------------------------------
# CLI

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, text in (("list", "print every query, substituted"),
                       ("eval", "evaluate every query against a running Prometheus")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--volume", default="vol-a")
        p.add_argument("--rate-interval", default="1m")
        p.add_argument("--interval", default="15s")
        p.add_argument("--range", default="5m", dest="range_")
        if name == "eval":
            p.add_argument("--url", required=True, help="e.g. http://127.0.0.1:9090")
    args = ap.parse_args(argv)
    kw = dict(volume=args.volume, rate_interval=args.rate_interval,
              interval=args.interval, range_=args.range_)
    if args.cmd == "list":
        for q in queries(**kw):
            print(f"# {q}\n{q.expr}\n")
        return 0
    import prombed
    bad = 0
    for q, res in evaluate(prombed.Prometheus.attach(args.url), **kw):
        if isinstance(res, Exception):
            status, bad = f"ERROR {res}", bad + 1
        elif not res:
            status, bad = "EMPTY", bad + 1
        else:
            status = f"{len(res)} series, e.g. {res.values()[0]:g}"
        print(f"{q}: {status}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
