"""`otelguard analyze --html`: the report's size, its index's render time in headless Chromium, and the
analyzer's memory with the report on, on the shared real-run corpus and on a 5,000-run file made from it.

    .venv/bin/python benchmarks/html_report.py [--runs 5000] [--small-runs 500] [--skip-big] [--check]

1. The corpus (tests/realruns/swe-lite-deepseek, 192 runs): `otelguard analyze --html` of every file;
   the report's size (bar: at most 10 MB) and the time from opening it (file://) in headless Chromium
   (Debian's, /usr/bin/chromium, driven by Playwright) until its index is drawn (the page's
   `data-ready`), the median of 5 fresh pages (bar: within 3 s).
2. A file of `--runs` runs (5,000): the corpus's runs again and again, each copy with fresh trace and
   span ids and its own conversation id (so each is a run of its own), written as one gzip'd JSON
   Lines file; and one of `--small-runs` (500) made alike. Each is analysed by a fresh process whose
   peak RSS is read (`ru_maxrss`), once with `--html` and once without; the report's size (bar: at
   most 50 MB for 5,000), and the memory, judged twice:
   - the whole (`analyze --html`): the big file's peak RSS at most 1.25x the small one's, for 10x the
     runs (the issue's "the analyzer's memory flat");
   - the report's share (peak RSS with `--html` minus without, on the same file): at most 5 MiB more
     for the big file than for the small one.
   The analyzer alone (without `--html`) is printed beside them: when the whole misses its bar and the
   share does not, the growth is the analyzer's own, not the report's.

`--check` exits 1 when a bar is missed. Chromium's launch flags are the browser tests' (no network).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "realruns" / "swe-lite-deepseek" / "traces"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CORPUS_MB, CORPUS_RENDER_S, BIG_MB, FLAT_RATIO = 10.0, 3.0, 50.0, 1.25
SHARE_GROWTH_MIB = 5.0  # of the report's share of peak RSS, from the small file to the big one
_IDS = re.compile(rb'"(traceId|spanId|parentSpanId)":"([0-9a-fA-F]+)"')
_CONVERSATION = re.compile(rb'("key":"gen_ai\.conversation\.id","value":\{"stringValue":")([^"]*)"')

_PROBE = """
import resource, sys
from otelguard.cli import main
html = ["--html", sys.argv[1]] if sys.argv[1] else []
code = main(["analyze", *sys.argv[2:], *html])
print("RSS", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, code, file=sys.stderr)
"""


def analyse(files: list[Path], report: Path | None) -> tuple[float, float]:
    """(peak RSS MiB, seconds) of a fresh `otelguard analyze --html report files...` (without
    `--html` when `report` is None)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _PROBE, str(report or ""), *map(str, files)], capture_output=True,
                          text=True, check=False)
    elapsed = time.perf_counter() - started
    line = next((each for each in done.stderr.splitlines() if each.startswith("RSS ")), None)
    if line is None or line.split()[2] not in ("0", "1"):
        raise SystemExit(f"analyze failed: {done.stderr[-2000:]}")
    return int(line.split()[1]) / 1024, elapsed


def render_seconds(report: Path, pages: int = 5) -> list[float]:
    """Seconds from `goto` until the index is drawn, for `pages` fresh pages."""
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(pages):
                page = browser.new_page()
                started = time.perf_counter()
                page.goto(report.as_uri(), wait_until="commit")
                page.wait_for_selector("body[data-ready='1'] #run-index tbody tr", timeout=60_000)
                times.append(time.perf_counter() - started)
                page.close()
        finally:
            browser.close()
    return times


