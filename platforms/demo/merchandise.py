"""What the demo stores sell: product types, title words, vendors, variant options, and the
tag and note vocabularies of products, orders, customers and refunds."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProductType:
    name: str
    nouns: tuple[str, ...]
    base_price_usd: float
    # Key of OPTIONS: how this type's variants are told apart.
    options: str


PRODUCT_TYPES: tuple[ProductType, ...] = (
    ProductType("T-Shirts", ("Tee", "Crew Tee", "Pocket Tee", "Henley"), 28, "apparel"),
    ProductType("Hoodies", ("Hoodie", "Zip Hoodie", "Sweatshirt"), 64, "apparel"),
    ProductType("Jackets", ("Jacket", "Parka", "Windbreaker", "Overshirt"), 140, "apparel"),
    ProductType("Pants", ("Chinos", "Joggers", "Jeans", "Trousers"), 78, "apparel"),
    ProductType("Shoes", ("Sneakers", "Boots", "Loafers", "Runners"), 110, "shoe"),
    ProductType("Bags", ("Tote", "Backpack", "Duffel", "Crossbody Bag"), 70, "color"),
    ProductType("Accessories", ("Beanie", "Scarf", "Cap", "Wallet", "Belt"), 30, "color"),
    ProductType("Home", ("Mug", "Candle", "Throw Blanket", "Cushion Cover", "Vase"), 36, "color"),
    ProductType("Kitchen", ("Chef's Knife", "Cutting Board", "Pour-Over Set", "Teapot"), 55,
                "single"),
    ProductType("Beauty", ("Face Serum", "Hand Cream", "Lip Balm", "Body Wash"), 24, "volume"),
    ProductType("Coffee", ("Espresso Blend", "Single Origin Beans", "Decaf Roast"), 18, "grind"),
    ProductType("Stationery", ("Notebook", "Fountain Pen", "Planner", "Sketchbook"), 22, "color"),
)  # fmt: skip

ADJECTIVES = (
    "Classic", "Everyday", "Heritage", "Organic", "Vintage", "Essential", "Coastal", "Alpine",
    "Urban", "Relaxed", "Premium", "Lightweight", "Field", "Studio", "Weekend", "Nordic",
)  # fmt: skip

# The empty material leaves a two-word title ("Classic Tee").
MATERIALS = (
    "", "", "Cotton", "Linen", "Merino", "Canvas", "Leather", "Ceramic", "Oak", "Recycled",
    "Bamboo", "Wool", "Denim",
)  # fmt: skip

COLORS = ("Black", "Natural", "Olive", "Navy", "Rust", "Heather Grey", "Sand")

# Variant titles per option kind, by position, and each position's price factor.
OPTIONS: dict[str, tuple[tuple[str, ...], tuple[float, ...]]] = {
    "apparel": (("S", "M", "L", "XL", "XXL"), (1.0, 1.0, 1.0, 1.0, 1.1)),
    "shoe": (("US 7", "US 8", "US 9", "US 10", "US 11"), (1.0, 1.0, 1.0, 1.0, 1.0)),
    "color": (COLORS[:5], (1.0, 1.0, 1.05, 1.05, 1.1)),
    "volume": (("30 ml", "50 ml", "100 ml", "200 ml", "500 ml"), (1.0, 1.4, 2.2, 3.6, 7.0)),
    "grind": (
        ("250 g / Whole Bean", "250 g / Ground", "500 g / Whole Bean", "1 kg / Whole Bean",
         "1 kg / Ground"),
        (1.0, 1.0, 1.8, 3.3, 3.3),
    ),
    "single": (("Default Title",), (1.0,)),
}  # fmt: skip
OPTION_KINDS: tuple[str, ...] = tuple(OPTIONS)
# Apparel variants also name the product's colour: "M / Olive".
COLOURED_OPTIONS = frozenset({"apparel", "shoe"})

VENDORS = (
    "Northwind Supply", "Hearth & Loom", "Copper Kettle Co.", "Fjord Works", "Atlas Apparel",
    "Kumo Studio", "Maison Verte", "Bluebird Goods", "Granite Peak", "Willow & Wren",
    "Sakura Lane", "Ironbark", "Lumen Home", "Oaken Table", "Tidewater",
)  # fmt: skip

# Tag lists with their weights; most records carry none.
PRODUCT_TAGS = (
    ("", 40), ("new", 8), ("bestseller", 8), ("sale", 6), ("eco", 5), ("gift", 5),
    ("summer", 4), ("winter", 4), ("limited", 3), ("bestseller, gift", 4), ("sale, summer", 3),
    ("eco, new", 3), ("bundle, gift, winter", 2),
)  # fmt: skip
ORDER_TAGS = (
    ("", 80), ("gift", 5), ("vip", 4), ("wholesale", 2), ("subscription", 3), ("first-order", 3),
    ("gift, vip", 1), ("wholesale, net-30", 1), ("priority, vip", 1),
)  # fmt: skip
CUSTOMER_TAGS = (
    ("", 60), ("newsletter", 15), ("vip", 6), ("wholesale", 3), ("returning", 8),
    ("newsletter, vip", 5), ("b2b, wholesale", 3),
)  # fmt: skip
REFUND_NOTES = (
    ("", 30), ("Customer changed their mind", 15), ("Wrong size", 15), ("Damaged in transit", 10),
    ("Item not as described", 8), ("Late delivery", 6), ("Goodwill gesture", 4),
    ("Duplicate order", 3), ("Returned, restocked", 9),
)  # fmt: skip

# Order channel names as Shopify shows them, with shares of orders. 'Draft Orders' orders
# are the completed draft orders.
SALES_CHANNELS = (
    ("Online Store", 0.62), ("Point of Sale", 0.12), ("Shop", 0.11),
    ("Facebook & Instagram", 0.136), ("Draft Orders", 0.014),
)  # fmt: skip
POINT_OF_SALE = "Point of Sale"
DRAFT_ORDERS = "Draft Orders"
