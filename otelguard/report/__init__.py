"""Reports a person reads: the text reports (`text`) and one self-contained HTML page of runs, their
loops and the guard's verdicts.

Shared by the drivers: each fills a `ReportStore` with plain `model` values from its own records
(`otelguard.analyzer.html_report` for `otelguard analyze --html`), and `html.write_html` renders it.
This package imports no driver; `text` imports none of the HTML modules.
"""
