-- One row per sales line with its customer's and product's *current* attributes.
-- Outer joins on purpose: a line whose customer or product has not arrived yet comes out
-- without its attributes, and the quality rules "customer exists" and "product exists"
-- hold it back (in the quarantine table) until the missing row lands.
-- last_updated_ts is the line's own: were it to take the customer's or product's too, a
-- product price correction would rewrite every line ever sold of it, for no visible change.
WITH lines AS (
    SELECT order_id, line_item_id, customer_id, product_id, quantity, unit_price, discount,
           CAST(quantity * unit_price - discount AS DECIMAL(14, 2)) AS line_total,
           channel, store_id, status, transaction_ts, updated_ts
    FROM sales
)
SELECT l.order_id, l.line_item_id, l.customer_id, l.product_id,
       l.quantity, l.unit_price, l.discount, l.line_total,
       l.channel, l.store_id, l.status, l.transaction_ts,
       to_date(l.transaction_ts) AS order_date,
       c.region, c.country, c.loyalty_tier,
       p.sku, p.name AS product_name, p.category AS product_category, p.brand,
       l.updated_ts AS last_updated_ts
FROM lines l
LEFT JOIN customers c ON c.customer_id = l.customer_id
LEFT JOIN products p ON p.product_id = l.product_id
