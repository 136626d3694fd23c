"""report — CSV, Markdown and PNG of a run, and the goals checked against it.

Input: a list of cells (dicts with the FIELDS below) and a dict of notes
about the run (machine, sizes, versions). Output files, in `outdir`:
PREFIX.csv, PREFIX.md (notes, one table per shape, the goals) and
PREFIX.png (seconds per shape and system, cold and warm).
"""

import csv
import os

FIELDS = ["shape", "system", "phase", "status", "seconds", "setup_s", "mb_s", "ops_s",
          "touched_bytes", "GET", "HEAD", "LIST", "OTHER", "bytes_moved",
          "peak_rss_mib", "error"]
SYSTEM_ORDER = ["lith", "s3fs", "rclone", "copy-then-read", "raw: lith s3 bench"]


def cell(rows, shape, system, phase="cold"):
    for r in rows:
        if (r["shape"], r["system"], r["phase"]) == (shape, system, phase) \
                and r["status"] == "ok":
            return r
    return None


# --------------------------------------------------------------------------
# goals

def goals(rows, files):
    """[(ok: bool|None, text)] — None when a cell needed is missing."""
    out = []

    def need(*cells):
        return all(c is not None for c in cells)

    lith = cell(rows, "stream-cat", "lith")
    raw = cell(rows, "stream-cat", "raw: lith s3 bench")
    if need(lith, raw):
        r = lith["mb_s"] / raw["mb_s"]
        out.append((r >= 0.9, f"stream (cat, cold): lith {lith['mb_s']:.0f} MB/s = "
                    f"{r:.2f} x raw ceiling {raw['mb_s']:.0f} MB/s (goal >= 0.90)"))
    else:
        out.append((None, "stream vs raw ceiling: cell missing"))
    for shape in ("stream-cat", "stream-sha256"):
        lith = cell(rows, shape, "lith")
        for peer in ("s3fs", "rclone"):
            p = cell(rows, shape, peer)
            if need(lith, p):
                out.append((lith["mb_s"] > p["mb_s"],
                            f"{shape} (cold): lith {lith['mb_s']:.0f} MB/s vs {peer} "
                            f"{p['mb_s']:.0f} MB/s = {lith['mb_s'] / p['mb_s']:.2f} x "
                            "(goal > 1)"))
            else:
                out.append((None, f"{shape} lith vs {peer}: cell missing"))
    walk = cell(rows, "tree-walk", "lith")
    if walk:
        out.append((walk["HEAD"] == 0 and walk["LIST"] == 0,
                    f"tree walk (cold): lith issued {walk['HEAD']} HEAD, {walk['LIST']} "
                    f"LIST, {walk['GET']} GET (goal 0 HEAD, 0 LIST)"))
    else:
        out.append((None, "tree walk: cell missing"))
    small = cell(rows, "small-files", "lith")
    if small:
        out.append((small["GET"] <= files,
                    f"small files (cold): lith {small['GET']} GET for {files} files = "
                    f"{small['GET'] / files:.2f} per file (goal <= 1)"))
    else:
        out.append((None, "small files: cell missing"))
    sel = cell(rows, "selective", "lith")
    if sel:
        r = sel["bytes_moved"] / sel["touched_bytes"]
        out.append((r <= 1.5, f"selective (cold): lith fetched {sel['bytes_moved'] / 1e6:.1f}"
                    f" MB for {sel['touched_bytes'] / 1e6:.1f} MB touched = {r:.2f} x "
                    "(goal <= 1.5)"))
    else:
        out.append((None, "selective: cell missing"))
    q1, q64 = cell(rows, "random-qd1", "lith"), cell(rows, "random-qd64", "lith")
    if need(q1, q64):
        r = q64["ops_s"] / q1["ops_s"]
        out.append((r >= 20, f"random 4 KiB (cold): lith QD64 {q64['ops_s']:.0f} reads/s vs "
                    f"QD1 {q1['ops_s']:.0f} reads/s = {r:.1f} x (goal >= 20)"))
    else:
        out.append((None, "random QD64/QD1: cell missing"))
    return out


def goal_lines(results):
    tag = {True: "PASS", False: "MISS", None: "N/A "}
    return [f"{tag[ok]}  {text}" for ok, text in results]


# --------------------------------------------------------------------------
# files

