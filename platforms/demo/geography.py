"""Countries the demo's customers live in: names as Shopify shows them, regions, cities,
tax rates and which name pool their people are drawn from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class Country:
    name: str
    code: str
    tax_rate: float
    taxes_shipping: bool
    name_pool: str
    # Relative share of customers from this country in a store's foreign mix.
    weight: float
    regions: tuple[tuple[str, tuple[str, ...]], ...]


COUNTRIES: tuple[Country, ...] = (
    Country("United States", "US", 0.07, False, "en", 28, (
        ("California", ("Los Angeles", "San Francisco", "San Diego")),
        ("New York", ("New York", "Buffalo", "Rochester")),
        ("Texas", ("Houston", "Austin", "Dallas")),
        ("Florida", ("Miami", "Orlando", "Tampa")),
        ("Illinois", ("Chicago", "Springfield")),
        ("Washington", ("Seattle", "Spokane")),
        ("Massachusetts", ("Boston", "Cambridge")),
        ("Colorado", ("Denver", "Boulder")),
    )),
    Country("Germany", "DE", 0.19, True, "de", 9, (
        ("Berlin", ("Berlin",)),
        ("Bayern", ("München", "Nürnberg", "Augsburg")),
        ("Hamburg", ("Hamburg",)),
        ("Nordrhein-Westfalen", ("Köln", "Düsseldorf", "Dortmund")),
        ("Hessen", ("Frankfurt am Main", "Wiesbaden")),
        ("Baden-Württemberg", ("Stuttgart", "Freiburg im Breisgau")),
    )),
    Country("Japan", "JP", 0.10, True, "ja", 6, (
        ("東京都", ("渋谷区", "新宿区", "世田谷区")),
        ("大阪府", ("大阪市", "堺市")),
        ("京都府", ("京都市",)),
        ("北海道", ("札幌市", "函館市")),
        ("福岡県", ("福岡市", "北九州市")),
        ("愛知県", ("名古屋市",)),
    )),
    Country("United Kingdom", "GB", 0.20, True, "en", 10, (
        ("England", ("London", "Manchester", "Bristol", "Leeds")),
        ("Scotland", ("Edinburgh", "Glasgow")),
        ("Wales", ("Cardiff", "Swansea")),
        ("Northern Ireland", ("Belfast",)),
    )),
    Country("Australia", "AU", 0.10, True, "en", 6, (
        ("New South Wales", ("Sydney", "Newcastle")),
        ("Victoria", ("Melbourne", "Geelong")),
        ("Queensland", ("Brisbane", "Gold Coast")),
        ("Western Australia", ("Perth",)),
    )),
    Country("Canada", "CA", 0.13, True, "en", 7, (
        ("Ontario", ("Toronto", "Ottawa")),
        ("Quebec", ("Montréal", "Québec City")),
        ("British Columbia", ("Vancouver", "Victoria")),
        ("Alberta", ("Calgary", "Edmonton")),
    )),
    Country("France", "FR", 0.20, True, "fr", 6, (
        ("Île-de-France", ("Paris", "Versailles")),
        ("Auvergne-Rhône-Alpes", ("Lyon", "Grenoble")),
        ("Provence-Alpes-Côte d'Azur", ("Marseille", "Nice")),
        ("Occitanie", ("Toulouse", "Montpellier")),
    )),
    Country("Switzerland", "CH", 0.081, True, "de", 2, (
        ("Zürich", ("Zürich", "Winterthur")),
        ("Bern", ("Bern",)),
        ("Genève", ("Genève",)),
        ("Basel-Stadt", ("Basel",)),
    )),
    Country("Sweden", "SE", 0.25, True, "sv", 3, (
        ("Stockholms län", ("Stockholm",)),
        ("Västra Götalands län", ("Göteborg",)),
        ("Skåne län", ("Malmö", "Lund")),
    )),
    Country("New Zealand", "NZ", 0.15, True, "en", 2, (
        ("Auckland", ("Auckland",)),
        ("Wellington", ("Wellington",)),
        ("Canterbury", ("Christchurch",)),
    )),
    Country("Brazil", "BR", 0.17, False, "pt", 2, (
        ("São Paulo", ("São Paulo", "Campinas")),
        ("Rio de Janeiro", ("Rio de Janeiro", "Niterói")),
    )),
    Country("Mexico", "MX", 0.16, False, "es", 2, (
        ("Ciudad de México", ("Ciudad de México",)),
        ("Jalisco", ("Guadalajara",)),
        ("Nuevo León", ("Monterrey",)),
    )),
    Country("Netherlands", "NL", 0.21, True, "nl", 4, (
        ("Noord-Holland", ("Amsterdam", "Haarlem")),
        ("Zuid-Holland", ("Rotterdam", "Den Haag")),
        ("Utrecht", ("Utrecht",)),
    )),
    Country("Italy", "IT", 0.22, True, "it", 4, (
        ("Lombardia", ("Milano", "Bergamo")),
        ("Lazio", ("Roma",)),
        ("Toscana", ("Firenze", "Pisa")),
        ("Campania", ("Napoli",)),
    )),
    Country("Spain", "ES", 0.21, True, "es", 4, (
        ("Madrid", ("Madrid",)),
        ("Cataluña", ("Barcelona", "Girona")),
        ("Andalucía", ("Sevilla", "Málaga")),
        ("Comunidad Valenciana", ("Valencia", "Alicante")),
    )),
    Country("Ireland", "IE", 0.23, True, "en", 2, (
        ("Dublin", ("Dublin",)),
        ("Cork", ("Cork",)),
        ("Galway", ("Galway",)),
    )),
)  # fmt: skip

# Countries inside one customs union charge no duties between each other.
CUSTOMS_UNION = frozenset(
    {"Germany", "France", "Sweden", "Netherlands", "Italy", "Spain", "Ireland"}
)

COUNTRY_NAMES = pa.array([c.name for c in COUNTRIES])
TAX_RATES = np.array([c.tax_rate for c in COUNTRIES])
TAXES_SHIPPING = np.array([c.taxes_shipping for c in COUNTRIES])
FOREIGN_WEIGHTS = np.array([c.weight for c in COUNTRIES], dtype=float)


def country_index(name: str) -> int:
    return next(i for i, c in enumerate(COUNTRIES) if c.name == name)


def indices_of(countries: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Position in COUNTRIES of each country name (-1 when absent or not a known name)."""
    found = pc.index_in(countries, value_set=COUNTRY_NAMES)
    return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def duty_free(home: str) -> np.ndarray:
    """Per country: True when goods from `home` reach it without duties."""
    inside = home in CUSTOMS_UNION
    return np.array([c.name == home or (inside and c.name in CUSTOMS_UNION) for c in COUNTRIES])


