"""The ``agentjudge`` command line: every verb a thin shell over ``agentjudge.api`` (parse the flags, call
the API, print what it returns, exit with the code it means). The verbs, in the order ``--help`` lists them:

- ``commands/data.py``: generate, validate, audit, infer, score
- ``commands/run.py``: run, batches
- ``commands/report.py``: report, view, compare
- ``commands/people.py``: human-sample, label, human-agree
- ``commands/tracks.py``: taubench, import bfcl, import agentjudgebench, import traces
- ``commands/cache.py``: cache stats, cache clear

Each module imports only typer at the top: ``agentjudge --help`` stays fast and never imports litellm.
"""

from __future__ import annotations

import signal

from agentjudge.commands import cache, data, people, report, run, tracks
from agentjudge.commands._app import Process, app, cache_app, import_app

for verb in (data.generate, data.validate, data.audit, data.infer, data.score, run.run, report.report):
    app.command()(verb)
app.command()(run.batches)
app.command()(report.view)
app.command()(report.compare)
app.command("human-sample")(people.human_sample)
app.command()(people.label)
app.command("human-agree")(people.human_agree)
app.command()(tracks.taubench)
app.add_typer(cache_app, name="cache")
app.add_typer(import_app, name="import")
import_app.command("bfcl")(tracks.import_bfcl)
import_app.command("agentjudgebench")(tracks.import_agentjudgebench)
import_app.command("traces")(tracks.import_traces)
cache_app.command("stats")(cache.cache_stats)
cache_app.command("clear")(cache.cache_clear)


def main() -> None:
    """The ``agentjudge`` console script: the command line, in a process that ends with the verb.

    Ctrl-C (SIGINT) stops every verb cleanly: exit 130, nothing half-written, a run's finished units kept
    (``view`` exits 0). A shell without job control starts ``cmd &`` with SIGINT ignored, and Python keeps
    a signal it inherited ignored, so a verb started from a script could not be stopped with Ctrl-C or
    ``kill -INT``; the default handler is put back for every verb. To keep a verb running past Ctrl-C, start
    it in a session of its own (``setsid agentjudge …``); ``nohup`` ignores SIGHUP, which stays as it was."""
    Process.standalone = True
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    app()


__all__ = ["app", "main"]
