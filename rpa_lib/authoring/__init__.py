"""Authoring one's own character, apart from reading the dataset (:mod:`rpa_lib.data`, which never imports this
package): import a document as a persona (:mod:`~rpa_lib.authoring.importer`, reading Markdown, text and MediaWiki
exports through :mod:`~rpa_lib.authoring.sources` and :mod:`~rpa_lib.authoring.wikitext`), propose QA pairs for a
person to review and promote them (:mod:`~rpa_lib.authoring.scaffold`), and edit a persona with its indexes
updated in place (:mod:`~rpa_lib.authoring.edit`). ``python -m rpa_lib.authoring`` is the command line. Everything
goes to the user's data folder (:func:`rpa_lib.paths.user_data_dir`) unless a dataset is named."""

from rpa_lib.authoring.cli import main
from rpa_lib.authoring.edit import add_paragraph, delete_paragraph, refresh_indexes, replace_paragraph
from rpa_lib.authoring.importer import Imported, new_character, parse_mapping
from rpa_lib.authoring.scaffold import promote, qa_scaffold, read_review

__all__ = ["Imported", "add_paragraph", "delete_paragraph", "main", "new_character", "parse_mapping", "promote",
           "qa_scaffold", "read_review", "refresh_indexes", "replace_paragraph"]