# Every (country, region, city) flattened, grouped by country, so a city is drawn with one
# index and its region is found again from (country, city) after hostile text replaced it.
_FLAT = [
    (ci, region, city) for ci, c in enumerate(COUNTRIES) for region, cs in c.regions for city in cs
]
CITY_COUNTRY = np.array([ci for ci, _, _ in _FLAT])
CITY_NAMES = pa.array([city for _, _, city in _FLAT])
CITY_START = np.searchsorted(CITY_COUNTRY, np.arange(len(COUNTRIES)))
CITY_COUNT = np.bincount(CITY_COUNTRY, minlength=len(COUNTRIES))
_REGION_KEYS = pa.array([f"{COUNTRIES[ci].name}|{city}" for ci, _, city in _FLAT])
_REGION_NAMES = pa.array([region for _, region, _ in _FLAT])


def draw_cities(rng: np.random.Generator, country_idx: np.ndarray) -> pa.Array:
    """A city of each given country, uniformly among that country's cities."""
    pick = CITY_START[country_idx] + (rng.random(len(country_idx)) * CITY_COUNT[country_idx])
    return CITY_NAMES.take(pa.array(pick.astype(np.int64)))


def regions_of(country: pa.Array, city: pa.Array) -> pa.Array:
    """The region of each (country, city); null when the city is not a known one."""
    keys = pc.binary_join_element_wise(country, city, "|")
    return _REGION_NAMES.take(pc.index_in(keys, value_set=_REGION_KEYS))
