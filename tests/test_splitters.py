"""Vanilla, ATS and ACTS on the fixtures and on random personas: chunks are exact slices of the source, never
longer than the chunk length, keep every paragraph whole (ATS/ACTS), overlap as configured, and carry their
heading path (ACTS)."""

from __future__ import annotations

import random
import re

import pytest

from rpa_lib.paths import CHARACTERS_DIR
from rpa_lib.persona import ATTRIBUTES, Persona, list_characters, load_persona, parse_persona
from rpa_lib.splitters import SCOPES, SPLITTERS, VANILLA_LENGTH, VANILLA_OVERLAP, overlap_chars, settings_for, split

WORDS = ("lamp storm harbour keeper island rope gear lens coffee winter ship reef oil lantern mountain bread honey "
         "oven contest rival mother uncle letter map weather swell tide gallery night market book evening friend "
         "promise stranger sailor baker apprentice hive kiln street coach pass altitude salt measure recipe").split()


def words(text: str) -> int:
    """A token-like length function: ``words("a b  c") == 3``."""
    return len(text.split())


def normalized(body: str) -> str:
    """A chunk body as the splitter measures it: paragraphs joined by exactly one blank line."""
    return re.sub(r"\n[ \t]*\n(?:[ \t]*\n)*", "\n\n", body)


def random_paragraph(rng: random.Random, target: int, tag: str) -> str:
    """Sentences of random words (one unique tag each, so no two sentences repeat) up to ~``target`` characters;
    some paragraphs span several lines."""
    sentences: list[str] = []
    while sum(len(s) + 1 for s in sentences) < target:
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 14)))
        sentences.append(f"{tag}{len(sentences)} {body}{rng.choice('.!?;,')}")
    sep = "\n" if rng.random() < 0.2 else " "
    return sep.join(sentences)


def random_persona_text(seed: int, blank: tuple[str, ...] = ("\n\n",)) -> str:
    """A valid persona with 1-4 levels of headings and paragraph lengths from ~20 to ~1,400 characters.
    ``blank``: the paragraph separators to draw from (irregular blank lines when given several)."""
    rng = random.Random(seed)
    blocks = [f"# Person {seed}"]
    n = 0

    def paragraphs(k: int) -> None:
        nonlocal n
        for _ in range(k):
            n += 1
            length = int(min(1400, max(20, rng.lognormvariate(5.0, 0.9))))
            blocks.append(random_paragraph(rng, length, f"P{n}s"))

    for attribute in ATTRIBUTES:
        blocks.append(f"## {attribute}")
        if rng.random() < 0.3:
            paragraphs(rng.randint(1, 6))
        for i in range(rng.randint(0 if len(blocks) > 3 else 1, 3)):
            blocks.append(f"### {attribute} part {i}")
            paragraphs(rng.randint(1, 7))
            if rng.random() < 0.3:
                blocks.append(f"#### Detail {i}")
                paragraphs(rng.randint(1, 4))
    text = blocks[0]
    for block in blocks[1:]:
        text += (rng.choice(blank) if not block.startswith("#") else "\n\n") + block
    return text + "\n"


SEEDS = list(range(12))


@pytest.fixture
def random_persona(write_persona):
    def make(seed: int, blank: tuple[str, ...] = ("\n\n",)) -> Persona:
        return parse_persona(write_persona(random_persona_text(seed, blank), slug=f"person-{seed}"))

    return make


def check_chunks(p: Persona, splitter: str, length_function=len, **split_args) -> tuple[list, object]:
    """Assert every guarantee of :func:`split` and return ``(chunks, settings)``."""
    chunks = split(p, splitter, length_function=length_function, **split_args)
    s = settings_for(p, splitter, length_function=length_function, **split_args)
    assert chunks
    sections = {sec.headings: sec for sec in p.sections}
    for i, c in enumerate(chunks):
        assert c.id == f"{p.slug}:{splitter}:{i:04d}" and (c.character, c.splitter) == (p.slug, splitter)
        assert c.body and c.body == c.body.strip()
        if split_args.get("scope", SCOPES[splitter]) == "section":
            assert c.body == p.source[c.start:c.end]
            sec = sections[c.headings]
            assert sec.start <= c.start < c.end <= sec.end, "a chunk crosses its section"
        else:  # a chunk may span sections: it carries the heading path its paragraphs share, and the heading
            # lines between them, as the document has them
            inside = [par for par in p.paragraphs if par.start < c.end and par.end > c.start]
            assert inside and all(par.headings[:len(c.headings)] == c.headings for par in inside)
            assert c.body == p.source[c.start:c.end]
        assert length_function(normalized(c.body)) <= s.chunk_length, (c.id, length_function(c.body), s.chunk_length)
        if splitter.startswith("acts"):
            assert c.text == f"{c.context}\n{c.body}" and c.context == " > ".join(c.headings)
        else:
            assert c.text == c.body
    assert [c.start for c in chunks] == sorted(c.start for c in chunks), "chunks out of document order"
    # Nothing is lost: every letter and digit of every paragraph is in some chunk (the splitter may drop only
    # the separators it cut at).
    covered = bytearray(len(p.source))
    for c in chunks:
        covered[c.start:c.end] = b"\1" * (c.end - c.start)
    for par in p.paragraphs:
        lost = [p.source[j] for j in range(par.start, par.end) if p.source[j].isalnum() and not covered[j]]
        assert not lost, f"text of line {par.line} in no chunk"
    for a, b in zip(chunks, chunks[1:]):
        if a.headings == b.headings and SCOPES[splitter] == "section":
            assert a.start < b.start and a.end < b.end
            shared = p.source[b.start:a.end] if b.start < a.end else ""
            assert length_function(normalized(shared)) <= s.overlap, (a.id, b.id)
    # A paragraph that fits in a chunk is never cut: with ATS/ACTS that is every paragraph.
    for par in p.paragraphs:
        if length_function(par.text) <= s.chunk_length:
            assert any(c.start <= par.start and par.end <= c.end for c in chunks), f"paragraph at line {par.line} cut"
    if splitter not in ("vanilla", "vanilla-section"):
        assert all(length_function(par.text) <= s.chunk_length for par in p.paragraphs)
    return chunks, s


