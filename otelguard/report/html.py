"""One self-contained HTML file of a report: the page's script and style inline, its data as JSON.

Nothing from the input is ever written as markup. The page is a fixed skeleton; everything taken from
the input (names, ids, paths, arguments, results, model text, messages) travels as JSON in
`<script type="application/json">` blocks, which no browser runs, and the page's script puts it into
the document as text (`textContent`), never as HTML, attributes, URLs or handlers. In the JSON `<`,
`>`, `&`, U+2028, U+2029 and lone surrogates are written as `\\u` escapes, so no string can end its
block (`</script>`), open a comment (`<!--`) or be read as anything but a string. A
Content-Security-Policy meta tag allows only the page's own script and style (by a nonce made
here), no network, no frames, no forms.

Written a run at a time: memory holds one run's index row or one step, never the report.
"""

from __future__ import annotations

import io
import json
import re
import secrets
from collections import OrderedDict
from collections.abc import Iterable
from importlib import resources
from typing import IO, Any

from ..runtime.terminal import escape_char
from .model import ActingVerdict, Episode, Overview, RuleTotals, RunSummary, Spend, Step, Text
from .store import ReportStore

# Of a run's timeline, the characters of content (arguments, outputs) embedded at most; past that its
# steps are listed without content (a hostile input may hold a run of a million steps).
RUN_CONTENT_CHARS = 4_000_000
_SAME_TEXTS = 4096  # texts of a run remembered to write a repeat as a reference to its first step
_UNSAFE = re.compile("[<>&\u2028\u2029\ud800-\udfff]")