def generate(path: Path, runs: int) -> int:
    """`runs` runs from the corpus (in its order, again and again), each copy with fresh ids."""
    files = sorted(CORPUS.glob("*.otlp.jsonl.gz"))
    written = 0
    with gzip.open(path, "wb", compresslevel=1) as out:
        copy = 0
        while written < runs:
            salt = f"copy{copy}:".encode()
            for file in files:
                if written >= runs:
                    break

                def fresh(match: re.Match[bytes]) -> bytes:
                    old = match.group(2)
                    digest = hashlib.blake2b(salt + old, digest_size=len(old) // 2).hexdigest().encode()
                    return b'"' + match.group(1) + b'":"' + digest + b'"'

                with gzip.open(file, "rb") as source:
                    for line in source:
                        line = _IDS.sub(fresh, line)
                        if copy:
                            line = _CONVERSATION.sub(lambda m: m.group(1) + m.group(2) + b"#" + salt[:-1] + b'"', line)
                        out.write(line if line.endswith(b"\n") else line + b"\n")
                written += 1
            copy += 1
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--small-runs", type=int, default=500)
    parser.add_argument("--skip-big", action="store_true", help="the corpus only")
    parser.add_argument("--keep", metavar="DIR", help="write the reports into DIR (kept)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a bar is missed")
    args = parser.parse_args(argv)
    missed = []
    with tempfile.TemporaryDirectory(prefix="otelguard-html-") as tmp:
        out_dir = Path(args.keep) if args.keep else Path(tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        corpus_report = out_dir / "corpus.html"
        rss, seconds = analyse(sorted(CORPUS.glob("*.otlp.jsonl.gz")), corpus_report)
        size = corpus_report.stat().st_size / 1e6
        renders = render_seconds(corpus_report)
        render = statistics.median(renders)
        print(f"corpus (192 runs): report {size:.2f} MB (bar <= {CORPUS_MB:g}); index drawn in "
              f"{render:.2f} s median of {len(renders)} pages (max {max(renders):.2f}; bar <= {CORPUS_RENDER_S:g}); "
              f"analyze --html {seconds:.1f} s, peak RSS {rss:.0f} MiB")
        if size > CORPUS_MB or render > CORPUS_RENDER_S:
            missed.append("corpus")
        if not args.skip_big:
            figures = {}
            for runs in (args.small_runs, args.runs):
                source = Path(tmp) / f"runs-{runs}.otlp.jsonl.gz"
                started = time.perf_counter()
                generate(source, runs)
                made = time.perf_counter() - started
                report = out_dir / f"runs-{runs}.html"
                rss, seconds = analyse([source], report)
                size = report.stat().st_size / 1e6
                plain_rss, plain_seconds = analyse([source], None)
                figures[runs] = (rss, plain_rss, size)
                print(f"{runs:,} runs ({source.stat().st_size / 1e6:.0f} MB gzip'd, made in {made:.0f} s): report "
                      f"{size:.2f} MB; analyze --html {seconds:.0f} s, peak RSS {rss:.0f} MiB; without --html "
                      f"{plain_seconds:.0f} s, peak RSS {plain_rss:.0f} MiB; the report's share {rss - plain_rss:.1f} MiB",
                      flush=True)
                source.unlink()
            (small_rss, small_plain, _), (big_rss, big_plain, big_size) = figures[args.small_runs], figures[args.runs]
            ratio, plain_ratio = big_rss / small_rss, big_plain / small_plain
            share_growth = (big_rss - big_plain) - (small_rss - small_plain)
            print(f"memory, the whole: peak RSS {big_rss:.0f} MiB for {args.runs:,} runs vs {small_rss:.0f} MiB for "
                  f"{args.small_runs:,}: {ratio:.2f}x (bar <= {FLAT_RATIO:g}x); report {big_size:.2f} MB (bar <= {BIG_MB:g})")
            print(f"memory, the report's share: {big_rss - big_plain:.1f} MiB for {args.runs:,} runs vs "
                  f"{small_rss - small_plain:.1f} MiB for {args.small_runs:,}: {share_growth:+.1f} MiB "
                  f"(bar <= {SHARE_GROWTH_MIB:g}); the analyzer alone {big_plain:.0f} vs {small_plain:.0f} MiB: "
                  f"{plain_ratio:.2f}x")
            if big_size > BIG_MB or ratio > FLAT_RATIO:
                missed.append("big")
            if share_growth > SHARE_GROWTH_MIB:
                missed.append("report's share")
    if missed:
        print(f"missed: {', '.join(missed)}")
    return 1 if missed and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