def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: _csv_value(r.get(k)) for k in FIELDS})


def _csv_value(v):
    if isinstance(v, float):
        return f"{v:.4f}"
    return "" if v is None else v


def _fmt(v, spec):
    return "–" if v is None else format(v, spec)


def _shape_table(rows, shape):
    lines = ["| system | cold s | cold MB/s | cold ops/s | warm s | warm MB/s | "
             "GET | HEAD | LIST | other | MB moved | peak RSS MiB | setup s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for system in SYSTEM_ORDER:
        cold = [r for r in rows if (r["shape"], r["system"], r["phase"]) ==
                (shape, system, "cold")]
        if not cold:
            continue
        c = cold[0]
        w = cell(rows, shape, system, "warm")
        if c["status"] != "ok":
            lines.append(f"| {system} | {c['status']}: {(c.get('error') or '')[:80]} |"
                         + " |" * 12)
            continue
        moved = c["bytes_moved"] / 1e6 if c["bytes_moved"] is not None else None
        lines.append(
            f"| {system} | {c['seconds']:.2f} | {_fmt(c['mb_s'], '.1f')} | "
            f"{_fmt(c['ops_s'], '.0f')} | {_fmt(w and w['seconds'], '.2f')} | "
            f"{_fmt(w and w['mb_s'], '.1f')} | {c['GET']} | {c['HEAD']} | {c['LIST']} | "
            f"{c['OTHER']} | {_fmt(moved, '.1f')} | {_fmt(c['peak_rss_mib'], '.0f')} | "
            f"{_fmt(c['setup_s'], '.2f')} |")
    return lines


def write_md(path, rows, notes, goal_results, shapes_order, png_name):
    out = ["# lith against its peers, access shape by access shape", ""]
    out += [f"- {k}: {v}" for k, v in notes.items()]
    out += ["", "Columns: cold = fresh cache and fresh mount (copy-then-read: the "
            "`aws s3 cp` staging counts); warm = the same read again on the same "
            "mount / local copy. Requests (GET/HEAD/LIST/other) and MB moved are the "
            "cold cell's, from RGW's own log; peak RSS is the cold cell's client "
            "processes (lith: mounter + lith cached; copy: aws cli). setup s = mount "
            "time (not in the cell), or the copy time inside a copy-then-read cell.",
            "", f"![chart]({png_name})", ""]
    for shape in shapes_order:
        if any(r["shape"] == shape for r in rows):
            out += [f"## {shape}", ""] + _shape_table(rows, shape) + [""]
    out += ["## Goals (lith)", "", "```"] + goal_lines(goal_results) + ["```", ""]
    with open(path, "w") as f:
        f.write("\n".join(out))


def write_png(path, rows, shapes_order):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shapes = [s for s in shapes_order if any(r["shape"] == s for r in rows)]
    cols = 4
    nrows = (len(shapes) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.4 * nrows), squeeze=False)
    for ax, shape in zip(axes.flat, shapes):
        systems = [s for s in SYSTEM_ORDER if cell(rows, shape, s)]
        x = range(len(systems))
        cold = [cell(rows, shape, s)["seconds"] for s in systems]
        warm = [(cell(rows, shape, s, "warm") or {}).get("seconds") or 0 for s in systems]
        ax.bar([i - 0.2 for i in x], cold, 0.4, label="cold", color="#4477aa")
        ax.bar([i + 0.2 for i in x], warm, 0.4, label="warm", color="#ee7733")
        ax.set_xticks(list(x))
        ax.set_xticklabels([s.replace("raw: lith s3 bench", "raw")
                            .replace("copy-then-read", "copy") for s in systems],
                           fontsize=8)
        ax.set_title(shape, fontsize=10)
        ax.set_ylabel("seconds (lower is better)", fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
    for ax in list(axes.flat)[len(shapes):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_all(outdir, prefix, rows, notes, files, shapes_order):
    os.makedirs(outdir, exist_ok=True)
    results = goals(rows, files)
    base = os.path.join(outdir, prefix)
    write_csv(base + ".csv", rows)
    write_png(base + ".png", rows, shapes_order)
    write_md(base + ".md", rows, notes, results, shapes_order, prefix + ".png")
    return results, [base + ext for ext in (".csv", ".md", ".png")]