def json_for_html(value: Any) -> str:
    """`value` as JSON that can stand inside a `<script>` element as data: the characters that could
    end or change the element, and lone surrogates (not UTF-8), as `\\u` escapes (JSON strings are
    the only place they can be)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _UNSAFE.sub(escape_char, text)


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def content_security_policy(nonce: str, *, connect: bool = False, form: bool = False) -> str:
    """The page's policy: only its own script and style (by `nonce`), nothing loaded, no frames, no
    base; `connect` lets its script ask its own origin for data (the live page), `form` lets a form
    post to its own origin (the live page's login)."""
    connect_src = "connect-src 'self'; " if connect else ""
    form_action = "'self'" if form else "'none'"
    return (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; img-src 'none'; "
            f"{connect_src}base-uri 'none'; form-action {form_action}")


def new_nonce() -> str:
    return secrets.token_urlsafe(18)  # (letters, digits, - and _: safe in an attribute as it is)


_KEYS = ('<p class="keys">Keys: <kbd>j</kbd>/<kbd>k</kbd> next/previous step, <kbd>n</kbd>/<kbd>p</kbd> '
         'next/previous verdict, <kbd>Enter</kbd> opens a step, <kbd>f</kbd> runs with loops only, '
         '<kbd>s</kbd> sort by loop cost, <kbd>g</kbd> back to the index.</p>\n')


def _page_start(out: IO[str], nonce: str, csp: str, title: str, note: str) -> None:
    """The page up to its data: `title` and `note` are otelguard's own text (markup allowed), never input."""
    out.write('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
              f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
              '<meta name="referrer" content="no-referrer">\n'
              '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
              f'<title>{title}</title>\n'
              f'<style nonce="{nonce}">\n{_asset("page.css")}</style>\n</head>\n<body>\n'
              f'<header><h1>{title}</h1>\n'
              f'<p class="note" id="content-note"><strong>Note:</strong> {note}</p>\n{_KEYS}</header>\n'
              '<main><section id="summary" aria-label="summary"></section>\n'
              '<section id="index" aria-label="runs"></section>\n'
              '<section id="runs" aria-label="runs with verdicts"></section></main>\n'
              '<noscript><p>This report draws its tables with its own inline script: allow scripts for '
              'this page to see them.</p></noscript>\n')


def _page_end(out: IO[str], nonce: str) -> None:
    out.write(f'<script nonce="{nonce}">\n{_asset("page.js")}</script>\n</body>\n</html>\n')


def write_html(out: IO[str], overview: Overview, store: ReportStore, *, content: bool = True) -> None:
    """The whole page to `out` (a text stream opened as UTF-8)."""
    store.finish()
    nonce = new_nonce()
    note = ("This file contains the tool arguments, tool results and model output read from the traces "
            "(up to 2,000 characters of each). Share it as you would share the traces, or write it with "
            "--html-no-content." if content else
            "Content left out (--html-no-content): names, counts, timings and verdicts only; no tool "
            "arguments, results, model output or guard messages.")
    _page_start(out, nonce, content_security_policy(nonce), "otelguard analyze report", note)
    _block(out, "og-head", _head(overview, store, content))
    _array_block(out, "og-runs", (_run_row(run) for run in store.runs()))
    _array_block(out, "og-verdicts", (_verdict_row(verdict) for verdict in store.verdicts()))
    for run in store.runs():
        if _has_timeline(run):
            _timeline_block(out, store, run)
    _page_end(out, nonce)


def live_page(nonce: str, data_path: str, run_path: str, *, poll_ms: int = 2000) -> str:
    """The page of a report that fetches its data (`report.live.LiveReport`'s `index` at `data_path`,
    a run's at `run_path` + its number) every `poll_ms` and redraws what changed. Served with
    `content_security_policy(nonce, connect=True)`, as a header and in the page."""
    out = io.StringIO()
    note = ("Live: the sessions this service holds now, redrawn as they change. It shows tool arguments, "
            "tool results and model output as received (up to 2,000 characters of each).")
    _page_start(out, nonce, content_security_policy(nonce, connect=True), "otelguard serve", note)
    _block(out, "og-live", {"data": data_path, "run": run_path, "poll_ms": poll_ms})
    _page_end(out, nonce)
    return out.getvalue()


def login_page(nonce: str, action: str, *, failed: bool = False) -> str:
    """A form asking for the service's token, posted to `action` (otelguard's own path); no script.
    Served with `content_security_policy(nonce, form=True)`."""
    csp = content_security_policy(nonce, form=True)
    problem = '<p class="warn" id="login-failed">That token was not accepted.</p>\n' if failed else ""
    return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
            '<meta name="referrer" content="no-referrer">\n<title>otelguard serve: token</title>\n'
            f'<style nonce="{nonce}">\n{_asset("page.css")}</style>\n</head>\n<body>\n<main>\n'
            '<h1>otelguard serve</h1>\n<p>This service needs its token (the one in its <code>--token-file</code>). '
            'It is kept in a cookie for this site only, not readable by scripts.</p>\n' + problem +
            f'<form method="post" action="{action}" id="login">\n'
            '<label for="token">Token</label> <input type="password" name="token" id="token" autocomplete="current-password" required autofocus>\n'
            '<button type="submit">Open</button>\n</form>\n</main>\n</body>\n</html>\n')


def _block(out: IO[str], block_id: str, value: Any) -> None:
    out.write(f'<script type="application/json" id="{block_id}">')
    out.write(json_for_html(value))
    out.write("</script>\n")


def _array_block(out: IO[str], block_id: str, items: Iterable[Any]) -> None:
    out.write(f'<script type="application/json" id="{block_id}">[')
    separator = ""
    for item in items:
        out.write(separator)
        out.write(json_for_html(item))
        separator = ",\n"
    out.write("]</script>\n")


def _has_timeline(run: RunSummary) -> bool:
    return run.acting > 0 and run.steps_kept > 0


def _usd(cost: float | None) -> float | None:
    return None if cost is None else round(cost, 6)


def _spend(spend: Spend | None) -> list[Any] | None:
    if spend is None:
        return None
    cost = _usd(spend.cost_usd)
    return [spend.input_tokens, spend.output_tokens, cost, spend.unpriced if cost is None else None]


def _rule_row(totals: RuleTotals) -> dict[str, Any]:
    return {"guard": totals.guard, "rule": totals.rule, "acting": totals.acting, "actions": totals.actions,
            "stopped": totals.stopped, "continued": totals.continued, "loops": totals.loops,
            "spend": [totals.input_tokens, totals.output_tokens,
                      _usd(totals.cost_usd), totals.unpriced]}


