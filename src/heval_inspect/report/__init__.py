"""`heval-inspect report`: which model is better, by how much, and why programs fail.

The report is a function of its logs. `runs` reads them (Inspect's API) into one tidy table of
samples per run, merging shards; `stats` derives each run's figures with intervals (`intervals`)
and the paired differences; `failures` the kinds of failure and the gap shapes; `build` puts them
together as one `Report`; `plots` draws the figures; `render` the terminal, Markdown, CSV and HTML
views. Each view is a small function of the `Report`.
"""

from .build import Report, build_report
from .runs import ReportError

__all__ = ["Report", "ReportError", "build_report"]
