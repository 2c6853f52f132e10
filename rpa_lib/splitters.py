"""Split a persona into chunks (AMADEUS Eq. 3-5): ``vanilla`` (500 characters, overlap 100, over the whole
document), ``ats`` (l_max = the longest paragraph, overlap l_max/2, inside each section), ``acts`` (ATS with each
chunk's heading path in front), and the variants ``vanilla-section``, ``ats-document``, ``acts-document`` (the other
scope). Lengths are in characters unless ``length_function`` says otherwise. It does not embed or index.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from os.path import commonprefix

from rpa_lib.display import chunks_html
from rpa_lib.persona import Persona, heading_path

SPLITTERS = ("vanilla", "ats", "acts", "vanilla-section", "ats-document", "acts-document")
PAPER_SPLITTERS = ("vanilla", "ats", "acts")  # the three the paper's tables compare
SPLITTER_NAMES = {"vanilla": "Vanilla", "ats": "ATS", "acts": "ACTS",  # as the paper's tables name them
                  "vanilla-section": "Vanilla (per section)", "ats-document": "ATS (document)",
                  "acts-document": "ACTS (document)"}
SCOPES = {"vanilla": "document", "ats": "section", "acts": "section", "vanilla-section": "section",
          "ats-document": "document", "acts-document": "document"}
VANILLA_LENGTH, VANILLA_OVERLAP = 500, 100
_SEPARATORS = ["\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ", ""]


@dataclass(frozen=True)
class Chunk:
    """A piece of a persona: ``text`` is what is embedded and shown to the LLM, ``body`` the source slice
    ``source[start:end]``."""

    id: str  # "frieren:acts:0007"
    character: str
    splitter: str
    text: str
    body: str
    headings: tuple[str, ...]
    start: int
    end: int

    @property
    def context(self) -> str:
        return heading_path(self.headings)

    def _repr_html_(self) -> str:  # JupyterLab: id, length, heading path, text folded
        return chunks_html([self])


@dataclass(frozen=True)
class SplitSettings:
    splitter: str
    chunk_length: int
    overlap: int
    with_context: bool


def settings_for(persona: Persona, splitter: str, length: int | None = None, overlap: int | None = None,
                 length_function: Callable[[str], int] = len) -> SplitSettings:
    """The (length, overlap) a splitter uses for this persona. ``settings_for(p, "ats").overlap == l_max // 2``"""
    if not isinstance(persona, Persona):
        raise TypeError(f"persona must be a Persona (load_persona(slug)), not {type(persona).__name__} {persona!r}")
    if splitter not in SPLITTERS:
        raise ValueError(f"unknown splitter {splitter!r}; choose one of {', '.join(SPLITTERS)}")
    for name, value in (("length", length), ("overlap", overlap)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"{name} must be an int, not {type(value).__name__} {value!r}")
    if splitter in ("vanilla", "vanilla-section"):
        length = VANILLA_LENGTH if length is None else length  # 0 is an error below, not the default
        overlap = VANILLA_OVERLAP if overlap is None else overlap
        if length < 1:
            raise ValueError(f"length must be at least 1, not {length}")
    else:
        if length is not None or overlap is not None:
            raise ValueError(f"{splitter} derives its length from the persona; pass length/overlap only to Vanilla")
        length = max(length_function(p.text) for p in persona.paragraphs)
        overlap = length // 2
    if not 0 <= overlap < length:
        raise ValueError(f"overlap must be in [0, length): got length={length}, overlap={overlap}")
    return SplitSettings(splitter, length, overlap, with_context=splitter.startswith("acts"))


