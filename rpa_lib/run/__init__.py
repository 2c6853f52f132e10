"""Run machinery, apart from the pipeline: executing the notebooks (:mod:`~rpa_lib.run.reproduce`), deciding which
are up to date (:mod:`~rpa_lib.run.stamps`), their declared parameters (:mod:`~rpa_lib.notebook_params`), the
cost plan (:mod:`~rpa_lib.run.plan`); the budget and the dry run reach the notebooks as their run mode.

Importing this package imports none of them.
"""
