"""Beam's own log lines kept out of the pipeline's log: imported before apache_beam.

Beam's import and its local runners log harness details at INFO (state cache, worker pool), and
its BigQuery clients warn on the root logger that an optional Google Cloud library is missing,
which this pipeline never uses. A user reads this pipeline's own lines; Beam's warnings and
errors still show.
"""

import logging

logging.getLogger("apache_beam").setLevel(logging.WARNING)
logging.getLogger().addFilter(
    lambda record: not record.getMessage().startswith("apitools not found"))
