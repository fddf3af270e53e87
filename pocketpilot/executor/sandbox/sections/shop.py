"""The shopping app: a catalogue with stock, the cart, coupons, orders and a wishlist."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Literal

from pydantic import Field

from ._base import Section

__all__ = [
    "CartLine",
    "Order",
    "OrderStatus",
    "Product",
    "ProductCategory",
    "ShopState",
    "WishlistItem",
    "default_shop",
]

ProductCategory = Literal["electronics", "home", "grocery", "clothing", "books", "sports"]
OrderStatus = Literal["placed", "shipped", "delivered", "cancelled", "returned"]


class Product(Section):
    """A catalogue item; ``stock`` units can still be bought."""

    id: str
    name: str
    category: ProductCategory
    price: Annotated[float, Field(ge=0)]
    stock: Annotated[int, Field(ge=0)]
    rating: Annotated[float, Field(ge=0, le=5)] = 4.0


class CartLine(Section):
    """One product in the cart."""

    product_id: str
    name: str
    quantity: Annotated[int, Field(ge=1, le=20)]
    unit_price: Annotated[float, Field(ge=0)]


class Order(Section):
    """A checkout; ``name`` sums it up ("USB-C Charger and 1 more")."""

    id: str
    name: str
    lines: list[CartLine]
    total: Annotated[float, Field(ge=0)]
    card_id: str
    address: str
    status: OrderStatus = "placed"
    placed_at: datetime


class WishlistItem(Section):
    """A product saved for later."""

    id: str
    product_id: str
    name: str


class ShopState(Section):
    """The catalogue, the cart (with an applied coupon), orders and the wishlist."""

    products: list[Product] = Field(default_factory=list)
    cart: list[CartLine] = Field(default_factory=list)
    coupon: str | None = None
    coupons: dict[str, Annotated[int, Field(ge=1, le=90)]] = Field(default_factory=dict)
    """Valid coupon codes and their percent off."""
    orders: list[Order] = Field(default_factory=list)
    wishlist: list[WishlistItem] = Field(default_factory=list)
    next_id: int = 1


_PRODUCTS = [
    ("USB-C Charger 65W", "electronics", 29.99, 14, 4.5),
    ("Noise Cancelling Headphones", "electronics", 199.0, 3, 4.6),
    ("Phone Case (Pixel 8)", "electronics", 19.5, 0, 4.1),
    ("Espresso Beans 1kg", "grocery", 17.9, 40, 4.7),
    ("Oat Milk 6-pack", "grocery", 11.4, 25, 4.3),
    ("Desk Lamp", "home", 34.0, 8, 4.2),
    ("Cotton Bath Towel", "home", 12.99, 30, 4.0),
    ("Running Shoes", "sports", 89.0, 5, 4.4),
    ("Yoga Mat", "sports", 24.0, 12, 4.5),
    ("Rain Jacket", "clothing", 74.5, 2, 4.3),
    ("Wool Socks (3 pairs)", "clothing", 15.0, 50, 4.6),
    ("The Lighthouse Keeper (novel)", "books", 14.0, 9, 4.8),
]


def default_shop(now: datetime) -> ShopState:
    """Twelve products (one sold out), an empty cart, one shipped and one delivered order."""
    products = [
        Product(id=f"prod-{i}", name=n, category=c, price=p, stock=s, rating=r)  # type: ignore[arg-type]
        for i, (n, c, p, s, r) in enumerate(_PRODUCTS, start=1)
    ]
    charger, shoes = products[0], products[7]
    return ShopState(
        products=products,
        coupons={"SPRING10": 10, "WELCOME20": 20},
        orders=[
            Order(id="order-13", name=charger.name,
                  lines=[CartLine(product_id=charger.id, name=charger.name, quantity=1, unit_price=charger.price)],
                  total=charger.price, card_id="card-1", address="Elm St 14", status="shipped",
                  placed_at=now - timedelta(days=2)),
            Order(id="order-14", name=shoes.name,
                  lines=[CartLine(product_id=shoes.id, name=shoes.name, quantity=1, unit_price=shoes.price)],
                  total=shoes.price, card_id="card-1", address="Elm St 14", status="delivered",
                  placed_at=now - timedelta(days=9)),
        ],
        wishlist=[WishlistItem(id="wish-15", product_id="prod-10", name="Rain Jacket")],
        next_id=16,
    )
