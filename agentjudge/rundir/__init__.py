"""The run folder's files: their formats, and ``RunFolder``, the one reader of a folder.

``RunFolder.open(path)`` checks a folder (its meta.json, its ``format_version``) and reads its files:
``records()``, ``predictions()``, ``scores()``, ``judgments()``, ``units()``, ``summary()``, ``sampling()``,
``labels()``, ``status``. The file contracts are docs/formats.md; README.md beside this file says what the
package owns and the rules when a format changes.
"""

from agentjudge.rundir.errors import RunFolderError
from agentjudge.rundir.folder import RunFolder, RunStatus
from agentjudge.rundir.labels import LabelLine, Shown, TornLabelWarning
from agentjudge.rundir.meta import FORMAT_VERSION, OLDEST_READABLE_VERSION, RunMeta
from agentjudge.rundir.sampling import SamplingRecord
from agentjudge.rundir.summary import RunSummary

__all__ = [
    "FORMAT_VERSION",
    "OLDEST_READABLE_VERSION",
    "LabelLine",
    "RunFolder",
    "RunFolderError",
    "RunMeta",
    "RunStatus",
    "RunSummary",
    "SamplingRecord",
    "Shown",
    "TornLabelWarning",
]
