-- One row per current customer; order figures count completed lines only, so a customer
-- with no completed order has a profile with zero orders and no order dates.
WITH completed_lines AS (
    SELECT customer_id, order_id, line_total, transaction_ts, last_updated_ts
    FROM orders
    WHERE status = 'completed'
),
per_customer AS (
    SELECT customer_id,
           CAST(sum(line_total) AS DECIMAL(18, 2)) AS lifetime_value,
           count(DISTINCT order_id) AS order_count,
           min(transaction_ts) AS first_order_ts,
           max(transaction_ts) AS last_order_ts,
           max(last_updated_ts) AS orders_updated_ts
    FROM completed_lines
    GROUP BY customer_id
)
SELECT c.customer_id, c.first_name, c.last_name, c.email, c.region, c.country, c.loyalty_tier,
       coalesce(o.lifetime_value, CAST(0 AS DECIMAL(18, 2))) AS lifetime_value,
       coalesce(o.order_count, 0) AS order_count,
       o.first_order_ts, o.last_order_ts,
       CAST(o.lifetime_value / o.order_count AS DECIMAL(18, 2)) AS average_order_value,
       greatest(c.updated_ts, o.orders_updated_ts) AS last_updated_ts
FROM customers c
LEFT JOIN per_customer o ON o.customer_id = c.customer_id
