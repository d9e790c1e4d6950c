"""``agentjudge report`` and ``agentjudge compare``: the sections of ``agentjudge.analysis`` written as
report.md, report.html, tables/*.csv and figures/*.png (see README.md)."""
