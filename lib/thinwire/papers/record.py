"""One record per paper package: what the Makefile, the golden tests, the notebook tests
and the README check read (``papers.PAPERS``, ``papers.paper(name)``).

Each ``papers/<name>/__init__.py`` defines ``PAPER = Paper(...)``: its notebook
(``notebooks/<name>.ipynb``), its title, its place in the list, its methods as recipes, and
its row in the front README's notebook table (what it reproduces, in one line, and the one
number its executed report gives for it: ``Headline``). A package without ``PAPER`` is not a
paper; a new paper is found, and listed in the README, without editing a list.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .recipe import Recipe


@dataclass(frozen=True)
class Headline:
    """The README's one number for a notebook: the scrap ``scrap`` that its default-profile
    report (``reports/<name>.ipynb``) records (``key`` picks one entry of a dict scrap),
    written through ``text``, a format string whose ``{ours}`` is that value. The paper's own
    number, where ``text`` quotes one, comes from the package's ``PUBLISHED``."""
    scrap: str
    text: str
    key: str | None = None

    def render(self, scraps: dict) -> str | None:
        """The line for a report's scraps, or None when the report does not hold the scrap."""
        value = scraps.get(self.scrap)
        if self.key is not None:
            value = value.get(self.key) if isinstance(value, dict) else None
        return None if value is None or isinstance(value, dict) else self.text.format(ours=value)


@dataclass(frozen=True)
class Paper:
    name: str                   # the package, and the notebook's stem
    title: str                  # authors, year, title
    order: int                  # place in the list (the quickstart first)
    recipes: dict[str, Recipe] = field(default_factory=dict)
    reproduces: str = ""        # the README's one line: what the notebook reproduces
    headline: Headline | None = None  # the README's one number, read from the executed report

    @property
    def notebook(self) -> str:
        """The notebook's path from the repository root."""
        return f"notebooks/{self.name}.ipynb"
