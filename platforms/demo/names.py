"""Person names by language, with the ASCII spelling used to build email addresses."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import numpy as np
import pyarrow as pa


def ascii_slug(text: str) -> str:
    """Lowercase ASCII letters and digits only: 'Müller' -> 'muller', "O'Connor" -> 'oconnor'."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]", "", plain.lower())


@dataclass(frozen=True)
class NamePool:
    first: tuple[str, ...]
    last: tuple[str, ...]
    # Japanese names are written family name first.
    family_first: bool = False
    # Romanised spellings where ascii_slug cannot derive one (non-Latin scripts).
    first_ascii: tuple[str, ...] | None = None
    last_ascii: tuple[str, ...] | None = None


POOLS: dict[str, NamePool] = {
    "en": NamePool(
        ("James", "Mary", "Olivia", "Liam", "Emma", "Noah", "Ava", "Sophia", "Lucas", "Mia",
         "Ethan", "Harper", "Amelia", "Jack", "Grace", "Chloe", "Oliver", "Henry", "Isla", "Leo"),
        ("Smith", "Johnson", "Williams", "Brown", "Jones", "Miller", "Davis", "Wilson", "Taylor",
         "Clark", "Walker", "Hall", "Young", "King", "Wright", "O'Connor", "Murphy", "Evans",
         "Thompson", "Martin"),
    ),
    "de": NamePool(
        ("Lukas", "Leon", "Finn", "Paul", "Jonas", "Emma", "Mia", "Hannah", "Lena", "Sophie",
         "Jürgen", "Anja", "Katrin", "Matthias"),
        ("Müller", "Schmidt", "Schneider", "Fischer", "Weber", "Meyer", "Wagner", "Becker",
         "Schulz", "Hoffmann", "Koch", "Richter"),
    ),
    "fr": NamePool(
        ("Léa", "Chloé", "Manon", "Camille", "Louis", "Gabriel", "Hugo", "Arthur", "Jules", "Inès"),
        ("Martin", "Bernard", "Dubois", "Thomas", "Robert", "Richard", "Petit", "Durand",
         "Lefèvre", "Moreau"),
    ),
    "es": NamePool(
        ("Lucía", "Sofía", "María", "Martina", "Hugo", "Mateo", "Pablo", "Daniel", "Alejandro",
         "Valentina"),
        ("García", "Rodríguez", "González", "Fernández", "López", "Martínez", "Sánchez", "Pérez",
         "Gómez", "Díaz"),
    ),
    "it": NamePool(
        ("Giulia", "Sofia", "Aurora", "Alice", "Leonardo", "Francesco", "Lorenzo", "Alessandro",
         "Matteo", "Chiara"),
        ("Rossi", "Russo", "Ferrari", "Esposito", "Bianchi", "Romano", "Colombo", "Ricci",
         "Marino", "Greco"),
    ),
    "nl": NamePool(
        ("Daan", "Sem", "Lucas", "Levi", "Emma", "Julia", "Tess", "Sophie", "Anouk", "Bram"),
        ("de Jong", "Jansen", "de Vries", "van den Berg", "van Dijk", "Bakker", "Visser", "Smit",
         "Meijer", "de Boer"),
    ),
    "sv": NamePool(
        ("Alice", "Maja", "Elsa", "Astrid", "William", "Oscar", "Hugo", "Liam", "Ebba", "Nils"),
        ("Andersson", "Johansson", "Karlsson", "Nilsson", "Eriksson", "Larsson", "Olsson",
         "Persson", "Svensson", "Gustafsson"),
    ),
    "pt": NamePool(
        ("Ana", "Beatriz", "Maria", "Júlia", "João", "Pedro", "Lucas", "Gabriel", "Rafael",
         "Larissa"),
        ("Silva", "Santos", "Oliveira", "Souza", "Pereira", "Costa", "Rodrigues", "Almeida",
         "Nascimento", "Lima"),
    ),
    "ja": NamePool(
        ("太郎", "花子", "翔太", "陽菜", "蓮", "結衣", "大翔", "さくら", "健", "美咲"),
        ("佐藤", "鈴木", "高橋", "田中", "伊藤", "渡辺", "山本", "中村", "小林", "加藤"),
        family_first=True,
        first_ascii=("taro", "hanako", "shota", "hina", "ren", "yui", "hiroto", "sakura", "ken",
                     "misaki"),
        last_ascii=("sato", "suzuki", "takahashi", "tanaka", "ito", "watanabe", "yamamoto",
                    "nakamura", "kobayashi", "kato"),
    ),
}  # fmt: skip

POOL_NAMES: tuple[str, ...] = tuple(POOLS)


@dataclass(frozen=True)
class _Flat:
    """All pools' names in one array, so a name is one `take` of an index."""

    names: pa.Array
    ascii: pa.Array
    start: np.ndarray
    size: np.ndarray


def _flatten(part: str) -> _Flat:
    names: list[str] = []
    ascii: list[str] = []
    start, size = [], []
    for pool in POOLS.values():
        values: tuple[str, ...] = getattr(pool, part)
        romanised = getattr(pool, f"{part}_ascii") or tuple(ascii_slug(v) for v in values)
        start.append(len(names))
        size.append(len(values))
        names.extend(values)
        ascii.extend(romanised)
    return _Flat(pa.array(names), pa.array(ascii), np.array(start), np.array(size))


FIRST = _flatten("first")
LAST = _flatten("last")
FAMILY_FIRST = np.array([p.family_first for p in POOLS.values()])


def draw(rng: np.random.Generator, flat: _Flat, pool_idx: np.ndarray) -> np.ndarray:
    """An index into `flat` per person, uniform within each person's pool."""
    return flat.start[pool_idx] + (rng.random(len(pool_idx)) * flat.size[pool_idx]).astype(np.int64)
