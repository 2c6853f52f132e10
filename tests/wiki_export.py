"""A MediaWiki Special:Export file made of pages, as the importer's tests write them (not a test module)."""

from __future__ import annotations

from xml.sax.saxutils import escape


def export(*pages: tuple[str, str], ns: tuple[int, ...] = (), siteinfo: str = "") -> str:
    """An export of ``(title, wikitext)`` pages, one revision each; ``ns``: each page's namespace (all 0 when
    none); ``siteinfo``: more of its ``<siteinfo>`` (``<namespaces>``)."""
    body = "".join(f"  <page>\n    <title>{escape(t)}</title>\n    <ns>{ns[n - 1] if ns else 0}</ns>\n"
                   f"    <revision>\n      <id>{n}</id>\n"
                   f"      <timestamp>2024-01-0{n}T00:00:00Z</timestamp>\n"
                   f"      <text xml:space=\"preserve\">{escape(w)}</text>\n    </revision>\n  </page>\n"
                   for n, (t, w) in enumerate(pages, start=1))
    return ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en">\n'
            f"  <siteinfo><sitename>Salt Roads Wiki</sitename>{siteinfo}</siteinfo>\n{body}</mediawiki>\n")
