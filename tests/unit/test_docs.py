"""The documentation a clean checkout carries (docs/README.md): the spec in
docs/spec/ with every section the rows and mutants cite, every command-line
option in some page of docs/, every page a link names, and the README's
commands where .ci/run reads them."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from lse.api.cli import build_parser as server_parser
from lse.cluster.options import build_parser as cluster_parser
from lse.compiler.cli import build_parser as compile_parser
from lse.runtime.cli import build_parser as chat_parser
from lse.spec.rows import API_DOC, LSE_API, MESSAGES_API, OPENAI_API, README, RESPONSES_API
from lse.spec.table import all_rows
from lse.spec.runner import _parser as spec_parser
from mutants_data import MUTANTS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SPEC = DOCS / "spec"
README_LINES = 250  # the README is for a user; measurements and references live in docs/


def headings(doc: str) -> set[str]:
    """The lines of a spec document, '#' marks stripped: its section titles among them."""
    return {line.strip().lstrip("#").strip() for line in (SPEC / doc).read_text().splitlines()}


def test_spec_rows_cite_sections_of_the_in_repo_spec():
    docs = {d: headings(d) for d in (LSE_API, OPENAI_API, README)}
    cited = {(r.cite.doc, part) for r in all_rows() if r.cite.doc in docs for part in r.cite.section.split(" > ")}
    assert len(cited) > 20
    assert sorted((d, s) for d, s in cited if s not in docs[d]) == []


def test_rows_citing_lses_own_api_doc_name_its_headings():
    titles = {line.strip().lstrip("#").strip() for line in (DOCS / "api.md").read_text().splitlines()
              if line.startswith("#")}
    cited = {part for r in all_rows() if r.cite.doc == API_DOC for part in r.cite.section.split(" > ")}
    assert cited and sorted(cited - titles) == []


@pytest.mark.parametrize("doc", [MESSAGES_API, RESPONSES_API])
def test_rows_citing_an_api_page_name_its_headings(doc):
    # docs/api-messages.md and docs/api-responses.md: each part of a cited heading path is a heading there
    titles = {line.strip().lstrip("#").strip() for line in (DOCS / doc).read_text().splitlines()
              if line.startswith("#")}
    cited = {part for r in all_rows() if r.cite.doc == doc for part in r.cite.section.split(" > ")}
    assert len(cited) > 5 and sorted(cited - titles) == []


def test_mutants_cite_sections_of_the_in_repo_spec():
    docs = {d: headings(d) for d in (LSE_API, OPENAI_API, README)}
    # LSE's own API document, for what the spec does not cover (the embeddings route)
    docs[API_DOC] = {line.strip().lstrip("#").strip() for line in (DOCS / "api.md").read_text().splitlines()}
    cited = {tuple(m.section.split(" § ", 1)) for m in MUTANTS}
    # a mutant may name a section by the start of its title ("Where the two differ")
    missing = [(d, s) for d, s in cited for part in s.split(" > ") if not any(h.startswith(part) for h in docs[d])]
    assert missing == []


def test_code_cites_spec_files_that_exist():
    sources = [f for f in ROOT.glob("[a-z]*/**/*") if f.suffix in (".py", ".c", ".h") and ".venv" not in f.parts]
    paths = {m for f in sources for m in re.findall(r"docs/spec/[\w.-]+\.md", f.read_text())}
    assert "docs/spec/lse-api.md" in paths
    assert sorted(p for p in paths if not (ROOT / p).is_file()) == []


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings if s.startswith("--") and s != "--help"}


@pytest.mark.parametrize("name,parser", [("lse-server", server_parser), ("lse", chat_parser),
                                         ("lse-compile", compile_parser), ("lse-cluster", cluster_parser),
                                         ("lse-spec", spec_parser)])
def test_every_option_is_documented(name, parser):
    text = "\n".join(p.read_text() for p in DOCS.rglob("*.md"))
    assert sorted(o for o in _options(parser()) if not re.search(rf"(?<![\w-]){o}(?![\w-])", text)) == [], name


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation but '-' and '_' dropped, spaces as '-'."""
    titles = re.findall(r"^#+ (.+)$", page.read_text(), re.M)
    return {re.sub(r"[^\w\- ]", "", t.strip().lower()).replace(" ", "-") for t in titles}


def test_doc_links_name_pages_and_sections_that_exist():
    pages = [ROOT / "README.md", *DOCS.glob("*.md")]
    others = ("api-messages.md", "api-responses.md", "architectures.md", "web-ui.md", "device-check.md")
    broken = []
    for page in pages:
        for target, anchor in re.findall(r"\]\(([^)#:]*)(?:#([^)]*))?\)", page.read_text()):
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                if path.name not in others:  # pages written on other branches
                    broken.append(f"{page.name}: {target}")
            elif anchor and anchor not in anchors(path):
                broken.append(f"{page.name}: {target}#{anchor}")
    assert broken == []


def test_readme_keeps_the_commands_ci_runs_and_stays_short():
    text = (ROOT / "README.md").read_text()
    for marker in ("<!-- serve-command -->", "<!-- test-command -->"):
        assert re.search(re.escape(marker) + r"\n```sh\n.+\n```\n", text), marker
    assert len(text.splitlines()) <= README_LINES
