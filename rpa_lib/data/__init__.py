"""The dataset under ``data/`` (or any folder in its layout): :class:`Dataset` owns the layout and loads
personas, QA pairs, labels, questionnaires and the papers' transcribed tables; :func:`validate` checks it all;
``python -m rpa_lib.data validate`` is the command line. Every bad-input error is a :class:`DataError`.
Authoring one's own character (import, QA scaffolding, edits) is :mod:`rpa_lib.authoring`, a package above this
one: nothing here imports it. This package does not fetch datasets or convert whole collections (see
``data/README.md``)."""

from rpa_lib.data.cli import main
from rpa_lib.data.dataset import Dataset, as_dataset, load_labels, load_qa, load_questionnaire, user_dataset
from rpa_lib.data.records import QA, Dimension, Item, Questionnaire
from rpa_lib.data.stats import dataset_statistics, dataset_totals
from rpa_lib.data.validate import empty_attributes, validate
from rpa_lib.errors import DataError

__all__ = ["QA", "DataError", "Dataset", "Dimension", "Item", "Questionnaire", "as_dataset", "dataset_statistics",
           "dataset_totals", "empty_attributes", "load_labels", "load_qa", "load_questionnaire", "main",
           "user_dataset", "validate"]
