-- One row per known customer and product they viewed, put in or took out of a cart, or bought
-- (a completed line). Anonymous events and events about no product are left out.
WITH interactions AS (
    SELECT customer_id, product_id,
           count_if(event_type = 'product_view') AS views,
           count_if(event_type = 'add_to_cart') AS cart_adds,
           count_if(event_type = 'remove_from_cart') AS cart_removes,
           0 AS purchases,
           0 AS units_purchased,
           max(event_ts) AS last_interaction_ts
    FROM clicks
    WHERE customer_id IS NOT NULL AND product_id IS NOT NULL
    GROUP BY customer_id, product_id
    UNION ALL
    SELECT customer_id, product_id,
           0 AS views,
           0 AS cart_adds,
           0 AS cart_removes,
           count(DISTINCT order_id) AS purchases,
           sum(quantity) AS units_purchased,
           max(transaction_ts) AS last_interaction_ts
    FROM orders
    WHERE status = 'completed'
    GROUP BY customer_id, product_id
)
SELECT customer_id, product_id,
       CAST(sum(views) AS BIGINT) AS views,
       CAST(sum(cart_adds) AS BIGINT) AS cart_adds,
       CAST(sum(cart_removes) AS BIGINT) AS cart_removes,
       CAST(sum(purchases) AS BIGINT) AS purchases,
       CAST(sum(units_purchased) AS BIGINT) AS units_purchased,
       max(last_interaction_ts) AS last_interaction_ts,
       -- Implicit feedback: a purchase says more than a cart add, a cart add more than a view;
       -- the log keeps a heavy browser from outweighing a buyer.
       round(ln(1 + sum(views) + 3 * sum(cart_adds) + 10 * sum(purchases)), 6) AS implicit_rating
FROM interactions
GROUP BY customer_id, product_id
