"""The shop app: catalogue, cart, coupons, checkout through the wallet, orders, wishlist."""

from __future__ import annotations

import pytest
from _sandbox_cases import Fails, Ok, assert_covers, call, check_fails, check_ok, fresh

from pocketpilot.executor.sandbox import PhoneState
from pocketpilot.executor.sandbox.sections.shop import CartLine


def _cart(s: PhoneState, quantity: int = 2) -> None:
    s.shop.cart = [CartLine(product_id="prod-4", name="Espresso Beans 1kg", quantity=quantity, unit_price=17.9)]


def _placed(s: PhoneState) -> None:
    s.shop.orders[0].status = "placed"


SUCCESSES = [
    Ok("search_products", {"query": "socks"}, lambda d, s: [p["id"] for p in d] == ["prod-11"]),
    Ok("search_products", {"category": "electronics", "in_stock_only": True},
       lambda d, s: [p["id"] for p in d] == ["prod-1", "prod-2"]),
    Ok("search_products", {"max_price": 13}, lambda d, s: [p["price"] for p in d] == [11.4, 12.99]),
    Ok("get_product", {"product_id": "prod-3"}, lambda d, s: d["in_stock"] == 0),
    Ok("add_to_cart", {"product_id": "prod-4", "quantity": 2},
       lambda d, s: s.shop.cart[0].quantity == 2 and d["total"] == 35.8),
    Ok("add_to_cart", {"product_id": "prod-4"}, lambda d, s: s.shop.cart[0].quantity == 3, setup=_cart),
    Ok("set_cart_quantity", {"product_id": "prod-4", "quantity": 5}, lambda d, s: s.shop.cart[0].quantity == 5,
       setup=_cart),
    Ok("set_cart_quantity", {"product_id": "prod-4", "quantity": 0}, lambda d, s: s.shop.cart == [], setup=_cart),
    Ok("remove_from_cart", {"product_id": "prod-4"}, lambda d, s: s.shop.cart == [] and d["total"] == 0, setup=_cart),
    Ok("view_cart", {}, lambda d, s: d["subtotal"] == 35.8 and d["discount"] == 0, setup=_cart),
    Ok("apply_coupon", {"code": "spring10"}, lambda d, s: s.shop.coupon == "SPRING10" and d["total"] == 32.22,
       setup=_cart),
    Ok("place_order", {},
       lambda d, s: d["total"] == 35.8 and d["address"] == "Elm St 14" and s.shop.cart == []
       and s.shop.products[3].stock == 38 and s.wallet.cards[0].available == 1814.2
       and s.shop.orders[-1].id == "order-16", setup=_cart),
    Ok("place_order", {"card_id": "card-2", "address": "Office, Tower Plaza 9"},
       lambda d, s: d["card_id"] == "card-2" and s.wallet.cards[1].available == 4.2, setup=_cart),
    Ok("list_orders", {}, lambda d, s: [o["id"] for o in d] == ["order-13", "order-14"]),
    Ok("list_orders", {"status": "delivered"}, lambda d, s: [o["id"] for o in d] == ["order-14"]),
    Ok("get_order", {"order_id": "order-13"}, lambda d, s: d["status"] == "shipped" and d["lines"][0]["quantity"] == 1),
    Ok("cancel_order", {"order_id": "order-13"},
       lambda d, s: s.shop.orders[0].status == "cancelled" and s.shop.products[0].stock == 15
       and s.wallet.cards[0].available == 1879.99, setup=_placed),
    Ok("return_order", {"order_id": "order-14", "reason": "too small"},
       lambda d, s: s.shop.orders[1].status == "returned" and s.wallet.transactions[-1].amount == 89.0),
    Ok("add_to_wishlist", {"product_id": "prod-3"}, lambda d, s: s.shop.wishlist[-1].product_id == "prod-3"),
    Ok("list_wishlist", {}, lambda d, s: d == [{"id": "wish-15", "product_id": "prod-10", "name": "Rain Jacket",
                                                "category": "clothing", "price": 74.5, "in_stock": 2, "rating": 4.3}]),
]

FAILURES = [
    Fails("get_product", {"product_id": "prod-0"}, "not_found"),
    Fails("add_to_cart", {"product_id": "prod-3"}, "out_of_stock"),
    Fails("add_to_cart", {"product_id": "prod-2", "quantity": 2}, "out_of_stock",
          setup=lambda s: setattr(s.shop, "cart", [CartLine(product_id="prod-2", name="Noise Cancelling Headphones",
                                                            quantity=2, unit_price=199.0)])),
    Fails("set_cart_quantity", {"product_id": "prod-1", "quantity": 1}, "not_found", message="not in the cart"),
    Fails("set_cart_quantity", {"product_id": "prod-4", "quantity": 41}, "invalid_arguments", setup=_cart),
    Fails("remove_from_cart", {"product_id": "prod-4"}, "not_found"),
    Fails("apply_coupon", {"code": "FREEBIE"}, "not_found", setup=_cart),
    Fails("apply_coupon", {"code": "SPRING10"}, "precondition_failed", message="empty"),
    Fails("place_order", {}, "precondition_failed", message="empty"),
    Fails("place_order", {"card_id": "card-2"}, "insufficient_funds", setup=lambda s: _cart(s, 3)),
    Fails("place_order", {"card_id": "card-3"}, "precondition_failed", message="frozen", setup=_cart),
    Fails("place_order", {}, "out_of_stock", setup=lambda s: (_cart(s), setattr(s.shop.products[3], "stock", 1))),
    Fails("cancel_order", {"order_id": "order-13"}, "precondition_failed", message="shipped"),
    Fails("return_order", {"order_id": "order-13", "reason": "x"}, "precondition_failed"),
    Fails("add_to_wishlist", {"product_id": "prod-10"}, "conflict"),
]


@pytest.mark.parametrize("case", SUCCESSES, ids=str)
async def test_success(case: Ok) -> None:
    await check_ok(case)


@pytest.mark.parametrize("case", FAILURES, ids=str)
async def test_failure(case: Fails) -> None:
    await check_fails(case)


def test_every_shop_tool_has_a_success() -> None:
    assert_covers("shop", SUCCESSES)


async def test_cart_to_order_to_cancel_round_trip_restores_money_and_stock() -> None:
    phone, ex = fresh()
    start = phone.snapshot()
    await call(ex, "add_to_cart", product_id="prod-8")
    await call(ex, "add_to_cart", product_id="prod-9", quantity=2)
    await call(ex, "apply_coupon", code="WELCOME20")
    order = (await call(ex, "place_order")).data
    assert order["name"] == "Running Shoes and 1 more" and order["total"] == round((89 + 48) * 0.8, 2)
    assert (await call(ex, "view_cart")).data["coupon"] is None
    assert (await call(ex, "cancel_order", order_id=order["id"])).ok
    assert phone.state.wallet.cards == start.wallet.cards and phone.state.shop.products == start.shop.products
