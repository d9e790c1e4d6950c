"""``agentjudge view RUNDIR``: a read-only, per-item explorer of a run folder in the browser.

``index.py`` holds the verdict rows of judgments.parquet as small code arrays (filters and sorting are numpy
masks and partial sorts, so a paper-sized folder answers in well under a second and a page costs what it
shows); ``item.py`` gathers one generator output with everything said about it (query, tools, GT, calls,
scores, every judge's verdicts, rationale and raw answer); ``server.py`` serves both as JSON and the static
page in ``static/`` (plain HTML and JavaScript, no CDN), plus the run's report under ``/report/``.
Nothing here writes to the run folder.
"""
