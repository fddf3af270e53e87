"""Shopping: browse the catalogue, fill the cart, check out with a wallet card, manage orders."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..sections.shop import CartLine, Order, OrderStatus, Product, ProductCategory, WishlistItem
from ._base import App
from ._payments import charge, refund
from ._records import find, issue_id, money

__all__ = ["ShopApp"]

_MAX_PER_LINE = 20


def _product(p: Product) -> dict[str, Any]:
    return {"id": p.id, "name": p.name, "category": p.category, "price": p.price, "in_stock": p.stock,
            "rating": p.rating}


class ShopApp(App):
    """An online shop: catalogue, cart, coupons, checkout, orders, wishlist."""

    name = "shop"
    domain = "shopping_payments"
    section = "shop"
    package = "com.pocketpilot.shopmart"
    label = "ShopMart"

    def _product(self, product_id: str) -> Product:
        return find(self.state.shop.products, product_id, "product")

    def _line(self, product_id: str) -> CartLine:
        for line in self.state.shop.cart:
            if line.product_id == product_id:
                return line
        raise ToolFailure("not_found", f"{product_id} is not in the cart")

    def _totals(self) -> dict[str, Any]:
        shop = self.state.shop
        subtotal = money(sum(line.unit_price * line.quantity for line in shop.cart))
        percent = shop.coupons.get(shop.coupon or "", 0)
        discount = money(subtotal * percent / 100)
        return {"subtotal": subtotal, "coupon": shop.coupon, "discount": discount,
                "total": money(subtotal - discount)}

    def _order(self, order_id: str) -> Order:
        return find(self.state.shop.orders, order_id, "order")

    @tool(effect="read", idempotent=True)
    async def search_products(
        self,
        query: str = Field("", max_length=80, description="Words in the product name; empty for any."),
        category: ProductCategory | None = None,
        max_price: float | None = Field(None, gt=0, description="Only products up to this price."),
        in_stock_only: bool = False,
    ) -> list[dict[str, Any]]:
        """Search the catalogue for products to buy, cheapest first.

        Args:
            query: Words in the product name; empty for any.
            category: Only this category.
            max_price: Only products up to this price.
            in_stock_only: Hide sold-out products.
        """
        q = query.strip().lower()
        rows = [
            p for p in self.state.shop.products
            if (not q or all(w in p.name.lower() for w in q.split())) and category in (None, p.category)
            and (max_price is None or p.price <= max_price) and (p.stock > 0 or not in_stock_only)
        ]
        return [_product(p) for p in sorted(rows, key=lambda p: p.price)]

    @tool(effect="read", id_arg="product_id", idempotent=True)
    async def get_product(self, product_id: str = Field(description="The product id, e.g. prod-4.")) -> dict[str, Any]:
        """Read one product's price, stock and rating.

        Args:
            product_id: The product id, e.g. prod-4.
        """
        return _product(self._product(product_id))

    @tool(effect="update", id_arg="product_id", idempotent=False)
    async def add_to_cart(
        self,
        product_id: str = Field(description="The product id."),
        quantity: int = Field(1, ge=1, le=_MAX_PER_LINE, description="Units to add."),
    ) -> dict[str, Any]:
        """Add units of a product to the cart (on top of any already there).

        Args:
            product_id: The product id.
            quantity: Units to add.
        """
        shop = self.state.shop
        product = self._product(product_id)
        have = next((line.quantity for line in shop.cart if line.product_id == product_id), 0)
        if have + quantity > product.stock:
            raise ToolFailure("out_of_stock", f"{product.name}: {product.stock} in stock, {have} already in the cart")
        if have + quantity > _MAX_PER_LINE:
            raise ToolFailure("invalid_arguments", f"at most {_MAX_PER_LINE} units of one product per order")
        if have:
            self._line(product_id).quantity = have + quantity
        else:
            shop.cart = [*shop.cart, CartLine(product_id=product.id, name=product.name, quantity=quantity,
                                              unit_price=product.price)]
        return {"product_id": product.id, "quantity": have + quantity, **self._totals()}

    @tool(effect="update", id_arg="product_id", idempotent=True)
    async def set_cart_quantity(
        self,
        product_id: str = Field(description="A product in the cart."),
        quantity: int = Field(ge=0, le=_MAX_PER_LINE, description="New number of units; 0 removes it."),
    ) -> dict[str, Any]:
        """Change how many units of a cart product to buy (0 takes it out).

        Args:
            product_id: A product in the cart.
            quantity: New number of units; 0 removes it.
        """
        shop = self.state.shop
        line = self._line(product_id)
        if quantity == 0:
            shop.cart = [entry for entry in shop.cart if entry.product_id != product_id]
        else:
            product = self._product(product_id)
            if quantity > product.stock:
                raise ToolFailure("out_of_stock", f"{product.name}: only {product.stock} in stock")
            line.quantity = quantity
        return {"product_id": product_id, "quantity": quantity, **self._totals()}

    @tool(effect="update", id_arg="product_id", idempotent=True)
    async def remove_from_cart(self, product_id: str = Field(description="A product in the cart.")) -> dict[str, Any]:
        """Take a product out of the cart.

        Args:
            product_id: A product in the cart.
        """
        shop = self.state.shop
        self._line(product_id)
        shop.cart = [entry for entry in shop.cart if entry.product_id != product_id]
        return {"removed": product_id, **self._totals()}

    @tool(effect="read", idempotent=True)
    async def view_cart(self) -> dict[str, Any]:
        """Read the cart's lines and its subtotal, discount and total before checking out."""
        return {"lines": [line.model_dump() for line in self.state.shop.cart], **self._totals()}

    @tool(effect="update", idempotent=True)
    async def apply_coupon(
        self, code: str = Field(min_length=3, max_length=20, description="The coupon code, e.g. SPRING10.")
    ) -> dict[str, Any]:
        """Apply a discount code to the cart (one code at a time; a new one replaces the old).

        Args:
            code: The coupon code, e.g. SPRING10.
        """
        shop = self.state.shop
        wanted = code.strip().upper()
        if wanted not in shop.coupons:
            raise ToolFailure("not_found", f"{code!r} is not a valid coupon")
        if not shop.cart:
            raise ToolFailure("precondition_failed", "the cart is empty; add something before applying a coupon")
        shop.coupon = wanted
        return self._totals()

    @tool(effect="purchase", open_world=True, idempotent=False)
    async def place_order(
        self,
        card_id: str | None = Field(None, description="Card to pay with; the default card if omitted."),
        address: str | None = Field(None, max_length=120, description="Delivery address; home if omitted."),
    ) -> dict[str, Any]:
        """Place an order for everything in the cart and charge the total to a card.

        Args:
            card_id: Card to pay with; the default card if omitted.
            address: Delivery address; home if omitted.
        """
        state = self.state
        shop = state.shop
        if not shop.cart:
            raise ToolFailure("precondition_failed", "the cart is empty")
        for line in shop.cart:
            product = self._product(line.product_id)
            if line.quantity > product.stock:
                raise ToolFailure("out_of_stock", f"{product.name}: only {product.stock} left; update the cart")
        if address is None:
            home = state.maps.home_place_id
            if home is None:
                raise ToolFailure("precondition_failed", "no delivery address given and no home address set")
            address = find(state.maps.places, home, "place").address
        totals = self._totals()
        tx = charge(state, card_id, totals["total"], "ShopMart")
        for line in shop.cart:
            product = self._product(line.product_id)
            product.stock -= line.quantity
        lines = list(shop.cart)
        name = lines[0].name + (f" and {len(lines) - 1} more" if len(lines) > 1 else "")
        order = Order(id=issue_id(shop, "order"), name=name, lines=lines, total=totals["total"],
                      card_id=tx.card_id or "", address=address, placed_at=state.now)
        shop.orders = [*shop.orders, order]
        shop.cart, shop.coupon = [], None
        return order.model_dump(mode="json")

    @tool(effect="read", idempotent=True)
    async def list_orders(self, status: OrderStatus | None = None) -> list[dict[str, Any]]:
        """List orders, newest first, optionally only those with one status.

        Args:
            status: placed, shipped, delivered, cancelled or returned.
        """
        items = [o for o in self.state.shop.orders if status in (None, o.status)]
        return [{"id": o.id, "name": o.name, "total": o.total, "status": o.status, "placed_at": o.placed_at.isoformat()}
                for o in sorted(items, key=lambda o: o.placed_at, reverse=True)]

    @tool(effect="read", id_arg="order_id", idempotent=True)
    async def get_order(self, order_id: str = Field(description="The order id, e.g. order-13.")) -> dict[str, Any]:
        """Read one order: its items, total, card, address and delivery status.

        Args:
            order_id: The order id, e.g. order-13.
        """
        return self._order(order_id).model_dump(mode="json")

    @tool(effect="delete", destructive=True, open_world=True, id_arg="order_id", idempotent=True)
    async def cancel_order(self, order_id: str = Field(description="The order id.")) -> dict[str, Any]:
        """Cancel an order that has not shipped yet; the card is refunded and stock restored.

        Args:
            order_id: The order id.
        """
        state = self.state
        order = self._order(order_id)
        if order.status != "placed":
            raise ToolFailure("precondition_failed", f"{order_id} is {order.status}; only placed orders can be cancelled")
        refund(state, order.card_id, order.total, "ShopMart")
        for line in order.lines:
            product = next((p for p in state.shop.products if p.id == line.product_id), None)
            if product is not None:
                product.stock += line.quantity
        order.status = "cancelled"
        return {"id": order.id, "status": "cancelled", "refunded": order.total}

    @tool(effect="update", open_world=True, id_arg="order_id", idempotent=True)
    async def return_order(
        self,
        order_id: str = Field(description="A delivered order's id."),
        reason: str = Field(min_length=1, max_length=200, description="Why it goes back."),
    ) -> dict[str, Any]:
        """Send a delivered order back for a refund to the card that paid.

        Args:
            order_id: A delivered order's id.
            reason: Why it goes back.
        """
        state = self.state
        order = self._order(order_id)
        if order.status != "delivered":
            raise ToolFailure("precondition_failed", f"{order_id} is {order.status}; only delivered orders can be returned")
        refund(state, order.card_id, order.total, "ShopMart")
        order.status = "returned"
        return {"id": order.id, "status": "returned", "refunded": order.total, "reason": reason}

    @tool(effect="create", id_arg="product_id", idempotent=False)
    async def add_to_wishlist(self, product_id: str = Field(description="The product id.")) -> dict[str, Any]:
        """Save a product to buy later (for example, one that is sold out).

        Args:
            product_id: The product id.
        """
        shop = self.state.shop
        product = self._product(product_id)
        if any(w.product_id == product_id for w in shop.wishlist):
            raise ToolFailure("conflict", f"{product.name} is already on the wishlist")
        item = WishlistItem(id=issue_id(shop, "wish"), product_id=product.id, name=product.name)
        shop.wishlist = [*shop.wishlist, item]
        return item.model_dump()

    @tool(effect="read", idempotent=True)
    async def list_wishlist(self) -> list[dict[str, Any]]:
        """List wishlist products with their current price and stock."""
        return [{**w.model_dump(), **{k: v for k, v in _product(self._product(w.product_id)).items() if k != "id"}}
                for w in self.state.shop.wishlist]