def split(persona: Persona, splitter: str = "acts", *, length: int | None = None, overlap: int | None = None,
          length_function: Callable[[str], int] = len, scope: str | None = None) -> list[Chunk]:
    """Chunks of a persona, in document order, none longer than the chunk length; with ATS/ACTS every paragraph
    lies whole in at least one. ``scope`` (``"section"`` or ``"document"``) overrides the splitter's (:data:`SCOPES`).

    >>> from rpa_lib.persona import load_persona
    >>> [c.id for c in split(load_persona("frieren"), "acts")][:2]
    ['frieren:acts:0000', 'frieren:acts:0001']
    """
    s = settings_for(persona, splitter, length, overlap, length_function)
    scope = scope or SCOPES[splitter]
    if scope not in ("section", "document"):
        raise ValueError(f"scope must be 'section' or 'document', not {scope!r}")
    text_splitter = _splitter_class()(chunk_size=s.chunk_length + 1, chunk_overlap=s.overlap, separators=_SEPARATORS,
                                      length_function=length_function, keep_separator=False, strip_whitespace=True)
    units = [persona.paragraphs] if scope == "document" else [list(sec.paragraphs) for sec in persona.sections]
    chunks: list[Chunk] = []
    for paragraphs in units:
        if scope == "document":  # the document as it is, heading lines included, from its first paragraph on
            body_text, spans = persona.source[paragraphs[0].start:paragraphs[-1].end], [(0, paragraphs[0].start)]
        else:  # the section's paragraphs joined by exactly one blank line; `spans` maps offsets back to the source
            body_text, spans, at = "", [], 0
            for par in paragraphs:
                spans.append((at, par.start))
                body_text += ("\n\n" if body_text else "") + par.text
                at = len(body_text) + 2
        cursor, norm_starts = 0, [span[0] for span in spans]
        par_starts, par_ends = [p.start for p in paragraphs], [p.end for p in paragraphs]
        for piece in text_splitter.split_text(body_text):
            found = body_text.find(piece, cursor)
            if found < 0:  # the splitter only cuts, joins with the same separator, and strips
                raise AssertionError(f"{persona.path}: chunk not found in {heading_path(paragraphs[0].headings)!r}")
            cursor = found + 1
            start = _to_source(spans, norm_starts, found)
            end = _to_source(spans, norm_starts, found + len(piece) - 1) + 1
            # the paragraphs the chunk overlaps, by bisection (a scan per chunk is quadratic on a long persona)
            overlapping = paragraphs[bisect_right(par_ends, start):bisect_left(par_starts, end)]
            if not overlapping:  # heading lines alone, between two paragraphs that fill chunks of their own
                continue
            headings = commonprefix([p.headings for p in overlapping])  # compared heading by heading
            body = persona.source[start:end]  # across sections: with the heading lines between, as measured
            # H_i in front, though Eq. 5 appends it: MiniLM reads only 256 word pieces (docs/design/core.md)
            text = f"{heading_path(headings)}\n{body}" if s.with_context else body
            chunks.append(Chunk(id=f"{persona.slug}:{splitter}:{len(chunks):04d}", character=persona.slug,
                                splitter=splitter, text=text, body=body, headings=headings, start=start, end=end))
    return chunks


def _splitter_class():
    """LangChain's splitter, given the chunk length + 1, merging up to the chunk length (docs/design/core.md)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    class Splitter(RecursiveCharacterTextSplitter):
        def _merge_splits(self, splits, separator):
            self._chunk_size -= 1
            try:
                return super()._merge_splits(splits, separator)
            finally:
                self._chunk_size += 1

    return Splitter


def _to_source(spans: list[tuple[int, int]], norm_starts: list[int], offset: int) -> int:
    """An offset in the normalized section body as an offset in the source (``norm_starts``: the spans' firsts)."""
    norm_start, src_start = spans[bisect_right(norm_starts, offset) - 1]
    return src_start + offset - norm_start


def overlap_chars(first: str, second: str) -> int:
    """The longest suffix of ``first`` starting at a word boundary that begins ``second`` (0 when none).
    ``overlap_chars("a b c d", "c d e") == 3``"""
    for at in range(max(0, len(first) - len(second)), len(first)):
        if (at == 0 or first[at - 1].isspace()) and second.startswith(first[at:]):
            return len(first) - at
    return 0
