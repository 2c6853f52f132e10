"""The dataset under ``data/`` (or any folder in its layout): :class:`Dataset` loads it, :func:`validate` checks it,
``python -m rpa_lib.data validate`` is the command line. It does not author characters (:mod:`rpa_lib.authoring`,
above it), fetch datasets or convert collections."""

from rpa_lib.data.cli import main
from rpa_lib.data.dataset import Dataset, as_dataset, load_labels, load_qa, load_questionnaire, user_dataset
from rpa_lib.data.records import QA, Dimension, Item, Questionnaire
from rpa_lib.data.stats import dataset_statistics, dataset_totals
from rpa_lib.data.validate import empty_attributes, validate
from rpa_lib.errors import DataError

__all__ = ["QA", "DataError", "Dataset", "Dimension", "Item", "Questionnaire", "as_dataset", "dataset_statistics",
           "dataset_totals", "empty_attributes", "load_labels", "load_qa", "load_questionnaire", "main",
           "user_dataset", "validate"]
