"""One record per paper package: what the Makefile, the golden tests, the notebook tests
and the README check read (``papers.PAPERS``, ``papers.paper(name)``).

Each ``papers/<name>/__init__.py`` defines ``PAPER = Paper(...)``: its notebook
(``notebooks/<name>.ipynb``), its title, its place in the list and its methods as recipes.
A package without ``PAPER`` is not a paper; a new paper is found without editing a list.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .recipe import Recipe


@dataclass(frozen=True)
class Paper:
    name: str                   # the package, and the notebook's stem
    title: str                  # authors, year, title
    order: int                  # place in the list (the quickstart first)
    recipes: dict[str, Recipe] = field(default_factory=dict)

    @property
    def notebook(self) -> str:
        """The notebook's path from the repository root."""
        return f"notebooks/{self.name}.ipynb"