def _head(overview: Overview, store: ReportStore, content: bool) -> dict[str, Any]:
    rules = sorted(store.rules.values(), key=lambda totals: (totals.guard, totals.rule))
    return {
        "title": overview.title, "content": content, "files": overview.files, "counts": overview.counts,
        "incomplete": overview.incomplete, "summary": overview.summary_lines,
        "coverage": [[line, warn] for line, warn in zip(overview.coverage_lines, overview.warnings)],
        "rules": [_rule_row(totals) for totals in rules], "totals": _rule_row(store.totals()),
    }


def _run_row(run: RunSummary) -> list[Any]:
    duration = None
    if run.first_start_ns is not None and run.last_end_ns is not None:
        duration = round((run.last_end_ns - run.first_start_ns) / 1e6, 3)
    cost = _usd(run.cost_usd)
    return [run.number, run.label, run.key, run.runs, run.model_calls, run.tool_calls, run.acting, run.flagged,
            run.loops, run.input_tokens, run.output_tokens, cost, run.unpriced, duration, _has_timeline(run),
            run.steps_dropped]


def _verdict_row(verdict: ActingVerdict) -> list[Any]:
    return [verdict.run, verdict.id, verdict.step, verdict.kind, verdict.guard, verdict.verdict, verdict.rule,
            verdict.action, verdict.message, list(verdict.evidence), verdict.counts, verdict.outcome,
            verdict.calls_after, _spend(verdict.loop_spend)]


def _episode_row(episode: Episode) -> list[Any]:
    return [episode.key, episode.guard, episode.verdict, episode.rule, episode.first_step, episode.evidence_step,
            episode.last_step, _spend(episode.spend)]


class _Texts:
    """A run's texts written so far: a repeat (a loop repeats its arguments and results) is written as
    the index of the first step that had it, 0-based (the `_SAME_TEXTS` latest texts remembered)."""

    def __init__(self) -> None:
        self._seen: OrderedDict[str, int] = OrderedDict()
        self.chars = 0

    def field(self, text: Text | None, at: int, field: int) -> Any:
        if text is None:
            return None
        key = f"{field}:{text.head}"
        first = self._seen.get(key)
        if first is not None:
            self._seen.move_to_end(key)
            return first
        self._seen[key] = at
        if len(self._seen) > _SAME_TEXTS:
            self._seen.popitem(last=False)
        self.chars += len(text.head)
        return text.head


def _timeline_block(out: IO[str], store: ReportStore, run: RunSummary) -> None:
    out.write(f'<script type="application/json" id="og-run-{run.number}">{{"episodes":')
    out.write(json_for_html([_episode_row(episode) for episode in store.episodes(run.number)]))
    out.write(',"steps":[')
    texts = _Texts()
    origin = run.first_start_ns or 0
    separator = ""
    for at, step in enumerate(store.steps(run.number)):
        out.write(separator)
        out.write(json_for_html(_step_row(step, at, origin, texts)))
        separator = ",\n"
    out.write("]}</script>\n")


def _step_row(step: Step, at: int, origin: int, texts: _Texts | None) -> list[Any]:
    """A step as the page reads it; with `texts`, a text its run had already is the index of that step."""
    start = round((step.start_ns - origin) / 1e6, 3) if step.start_ns and origin else None
    duration = round((step.end_ns - step.start_ns) / 1e6, 3) if step.end_ns and step.start_ns else None
    over = texts is not None and texts.chars > RUN_CONTENT_CHARS
    if texts is None:
        arguments = step.arguments.head if step.arguments is not None else None
        output = step.output.head if step.output is not None else None
    else:
        arguments = None if over else texts.field(step.arguments, at, 0)
        output = None if over else texts.field(step.output, at, 1)
    verdicts = [[v.action, v.guard, v.verdict, v.rule, v.counts, v.acting, v.counting, list(v.evidence)]
                for v in step.verdicts]
    return [step.number, step.kind, step.span_name, step.name, step.what, start, duration, step.error,
            arguments, step.arguments.length if step.arguments is not None else None,
            output, step.output.length if step.output is not None else None, verdicts, over]
