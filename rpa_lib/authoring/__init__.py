"""Authoring one's own character: import a document as a persona (:mod:`~rpa_lib.authoring.importer`), propose QA
pairs for review (:mod:`~rpa_lib.authoring.scaffold`) and edit a persona (:mod:`~rpa_lib.authoring.edit`), in the
user's data folder unless a dataset is named. :mod:`rpa_lib.data` reads datasets and never imports this package."""

from rpa_lib.authoring.cli import main
from rpa_lib.authoring.edit import add_paragraph, delete_paragraph, refresh_indexes, replace_paragraph
from rpa_lib.authoring.importer import Imported, new_character, parse_mapping
from rpa_lib.authoring.scaffold import promote, qa_scaffold, read_review

__all__ = ["Imported", "add_paragraph", "delete_paragraph", "main", "new_character", "parse_mapping", "promote",
           "qa_scaffold", "read_review", "refresh_indexes", "replace_paragraph"]