def overlapping_pairs(chunks) -> tuple[int, int]:
    """(pairs of consecutive chunks in one section, how many of them share text)."""
    pairs = [(a, b) for a, b in zip(chunks, chunks[1:]) if a.headings == b.headings]
    return len(pairs), sum(b.start < a.end for a, b in pairs)


# ---------------------------------------------------------------- settings


@pytest.mark.parametrize("slug", ["ada-lindqvist", "bram-okafor"])
def test_adaptive_settings_on_fixtures(slug, fixture_characters_dir):
    p = load_persona(slug, fixture_characters_dir)
    # l_max computed independently of the parser: the longest blank-line separated block that is not a heading.
    blocks = [b.strip() for b in re.split(r"\n\s*\n", p.path.read_text(encoding="utf-8"))]
    l_max = max(len(b) for b in blocks if b and not b.startswith("#"))
    assert l_max == p.longest_paragraph
    for splitter in ("ats", "acts"):
        s = settings_for(p, splitter)
        assert (s.chunk_length, s.overlap, s.with_context) == (l_max, l_max // 2, splitter == "acts")
    assert settings_for(p, "vanilla") == settings_for(p, "vanilla", VANILLA_LENGTH, VANILLA_OVERLAP)
    assert (settings_for(p, "vanilla").chunk_length, settings_for(p, "vanilla").overlap) == (500, 100)


@pytest.mark.parametrize("seed", SEEDS)
def test_adaptive_settings_on_random_personas(seed, random_persona):
    p = random_persona(seed)
    longest = max(len(par.text) for par in p.paragraphs)
    for splitter in ("ats", "acts"):
        s = settings_for(p, splitter)
        assert (s.chunk_length, s.overlap) == (longest, longest // 2)


def test_vanilla_rejects_overlap_not_below_length(fixture_characters_dir):
    p = load_persona("ada-lindqvist", fixture_characters_dir)
    for length, overlap in [(100, 100), (100, 150), (100, -1)]:
        with pytest.raises(ValueError, match=r"overlap must be in \[0, length\)"):
            split(p, "vanilla", length=length, overlap=overlap)
    assert split(p, "vanilla", length=100, overlap=99)


@pytest.mark.parametrize("splitter", ["ats", "acts"])
def test_adaptive_splitters_refuse_a_fixed_length(splitter, fixture_characters_dir):
    p = load_persona("ada-lindqvist", fixture_characters_dir)
    with pytest.raises(ValueError, match="derives its length from the persona"):
        split(p, splitter, length=300)
    with pytest.raises(ValueError, match="derives its length from the persona"):
        split(p, splitter, overlap=10)


def test_unknown_splitter(fixture_characters_dir):
    p = load_persona("ada-lindqvist", fixture_characters_dir)
    with pytest.raises(ValueError, match="unknown splitter 'semantic'; choose one of vanilla, ats, acts"):
        split(p, "semantic")


# ---------------------------------------------------------------- the guarantees


@pytest.mark.parametrize("splitter", SPLITTERS)
@pytest.mark.parametrize("slug", ["ada-lindqvist", "bram-okafor"])
def test_guarantees_on_fixtures(slug, splitter, fixture_characters_dir):
    check_chunks(load_persona(slug, fixture_characters_dir), splitter)


def test_acts_on_ada(fixture_characters_dir):
    p = load_persona("ada-lindqvist", fixture_characters_dir)
    acts, ats = split(p, "acts"), split(p, "ats")
    assert [c.body for c in acts] == [c.body for c in ats]
    storm = [c for c in acts if c.headings[-1] == "The Winter Storm"]
    assert storm[0].text.startswith("Ada Lindqvist > Activity > The Winter Storm\nIn my second winter on Varholm")
    # The two storm paragraphs (221 + 2 + 119 characters) do not fit in one 230-character chunk.
    assert [c.body[:20] for c in storm] == ["In my second winter ", "I wrote every hour o"]


@pytest.mark.parametrize("splitter", SPLITTERS)
@pytest.mark.parametrize("seed", SEEDS)
def test_guarantees_on_random_personas(seed, splitter, random_persona):
    check_chunks(random_persona(seed), splitter)


@pytest.mark.parametrize("splitter", SPLITTERS)
@pytest.mark.parametrize("seed", SEEDS[:4])
def test_guarantees_with_irregular_blank_lines(seed, splitter, random_persona):
    """Paragraphs separated by two or three blank lines, or by lines of spaces, are still split exactly
    (chunk lengths count one blank line between paragraphs; see :func:`normalized`)."""
    p = random_persona(seed, blank=("\n\n", "\n\n\n", "\n  \n", "\n\t\n\n"))
    assert "\n\n\n" in p.source and "\n  \n" in p.source
    check_chunks(p, splitter)


@pytest.mark.parametrize("seed", SEEDS)
def test_adaptive_overlap_keeps_the_last_paragraph(seed, random_persona):
    """ATS keeps the previous chunk's last paragraph at the start of the next one whenever it fits in the
    overlap and beside the next paragraph (LangChain's merge rule, with paragraphs as the units)."""
    p = random_persona(seed)
    chunks, s = check_chunks(p, "ats")
    pars = p.paragraphs
    for a, b in zip(chunks, chunks[1:]):
        if a.headings != b.headings:
            continue
        last = next(par for par in pars if par.end == a.end)
        nxt = next(par for par in pars if par.start > a.end)
        if len(last.text) <= s.overlap and len(last.text) + 2 + len(nxt.text) <= s.chunk_length:
            assert b.start <= last.start, (a.id, b.id)


def test_consecutive_chunks_overlap(write_persona):
    """A section longer than one chunk, made of units shorter than the overlap: every consecutive pair of
    chunks shares text, with ATS/ACTS (paragraph units) and with Vanilla (sentence units)."""
    rng = random.Random(7)
    short = "\n\n".join(random_paragraph(rng, rng.randint(40, 90), f"S{i}s") for i in range(20))
    sentences = " ".join(f"Sentence {i} says {rng.choice(WORDS)} {rng.choice(WORDS)}." for i in range(30))
    text = (f"# Overlap\n\n## Demographic Information\n\n{random_paragraph(rng, 240, 'L')}\n\n## Activity\n\n{short}\n\n"
            f"## Belief and Value\n\n{sentences}\n\n" + "".join(f"## {a}\n\nShort.\n\n" for a in ATTRIBUTES[3:]))
    p = parse_persona(write_persona(text))
    assert p.longest_paragraph == len(sentences)
    for splitter in ("ats", "acts"):
        chunks, s = check_chunks(p, splitter)
        activity = [c for c in chunks if c.headings[1] == "Activity"]
        assert len(activity) > 1 and s.overlap > 90
        assert overlapping_pairs(activity) == (len(activity) - 1, len(activity) - 1)
    chunks, _ = check_chunks(p, "vanilla", length=200, overlap=60)
    belief = [c for c in chunks if c.headings[1:2] == ("Belief and Value",)]
    assert len(belief) > 5
    assert overlapping_pairs(belief) == (len(belief) - 1, len(belief) - 1)
    no_overlap, _ = check_chunks(p, "vanilla", length=200, overlap=0)
    assert overlapping_pairs(no_overlap)[1] == 0


def test_overlap_is_exercised_on_random_personas(random_persona):
    """The random personas do produce overlapping chunks (the overlap checks above are not vacuous)."""
    pairs = shared = 0
    for seed in SEEDS:
        for splitter in SPLITTERS:
            n, k = overlapping_pairs(split(random_persona(seed), splitter))
            pairs, shared = pairs + n, shared + k
    assert pairs > 50 and shared > 50


def test_longest_paragraph_is_one_whole_chunk(write_persona):
    """Two paragraphs whose joined length is l_max + 1 must not be merged into one chunk (an off-by-one would)."""
    text = ("# Edge\n\n## Demographic Information\n\n" + "a" * 20 + "\n\n## Activity\n\n" + "b" * 10 + "\n\n" + "c" * 9
            + "\n\n" + "".join(f"## {a}\n\nx\n\n" for a in ATTRIBUTES[2:]))
    p = parse_persona(write_persona(text))
    chunks, s = check_chunks(p, "ats")
    assert s.chunk_length == 20
    assert [c.body for c in chunks if c.headings[1] == "Activity"] == ["b" * 10, "c" * 9]


@pytest.mark.parametrize("splitter", SPLITTERS)
@pytest.mark.parametrize("seed", SEEDS[:6])
def test_length_function_is_honoured(seed, splitter, random_persona):
    p = random_persona(seed)
    args = {"length": 60, "overlap": 15} if splitter == "vanilla" else {}
    chunks, s = check_chunks(p, splitter, length_function=words, **args)
    if splitter not in ("vanilla", "vanilla-section"):
        assert s.chunk_length == max(words(par.text) for par in p.paragraphs)
        assert s.overlap == s.chunk_length // 2
        # Measured in characters, the same chunks would be far too long: the word count was really used.
        assert max(len(c.body) for c in chunks) > 2 * s.chunk_length
    else:
        assert max(words(c.body) for c in chunks) > 40 and max(len(c.body) for c in chunks) > 200


REAL = [slug for slug in list_characters() if (CHARACTERS_DIR / slug / "persona.md").is_file()]


@pytest.mark.parametrize("splitter", SPLITTERS)
@pytest.mark.parametrize("slug", REAL)
def test_guarantees_on_the_real_personas(slug, splitter):
    check_chunks(load_persona(slug), splitter)


def _paths_under(persona: Persona, chunk) -> set[tuple[str, ...]]:
    """The heading paths of the paragraphs a chunk's body touches."""
    return {p.headings for p in persona.paragraphs if p.start < chunk.end and chunk.start < p.end}


def test_adaptive_chunks_merge_paragraphs_and_overlap_on_the_real_personas():
    """On the v2 data, subsections hold several paragraphs, so ATS merges short ones into one chunk (most chunks
    hold 2+ paragraphs), a subsection longer than l_max is cut into overlapping chunks, and ATS never crosses a
    heading path while the document-wide Vanilla does: the properties Table 1's comparison rests on."""
    merged = overlapping = crossing = total = 0
    for slug in REAL:
        persona = load_persona(slug)
        chunks = split(persona, "ats")
        total += len(chunks)
        merged += sum("\n\n" in normalized(c.body).strip() for c in chunks)
        overlapping += sum(a.headings == b.headings and b.start < a.end for a, b in zip(chunks, chunks[1:]))
        assert all(len(_paths_under(persona, c)) == 1 for c in chunks), f"{slug}: an ATS chunk crosses sections"
        crossing += sum(len(_paths_under(persona, c)) > 1 for c in split(persona, "vanilla"))
    assert merged > total / 2, f"only {merged} of {total} ATS chunks hold 2+ paragraphs"
    assert overlapping >= len(REAL), f"only {overlapping} consecutive ATS chunks overlap in {len(REAL)} personas"
    assert crossing >= len(REAL), f"only {crossing} Vanilla chunks cross a heading path"


# ---------------------------------------------------------------- overlap achieved (Eq. 4 read per section or per document)


def test_overlap_chars_hand_computed():
    assert overlap_chars("a b c d", "c d e") == 3  # "c d"
    assert overlap_chars("one two. three four.", "three four. five") == len("three four.")
    assert overlap_chars("abc", "xyz") == 0
    assert overlap_chars("x cat", "at home") == 0  # "at" is not at a word boundary of the first
    assert overlap_chars("same", "same") == 4


def test_document_variants_are_ats_and_acts_over_the_whole_persona(fixture_characters_dir):
    p = load_persona("ada-lindqvist", fixture_characters_dir)
    for name in ("ats", "acts"):
        assert [c.text for c in split(p, f"{name}-document")] == [
            c.text.replace(f":{name}:", f":{name}-document:") for c in split(p, name, scope="document")]
    for name, context in (("ats-document", False), ("acts-document", True)):
        s = settings_for(p, name)
        assert (s.chunk_length, s.overlap, s.with_context) == (p.longest_paragraph, p.longest_paragraph // 2, context)


def test_document_scope_overlaps_as_eq4_reads_on_the_real_personas():
    """Per section, ATS chunks rarely overlap (a subsection is usually shorter than l_max, so it is one chunk and
    the next chunk starts a new section); over the whole document most consecutive chunks do, by about l_max/2.
    The numbers notebook 02 reports: section 43 of 768 pairs, document 648 of 718 (v2 data)."""
    from rpa_lib.data import Dataset
    from rpa_lib.evaluation.evidence import overlap_table

    ds = Dataset()
    t = overlap_table(ds, ds.slugs(), ["ats", "ats-document"]).set_index("scope")
    assert t.share_overlapping["section"] < 0.1 < 0.8 < t.share_overlapping["document"]
    assert 0.5 < t.median_overlap_vs_asked["document"] <= 1.0
