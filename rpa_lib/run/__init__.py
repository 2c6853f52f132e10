"""Run machinery apart from the pipeline: executing the notebooks (:mod:`~rpa_lib.run.reproduce`), their profiles,
up-to-date stamps, the cost plan and batch rounds. Importing this package imports none of them.
"""
